"""Shared-memory frames and 4:2:0 formats (osprey extensions): a frame named
by region and offset gives the same result as the same pixels through the
pipe; bad references are error replies, never reads outside the mapping."""
import struct
from multiprocessing import shared_memory

import numpy as np
import pytest

from ospreyd_client import (model, SSD_CATALOG, detections_match, media_image, need,  # noqa: F401
                            spawn, worker)

MSG_SHM = 0x06
FMT_NV12, FMT_I420 = 3, 4


def shm_payload(model, region, offset, w, h, fmt, stride=0):
    """infer_shm at wire v2: a sheddable request, so the deadline prefix (0 =
    none) comes first."""
    return struct.pack("<Q", 0) + struct.pack("<BIQIIBI", model, region, offset, w, h, fmt, stride)


def rgb_to_i420(rgb, w, h):
    """BT.601 limited range, as video decoders emit it."""
    a = np.frombuffer(rgb, np.uint8).reshape(h, w, 3).astype(np.float32)
    r, g, b = a[..., 0], a[..., 1], a[..., 2]
    y = 16 + 0.257 * r + 0.504 * g + 0.098 * b
    u = 128 - 0.148 * r - 0.291 * g + 0.439 * b
    v = 128 + 0.439 * r - 0.368 * g - 0.071 * b
    sub = lambda p: p.reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3))  # noqa: E731
    y, u, v = (np.clip(np.rint(p), 0, 255).astype(np.uint8) for p in (y, sub(u), sub(v)))
    return y, u, v


@pytest.fixture
def ssd(worker):
    model("ssd-oidv4")
    w, _ = worker({"runtime": "onnxruntime", "models": [SSD_CATALOG], "protocolVersion": 2})
    return w


@pytest.fixture
def region():
    shm = shared_memory.SharedMemory(create=True, size=4 << 20)
    yield shm
    shm.close()
    shm.unlink()


def test_shm_frame_matches_pipe(ssd, region):
    c = ssd.conn
    img = media_image("messi5.jpg")  # 548x342 RGB
    offset = 4096
    region.buf[offset:offset + len(img.data)] = img.data
    reg = c.command({"cmd": "register_shm", "name": "/" + region.name})
    assert reg["status"] == "ok" and reg["size"] >= len(img.data) + offset, reg
    rid = reg["regionId"]
    via_shm = c.request(MSG_SHM, shm_payload(0, rid, offset, img.w, img.h, 0))
    via_pipe = c.infer_raw(0, img)
    assert detections_match(via_shm, via_pipe, px=0.01, score=1e-6), (via_shm, via_pipe)
    assert any(d["label"] == "Person" for d in via_shm["detections"])
    counters = c.mem_stats()["counters"]
    assert counters["inferShm"] == 1
    # the frame changes in place: the next request sees the new pixels
    region.buf[offset:offset + len(img.data)] = bytes(len(img.data))
    blank = c.request(MSG_SHM, shm_payload(0, rid, offset, img.w, img.h, 0))
    assert not any(d["label"] == "Person" for d in blank["detections"]), blank
    assert c.command({"cmd": "unregister_shm", "regionId": rid})["status"] == "ok"


def test_shm_bad_references(ssd, region):
    c = ssd.conn
    rid = c.command({"cmd": "register_shm", "name": "/" + region.name})["regionId"]
    size = region.size
    cases = [
        (shm_payload(0, rid + 7, 0, 10, 10, 0), "shm region %d not registered" % (rid + 7)),
        (shm_payload(0, rid, size - 299, 10, 10, 0), "outside region"),
        (shm_payload(0, rid, size + 1, 1, 1, 0), "outside region"),
        (shm_payload(0, rid, 2 ** 64 - 1, 4, 4, 0), "outside region"),
        (shm_payload(0, rid, 0, 4096, 4096, 0), "outside region"),
        (shm_payload(0, rid, 0, 0, 10, 0), "bad frame size"),
        (shm_payload(0, rid, 0, 10, 10, 9), "unknown pixel format 9"),
        (shm_payload(0, rid, 0, 10, 10, 0, stride=5), "outside region"),
        (shm_payload(0, rid, 0, 10, 10, 0)[:28], "truncated infer_shm header"),
    ]
    for payload, text in cases:
        r = c.request(MSG_SHM, payload)
        assert "error" in r and text in r["error"], (payload, r)
    # still serving
    assert c.request(MSG_SHM, shm_payload(0, rid, 0, 32, 32, 0))["kind"] == "detections"
    assert c.command({"cmd": "unregister_shm", "regionId": rid})["status"] == "ok"
    r = c.request(MSG_SHM, shm_payload(0, rid, 0, 32, 32, 0))
    assert r == {"error": "unknown msg_type: 6"} or "not registered" in r.get("error", ""), r
    bad = c.command({"cmd": "register_shm", "name": "/osprey-no-such-region"})
    assert bad["status"] == "error" and "cannot open shared memory" in bad["error"]


def test_infer_shm_without_registration_is_unknown(worker):
    w, _ = worker({"runtime": "onnxruntime", "models": []})
    assert w.conn.request(MSG_SHM, shm_payload(0, 1, 0, 2, 2, 0)) == {"error": "unknown msg_type: 6"}


@pytest.mark.parametrize("fmt", [FMT_I420, FMT_NV12])
def test_yuv_frames_match_rgb(ssd, region, fmt):
    c = ssd.conn
    img = media_image("chelsea.png")  # 451x300: crop to even sides for 4:2:0
    w, h = 450, 300
    rgb = np.frombuffer(img.data, np.uint8).reshape(img.h, img.w, 3)[:h, :w].tobytes()
    y, u, v = rgb_to_i420(rgb, w, h)
    if fmt == FMT_I420:
        planes = y.tobytes() + u.tobytes() + v.tobytes()
    else:
        planes = y.tobytes() + np.stack([u, v], axis=-1).tobytes()
    # through the pipe as a raw 4:2:0 frame, and through shared memory
    raw = c.request(0x02, struct.pack("<BIIB", 0, w, h, fmt) + planes)
    region.buf[:len(planes)] = planes
    rid = c.command({"cmd": "register_shm", "name": "/" + region.name})["regionId"]
    shm = c.request(MSG_SHM, shm_payload(0, rid, 0, w, h, fmt))
    from ospreyd_client import Image
    ref = c.infer_raw(0, Image(w, h, 3, rgb))
    for rec in (raw, shm):
        assert rec["frameSize"] == "450x300", rec
        cats = [d for d in rec["detections"] if d["label"] == "Cat"]
        assert cats and cats[0]["score"] > 0.75, rec
    assert detections_match(raw, shm, px=0.01, score=1e-6)
    assert detections_match(raw, ref, px=4.0, score=0.05), (raw, ref)
