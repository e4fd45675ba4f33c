"""osprey quantize and the int8 catalog models, on real models and media:
the quantized model is written, loads, and finds what the float model finds
on media it was not calibrated on; the catalog's int8 variants are listed,
detect by name in the CLI and are served by name by ospreyd."""
import re

from conftest import MEDIA, model, iou, lines, need, run
from ospreyd_client import media_image, worker, spawn  # noqa: F401


def detect(osprey, *args):
    r = run(osprey, "detect", "-q", *args)
    assert r.returncode == 0, r.stderr
    return lines(r.stdout)


def report(stdout):
    """The agreement figures osprey quantize prints."""
    f1 = re.search(r"F1\s+([0-9.]+)", stdout)
    det = re.search(r"detections\s+float (\d+), int8 (\d+), matched (\d+)", stdout)
    assert f1 and det, stdout
    return float(f1.group(1)), [int(g) for g in det.groups()]


def test_quantize_ultraface_agrees_on_held_out_media(osprey, tmp_path):
    out = tmp_path / "uf-int8.onnx"
    r = run(osprey, "quantize", "--model", "ultraface", "--out", out, "--every", "30",
            "--calibrate", need(MEDIA / "messi5.jpg"), need(MEDIA / "basketball1.png"),
            str(need(MEDIA / "Megamind.avi")) + ":0-119",
            "--holdout", need(MEDIA / "astronaut.png"), need(MEDIA / "basketball2.png"),
            str(MEDIA / "Megamind.avi") + ":135-")
    assert r.returncode == 0, r.stderr
    assert "tensors calibrated on 6 frames" in r.stdout, r.stdout
    f1, (n_float, n_int8, matched) = report(r.stdout)
    assert n_float >= 3 and matched >= 3, r.stdout
    assert f1 >= 0.95, r.stdout
    (fl,) = detect(osprey, "--model", "ultraface", MEDIA / "astronaut.png")
    (q,) = detect(osprey, "--config", _ultraface_config(out), MEDIA / "astronaut.png")
    assert len(fl["detections"]) == 1 and len(q["detections"]) == 1, (fl, q)
    assert iou(fl["detections"][0]["box"], q["detections"][0]["box"]) >= 0.85
    assert abs(fl["detections"][0]["score"] - q["detections"][0]["score"]) < 0.05


def _ultraface_config(path):
    """The catalog's ultraface settings for the model file at path."""
    cfg = path.with_suffix(".json")
    cfg.write_text('{"model": "ultraface", "path": "%s"}' % path)
    return cfg


def test_quantize_refuses_what_it_cannot_do(osprey, tmp_path):
    r = run(osprey, "quantize", "--model", "ultraface", "--out", tmp_path / "x.onnx")
    assert r.returncode == 2 and "--calibrate" in r.stderr
    r = run(osprey, "quantize", "--model", "ultraface", "--out", tmp_path / "x.onnx",
            "--calibrate", tmp_path / "missing.png")
    assert r.returncode == 2 and "missing.png" in r.stderr
    r = run(osprey, "quantize", "--model", "ocr-rec", "--out", tmp_path / "x.onnx",
            "--calibrate", need(MEDIA / "scenetext01.jpg"))
    assert r.returncode == 2 and "text recognizer" in r.stderr
    assert not (tmp_path / "x.onnx").exists()


def test_int8_catalog_models_are_listed_and_present(osprey):
    r = run(osprey, "models", "--json")
    models = {m["name"]: m for m in lines(r.stdout)}
    for name in ("ssd-oidv4-int8", "ultraface-int8"):
        assert models[name]["present"] is True, models[name]
    assert models["ssd-oidv4-int8"]["batches"] is True


def test_ssd_int8_detects_like_float(osprey):
    model("ssd-oidv4-int8")
    (fl,) = detect(osprey, "--model", "ssd-oidv4", MEDIA / "messi5.jpg")
    (q,) = detect(osprey, "--model", "ssd-oidv4-int8", MEDIA / "messi5.jpg")
    people = [d for d in q["detections"] if d["label"] == "Person"]
    ref = [d for d in fl["detections"] if d["label"] == "Person"]
    assert people and ref, (fl, q)
    assert iou(people[0]["box"], ref[0]["box"]) >= 0.85
    assert abs(people[0]["score"] - ref[0]["score"]) < 0.05


def test_ospreyd_serves_ultraface_int8_by_name(worker):
    model("ultraface-int8")
    w, ready = worker({"runtime": "onnxruntime", "models": [{"model": "ultraface-int8"}]})
    reply = w.conn.infer_raw(0, media_image("astronaut.png"))
    faces = reply["detections"]
    assert len(faces) == 1 and faces[0]["label"] == "face", reply
    # the float model's face, from docs/ASSETS.md: [180,62,268,174]
    assert iou(faces[0]["box"], [180, 62, 268, 174]) >= 0.85, faces


def test_quantize_embedder_on_face_crops(osprey, tmp_path):
    # the embedder only ever sees faces: --faces cuts them out of the frames
    out = tmp_path / "fe-int8.onnx"
    r = run(osprey, "quantize", "--model", "face-embed", "--faces", "ultraface", "--out", out,
            "--calibrate", need(MEDIA / "messi5.jpg"), need(MEDIA / "basketball1.png"),
            "--holdout", need(MEDIA / "astronaut.png"))
    assert r.returncode == 0, r.stderr
    # messi5 has one face, basketball1 two; astronaut one
    assert "calibrated on 3 frames" in r.stdout, r.stdout
    m = re.search(r"on 1 held-out frames: cosine mean ([0-9.]+)", r.stdout)
    assert m and 0.9 < float(m.group(1)) <= 1.0, r.stdout
