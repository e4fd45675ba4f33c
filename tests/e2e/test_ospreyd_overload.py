"""Load control through ospreyd with the scripted test backend: the per-model
gate that sheds the OLDEST waiting frame, and v2 deadlines that shed dead
work before it runs."""
import time

from ospreyd_client import (DROPPED_DEADLINE, DROPPED_QUEUE, MSG_RAW, check_clean, counted_runs,
                            frame, media_bytes, p_raw, solid, spawn, tb_config,  # noqa: F401
                            tb_script, worker)  # noqa: F401

N = 200


def test_burst_sheds_oldest(worker, tmp_path):
    counter = tmp_path / "runs"
    m = tb_script(tmp_path / "slow.json", run_delay_ms=20, counter_file=counter)
    w, ready = worker(tb_config([m], concurrency=1))
    assert ready["workers"] == 1, ready
    c = w.conn
    px = bytes(32 * 32 * 3)
    ids = [c.new_id() for _ in range(N)]
    burst = b"".join(frame(i, MSG_RAW, p_raw(0, 32, 32, 0, px)) for i in ids)
    c.send_bytes(burst)  # one write: the whole burst arrives at once
    c.wait_for(lambda: all(i in c.replies for i in ids), 60, f"replies to all {N} frames")
    missing, twice = c.all_answered_once(ids)
    assert not missing and not twice, (missing, twice)

    dropped = [i for i in ids if c.replies[i][0].get("dropped")]
    served = [i for i in ids if not c.replies[i][0].get("dropped")]
    for i in dropped:
        r = c.replies[i][0]
        assert r == DROPPED_QUEUE and list(r) == list(DROPPED_QUEUE), r
    for i in served:
        r = c.replies[i][0]
        assert "error" not in r and r["kind"] == "detections" and r["detections"] == [], r
    # the first frame ran at once; the two newest were the last ones waiting
    assert ids[0] in served
    assert ids[-2] in served and ids[-1] in served, served[-5:]
    # 20 ms per run while 200 frames arrive in a few ms: most are shed
    assert len(dropped) >= N // 2, (len(served), served)
    # workers = 1 and a FIFO queue: frames run, and are shed, in arrival order
    pos = {rid: k for k, rid in enumerate(c.order)}
    assert sorted(served, key=pos.get) == served, "served frames out of arrival order"
    assert sorted(dropped, key=pos.get) == dropped, "frames shed out of arrival order"
    # drop-OLDEST: when frame d is shed, every older frame that is still to be
    # served was already running (workers = 1, plus one reply in the pipe)
    for d in dropped:
        older_later = [s for s in served if s < d and pos[s] > pos[d]]
        assert len(older_later) <= 2, (d, older_later)
    # the model ran exactly the served frames
    assert counted_runs(counter) == len(served)
    ms = c.mem_stats()
    assert ms["counters"]["shedQueueFull"] == len(dropped), ms["counters"]
    assert ms["counters"]["inferRaw"] == N
    assert ms["counters"]["shedDeadlineExpired"] == 0
    for v in ms["backpressure"].values():
        assert v == {"running": 0, "pending": 0}, ms["backpressure"]
    check_clean(c)


def test_no_shed_within_bounds(worker, tmp_path):
    """workers running + 2 waiting: nothing is shed."""
    m = tb_script(tmp_path / "slow.json", run_delay_ms=200)
    w, _ = worker(tb_config([m], concurrency=2))
    c = w.conn
    ids = [c.send(MSG_RAW, p_raw(0, 8, 8, 0, bytes(192))) for _ in range(4)]
    assert all(not c.reply(i).get("dropped") for i in ids), [c.reply(i) for i in ids]
    # a fifth beyond the bound sheds the oldest waiting one (the third sent)
    ids = [c.send(MSG_RAW, p_raw(0, 8, 8, 0, bytes(192))) for _ in range(5)]
    replies = [c.reply(i) for i in ids]
    assert [bool(r.get("dropped")) for r in replies] == [False, False, True, False, False], replies


def test_batches_bypass_the_gate(worker, tmp_path):
    m = tb_script(tmp_path / "slow.json", run_delay_ms=30)
    w, _ = worker(tb_config([m], concurrency=1))
    c = w.conn
    items = [solid(16, 16)] * 4
    from ospreyd_client import MSG_BATCH, p_batch
    ids = [c.send(MSG_BATCH, p_batch(0, [(i.w, i.h, i.fmt, i.data) for i in items]))
           for _ in range(5)]
    for i in ids:
        res = c.reply(i)["results"]
        assert len(res) == 4 and not any(r.get("dropped") for r in res), res
    assert c.mem_stats()["counters"]["shedQueueFull"] == 0


