#!/usr/bin/python3
"""threshold: measure a detector's precision and recall against hand-labelled
frames, and pick its default score threshold.

    tools/threshold.py --truth tests/e2e/fixtures/truth/vtest-people.json \\
        --model ssd-oidv4 [--one-look] [--track] [--static VIDEO] [--osprey build/bin/osprey]
        [--media DIR] [--json]

The truth file (tests/e2e/fixtures/truth/README.md) names the label it
counts, the media and, per frame, the boxes a person drew. For each
threshold from 0.20 to 0.70 in steps of 0.05 the tool runs `osprey detect`
at that threshold over each source, each frame read alone (--per-frame:
what it keeps there depends on more than a box's score: its second look,
and the boxes beside it) and matches
the detections of that label to the truth at IoU >= 0.5 (best score first, each
true box matched once) and counts true positives, false positives and
misses. The rule that picks the default: the highest F1, and of thresholds
that share it the lowest (recall lost for no precision gained is the worse
mistake on a camera).

--one-look measures osprey detect --one-look, without the second look.
--track measures the tracked pipeline, osprey detect's default on a video
(--track: the second look once per object, its rejected objects left
out; the boxes are those of the default): a tracker needs every frame, so each
source is run whole and its labelled frames picked out (a source's
"every" is not used).

With --static VIDEO it also runs the whole video and reports, at each
threshold, the boxes of the label that stay put: boxes grouped across
frames at IoU >= 0.6, and a group seen in more than a fifth of the frames
is a static box (the SSD's rock, tripod and sign in vtest.avi; people walk).

Needs only the Python standard library and the osprey binary.
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
THRESHOLDS = [round(0.20 + 0.05 * i, 2) for i in range(11)]
MATCH_IOU = 0.5
STATIC_IOU, STATIC_SHARE = 0.6, 0.2


def iou(a, b):
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    ua = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / ua if ua > 0 else 0.0


def detect(osprey, model, path, thresh, every=None, extra=()):
    """{frame: detections} of osprey detect at thresh."""
    # each frame read alone (--per-frame) unless --track is measured: the
    # threshold is then the detector's, not the tracks'
    alone = [] if "--track" in extra else ["--per-frame"]
    args = [osprey, "detect", "--quiet", *alone, "--model", model, "--threshold", str(thresh),
            *extra]
    if every:
        args += ["--every", str(every)]
    r = subprocess.run(args + [str(path)], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"threshold: osprey detect {path} failed ({r.returncode}): {r.stderr.strip()}")
    out = {}
    for line in r.stdout.splitlines():
        rec = json.loads(line)
        if "frame" in rec and "detections" in rec:
            out[rec["frame"]] = rec["detections"]
    return out


def match(truth, found, thresh):
    """(tp, fp, fn) of one frame: detections at or above thresh, greedy by score."""
    dets = sorted((d for d in found if d[0] >= thresh), key=lambda d: -d[0])
    free = list(truth)
    tp = 0
    for _, box in dets:
        best, at = MATCH_IOU, -1
        for i, t in enumerate(free):
            v = iou(box, t)
            if v >= best:
                best, at = v, i
        if at >= 0:
            free.pop(at)
            tp += 1
    return tp, len(dets) - tp, len(free)


def scores(truth_file, osprey, model, media, extra=(), every=True):
    spec = json.loads(Path(truth_file).read_text())
    label = spec["label"]
    rows = []
    for t in THRESHOLDS:
        frames = []  # (truth boxes, [(score, box)] of the label)
        for src in spec["sources"]:
            found = detect(osprey, model, Path(media) / src["file"], t,
                           src.get("every") if every else None, extra)
            for key, boxes in src["frames"].items():
                frames.append((boxes, [(d["score"], d["box"]) for d in found.get(int(key), [])
                                       if d["label"] == label]))
        tp = fp = fn = 0
        for boxes, dets in frames:
            a, b, c = match(boxes, dets, t)
            tp, fp, fn = tp + a, fp + b, fn + c
        p = tp / (tp + fp) if tp + fp else 1.0
        r = tp / (tp + fn) if tp + fn else 1.0
        f1 = 2 * p * r / (p + r) if p + r else 0.0
        rows.append({"threshold": t, "tp": tp, "fp": fp, "fn": fn,
                     "precision": round(p, 3), "recall": round(r, 3), "f1": round(f1, 3)})
    best = max(r["f1"] for r in rows)
    pick = min(r["threshold"] for r in rows if r["f1"] == best)
    return {"label": label, "frames": len(frames),
            "objects": sum(len(b) for b, _ in frames), "rows": rows, "default": pick}


def static_boxes(found, label, thresh):
    """Of found ({frame: detections}), the groups of boxes of label scoring at
    least thresh at IoU >= 0.6 seen in more than a fifth of the frames:
    [(frames seen, first box)], most seen first."""
    groups = []  # [first box, frames seen]
    for frame, dets in sorted(found.items()):
        seen = set()
        for d in dets:
            if d["label"] != label or d["score"] < thresh:
                continue
            for i, g in enumerate(groups):
                if i not in seen and iou(g[0], d["box"]) >= STATIC_IOU:
                    g[1] += 1
                    seen.add(i)
                    break
            else:
                groups.append([d["box"], 1])
                seen.add(len(groups) - 1)
    n = len(found)
    return sorted(((c, b) for b, c in groups if c > STATIC_SHARE * n), key=lambda g: -g[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--truth", required=True, help="a truth file (JSON)")
    ap.add_argument("--model", required=True, help="a catalog model or an ONNX file")
    ap.add_argument("--osprey", default=str(ROOT / "build" / "bin" / "osprey"))
    cache = Path(os.environ.get("OSPREY_CACHE", Path.home() / ".cache" / "osprey"))
    ap.add_argument("--media", default=str(cache / "media"))
    ap.add_argument("--static", metavar="VIDEO", help="also count static boxes over VIDEO")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    ap.add_argument("--one-look", action="store_true",
                    help="measure osprey detect --one-look (no second look at each box)")
    ap.add_argument("--at", metavar="T,...",
                    help="only these thresholds (default 0.20 to 0.70 by 0.05)")
    ap.add_argument("--track", action="store_true",
                    help="measure osprey detect --track (every frame of each source is run)")
    a = ap.parse_args()
    if a.at:
        THRESHOLDS[:] = [float(t) for t in a.at.split(",")]
    extra = (["--one-look"] if a.one_look else []) + (["--track"] if a.track else [])
    res = scores(a.truth, a.osprey, a.model, a.media, extra, every=not a.track)
    if a.static:
        res["static"] = {}
        for t in THRESHOLDS:
            found = detect(a.osprey, a.model, Path(a.media) / a.static, t, extra=extra)
            res["static"][str(t)] = [[c, [round(v) for v in b]] for c, b in
                                     static_boxes(found, res["label"], t)]
            res["staticFrames"] = len(found)
    if a.json:
        print(json.dumps(res))
        return
    print(f"{a.model}: {res['label']}, {res['objects']} labelled in {res['frames']} frames")
    print("threshold   TP   FP   FN  precision  recall     F1" + ("  static" if a.static else ""))
    for r in res["rows"]:
        line = (f"{r['threshold']:9.2f} {r['tp']:4d} {r['fp']:4d} {r['fn']:4d} "
                f"{r['precision']:10.3f} {r['recall']:7.3f} {r['f1']:6.3f}")
        if a.static:
            st = res["static"][str(r["threshold"])]
            line += "  " + (", ".join(f"{c}/{res['staticFrames']} at {b}" for c, b in st) or "-")
        print(line)
    print(f"default (best F1, the lowest threshold that has it): {res['default']:.2f}")


if __name__ == "__main__":
    main()
