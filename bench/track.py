#!/usr/bin/env python3
"""What osprey detect --track costs against --one-look, in one sitting.

    bench/track.py [--bin build/bin] [--runs 3] [--media DIR] [--per-box] [--json]

Three clips, each run as `osprey detect -q --one-look` and `osprey detect -q
--track` in turns, --runs times (default 3) so that both see the same load
on a shared machine:

- vtest.avi (795 frames of people walking, 768x576, 10 frames/s);
- still: vtest's first frame repeated for 60 s (600 frames), made here with
  ffmpeg in a temporary directory;
- light: the same with a step of brightness at 30 s (the lights go on).

Printed per clip and run: model runs a frame (--track's from its summary:
the frames the model ran on plus the looks; --one-look one a frame), the
median frames/s and the ratio of the medians, track/one-look. On vtest
also F1 on its labelled frames (tests/e2e/fixtures/truth/vtest-people.json,
matched as tools/threshold.py matches) at each run's default threshold,
from the records of the same runs, and the static false people after the
first minute (boxes of the label that stay put in more than a fifth of
those frames, tools/threshold.py --static's test). --per-box adds one run
of the per-box second look (the default without --track, about ten model
runs a frame: a minute or two) for its F1.

Figures, not a test: nothing here asserts. The issue's marks (issue 29):
vtest at most 1.5 runs a frame, frames/s at least half of --one-look's,
F1 at least the per-box look's; a still clip at most 0.05 runs a frame.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from threshold import match, static_boxes  # noqa: E402

TRUTH = ROOT / "tests" / "e2e" / "fixtures" / "truth" / "vtest-people.json"
SUMMARY = re.compile(r"(\d+) frames in ([\d.]+) s \(([\d.]+) frames/s\)")
RAN = re.compile(r"the model ran on (\d+) of (\d+) frames")
LOOKS = re.compile(r"(\d+) looks? \(")
PER_BOX = re.compile(r"(\d+) second looks")


def run(osprey, args, clip):
    """(records by frame, summary figures) of one osprey detect run."""
    r = subprocess.run([osprey, "detect", "-q", *args, str(clip)], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"track.py: osprey detect {' '.join(args)} {clip}: {r.returncode}: {r.stderr}")
    recs = {}
    for line in r.stdout.splitlines():
        j = json.loads(line)
        if j.get("kind") == "detections":
            recs[j["frame"]] = j["detections"]
    m = SUMMARY.search(r.stderr)
    frames, fps = int(m[1]), float(m[3])
    if "--track" in args:
        passes = int(RAN.search(r.stderr)[1]) / frames
        runs = passes + int(LOOKS.search(r.stderr)[1]) / frames
    elif "--one-look" in args:
        passes = runs = 1.0
    else:
        passes, runs = 1.0, 1 + int(PER_BOX.search(r.stderr)[1]) / frames
    return recs, {"frames": frames, "fps": fps, "passes": passes, "runs": runs}


def f1(recs, truth, label):
    tp = fp = fn = 0
    for key, boxes in truth.items():
        dets = [(d["score"], d["box"]) for d in recs.get(int(key), []) if d["label"] == label]
        a, b, c = match(boxes, dets, 0)  # each run's own threshold already applied
        tp, fp, fn = tp + a, fp + b, fn + c
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    return {"f1": round(2 * p * r / (p + r), 3) if p + r else 0.0, "tp": tp, "fp": fp, "fn": fn}


def still_clips(media, tmp):
    """(still, light): vtest's first frame for 60 s, and the same with a
    brightness step at 30 s."""
    if not shutil.which("ffmpeg"):
        sys.exit("track.py: needs ffmpeg to make the still clips")
    png = tmp / "vtest-0.png"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(media / "vtest.avi"),
                    "-frames:v", "1", str(png)], check=True)
    out = []
    for name, vf in (("still", []), ("light", ["-vf", "eq=brightness='if(gte(t,30),0.25,0)':eval=frame"])):
        clip = tmp / f"{name}.avi"
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-loop", "1", "-i", str(png), "-t", "60",
                        "-r", "10", *vf, "-c:v", "mjpeg", "-q:v", "3", str(clip)], check=True)
        out.append(clip)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=str(ROOT / "build" / "bin"))
    ap.add_argument("--runs", type=int, default=3)
    cache = Path(os.environ.get("OSPREY_CACHE", Path.home() / ".cache" / "osprey"))
    ap.add_argument("--media", default=str(cache / "media"))
    ap.add_argument("--per-box", action="store_true", help="also one run of the per-box look")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    osprey = str(Path(a.bin) / "osprey")
    media = Path(a.media)
    spec = json.loads(TRUTH.read_text())
    label = spec["label"]
    truth = next(s for s in spec["sources"] if s["file"] == "vtest.avi")["frames"]
    out = {}
    with tempfile.TemporaryDirectory(prefix="osprey-track-") as tmp:
        still, light = still_clips(media, Path(tmp))
        for name, clip in (("vtest", media / "vtest.avi"), ("still", still), ("light", light)):
            res = {"one-look": [], "track": []}
            for _ in range(a.runs):
                for kind, args in (("one-look", ["--one-look"]), ("track", ["--track"])):
                    recs, fig = run(osprey, args, clip)
                    if name == "vtest":
                        fig.update(f1(recs, truth, label))
                        late = {f: d for f, d in recs.items() if f >= 600}
                        fig["static"] = len(static_boxes(late, label, 0))
                    res[kind].append(fig)
            if name == "vtest" and a.per_box:
                recs, fig = run(osprey, [], clip)
                fig.update(f1(recs, truth, label))
                res["per-box"] = [fig]
            out[name] = res
    if a.json:
        print(json.dumps(out))
        return
    print("osprey detect --track against --one-look, in turns, median of "
          f"{a.runs} runs each (load {os.getloadavg()[0]:.1f})")
    print("runs/frame: model runs a frame, whole frames and looks; passes/frame: whole frames only")
    print(f"{'clip':6} {'run':9} {'runs/frame':>10} {'passes/frame':>12} {'frames/s':>9} {'track/one':>9}"
          f" {'F1':>6} {'TP/FP/FN':>11} {'static>1min':>11}")
    for name, res in out.items():
        one = statistics.median(f["fps"] for f in res["one-look"])
        for kind, figs in res.items():
            fps = statistics.median(f["fps"] for f in figs)
            runs = statistics.median(f["runs"] for f in figs)
            passes = statistics.median(f["passes"] for f in figs)
            ratio = f"{fps / one:9.2f}" if kind == "track" else f"{'':9}"
            line = f"{name:6} {kind:9} {runs:10.3f} {passes:12.3f} {fps:9.1f} {ratio}"
            if "f1" in figs[0]:
                f = figs[0]
                line += f" {f['f1']:6.3f} {f['tp']:>3}/{f['fp']}/{f['fn']:<5}"
                if "static" in f:
                    line += f" {f['static']:>8}"
            print(line)
    print("F1 and static: the first run's (the same every run: the tracker is deterministic,")
    print("and so are the looks). frames/s: 2 workers on a shared machine, compare ratios.")


if __name__ == "__main__":
    main()
