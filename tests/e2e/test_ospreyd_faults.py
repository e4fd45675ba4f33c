"""Fault paths through ospreyd with the scripted test backend ("runtime":
"test"): loads that hang past their bound, fail, or run slowly; runs that
fail; decode settings changed in place."""
import time

from ospreyd_client import (EVENT_ID, MSG_RAW, check_clean, p_raw, counted_runs, solid, spawn,  # noqa: F401
                            tb_config, tb_script, worker)  # noqa: F401

FACE = (0.9, [0.1, 0.1, 0.5, 0.5])

TIMEOUT_KEYS = ["cmd", "index", "status", "reason", "modelId", "poisoned", "timeoutMs",
                "compileElapsedMs", "error"]
POISONED_KEYS = ["cmd", "index", "status", "reason", "modelId", "poisoned", "compileElapsedMs",
                 "error"]


def test_compile_timeout_poisons_then_recovers(worker, tmp_path):
    base = tb_script(tmp_path / "base.json", faces=[FACE])
    release = tmp_path / "release"
    hang = tb_script(tmp_path / "hang.json", load_block_file=release)
    w, ready = worker(tb_config([base], timeout_ms=600))
    assert ready["models"] == 1 and ready["runtime"] == "test", ready
    c = w.conn

    t0 = time.monotonic()
    r = c.command({"cmd": "load", "index": 1, "config": hang}, timeout=20)
    took = time.monotonic() - t0
    assert list(r) == TIMEOUT_KEYS, r
    assert r["cmd"] == "load" and r["index"] == 1 and r["status"] == "error"
    assert r["reason"] == "compile-timeout" and r["poisoned"] is True
    assert r["modelId"] == "hang" and r["timeoutMs"] == 600
    assert isinstance(r["compileElapsedMs"], int) and r["compileElapsedMs"] >= 550, r
    assert "hang" in r["error"], r
    assert took >= 0.55, took  # not answered before its bound

    # still hung: frames and probes are answered, loads refused at once
    rec = c.infer_raw(0, solid(32, 32), timeout=5)
    assert scores_of(rec) == [0.9], rec
    ms = c.mem_stats(timeout=2)
    ml = ms["modelLoad"]
    assert ml["poisonedBy"]["modelId"] == "hang" and ml["poisonedBy"]["index"] == 1, ml
    assert ml["poisonedBy"]["boundMs"] == 600, ml
    assert ml["timedOut"] == 1 and ml["finishedLate"] == 0, ml

    other = tb_script(tmp_path / "other.json")
    t0 = time.monotonic()
    r = c.command({"cmd": "load", "index": 2, "config": other}, timeout=5)
    assert time.monotonic() - t0 < 0.5, "a poisoned worker must refuse at once"
    assert list(r) == POISONED_KEYS, r
    assert r["status"] == "error" and r["reason"] == "worker-poisoned" and r["poisoned"] is True
    assert r["modelId"] == "other" and r["index"] == 2
    assert isinstance(r["compileElapsedMs"], int) and r["compileElapsedMs"] >= r_elapsed_floor(took)
    assert r["error"], r
    # a replace is a load too
    r = c.command({"cmd": "replace", "index": 0, "config": other}, timeout=5)
    assert r["reason"] == "worker-poisoned", r
    assert c.infer_raw(0, solid(32, 32))["detections"], "the old model must keep serving"
    st = c.status()["models"]
    assert st[1]["loaded"] is False, st

    # the hung load returns: one event, the result discarded, loads again
    assert EVENT_ID not in c.replies
    release.touch()
    ev = c.event(timeout=10)
    assert list(ev) == ["event", "index", "modelId", "ok", "elapsedMs"], ev
    assert ev["event"] == "compile-finished-late" and ev["index"] == 1
    assert ev["modelId"] == "hang" and ev["ok"] is True
    assert isinstance(ev["elapsedMs"], int) and ev["elapsedMs"] >= 550
    assert c.status()["models"][1]["loaded"] is False  # discarded
    ml = c.mem_stats()["modelLoad"]
    assert ml["poisonedBy"] is None and ml["finishedLate"] == 1, ml
    r = c.command({"cmd": "load", "index": 2, "config": other})
    assert r["status"] == "ok", r
    assert c.status()["models"][2]["loaded"] is True
    assert len(c.replies[EVENT_ID]) == 1
    check_clean(c)


def scores_of(rec):
    assert "detections" in rec, rec
    return [round(d["score"], 3) for d in rec["detections"]]


def r_elapsed_floor(took):
    return int(took * 1000 * 0.9)


