"""Cameras are sources for every command (docs/sources.md): osprey detect
and osprey segment on a real RTSP server (GStreamer's, started here on a
free loopback port), a camera that drops and comes back, one that stays
down past --reconnect-for, a camera login that is never printed, a stream
on stdin, an MJPEG stream over HTTP, --fps, and inputs and options that are
refused."""
import http.server
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import BIN, MEDIA, need, run

HERE = Path(__file__).resolve().parent
PY = sys.executable if Path(sys.executable).exists() else "/usr/bin/python3"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Camera:
    """tests/e2e/rtsp_server.py on one port, killed and restarted at will."""

    def __init__(self, path="/cam7", *extra):
        self.port, self.path, self.extra, self.proc = free_port(), path, extra, None

    def url(self, login=""):
        return f"rtsp://{login}127.0.0.1:{self.port}{self.path}"

    def start(self):
        for _ in range(50):  # the killed server's port may linger a moment
            self.proc = subprocess.Popen([PY, str(HERE / "rtsp_server.py"), str(self.port),
                                          self.path, *self.extra],
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if self.proc.stdout.readline().strip() == "ready":
                return
            self.proc.wait(5)
            time.sleep(0.1)
        pytest.fail(f"the RTSP server does not start: {self.proc.stderr.read()}")

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


@pytest.fixture
def camera():
    cams = []

    def make(path="/cam7", *extra):
        c = Camera(path, *extra)
        c.start()
        cams.append(c)
        return c
    yield make
    for c in cams:
        c.kill()


class Run:
    """An osprey process whose stdout and stderr lines are collected as they come."""

    def __init__(self, *args, stdin=None):
        self.p = subprocess.Popen([str(BIN / "osprey"), *map(str, args)], stdin=stdin,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.out, self.err, self.cv = [], [], threading.Condition()
        self.threads = [threading.Thread(target=self._pump, args=(f, l), daemon=True)
                        for f, l in ((self.p.stdout, self.out), (self.p.stderr, self.err))]
        for t in self.threads:
            t.start()

    def _pump(self, f, into):
        for line in f:
            with self.cv:
                into.append(line.rstrip("\n"))
                self.cv.notify_all()

    def records(self):
        with self.cv:
            return [json.loads(l) for l in self.out if l.strip()]

    def events(self, kind=None):
        return [r for r in self.records() if "event" in r and (kind is None or r["event"] == kind)]

    def frames(self):
        return [r for r in self.records() if "event" not in r]

    def wait_for(self, what, pred, timeout=60):
        end = time.monotonic() + timeout
        with self.cv:
            while not pred():
                ended = self.p.poll() is not None and not any(t.is_alive() for t in self.threads)
                if ended or time.monotonic() > end:
                    pytest.fail(f"no {what}; status {self.p.poll()}; stderr:\n" + "\n".join(self.err))
                self.cv.wait(0.2)

    def stop(self, timeout=30):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        return self.finish(timeout)

    def finish(self, timeout=60):
        try:
            self.p.wait(timeout)
        finally:
            if self.p.poll() is None:
                self.p.kill()
        for t in self.threads:
            t.join(10)
        return self.p.returncode

    def text(self):
        return "\n".join(self.out + self.err)


def detect(*args, **kw):
    return Run("detect", "--workers", "1", *args, **kw)


# ---- detect on a camera -------------------------------------------------------


def test_detect_reads_an_rtsp_camera(camera):
    cam = camera()
    r = detect(cam.url())
    r.wait_for("20 frames", lambda: len(r.frames()) >= 20)
    assert r.stop() == 0, r.text()
    frames = r.frames()
    assert all(f["source"] == cam.url() and f["frameSize"] == "320x240" for f in frames)
    idx = [f["frame"] for f in frames]
    assert idx == sorted(set(idx))
    # the 10 fps clock of the camera gives each frame its time; the age is a latency
    assert all(f["t"] == pytest.approx(f["frame"] / 10, abs=1e-3) for f in frames)
    assert all(f["ageMs"] >= 0 for f in frames)
    assert not r.events()
    assert any("live: " in l and "0 drops" in l for l in r.err), r.err


def test_detect_rtsp_over_udp(camera):
    cam = camera()
    r = detect("--rtsp-transport", "udp", cam.url())
    r.wait_for("10 frames", lambda: len(r.frames()) >= 10)
    assert r.stop() == 0, r.text()
    assert run(BIN / "osprey", "detect", "--rtsp-transport", "sctp", cam.url()).returncode == 2


def test_detect_camera_drops_and_comes_back(camera):
    cam = camera()
    r = detect(cam.url())
    r.wait_for("frames", lambda: len(r.frames()) >= 10)
    cam.kill()
    r.wait_for("a drop record", lambda: r.events("drop"))
    time.sleep(1.5)  # the camera stays down across at least one reopen
    cam.start()
    r.wait_for("a reconnect record", lambda: r.events("reconnect"))
    n = len(r.frames())
    r.wait_for("frames after the reconnect", lambda: len(r.frames()) >= n + 10)
    assert r.stop() == 0, r.text()
    drop, = r.events("drop")
    back, = r.events("reconnect")
    for e in (drop, back):
        assert e["source"] == cam.url() and e["time"] > 1.7e9 and e["reason"]
    assert drop["retryInMs"] == 500
    assert back["attempts"] >= 2 and back["framesLost"] > 0 and back["downMs"] > 1500
    # frames after the gap are numbered on the camera's timeline: the lost ones count
    after = [f["frame"] for f in r.frames() if f["frame"] > drop["frame"]]
    assert after and min(after) >= drop["frame"] + 1 + back["framesLost"]
    assert any("dropped after frame" in l for l in r.err), r.err
    assert any("reconnected after" in l for l in r.err), r.err
    assert any("1 drop, 1 reconnect" in l for l in r.err), r.err


def test_detect_gives_up_after_reconnect_for(camera):
    cam = camera()
    r = detect("--reconnect-for", "2", cam.url())
    r.wait_for("frames", lambda: len(r.frames()) >= 5)
    cam.kill()
    status = r.finish(timeout=60)  # on its own: no signal
    assert status == 1, r.text()
    gave, = r.events("gave-up")
    assert gave["attempts"] >= 2 and gave["downMs"] >= 2000
    assert any("gave up" in l and "--reconnect-for 2" in l for l in r.err), r.err


def test_an_rtsp_frame_past_max_frame_drops_the_source(camera):
    """What RTSP assembles into one packet is bounded too: the camera's JPEG
    frames (a few KB each) are past a 1 KiB --max-frame, so the first one
    drops the source, saying why, before it is decoded."""
    cam = camera()
    r = detect("--max-frame", "1024", "--reconnect-for", "0", cam.url())
    assert r.finish(timeout=120) == 1, r.text()
    drop, = r.events("drop")
    assert "a packet of more than 1024 bytes (--max-frame)" in drop["reason"], drop
    assert not r.frames()
    bad = run(BIN / "osprey", "detect", "--max-frame", "15", cam.url())
    assert bad.returncode == 2 and "--max-frame must be a byte count" in bad.stderr


def test_detect_reconnect_for_zero_gives_up_at_the_drop(camera):
    cam = camera()
    r = detect("--reconnect-for", "0", cam.url())
    r.wait_for("frames", lambda: len(r.frames()) >= 5)
    cam.kill()
    assert r.finish(timeout=60) == 1, r.text()
    assert r.events("drop") and r.events("gave-up") and not r.events("reconnect")


def test_camera_login_is_never_printed(camera):
    cam = camera("/door", "--auth", "viewer:s3cr3t-pw")
    shown = cam.url("***@")
    # a wrong password: refused at once, the login masked
    bad = run(BIN / "osprey", "detect", cam.url("viewer:wrong-pw@"), timeout=60)
    assert bad.returncode == 2 and shown in bad.stderr, bad.stderr
    assert "wrong-pw" not in bad.stdout + bad.stderr and "viewer" not in bad.stderr
    r = detect(cam.url("viewer:s3cr3t-pw@"))
    r.wait_for("frames", lambda: len(r.frames()) >= 5)
    cam.kill()
    r.wait_for("a drop record", lambda: r.events("drop"))
    cam.start()
    r.wait_for("a reconnect record", lambda: r.events("reconnect"))
    assert r.stop() == 0, r.text()
    assert {x["source"] for x in r.records()} == {shown}
    s = Run("segment", "--uniform", "1", cam.url("viewer:s3cr3t-pw@"))
    s.wait_for("a chunk", lambda: s.records())
    assert s.stop() == 0, s.text()
    assert s.records()[0]["sensor_id"] == "door"
    for out in (r.text(), s.text()):
        assert "s3cr3t-pw" not in out and "viewer" not in out


def test_live_detect_takes_the_newest_frame(camera):
    # a 200 fps camera and one worker of a model several times slower than it
    # (the text detector at 640x640, ~30 frames/s here, on every frame: no
    # motion gate): the oldest frames go
    cam = camera("/fast", "--fps", "200")
    r = detect("--per-frame", "--model", "ocr-det", cam.url())
    r.wait_for("frames", lambda: len(r.frames()) >= 30)
    assert r.stop() == 0, r.text()
    idx = [f["frame"] for f in r.frames()]
    assert idx == sorted(set(idx)) and idx[-1] - idx[0] + 1 > len(idx)
    live = [l for l in r.err if "live: " in l]
    assert live and not live[0].split("live: ")[1].startswith("0 frames"), r.err


# ---- segment on a camera ------------------------------------------------------


def test_segment_camera_drops_and_comes_back(camera):
    cam = camera()
    s = Run("segment", "--uniform", "1", cam.url())
    s.wait_for("2 chunks", lambda: len(s.frames()) >= 2)
    cam.kill()
    s.wait_for("a drop record", lambda: s.events("drop"))
    time.sleep(1.0)
    cam.start()
    s.wait_for("a reconnect record", lambda: s.events("reconnect"))
    n = len(s.frames())
    s.wait_for("chunks after the reconnect", lambda: len(s.frames()) >= n + 2)
    assert s.stop() == 0, s.text()
    drop, = s.events("drop")
    back, = s.events("reconnect")
    assert drop["sensor_id"] == back["sensor_id"] == "cam7" and back["framesLost"] > 0
    stats = json.loads(s.err[-1])["segment_stats"]
    assert stats["source_drops"] == 1 and stats["reconnects"] == 1
    assert stats["frames_lost"] == back["framesLost"]
    chunks = s.frames()
    for a, b in zip(chunks, chunks[1:]):
        assert b["chunk_idx"] == a["chunk_idx"] + 1 and b["start_time"] == a["end_time"]


def test_segment_gives_up_after_reconnect_for(camera):
    cam = camera()
    s = Run("segment", "--uniform", "1", "--reconnect-for", "1.5", cam.url())
    s.wait_for("a chunk", lambda: s.frames())
    cam.kill()
    assert s.finish(timeout=60) == 1, s.text()
    assert s.events("gave-up") and any("gave up" in l for l in s.err)


# ---- stdin, HTTP, files -------------------------------------------------------


def test_stdin_stream():
    ffmpeg = shutil.which("ffmpeg") or pytest.fail("ffmpeg is missing: run scripts/bootstrap.sh")
    src = subprocess.Popen([ffmpeg, "-v", "error", "-i", str(need(MEDIA / "vtest.avi")), "-t", "3",
                            "-c:v", "mpeg4", "-q:v", "4", "-f", "mpegts", "-"],
                           stdout=subprocess.PIPE)
    r = detect("--one-look", "-", stdin=src.stdout)
    src.stdout.close()
    assert r.finish(timeout=120) == 0, r.text()
    assert src.wait(30) == 0
    frames = r.frames()
    assert [f["frame"] for f in frames] == list(range(30))
    assert all(f["source"] == "-" and f["frameSize"] == "768x576" for f in frames)
    assert any(d["label"] == "Person" for f in frames for d in f["detections"])
    assert not r.events()
    with open(need(MEDIA / "vtest.avi"), "rb") as clip:
        seg = subprocess.run([str(BIN / "osprey"), "segment", "--uniform", "20", "-"], stdin=clip,
                             capture_output=True, text=True, timeout=300)
    assert seg.returncode == 0, seg.stderr
    recs = [json.loads(l) for l in seg.stdout.splitlines()]
    assert recs and all(x["sensor_id"] == "stdin" for x in recs)
    assert sum(x["frame_number"] for x in recs) == 795


class Mjpeg(http.server.BaseHTTPRequestHandler):
    jpeg = b""
    frames = 40

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "multipart/x-mixed-replace;boundary=osprey")
        self.end_headers()
        try:
            for _ in range(self.frames):
                self.wfile.write(b"--osprey\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n"
                                 % len(self.jpeg) + self.jpeg + b"\r\n")
                self.wfile.flush()
                time.sleep(0.05)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *a):
        pass


