#!/usr/bin/env python3
"""What osprey detect's default pipeline on video costs against one-look
detection and --per-frame, in one sitting.

    bench/track.py [--bin build/bin] [--runs 3] [--per-frame-runs 1] [--media DIR] [--json]

Three clips, each run as `osprey detect -q --per-frame --one-look` (one-look
detection: each frame read alone, one whole-frame pass, no second look) and
`osprey detect -q` (the default: motion gate, tracks, the second look once
per object) in turns, --runs times (default 3) so that both see the same
load on a shared machine; vtest also as `osprey detect -q --per-frame` (each frame read
alone, the second look at every box: about ten model runs a frame, a
minute or more of CPU a run), --per-frame-runs times (default 1):

- vtest.avi (795 frames of people walking, 768x576, 10 frames/s);
- still: vtest's first frame repeated for 60 s (600 frames), made here with
  ffmpeg in a temporary directory as 4:2:0 MJPEG, as an MJPEG camera's;
- light: the same with a step of brightness at 30 s (the lights go on).

Printed per clip and pipeline: model runs a frame (the default's from its
summary: the frames the model ran on plus the looks; --per-frame's one a
frame plus its second looks; one-look one a frame), the median frames/s,
CPU seconds a run, and the ratio of the medians against one-look. On
vtest also F1 on its labelled frames
(tests/e2e/fixtures/truth/vtest-people.json, matched as tools/threshold.py
matches) at each pipeline's default threshold, from the records of the
same runs, and the static false people after the first minute (boxes of
the label that stay put in more than a fifth of those frames,
tools/threshold.py --static's test). For each clip also its decode alone:
the CPU seconds of `ffmpeg -threads 1 -i CLIP -f null -` (the same
libavcodec osprey decodes with), the floor under a still scene's cost.

Figures, not a test: nothing here asserts. The marks: the default on vtest
at most 1.5 runs a frame, frames/s at least half of one-look's, F1 at
least --per-frame's (0.960 measured before); a still clip at most 0.05
runs a frame and frames/s at least 3 times one-look's.
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
KINDS = {"one-look": ["--per-frame", "--one-look"], "default": [], "per-frame": ["--per-frame"]}


def run(osprey, kind, clip):
    """(records by frame, summary figures) of one osprey detect run."""
    args = KINDS[kind]
    t0 = os.times()
    r = subprocess.run([osprey, "detect", "-q", *args, str(clip)], capture_output=True, text=True)
    t1 = os.times()
    if r.returncode != 0:
        sys.exit(f"track.py: osprey detect {' '.join(args)} {clip}: {r.returncode}: {r.stderr}")
    recs = {}
    for line in r.stdout.splitlines():
        j = json.loads(line)
        if "trackId" in line or j.get("kind") not in ("detections",):
            sys.exit(f"track.py: osprey detect {' '.join(args)}: a record of --track's: {line}")
        recs[j["frame"]] = j["detections"]
    m = SUMMARY.search(r.stderr)
    frames, fps = int(m[1]), float(m[3])
    if kind == "default":
        passes = int(RAN.search(r.stderr)[1]) / frames
        looks = LOOKS.search(r.stderr)
        runs = passes + (int(looks[1]) / frames if looks else 0)
    elif kind == "one-look":
        passes = runs = 1.0
    else:
        looks = PER_BOX.search(r.stderr)
        passes, runs = 1.0, 1 + (int(looks[1]) / frames if looks else 0)
    cpu = (t1.children_user - t0.children_user) + (t1.children_system - t0.children_system)
    return recs, {"frames": frames, "fps": fps, "passes": passes, "runs": runs, "cpu": cpu}


def f1(recs, truth, label):
    tp = fp = fn = 0
    for key, boxes in truth.items():
        dets = [(d["score"], d["box"]) for d in recs.get(int(key), []) if d["label"] == label]
        a, b, c = match(boxes, dets, 0)  # each run's own threshold already applied
        tp, fp, fn = tp + a, fp + b, fn + c
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    return {"f1": round(2 * p * r / (p + r), 3) if p + r else 0.0, "tp": tp, "fp": fp, "fn": fn}


def decode_cpu(clip):
    """CPU seconds of decoding the clip alone, on one thread."""
    t0 = os.times()
    subprocess.run(["ffmpeg", "-v", "error", "-threads", "1", "-i", str(clip), "-f", "null", "-"],
                   check=True)
    t1 = os.times()
    return (t1.children_user - t0.children_user) + (t1.children_system - t0.children_system)


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
        # 4:2:0, as cameras send (ffmpeg would keep the PNG's 4:4:4)
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-loop", "1", "-i", str(png), "-t", "60",
                        "-r", "10", *vf, "-pix_fmt", "yuvj420p", "-c:v", "mjpeg", "-q:v", "3",
                        str(clip)], check=True)
        out.append(clip)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=str(ROOT / "build" / "bin"))
    ap.add_argument("--runs", type=int, default=3)
    cache = Path(os.environ.get("OSPREY_CACHE", Path.home() / ".cache" / "osprey"))
    ap.add_argument("--media", default=str(cache / "media"))
    ap.add_argument("--per-frame-runs", type=int, default=1,
                    help="runs of --per-frame on vtest (0: none)")
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
            res = {"one-look": [], "default": []}
            turns = [k for _ in range(a.runs) for k in ("one-look", "default")]
            if name == "vtest" and a.per_frame_runs > 0:
                res["per-frame"] = []
                # spread among the others, so that each sees the load they see
                for i in range(a.per_frame_runs):
                    turns.insert(min(len(turns), 3 * i + 2), "per-frame")
            for kind in turns:
                recs, fig = run(osprey, kind, clip)
                if name == "vtest":
                    fig.update(f1(recs, truth, label))
                    late = {f: d for f, d in recs.items() if f >= 600}
                    fig["static"] = len(static_boxes(late, label, 0))
                res[kind].append(fig)
            out[name] = res
            out[name + ".decode"] = statistics.median(decode_cpu(clip) for _ in range(a.runs))
    if a.json:
        print(json.dumps(out))
        return
    print("osprey detect on video: the default against one-look detection (--per-frame --one-look)")
    print("(and --per-frame on vtest),")
    print(f"in turns, median of {a.runs} runs each, --per-frame {a.per_frame_runs} "
          f"(load {os.getloadavg()[0]:.1f} at the end)")
    print("runs/frame: model runs a frame, whole frames and looks; passes/frame: whole frames only;")
    print("cpu: CPU seconds a run (user + system); x one-look: frames/s against one-look's;")
    print("decode: the CPU seconds of ffmpeg decoding the clip alone on one thread")
    print(f"{'clip':6} {'run':9} {'runs/frame':>10} {'passes/frame':>12} {'frames/s':>9} {'cpu s':>7}"
          f" {'x one-look':>10} {'F1':>6} {'TP/FP/FN':>11} {'static>1min':>11}")
    for name, res in out.items():
        if name.endswith(".decode"):
            continue
        one = statistics.median(f["fps"] for f in res["one-look"])
        for kind, figs in res.items():
            fps = statistics.median(f["fps"] for f in figs)
            runs = statistics.median(f["runs"] for f in figs)
            passes = statistics.median(f["passes"] for f in figs)
            cpu = statistics.median(f["cpu"] for f in figs)
            ratio = f"{fps / one:10.2f}" if kind != "one-look" else f"{'':10}"
            line = f"{name:6} {kind:9} {runs:10.3f} {passes:12.3f} {fps:9.1f} {cpu:7.1f} {ratio}"
            if "f1" in figs[0]:
                f = figs[0]
                line += f" {f['f1']:6.3f} {f['tp']:>3}/{f['fp']}/{f['fn']:<5}"
                if "static" in f:
                    line += f" {f['static']:>8}"
            print(line)
        print(f"{name:6} {'decode':9} {'':10} {'':12} {'':9} {out[name + '.decode']:7.1f}")
    print("F1 and static: the first run's (the same every run: the tracker is deterministic,")
    print("and so are the looks). frames/s: 2 workers on a shared machine, compare ratios.")


if __name__ == "__main__":
    main()
