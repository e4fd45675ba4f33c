#!/usr/bin/env python3
"""The fleet (ospreyd --jobs, docs/fleet.md) measured on this machine.

    make bench-fleet            # or: bench/fleet.py --bin build/bin [--jobs 2000] [--runs 3]

1. Loss and duplicates: 3 workers on loopback share JOBS jobs made from
   vtest.avi's frames (JPEG, extracted once with ffmpeg); one worker is
   SIGKILLed once a third of the results are in. Prints jobs lost,
   duplicate results (entries on the results stream beyond one per id),
   and how many results equal `osprey detect` over the same JPEG files.
2. Overhead: the same JPEG frames through one worker fed by Redis, and
   the same worker (same config) fed over its pipe by a client keeping the
   admission capacity in flight (K = workers + 2); frames/s of each, the
   ratio Redis / pipe (held to >= 0.90).
3. Scale-out: two workers vs one on the same jobs. On a 2-core machine the
   cores are the limit, so expect about 1.0, not 2.

Each figure of 2 and 3 is the median of --runs runs taken in turns (the
machine is shared: compare the ratios, not the absolute frames/s).
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
if "--bin" in sys.argv[:-1]:  # the e2e helpers read it when imported
    os.environ["OSPREY_BIN"] = str(Path(sys.argv[sys.argv.index("--bin") + 1]).resolve())

from ospreyd_client import MSG_JPEG, Worker, p_jpeg  # noqa: E402
from redis_server import RedisServer, entries  # noqa: E402

CACHE = Path(os.environ.get("OSPREY_CACHE", Path.home() / ".cache" / "osprey"))
CONFIG = {"runtime": "onnxruntime", "concurrency": 2, "models": [{"model": "ssd-oidv4"}]}


def frames(workdir: Path):
    out = workdir / "frames"
    if not out.exists() or not any(out.iterdir()):
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run(["ffmpeg", "-loglevel", "error", "-i", str(CACHE / "media" / "vtest.avi"),
                        "-q:v", "3", str(out / "%04d.jpg")], check=True)
    return sorted(out.glob("*.jpg"))


def reference(bin_dir: Path, files):
    """osprey detect over the files: {file name: detections}."""
    ref = {}
    out = subprocess.run([str(bin_dir / "osprey"), "detect", "--model", "ssd-oidv4", "--threshold", "0.3",
                          "--per-class-nms", "--out", tempfile.mkdtemp(prefix="fleet-ref-"),
                          *map(str, files)], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"osprey detect over the frames exited {out.returncode}:\n"
                         f"{out.stderr[-2000:]}")
    for x in out.stdout.splitlines():
        if '"detections"' in x:
            r = json.loads(x)
            ref[Path(r["source"]).name] = r["detections"]
    return ref


def start_worker(bin_dir, workdir, url, name, config=CONFIG, extra=()):
    cfg = workdir / f"{name}.json"
    cfg.write_text(json.dumps(config))
    w = Worker(["--config", cfg, "--jobs", url, "--consumer", name, *extra], workdir=workdir,
               stdio=False)
    end = time.monotonic() + 120
    while "serving jobs from" not in w.stderr_text():
        if not w.alive() or time.monotonic() > end:
            raise SystemExit(f"worker {name} did not start\n{w.describe()}")
        time.sleep(0.05)
    return w


def push(c, stream, jobs):
    """jobs: [(id, bytes)], pipelined."""
    sent = 0
    for job_id, data in jobs:
        args = [b"XADD", stream.encode(), b"*", b"id", job_id.encode(), b"model", b"ssd-oidv4",
                b"kind", b"jpeg", b"data", data]
        c.sock.sendall(b"*%d\r\n" % len(args) +
                       b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args))
        sent += 1
    for _ in range(sent):
        c._reply()


def wait_ids(c, stream, n, timeout=600, on_count=None):
    end = time.monotonic() + timeout
    last = None
    while True:
        count = c.call("XLEN", stream)
        if on_count:
            on_count(count)
        if count >= n:
            return
        if count != last:
            last, end = count, time.monotonic() + timeout
        if time.monotonic() > end:
            return
        time.sleep(0.02)


def span_fps(times):
    """Frames/s between the first and the last result; a result's entry id
    is its append time (ms) on the Redis server."""
    times = sorted(times)
    return (len(times) - 1) / ((times[-1] - times[0]) / 1000.0) if len(times) > 1 else 0.0


def kill_run(args, workdir, files, ref):
    r = RedisServer(workdir / "redis-kill")
    c = r.client()
    try:
        ws = [start_worker(args.bin, workdir, r.url("cams"), f"w{i}") for i in range(3)]
        blobs = {f: f.read_bytes() for f in files}
        jobs = [(f"job-{i}:{files[i % len(files)].name}", blobs[files[i % len(files)]])
                for i in range(args.jobs)]
        t0 = time.monotonic()
        push(c, "cams", jobs)
        killed = []

        def maybe_kill(count):
            if not killed and count >= args.jobs // 3:
                ws[0].proc.kill()
                killed.append(count)

        wait_ids(c, "cams:results", args.jobs, on_count=maybe_kill)
        secs = time.monotonic() - t0
        res = entries(c, "cams:results")
        ids = {}
        for _, f in res:
            ids.setdefault(f["id"].decode(), []).append(f)
        lost = args.jobs - len(ids)
        dups = len(res) - len(ids)
        same = served = 0
        for job_id, fs in ids.items():
            rec = json.loads(fs[0]["result"])
            served += fs[0]["status"] == b"served"
            same += rec.get("detections") == ref[job_id.split(":", 1)[1]]
        reclaimed = sum(int(f[0]["deliveries"]) > 1 for f in ids.values())
        print(f"kill run: {args.jobs} jobs ({len(files)} vtest.avi frames as JPEG, cycled), 3 workers "
              f"x concurrency 2, w0 SIGKILLed at {killed[0] if killed else '-'} results; "
              f"{secs:.1f} s")
        print(f"  jobs lost {lost}, duplicate results {dups}, served {served}, "
              f"taken over from w0 {reclaimed}, identical to osprey detect {same}/{len(ids)}")
        for w in ws:
            w.kill()
        return lost, dups, same == len(ids)
    finally:
        c.close()
        r.stop()


def redis_fps(args, workdir, files, n_workers, run):
    r = RedisServer(workdir / f"redis-{n_workers}-{run}")
    c = r.client()
    try:
        ws = [start_worker(args.bin, workdir, r.url("cams"), f"r{n_workers}-{run}-{i}")
              for i in range(n_workers)]
        blobs = [f.read_bytes() for f in files[:args.frames]]
        push(c, "cams", [(f"j{i}", blobs[i % len(blobs)]) for i in range(args.frames)])
        wait_ids(c, "cams:results", args.frames)
        res = entries(c, "cams:results")
        if len(res) != args.frames or any(f["status"] != b"served" for _, f in res):
            raise SystemExit(f"redis run: {len(res)} results, not all served")
        fps = span_fps([int(e.split("-")[0]) for e, _ in res])
        for w in ws:
            w.kill()
        return fps
    finally:
        c.close()
        r.stop()


def pipe_fps(args, workdir, files):
    """Closed loop over the worker's pipe: K requests out, the next sent as
    soon as any reply arrives (as loadgen does)."""
    w = Worker([], workdir=workdir, stdio=True)
    try:
        w.conn.hello(CONFIG)
        blobs = [f.read_bytes() for f in files[:args.frames]]
        k = CONFIG["concurrency"] + 2
        conn, done_at, sent = w.conn, [], 0
        base = len(conn.order)
        while len(done_at) < args.frames:
            while sent < args.frames and sent - len(done_at) < k:
                conn.send(MSG_JPEG, p_jpeg(0, blobs[sent % len(blobs)]))
                sent += 1
            have = len(done_at)
            conn.wait_for(lambda: len(conn.order) - base > have, timeout=120, what="a reply")
            now = time.monotonic()
            done_at += [now] * (len(conn.order) - base - have)
        bad = [r for rid in conn.order[base:] for r in conn.replies[rid] if "detections" not in r
               or r.get("dropped")]
        if bad:
            raise SystemExit(f"pipe run: {len(bad)} replies not served, e.g. {bad[0]}")
        return (len(done_at) - 1) / (done_at[-1] - done_at[0])
    finally:
        w.kill()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", type=Path, default=ROOT / "build" / "bin")
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--frames", type=int, default=400, help="jobs per overhead/scale run")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-kill", action="store_true", help="only the overhead and scale-out runs")
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="osprey-bench-fleet-"))
    files = frames(ROOT / "build" / "bench-fleet")
    size = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                           "stream=width,height", "-of", "csv=p=0", str(files[0])],
                          capture_output=True, text=True).stdout.strip().replace(",", "x")
    mean_kb = statistics.mean(f.stat().st_size for f in files) / 1024
    print(f"frames: {len(files)} JPEGs of {size} from vtest.avi (ffmpeg -q:v 3), mean {mean_kb:.1f} KiB; "
          f"model ssd-oidv4; each worker: {json.dumps(CONFIG)}; load average {os.getloadavg()[0]:.2f}")
    lost, dups, identical = 0, 0, True
    if not args.no_kill:
        lost, dups, identical = kill_run(args, workdir, files, reference(args.bin, files))
    pipe, one, two = [], [], []
    for run in range(args.runs):
        pipe.append(pipe_fps(args, workdir, files))
        one.append(redis_fps(args, workdir, files, 1, run))
        two.append(redis_fps(args, workdir, files, 2, run))
        print(f"  run {run + 1}: pipe {pipe[-1]:.1f} f/s, redis 1 worker {one[-1]:.1f} f/s, "
              f"redis 2 workers {two[-1]:.1f} f/s (load average {os.getloadavg()[0]:.2f})")
    ratios = [o / p for o, p in zip(one, pipe)]
    scale = [t / o for t, o in zip(two, one)]
    print(f"overhead: {args.frames} JPEG jobs per run, medians of {args.runs}: pipe "
          f"{statistics.median(pipe):.1f} f/s (K={CONFIG['concurrency'] + 2}), one Redis worker "
          f"{statistics.median(one):.1f} f/s; ratio redis/pipe {statistics.median(ratios):.3f} "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f}; bound >= 0.90)")
    print(f"scale-out: two workers / one {statistics.median(scale):.3f} (min {min(scale):.3f}, "
          f"max {max(scale):.3f}) on {os.cpu_count()} cores")
    return 0 if lost == 0 and dups == 0 and identical else 1


if __name__ == "__main__":
    sys.exit(main())