def test_detect_mjpeg_over_http():
    Mjpeg.jpeg = need(MEDIA / "messi5.jpg").read_bytes()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Mjpeg)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}/video.mjpg?user=a&password=pw-9"
        r = detect("--reconnect-for", "0", url)
        # the server ends the stream after 40 frames: a live stream that ends is a drop
        assert r.finish(timeout=120) == 1, r.text()
    finally:
        srv.shutdown()
    frames = r.frames()
    # how many frames the model keeps up with depends on the machine (a sanitizer
    # build is slow): every frame sent is either a record or counted as dropped
    dropped = re.search(r"live: (\d+) frames? dropped for newer ones", r.text())
    assert dropped, r.text()
    assert frames and len(frames) + int(dropped.group(1)) == Mjpeg.frames, r.text()
    assert [f["frame"] for f in frames] == sorted({f["frame"] for f in frames})
    assert all(f["source"].endswith("?user=a&password=***") for f in frames)
    assert any(d["label"] == "Person" for f in frames for d in f["detections"])
    assert r.events("drop") and "pw-9" not in r.text()


def multipart(frames):
    """An MJPEG stream as an HTTP camera sends it (FFmpeg's mpjpeg reads a file of it too)."""
    return b"".join(b"--osprey\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n"
                    % len(f) + f + b"\r\n" for f in frames)


