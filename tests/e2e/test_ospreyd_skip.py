"""Large raw frames already past their deadline when their header arrives
(src/server/pipe/big.c): shed at the gate as every expired frame is, their
pixels discarded as they arrive (spliced into /dev/null from a pipe, read
into a small buffer from a socket) instead of read into memory. What the
host sees is what any expired frame gets; the stream goes on from the right
place after it."""
import struct

from ospreyd_client import (DROPPED_DEADLINE, MSG_RAW, check_clean, counted_runs, frame, now_ms,
                            p_raw, solid, spawn, tb_config, tb_script, worker)  # noqa: F401
from test_ospreyd_sockets import hello, serve

W, H = 640, 480  # 921 600 bytes of pixels: past the 256 KiB read whole in the staging buffer


def counters(c):
    return c.mem_stats()["counters"]


def expired(req, model_idx=0, w=W, h=H, pixels=None, trailing=b""):
    pixels = bytes(range(256)) * (w * h * 3 // 256) if pixels is None else pixels
    return frame(req, MSG_RAW, struct.pack("<Q", now_ms() - 5000) +
                 p_raw(model_idx, w, h, 0, pixels) + trailing)


def ledger(c):
    req = c.mem_stats()["requests"]
    return {k: (m["received"], m["served"], m["shed"]["deadlineExpired"])
            for k, m in req["models"].items()}


def check_skips(c, counter):
    before, books = counters(c), ledger(c)
    # in pieces, the first holding the header, with 777 bytes after the pixels
    req = c.new_id()
    data = expired(req, trailing=b"t" * 777)
    c.send_in_pieces(data, [4096, 300001, 700003])
    assert c.reply(req) == DROPPED_DEADLINE
    # the next frame is read from the right place and runs
    live = c.infer_raw(0, solid(32, 32), deadline=0)
    assert "dropped" not in live and live["kind"] == "detections", live
    # the gate comes before the model check, as for any expired frame
    req = c.new_id()
    c.send_bytes(expired(req, model_idx=1))
    assert c.reply(req) == DROPPED_DEADLINE
    after = counters(c)
    assert after["framesSkipped"] - before["framesSkipped"] == 2, (before, after)
    assert after["shedDeadlineExpired"] - before["shedDeadlineExpired"] == 2, (before, after)
    assert after["inferRaw"] - before["inferRaw"] == 3, (before, after)
    assert counted_runs(counter) == 1, "an expired frame ran"
    # the requests' ledger has them as received and shed, by model
    now = ledger(c)
    was = {k: books.get(k, (0, 0, 0)) for k in ("0", "1")}
    assert now["0"] == (was["0"][0] + 2, was["0"][1] + 1, was["0"][2] + 1), (books, now)
    assert now["1"] == (was["1"][0] + 1, was["1"][1], was["1"][2] + 1), (books, now)
    # a frame the parser refuses is refused as before, deadline or not: its
    # header declares more pixels than it carries
    bad = [c.request(MSG_RAW, p_raw(0, 2000, 2000, 0, bytes(300_000)), deadline=dl)
           for dl in (now_ms() - 5000, 0)]
    assert bad[0] == bad[1] and "error" in bad[0], bad
    assert counters(c)["framesSkipped"] == after["framesSkipped"]
    check_clean(c)


def test_expired_large_frame_skipped_from_a_pipe(worker, tmp_path):
    counter = tmp_path / "runs"
    m = tb_script(tmp_path / "m.json", counter_file=counter)
    w, _ = worker(tb_config([m, {"path": str(tmp_path / "missing.json")}], protocol=2))
    check_skips(w.conn, counter)


def test_expired_large_frame_skipped_from_a_socket(spawn, tmp_path):
    counter = tmp_path / "runs"
    m = tb_script(tmp_path / "m.json", counter_file=counter)
    w = serve(spawn, tmp_path, tb_config([m, {"path": str(tmp_path / "missing.json")}]), "unix")
    c = w.connect()
    hello(c, 2)
    check_skips(c, counter)
