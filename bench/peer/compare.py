#!/usr/bin/python3
"""make bench-peer: the Python pool worker ("the peer" of MEASURING.md) and
ospreyd, side by side, on the same machine, models, frames and configs.

    compare.py --worker PATH [--loadgen PATH] [--ospreyd PATH] [--runs N] [--seconds S]

Prepares the peer (bench/peer/setup.sh: a Debian 13 tree with its Python,
numpy, Pillow and ONNX Runtime; the worker copied in unchanged with our
decoders beside it), checks that both servers find the same things in one
picture, then measures each load shape with loadgen on both servers: closed
loop, K = the admission capacity, the same explicit model config sent to
both (loadgen --explicit-config). Runs alternate between the two servers
(peer first on even runs, osprey first on odd ones) so that a neighbour's
load falls on both alike; the figures are medians over the runs. Also
measures the raw run loop of each model under each side's ONNX Runtime,
since the two are different versions. Needs root (chroot).
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.environ.get("OSPREY_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "osprey")

# (model, frame, size): the shapes compared
SHAPES = [
    ("ssd-oidv4", "raw", "1920x1080"),
    ("ssd-oidv4", "jpeg", "1920x1080"),
    ("ssd-oidv4", "raw", "300x300"),
    ("ultraface", "raw", "1920x1080"),
    ("ultraface", "raw", "320x240"),
]


def fail(msg):
    print(f"bench-peer: {msg}", file=sys.stderr)
    sys.exit(1)


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def model_config(loadgen, model):
    out = subprocess.run([loadgen, "--print-config", "--model", model], capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"loadgen --print-config --model {model} failed: {out.stderr.strip()}")
    return out.stdout.strip()


def one_run(args, server, model, frame, size):
    cmd = [args.loadgen, "--json", "--explicit-config", "--server", server, "--model", model,
           "--frame", frame, "--size", size, "--runs", "1", "--seconds", str(args.seconds)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            return json.loads(line)
    tail = "\n".join(out.stderr.strip().splitlines()[-6:])
    print(f"bench-peer: {' '.join(cmd)} gave no result:\n{tail}", file=sys.stderr)
    return None


def med(runs, key):
    vals = [r[key] for r in runs]
    return statistics.median(vals) if vals else 0.0


def spread(runs, key):
    vals = [r[key] for r in runs]
    if len(vals) < 2:
        return ""
    m = statistics.median(vals)
    if m and (max(vals) - min(vals)) / m > 0.10:
        return f" ({min(vals):.1f}-{max(vals):.1f})"
    return ""


def sanity(args, worker_sh):
    """Both servers on messi5.jpg: their first detection each, and the peer must answer."""
    image = os.path.join(CACHE, "media", "messi5.jpg")
    ok = True
    for model in sorted({s[0] for s in SHAPES}):
        cfg = model_config(args.loadgen, model)
        got = {}
        for name, server in (("peer", worker_sh), ("osprey", args.ospreyd)):
            out = subprocess.run([os.path.join(HERE, "probe.py"), server, cfg, image],
                                 capture_output=True, text=True)
            lines = out.stdout.strip().splitlines()
            got[name] = f"{len(lines)} detection(s), first {lines[0]}" if lines else "nothing"
            if out.returncode != 0 or not lines or lines[0].startswith("("):
                ok = False
                got[name] = (lines[0] if lines else out.stderr.strip()[-200:]) + "  <-- PROBLEM"
        print(f"  {model} on messi5.jpg: peer {got['peer']}; osprey {got['osprey']}")
    return ok


def raw_limits(args, worker_sh, models):
    for model in models:
        cfg = json.loads(model_config(args.loadgen, model))
        peer = subprocess.run([worker_sh, "rawloop.py", cfg["path"], str(args.limit_seconds)],
                              capture_output=True, text=True)
        pl = None
        for line in peer.stdout.splitlines():
            if line.startswith("{"):
                pl = json.loads(line)
        mine = subprocess.run([args.loadgen, "--limit-only", "--model", model, "--limit-seconds",
                               str(args.limit_seconds)], capture_output=True, text=True)
        m = re.search(r"([\d.]+) f/s\s+\(1x\d+ thr ([\d.]+), \d+x1 thr ([\d.]+)\)", mine.stdout)
        if not pl or not m:
            print(f"  {model}: raw run loop FAILED ({peer.stderr.strip()[-200:]}{mine.stderr.strip()[-200:]})")
            continue
        lim = float(m.group(1))
        print(f"  {model:10} raw run loop: peer's ONNX Runtime {pl['version']} {pl['limit']:.1f} f/s "
              f"(1 session {pl['one']:.1f}, {pl['cores']}x1 thread {pl['many']:.1f}); osprey's {lim:.1f} f/s "
              f"(1 session {float(m.group(2)):.1f}, {pl['cores']}x1 thread {float(m.group(3)):.1f}); "
              f"osprey/peer {lim / pl['limit']:.2f}  load {loadavg()}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", required=True, help="the Python pool worker's source (inference_pool.py)")
    ap.add_argument("--loadgen", default="build/bin/loadgen")
    ap.add_argument("--ospreyd", default="build/bin/ospreyd")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--limit-seconds", type=float, default=3)
    ap.add_argument("--only", action="append", metavar="MODEL:FRAME:SIZE",
                    help="measure this shape only (repeatable), e.g. ultraface:raw:1920x1080")
    args = ap.parse_args()
    if os.geteuid() != 0:
        fail("needs root (the Python worker runs in a chroot); run make bench-peer as root")
    if not os.path.isfile(args.worker):
        fail(f"the Python pool worker '{args.worker}' does not exist; "
             "give its inference_pool.py: make bench-peer PEER_WORKER=path")
    for tool in (args.loadgen, args.ospreyd):
        if not os.access(tool, os.X_OK):
            fail(f"{tool} is missing (make builds it)")
    args.loadgen = os.path.abspath(args.loadgen)
    args.ospreyd = os.path.abspath(args.ospreyd)
    global SHAPES
    if args.only:
        want = [tuple(o.split(":")) for o in args.only]
        unknown = [":".join(w) for w in want if w not in SHAPES]
        if unknown:
            fail(f"unknown shape {unknown[0]}; known: " + ", ".join(":".join(x) for x in SHAPES))
        SHAPES = [x for x in SHAPES if x in want]
    models = sorted({s[0] for s in SHAPES})
    paths = [json.loads(model_config(args.loadgen, m))["path"] for m in models]
    setup = subprocess.run([os.path.join(HERE, "setup.sh"), args.worker, *paths], capture_output=True, text=True)
    if setup.returncode != 0:
        fail(setup.stderr.strip().splitlines()[-1] if setup.stderr.strip() else "setup.sh failed")
    lines = setup.stdout.strip().splitlines()
    peer_env = lines[1] if len(lines) > 1 else "?"
    worker_sh = os.path.join(HERE, "worker.sh")
    ort_root = ""
    try:
        with open(os.path.join(os.path.dirname(os.path.dirname(args.loadgen)), ".ort-root")) as f:
            ort_root = os.path.basename(f.read().strip())
    except OSError:
        pass

    print(f"bench-peer: the Python pool worker, unchanged ({peer_env}, in a Debian 13 chroot) vs ospreyd "
          f"(ONNX Runtime {ort_root or '?'}); {os.cpu_count()} cores; load average {loadavg()} at start")
    print("  the same explicit model config to both (loadgen --explicit-config), concurrency 2, closed loop,")
    print(f"  K = the admission capacity; {args.runs} runs x {args.seconds:g} s per server, alternating; medians")
    print("  (min-max when wider than 10%). CPU = the server's CPU ms per served frame (robust to a busy")
    print("  neighbour); the load average is taken after each shape. Sanity check first:")
    if not sanity(args, worker_sh):
        fail("a server found nothing or failed on messi5.jpg; not measuring")
    raw_limits(args, worker_sh, models)
    print()
    head = (f"  {'shape':26} {'K':>2} {'peer f/s':>19} {'osprey f/s':>21} {'osprey/peer':>11} "
            f"{'p50 ms peer/osprey':>19} {'CPU ms peer/osprey':>19}  load")
    print(head)
    bad = False
    for model, frame, size in SHAPES:
        runs = {"peer": [], "osprey": []}
        for r in range(args.runs):
            order = [("peer", worker_sh), ("osprey", args.ospreyd)]
            if r % 2:
                order.reverse()
            for name, server in order:
                res = one_run(args, server, model, frame, size)
                if res is not None:
                    runs[name].append(res)
        shape = f"{model} {frame} {size}"
        if not runs["peer"] or not runs["osprey"]:
            print(f"  {shape:26} FAILED (peer {len(runs['peer'])}, osprey {len(runs['osprey'])} runs)")
            bad = True
            continue
        p, o = runs["peer"], runs["osprey"]
        pf, of = med(p, "fps"), med(o, "fps")
        notes = []
        for name, rr in runs.items():
            lost = sum(x["lost"] for x in rr)
            errs = sum(x["errors"] for x in rr)
            drops = sum(x["dropped"]["queueFull"] + x["dropped"]["deadlineExpired"] + x["dropped"]["other"]
                        for x in rr)
            if lost or errs or drops or len(rr) < args.runs:
                notes.append(f"{name}: {len(rr)} runs, lost {lost}, errors {errs}, dropped {drops}")
                bad = bad or lost > 0 or errs > 0
        k = o[0]["inflight"] if o[0]["inflight"] == p[0]["inflight"] else f"{p[0]['inflight']}/{o[0]['inflight']}"
        pfs = f"{pf:.1f}{spread(p, 'fps')}"
        ofs = f"{of:.1f}{spread(o, 'fps')}"
        lat = f"{med(p, 'p50Ms'):.1f} / {med(o, 'p50Ms'):.1f}"
        cpu = f"{med(p, 'serverCpuMsPerFrame'):.1f} / {med(o, 'serverCpuMsPerFrame'):.1f}"
        ratio = f"{of / pf:.2f}x" if pf > 0 else "-"
        print(f"  {shape:26} {k:>2} {pfs:>19} {ofs:>21} {ratio:>11} {lat:>19} {cpu:>19}  {loadavg()}"
              + (f"  [{'; '.join(notes)}]" if notes else ""))
        sys.stdout.flush()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
