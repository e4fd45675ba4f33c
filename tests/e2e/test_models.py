"""osprey models: where each catalog model's file is, or that it is not
downloaded."""
import json
import os
import subprocess

from conftest import MODELS, need


def models(osprey, cache, *args):
    env = dict(os.environ, OSPREY_CACHE=str(cache))
    r = subprocess.run([str(osprey), "models", *args], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_models_say_where_each_file_is(osprey, tmp_path):
    (tmp_path / "models").mkdir()
    mine = tmp_path / "models" / "ssd-oidv4.onnx"
    os.symlink(need(MODELS / "ssd-oidv4.onnx"), mine)
    rows = {l.split()[0]: l for l in models(osprey, tmp_path).splitlines()[1:]}
    assert f" {mine} " in rows["ssd-oidv4"], rows["ssd-oidv4"]
    assert " not downloaded (ultraface-rfb320.onnx) " in rows["ultraface"], rows["ultraface"]
    recs = {r["name"]: r for r in map(json.loads, models(osprey, tmp_path, "--json").splitlines())}
    assert recs["ssd-oidv4"]["present"] is True and recs["ssd-oidv4"]["path"] == str(mine)
    assert recs["ultraface"]["present"] is False
    assert recs["ultraface"]["path"] == str(tmp_path / "models" / "ultraface-rfb320.onnx")
    # every model is in the table, each with a path or "not downloaded"
    assert set(rows) == set(recs)
    for name, rec in recs.items():
        assert (rec["path"] in rows[name]) == rec["present"], rows[name]
        assert ("not downloaded" in rows[name]) != rec["present"], rows[name]
