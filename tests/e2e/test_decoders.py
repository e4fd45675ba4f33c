"""Every postprocessor family end to end on ONNX models whose outputs are
known (tools/make_fixtures.py): osprey detect runs each through ONNX
Runtime on real, non-square frames, and the boxes must come back where the
letterbox rules of the protocol put them."""
import json
import math
import subprocess
from pathlib import Path

import pytest

from conftest import MEDIA, ROOT, lines, need, run

# Debian's python3-onnx; the interpreter running pytest may lack it
FIXTURE_PYTHON = "/usr/bin/python3"
FIXTURES = ["yolo_v8", "yolo_v8t", "yolo_v5", "yolo_e2e", "yolo_max1", "yolox", "yolonas",
            "ssd_nms", "scrfd"]
FRAMES = ["basketball1.png", "messi5.jpg"]  # 640x480 and 548x342


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory):
    out = tmp_path_factory.mktemp("decoder-fixtures")
    r = subprocess.run([FIXTURE_PYTHON, str(ROOT / "tools" / "make_fixtures.py"), str(out)],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        pytest.fail(f"tools/make_fixtures.py failed (needs python3-onnx):\n{r.stderr}")
    return out


def letterbox_to_frame(pt, side, w, h):
    """Input pixels -> frame pixels: scale = side / max(w, h), content
    floor(w*scale) x floor(h*scale), padding split with the left/top half
    rounded down, then clamped to the frame."""
    scale = side / max(w, h)
    pad_x = (side - math.floor(w * scale)) // 2
    pad_y = (side - math.floor(h * scale)) // 2
    x = min(max((pt[0] - pad_x) / scale, 0.0), w)
    y = min(max((pt[1] - pad_y) / scale, 0.0), h)
    return x, y


def detect(osprey, spec, fixtures, frame, tmp_path):
    args = ["detect", "--quiet", "--model", fixtures / spec["model"],
            "--postprocessor", spec["postprocessor"]]
    if spec["config"]:
        cfg = tmp_path / "config.json"
        cfg.write_text(json.dumps(spec["config"]))
        args += ["--config", cfg]
    r = run(osprey, *args, frame)
    assert r.returncode == 0, r.stderr
    (rec,) = lines(r.stdout)
    return rec


@pytest.mark.parametrize("frame", FRAMES)
@pytest.mark.parametrize("name", FIXTURES)
def test_decoder_boxes_through_letterbox(osprey, fixtures, tmp_path, name, frame):
    spec = json.loads((fixtures / f"{name}.json").read_text())
    rec = detect(osprey, spec, fixtures, need(MEDIA / frame), tmp_path)
    w, h = map(int, rec["frameSize"].split("x"))
    assert w != h
    side = spec["input"][0]
    got = rec["detections"]
    want = spec["expect"]
    assert len(got) == len(want), (spec["what"], got)
    for g, e in zip(got, want):
        assert g["class"] == e["class"], (g, e)
        assert abs(g["score"] - e["score"]) < 1e-3, (g, e)
        if spec["postprocessor"] != "ssd-nms":  # COCO labels come with YOLO, "face" with SCRFD
            assert g["label"] == e["label"], (g, e)
        x1, y1 = letterbox_to_frame(e["box"][:2], side, w, h)
        x2, y2 = letterbox_to_frame(e["box"][2:], side, w, h)
        for a, b in zip(g["box"], (x1, y1, x2, y2)):
            assert abs(a - b) <= 0.15, (name, g["box"], (x1, y1, x2, y2))
        if "landmarks" in e:
            assert len(g["landmarks"]) == len(e["landmarks"])
            for gp, ep in zip(g["landmarks"], e["landmarks"]):
                fx, fy = letterbox_to_frame(ep, side, w, h)
                assert abs(gp[0] - fx) <= 0.15 and abs(gp[1] - fy) <= 0.15, (gp, (fx, fy))
        else:
            assert "landmarks" not in g


def test_a_label_file_wins(osprey, fixtures, tmp_path):
    spec = json.loads((fixtures / "ssd_nms.json").read_text())
    labels = tmp_path / "labels.txt"
    labels.write_text("\n".join(f"thing{i}" for i in range(20)) + "\n")
    spec["config"] = {"labels": str(labels)}
    rec = detect(osprey, spec, fixtures, need(MEDIA / "basketball1.png"), tmp_path)
    assert [d["label"] for d in rec["detections"]] == ["thing0", "thing16"]


def test_wrong_family_is_refused(osprey, fixtures):
    # a v5 output is not the YOLOX grid; an unknown name lists the known ones
    r = run(osprey, "detect", "--quiet", "--model", fixtures / "yolo_v5.onnx",
            "--postprocessor", "yolox", need(MEDIA / "basketball1.png"))
    assert r.returncode == 2 and "yolox" in r.stderr, r.stderr
    r = run(osprey, "detect", "--quiet", "--model", fixtures / "yolo_v5.onnx",
            "--postprocessor", "nope", need(MEDIA / "basketball1.png"))
    assert r.returncode == 2 and "yolo" in r.stderr and "scrfd" in r.stderr, r.stderr
