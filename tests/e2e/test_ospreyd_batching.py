"""Real batched execution: windows and infer_batch run as ONE runtime call on
a stacked tensor when the model's batch axis is dynamic, and give the same
results as one call per frame; frames from different connections share a
window."""
import json
import time

from ospreyd_client import (model, MSG_RAW, SSD_CATALOG, detections_match, media_image, need,
                            p_raw, spawn, worker)  # noqa: F401
from test_ospreyd_sockets import serve

FRAMES = ["messi5.jpg", "chelsea.png", "astronaut.png", "basketball1.png"]


def test_batched_run_matches_per_item(worker):
    model("ssd-oidv4")
    images = [media_image(n) for n in FRAMES]
    single, _ = worker({"runtime": "onnxruntime", "models": [SSD_CATALOG]})
    one = [single.conn.infer_raw(0, im) for im in images]
    batched, _ = worker({"runtime": "onnxruntime", "models": [SSD_CATALOG], "batch_mode": "list",
                         "max_batch_size": 4})
    many = batched.conn.infer_batch(0, images)["results"]
    assert len(many) == 4
    for name, a, b in zip(FRAMES, one, many):
        assert b["batchSize"] == 4 and a["batchSize"] == 1
        assert a["frameSize"] == b["frameSize"]
        assert detections_match(a, b, px=1.0, score=0.002), (name, a, b)
    # chelsea's cat is still found in the stacked run
    assert any(d["label"] == "Cat" and d["score"] > 0.8 for d in many[1]["detections"])


def test_window_batches_ssd(worker):
    """Window mode on the real model: four frames in one window, one stacked
    run, each answered on its own request with batchSize 4."""
    model("ssd-oidv4")
    w, _ = worker({"runtime": "onnxruntime", "models": [SSD_CATALOG], "batch_mode": "window",
                   "window_ms": 2000, "max_batch_size": 4, "concurrency": 4})
    c = w.conn
    images = [media_image(n) for n in FRAMES]
    ids = [c.send(MSG_RAW, p_raw(0, im.w, im.h, im.fmt, im.data)) for im in images]
    recs = [c.reply(i, timeout=30) for i in ids]
    assert [r["batchSize"] for r in recs] == [4, 4, 4, 4], recs
    assert any(d["label"] == "Person" for d in recs[0]["detections"])


def dynamic_script(path, counter):
    """A test-backend model with a dynamic batch axis that records each run's
    batch size in `counter`."""
    path.write_text(json.dumps({
        "inputs": [{"name": "input", "dtype": "float32", "shape": [-1, 3, 32, 32]}],
        "outputs": [
            {"name": "scores", "dtype": "float32", "shape": [-1, 4, 2], "fill": 0,
             "set": [{"at": [-1, 0, 1], "value": 0.9}]},
            {"name": "boxes", "dtype": "float32", "shape": [-1, 4, 4], "fill": 0.25},
        ],
        "counter_file": str(counter),
    }))
    return {"path": str(path), "postprocessor": "ultraface", "preprocessMode": "resize"}


def test_two_connections_share_a_window(spawn, tmp_path):
    counter = tmp_path / "runs"
    model = dynamic_script(tmp_path / "dyn.json", counter)
    w = serve(spawn, tmp_path, {"runtime": "test", "models": [model], "concurrency": 4,
                                "batch_mode": "window", "window_ms": 3000, "max_batch_size": 4})
    a, b = w.connect(), w.connect()
    for conn, version in ((a, 1), (b, 2)):
        assert conn.hello({"protocolVersion": version})["status"] == "ready"
    px = p_raw(0, 32, 32, 0, bytes(32 * 32 * 3))
    t0 = time.monotonic()
    ids = [(a, a.send(MSG_RAW, px)), (b, b.send(MSG_RAW, px)), (a, a.send(MSG_RAW, px)),
           (b, b.send(MSG_RAW, px))]
    recs = [conn.reply(i, timeout=30) for conn, i in ids]
    # four frames reached max_batch_size long before the 3 s window closed
    assert time.monotonic() - t0 < 2.5
    assert all(r["batchSize"] == 4 and len(r["detections"]) == 1 for r in recs), recs
    # ONE run of batch 4 served both connections
    assert counter.read_text().split() == ["4"], counter.read_text()


def test_static_batch_model_runs_per_item(worker, tmp_path):
    """A model with a static batch of 1 keeps the per-item path."""
    counter = tmp_path / "runs"
    script = tmp_path / "static.json"
    script.write_text(json.dumps({
        "inputs": [{"name": "input", "dtype": "float32", "shape": [1, 3, 32, 32]}],
        "outputs": [{"name": "scores", "dtype": "float32", "shape": [1, 4, 2], "fill": 0},
                    {"name": "boxes", "dtype": "float32", "shape": [1, 4, 4], "fill": 0}],
        "counter_file": str(counter),
    }))
    w, _ = worker({"runtime": "test", "models": [{"path": str(script), "postprocessor": "ultraface"}],
                   "batch_mode": "list"})
    px = media_image("chelsea.png")
    res = w.conn.infer_batch(0, [px, px, px])["results"]
    assert len(res) == 3
    assert counter.read_text().split() == ["1", "1", "1"]