def says_it_is(jpeg, w, h):
    """The JPEG with its frame header saying w x h, progressive: a decoder
    that believed it would hold coefficients for every pixel."""
    b, i = bytearray(jpeg), 2
    while b[i + 1] not in (0xC0, 0xC1, 0xC2):
        i += 2 + int.from_bytes(b[i + 2:i + 4], "big")
    b[i + 1] = 0xC2
    b[i + 5:i + 9] = h.to_bytes(2, "big") + w.to_bytes(2, "big")
    return bytes(b)


def peak_rss_kb(args, out, err):
    with open(out, "wb") as o, open(err, "wb") as e:
        p = subprocess.Popen([str(a) for a in args], stdout=o, stderr=e, stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(p.pid, 0)
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss


def test_a_frame_that_says_it_is_huge_is_never_held(tmp_path):
    """A part of 73 KB whose header says 9000 x 9000 (81 million pixels,
    past the 50 million a frame may have) is refused as its header is read:
    before, a stream with one made osprey detect hold ~600 MB more and hand
    the model a 9000 x 9000 picture of nothing. The frames around it are
    read, and the run ends saying the stream was corrupt."""
    jpeg = need(MEDIA / "messi5.jpg").read_bytes()
    huge = says_it_is(jpeg, 9000, 9000)
    rss = {}
    for name, frames in (("plain", [jpeg] * 6), ("late", [jpeg] * 3 + [huge] + [jpeg] * 3),
                         ("first", [huge] + [jpeg] * 5)):
        clip = tmp_path / f"{name}.mjpg"
        clip.write_bytes(multipart(frames))
        out, err = tmp_path / f"{name}.out", tmp_path / f"{name}.err"
        code, rss[name] = peak_rss_kb([BIN / "osprey", "detect", "--one-look", "--workers", "1",
                                       "-q", clip], out, err)
        records = [json.loads(l) for l in out.read_text().splitlines()]
        text = err.read_text()
        assert len(records) == 6 - (name == "first"), (name, text)
        assert all(r["frameSize"] == "548x342" for r in records), records
        if name == "plain":
            assert code == 0, text
        else:
            assert code == 2 and "a frame could not be decoded" in text, text
    for name in ("late", "first"):
        assert rss[name] < rss["plain"] + 64 * 1024, rss


def test_hls_playlist_with_an_end_is_no_drop(tmp_path):
    ffmpeg = shutil.which("ffmpeg") or pytest.fail("ffmpeg is missing: run scripts/bootstrap.sh")
    subprocess.run([ffmpeg, "-v", "error", "-i", str(need(MEDIA / "vtest.avi")), "-t", "3",
                    "-c:v", "libx264", "-preset", "ultrafast", "-g", "10", "-f", "hls",
                    "-hls_time", "1",
                    "-hls_playlist_type", "vod", str(tmp_path / "index.m3u8")], check=True,
                   timeout=120)

    class Files(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=str(tmp_path), **kw)

        def log_message(self, *a):
            pass
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Files)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        r = run(BIN / "osprey", "detect", "--workers", "1", "--one-look",
                f"http://127.0.0.1:{srv.server_address[1]}/index.m3u8")
    finally:
        srv.shutdown()
    assert r.returncode == 0, r.stderr
    frames = [json.loads(l) for l in r.stdout.splitlines()]
    assert [f["frame"] for f in frames] == list(range(30))
    assert "live:" not in r.stderr and "dropped" not in r.stderr


