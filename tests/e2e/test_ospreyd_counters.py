"""The request ledger (docs/protocol.md, mem_stats "requests"; docs/http.md,
osprey_requests_*): after a mixed run on real models — good frames of
every type, frames for model indexes never loaded and unloaded, expired
deadlines, payloads that do not parse, a JPEG that does not decode, a
frame id not cached, a burst that overflows a model's queue — every
request the client sent is received once and counted once as served,
shed (by reason) or an error (by kind), per model and in total, and the
client's own tally of the replies is the server's."""
import json
import struct
from collections import Counter

from ospreyd_client import (model, MSG_BATCH, MSG_CACHED, MSG_JPEG, MSG_RAW, ULTRAFACE_CATALOG,
                            media_bytes, media_image, need, p_batch, p_cached, p_jpeg, p_raw,
                            solid, spawn, tb_config, tb_script)  # noqa: F401
from test_ospreyd_http import get, parse_metrics, sample, serve, wait_http

BLAZEFACE = {"model": "blazeface"}
NEVER = 3  # an index no model is ever loaded at
# the error kinds of mem_stats and their /metrics labels
KINDS = {"badRequest": "bad-request", "notLoaded": "not-loaded", "notCached": "not-cached",
         "failed": "failed", "noMemory": "no-memory", "timedOut": "timed-out", "reloading": "reloading"}


def outcome(rec):
    """What a reply says became of its request: ("served",), ("shed", reason)
    or ("error",)."""
    if "error" in rec:
        return ("error",)
    items = rec["results"] if "results" in rec and "kind" not in rec else [rec]
    if items and all(i.get("dropped") for i in items):
        return ("shed", items[0]["shedReason"])
    return ("served",)


