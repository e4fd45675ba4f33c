#!/usr/bin/env python3
"""Cameras per box: N copies of vtest served over a local RTSP server into one
ospreyd (docs/cameras.md), against the same N cameras as N `osprey detect
--track` processes, in the same sitting.

    make bench-cameras        # or: bench/cameras.py --bin build/bin [--counts 1,2,4,6,8]

vtest.avi is made once into JPEG frames (ffmpeg; RTP/JPEG wants the
standard Huffman tables) and served by GStreamer's RTSP server
(tests/e2e/rtsp_server.py --live) at 10 frames/s, looped, each client from
the first frame: a live camera (an open range), so that each camera's
decode runs on a thread of its own. For each N, after every camera is up,
a window of --seconds:

- kept: the share of the frames the cameras were sent (10 a second each)
  that became an answer: run through the model, or passed over because
  nothing moved (the motion gate: docs/tracking.md). Target >= 0.95.
- CPU per camera (cores, from ospreyd's /proc stat) and RSS per camera
  (the server's RSS over N; the first line's figure includes the model),
  and the CPU split by stage from the threads' names
  (/proc/PID/task/*/comm; base/thread.h): decode (osp-dec-*: the newest
  frame's thread and FFmpeg's), camera (osp-cam-*: the motion gate,
  tracker, zones, events), prepare (osp-prepare*), predict (osp-predict*
  and ONNX Runtime's helper threads, osp-ort*), the rest (the I/O thread, HTTP, MQTT, the database's writer).
- objects, zone entries, crossings per camera against the one-camera
  run's, on the same clip (the same walkers should make as many objects,
  enter the zone as often and cross the line as often): "new" events,
  the zones each object entered (its events' entered_zones), and the
  records {"kind": "crossing"}.
- none lost: every event of the JSON log on MQTT (frigate/events, through
  a local mosquitto) and in the database, by camera: the objects' ids of
  the "new" events = the database's rows = MQTT's "new" ids, and those
  of the "end" events = the rows with an end_time = MQTT's "end" ids; an
  object still in view when ospreyd stops ends at the stop, so none is
  left open. The crossings logged = frigate/crossings messages = the
  database's crossings rows. Exit status 1 on any difference, or an
  object left open.

Then the same N as N `osprey detect --track` processes on the same RTSP
URL: kept (frames answered / frames sent, from the frame numbers of its
records, which count the camera's frames) and CPU per camera.
The machine is shared: read the ratios, and run it on a quiet machine.
"""
import argparse
import json
import os
import shutil
import sqlite3
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


def mjpeg_frames(work: Path) -> Path:
    out = work / "frames"
    if not out.exists():
        out.mkdir()
        subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-i", str(CACHE / "media" / "vtest.avi"),
                        "-c:v", "mjpeg", "-huffman", "default", "-q:v", "4", "-pix_fmt", "yuvj420p",
                        "-an", "-f", "image2", str(out / "%05d.jpg")], check=True)
    return out


