"""A cascade step runs a frame's crops together (docs/cascades.md, "In
ospreyd"): when the step's model takes any batch, its crops are stacked
into one run per `batch` (at most maxObjects) crops, and every detection
gets what one run a crop gives it; a model with a fixed batch of 1 runs
them one at a time. face-embed is set-up's copy of the package's model
taking any batch (tools/onnx_batch.py): it embeds a face as the original
does. The real models on real faces; the test backend to count the runs
and their batch sizes."""
import base64
import json
import math
import struct

from assets import model, model_asset
from ospreyd_client import (Image, media_image, now_ms, solid, spawn, tb_config,  # noqa: F401
                            tb_script)

FACES = [(0.9, [0.05, 0.05, 0.3, 0.3]), (0.9, [0.55, 0.05, 0.95, 0.45]),
         (0.9, [0.05, 0.55, 0.35, 0.95]), (0.9, [0.6, 0.6, 0.9, 0.9])]
VEC = [1, 2, 3, 4, 5, 6, 7, 8]


def vector(field):
    raw = base64.b64decode(field)
    return struct.unpack(f"<{len(raw) // 4}f", raw)


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def square_crop(img: Image, box, margin=0.2) -> Image:
    """The square around box grown by margin, inside the picture."""
    x1, y1, x2, y2 = box
    side = max(x2 - x1, y2 - y1) * (1 + margin)
    cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
    l, t = max(0, int(cx - side / 2)), max(0, int(cy - side / 2))
    r, b = min(img.w, int(cx + side / 2)), min(img.h, int(cy + side / 2))
    rows = [img.data[(y * img.w + l) * 3:(y * img.w + r) * 3] for y in range(t, b)]
    return Image(r - l, b - t, 3, b"".join(rows))


def test_the_batched_copy_embeds_as_the_original(spawn):
    """The catalog's face-embed (the copy taking any batch) and the
    package's face-embed.onnx give one face the same embedding."""
    copy, original = model("face-embed"), model_asset("face-embed.onnx")
    assert copy.name == "face-embed-batch.onnx", copy
    w = spawn()
    b64 = {"embeddingEncoding": "base64"}
    ready = w.conn.hello({"runtime": "onnxruntime", "models": [
        {"model": "ultraface"}, {"model": "face-embed", **b64},
        {"model": "face-embed", "path": str(original), **b64}]})
    assert ready.get("status") == "ready" and ready["models"] == 3, (ready, w.describe())
    img = media_image("basketball1.png")
    faces = w.conn.infer_raw(0, img)["detections"]
    assert len(faces) >= 2, faces
    for face in faces:
        crop = square_crop(img, face["box"])
        a = vector(w.conn.infer_raw(1, crop)["embeddingB64"])
        b = vector(w.conn.infer_raw(2, crop)["embeddingB64"])
        assert len(a) == len(b) == 512
        assert cosine(a, b) >= 0.9999, (face, cosine(a, b))


def test_batched_steps_give_what_one_at_a_time_gives(spawn):
    """UltraFace's faces embedded in one run, and one at a time ("batch":
    1): the same vectors, value for value within 1e-5."""
    def cfg(**step):
        return {"model": "ultraface", "embeddingEncoding": "base64",
                "then": [{"model": "face-embed", **step}]}

    w = spawn()
    ready = w.conn.hello({"runtime": "onnxruntime", "models": [cfg(), cfg(batch=1)]})
    assert ready.get("status") == "ready" and ready["models"] == 2, (ready, w.describe())
    for photo in ("basketball1.png", "messi5.jpg"):
        img = media_image(photo)
        together, alone = w.conn.infer_raw(0, img), w.conn.infer_raw(1, img)
        assert len(together["detections"]) == len(alone["detections"]) >= 1, together
        for d, e in zip(together["detections"], alone["detections"]):
            assert d["box"] == e["box"], (d, e)
            a, b = vector(d["embedding"]), vector(e["embedding"])
            assert len(a) == 512 and max(abs(x - y) for x, y in zip(a, b)) <= 1e-5, photo
    runs = [s["runs"] for s in (w.conn.mem_stats()["cascades"][i][0] for i in ("0", "1"))]
    assert runs[0] == runs[1] >= 3, runs  # runs count crops, batched or not


