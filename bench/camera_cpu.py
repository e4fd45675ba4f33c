#!/usr/bin/env python3
"""What one camera costs ospreyd's CPU, for two builds in turns.

    bench/camera_cpu.py --base DIR [--bin build/bin] [--seconds 30] [--runs 3]

Two sources, each watched by one camera (ssd-oidv4-int8, "fps": 10,
"objects": ["Person"]) of one ospreyd per run:

- still: vtest's first frame scaled to 1920x1080, as JPEGs served over
  RTSP at 10 frames/s (tests/e2e/rtsp_server.py --live: RTP/JPEG, 4:2:0),
  the same picture every frame: a still 1080p camera, whose motion gate
  sends its model a frame every 10 s;
- h264: the same picture as an H.264 file (libx264, 4:2:0, 10 frames/s,
  90 s) with a light grain of noise that changes every frame, as a
  camera's sensor gives: a still 1080p camera played from a file;
- vtest: vtest.avi (768x576, MPEG-4 part 2, 4:2:0, 10 frames/s) played
  from the file, where people walk in nearly every frame.

Once the camera has answered its first frame and 3 s more have passed,
the daemon's CPU time (user + system, /proc/PID/stat) is read at the
start and the end of --seconds: the model's load is not in it. Each
source runs --base's ospreyd and --bin's in turns, --runs times; printed:
each run's CPU seconds, then per source the medians, the share of one
core (CPU s / s) and new / base, with the load average before and after.
Figures, not a test: nothing here asserts.
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MEDIA = Path(os.environ.get("OSPREY_CACHE", Path.home() / ".cache/osprey")) / "media"
TICK = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_s(pid):
    """The process's user + system seconds so far, its threads' included."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def camera(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/cameras", timeout=5) as r:
        return json.load(r)["cameras"][0]


def one(bin_dir, tmp, name, url, seconds):
    cfg = tmp / f"{name}.json"
    cfg.write_text(json.dumps({"runtime": "onnxruntime", "models": [{"model": "ssd-oidv4-int8"}],
                               "cameras": [{"name": name, "url": url, "fps": 10,
                                            "objects": ["Person"]}]}))
    port = free_port()
    err = open(tmp / f"{name}.log", "w+")
    p = subprocess.Popen([str(bin_dir / "ospreyd"), "--config", str(cfg), "--http",
                          f"127.0.0.1:{port}"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=err)
    try:
        end = time.monotonic() + 120
        while True:
            if p.poll() is not None:
                sys.exit(f"ospreyd exited {p.returncode}: see {err.name}")
            if time.monotonic() > end:
                sys.exit(f"camera {name} answered no frame in 120 s: see {err.name}")
            try:
                cam = camera(port)
                if cam["state"] == "up" and cam["frameTime"] is not None:
                    break
            except (OSError, ValueError, LookupError):  # not up yet
                pass
            time.sleep(0.25)
        time.sleep(3)
        c0, before = cpu_s(p.pid), camera(port)
        time.sleep(seconds)
        c1, after = cpu_s(p.pid), camera(port)
    finally:
        p.terminate()
        p.wait()
    return {"cpu_s": c1 - c0, "taken": (after["submitted"] + after["skipped"]) -
            (before["submitted"] + before["skipped"]),
            "submitted": after["submitted"] - before["submitted"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the bin directory to compare with")
    ap.add_argument("--bin", default=str(ROOT / "build/bin"))
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sources", default="still,h264,vtest", help="which, comma-separated")
    a = ap.parse_args()
    if not shutil.which("ffmpeg"):
        sys.exit("ffmpeg is needed")
    builds = (("base", Path(a.base)), ("new", Path(a.bin)))
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        frames = tmp / "still"
        frames.mkdir()
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(MEDIA / "vtest.avi"),
                        "-frames:v", "1", "-vf", "scale=1920:1080", "-pix_fmt", "yuvj420p",
                        "-q:v", "3",
                        str(frames / "%05d.jpg")], check=True)
        h264 = tmp / "still.mp4"
        if "h264" in a.sources.split(","):
            subprocess.run(["ffmpeg", "-v", "error", "-y", "-loop", "1", "-i",
                            str(frames / "00001.jpg"), "-t", "90", "-r", "10", "-vf",
                            "noise=alls=6:allf=t,format=yuv420p", "-c:v", "libx264",
                            "-preset", "veryfast", "-g", "50", str(h264)], check=True)
        rport = free_port()
        rtsp = subprocess.Popen([sys.executable, str(ROOT / "tests/e2e/rtsp_server.py"),
                                 str(rport), "/still", "--fps", "10", "--live", str(frames)],
                                stdout=subprocess.PIPE, text=True)
        try:
            if rtsp.stdout.readline().strip() != "ready":
                sys.exit("the RTSP server did not start")
            sources = [(n, u) for n, u in (("still", f"rtsp://127.0.0.1:{rport}/still"),
                                           ("h264", str(h264)),
                                           ("vtest", str(MEDIA / "vtest.avi")))
                       if n in a.sources.split(",")]
            cpu = {}
            print(f"load before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
            print("| source | build | run | CPU s | frames taken | sent |")
            print("| --- | --- | --- | --- | --- | --- |")
            for src, url in sources:
                for run in range(a.runs):
                    for build, bin_dir in builds:
                        r = one(bin_dir, tmp, src, url, a.seconds)
                        cpu.setdefault((src, build), []).append(r["cpu_s"])
                        print(f"| {src} | {build} | {run + 1} | {r['cpu_s']:.2f} | "
                              f"{r['taken']} | {r['submitted']} |", flush=True)
            print(f"load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
            print(f"\nmedian of {a.runs}, over {a.seconds} s:\n")
            print("| source | base CPU s | new CPU s | base core share | new core share | new / base |")
            print("| --- | --- | --- | --- | --- | --- |")
            for src, _ in sources:
                b = statistics.median(cpu[(src, "base")])
                n = statistics.median(cpu[(src, "new")])
                print(f"| {src} | {b:.2f} | {n:.2f} | {b / a.seconds:.2f} | "
                      f"{n / a.seconds:.2f} | {n / b:.2f} |")
        finally:
            rtsp.terminate()
            rtsp.wait()


if __name__ == "__main__":
    main()