def test_every_request_is_counted_once_and_the_counts_add_up(spawn, tmp_path):
    model("ultraface")
    model("blazeface")
    w = serve(spawn, tmp_path, {"runtime": "onnxruntime", "models": [ULTRAFACE_CATALOG, BLAZEFACE],
                                "concurrency": 1})
    wait_http(w, w.hport)
    conn = w.connect()
    assert conn.hello({"protocolVersion": 2})["status"] == "ready"
    img = media_image("messi5.jpg")
    small = solid(64, 48, 90)
    jpeg = media_bytes("messi5.jpg")
    raw = lambda idx, im=img: p_raw(idx, im.w, im.h, im.fmt, im.data)  # noqa: E731
    batch = lambda idx: p_batch(idx, [(small.w, small.h, small.fmt, small.data)] * 2)  # noqa: E731
    sent = []  # (req_id, model index or None, the error kind expected or None)

    def send(msg_type, payload, idx, kind=None, deadline=0, wait=True):
        rid = conn.send(msg_type, payload, deadline=deadline)
        sent.append((rid, idx, kind))
        if wait:  # one at a time, so that only the burst below can overflow a queue
            conn.reply(rid)

    assert conn.cache_frame(7, img)["status"] == "cached"
    for idx in (0, 1):  # good frames of every type, on both models
        send(MSG_RAW, raw(idx), idx)
        send(MSG_JPEG, p_jpeg(idx, jpeg), idx)
        send(MSG_BATCH, batch(idx), idx)
        send(MSG_CACHED, p_cached(idx, 7), idx)
    for msg_type, payload in ((MSG_RAW, raw(NEVER)), (MSG_JPEG, p_jpeg(NEVER, jpeg)),
                              (MSG_BATCH, batch(NEVER)), (MSG_CACHED, p_cached(NEVER, 7))):
        send(msg_type, payload, NEVER, "notLoaded")
    send(MSG_RAW, raw(0), 0, deadline=1)  # long past
    send(MSG_BATCH, batch(1), 1, deadline=1)
    send(MSG_CACHED, p_cached(0, 999), 0, "notCached")
    send(MSG_JPEG, p_jpeg(0, b"\xff\xd8 this is no JPEG"), 0, "failed")
    for payload in (struct.pack("<BI", 0, 64),  # truncated infer_raw header
                    p_raw(0, 64, 48, 0, small.data[:-1]),  # raw wrap failed
                    b""):  # no model index at all
        send(MSG_RAW, payload, None, "badRequest")
    send(MSG_JPEG, b"", None, "badRequest")
    send(MSG_CACHED, b"\x00\x01", None, "badRequest")
    send(MSG_BATCH, p_batch(0, [(64, 48, 0, small.data)], count=3), None, "badRequest")
    # more than one run slot and two waiting places can hold; small frames, so
    # that they arrive faster than a frame runs (large raw frames are prepared
    # as they are read, which a sanitizer slows more than the model's run)
    for _ in range(40):
        send(MSG_RAW, raw(0, small), 0, wait=False)
    for rid, _, _ in sent:
        conn.reply(rid)
    # model 1 unloaded: its index is now one with nothing at it
    assert conn.command({"cmd": "unload", "index": 1})["status"] == "ok"
    send(MSG_RAW, raw(1), 1, "notLoaded")
    send(MSG_BATCH, batch(1), 1, "notLoaded")
    replies = {rid: conn.reply(rid) for rid, _, _ in sent}

    tally = {}  # model key -> Counter of outcomes
    for rid, idx, kind in sent:
        o = outcome(replies[rid])
        if kind is not None:
            assert o == ("error",), (kind, replies[rid])
            o = ("error", kind)
        key = "noModel" if idx is None else str(idx)
        tally.setdefault(key, Counter())[o] += 1
    total = sum(tally.values(), Counter())
    assert total[("shed", "queue-full")] > 0, "the burst overflowed no queue"
    assert total[("shed", "deadline-expired")] == 2

    stats = conn.mem_stats()
    req = stats["requests"]

    def check(row, t):
        assert row["received"] == sum(t.values())
        assert row["served"] == t[("served",)]
        assert row["shed"] == {"deadlineExpired": t[("shed", "deadline-expired")],
                               "queueFull": t[("shed", "queue-full")]}
        assert row["errors"] == {k: t[("error", k)] for k in KINDS}
        assert row["received"] == row["served"] + sum(row["shed"].values()) + sum(row["errors"].values())

    check(req, total)
    assert set(req["models"]) == {"0", "1", str(NEVER)}
    for key in ("0", "1", str(NEVER)):
        check(req["models"][key], tally[key])
    check(req["noModel"], tally["noModel"])
    # counters.errors counts every error answered, "model N not loaded" included
    assert stats["counters"]["errors"] == sum(req["errors"].values())
    assert stats["counters"]["totalInference"] == req["received"]

    status, _, text = get(w.hport, "/metrics")
    assert status == 200
    m = parse_metrics(text)
    # an index with no model configured (never, or unloaded) is named by its index
    for key, label in (("0", "ultraface"), ("1", "#1"), (str(NEVER), f"#{NEVER}"),
                       ("noModel", "none")):
        row = req["noModel"] if key == "noModel" else req["models"][key]
        assert sample(m, "osprey_requests_received_total", model=label) == row["received"]
        assert sample(m, "osprey_requests_served_total", model=label) == row["served"]
        assert sample(m, "osprey_requests_shed_total", model=label, reason="queue-full") == \
            row["shed"]["queueFull"]
        assert sample(m, "osprey_requests_shed_total", model=label, reason="deadline-expired") == \
            row["shed"]["deadlineExpired"]
        for kind, lab in KINDS.items():
            assert sample(m, "osprey_requests_errors_total", model=label, kind=lab) == \
                row["errors"][kind]
    # /v1/stats is the same record
    status, _, body = get(w.hport, "/v1/stats")
    assert status == 200 and json.loads(body)["requests"]["received"] == req["received"]


