"""A run that never returns, and what a peer can make hold a thread
(docs/security.md, "Bounds"). The test backend (a test double,
docs/test-backend.md) holds a run with `run_block_file` until the test
creates the file: the run passes its bound (`runTimeoutMs`,
`--run-timeout-ms`, or the measured default), its requests are answered
with an error naming the model, its worker is replaced, the model is
reloaded, every other model keeps being served, `unload` detaches it, and
the end of input or SIGTERM still ends the process. Also: a FIFO named as a
model, labels or stream file never holds a loader thread."""
import os
import signal
import time

from ospreyd_client import (EVENT_ID, counted_runs, solid, spawn, tb_config, tb_script,  # noqa: F401
                            worker)

FACE = (0.9, [0.1, 0.1, 0.5, 0.5])
TIMEOUT_EVENT_KEYS = ["event", "index", "modelId", "timeoutMs", "elapsedMs", "requests", "reloading"]


def stuck_model(tmp_path, name="stuck", bound_ms=800, **kw):
    release = tmp_path / f"{name}.release"
    cfg = tb_script(tmp_path / f"{name}.json", run_block_file=release, faces=[FACE], **kw)
    if bound_ms is not None:
        cfg["runTimeoutMs"] = bound_ms
    return cfg, release


def healthy_model(tmp_path, name="healthy"):
    return tb_script(tmp_path / f"{name}.json", faces=[FACE])


def predict_threads(w):
    names = []
    for t in os.listdir(f"/proc/{w.proc.pid}/task"):
        try:
            names.append(open(f"/proc/{w.proc.pid}/task/{t}/comm").read().strip())
        except OSError:
            pass
    return sum(n.startswith("osp-predict") for n in names)


def events(c, name):
    return [e for e in c.replies.get(EVENT_ID, []) if e.get("event") == name]


def wait_event(c, name, n=1, timeout=30):
    c.wait_for(lambda: len(events(c, name)) >= n, timeout, f"{n} '{name}' event(s)")
    return events(c, name)[n - 1]


def test_a_stuck_run_is_answered_and_its_model_reloaded(worker, tmp_path):
    counter = tmp_path / "runs"
    stuck, release = stuck_model(tmp_path, counter_file=counter)
    w, _ = worker(tb_config([stuck, healthy_model(tmp_path)], concurrency=2))
    c = w.conn
    assert predict_threads(w) == 2
    rid = c.send(0x02, b"")  # a malformed frame first: answered at once, nothing runs
    assert "error" in c.reply(rid)
    rec = c.infer_raw(0, solid(32, 32), timeout=30)
    assert rec["detections"] == [] and rec["inferenceMs"] == 0, rec
    assert "model 0 (stuck)" in rec["error"] and "800 ms" in rec["error"], rec
    assert "abandoned" in rec["error"], rec
    ev = wait_event(c, "run-timeout")
    assert list(ev) == TIMEOUT_EVENT_KEYS, ev
    assert ev["index"] == 0 and ev["modelId"] == "stuck" and ev["timeoutMs"] == 800, ev
    assert ev["elapsedMs"] >= 800 and ev["requests"] == 1 and ev["reloading"] is True, ev
    re = wait_event(c, "model-reloaded")
    assert list(re) == ["event", "index", "modelId", "ok", "loadMs"], re
    assert re["index"] == 0 and re["modelId"] == "stuck" and re["ok"] is True, re
    # the run really started once and is still inside the backend
    assert counted_runs(counter) == 0
    st = c.mem_stats()
    assert st["counters"]["runsAbandoned"] == 1, st["counters"]
    assert st["counters"]["errors"] >= 2, st["counters"]
    # the stuck thread was replaced, not lost: two workers and the stuck one
    assert predict_threads(w) == 3
    assert c.infer_raw(1, solid(32, 32))["detections"], "the other model is served"
    assert c.status()["models"][0]["loaded"] is True
    # the abandoned run returns: its result is discarded, an event says so
    release.touch()
    late = wait_event(c, "run-finished-late")
    assert list(late) == ["event", "index", "modelId", "elapsedMs"], late
    assert late["index"] == 0 and late["elapsedMs"] >= 800, late
    c.wait_for(lambda: counted_runs(counter) == 1, 10, "the late run's line")
    # the reloaded session serves (its runs are not blocked any more)
    rec = c.infer_raw(0, solid(32, 32))
    assert rec["detections"], rec
    c.wait_for(lambda: predict_threads(w) == 2, 10, "the stuck thread gone")
    w.close_stdin()
    assert w.wait(30) == 0, "every stuck run returned: a clean exit"


