"""Large raw frames prepared as they are read (src/server/pipe/rows.c): the
tensor is made row by row while the pixels arrive, and the answer is the one
the whole frame gives (the same pixels through cache_frame + infer_cached,
which prepares the frame whole). Also what a host can do in the middle of
such a frame: pause, send bytes after the pixels, let its deadline pass,
unload the model from another connection, or hang up."""
import struct
import time

import pytest

from ospreyd_client import (DROPPED_DEADLINE, FMT_BGR, model, MSG_RAW, SSD_CATALOG,
                            ULTRAFACE_CATALOG, detections_match, frame, media_image, need, now_ms,
                            p_raw, spawn, worker)  # noqa: F401
from test_ospreyd_threads import tiled


def prepared_as_read(c):
    return c.mem_stats()["counters"]["framesPreparedAsRead"]


def relayed(c):
    return c.mem_stats()["counters"]["bytesRelayed"]


def whole(c, model_idx, img, frame_id):
    """The same pixels prepared whole: cached, then inferred from the cache."""
    assert c.cache_frame(frame_id, img)["status"] == "cached"
    return c.infer_cached(model_idx, frame_id)


@pytest.mark.parametrize("cfg,picture,nx,ny", [
    (SSD_CATALOG, "messi5.jpg", 3, 3),
    (ULTRAFACE_CATALOG, "astronaut.png", 3, 2)])
def test_rows_match_the_whole_frame(worker, cfg, picture, nx, ny):
    """ssd-oidv4 resizes 1644x1026 to 300x300, ultraface 1536x1024 to
    320x240: blended rows and a general width, in both colour orders."""
    model(cfg["model"])
    w, _ = worker({"runtime": "onnxruntime", "models": [cfg]})
    c = w.conn
    big = tiled(media_image(picture), nx, ny)
    before, bytes_before = prepared_as_read(c), relayed(c)
    ref = whole(c, 0, big, 5)
    assert prepared_as_read(c) == before  # cache_frame is not an inference
    rgb = c.infer_raw(0, big)
    bgr = c.infer_raw(0, big, fmt=FMT_BGR)
    assert prepared_as_read(c) == before + 2
    # all three frames came through the relay pipe (src/server/pipe/relay.c),
    # but for what a first read staged (up to 256 KiB) and a tail under 16 KiB
    assert relayed(c) - bytes_before >= 3 * (len(big.data) - (272 << 10)), relayed(c)
    assert ref["detections"], ref
    for r in (rgb, bgr):
        assert detections_match(ref, r, px=0.01, score=1e-5), (ref, r)


def test_rows_whole_factor_shrink(worker):
    """1920x1080 to ultraface's 320x240: the width shrinks by exactly 6, the
    path that averages pixel pairs."""
    model("ultraface")
    w, _ = worker({"runtime": "onnxruntime", "models": [ULTRAFACE_CATALOG]})
    c = w.conn
    big = tiled(media_image("astronaut.png"), 4, 3)  # 2048x1536: crop to 1920x1080
    row = big.w * 3
    data = b"".join(big.data[y * row:y * row + 1920 * 3] for y in range(1080))
    img = type(big)(1920, 1080, 3, data)
    ref = whole(c, 0, img, 9)
    got = c.infer_raw(0, img)
    assert prepared_as_read(c) >= 1
    assert ref["detections"] and detections_match(ref, got, px=0.01, score=1e-5), (ref, got)


def test_rows_pauses_and_trailing_bytes(worker):
    """The frame arrives in pieces cut mid-row with pauses, and carries 777
    bytes after its pixels (ignored, as the protocol says); the request after
    it is read from the right place."""
    model("ssd-oidv4")
    w, _ = worker({"runtime": "onnxruntime", "models": [SSD_CATALOG]})
    c = w.conn
    big = tiled(media_image("messi5.jpg"), 3, 3)
    ref = c.infer_raw(0, big)
    req = c.new_id()
    data = frame(req, MSG_RAW, p_raw(0, big.w, big.h, big.fmt, big.data + bytes(range(256)) * 3 + b"x" * 9))
    c.send_in_pieces(data, [20, 4931, 300007, 300008, 2 * 1048576 + 1, len(data) - 100])
    got = c.reply(req)
    after = c.infer_raw(0, media_image("messi5.jpg"))
    assert detections_match(ref, got, px=0.01, score=1e-5), (ref, got)
    assert any(d["label"] == "Person" for d in after["detections"]), after
    assert prepared_as_read(c) >= 2


