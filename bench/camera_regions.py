#!/usr/bin/env python3
"""What a camera's regions cost and find, against its frames run whole.

    bench/camera_regions.py [--bin build/bin] [--seconds 20] [--fps 2] [--runs 1]

vtest's first --seconds at 10 frames/s, as MJPEG: at its own size
(768x576), and placed at its size in the middle of a black 1920x1080
canvas (made here with ffmpeg in a temporary directory). One ospreyd per
run watches one clip through one camera (ssd-oidv4-int8, "objects":
["Person"]) to its end:

- ref: vtest at its own size, "regions": "auto" (whole frames: 576 < 3 x 300);
- whole: the canvas, "regions": false;
- regions: the canvas, "regions": true.

Printed per camera: the daemon's CPU time (user + system, from its
rusage; it includes the model's load and the decode of every frame of the
clip), frames sent to the model, model runs a frame (/api/cameras
"runs" / "submitted") and of them on crops, the people it found (distinct
objects confirmed: "new" events) and the objects it tracked, as the mean
of /api/cameras "tracksActive" sampled every 0.25 s while the clip played.
Figures, not a test: nothing here asserts.
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MEDIA = Path(os.environ.get("OSPREY_CACHE", Path.home() / ".cache/osprey")) / "media"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clip(src, out, seconds, vf):
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(src), "-t", str(seconds), *vf,
                    "-r", "10", "-c:v", "mjpeg", "-q:v", "3", str(out)], check=True)


def one(bin_dir, tmp, name, url, regions, fps):
    cfg = tmp / f"{name}.json"
    cfg.write_text(json.dumps({"runtime": "onnxruntime", "models": [{"model": "ssd-oidv4-int8"}],
                               "cameras": [{"name": name, "url": str(url), "fps": fps,
                                            "objects": ["Person"], "regions": regions}]}))
    port = free_port()
    err = open(tmp / f"{name}.log", "w+")
    out = open(tmp / f"{name}.out", "w+")
    p = subprocess.Popen([str(bin_dir / "ospreyd"), "--config", str(cfg), "--http",
                          f"127.0.0.1:{port}"], stdin=subprocess.DEVNULL, stdout=out, stderr=err)
    samples, cam = [], None
    while True:
        err.seek(0)
        if f"camera {name}: the source ended" in err.read():
            break
        if p.poll() is not None:
            sys.exit(f"ospreyd exited {p.returncode}: see {err.name}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/cameras", timeout=5) as r:
                cam = json.load(r)["cameras"][0]
            if cam["state"] == "up" and cam["frameTime"] is not None:
                samples.append(cam["tracksActive"])
        except (OSError, ValueError, LookupError):  # not up yet
            pass
        time.sleep(0.25)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/cameras", timeout=5) as r:
        cam = json.load(r)["cameras"][0]
    p.terminate()
    _, status, ru = os.wait4(p.pid, 0)
    out.seek(0)
    new = {json.loads(line)["after"]["id"] for line in out if line.startswith('{"type": "new"')}
    return {"cpu_s": ru.ru_utime + ru.ru_stime, "submitted": cam["submitted"],
            "runs": cam["runs"], "region_runs": cam["regionRuns"], "shed": cam["shed"],
            "people": len(new), "tracked": sum(samples) / len(samples) if samples else 0}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=str(ROOT / "build/bin"))
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--fps", type=float, default=2)
    ap.add_argument("--runs", type=int, default=1)
    a = ap.parse_args()
    if not shutil.which("ffmpeg"):
        sys.exit("ffmpeg is needed")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        small, canvas = tmp / "vtest.avi", tmp / "canvas.avi"
        clip(MEDIA / "vtest.avi", small, a.seconds, [])
        clip(MEDIA / "vtest.avi", canvas, a.seconds, ["-vf", "pad=1920:1080:576:252:black"])
        print(f"load {os.getloadavg()[0]:.1f}", flush=True)
        print("| camera | CPU s | frames sent | runs a frame | on crops | people | tracked |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for _ in range(a.runs):
            for name, url, regions in (("ref", small, "auto"), ("whole", canvas, False),
                                       ("regions", canvas, True)):
                r = one(Path(a.bin), tmp, name, url, regions, a.fps)
                print(f"| {name} | {r['cpu_s']:.2f} | {r['submitted']} (shed {r['shed']}) | "
                      f"{r['runs'] / max(1, r['submitted']):.2f} | {r['region_runs']} | "
                      f"{r['people']} | {r['tracked']:.2f} |", flush=True)
        print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
