#!/usr/bin/python3
"""trackeval: how well tracks follow the people of a clip whose truth is known.

    tools/trackeval.py --truth DIR/trackclip.json --tracked track.jsonl [--naive plain.jsonl]
        [--json]

--truth is tools/trackclip.py's truth: per frame the id and box of each
person, and the zone entries and line crossings they make.

--tracked is what `osprey detect --track [--zones DIR/zones.json]` printed
(records, event and crossing lines in one file, or with --events FILE
given here as well: --tracked track.jsonl events.jsonl). A box of the
truth's label with a `trackId` is the tracker's hypothesis of that object
in that frame; a box without one (a track still tentative) is not an
object yet and does not count.

--naive is what `osprey detect` printed without --track: its boxes of the
label are linked frame to frame by the baseline below, and measured the
same way, so that the tracker is reported against it.

The naive linker: each box of a frame takes the id of the box of the frame
before that it overlaps most, IoU >= 0.3, pairs taken greedily from the
largest IoU down, each box used once; a box left over starts a new id. It
has no motion model and no memory: a box missed for one frame ends its id.

The measures, with a box of the truth and one of the tracks the same
object in a frame when their IoU is at least 0.5:

  MOTA  CLEAR MOT (Bernardin and Stiefelhagen 2008): per frame, a truth
        object keeps the track it was matched to in the frame before when
        they still overlap; the others are paired by the Hungarian method
        on IoU. 1 - (FN + FP + IDSW) / truth boxes.
  IDSW  a truth object matched to a track other than the one it was last
        matched to.
  IDF1  Ristani et al. 2016: each truth trajectory is paired with at most
        one track for the whole clip, the pairing (Hungarian method, scipy's
        linear_sum_assignment) that makes the most frames agree (IDTP).
        IDF1 = 2 IDTP / (truth boxes + track boxes).
  found the share of each person's frames in which they were matched, and
        their switches.

and the zone entries and line crossings: the tracker's as osprey reports
them (an event whose current_zones gains a zone the object's record before
did not have; a crossing line), the naive linker's by the same rules
applied to its tracks (tools/trackclip.py's expected_events), both against
the truth's.

Needs python3-scipy (and numpy).
"""
import argparse
import json
import os
import sys
from collections import defaultdict

import numpy as np
from scipy.optimize import linear_sum_assignment

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trackclip  # noqa: E402

MATCH_IOU = 0.5
LINK_IOU = 0.3


def iou(a, b):
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def clear_mot(truth, hyp, n_frames):
    """CLEAR MOT counts of HYP against TRUTH, each {frame: [(id, box)]}."""
    fn = fp = idsw = matches = 0
    overlap = 0.0
    gt_total = 0
    # per truth id: frames matched, frames in, switches
    found, present, switched = defaultdict(int), defaultdict(int), defaultdict(int)
    last = {}  # truth id -> the track it was last matched to
    prev = {}  # truth id -> the track it was matched to in the frame before
    for f in range(n_frames):
        gts, hs = truth.get(f, []), hyp.get(f, [])
        gt_total += len(gts)
        hbox = dict(hs)
        now = {}
        # a match of the frame before is kept while it still overlaps
        for g, gb in gts:
            h = prev.get(g)
            if h in hbox and h not in now.values() and iou(gb, hbox[h]) >= MATCH_IOU:
                now[g] = h
        free_g = [(g, gb) for g, gb in gts if g not in now]
        taken = set(now.values())
        free_h = [(h, hb) for h, hb in hs if h not in taken]
        if free_g and free_h:
            cost = np.array([[iou(gb, hb) for _, hb in free_h] for _, gb in free_g])
            rows, cols = linear_sum_assignment(cost, maximize=True)
            for r, c in zip(rows, cols):
                if cost[r, c] >= MATCH_IOU:
                    now[free_g[r][0]] = free_h[c][0]
        gbox = dict(gts)
        for g, _ in gts:
            present[g] += 1
        for g, h in now.items():
            found[g] += 1
            if g in last and last[g] != h:
                idsw += 1
                switched[g] += 1
            last[g] = h
            overlap += iou(gbox[g], hbox[h])
        matches += len(now)
        fn += len(gts) - len(now)
        fp += len(hs) - len(now)
        prev = now
    mota = 1 - (fn + fp + idsw) / gt_total if gt_total else float("nan")
    motp = overlap / matches if matches else float("nan")
    return {"MOTA": mota, "MOTP": motp, "FN": fn, "FP": fp, "IDSW": idsw,
            "matches": matches, "truth_boxes": gt_total,
            "found": {g: found[g] / present[g] for g in sorted(present)},
            "switches": {g: switched[g] for g in sorted(present)},
            "track_boxes": sum(len(v) for v in hyp.values())}


