#!/usr/bin/env python3
"""Cameras per box: N copies of vtest served over a local RTSP server into one
ospreyd (docs/cameras.md), against the same N cameras as N `osprey detect
--track` processes, in the same sitting.

    make bench-cameras        # or: bench/cameras.py --bin build/bin [--counts 1,2,4,6,8]

vtest.avi is made once into an AVI of JPEG frames (ffmpeg; RTP/JPEG wants
the standard Huffman tables) and served by GStreamer's RTSP server
(tests/e2e/rtsp_server.py --file) at its own 10 frames/s, each client from
its start. For each N, after every camera is up, a window of --seconds:

- kept: the share of the frames the cameras were sent (10 a second each)
  that became an answer: run through the model, or passed over because
  nothing moved (the motion gate: docs/tracking.md). Target >= 0.95.
- CPU per camera (cores, from ospreyd's /proc stat) and RSS per camera
  (the server's RSS over N; the first line's figure includes the model).
- objects: "new" events per camera against the one-camera run's, on the
  same clip (the same walkers should make the same number of objects).

Then the same N as N `osprey detect --track` processes on the same RTSP
URL: kept (frames answered / frames sent, from the frame numbers of its
records, which count the camera's frames) and CPU per camera.
The machine is shared: read the ratios, and run it on a quiet machine.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("OSPREY_CACHE", Path.home() / ".cache" / "osprey"))
PY = "/usr/bin/python3"
FPS = 10
ZONES = {"zones": {"lower": {"coordinates": "0,0.5,1,0.5,1,1,0,1", "objects": ["Person"]}},
         "lines": {"walkway": {"coordinates": "0,0.5,1,0.5", "objects": ["Person"]}}}


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mjpeg_clip(work: Path) -> Path:
    out = work / "vtest-mjpeg.avi"
    if not out.exists():
        subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-i", str(CACHE / "media" / "vtest.avi"),
                        "-c:v", "mjpeg", "-huffman", "default", "-q:v", "4", "-pix_fmt", "yuvj420p",
                        "-an", str(out)], check=True)
    return out


def rtsp_server(clip: Path):
    port = free_port()
    p = subprocess.Popen([PY, str(ROOT / "tests" / "e2e" / "rtsp_server.py"), str(port), "/vtest",
                          "--file", str(clip)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    if p.stdout.readline().strip() != "ready":
        raise SystemExit(f"the RTSP server did not start: {p.stderr.read()}")
    return p, f"rtsp://127.0.0.1:{port}/vtest"


def cpu_s(pid):
    """utime + stime of a process and its reaped children, in seconds."""
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in f[11:15]) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def get_json(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
        return json.load(r)


def skipped(cam):
    """Frames the motion gate passed over, whatever the page calls them."""
    for key in ("skipped", "framesSkipped", "motionSkipped", "still"):
        if isinstance(cam.get(key), int):
            return cam[key]
    return 0


def run_daemon(bin_dir, work, url, n, seconds):
    zones = work / "zones.json"
    zones.write_text(json.dumps(ZONES))
    hport = free_port()
    cfg = {"runtime": "onnxruntime", "models": [{"model": "ssd-oidv4-int8"}],
           "cameras": [{"name": f"cam{i}", "url": url, "model": "ssd-oidv4-int8", "fps": FPS,
                        "objects": ["Person"], "zones": str(zones)} for i in range(n)]}
    path = work / f"site-{n}.json"
    path.write_text(json.dumps(cfg))
    out = open(work / f"events-{n}.jsonl", "w+")
    err = open(work / f"ospreyd-{n}.log", "w+")
    p = subprocess.Popen([str(bin_dir / "ospreyd"), "--config", str(path), "--http",
                          f"127.0.0.1:{hport}"], stdin=subprocess.DEVNULL, stdout=out, stderr=err)
    try:
        end = time.monotonic() + 120
        while True:
            if p.poll() is not None or time.monotonic() > end:
                err.seek(0)
                raise SystemExit(f"ospreyd with {n} cameras did not come up:\n{err.read()[-3000:]}")
            try:
                cams = get_json(hport, "/api/cameras")["cameras"]
                if len(cams) == n and all(c["state"] == "up" and c["framesIn"] > 0 for c in cams):
                    break
            except OSError:
                pass
            time.sleep(0.2)
        time.sleep(2)  # past the first frames' start-up
        a, c0, t0 = get_json(hport, "/api/cameras")["cameras"], cpu_s(p.pid), time.monotonic()
        time.sleep(seconds)
        b, c1, t1 = get_json(hport, "/api/cameras")["cameras"], cpu_s(p.pid), time.monotonic()
        rss = rss_mb(p.pid)
    finally:
        p.terminate()
        p.wait(60)
    dt = t1 - t0
    kept = [((y["detected"] - x["detected"]) + (skipped(y) - skipped(x))) / (dt * FPS)
            for x, y in zip(a, b)]
    out.seek(0)
    objects = {}
    for line in out:
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("type") == "new":
            cam = e["after"]["camera"]
            objects[cam] = objects.get(cam, 0) + 1
    return {"kept": kept, "cpu": (c1 - c0) / dt / n, "rss": rss / n,
            "objects": [objects.get(f"cam{i}", 0) for i in range(n)],
            "shed": sum(y["shed"] - x["shed"] for x, y in zip(a, b))}


def run_detects(bin_dir, work, url, n, seconds):
    """N osprey detect --track processes on the same URL: frames answered in the window."""
    procs, frames, lock = [], [[] for _ in range(n)], threading.Lock()
    window = {"on": False}

    def pump(i, f):
        for line in f:  # frames are numbered on the camera's clock: a frame lost is a gap
            if window["on"] and '"detections"' in line:
                with lock:
                    frames[i].append(json.loads(line)["frame"])

    zones = work / "zones.json"
    for i in range(n):
        p = subprocess.Popen([str(bin_dir / "osprey"), "detect", "-q", "--model", "ssd-oidv4-int8",
                              "--track", "--zones", str(zones), "--fps", str(FPS), url],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
        threading.Thread(target=pump, args=(i, p.stdout), daemon=True).start()
        procs.append(p)
    try:
        time.sleep(8)  # connected, model loaded
        c0 = sum(cpu_s(p.pid) for p in procs)
        window["on"] = True
        t0 = time.monotonic()
        time.sleep(seconds)
        window["on"] = False
        dt = time.monotonic() - t0
        c1 = sum(cpu_s(p.pid) for p in procs)
        rss = sum(rss_mb(p.pid) for p in procs)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(60)
    kept = [len(f) / (max(f) - min(f) + 1) if f else 0.0 for f in frames]
    return {"kept": kept, "cpu": (c1 - c0) / dt / n, "rss": rss / n}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=str(ROOT / "build" / "bin"))
    ap.add_argument("--counts", default="1,2,4,6,8", help="numbers of cameras (default 1,2,4,6,8)")
    ap.add_argument("--seconds", type=float, default=45, help="the measured window (default 45; the clip is 79 s)")
    ap.add_argument("--no-detect", action="store_true", help="skip the osprey detect processes")
    a = ap.parse_args()
    bin_dir = Path(a.bin).resolve()
    os.environ.setdefault("OSPREY_CACHE", str(CACHE))
    work = Path(tempfile.mkdtemp(prefix="osprey-cameras-"))
    srv, url = rtsp_server(mjpeg_clip(work))
    load = os.getloadavg()[0]
    print(f"cameras per box: vtest (768x576, 10 frames/s) over RTSP, ssd-oidv4-int8, fps {FPS}, "
          f"{a.seconds:.0f} s windows; load {load:.1f} at start")
    print(f"{'N':>3} {'door':>8} {'kept min':>9} {'kept med':>9} {'CPU/cam':>8} {'RSS/cam':>8} "
          f"{'objects/cam vs N=1':>20}")
    one = None
    try:
        for n in map(int, a.counts.split(",")):
            r = run_daemon(bin_dir, work, url, n, a.seconds)
            if one is None:
                one = statistics.median(r["objects"]) or 1
            objs = ", ".join(f"{o / one:.2f}" for o in r["objects"])
            print(f"{n:>3} {'ospreyd':>8} {min(r['kept']):>9.3f} {statistics.median(r['kept']):>9.3f} "
                  f"{r['cpu']:>8.2f} {r['rss']:>7.0f}M {objs:>20}  (shed {r['shed']}, "
                  f"load {os.getloadavg()[0]:.1f})", flush=True)
            if not a.no_detect:
                d = run_detects(bin_dir, work, url, n, a.seconds)
                print(f"{n:>3} {'detect':>8} {min(d['kept']):>9.3f} {statistics.median(d['kept']):>9.3f} "
                      f"{d['cpu']:>8.2f} {d['rss']:>7.0f}M {'':>20}  (load {os.getloadavg()[0]:.1f})",
                      flush=True)
    finally:
        srv.terminate()
        srv.wait(10)
    print(f"logs and events: {work}")


if __name__ == "__main__":
    main()