def test_rows_deadline_passes_while_reading(worker):
    """A v2 frame whose deadline passes while its pixels are still arriving
    is shed when it is complete, never run."""
    model("ssd-oidv4")
    w, _ = worker({"runtime": "onnxruntime", "models": [SSD_CATALOG], "protocolVersion": 2})
    c = w.conn
    big = tiled(media_image("messi5.jpg"), 3, 3)
    req = c.new_id()
    payload = struct.pack("<Q", now_ms() + 400) + p_raw(0, big.w, big.h, big.fmt, big.data)
    data = frame(req, MSG_RAW, payload)
    c.send_bytes(data[:len(data) // 2])
    time.sleep(0.8)
    c.send_bytes(data[len(data) // 2:])
    assert c.reply(req) == DROPPED_DEADLINE
    assert prepared_as_read(c) == 1
    assert c.mem_stats()["counters"]["shedDeadlineExpired"] == 1


def test_rows_model_unloaded_while_reading(spawn, tmp_path):
    """Connection A is half-way through a frame when connection B unloads the
    model: A's frame gets the reply any frame for an unloaded model gets,
    and the server goes on."""
    from test_ospreyd_sockets import serve
    model("ssd-oidv4")
    w = serve(spawn, tmp_path, {"runtime": "onnxruntime", "models": [SSD_CATALOG]}, "unix")
    a, b = w.connect(), w.connect()
    assert a.hello({"protocolVersion": 1})["status"] == "ready"
    assert b.hello({"protocolVersion": 1})["status"] == "ready"
    big = tiled(media_image("messi5.jpg"), 3, 3)
    req = a.new_id()
    data = frame(req, MSG_RAW, p_raw(0, big.w, big.h, big.fmt, big.data))
    a.send_bytes(data[:len(data) // 2])
    time.sleep(0.3)
    assert b.mem_stats()["counters"]["framesPreparedAsRead"] == 1
    assert b.command({"cmd": "unload", "index": 0})["status"] == "ok"
    a.send_bytes(data[len(data) // 2:])
    not_loaded = {"error": "Model 0 not loaded", "kind": "detections", "detections": [],
                  "inferenceMs": 0}
    assert a.reply(req) == not_loaded
    assert a.infer_raw(0, big) == not_loaded  # the same answer as a frame sent after
    assert b.mem_stats()["counters"]["framesPreparedAsRead"] == 1


def test_rows_hang_up_inside_a_frame(worker):
    """stdin closes half-way through a frame being prepared: the replies
    already owed go out, the partial frame is reported and dropped, and the
    worker exits cleanly."""
    model("ssd-oidv4")
    w, _ = worker({"runtime": "onnxruntime", "models": [SSD_CATALOG]})
    c = w.conn
    big = tiled(media_image("messi5.jpg"), 3, 3)
    first = c.send(MSG_RAW, p_raw(0, big.w, big.h, big.fmt, big.data))
    data = frame(c.new_id(), MSG_RAW, p_raw(0, big.w, big.h, big.fmt, big.data))
    c.send_bytes(data[:len(data) // 2])
    w.close_stdin()
    assert any(d["label"] == "Person" for d in c.reply(first)["detections"])
    assert w.wait() == 0, w.stderr_text()
    assert "stdin closed inside a frame" in w.stderr_text()


def crop(img, x0, y0, w, h):
    row = img.w * img.channels
    data = b"".join(img.data[y * row + x0 * 3:y * row + (x0 + w) * 3] for y in range(y0, y0 + h))
    return type(img)(w, h, img.channels, data)


def test_rows_frames_already_whole(worker):
    """Raw frames from 64 KiB up that are already whole in the read buffer
    are prepared where they lie (no copy, no hand-over to a preparing
    thread); smaller ones take the usual path. Both answer as the whole-
    frame path does."""
    model("ssd-oidv4")
    w, _ = worker({"runtime": "onnxruntime", "models": [SSD_CATALOG]})
    c = w.conn
    messi = media_image("messi5.jpg")
    mid, small = crop(messi, 100, 40, 320, 240), crop(messi, 200, 100, 100, 80)  # 230 KB, 24 KB
    ref_mid, ref_small = whole(c, 0, mid, 1), whole(c, 0, small, 2)
    before = prepared_as_read(c)
    reqs = [c.new_id() for _ in range(4)]
    c.send_bytes(b"".join(frame(r, MSG_RAW, p_raw(0, im.w, im.h, im.fmt, im.data))
                          for r, im in zip(reqs, (mid, mid, small, mid))))
    got = [c.reply(r) for r in reqs]
    assert prepared_as_read(c) == before + 3
    assert any(d["label"] == "Person" for d in ref_mid["detections"]), ref_mid
    for r, ref in zip(got, (ref_mid, ref_mid, ref_small, ref_mid)):
        assert detections_match(ref, r, px=0.01, score=1e-5), (ref, r)
