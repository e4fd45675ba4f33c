#!/usr/bin/env python3
"""The face match threshold of a cascade (docs/cascades.md), measured.

Runs `osprey detect` with a face cascade over the photos and the clip the
set-up fetches, names each face found by where it is (the table below,
checked by eye), and prints the cosine similarities of every pair of
faces of the same person and of different people, with the threshold that
separates them best and its error rates. Two crops: the square around
UltraFace's box, and the face turned upright from BlazeFace's landmarks
(BlazeFace run on the square around UltraFace's box).

    tools/face_threshold.py [--bin build/bin] [--cache ~/.cache/osprey]
"""
import argparse
import itertools
import json
import os
import subprocess
import tempfile
from pathlib import Path

# (file, frame, x range of the face's centre) -> who
WHO = [
    ("astronaut.png", 0, (0, 9999), "astronaut"),
    ("messi5.jpg", 0, (0, 9999), "footballer"),
    ("basketball1.png", 0, (0, 300), "player"),
    ("basketball2.png", 0, (0, 300), "player"),
    ("basketball1.png", 0, (300, 9999), "player-right"),
    ("basketball2.png", 0, (300, 9999), "player-right"),
    # Megamind.avi, every 40th frame: an animated woman, a man with
    # glasses, a man in the background
    ("Megamind.avi", 40, (0, 420), "woman"),
    ("Megamind.avi", 80, (0, 440), "woman"),
    ("Megamind.avi", 160, (0, 9999), "woman"),
    ("Megamind.avi", 40, (420, 9999), "background-man"),
    ("Megamind.avi", 80, (440, 9999), "background-man"),
    ("Megamind.avi", 120, (0, 9999), "glasses-man"),
    ("Megamind.avi", 200, (0, 9999), "glasses-man"),
    ("Megamind.avi", 240, (0, 9999), "glasses-man"),
]

CROPS = {
    "box": {"model": "ultraface", "then": [{"model": "face-embed"}]},
    "landmarks": {"model": "ultraface", "then": [{"model": "blazeface", "margin": 0.6, "as": "faces",
                                                  "then": [{"model": "face-embed",
                                                            "align": "landmarks"}]}]},
}


def who(name, frame, box):
    cx = (box[0] + box[2]) / 2
    for f, fr, (lo, hi), person in WHO:
        if f == name and fr == frame and lo <= cx < hi:
            return person
    return None


def faces(binary, media, config):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(config, f)
    out = []
    for name in ["astronaut.png", "messi5.jpg", "basketball1.png", "basketball2.png",
                 "Megamind.avi"]:
        args = [str(binary / "osprey"), "detect", "-q", "--config", f.name, str(media / name)]
        if name.endswith(".avi"):
            args[3:3] = ["--every", "40"]
        r = subprocess.run(args, capture_output=True, text=True, check=True)
        for line in r.stdout.splitlines():
            rec = json.loads(line)
            for d in rec.get("detections", []):
                person = who(name, rec["frame"], d["box"])
                emb = d.get("embedding")
                if emb is None:  # the landmarks crop: BlazeFace's face inside the box
                    inner = d.get("faces") or []
                    emb = inner[0]["embedding"] if inner else None
                if person and emb:
                    out.append((person, f"{name}:{rec['frame']}", emb))
    os.unlink(f.name)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=Path(__file__).resolve().parents[1] / "build" / "bin", type=Path)
    ap.add_argument("--cache", default=Path(os.environ.get("OSPREY_CACHE",
                                                            Path.home() / ".cache" / "osprey")),
                    type=Path)
    a = ap.parse_args()
    for crop, config in CROPS.items():
        fs = faces(a.bin, a.cache / "media", config)
        same, diff = [], []
        for (p1, s1, e1), (p2, s2, e2) in itertools.combinations(fs, 2):
            cos = sum(x * y for x, y in zip(e1, e2))
            (same if p1 == p2 else diff).append(cos)
        same.sort()
        diff.sort()
        best = None
        for t in [i / 100 for i in range(-20, 100)]:
            fa = sum(c >= t for c in diff)  # different people taken for one
            fr = sum(c < t for c in same)   # one person not recognised
            if best is None or fa + fr < best[1] + best[2]:
                best = (t, fa, fr)
        print(f"{crop}: {len(fs)} faces of {len({p for p, _, _ in fs})} people; "
              f"same person {len(same)} pairs, cosine {same[0]:.3f}..{same[-1]:.3f} "
              f"(median {same[len(same) // 2]:.3f}); different {len(diff)} pairs, "
              f"{diff[0]:.3f}..{diff[-1]:.3f} (median {diff[len(diff) // 2]:.3f})")
        t, fa, fr = best
        print(f"  best threshold {t:.2f}: {fa}/{len(diff)} different pairs matched, "
              f"{fr}/{len(same)} same pairs missed")
        for t in (0.3, 0.4, 0.45, 0.5):
            fa = sum(c >= t for c in diff)
            fr = sum(c < t for c in same)
            print(f"  at {t:.2f}: {fa}/{len(diff)} different pairs matched, "
                  f"{fr}/{len(same)} same pairs missed")


if __name__ == "__main__":
    main()
