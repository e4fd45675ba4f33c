"""A model config's unknown key is named, with the nearest known one, on the
command line and on the wire, and ignored: a host's config keeps loading."""
import json

from conftest import MEDIA, need, run, lines
from ospreyd_client import model, spawn, worker  # noqa: F401


def detect(osprey, *args):
    r = run(osprey, "detect", "--quiet", *args)
    assert r.returncode == 0, r.stderr
    return lines(r.stdout), r.stderr


def test_unknown_config_key_warns(osprey, tmp_path):
    cfg = tmp_path / "typo.json"
    cfg.write_text(json.dumps({"confidnce": 0.9}))
    (rec,), err = detect(osprey, "--config", cfg, need(MEDIA / "messi5.jpg"))
    assert 'unknown key "confidnce" ignored (did you mean "confidence"?)' in err, err
    # ignored, as the key says: the default threshold stands
    assert any(d["score"] < 0.9 for d in rec["detections"])
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"confidence": 0.45, "nmsIouThreshold": 0.4}))
    _, err = detect(osprey, "--config", good, need(MEDIA / "messi5.jpg"))
    assert "unknown key" not in err


def test_unknown_key_on_the_wire_loads(worker):
    model("ssd-oidv4")
    w, ready = worker({"runtime": "onnxruntime",
                       "models": [{"model": "ssd-oidv4", "confidnce": 0.9, "_hostTag": 1}]})
    assert ready["models"] == 1, ready
    text = w.stderr_text()
    assert 'unknown key "confidnce" ignored (did you mean "confidence"?)' in text, text
    assert "_hostTag" not in text
