#!/usr/bin/python3
"""trackclip: make a clip whose every box and id is known, from real footage.

    tools/trackclip.py --video ~/.cache/osprey/media/vtest.avi --out DIR

A tracker is only measured against a truth that says, frame by frame, who
is where. Hand-labelling vtest.avi whole is hundreds of boxes; instead
this tool films the scene again: the background plate is the per-pixel
median of every 8th frame of vtest.avi (people walk, so the median is the
empty square), and real people, cut out of vtest frames, are pasted on it
walking along paths written below. Their boxes and ids are then known
exactly, and so are the zones they enter and the lines they cross.

The people are boxes of tests/e2e/fixtures/truth/vtest-people.json (drawn
by hand) that overlap no one else's, on the road where the cut is clean;
each was checked by eye on a contact sheet (--sheet). A person's mask is
where the frame differs from the plate inside the box, its largest part,
holes filled, edges feathered over a pixel or two, so that what is pasted
is the person and not the rectangle around them.

The scene (SCENE), 260 frames at 10 frames/s, 768x576:

  A, B    cross: A walks right along the road, B (nearer, so in front)
          walks left; they pass each other, B hiding A, at about x 445.
  C, D    a pair side by side, 5 pixels apart, walking right on the grass
          and out of the frame.
  E       walks down the road, stops in the zone "rest" for 7 s, then walks
          on to the right.
  F, G    F walks out of the frame on the left; 3 s later G comes in
          where F left and walks right: two people, two ids.

and its zones file: the zone "rest" (E's stop), the zone "crosswalk"
(C and D go through it) and the line "door", drawn top to bottom, which
A, C, D and G cross going right ("in") and B going left ("out").

It writes, in --out:

  trackclip.avi     the clip, MJPEG at quality 2 (osprey detect reads it)
  trackclip.json    the truth: per frame the id and box [x1, y1, x2, y2]
                    of each person (the box cut to the frame; a person less
                    than half inside the frame is not in it), and the
                    zone entries and line crossings the rules of
                    docs/tracking.md (Zones and lines) give on these boxes
  zones.json        the zones file, for osprey detect --zones

Everything is computed, nothing drawn at random: the same vtest.avi gives
the same clip and truth. Needs python3-numpy, python3-scipy and ffmpeg.
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from scipy import ndimage

ROOT = Path(__file__).resolve().parents[1]
TRUTH = ROOT / "tests" / "e2e" / "fixtures" / "truth" / "vtest-people.json"
W, H, FPS, FRAMES = 768, 576, 10, 260
PLATE_EVERY = 8
DIFF = 28  # luma-ish levels a person's pixel differs from the plate by
FEATHER = 1.0  # sigma, pixels, of the mask's soft edge
INSIDE = 0.5  # share of a person's width inside the frame for them to be in it

# Who is cut from where: a vtest frame and a box of the hand-labelled truth.
PEOPLE = {
    "A": (360, [526, 193, 567, 287]),
    "B": (510, [650, 304, 692, 411]),
    "C": (180, [586, 219, 621, 307]),
    "D": (240, [442, 247, 484, 354]),
    "E": (780, [610, 200, 643, 300]),
    "F": (150, [582, 223, 624, 315]),
    "G": (90, [563, 174, 596, 262]),
}
# Paths: (frame, x of the person's centre, y of their feet), walked in a
# straight line at constant speed from one point to the next; a person is
# in the scene from their first point's frame to their last's.
SCENE = {
    "A": [(0, 40, 330), (210, 670, 330)],
    "B": [(40, 730, 352), (250, 100, 352)],
    "C": [(0, 60, 470), (250, 810, 470)],
    "D": [(0, 105, 470), (250, 855, 470)],
    "E": [(0, 520, 190), (50, 600, 250), (120, 600, 250), (190, 810, 250)],
    "F": [(0, 200, 270), (70, -30, 270)],
    "G": [(100, -30, 270), (250, 420, 270)],
}
ZONES = {
    "zones": {
        "rest": {"coordinates": "0.72,0.38,0.86,0.38,0.86,0.48,0.72,0.48",
                 "objects": ["Person"]},
        "crosswalk": {"coordinates": "0.45,0.7,0.6,0.7,0.6,0.9,0.45,0.9",
                      "objects": ["Person"]},
    },
    "lines": {"door": {"coordinates": "0.3,0.3,0.3,0.9", "objects": ["Person"]}},
}
INERTIA = 3  # the zones' default (docs/tracking.md)
DEAD_BAND = 0.01  # of the frame's smaller side: a point this near a line is on neither side


def decode(video):
    """Yield the frames of VIDEO as HxWx3 uint8 arrays."""
    p = subprocess.Popen(["ffmpeg", "-v", "error", "-i", str(video), "-f", "rawvideo",
                          "-pix_fmt", "rgb24", "-"], stdout=subprocess.PIPE)
    size = W * H * 3
    try:
        while True:
            b = p.stdout.read(size)
            if len(b) < size:
                break
            yield np.frombuffer(b, np.uint8).reshape(H, W, 3)
    finally:
        p.stdout.close()
        if p.wait() != 0:
            sys.exit(f"trackclip: ffmpeg could not decode {video}")


def plate_and_sources(video):
    """The median plate, and the vtest frames the people are cut from."""
    want = {f for f, _ in PEOPLE.values()}
    kept, sources, n = [], {}, 0
    for i, f in enumerate(decode(video)):
        if i % PLATE_EVERY == 0:
            kept.append(f)
        if i in want:
            sources[i] = f
        n = i + 1
    if n != 795 or set(sources) != want:
        sys.exit(f"trackclip: {video} has {n} frames; vtest.avi has 795")
    return np.median(np.stack(kept), axis=0).astype(np.uint8), sources


def cut(frame, plate, box):
    """(patch RGB, alpha 0-1) of the person in BOX, both the box's size,
    trimmed to the mask's own bounds."""
    x1, y1, x2, y2 = box
    f = frame[y1:y2, x1:x2].astype(np.int16)
    p = plate[y1:y2, x1:x2].astype(np.int16)
    mask = np.abs(f - p).max(axis=2) > DIFF
    mask = ndimage.binary_closing(mask, np.ones((3, 3)), iterations=2)
    mask = ndimage.binary_opening(mask, np.ones((2, 2)))
    parts, n = ndimage.label(mask)
    if n == 0:
        sys.exit(f"trackclip: no person in box {box}")
    sizes = ndimage.sum(mask, parts, range(1, n + 1))
    mask = ndimage.binary_fill_holes(parts == 1 + int(np.argmax(sizes)))
    ys, xs = np.nonzero(mask)
    t = (slice(ys.min(), ys.max() + 1), slice(xs.min(), xs.max() + 1))
    # a soft edge, half opaque on the mask's border; cut to the mask's
    # bounds, so that the box of what is pasted is the person's
    alpha = ndimage.gaussian_filter(mask.astype(np.float32), FEATHER)
    return frame[y1:y2, x1:x2][t].copy(), alpha[t]