def test_late_failure_event(worker, tmp_path):
    release = tmp_path / "go"
    bad = tb_script(tmp_path / "late-bad.json", load_block_file=release, load_error="no device")
    w, _ = worker(tb_config([], timeout_ms=300))
    r = w.conn.command({"cmd": "load", "index": 0, "config": bad})
    assert r["reason"] == "compile-timeout" and r["modelId"] == "late-bad", r
    release.touch()
    ev = w.conn.event(timeout=10)
    assert list(ev) == ["event", "index", "modelId", "ok", "elapsedMs", "error"], ev
    assert ev["ok"] is False and "no device" in ev["error"], ev
    assert w.conn.mem_stats()["modelLoad"]["poisonedBy"] is None


def test_probes_answered_during_slow_load(worker, tmp_path):
    base = tb_script(tmp_path / "base.json", faces=[FACE])
    slow = tb_script(tmp_path / "slow.json", load_delay_ms=1500)
    w, _ = worker(tb_config([base], timeout_ms=10000))
    c = w.conn
    done0 = c.mem_stats()["modelLoad"]["completed"]
    t0 = time.monotonic()
    load = c.send_command({"cmd": "load", "index": 1, "config": slow})
    time.sleep(0.2)
    ms = c.mem_stats(timeout=1)
    assert not c.has_reply(load)
    fl = ms["modelLoad"]["inFlight"]
    assert fl is not None and list(fl) == ["index", "modelId", "elapsedMs"], ms["modelLoad"]
    assert fl["index"] == 1 and fl["modelId"] == "slow" and fl["elapsedMs"] >= 100, fl
    rec = c.infer_raw(0, solid(32, 32), timeout=1)
    assert rec["detections"], rec
    assert c.command({"cmd": "uncache_frame", "frameId": 1}, timeout=1)["status"] == "ok"
    assert not c.has_reply(load), "probes must not wait behind the load"
    # a status queued behind the load waits for it (arrival order)
    st = c.send_command({"cmd": "status"})
    r = c.reply(load)
    assert r["status"] == "ok" and r["loadMs"] >= 1400, r
    assert c.reply(st)["models"][1]["loaded"] is True
    assert c.order.index(load) < c.order.index(st)
    assert time.monotonic() - t0 < 5
    ml = c.mem_stats()["modelLoad"]
    assert ml["inFlight"] is None and ml["completed"] == done0 + 1


def test_failed_replace_leaves_old_model(worker, tmp_path):
    base = tb_script(tmp_path / "base.json", faces=[FACE])
    broken = tb_script(tmp_path / "broken.json", load_error="scripted compile failure")
    w, _ = worker(tb_config([base], timeout_ms=5000))
    c = w.conn
    r = c.command({"cmd": "replace", "index": 0, "config": broken})
    assert r["cmd"] == "replace" and r["index"] == 0 and r["status"] == "error", r
    assert "scripted compile failure" in r["error"], r
    assert "reason" not in r or "modelId" in r
    rec = c.infer_raw(0, solid(32, 32))
    assert scores_of(rec) == [0.9], rec
    assert c.status()["models"][0]["path"] == base["path"]
    assert c.mem_stats()["modelLoad"]["failed"] == 1


def test_timed_out_replace_leaves_old_model(worker, tmp_path):
    base = tb_script(tmp_path / "base.json", faces=[FACE])
    release = tmp_path / "go"
    hang = tb_script(tmp_path / "hang2.json", load_block_file=release, faces=[])
    w, _ = worker(tb_config([base], timeout_ms=300))
    c = w.conn
    r = c.command({"cmd": "replace", "index": 0, "config": hang})
    assert r["reason"] == "compile-timeout" and r["cmd"] == "replace", r
    assert c.infer_raw(0, solid(32, 32))["detections"]
    release.touch()
    c.event(timeout=10)
    # the late result is discarded: the old model still answers
    rec = c.infer_raw(0, solid(32, 32))
    assert scores_of(rec) == [0.9], rec
    assert c.status()["models"][0]["path"] == base["path"]


def test_replace_while_running(worker, tmp_path):
    """A predict holding the old model finishes normally; the next frame
    sees the new one."""
    slow = tb_script(tmp_path / "slow-run.json", run_delay_ms=800, faces=[FACE])
    fresh = tb_script(tmp_path / "fresh.json", faces=[])
    w, _ = worker(tb_config([slow], timeout_ms=5000, concurrency=2))
    c = w.conn
    rid = c.send(MSG_RAW, p_raw(0, 32, 32, 0, bytes(32 * 32 * 3)))
    time.sleep(0.2)
    assert c.command({"cmd": "replace", "index": 0, "config": fresh})["status"] == "ok"
    old = c.reply(rid)
    assert scores_of(old) == [0.9], old
    assert c.infer_raw(0, solid(32, 32))["detections"] == []