def test_other_models_keep_their_workers(worker, tmp_path):
    """Both predict workers held by runs far slower than their model's
    others, and far from their 20 s bound: each worker is lent (a new
    thread takes its place), the other model is served while they still
    run, and they finish as usual once they return."""
    stuck, release = stuck_model(tmp_path, bound_ms=20000)
    w, _ = worker(tb_config([stuck, healthy_model(tmp_path)], concurrency=2))
    c = w.conn
    ids = [c.send(0x02, _raw(0)) for _ in range(2)]
    c.wait_for(lambda: predict_threads(w) == 4, 30, "both workers lent")
    rec = c.reply(c.send(0x02, _raw(1)), timeout=30)
    assert rec.get("detections"), rec
    assert not any(c.has_reply(i) for i in ids), "served while the slow runs still run"
    assert EVENT_ID not in c.replies, c.replies.get(EVENT_ID)
    release.touch()
    for i in ids:
        assert c.reply(i, timeout=30)["detections"], "a lent run is answered as usual"
    assert c.mem_stats()["counters"]["runsAbandoned"] == 0
    c.wait_for(lambda: predict_threads(w) == 2, 30, "the lent threads gone")
    assert c.infer_raw(0, solid(32, 32))["detections"]
    w.close_stdin()
    assert w.wait(30) == 0


def test_frames_waiting_for_a_stuck_model_are_refused(worker, tmp_path):
    stuck, release = stuck_model(tmp_path, bound_ms=1000)
    w, _ = worker(tb_config([stuck, healthy_model(tmp_path)], concurrency=2))
    c = w.conn
    # both predict workers and the model's queue taken by runs that never return
    ids = [c.send(0x02, _raw(0)) for _ in range(4)]
    time.sleep(0.2)
    other = c.send(0x02, _raw(1))
    rec = c.reply(other, timeout=30)
    assert rec.get("detections"), rec
    replies = [c.reply(i, timeout=30) for i in ids]
    assert all("error" in r and "model 0 (stuck)" in r["error"] for r in replies), replies
    abandoned = [r for r in replies if "abandoned" in r["error"]]
    refused = [r for r in replies if "is being reloaded" in r["error"]]
    assert len(abandoned) == 2 and len(refused) == 2, replies
    assert c.mem_stats()["counters"]["runsAbandoned"] == 2
    assert [e["requests"] for e in events(c, "run-timeout")] == [1, 1], c.replies[EVENT_ID]
    assert c.all_answered_once(ids + [other]) == ([], [])
    release.touch()
    c.wait_for(lambda: len(events(c, "run-finished-late")) == 2, 10, "both late returns")


def test_unload_detaches_a_stuck_model(worker, tmp_path):
    stuck, release = stuck_model(tmp_path)
    w, _ = worker(tb_config([stuck], concurrency=1))
    c = w.conn
    first = c.send(0x02, _raw(0))
    waiting = [c.send(0x02, _raw(0)) for _ in range(2)]
    assert "abandoned" in c.reply(first, timeout=30)["error"]
    for i in waiting:
        assert "error" in c.reply(i, timeout=30)
    r = c.command({"cmd": "unload", "index": 0})
    assert r == {"cmd": "unload", "index": 0, "status": "ok"}, r
    assert c.status()["models"][0]["loaded"] is False
    rec = c.infer_raw(0, solid(32, 32), timeout=5)
    assert rec["error"] == "Model 0 not loaded", rec
    # a new model in the same slot runs at once: nothing of the stuck one is left in its way
    assert c.command({"cmd": "load", "index": 0, "config": healthy_model(tmp_path)})["status"] == "ok"
    assert c.mem_stats()["backpressure"]["0"] == {"running": 0, "pending": 0}
    assert c.infer_raw(0, solid(32, 32), timeout=5)["detections"]
    release.touch()