def position(path, frame):
    """(x centre, y feet) on PATH at FRAME, or None outside its frames."""
    if frame < path[0][0] or frame > path[-1][0]:
        return None
    for (f0, x0, y0), (f1, x1, y1) in zip(path, path[1:]):
        if f0 <= frame <= f1:
            u = (frame - f0) / (f1 - f0)
            return x0 + u * (x1 - x0), y0 + u * (y1 - y0)
    return None


def placements(patches):
    """Per frame, the people in it: (name, left, top) in whole pixels,
    farthest (highest feet) first so that nearer people are pasted over them."""
    out = []
    for i in range(FRAMES):
        here = []
        for name, path in SCENE.items():
            at = position(path, i)
            if at is None:
                continue
            h, w = patches[name][1].shape
            here.append((at[1], name, int(round(at[0] - w / 2)), int(round(at[1])) - h))
        out.append([(n, x, y) for _, n, x, y in sorted(here)])
    return out


def paste(canvas, rgb, alpha, left, top):
    h, w = alpha.shape
    x1, y1, x2, y2 = max(left, 0), max(top, 0), min(left + w, W), min(top + h, H)
    if x1 >= x2 or y1 >= y2:
        return
    a = alpha[y1 - top:y2 - top, x1 - left:x2 - left, None]
    src = rgb[y1 - top:y2 - top, x1 - left:x2 - left].astype(np.float32)
    canvas[y1:y2, x1:x2] = canvas[y1:y2, x1:x2] * (1 - a) + src * a


def truth_box(w, h, left, top):
    """The box cut to the frame, or None when less than INSIDE of it is in."""
    x1, y1, x2, y2 = max(left, 0), max(top, 0), min(left + w, W), min(top + h, H)
    if x2 <= x1 or y2 <= y1 or (x2 - x1) < INSIDE * w:
        return None
    return [x1, y1, x2, y2]


def inside(poly, x, y):
    """Even-odd rule: is (x, y) inside the polygon of (x, y) points."""
    n, hit = len(poly), False
    for i in range(n):
        (ax, ay), (bx, by) = poly[i], poly[(i + 1) % n]
        if (ay > y) != (by > y) and x < ax + (y - ay) * (bx - ax) / (by - ay):
            hit = not hit
    return hit


def points(coords, w=W, h=H):
    v = [float(c) for c in coords.split(",")]
    return [(v[i] * w, v[i + 1] * h) for i in range(0, len(v), 2)]


