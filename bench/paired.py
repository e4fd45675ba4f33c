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
"""
import argparse
import json
import statistics
import subprocess
import sys

FIELDS = ["fps", "p50Ms", "p99Ms", "ratioToLimit", "ratioToPipelineLimit", "pairedOverRawMs",
          "pipeAloneMs", "goodputOverCapacity", "p99OverSingle", "serverCpuMsPerFrame", "lost"]


def run(loadgen, server, args):
    cmd = [loadgen, "--json", "--runs", "1", "--server", server] + args
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    for line in reversed(out.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    sys.exit(f"paired.py: no result from {' '.join(cmd)} (exit {out.returncode}):\n{out.stderr[-2000:]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", required=True, help="the first ospreyd (the reference)")
    ap.add_argument("--b", required=True, help="the second ospreyd")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--loadgen", default="build/bin/loadgen")
    ap.add_argument("args", nargs=argparse.REMAINDER, help="-- then loadgen's options")
    o = ap.parse_args()
    args = o.args[1:] if o.args[:1] == ["--"] else o.args
    rows = {"a": [], "b": []}
    for i in range(o.pairs):
        for side in ("a", "b") if i % 2 == 0 else ("b", "a"):
            rows[side].append(run(o.loadgen, getattr(o, side), args))
        a, b = rows["a"][-1], rows["b"][-1]
        shown = [f for f in FIELDS if f in a and f in b]
        print(f"pair {i + 1}: " + "  ".join(f"{f} {a[f]:.3g} / {b[f]:.3g}" for f in shown), flush=True)
    shown = [f for f in FIELDS if all(f in r for r in rows["a"] + rows["b"])]
    print(f"medians of {o.pairs} pairs ({' '.join(args)}), A / B:")
    for f in shown:
        ma = statistics.median(r[f] for r in rows["a"])
        mb = statistics.median(r[f] for r in rows["b"])
        print(f"  {f:24s} {ma:10.3f} {mb:10.3f}")
    ratios = [b["fps"] / a["fps"] for a, b in zip(rows["a"], rows["b"]) if a["fps"] > 0]
    wins = sum(1 for r in ratios if r > 1)
    print(f"  frames/s B/A per pair: median {statistics.median(ratios):.3f} "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f}; B higher in {wins} of {len(ratios)})")


if __name__ == "__main__":
    main()