def test_end_of_input_exits_despite_a_stuck_run(worker, tmp_path):
    stuck, _ = stuck_model(tmp_path, bound_ms=1000)
    w, _ = worker(tb_config([stuck]))
    rid = w.conn.send(0x02, _raw(0))
    time.sleep(0.2)
    w.close_stdin()
    assert w.wait(30) == 3, "status 3: a run was left stuck"
    assert "abandoned" in w.conn.reply(rid, timeout=5)["error"]
    assert "stuck past their bound" in w.stderr_text()


def test_sigterm_exits_despite_a_stuck_run(worker, tmp_path):
    stuck, _ = stuck_model(tmp_path, bound_ms=1000)
    w, _ = worker(tb_config([stuck]))
    rid = w.conn.send(0x02, _raw(0))
    time.sleep(0.2)
    w.signal(signal.SIGTERM)
    assert w.wait(30) == 3
    assert "abandoned" in w.conn.reply(rid, timeout=5)["error"]


def test_bound_from_the_daemon_flag(spawn, tmp_path):
    stuck, release = stuck_model(tmp_path, bound_ms=None)
    w = spawn("--run-timeout-ms", "600")
    assert w.conn.hello(tb_config([stuck]))["status"] == "ready"
    rec = w.conn.infer_raw(0, solid(32, 32), timeout=30)
    assert "600 ms" in rec["error"], rec
    assert wait_event(w.conn, "run-timeout")["timeoutMs"] == 600
    release.touch()


def test_measured_bound_is_at_least_five_seconds(worker, tmp_path):
    """Ten quick runs measured: 20 x their p99 is far below the floor, so a
    run that then blocks is given up at 5 s."""
    stuck, release = stuck_model(tmp_path, bound_ms=None)
    release.touch()
    w, _ = worker(tb_config([stuck]))
    for _ in range(10):
        assert w.conn.infer_raw(0, solid(32, 32))["detections"]
    release.unlink()
    rec = w.conn.infer_raw(0, solid(32, 32), timeout=60)
    assert "its bound of 5000 ms" in rec["error"], rec
    assert wait_event(w.conn, "run-timeout")["timeoutMs"] == 5000
    release.touch()


def test_run_timeout_must_be_a_whole_positive_number(worker, tmp_path):
    w, _ = worker(tb_config([]))
    for bad in (0, -5, 1.5, "1000", 86400001):
        cfg = dict(healthy_model(tmp_path), runTimeoutMs=bad)
        r = w.conn.command({"cmd": "load", "index": 0, "config": cfg})
        assert r["status"] == "error" and "runTimeoutMs must be a whole number" in r["error"], (bad, r)
    ok = w.conn.command({"cmd": "load", "index": 0, "config": dict(healthy_model(tmp_path),
                                                                    runTimeoutMs=2000)})
    assert ok["status"] == "ok", ok


def test_window_and_batch_runs_are_bounded_too(worker, tmp_path):
    stuck, release = stuck_model(tmp_path)
    w, _ = worker(tb_config([stuck], concurrency=1, batch_mode="window", window_ms=20,
                            max_batch_size=4))
    c = w.conn
    ids = [c.send(0x02, _raw(0)) for _ in range(2)]
    for i in ids:
        assert "abandoned" in c.reply(i, timeout=30)["error"]
    ev = wait_event(c, "run-timeout")
    assert ev["requests"] == 2, ev
    wait_event(c, "model-reloaded")
    rid = c.send(0x03, _batch(0, 2))
    r = c.reply(rid, timeout=30)
    assert r["results"] == [] and "abandoned" in r["error"], r
    release.touch()
    c.wait_for(lambda: len(events(c, "run-finished-late")) == 2, 10, "both late returns")


# ---- a FIFO never holds a loader thread -----------------------------------------------

def test_fifo_model_and_labels_are_refused_at_once(worker, tmp_path):
    fifo = tmp_path / "model.onnx"
    os.mkfifo(fifo)
    w, _ = worker(tb_config([{"path": str(fifo), "postprocessor": "ultraface"}], timeout_ms=60000))
    c = w.conn
    for extra in ({"path": str(fifo)}, {"labels": str(fifo)}):
        t0 = time.monotonic()
        r = c.command({"cmd": "load", "index": 1, "config": dict(healthy_model(tmp_path), **extra)},
                      timeout=30)
        assert r["status"] == "error" and "is not a regular file" in r["error"], r
        assert time.monotonic() - t0 < 30
    # no loader thread was left waiting on the FIFO: the next load is served, not refused as poisoned
    r = c.command({"cmd": "load", "index": 1, "config": healthy_model(tmp_path)})
    assert r["status"] == "ok", r
    assert c.mem_stats()["modelLoad"]["poisonedBy"] is None


