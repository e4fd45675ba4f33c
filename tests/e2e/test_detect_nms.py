"""One object, one box: osprey detect suppresses overlapping boxes across
labels by default (IoU >= 0.7), --per-class-nms and the crossClassIou key
choose otherwise, and ospreyd keeps the Python worker's per-class NMS."""
import json

from conftest import MEDIA, need, run, lines, iou
from ospreyd_client import MODELS, SSD_CATALOG, spawn, worker  # noqa: F401

CROSS = 0.7


def stacked(rec):
    """Pairs of boxes of different labels on one object (IoU >= 0.7)."""
    d = rec["detections"]
    return [(a["label"], b["label"]) for i, a in enumerate(d) for b in d[i + 1:]
            if a["label"] != b["label"] and iou(a["box"], b["box"]) >= CROSS]


def detect(osprey, *args):
    r = run(osprey, "detect", "--quiet", *args)
    assert r.returncode == 0, r.stderr
    return lines(r.stdout)


def test_parked_van_is_one_box(osprey):
    vtest = need(MEDIA / "vtest.avi")
    # at the wire's threshold, where the van is both "Car" and "Vehicle"
    old = detect(osprey, "--every", "40", "--threshold", "0.3", "--per-class-nms", vtest)
    new = detect(osprey, "--every", "40", "--threshold", "0.3", vtest)
    assert len(old) == len(new) == 20
    before = sum(len(stacked(r)) for r in old)
    assert sum(("Car", "Vehicle") in stacked(r) or ("Vehicle", "Car") in stacked(r)
               for r in old) >= 10, before
    assert all(stacked(r) == [] for r in new), [stacked(r) for r in new]
    # the best box of each object stays: every box of the new run is one of the old
    for a, b in zip(old, new):
        for d in b["detections"]:
            assert any(o["label"] == d["label"] and o["box"] == d["box"]
                       for o in a["detections"]), (d, a["frame"])


def test_cockatoo_one_label(osprey):
    clip = need(MEDIA / "cockatoo.mp4")
    old = detect(osprey, "--threshold", "0.2", "--per-class-nms", clip)
    new = detect(osprey, "--threshold", "0.2", clip)
    assert sum(len(stacked(r)) for r in old) > 0
    assert all(stacked(r) == [] for r in new)


def test_config_key_chooses(osprey, tmp_path):
    cfg = tmp_path / "per-class.json"
    cfg.write_text(json.dumps({"crossClassIou": 0}))
    vtest = need(MEDIA / "vtest.avi")
    keyed = detect(osprey, "--every", "200", "--threshold", "0.3", "--config", cfg, vtest)
    flag = detect(osprey, "--every", "200", "--threshold", "0.3", "--per-class-nms", vtest)
    assert [r["detections"] for r in keyed] == [r["detections"] for r in flag]
    assert any(stacked(r) for r in keyed)


def jpeg_of_vtest_frame(tmp_path):
    import subprocess
    out = tmp_path / "vtest0.jpg"
    subprocess.run(["ffmpeg", "-loglevel", "error", "-i", str(need(MEDIA / "vtest.avi")),
                    "-frames:v", "1", "-q:v", "2", str(out)], check=True)
    return out.read_bytes()


def test_wire_keeps_per_class(worker, tmp_path):
    need(MODELS / "ssd-oidv4.onnx")
    jpeg = jpeg_of_vtest_frame(tmp_path)
    w, ready = worker({"runtime": "onnxruntime",
                       "models": [SSD_CATALOG, dict(SSD_CATALOG, crossClassIou=CROSS)]})
    assert ready["models"] == 2, ready
    plain = w.conn.infer_jpeg(0, jpeg)
    keyed = w.conn.infer_jpeg(1, jpeg)
    # a host that says nothing sees what the Python worker gave: both labels
    assert stacked(plain), plain
    assert stacked(keyed) == [], keyed
