"""The thread economy on the real model: a frame that runs alone takes the
wider session (every core), frames side by side take the single-thread one,
and both give the same detections; `loneFrameThreads: 0` turns the wider
session off; the predict workers run `predictNice` steps nicer than the
rest. Also: a large raw frame that arrives in uneven pieces (the
server realigns its buffer while reading) gives the same answer as one
written at once; and under overload large frames parked in pipes run
intact or are shed, over pipes and sockets, parked from their header on."""

import json

import pytest

from ospreyd_client import (FMT_BGR, model, MSG_RAW, SSD_CATALOG, Image, detections_match,
                            frame, media_image, need, p_raw, spawn, tb_config, worker)  # noqa: F401


def mem_threading(c):
    return c.command({"cmd": "mem_stats"})["threading"]


def tiled(img: Image, nx: int, ny: int) -> Image:
    """img repeated nx x ny times: a large frame with several people."""
    row_bytes = img.w * img.channels
    rows = []
    for _ in range(ny):
        for y in range(img.h):
            line = img.data[y * row_bytes:(y + 1) * row_bytes]
            rows.append(line * nx)
    return Image(img.w * nx, img.h * ny, img.channels, b"".join(rows))


def test_lone_frames_take_the_wide_session_and_agree(worker):
    model("ssd-oidv4")
    w, _ = worker({"runtime": "onnxruntime", "models": [SSD_CATALOG]})
    c = w.conn
    th = mem_threading(c)
    cores = th["cores"]
    assert th["intraOpThreads"] <= th["loneFrameThreads"] <= max(cores, th["intraOpThreads"]), th
    messi = media_image("messi5.jpg")
    lone = c.infer_raw(0, messi)  # one at a time: nothing else admitted
    th = mem_threading(c)
    if cores > 1 and th["intraOpThreads"] < cores:
        assert th["loneRuns"] == 1, th
    # four at once: each worker takes one; the first may still run alone
    ids = [c.send(MSG_RAW, p_raw(0, messi.w, messi.h, messi.fmt, messi.data)) for _ in range(4)]
    side = [c.reply(i) for i in ids]
    assert any(d["label"] == "Person" for d in lone["detections"]), lone
    for r in side:
        assert detections_match(lone, r, px=1.0, score=0.002), (lone, r)
    after = mem_threading(c)["loneRuns"]
    assert after <= th["loneRuns"] + 4


