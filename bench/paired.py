#!/usr/bin/env python3
"""Two ospreyd builds measured as pairs in one sitting.

    bench/paired.py --a OLD/ospreyd --b NEW/ospreyd [--pairs 5] [--loadgen build/bin/loadgen] \
        -- --model ssd-oidv4 --frame raw --size 1920x1080 --seconds 4 --limit

Runs loadgen (one run each, --json) against A then B, N times in turns, so
that both see the same load on a shared machine, and prints each pair and
the medians of the figures that apply (frames/s, p50/p99, ratios to the
limits measured in the same run, K=1 latency over the raw run, overload
goodput and p99) and of the per-pair B/A ratio of frames/s. Figures from
one run only compare with the other run of the same pair.

The same binary with and without an option: --b-args gives B's ospreyd
extra arguments (through a small wrapper script, loadgen's --server), and
--b-scrape URL fetches URL every --scrape-ms while B runs, e.g. the cost of
the HTTP door with Prometheus polling it:

    bench/paired.py --a build/bin/ospreyd --b build/bin/ospreyd --b-args "--http 127.0.0.1:9464" \\
        --b-scrape http://127.0.0.1:9464/metrics -- --model ssd-oidv4 --frame raw --seconds 4

The same binary serving another model: --b-model gives B's loadgen that
model instead of the one after --, e.g. the int8 variant against float on
the same frames:

    bench/paired.py --a build/bin/ospreyd --b build/bin/ospreyd --b-model ssd-oidv4-int8 \\
        -- --model ssd-oidv4 --frame raw --size 1920x1080 --seconds 4
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

FIELDS = ["fps", "p50Ms", "p99Ms", "ratioToLimit", "ratioToPipelineLimit", "pairedOverRawMs",
          "pipeAloneMs", "goodputOverCapacity", "p99OverSingle", "serverCpuMsPerFrame", "lost"]


def run(loadgen, server, args):
    cmd = [loadgen, "--json", "--runs", "1", "--server", server] + args
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    for line in reversed(out.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    sys.exit(f"paired.py: no result from {' '.join(cmd)} (exit {out.returncode}):\n{out.stderr[-2000:]}")


def with_model(args, model):
    """loadgen's args with --model's value replaced (or --model added)."""
    out = list(args)
    for i, a in enumerate(out[:-1]):
        if a in ("--model", "-m"):
            out[i + 1] = model
            return out
    return out + ["--model", model]


def wrapper(server, extra):
    """A script that runs server with extra arguments first (loadgen execs --server bare)."""
    fd, path = tempfile.mkstemp(prefix="paired-ospreyd-", suffix=".sh")
    with os.fdopen(fd, "w") as f:
        f.write("#!/bin/sh\nexec " + " ".join(shlex.quote(a) for a in [os.path.abspath(server)] + extra)
                + ' "$@"\n')
    os.chmod(path, 0o755)
    return path


class Scraper:
    """GET url every period_s on a thread of its own, counting what answered."""

    def __init__(self, url, period_s):
        self.url, self.period_s = url, period_s
        self.ok = self.failed = 0
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.t.start()

    def loop(self):
        due = time.monotonic()
        while not self.stop.is_set():
            try:
                with urllib.request.urlopen(self.url, timeout=1) as r:
                    r.read()
                self.ok += 1
            except OSError:
                self.failed += 1  # between runs no server is up
            due += self.period_s
            self.stop.wait(max(0.0, due - time.monotonic()))

    def end(self):
        self.stop.set()
        self.t.join()
        return self.ok, self.failed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", required=True, help="the first ospreyd (the reference)")
    ap.add_argument("--b", required=True, help="the second ospreyd")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--loadgen", default="build/bin/loadgen")
    ap.add_argument("--b-args", default="", help="extra ospreyd arguments for B (shell words)")
    ap.add_argument("--b-scrape", metavar="URL", help="GET URL every --scrape-ms while B runs")
    ap.add_argument("--scrape-ms", type=float, default=100.0)
    ap.add_argument("--b-model", metavar="NAME", help="B serves this model instead of the --model after --")
    ap.add_argument("args", nargs=argparse.REMAINDER, help="-- then loadgen's options")
    o = ap.parse_args()
    args = o.args[1:] if o.args[:1] == ["--"] else o.args
    servers = {"a": o.a, "b": wrapper(o.b, shlex.split(o.b_args)) if o.b_args else o.b}
    side_args = {"a": args, "b": with_model(args, o.b_model) if o.b_model else args}
    rows = {"a": [], "b": []}
    scrapes = []
    for i in range(o.pairs):
        for side in ("a", "b") if i % 2 == 0 else ("b", "a"):
            scraper = Scraper(o.b_scrape, o.scrape_ms / 1000.0) if side == "b" and o.b_scrape else None
            rows[side].append(run(o.loadgen, servers[side], side_args[side]))
            if scraper:
                scrapes.append(scraper.end())
        a, b = rows["a"][-1], rows["b"][-1]
        shown = [f for f in FIELDS if f in a and f in b]
        print(f"pair {i + 1}: " + "  ".join(f"{f} {a[f]:.3g} / {b[f]:.3g}" for f in shown)
              + (f"  scrapes ok {scrapes[-1][0]} (refused {scrapes[-1][1]})" if scrapes else ""), flush=True)
    shown = [f for f in FIELDS if all(f in r for r in rows["a"] + rows["b"])]
    print(f"medians of {o.pairs} pairs ({' '.join(args)}), A / B:")
    for f in shown:
        ma = statistics.median(r[f] for r in rows["a"])
        mb = statistics.median(r[f] for r in rows["b"])
        print(f"  {f:24s} {ma:10.3f} {mb:10.3f}")
    ratios = [b["fps"] / a["fps"] for a, b in zip(rows["a"], rows["b"]) if a["fps"] > 0]
    wins = sum(1 for r in ratios if r > 1)
    if o.b_model:
        print(f"  B: {o.b} serving {o.b_model}")
    if o.b_args or o.b_scrape:
        print(f"  B: {o.b} {o.b_args}" + (f", {o.b_scrape} fetched every {o.scrape_ms:g} ms "
                                           f"({sum(x[0] for x in scrapes)} answered)" if o.b_scrape else ""))
    print(f"  frames/s B/A per pair: median {statistics.median(ratios):.3f} "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f}; B higher in {wins} of {len(ratios)})")
    cpu = [a["serverCpuMsPerFrame"] / b["serverCpuMsPerFrame"] for a, b in zip(rows["a"], rows["b"])
           if b.get("serverCpuMsPerFrame", 0) > 0 and "serverCpuMsPerFrame" in a]
    if cpu:
        # CPU per frame moves less with a neighbour's load than frames/s does
        print(f"  server CPU per frame A/B per pair: median {statistics.median(cpu):.3f} "
              f"(min {min(cpu):.3f}, max {max(cpu):.3f})")


if __name__ == "__main__":
    main()