def idf1(truth, hyp):
    """Ristani et al.'s identity measures of HYP against TRUTH.

    Their bipartite graph joins every truth trajectory and every track, plus
    a stand-in on each side that takes whatever is left unpaired; the cost
    of a pair is the frames where the two do not agree. With n boxes of
    truth and m of tracks, the cost of any pairing is n + m - 2 IDTP, so the
    least-cost pairing is the one of most IDTP: the assignment below."""
    gt_ids = sorted({g for v in truth.values() for g, _ in v})
    h_ids = sorted({h for v in hyp.values() for h, _ in v})
    n = sum(len(v) for v in truth.values())
    m = sum(len(v) for v in hyp.values())
    agree = np.zeros((len(gt_ids), len(h_ids)))
    gi = {g: i for i, g in enumerate(gt_ids)}
    hi = {h: i for i, h in enumerate(h_ids)}
    for f, gts in truth.items():
        for g, gb in gts:
            for h, hb in hyp.get(f, []):
                if iou(gb, hb) >= MATCH_IOU:
                    agree[gi[g], hi[h]] += 1
    idtp = 0.0
    pairs = {}
    if gt_ids and h_ids:
        rows, cols = linear_sum_assignment(agree, maximize=True)
        idtp = float(agree[rows, cols].sum())
        pairs = {gt_ids[r]: h_ids[c] for r, c in zip(rows, cols) if agree[r, c] > 0}
    return {"IDF1": 2 * idtp / (n + m) if n + m else float("nan"),
            "IDP": idtp / m if m else float("nan"), "IDR": idtp / n if n else float("nan"),
            "IDTP": int(idtp), "IDFP": int(m - idtp), "IDFN": int(n - idtp), "pairs": pairs}


def naive_link(boxes):
    """The baseline's tracks of BOXES, {frame: [box]}: {frame: [(id, box)]}."""
    out, prev, next_id = {}, [], 1
    for f in sorted(boxes):
        cur = boxes[f]
        pairs = sorted(((iou(pb, cb), i, j) for i, (_, pb) in enumerate(prev)
                        for j, cb in enumerate(cur)), reverse=True)
        ids, used = [None] * len(cur), set()
        for v, i, j in pairs:
            if v < LINK_IOU:
                break
            if i not in used and ids[j] is None:
                used.add(i)
                ids[j] = prev[i][0]
        for j in range(len(cur)):
            if ids[j] is None:
                ids[j], next_id = next_id, next_id + 1
        out[f] = prev = list(zip(ids, cur))
    return out


def read_jsonl(paths):
    for p in paths:
        with open(p) as fh:
            for line in fh:
                if line.strip():
                    yield json.loads(line)


def read_output(paths, label):
    """(tracked {frame: [(trackId, box)]}, all boxes {frame: [box]}, zone
    entries {zone: n}, line crossings {line: {"in", "out"}}) of osprey
    detect's lines in PATHS."""
    tracked, boxes = defaultdict(list), defaultdict(list)
    entries, crossings = defaultdict(int), defaultdict(lambda: {"in": 0, "out": 0})
    zones_of = {}
    for r in read_jsonl(paths):
        kind = r.get("kind")
        if kind == "detections":
            boxes[r["frame"]]  # a frame with no box is still a frame
            tracked[r["frame"]]
            for d in r["detections"]:
                if d["label"] != label:
                    continue
                boxes[r["frame"]].append(d["box"])
                if "trackId" in d:
                    tracked[r["frame"]].append((d["trackId"], d["box"]))
        elif kind == "event" and r["after"]["label"] == label:
            a = r["after"]
            had = zones_of.get(a["track_id"], [])
            for z in a["current_zones"]:
                if z not in had:
                    entries[z] += 1
            zones_of[a["track_id"]] = a["current_zones"]
        elif kind == "crossing" and r["label"] == label:
            crossings[r["line"]][r["direction"]] += 1
    return dict(tracked), dict(boxes), dict(entries), {k: dict(v) for k, v in crossings.items()}