def rtsp_server(frames: Path):
    port = free_port()
    p = subprocess.Popen([PY, str(ROOT / "tests" / "e2e" / "rtsp_server.py"), str(port), "/vtest",
                          "--live", str(frames), "--fps", str(FPS)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    if p.stdout.readline().strip() != "ready":
        raise SystemExit(f"the RTSP server did not start: {p.stderr.read()}")
    return p, f"rtsp://127.0.0.1:{port}/vtest"


def cpu_s(pid):
    """utime + stime of a process and its reaped children, in seconds."""
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in f[11:15]) / os.sysconf("SC_CLK_TCK")


STAGES = (("decode", "osp-dec-"), ("camera", "osp-cam-"), ("prepare", "osp-prepare"),
          ("predict", "osp-predict"), ("predict", "osp-ort"))


def stage_cpu(pid):
    """CPU seconds by stage, from each thread's name (its first 15 bytes)."""
    out = dict.fromkeys([k for k, _ in STAGES] + ["other"], 0.0)  # in STAGES' order
    for t in Path(f"/proc/{pid}/task").iterdir():
        try:
            comm = (t / "comm").read_text().strip()
            f = (t / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        stage = next((k for k, prefix in STAGES if comm.startswith(prefix)), "other")
        out[stage] += (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    return out


class Mqtt:
    """A local mosquitto, and a subscriber to frigate/events and
    frigate/crossings that keeps what comes, from before ospreyd starts."""

    def __init__(self, work):
        self.port = free_port()
        conf = work / "mosquitto.conf"
        conf.write_text(f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
        self.broker = subprocess.Popen([shutil.which("mosquitto") or "/usr/sbin/mosquitto", "-c",
                                        str(conf)], stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        self.sub = None

    def listen(self, path):
        self.out = open(path, "w+")
        self.sub = subprocess.Popen(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(self.port), "-q",
                                     "1", "-t", "frigate/events", "-t", "frigate/crossings", "-F",
                                     "%t %p"], stdout=self.out, stderr=subprocess.DEVNULL)
        time.sleep(0.5)

    def collected(self):
        time.sleep(1)  # the last messages of a stopped ospreyd
        self.sub.terminate()
        self.sub.wait(10)
        self.out.seek(0)
        got = []
        for line in self.out:
            topic, _, payload = line.partition(" ")
            try:
                got.append((topic, json.loads(payload)))
            except ValueError:
                pass
        return got

    def close(self):
        self.broker.terminate()
        self.broker.wait(10)


def none_lost(logged, published, db):
    """The log's events against MQTT's and the database's, camera by
    camera: (differences, objects still open at the stop, crossings rows)."""
    rows = {}
    con = sqlite3.connect(db)
    for id_, cam, end in con.execute("SELECT id, camera, end_time FROM events"):
        rows.setdefault(cam, []).append((id_, end))
    crossing_rows = con.execute("SELECT count(*) FROM crossings").fetchone()[0]
    con.close()
    bad, open_ = [], 0
    for cam in sorted({e["after"]["camera"] for e in logged} | set(rows)):
        def ids(recs, kind):
            return {e["after"]["id"] for e in recs if e["type"] == kind and e["after"]["camera"] == cam}
        new_l, end_l = ids(logged, "new"), ids(logged, "end")
        new_m, end_m = ids(published, "new"), ids(published, "end")
        new_d = {i for i, _ in rows.get(cam, [])}
        end_d = {i for i, e in rows.get(cam, []) if e is not None}
        if not (new_l == new_m == new_d):
            bad.append(f"{cam}: new: log {len(new_l)}, MQTT {len(new_m)}, db {len(new_d)}")
        if not (end_l == end_m == end_d) or not end_l <= new_l:
            bad.append(f"{cam}: end: log {len(end_l)}, MQTT {len(end_m)}, db {len(end_d)}")
        open_ += len(new_l - end_l)
    return bad, open_, crossing_rows


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


def run_daemon(bin_dir, work, url, n, seconds, mqtt):
    zones = work / "zones.json"
    zones.write_text(json.dumps(ZONES))
    hport = free_port()
    db = work / f"events-{n}.db"
    cfg = {"runtime": "onnxruntime", "models": [{"model": "ssd-oidv4-int8"}],
           "events": {"db": str(db)}, "mqtt": {"url": f"mqtt://127.0.0.1:{mqtt.port}"},
           "cameras": [{"name": f"cam{i}", "url": url, "model": "ssd-oidv4-int8", "fps": FPS,
                        "objects": ["Person"], "zones": str(zones)} for i in range(n)]}
    path = work / f"site-{n}.json"
    path.write_text(json.dumps(cfg))
    out = open(work / f"events-{n}.jsonl", "w+")
    err = open(work / f"ospreyd-{n}.log", "w+")
    mqtt.listen(work / f"mqtt-{n}.txt")
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
        s0 = stage_cpu(p.pid)
        time.sleep(seconds)
        b, c1, t1 = get_json(hport, "/api/cameras")["cameras"], cpu_s(p.pid), time.monotonic()
        s1 = stage_cpu(p.pid)
        rss = rss_mb(p.pid)
    finally:
        p.terminate()
        p.wait(60)
    published = mqtt.collected()
    dt = t1 - t0
    kept = [((y["detected"] - x["detected"]) + (skipped(y) - skipped(x))) / (dt * FPS)
            for x, y in zip(a, b)]
    out.seek(0)
    logged, objects, crossings, entered = [], {}, {}, {}
    for line in out:
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("kind") == "crossing":
            crossings[e["camera"]] = crossings.get(e["camera"], 0) + 1
            continue
        logged.append(e)
        cam = e["after"]["camera"]
        if e.get("type") == "new":
            objects[cam] = objects.get(cam, 0) + 1
        # an object's zones: the most its records list
        key = (cam, e["after"]["id"])
        entered[key] = max(entered.get(key, 0), len(e["after"].get("entered_zones") or []))
    bad, open_, crossing_rows = none_lost(logged,
                                          [e for t, e in published if t == "frigate/events"], db)
    zone_entries = {}
    for (cam, _), k in entered.items():
        zone_entries[cam] = zone_entries.get(cam, 0) + k
    names = [f"cam{i}" for i in range(n)]
    return {"kept": kept, "cpu": (c1 - c0) / dt / n, "rss": rss / n,
            "stages": {k: (s1[k] - s0[k]) / dt / n for k in s0},
            "objects": [objects.get(c, 0) for c in names],
            "zones": [zone_entries.get(c, 0) for c in names],
            "crossings": [crossings.get(c, 0) for c in names],
            "crossings_mqtt": sum(t == "frigate/crossings" for t, _ in published),
            "crossings_db": crossing_rows,
            "lost": bad, "open": open_, "events": len(logged),
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
    srv, url = rtsp_server(mjpeg_frames(work))
    mqtt = Mqtt(work)
    load = os.getloadavg()[0]
    print(f"cameras per box: vtest (768x576, 10 frames/s, looped) over RTSP, ssd-oidv4-int8, "
          f"fps {FPS}, {a.seconds:.0f} s windows; load {load:.1f} at start")
    print(f"{'N':>3} {'door':>8} {'kept min':>9} {'kept med':>9} {'CPU/cam':>8} {'RSS/cam':>8}  "
          "decode/camera/prepare/predict/other a camera; objects, zone entries, crossings a "
          "camera vs N=1")
    one, failed = None, 0
    try:
        for n in map(int, a.counts.split(",")):
            load0 = os.getloadavg()[0]
            r = run_daemon(bin_dir, work, url, n, a.seconds, mqtt)
            if one is None:
                one = {k: statistics.median(r[k]) or 1 for k in ("objects", "zones", "crossings")}

            def vs(k):
                v = [x / one[k] for x in r[k]]
                return f"{min(v):.2f}" if n == 1 or max(v) - min(v) < 0.005 else \
                    f"{min(v):.2f}-{max(v):.2f}"
            st = r["stages"]
            print(f"{n:>3} {'ospreyd':>8} {min(r['kept']):>9.3f} {statistics.median(r['kept']):>9.3f} "
                  f"{r['cpu']:>8.2f} {r['rss']:>7.0f}M  "
                  f"{st['decode']:.3f}/{st['camera']:.3f}/{st['prepare']:.3f}/{st['predict']:.3f}/"
                  f"{st['other']:.3f}; {vs('objects')}, {vs('zones')}, {vs('crossings')}  "
                  f"(shed {r['shed']}, load {load0:.1f} to {os.getloadavg()[0]:.1f})", flush=True)
            crossed = sum(r["crossings"])
            print(f"{'':>12} none lost: {r['events']} events, {len(r['lost'])} differences "
                  f"(log = MQTT = database), {r['open']} objects open at the stop; crossings "
                  f"{crossed} logged, {r['crossings_mqtt']} on MQTT, {r['crossings_db']} in the "
                  f"database", flush=True)
            for line in r["lost"]:
                print(f"{'':>12} LOST: {line}", flush=True)
            if r["lost"] or r["open"] or not crossed == r["crossings_mqtt"] == r["crossings_db"]:
                failed = 1
            if not a.no_detect:
                d = run_detects(bin_dir, work, url, n, a.seconds)
                print(f"{n:>3} {'detect':>8} {min(d['kept']):>9.3f} {statistics.median(d['kept']):>9.3f} "
                      f"{d['cpu']:>8.2f} {d['rss']:>7.0f}M  (load {os.getloadavg()[0]:.1f})",
                      flush=True)
    finally:
        srv.terminate()
        srv.wait(10)
        mqtt.close()
    print(f"logs and events: {work}")
    sys.exit(failed)


if __name__ == "__main__":
    main()