def test_no_lone_run_while_input_is_arriving(spawn, tmp_path):
    """A frame that would run alone does not take every core while another
    frame is still arriving: the reading thread needs a core, and the other
    frame will soon want the model too. Connection A is half-way through a
    large frame when connection B's frame is admitted: B runs on one
    thread. Once A's frame is in, it runs alone, and so does B's next."""
    import time
    from test_ospreyd_sockets import serve
    model("ssd-oidv4")
    w = serve(spawn, tmp_path, {"runtime": "onnxruntime", "models": [SSD_CATALOG]}, "unix")
    a, b = w.connect(), w.connect()
    assert a.hello({"protocolVersion": 1})["status"] == "ready"
    assert b.hello({"protocolVersion": 1})["status"] == "ready"
    th = b.command({"cmd": "mem_stats"})["threading"]
    if th["cores"] < 2 or th["loneFrameThreads"] <= th["intraOpThreads"]:
        pytest.skip("no wider session on this machine")
    big, messi = tiled(media_image("messi5.jpg"), 3, 3), media_image("messi5.jpg")
    req = a.new_id()
    data = frame(req, MSG_RAW, p_raw(0, big.w, big.h, big.fmt, big.data))
    a.send_bytes(data[:len(data) // 2])
    time.sleep(0.3)
    first = b.infer_raw(0, messi)
    assert b.command({"cmd": "mem_stats"})["threading"]["loneRuns"] == 0
    a.send_bytes(data[len(data) // 2:])
    assert any(d["label"] == "Person" for d in a.reply(req)["detections"])
    assert b.command({"cmd": "mem_stats"})["threading"]["loneRuns"] == 1  # A's, alone by then
    again = b.infer_raw(0, messi)
    assert b.command({"cmd": "mem_stats"})["threading"]["loneRuns"] == 2
    assert detections_match(first, again, px=1.0, score=0.002), (first, again)


def thread_stats(pid: int) -> list:
    """(name, niceness) of each thread of a process (fields 2 and 19 of its stat)."""
    import os
    out = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except FileNotFoundError:  # a thread that just ended
            continue
        out.append((stat[stat.index("(") + 1:stat.rindex(")")],
                    int(stat[stat.rindex(")") + 2:].split()[16])))
    return out


def thread_nices(pid: int) -> list:
    """The niceness of each thread of a process."""
    return [nice for _, nice in thread_stats(pid)]


@pytest.mark.parametrize("asked,nicer", [(None, 3), (0, 0), (1, 1), (40, 19), (-2, 3), ("x", 3)])
def test_predict_workers_run_nicer(worker, asked, nicer):
    """The predict workers, and only they, run `predictNice` steps nicer
    than the rest of the server (default 3; capped at 19; an unusable value
    is the default), and mem_stats and stderr say so."""
    import os
    if not os.path.isdir("/proc/self/task"):
        pytest.skip("per-thread niceness is read from Linux's /proc")
    extra = {} if asked is None else {"predictNice": asked}
    w, _ = worker(tb_config([], concurrency=2, autoConcurrency=False, **extra))
    th = mem_threading(w.conn)
    assert th["predictNice"] == nicer and th["predictWorkers"] == 2, th
    base = os.getpriority(os.PRIO_PROCESS, w.proc.pid)  # the main thread's
    want = min(base + nicer, 19)
    nices = thread_nices(w.proc.pid)
    assert nices.count(want) == (2 if nicer else len(nices)), (base, nicer, nices)
    assert all(n in (base, want) for n in nices), (base, nicer, nices)


def test_worker_threads_are_named(worker):
    """The prepare and predict workers carry names that top -H and perf
    show: osp-prepareN and osp-predictN, N from 0, as many as mem_stats
    reports; the predict workers are the nicer ones."""
    import os
    if not os.path.isdir("/proc/self/task"):
        pytest.skip("thread names are read from Linux's /proc")
    w, _ = worker(tb_config([], concurrency=2, autoConcurrency=False))
    th = mem_threading(w.conn)
    names = dict(thread_stats(w.proc.pid))
    base = os.getpriority(os.PRIO_PROCESS, w.proc.pid)
    for i in range(th["prepareWorkers"]):
        assert names.get(f"osp-prepare{i}") == base, names
    for i in range(th["predictWorkers"]):
        assert names.get(f"osp-predict{i}") == min(base + th["predictNice"], 19), names
    assert f"osp-predict{th['predictWorkers']}" not in names, names


def test_lone_frame_threads_off(worker):
    model("ssd-oidv4")
    w, _ = worker({"runtime": "onnxruntime", "models": [SSD_CATALOG], "loneFrameThreads": 0})
    c = w.conn
    c.infer_raw(0, media_image("messi5.jpg"))
    th = mem_threading(c)
    assert th["loneFrameThreads"] == th["intraOpThreads"] and th["loneRuns"] == 0, th


def test_large_frame_in_uneven_pieces(worker):
    """A 5 MB frame written in pieces whose ends fall at odd offsets, with
    pauses so the server empties the pipe at each: the same detections as
    the frame written whole."""
    model("ssd-oidv4")
    w, _ = worker({"runtime": "onnxruntime", "models": [SSD_CATALOG]})
    c = w.conn
    big = tiled(media_image("messi5.jpg"), 3, 3)
    whole = c.infer_raw(0, big)
    assert sum(d["label"] == "Person" for d in whole["detections"]) >= 2, whole
    req = c.new_id()
    data = frame(req, MSG_RAW, p_raw(0, big.w, big.h, big.fmt, big.data))
    c.send_in_pieces(data, [13, 70001, 70001 + 1048576 + 7, 70001 + 2 * 1048576 + 29, len(data) - 5])
    pieces = c.reply(req)
    assert pieces == whole or detections_match(whole, pieces, px=0.01, score=1e-6), (whole, pieces)


def tensor_echo(path, side=128, run_delay_ms=1500):
    """A test-backend model (a test double) that takes run_delay_ms a run
    and answers, as its embedding, the very tensor it was given: the
    frame's pixels as they reached the model, resized to side x side."""
    path.write_text(json.dumps({
        "run_delay_ms": run_delay_ms,
        "inputs": [{"name": "images", "dtype": "float32", "shape": [1, 3, side, side]}],
        "outputs": [{"name": "tensor", "dtype": "float32", "shape": [1, 3 * side * side],
                     "from_input": "copy"}]}))
    return {"path": str(path), "postprocessor": "embedding", "preprocessMode": "resize",
            "mean": 127.5, "std": 127.5}


@pytest.mark.parametrize("fmt", ["rgb", "bgr", "gray"])
def test_parked_frames_run_intact_or_shed(worker, tmp_path, fmt):
    """Large raw frames that arrive while the only run slot is taken (by a
    model slow enough that it always is) wait with their pixels parked in
    pipes: every request is answered once, the ones shed cost no copy, and
    the ones that run reach the model as the same tensor as the frame sent
    alone (RGB and BGR are prepared from the pipes a ring at a time, GRAY is
    copied back into its buffer first)."""
    w, _ = worker(tb_config([tensor_echo(tmp_path / "echo.json")], concurrency=1,
                            autoConcurrency=False))
    c = w.conn
    big = tiled(media_image("messi5.jpg"), 3, 3)
    if fmt == "gray":
        big = big.gray_from_rgb()
    code = FMT_BGR if fmt == "bgr" else big.fmt
    pixels = big.bgr() if fmt == "bgr" else big.data
    alone = c.reply(c.send(MSG_RAW, p_raw(0, big.w, big.h, code, pixels)), timeout=60)
    assert len(alone["embedding"]) == 3 * 128 * 128, alone.keys()
    assert len(set(alone["embedding"])) > 100, "the frame's content, not a constant"
    payload = p_raw(0, big.w, big.h, code, pixels)
    ids = [c.send(MSG_RAW, payload) for _ in range(12)]
    replies = [c.reply(i, timeout=60) for i in ids]
    served = [r for r in replies if not r.get("dropped")]
    shed = [r for r in replies if r.get("dropped")]
    assert served and shed, [bool(r.get("dropped")) for r in replies]
    assert all(r["shedReason"] == "queue-full" for r in shed), shed
    for r in served:
        assert r["embedding"] == alone["embedding"], "a served frame reached the model changed"
    # the newest frames are the ones served (drop-oldest)
    assert not replies[-1].get("dropped"), replies[-1]
    counters = c.command({"cmd": "mem_stats"})["counters"]
    assert counters["framesParked"] >= 1, counters


@pytest.mark.parametrize("transport,version", [("unix", 2), ("tcp", 1)])
def test_parked_frames_over_sockets(spawn, tmp_path, transport, version):
    """The same burst over a socket, at both wire versions (the raw header
    after a deadline prefix at v2), to the same slow model that echoes its
    tensor: frames park (spliced from the socket), every request is
    answered once, and the served frames reach the model intact."""
    from test_ospreyd_sockets import serve
    w = serve(spawn, tmp_path, tb_config([tensor_echo(tmp_path / "echo.json")], concurrency=1,
                                         autoConcurrency=False), transport)
    c = w.connect()
    assert c.hello({"protocolVersion": version})["status"] == "ready"
    big = tiled(media_image("messi5.jpg"), 3, 3)
    alone = c.infer_raw(0, big, timeout=60)
    assert len(set(alone["embedding"])) > 100, "the frame's content, not a constant"
    payload = p_raw(0, big.w, big.h, big.fmt, big.data)
    ids = [c.send(MSG_RAW, payload) for _ in range(10)]
    replies = [c.reply(i, timeout=60) for i in ids]
    served = [r for r in replies if not r.get("dropped")]
    assert served and len(served) < len(replies), [bool(r.get("dropped")) for r in replies]
    for r in served:
        assert r["embedding"] == alone["embedding"], "a served frame reached the model changed"
    counters = c.command({"cmd": "mem_stats"})["counters"]
    assert counters["framesParked"] >= 1, counters
    # a socket is read directly: the relay pipe (src/server/pipe/relay.c) is for pipes
    assert counters["bytesRelayed"] == 0, counters


def test_frames_park_behind_a_slow_model(spawn, tmp_path):
    """A model that takes 1.5 s a run (the test backend, a test double) holds
    its one slot while a burst arrives over TCP: the two oldest waiting fill
    the queue, later frames arrive to a full queue and park; every request
    is answered once, the newest served, the rest shed."""
    from ospreyd_client import tb_config, tb_script
    from test_ospreyd_sockets import serve
    model = tb_script(tmp_path / "slow.json", run_delay_ms=1500, faces=[(0.9, [0.1, 0.1, 0.5, 0.5])])
    w = serve(spawn, tmp_path, tb_config([model]), "tcp")
    c = w.connect()
    assert c.hello({"protocolVersion": 1})["status"] == "ready"
    big = tiled(media_image("messi5.jpg"), 3, 3)
    payload = p_raw(0, big.w, big.h, big.fmt, big.data)
    ids = [c.send(MSG_RAW, payload) for _ in range(6)]
    replies = [c.reply(i, timeout=60) for i in ids]
    assert [bool(r.get("dropped")) for r in replies] == [False, True, True, True, False, False], replies
    assert all(len(r["detections"]) == 1 for r in replies if not r.get("dropped")), replies
    assert c.command({"cmd": "mem_stats"})["counters"]["framesParked"] >= 1


def test_parked_frames_are_not_read_first(worker, tmp_path):
    """Over a pipe, with the one run slot held by a slow model (the test
    backend, a test double) and the queue full, a frame parks from the read
    that brought its header: none of its pixels go through the relay
    (bytesRelayed), not even the pipeful the host had written ahead. Only
    the frames that were read whole (the one running and the two that filled
    the queue) account for relayed bytes."""
    from ospreyd_client import tb_script
    model = tb_script(tmp_path / "slow.json", run_delay_ms=1500, faces=[(0.9, [0.1, 0.1, 0.5, 0.5])])
    w, _ = worker(tb_config([model], concurrency=1, autoConcurrency=False))
    c = w.conn
    big = tiled(media_image("messi5.jpg"), 3, 3)
    payload = p_raw(0, big.w, big.h, big.fmt, big.data)
    before = c.command({"cmd": "mem_stats"})["counters"]
    ids = [c.send(MSG_RAW, payload) for _ in range(6)]
    replies = [c.reply(i, timeout=60) for i in ids]
    assert [bool(r.get("dropped")) for r in replies] == [False, True, True, True, False, False], replies
    after = c.command({"cmd": "mem_stats"})["counters"]
    assert after["framesParked"] - before["framesParked"] == 3, (before, after)
    relayed = after["bytesRelayed"] - before["bytesRelayed"]
    assert 0 < relayed <= 3 * len(payload), (relayed, len(payload))
