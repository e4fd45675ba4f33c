"""osprey segment on a live RTSP camera: a real RTSP server (GStreamer's)
on loopback, uniform chunks at the stream's real rate, the sensor id from
the RTSP path, and a clean stop on SIGTERM with the last partial chunk."""
import json
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import BIN

HERE = Path(__file__).resolve().parent


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def camera():
    port = free_port()
    p = subprocess.Popen([sys.executable if Path(sys.executable).exists() else "/usr/bin/python3",
                          str(HERE / "rtsp_server.py"), str(port), "/cam7"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready", p.stderr.read()
        yield f"rtsp://127.0.0.1:{port}/cam7"
    finally:
        p.kill()
        p.wait(5)


def test_rtsp_live_uniform_chunks(camera):
    seg = subprocess.Popen([str(BIN / "osprey"), "segment", "--uniform", "1", camera],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = [], []
    pumps = [threading.Thread(target=lambda f=f, into=into: into.extend(f), daemon=True)
             for f, into in ((seg.stdout, out), (seg.stderr, err))]
    for t in pumps:
        t.start()
    # three whole chunks, however long the start takes, then a stop mid-chunk
    end = time.monotonic() + 60
    while sum(1 for l in out if l.strip()) < 3 and seg.poll() is None and time.monotonic() < end:
        time.sleep(0.05)
    time.sleep(0.5)
    seg.send_signal(signal.SIGTERM)
    seg.wait(20)
    for t in pumps:
        t.join(10)
    err = "".join(err)
    assert seg.returncode == 0, err
    recs = [json.loads(l) for l in out if l.strip()]
    assert len(recs) >= 3, (recs, err)
    assert all(r["sensor_id"] == "cam7" for r in recs)
    # chunks follow each other; whole ones hold one second at the real 10 fps
    for a, b in zip(recs, recs[1:]):
        assert b["chunk_idx"] == a["chunk_idx"] + 1 and b["start_time"] == a["end_time"]
    for r in recs[:-1]:
        assert r["end_time"] - r["start_time"] == pytest.approx(1.0, abs=1e-6)
        assert 9 <= r["frame_number"] <= 11, r
    stats = json.loads(err.strip().splitlines()[-1])["segment_stats"]
    assert stats["stopped"] is True and stats["fps"] == pytest.approx(10.0, abs=0.01)


def test_rtsp_frame_past_max_frame_drops_the_source(camera):
    """segment bounds a stream's packets as detect does: the camera's JPEG
    frames (a few KB each) are past a 1 KiB --max-frame, so the source is
    dropped as broken, saying why, and with --reconnect-for 0 the run ends."""
    r = subprocess.run([str(BIN / "osprey"), "segment", "--uniform", "1", "--max-frame", "1024",
                        "--reconnect-for", "0", camera],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    drops = [json.loads(l) for l in r.stdout.splitlines() if '"event": "drop"' in l]
    assert drops and "a packet of more than 1024 bytes (--max-frame)" in drops[0]["reason"], r.stdout
    stats = json.loads(r.stderr.strip().splitlines()[-1])["segment_stats"]
    assert stats["frames_read"] == 0 and stats["source_drops"] == 1, stats
    bad = subprocess.run([str(BIN / "osprey"), "segment", "--max-frame", "15", camera],
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2 and "--max-frame must be a byte count" in bad.stderr, bad.stderr