def expected_events(tracks, zones=ZONES, w=W, h=H):
    """Zone entries {zone: n} and line crossings {line: {"in": n, "out": n}}
    that the rules of docs/tracking.md give on TRACKS, {id: [(frame, box)]}
    in frame order: an object's reference point is its box's bottom centre;
    it enters a zone when a count, one up for each frame inside and one down
    for each frame outside, reaches the inertia; it crosses a line when the
    point passes through the segment from one side to the other, points
    nearer the line than 1 % of the frame's smaller side on neither side."""
    entries = {z: 0 for z in zones.get("zones", {})}
    crossings = {ln: {"in": 0, "out": 0} for ln in zones.get("lines", {})}
    band = DEAD_BAND * min(w, h)
    for seen in tracks.values():
        count = {z: 0 for z in entries}
        isin = {z: False for z in entries}
        side = {ln: 0 for ln in crossings}
        prev = {ln: None for ln in crossings}
        for _, b in seen:
            x, y = (b[0] + b[2]) / 2, b[3]
            for z, spec in zones.get("zones", {}).items():
                inertia = spec.get("inertia", INERTIA)
                if inside(points(spec["coordinates"], w, h), x, y):
                    count[z] = min(count[z] + 1, inertia)
                else:
                    count[z] = max(count[z] - 1, 0)
                if not isin[z] and count[z] >= inertia:
                    isin[z] = True
                    entries[z] += 1
                elif isin[z] and count[z] == 0:
                    isin[z] = False
            for ln, spec in zones.get("lines", {}).items():
                (ax, ay), (bx, by) = points(spec["coordinates"], w, h)
                length = ((bx - ax) ** 2 + (by - ay) ** 2) ** 0.5
                # signed distance from the line; < 0 on the left-hand side of
                # one walking from a to b on the image (y grows down): "in"
                d = ((bx - ax) * (y - ay) - (by - ay) * (x - ax)) / length
                s = 0 if abs(d) < band else (1 if d < 0 else -1)
                if s and side[ln] and s != side[ln]:
                    # through the segment, not around its end: where the
                    # step meets the line lies between a and b
                    (px, py), pd = prev[ln]
                    k = pd / (pd - d)
                    cx, cy = px + k * (x - px), py + k * (y - py)
                    u = ((cx - ax) * (bx - ax) + (cy - ay) * (by - ay)) / length ** 2
                    if 0 <= u <= 1:
                        crossings[ln]["in" if s == 1 else "out"] += 1
                if s:
                    side[ln], prev[ln] = s, ((x, y), d)
    return entries, crossings


def make(video, out, sheet=None):
    plate, sources = plate_and_sources(video)
    patches = {n: cut(sources[f], plate, b) for n, (f, b) in PEOPLE.items()}
    if sheet:
        write_sheet(sheet, patches)
    ids = {n: i + 1 for i, n in enumerate(SCENE)}
    frames, tracks = [], {}
    enc = subprocess.Popen(["ffmpeg", "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24",
                            "-s", f"{W}x{H}", "-r", str(FPS), "-i", "-", "-c:v", "mjpeg",
                            "-q:v", "2", "-threads", "1", "-pix_fmt", "yuvj420p",
                            str(out / "trackclip.avi")], stdin=subprocess.PIPE)
    for i, here in enumerate(placements(patches)):
        canvas = plate.astype(np.float32)
        objs = []
        for name, left, top in here:
            rgb, alpha = patches[name]
            paste(canvas, rgb, alpha, left, top)
            box = truth_box(alpha.shape[1], alpha.shape[0], left, top)
            if box:
                objs.append({"id": ids[name], "name": name, "box": box})
                tracks.setdefault(ids[name], []).append((i, box))
        frames.append({"frame": i, "objects": sorted(objs, key=lambda o: o["id"])})
        enc.stdin.write(np.clip(canvas + 0.5, 0, 255).astype(np.uint8).tobytes())
    enc.stdin.close()
    if enc.wait() != 0:
        sys.exit("trackclip: ffmpeg could not write the clip")
    entries, crossings = expected_events(tracks)
    truth = {"what": "tools/trackclip.py: people cut from vtest.avi on its median plate",
             "width": W, "height": H, "fps": FPS, "label": "Person",
             "people": {n: {"id": ids[n], "from": {"frame": PEOPLE[n][0], "box": PEOPLE[n][1]},
                            "path": SCENE[n]} for n in SCENE},
             "zones": ZONES, "zone_entries": entries, "line_crossings": crossings, "frames": frames}
    (out / "trackclip.json").write_text(json.dumps(truth, indent=None) + "\n")
    (out / "zones.json").write_text(json.dumps(ZONES, indent=2) + "\n")
    return truth


def write_sheet(path, patches):
    """The cut people side by side on white, to check the masks by eye."""
    from PIL import Image
    wide = sum(a.shape[1] + 8 for _, a in patches.values())
    tall = max(a.shape[0] for _, a in patches.values())
    img = np.full((tall, wide, 3), 255.0, np.float32)
    x = 0
    for rgb, a in patches.values():
        h, w = a.shape
        img[:h, x:x + w] = img[:h, x:x + w] * (1 - a[..., None]) + rgb * a[..., None]
        x += w + 8
    Image.fromarray(img.astype(np.uint8)).save(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--video", type=Path, required=True, help="vtest.avi")
    ap.add_argument("--out", type=Path, required=True, help="folder to write into")
    ap.add_argument("--sheet", type=Path, help="also write the cut people to this PNG")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    t = make(a.video, a.out, a.sheet)
    n = sum(len(f["objects"]) for f in t["frames"])
    print(f"trackclip: {FRAMES} frames, {len(t['people'])} people, {n} boxes; "
          f"zone entries {t['zone_entries']}, line crossings {t['line_crossings']}")


if __name__ == "__main__":
    main()
