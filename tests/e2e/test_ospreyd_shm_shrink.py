"""A host that shrinks a shared-memory region it registered gets an error
for the frames it names there; the server does not die of SIGBUS, and
every other request is served."""
import os

import pytest

from ospreyd_client import model, SSD_CATALOG, media_image, need, spawn, worker  # noqa: F401
from test_ospreyd_shm import MSG_SHM, region, shm_payload  # noqa: F401


@pytest.fixture
def ssd(worker):
    model("ssd-oidv4")
    w, _ = worker({"runtime": "onnxruntime", "models": [SSD_CATALOG], "protocolVersion": 2})
    return w


def test_shrunk_region_is_an_error_not_a_crash(ssd, region):
    c = ssd.conn
    img = media_image("messi5.jpg")
    region.buf[:len(img.data)] = img.data
    rid = c.command({"cmd": "register_shm", "name": "/" + region.name})["regionId"]
    ok = c.request(MSG_SHM, shm_payload(0, rid, 0, img.w, img.h, 0))
    assert ok["kind"] == "detections" and ok["detections"], ok
    os.truncate("/dev/shm/" + region.name, 0)
    bad = c.request(MSG_SHM, shm_payload(0, rid, 0, img.w, img.h, 0))
    assert "shared memory" in bad["error"] and "holds 0 bytes now" in bad["error"], bad
    # alive and serving
    assert c.infer_raw(0, img)["detections"], "the server stopped serving"
    assert c.command({"cmd": "mem_stats"})["status"] == "ok"
    os.truncate("/dev/shm/" + region.name, 4 << 20)  # grown back: served again (zeros)
    again = c.request(MSG_SHM, shm_payload(0, rid, 0, img.w, img.h, 0))
    assert again["kind"] == "detections", again
