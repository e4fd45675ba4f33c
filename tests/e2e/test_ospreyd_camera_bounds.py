"""Cameras that misbehave, watched by one ospreyd beside a camera that does
not (docs/cameras.md, Cameras that misbehave): one that never connects, one
that answers with garbage, one that floods (an MJPEG stream at 60 frames a
second for a camera set to 5), and one that stalls in the middle of a
frame. Each is reported for what it is — down, throttled, dropped and
reconnected — and the good camera beside them keeps taking its frames on
time and tracking its people."""
import http.server
import json
import os
import random
import socket
import threading
import time

import pytest

from assets import media, model  # noqa: F401
from camera_daemon import Daemon, events, free_port, site, summary

SECONDS = 12  # the good camera's clip: vtest's first 120 frames at 10 frames/s


class Garbage:
    """A TCP server that answers every connection with random bytes."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        rnd = random.Random(7)
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            try:
                conn.settimeout(2)
                conn.sendall(bytes(rnd.getrandbits(8) for _ in range(64 << 10)))
            except OSError:
                pass
            conn.close()

    def close(self):
        self.sock.close()


class Mjpeg(http.server.BaseHTTPRequestHandler):
    """An MJPEG stream: `fps` whole parts a second, or, with `stall_after`,
    that many parts and then half of one, and nothing more until the peer
    hangs up."""
    jpeg = b""
    fps = 60
    stall_after = None
    connections = 0

    def do_GET(self):
        type(self).connections += 1
        self.send_response(200)
        self.send_header("Content-Type", "multipart/x-mixed-replace;boundary=osprey")
        self.end_headers()
        head = b"--osprey\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n" % len(self.jpeg)
        try:
            for i in range(100000):
                if self.stall_after is not None and i == self.stall_after:
                    self.wfile.write(head + self.jpeg[:len(self.jpeg) // 2])
                    self.wfile.flush()
                    time.sleep(60)  # the peer gives up first
                    return
                self.wfile.write(head + self.jpeg + b"\r\n")
                self.wfile.flush()
                time.sleep(1 / self.fps)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *a):
        pass


def mjpeg_server(**kw):
    handler = type("Mjpeg", (Mjpeg,), dict(kw, jpeg=media("messi5.jpg").read_bytes(), connections=0))
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, handler


def vm_hwm_kb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    import shutil
    import subprocess
    if not shutil.which("ffmpeg"):
        pytest.skip("ffmpeg is not installed")
    out = tmp_path_factory.mktemp("clip") / "vtest-120.avi"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(media("vtest.avi")),
                    "-frames:v", str(SECONDS * 10), "-c", "copy", str(out)], check=True)
    return out


def test_misbehaving_cameras_are_reported_and_never_slow_the_good_one(tmp_path, clip):
    garbage = Garbage()
    flood, _ = mjpeg_server(fps=60)
    stall, stall_handler = mjpeg_server(fps=10, stall_after=10)
    url = lambda srv: f"http://127.0.0.1:{srv.server_address[1]}/v.mjpg"  # noqa: E731
    d = Daemon(tmp_path, site([
        {"name": "good", "url": str(clip), "fps": 5, "objects": ["Person"]},
        {"name": "never", "url": f"rtsp://127.0.0.1:{free_port()}/x", "fps": 5},
        {"name": "garbage", "url": f"rtsp://127.0.0.1:{garbage.port}/x", "fps": 5},
        {"name": "flood", "url": url(flood), "fps": 5},
        {"name": "stall", "url": url(stall), "fps": 5},
    ]))
    try:
        d.wait_for(lambda log: "camera good: the source ended" in log, "the end of the good clip",
                   timeout=180)
        d.wait_for(lambda log: "camera stall: " in log and "reconnect" in log.split("camera stall: watching")[-1],
                   "the stalled camera's reconnect", timeout=60)
        hwm = vm_hwm_kb(d.proc.pid)
        assert d.stop() == 0, d.log()[-3000:]
    finally:
        d.kill()
        garbage.close()
        flood.shutdown()
        stall.shutdown()
    log = d.log()

    # down: reported, retried, nothing taken
    for name in ("never", "garbage"):
        assert log.count(f"camera {name}: cannot open its source") >= 2, log[-3000:]
        assert summary(log, name)["frames_in"] == 0
    assert garbage.connections >= 2

    # throttled: the source's 60 frames a second decoded, 5 a second taken
    f = summary(log, "flood")
    assert f["submitted"] > 0 and f["frames_in"] >= 3 * f["submitted"], f
    assert f["detected"] + f["shed"] + f["failed"] == f["submitted"], f

    # stalled mid-frame: dropped by the read timeout, said so, reconnected
    s = summary(log, "stall")
    assert s["reconnects"] >= 1 and stall_handler.connections >= 2, (s, stall_handler.connections)
    assert "camera stall: " in log and "no answer within" in log, log[-3000:]

    # the good camera took every frame its fps asks for, on time, and its
    # people became events
    g = summary(log, "good")
    # frames taken: sent to the model, or held back by its motion pass (its warm-up)
    assert g["submitted"] + g["skipped"] >= 0.9 * SECONDS * 5, g
    assert g["detected"] + g["shed"] + g["failed"] == g["submitted"], g
    assert g["detected"] >= 0.5 * g["submitted"], g
    evs = [e for e in events(d.stdout()) if e["after"]["camera"] == "good"]
    assert any(e["type"] == "new" and e["after"]["label"] == "Person" for e in evs), d.stdout()[-2000:]
    assert not [e for e in events(d.stdout()) if e["after"]["camera"] != "good"]

    # bounded memory, measured without a sanitizer (ASan keeps what was freed)
    print(f"peak RSS {hwm} KiB; summaries good {g} flood {f} stall {s}")
    if not os.environ.get("OSPREY_SANITIZE"):
        assert hwm < 400 << 10, f"peak RSS {hwm} KiB"