def test_fps_samples_a_file_and_its_end_is_no_drop():
    # one look a frame: what is sampled is the question, not what is found
    r = run(BIN / "osprey", "detect", "--one-look", "--fps", "2", "--no-json",
            need(MEDIA / "vtest.avi"))
    assert r.returncode == 0, r.stderr
    assert "159 frames" in r.stderr and "dropped" not in r.stderr
    r = run(BIN / "osprey", "detect", "--one-look", "--fps", "2", "--workers", "2",
            need(MEDIA / "vtest.avi"))
    frames = [json.loads(l) for l in r.stdout.splitlines()]
    assert [f["frame"] for f in frames] == list(range(0, 795, 5))
    assert not [f for f in frames if "event" in f]
    assert run(BIN / "osprey", "detect", "--fps", "0", need(MEDIA / "vtest.avi")).returncode == 2


def test_inputs_that_are_no_source():
    r = run(BIN / "osprey", "detect", "gopher://127.0.0.1/x")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1
    r = run(BIN / "osprey", "detect", "/dev/video9")
    assert r.returncode == 2 and "/dev/video9" in r.stderr
    r = run(BIN / "osprey", "detect", "rtsp://u:p4ss@127.0.0.1:1/x")
    assert r.returncode == 2 and "rtsp://***@127.0.0.1:1/x" in r.stderr and "p4ss" not in r.stderr