def test_counts_add_up_across_a_stuck_run_and_its_reload(spawn, tmp_path):
    """A run that never returns (the test backend, a test double), the runs
    the watchdog gives up, the frames refused while the model reloads, and
    a mixed run on a second model: every request is counted once, per model
    and in total, in mem_stats and /metrics."""
    from test_ospreyd_watchdog import events, wait_event
    run_release, load_gate = tmp_path / "run.release", tmp_path / "load.gate"
    load_gate.touch()  # the first load passes; the reload waits for it again
    stuck = tb_script(tmp_path / "stuck.json", run_block_file=run_release, load_block_file=load_gate,
                      faces=[(0.9, [0.1, 0.1, 0.5, 0.5])])
    stuck["runTimeoutMs"] = 1500
    healthy = tb_script(tmp_path / "healthy.json", faces=[(0.9, [0.1, 0.1, 0.5, 0.5])])
    w = serve(spawn, tmp_path, tb_config([stuck, healthy], concurrency=2))
    wait_http(w, w.hport)
    conn = w.connect()
    assert conn.hello({"protocolVersion": 2})["status"] == "ready"
    load_gate.unlink()
    small = solid(32, 32)
    raw = lambda idx: p_raw(idx, small.w, small.h, small.fmt, small.data)  # noqa: E731
    batch = lambda idx: p_batch(idx, [(small.w, small.h, small.fmt, small.data)] * 2)  # noqa: E731
    sent = []  # (req_id, model key)

    def send(msg_type, payload, key, deadline=0):
        sent.append((conn.send(msg_type, payload, deadline=deadline), key))
        return sent[-1][0]

    # two runs that hang (both run slots) and two frames waiting behind them
    stuck_ids = [send(MSG_RAW, raw(0), "0") for _ in range(4)]
    for rid in stuck_ids:
        conn.reply(rid, timeout=30)
    wait_event(conn, "run-timeout", 2)
    # the model is reloading (its load waits for load_gate): refused
    for msg_type, payload in ((MSG_RAW, raw(0)), (MSG_BATCH, batch(0))):
        conn.reply(send(msg_type, payload, "0"), timeout=30)
    # a mixed run on the other model meanwhile
    for _ in range(3):
        conn.reply(send(MSG_RAW, raw(1), "1"))
    conn.reply(send(MSG_BATCH, batch(1), "1"))
    conn.reply(send(MSG_RAW, raw(1), "1", deadline=1))
    conn.reply(send(MSG_RAW, struct.pack("<BI", 1, 64), "noModel"))
    conn.reply(send(MSG_RAW, raw(NEVER), str(NEVER)))
    load_gate.touch()
    run_release.touch()
    wait_event(conn, "model-reloaded")
    conn.wait_for(lambda: len(events(conn, "run-finished-late")) == 2, 10, "both late returns")
    conn.reply(send(MSG_RAW, raw(0), "0"), timeout=30)

    tally = {}
    for rid, key in sent:
        rec = conn.reply(rid)
        o = outcome(rec)
        if o == ("error",):
            e = rec["error"]
            o = ("error", "timedOut" if "abandoned" in e else "reloading" if "being reloaded" in e
                 else "notLoaded" if "not loaded" in e else "badRequest")
        tally.setdefault(key, Counter())[o] += 1
    total = sum(tally.values(), Counter())
    assert total[("error", "timedOut")] == 2 and total[("error", "reloading")] == 4, tally
    assert total[("served",)] == 5 and total[("shed", "deadline-expired")] == 1, tally

    stats = conn.mem_stats()
    req = stats["requests"]
    def check(row, t):
        assert row["received"] == sum(t.values()), (row, t)
        assert row["served"] == t[("served",)], (row, t)
        assert row["shed"] == {"deadlineExpired": t[("shed", "deadline-expired")],
                               "queueFull": t[("shed", "queue-full")]}, (row, t)
        assert row["errors"] == {k: t[("error", k)] for k in KINDS}, (row, t)
        assert row["received"] == row["served"] + sum(row["shed"].values()) + sum(row["errors"].values())

    check(req, total)
    for key in ("0", "1", str(NEVER)):
        check(req["models"][key], tally[key])
    check(req["noModel"], tally["noModel"])
    assert stats["counters"]["errors"] == sum(req["errors"].values())
    m = parse_metrics(get(w.hport, "/metrics")[2])
    for key, label in (("0", "stuck"), ("1", "healthy"), (str(NEVER), f"#{NEVER}"), ("noModel", "none")):
        row = req["noModel"] if key == "noModel" else req["models"][key]
        got = sample(m, "osprey_requests_received_total", model=label)
        answered = sample(m, "osprey_requests_served_total", model=label) + sum(
            sample(m, "osprey_requests_shed_total", model=label, reason=r)
            for r in ("queue-full", "deadline-expired")) + sum(
            sample(m, "osprey_requests_errors_total", model=label, kind=k) for k in KINDS.values())
        assert got == row["received"] == answered, (label, got, answered, row)
