#!/usr/bin/env python3
"""Tracking quality: osprey detect --track against a naive IoU linker, on a
clip whose truth is exact.

    bench/track_quality.py --bin build/bin [--video ~/.cache/osprey/media/vtest.avi] [--keep DIR]

Makes tools/trackclip.py's clip (people cut from vtest.avi walking known
paths on its empty plate) in a temporary folder, runs on it

  osprey detect --quiet --track --zones zones.json trackclip.avi
  osprey detect --quiet trackclip.avi          (no tracker: the second look at every box)

and prints tools/trackeval.py's measures (MOTA, IDF1, ID switches, false
boxes, misses, tracks, zone entries and line crossings against the truth)
for three runs:

  tracker               osprey detect --track's objects (boxes with a trackId)
  naive linker          the naive linker on osprey detect's boxes
  naive, same boxes     the naive linker on every box of the --track run's
                        records, tracked or not: the same detections as the
                        tracker's, so that the linking alone is compared

and the frames/s of each osprey detect run (a shared machine: loose). The
measures do not depend on the machine: the same clip and binary give the
same figures (docs/tracking.md, How tracking quality is measured).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import trackclip  # noqa: E402
import trackeval  # noqa: E402


def detect(osprey, args, out):
    t0 = time.monotonic()
    with open(out, "w") as fh:
        r = subprocess.run([str(osprey), "detect", "--quiet", *map(str, args)], stdout=fh,
                           stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"track_quality: osprey detect {' '.join(map(str, args))}: {r.stderr}")
    return time.monotonic() - t0, r.stderr.strip().splitlines()[-1]


def main():
    cache = Path(os.environ.get("OSPREY_CACHE", Path.home() / ".cache" / "osprey"))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", type=Path, default=ROOT / "build" / "bin")
    ap.add_argument("--video", type=Path, default=cache / "media" / "vtest.avi")
    ap.add_argument("--keep", type=Path, help="make the clip and outputs here, and keep them")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="track-quality-") as tmp:
        d = a.keep or Path(tmp)
        d.mkdir(parents=True, exist_ok=True)
        t = trackclip.make(a.video, d)
        clip = d / "trackclip.avi"
        n = len(t["frames"])
        s_track, sum_track = detect(a.bin / "osprey", ["--track", "--zones", d / "zones.json", clip],
                                    d / "track.jsonl")
        s_plain, _ = detect(a.bin / "osprey", ["--per-frame", clip], d / "plain.jsonl")
        _, truth = trackeval.read_truth(d / "trackclip.json")
        runs = {}
        hyp, boxes, entries, crossings = trackeval.read_output([d / "track.jsonl"], t["label"])
        runs["tracker"] = trackeval.evaluate(truth, hyp, n)
        runs["tracker"].update(zip(("zone_entries", "line_crossings", "counts_exact"),
                                   trackeval.counts_match(t, entries, crossings)))
        _, plain, _, _ = trackeval.read_output([d / "plain.jsonl"], t["label"])
        for name, b in (("naive linker", plain), ("naive, same boxes", boxes)):
            linked = trackeval.naive_link(b)
            r = trackeval.evaluate(truth, linked, n)
            e, c = trackclip.expected_events(trackeval.by_track(linked), t["zones"], t["width"],
                                             t["height"])
            r.update(zip(("zone_entries", "line_crossings", "counts_exact"),
                         trackeval.counts_match(t, e, c)))
            runs[name] = r
        trackeval.report(t, runs)
        print(f"osprey detect --track: {n / s_track:.1f} frames/s; without --track: "
              f"{n / s_plain:.1f} frames/s (load {os.getloadavg()[0]:.1f})")
        print(f"  {sum_track}")


if __name__ == "__main__":
    main()