def test_a_device_that_is_no_camera(tmp_path):
    """A character device goes to FFmpeg's V4L2 input (this machine has no
    V4L2 in its kernel, so no camera: a node of /dev/null's numbers stands
    in for a serial port named where a camera was meant)."""
    node = tmp_path / "video0"
    try:
        os.mknod(node, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("mknod needs root")
    for cmd in (["detect"], ["segment", "--uniform", "2"]):
        r = run(BIN / "osprey", *cmd, node)
        assert r.returncode == 2, r.stderr
        assert f"cannot open device {node}: not a V4L2 video device" in r.stderr, r.stderr


# ---- segment refuses what it cannot use ---------------------------------------


def test_segment_refuses_an_image(tmp_path):
    sign = tmp_path / "sign.png"
    sign.write_bytes(need(MEDIA / "chelsea.png").read_bytes())
    r = run(BIN / "osprey", "segment", sign)
    assert r.returncode == 2 and r.stdout == "", r
    assert r.stderr.count("\n") == 1 and "sign.png is an image, not a video" in r.stderr


@pytest.mark.parametrize("opt,value", [("--threshold", "5"), ("--delay-frames", "2.5"),
                                       ("--speed", "1000"), ("--temperature", "3")])
def test_segment_refuses_out_of_range_options(opt, value):
    r = run(BIN / "osprey", "segment", need(MEDIA / "vtest.avi"), opt, value)
    assert r.returncode == 2 and r.stdout == "", r
    assert r.stderr.count("\n") == 1 and opt in r.stderr and value in r.stderr


class EndlessPart(http.server.BaseHTTPRequestHandler):
    """An MJPEG stream whose first connection sends a few parts and then one
    with no length and no boundary, streaming until the peer hangs up (or
    `limit` bytes); later connections send whole parts."""
    jpeg = b""
    limit = 384 << 20
    lies = []  # bytes of the endless part sent, per lie told
    connections = 0

    def do_GET(self):
        cls = type(self)
        cls.connections += 1
        first = cls.connections == 1
        self.send_response(200)
        self.send_header("Content-Type", "multipart/x-mixed-replace;boundary=osprey")
        self.end_headers()
        sent = 0
        try:
            for _ in range(3 if first else 400):
                self.wfile.write(b"--osprey\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n"
                                 % len(self.jpeg) + self.jpeg + b"\r\n")
                self.wfile.flush()
                time.sleep(0.05)
            if first:
                self.wfile.write(b"--osprey\r\nContent-Type: image/jpeg\r\n\r\n\xff\xd8")
                zeros = bytes(1 << 20)
                while sent < self.limit:
                    self.wfile.write(zeros)
                    sent += len(zeros)
        except (BrokenPipeError, ConnectionResetError):
            pass
        if first:
            cls.lies.append(sent)

    def log_message(self, *a):
        pass


def vm_hwm_kb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def test_an_mjpeg_part_past_max_frame_drops_the_source():
    """A part with no boundary is read to --max-frame, not to the end of memory:
    the source is dropped as broken, saying why, and reconnected."""
    EndlessPart.jpeg = need(MEDIA / "messi5.jpg").read_bytes()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), EndlessPart)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        r = detect("--max-frame", str(1 << 20), f"http://127.0.0.1:{srv.server_address[1]}/v.mjpg")
        r.wait_for("reconnect", lambda: r.events("reconnect"), timeout=120)
        hwm = vm_hwm_kb(r.p.pid)
        assert r.stop() == 0, r.text()
    finally:
        srv.shutdown()
    drop, = r.events("drop")
    assert "a packet of more than 1048576 bytes (--max-frame)" in drop["reason"], drop
    # read whole, the part would have taken all 384 MiB; the bound stops it at
    # 1 MiB and what the sockets held
    assert EndlessPart.lies and EndlessPart.lies[0] < 16 << 20, EndlessPart.lies
    print(f"lie {EndlessPart.lies} peak RSS {hwm} KiB")
    # bounded memory, measured without a sanitizer (ASan's quarantine keeps
    # what was freed: the figure would be its, not the reader's)
    if not os.environ.get("OSPREY_SANITIZE"):
        assert hwm < 300 << 10, f"peak RSS {hwm} KiB"