def fake_embedder(tmp_path, batch_axis, counter):
    """A cache folder whose face-embed-batch.onnx is a test-backend
    embedder of 8 values, its batch axis dynamic (-1) or 1, logging each
    run's batch size to counter."""
    models = tmp_path / "cache" / "models"
    models.mkdir(parents=True)
    script = {"inputs": [{"name": "input", "dtype": "float32", "shape": [batch_axis, 3, 112, 112]}],
              "outputs": [{"name": "embedding", "dtype": "float32", "shape": [batch_axis, 8],
                           "values": VEC}],
              "counter_file": str(counter)}
    (models / "face-embed-batch.onnx").write_text(json.dumps(script))
    return {"OSPREY_CACHE": str(tmp_path / "cache")}


def batch_sizes(spawn, tmp_path, batch_axis, steps):
    """Four faces a frame, through each cascade of steps (a list of step
    lists): the batch size of every run of the embedder, per cascade."""
    counter = tmp_path / "runs"
    env = fake_embedder(tmp_path, batch_axis, counter)
    models = []
    for i, step in enumerate(steps):
        first = tb_script(tmp_path / f"first{i}.json", faces=FACES)
        first["then"] = [{"model": "face-embed", **step}]
        models.append(first)
    w = spawn(env=env)
    ready = w.conn.hello(tb_config(models, protocol=2))
    assert ready.get("status") == "ready" and ready["models"] == len(steps), (ready, w.describe())
    out = []
    for i in range(len(steps)):
        counter.unlink(missing_ok=True)
        rec = w.conn.infer_raw(i, solid(32, 32))
        assert len(rec["detections"]) == len(FACES), rec
        took = [d for d in rec["detections"] if "embedding" in d]  # the largest maxObjects
        assert len(took) == min(len(FACES), steps[i].get("maxObjects", 8)), rec
        for d in took:  # each face has its own result
            assert len(d["embedding"]) == len(VEC), d
        out.append([int(x) for x in counter.read_text().split()])
    return out


def test_a_step_runs_its_crops_in_batches(spawn, tmp_path):
    got = batch_sizes(spawn, tmp_path, -1, [{}, {"batch": 3}, {"batch": 1}, {"maxObjects": 2}])
    assert got == [[4], [3, 1], [1, 1, 1, 1], [2]], got


def test_a_fixed_batch_runs_one_crop_at_a_time(spawn, tmp_path):
    got = batch_sizes(spawn, tmp_path, 1, [{}])
    assert got == [[1, 1, 1, 1]], got


def test_batch_out_of_range_fails_the_load(spawn, tmp_path):
    env = fake_embedder(tmp_path, -1, tmp_path / "runs")
    w = spawn(env=env)
    ready = w.conn.hello(tb_config([tb_script(tmp_path / "first.json", faces=FACES)], protocol=2))
    assert ready.get("status") == "ready" and ready["models"] == 1, (ready, w.describe())
    for bad in (0, 65, 2.5, "4"):
        first = tb_script(tmp_path / "first.json", faces=FACES)
        first["then"] = [{"model": "face-embed", "batch": bad}]
        r = w.conn.command({"cmd": "load", "index": 1, "config": first})
        assert r["status"] == "error" and "batch is a whole number from 1 to 64" in r["error"], r
    first["then"] = [{"model": "face-embed", "batch": 64}]
    assert w.conn.command({"cmd": "load", "index": 1, "config": first})["status"] == "ok"


def test_a_batch_past_the_deadline_is_skipped_whole(spawn, tmp_path):
    """The first model takes 3 s and the frame's deadline is 1.5 s away:
    the step's one run would start past it, so none of the four faces gets
    its embedding, all four are counted skipped, and the embedder never
    ran. (A frame held 1.5 s before its run is shed instead: tried again.)"""
    counter = tmp_path / "runs"
    env = fake_embedder(tmp_path, -1, counter)
    first = tb_script(tmp_path / "slow.json", faces=FACES, run_delay_ms=3000)
    first["then"] = [{"model": "face-embed"}]
    w = spawn(env=env)
    ready = w.conn.hello(tb_config([first], protocol=2))
    assert ready.get("status") == "ready" and ready["models"] == 1, (ready, w.describe())
    for _ in range(4):
        rec = w.conn.infer_raw(0, solid(32, 32), deadline=now_ms() + 1500)
        if rec.get("shedReason") != "deadline-expired":
            break
    assert len(rec["detections"]) == len(FACES), rec
    assert not any("embedding" in d for d in rec["detections"]), rec
    assert not counter.exists(), counter.read_text()
    (step,) = w.conn.mem_stats()["cascades"]["0"]
    assert (step["runs"], step["skippedPastDeadline"]) == (0, len(FACES)), step