def read_truth(path):
    t = json.load(open(path))
    frames = {f["frame"]: [(o["id"], o["box"]) for o in f["objects"]] for f in t["frames"]}
    return t, frames


def evaluate(truth, hyp, n_frames):
    r = clear_mot(truth, hyp, n_frames)
    r.update(idf1(truth, hyp))
    r["tracks"] = len({h for v in hyp.values() for h, _ in v})
    return r


def by_track(frames):
    out = defaultdict(list)
    for f in sorted(frames):
        for i, b in frames[f]:
            out[i].append((f, b))
    return out


def counts_match(t, entries, crossings):
    want_e = t["zone_entries"]
    want_c = t["line_crossings"]
    got_e = {z: entries.get(z, 0) for z in want_e}
    got_c = {ln: {d: crossings.get(ln, {}).get(d, 0) for d in ("in", "out")} for ln in want_c}
    return got_e, got_c, got_e == want_e and got_c == want_c


def report(t, runs):
    print(f"truth: {len(t['frames'])} frames, {len(t['people'])} people, "
          f"zone entries {t['zone_entries']}, line crossings {t['line_crossings']}")
    print(f"{'':>17} {'MOTA':>6} {'IDF1':>6} {'IDSW':>4} {'FP':>4} {'FN':>4} {'tracks':>6}  "
          "zone entries; line crossings")
    for name, r in runs.items():
        print(f"{name:>17} {r['MOTA']:6.3f} {r['IDF1']:6.3f} {r['IDSW']:4d} {r['FP']:4d} "
              f"{r['FN']:4d} {r['tracks']:6d}  {r['zone_entries']}; {r['line_crossings']}"
              f"{'' if r['counts_exact'] else ' (not the truth)'}")
    names = {p["id"]: n for n, p in t["people"].items()}
    print("each person: the share of their frames matched, and their ID switches:")
    for name, r in runs.items():
        print(f"{name:>17} " + " ".join(f"{names[g]} {v:.2f} {r['switches'][g]}"
                                        for g, v in r["found"].items()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--truth", required=True, help="tools/trackclip.py's trackclip.json")
    ap.add_argument("--tracked", nargs="+", help="osprey detect --track's output (and events)")
    ap.add_argument("--naive", nargs="+", help="osprey detect's output without --track")
    ap.add_argument("--json", action="store_true", help="print the measures as one JSON object")
    a = ap.parse_args()
    if not a.tracked and not a.naive:
        ap.error("give --tracked, --naive or both")
    t, truth = read_truth(a.truth)
    n, label = len(t["frames"]), t["label"]
    runs = {}
    if a.tracked:
        hyp, _, entries, crossings = read_output(a.tracked, label)
        r = evaluate(truth, hyp, n)
        r["zone_entries"], r["line_crossings"], r["counts_exact"] = counts_match(
            t, entries, crossings)
        runs["tracker"] = r
    if a.naive:
        _, boxes, _, _ = read_output(a.naive, label)
        hyp = naive_link(boxes)
        r = evaluate(truth, hyp, n)
        entries, crossings = trackclip.expected_events(by_track(hyp), t["zones"],
                                                       t["width"], t["height"])
        r["zone_entries"], r["line_crossings"], r["counts_exact"] = counts_match(
            t, entries, crossings)
        runs["naive linker"] = r
    if a.json:
        for r in runs.values():
            r["pairs"] = {str(k): v for k, v in r["pairs"].items()}
            r["found"] = {str(k): v for k, v in r["found"].items()}
            r["switches"] = {str(k): v for k, v in r["switches"].items()}
        print(json.dumps(runs))
    else:
        report(t, runs)


if __name__ == "__main__":
    main()