def test_run_error_reply(worker, tmp_path):
    bad = tb_script(tmp_path / "bad-run.json", run_error="scripted run failure")
    good = tb_script(tmp_path / "good.json", faces=[FACE])
    w, _ = worker(tb_config([bad, good]))
    c = w.conn
    rec = c.infer_raw(0, solid(32, 32))
    assert list(rec) == ["error", "kind", "detections", "inferenceMs"], rec
    assert "scripted run failure" in rec["error"]
    assert rec["kind"] == "detections" and rec["detections"] == [] and rec["inferenceMs"] == 0
    res = c.infer_batch(0, [solid(32, 32)] * 2)
    assert len(res["results"]) == 2 and all("error" in r for r in res["results"]), res
    assert c.infer_raw(1, solid(32, 32))["detections"]
    assert c.mem_stats()["counters"]["errors"] >= 1


def test_reconfigure_decode_keys_next_frame(worker, tmp_path):
    # two overlapping faces (IoU 2/3) at 0.9 and 0.6
    two = tb_script(tmp_path / "two.json",
                    faces=[(0.9, [0.1, 0.1, 0.5, 0.5]), (0.6, [0.1, 0.1, 0.5, 0.7])])
    w, _ = worker(tb_config([two]))
    c = w.conn
    img = solid(100, 100)
    assert scores_of(c.infer_raw(0, img)) == [0.9]  # NMS 0.45
    assert c.command({"cmd": "reconfigure", "index": 0,
                      "config": {"nmsIouThreshold": 0.9}})["status"] == "ok"
    assert scores_of(c.infer_raw(0, img)) == [0.9, 0.6]
    assert c.command({"cmd": "reconfigure", "index": 0,
                      "config": {"confidence": 0.7}})["status"] == "ok"
    assert scores_of(c.infer_raw(0, img)) == [0.9]
    assert c.command({"cmd": "reconfigure", "index": 0,
                      "config": {"confidence": 0.95}})["status"] == "ok"
    assert c.infer_raw(0, img)["detections"] == []
    # box geometry: a square frame, normalised box * 100
    assert c.command({"cmd": "reconfigure", "index": 0,
                      "config": {"confidence": 0.7}})["status"] == "ok"
    (d,) = c.infer_raw(0, img)["detections"]
    # maxDetections (extension), and a value out of range changes nothing
    assert c.command({"cmd": "reconfigure", "index": 0,
                      "config": {"confidence": 0.5, "maxDetections": 1}})["status"] == "ok"
    assert scores_of(c.infer_raw(0, img)) == [0.9]
    r = c.command({"cmd": "reconfigure", "index": 0, "config": {"confidence": 2}})
    assert r["status"] == "error" and "confidence" in r["error"], r
    assert scores_of(c.infer_raw(0, img)) == [0.9]
    assert c.command({"cmd": "reconfigure", "index": 0,
                      "config": {"maxDetections": 5}})["status"] == "ok"
    assert scores_of(c.infer_raw(0, img)) == [0.9, 0.6]
    assert d["label"] == "face" and d["class"] == 0, d  # a face detector's one class
    assert all(abs(a - b) <= 1 for a, b in zip(d["box"], [10, 10, 50, 50])), d


def test_counter_file_counts_runs(worker, tmp_path):
    counter = tmp_path / "runs.txt"
    m = tb_script(tmp_path / "counted.json", counter_file=counter)
    w, _ = worker(tb_config([m]))
    c = w.conn
    for _ in range(3):
        c.infer_raw(0, solid(32, 32))
    c.infer_batch(0, [solid(32, 32)] * 4)
    assert counted_runs(counter) in (4, 7), counter.read_text()  # one batched run or four
    lines = [int(x) for x in counter.read_text().split()]
    assert sum(lines) == 7, lines


def test_doc_example_script(worker, tmp_path):
    """The test-runtime script shown in docs/protocol.md does what it says."""
    import json
    import re
    doc = (__import__("ospreyd_client").ROOT / "docs" / "protocol.md").read_text()
    block = doc[doc.index('    {"inputs":'):doc.index('"counter_file": "/tmp/runs"}') + 28]
    script = json.loads(re.sub(r"\n\s+", " ", block))
    script["load_block_file"] = str(tmp_path / "go")
    script["counter_file"] = str(tmp_path / "runs")
    (tmp_path / "go").touch()
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(script))
    w, ready = worker(tb_config([{"path": str(path), "postprocessor": "ultraface"}]))
    assert ready["models"] == 1, w.stderr_text()
    (d,) = w.conn.infer_raw(0, solid(64, 64))["detections"]
    assert round(d["score"], 3) == 0.9
    assert all(abs(a - b) <= 1 for a, b in zip(d["box"], [6.4, 6.4, 32, 32])), d
    assert counted_runs(tmp_path / "runs") == 1