def test_open_stream_of_a_fifo_is_answered(worker, tmp_path):
    fifo = tmp_path / "stream.onnx"
    os.mkfifo(fifo)
    w, _ = worker({"runtime": "onnxruntime", "models": [], "modelLoadTimeoutMs": 60000})
    r = w.conn.command({"cmd": "open_stream", "config": {"path": str(fifo), "frameLen": 4}}, timeout=30)
    assert r["status"] == "error" and "is not a regular file" in r["error"], r
    threads = w.conn.mem_stats()["memory"]["threads"]
    r = w.conn.command({"cmd": "open_stream", "config": {"path": str(fifo), "frameLen": 4}}, timeout=30)
    assert r["status"] == "error"
    assert w.conn.mem_stats()["memory"]["threads"] == threads, "no thread left behind"
    w.close_stdin()
    assert w.wait(30) == 0


def _raw(idx, side=32):
    import struct
    return struct.pack("<BIIB", idx, side, side, 0) + bytes(side * side * 3)


def _batch(idx, n, side=32):
    import struct
    items = b"".join(struct.pack("<IIBI", side, side, 0, side * side * 3) + bytes(side * side * 3)
                     for _ in range(n))
    return struct.pack("<BBI", idx, n, 0) + items



def test_a_reload_past_the_load_bound_is_bounded_like_every_load(worker, tmp_path):
    """The reload of a stuck model goes through the one loader: when it hangs
    too, it is given up at the load bound (the slot emptied, an event says
    why), no other load starts until it returns, and its late return is
    announced like any load's."""
    gate = tmp_path / "load.gate"
    gate.touch()  # the first load passes; the reload waits for the gate again
    stuck, release = stuck_model(tmp_path, load_block_file=gate)
    w, _ = worker(tb_config([stuck, healthy_model(tmp_path)], concurrency=2, timeout_ms=1000))
    c = w.conn
    gate.unlink()
    rec = c.infer_raw(0, solid(32, 32), timeout=30)
    assert "abandoned" in rec["error"], rec
    ev = wait_event(c, "model-reloaded")
    assert ev["ok"] is False and "took longer than 1000 ms" in ev["error"], ev
    r = c.command({"cmd": "load", "index": 2, "config": healthy_model(tmp_path, "other")})
    assert r["status"] == "error" and r["reason"] == "worker-poisoned", r
    assert c.infer_raw(1, solid(32, 32))["detections"], "the other model is served"
    gate.touch()
    late = wait_event(c, "compile-finished-late")
    assert late["index"] == 0 and late["modelId"] == "stuck", late
    r = c.command({"cmd": "load", "index": 2, "config": healthy_model(tmp_path, "other")})
    assert r["status"] == "ok", r
    release.touch()


def test_an_open_stream_past_the_load_bound_is_bounded_like_every_load(worker, tmp_path):
    """A stream's model loads through the one loader: a load that hangs is
    answered at the load bound, no model load starts until it returns (the
    loader is poisoned), and its late return is announced like any load's."""
    gate = tmp_path / "stream.gate"
    script = tb_script(tmp_path / "stream.json", load_block_file=gate)
    w, _ = worker(tb_config([healthy_model(tmp_path)], timeout_ms=1000))
    c = w.conn
    t0 = time.monotonic()
    r = c.command({"cmd": "open_stream", "config": {"path": script["path"], "frameLen": 4}}, timeout=30)
    assert r["status"] == "error" and "took longer than 1000 ms" in r["error"], r
    assert time.monotonic() - t0 < 20
    r = c.command({"cmd": "load", "index": 1, "config": healthy_model(tmp_path, "other")})
    assert r["status"] == "error" and r["reason"] == "worker-poisoned", r
    assert c.mem_stats()["modelLoad"]["poisonedBy"] is not None
    assert c.infer_raw(0, solid(32, 32))["detections"], "the loaded model is served all along"
    gate.touch()
    wait_event(c, "compile-finished-late")
    r = c.command({"cmd": "load", "index": 1, "config": healthy_model(tmp_path, "other")})
    assert r["status"] == "ok", r
    w.close_stdin()
    assert w.wait(30) == 0
