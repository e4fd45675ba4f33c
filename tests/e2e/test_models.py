"""osprey models: where each catalog model's file is, or that it is not
downloaded."""
import json
import os
import subprocess

from assets import catalog, made_by_setup
from conftest import model


def models(osprey, cache, *args):
    env = dict(os.environ, OSPREY_CACHE=str(cache))
    r = subprocess.run([str(osprey), "models", *args], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_models_say_where_each_file_is(osprey, tmp_path):
    (tmp_path / "models").mkdir()
    mine = tmp_path / "models" / catalog()["ssd-oidv4"]["file"]
    uf = catalog()["ultraface"]["file"]
    os.symlink(model("ssd-oidv4"), mine)
    rows = {l.split()[0]: l for l in models(osprey, tmp_path).splitlines()[1:]}
    assert f" {mine} " in rows["ssd-oidv4"], rows["ssd-oidv4"]
    assert f" not downloaded ({uf}) " in rows["ultraface"], rows["ultraface"]
    recs = {r["name"]: r for r in map(json.loads, models(osprey, tmp_path, "--json").splitlines())}
    assert recs["ssd-oidv4"]["present"] is True and recs["ssd-oidv4"]["path"] == str(mine)
    assert recs["ultraface"]["present"] is False
    assert recs["ultraface"]["path"] == str(tmp_path / "models" / uf)
    # every model is in the table, each with a path or "not downloaded"
    assert set(rows) == set(recs)
    for name, rec in recs.items():
        assert (rec["path"] in rows[name]) == rec["present"], rows[name]
        assert ("not downloaded" in rows[name]) != rec["present"], rows[name]


def test_set_up_makes_every_catalog_model():
    """A model renamed in the catalog and not in scripts/fetch-assets.sh (or
    the other way round) fails here, whatever the cache holds."""
    made = made_by_setup()
    missing = [f"{n} ({m['file']})" for n, m in catalog().items() if f"models/{m['file']}" not in made]
    assert not missing, f"scripts/fetch-assets.sh makes no file for {missing}"