class CutPart(http.server.BaseHTTPRequestHandler):
    """An MJPEG stream of whole parts without a Content-Length, as many
    cameras send them, then a part cut in the middle of its JPEG: the camera
    drops the connection mid-frame, before the part's closing boundary."""
    jpeg = b""
    whole = 3

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "multipart/x-mixed-replace;boundary=osprey")
        self.end_headers()
        head = b"--osprey\r\nContent-Type: image/jpeg\r\n\r\n"
        try:
            for _ in range(self.whole):
                self.wfile.write(head + self.jpeg + b"\r\n")
                self.wfile.flush()
                time.sleep(0.05)
            self.wfile.write(head + self.jpeg[: len(self.jpeg) // 2])
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def log_message(self, *a):
        pass


def test_an_mjpeg_part_cut_by_the_close_is_not_decoded():
    """The last part, with no Content-Length, ends where the camera hung up,
    before its boundary: it is half a JPEG and is never decoded; the close
    is a drop. (FFmpeg's HTTP reader reports a stream without a length that
    closes as an I/O error; read through FFmpeg's I/O otherwise, the part
    is refused as "truncated", test_video_video.c.)"""
    CutPart.jpeg = need(MEDIA / "messi5.jpg").read_bytes()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), CutPart)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        r = detect("--reconnect-for", "0", f"http://127.0.0.1:{srv.server_address[1]}/v.mjpg")
        assert r.finish(timeout=120) == 1, r.text()
    finally:
        srv.shutdown()
    dropped = re.search(r"live: (\d+) frames? dropped for newer ones", r.text())
    n = len(r.frames()) + (int(dropped.group(1)) if dropped else 0)
    # the whole parts only: half a picture is never a frame
    assert n == CutPart.whole, r.text()
    drop, = r.events("drop")
    assert "reading failed after 3 frames" in drop["reason"], drop
