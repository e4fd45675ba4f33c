#!/usr/bin/env python3
"""What `make demo` found, in a few lines: osprey detect --track's JSON
lines (frame records, event records, crossings) read back and counted.

    scripts/demo-summary.py out/vtest.jsonl out/snapshots
"""
import collections
import json
import sys
from pathlib import Path


def main():
    path, snaps = Path(sys.argv[1]), Path(sys.argv[2])
    frames, objects, crossings = 0, collections.Counter(), collections.Counter()
    with path.open() as f:
        for line in f:
            rec = json.loads(line)
            kind = rec.get("kind")
            if kind == "detections":
                frames += 1
            elif kind == "event" and rec["type"] == "new":
                objects[rec["after"]["label"]] += 1
            elif kind == "event" and rec["type"] == "end" and rec["after"]["false_positive"]:
                objects[rec["after"]["label"]] -= 1
            elif kind == "crossing":
                crossings[(rec["line"], rec["direction"])] += 1
    print(f"{path}: {frames} frames, one JSON line each, with the objects' events and the line's crossings between them")
    people = objects.pop("Person", 0)
    others = ", ".join(f"{n} {label}" for label, n in objects.most_common() if n > 0)
    print(f"people who walked through: {people} (tracked objects reported)" + (f"; also {others}" if others else ""))
    for line in sorted({name for name, _ in crossings}):
        print(f"line {line}: {crossings[(line, 'in')]} crossed in, {crossings[(line, 'out')]} out")
    n = len(list(snaps.glob("*.jpg")))
    print(f"snapshots: {n} in {snaps}/, the best picture of each object, named by its event id")


if __name__ == "__main__":
    main()