def test_expired_deadlines_never_run(worker, tmp_path):
    counter = tmp_path / "runs"
    m = tb_script(tmp_path / "m.json", counter_file=counter)
    w, ready = worker(tb_config([m], protocol=2))
    c = w.conn
    assert c.wire == 2
    past = int(time.time() * 1000) - 5000
    r = c.infer_raw(0, solid(32, 32), deadline=past)
    assert r == DROPPED_DEADLINE and list(r) == list(DROPPED_DEADLINE), r
    assert c.infer_jpeg(0, media_bytes("messi5.jpg"), deadline=past) == DROPPED_DEADLINE
    assert c.cache_frame(8, solid(32, 32))["status"] == "cached"
    assert c.infer_cached(0, 8, deadline=past) == DROPPED_DEADLINE
    res = c.infer_batch(0, [solid(32, 32)] * 4, deadline=past)
    assert res == {"results": [DROPPED_DEADLINE] * 4}, res
    assert c.infer_batch(0, [solid(32, 32)] * 4, frame_id=3, deadline=1)["results"] == \
        [DROPPED_DEADLINE] * 4  # 1 ms after the epoch
    assert counted_runs(counter) == 0, "an expired request ran"
    cnt = c.mem_stats()["counters"]
    assert cnt["shedDeadlineExpired"] == 1 + 1 + 1 + 4 + 4, cnt
    assert cnt["shedQueueFull"] == 0
    # the stderr line is sampled: the first shed logs, the next ones do not
    lines = [l for l in w.stderr_text().splitlines() if "deadline" in l.lower()]
    assert 1 <= len(lines) <= 2, lines
    # live deadlines and no deadline run
    later = int(time.time() * 1000) + 60_000
    for dl in (later, 0):
        r = c.infer_raw(0, solid(32, 32), deadline=dl)
        assert "dropped" not in r and r["kind"] == "detections", r
    assert counted_runs(counter) == 2
    assert c.mem_stats()["counters"]["shedDeadlineExpired"] == 11


def test_deadline_checked_again_on_promotion(worker, tmp_path):
    counter = tmp_path / "runs"
    m = tb_script(tmp_path / "m.json", run_delay_ms=500, counter_file=counter)
    w, _ = worker(tb_config([m], protocol=2, concurrency=1))
    c = w.conn
    px = p_raw(0, 8, 8, 0, bytes(192))
    a = c.send(MSG_RAW, px, deadline=0)
    time.sleep(0.05)
    b = c.send(MSG_RAW, px, deadline=int(time.time() * 1000) + 150)  # expires while waiting
    d = c.send(MSG_RAW, px, deadline=int(time.time() * 1000) + 30_000)
    assert "dropped" not in c.reply(a)
    assert c.reply(b) == DROPPED_DEADLINE
    assert "dropped" not in c.reply(d)
    assert c.order.index(b) < c.order.index(d)
    assert counted_runs(counter) == 2
    assert c.mem_stats()["counters"]["shedDeadlineExpired"] == 1


def test_v1_ignores_time(worker, tmp_path):
    """At v1 there is no deadline: the first 8 payload bytes are the payload."""
    counter = tmp_path / "runs"
    m = tb_script(tmp_path / "m.json", counter_file=counter)
    w, _ = worker(tb_config([m], protocol=1))
    r = w.conn.infer_raw(0, solid(32, 32))
    assert r["kind"] == "detections" and "dropped" not in r, r
    assert counted_runs(counter) == 1


def test_window_mode_collects_frames(worker, tmp_path):
    counter = tmp_path / "runs"
    m = tb_script(tmp_path / "m.json", counter_file=counter, faces=[(0.9, [0.1, 0.1, 0.5, 0.5])])
    w, _ = worker(tb_config([m], concurrency=4, batch_mode="window", window_ms=400,
                            max_batch_size=4))
    c = w.conn
    px = p_raw(0, 32, 32, 0, bytes(32 * 32 * 3))
    # one frame waits for the window to close
    t0 = time.monotonic()
    r = c.reply(c.send(MSG_RAW, px), timeout=10)
    assert r["detections"], r
    assert time.monotonic() - t0 >= 0.3, "a lone frame must wait for window_ms"
    # max_batch_size frames flush at once
    t0 = time.monotonic()
    ids = [c.send(MSG_RAW, px) for _ in range(4)]
    recs = [c.reply(i, timeout=10) for i in ids]
    assert time.monotonic() - t0 < 0.3, "a full window must not wait"
    assert all(r["detections"] and not r.get("dropped") for r in recs), recs
    assert sum(int(x) for x in counter.read_text().split()) == 5


def test_deadline_gate_before_model_check(worker, tmp_path):
    """An expired frame for an unloaded slot is a shed, not a diagnosis."""
    m = tb_script(tmp_path / "m.json")
    w, _ = worker(tb_config([m, {"path": str(tmp_path / "missing.json")}], protocol=2))
    c = w.conn
    assert c.status()["models"][1]["loaded"] is False
    past = int(time.time() * 1000) - 1000
    assert c.infer_raw(1, solid(8, 8), deadline=past) == DROPPED_DEADLINE
    assert c.infer_raw(1, solid(8, 8), deadline=0)["error"] == "Model 1 not loaded"
