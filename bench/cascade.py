#!/usr/bin/env python3
"""A cascade in ospreyd against the host doing it itself (docs/cascades.md).

    make bench-cascade      # or: bench/cascade.py --bin build/bin [--frames 20] [--runs 5]

Two chains, each on a photo the set-up fetches:

  faces  ultraface, then face-embed on each face (basketball1.png: two
         players);
  car    ssd-oidv4-int8, then ocr-det inside each car, then ocr-rec on each
         text box it finds: the plate chain (docs/cascades.md, Plates) on
         licenseplate_restored.png, the set-up's plate photo with its
         motion blur undone.

For each, a frame is answered two ways, on one ospreyd over its pipes:

  cascade  one infer_jpeg to the model with the step in its config
           ("then"): the server crops each detection from the frame it
           decoded and runs the step; one reply;
  host     what a host does without cascades: infer_jpeg to the first
           model alone, then for each box it crops its own decoded copy of
           the frame (the step's crop: the square around a face grown by
           0.2; a car's box grown by 0.2 of its longer side; a text box
           as it stands), JPEG-encodes the crop (PIL, quality 90), sends
           it to the step's model alone and waits; a step after a
           detector (ocr-rec after ocr-det) takes, in turn, each box of
           that step's answer, moved back into the frame.

Per frame: latency (from sending the frame to the last answer it needs),
p50 and p99 over --frames frames; CPU, the server's (utime + stime from
/proc/PID/stat) and this process's (os.times), per frame. Runs alternate
cascade and host, --runs of each; each figure is the median over runs.
ratio = host / cascade (above 1: the cascade costs less). The machine is
shared: read the ratios and the load average printed with them, never an
absolute figure; nothing here is asserted on time.

A step whose model takes any batch (face-embed) runs a frame's crops in
one run; --step-batch 1 runs them one at a time, as before. --tile N
sends each photo tiled N x N, for more objects a frame.

A frame that runs alone in ospreyd runs on every core (loneFrameThreads,
docs/protocol.md), and so does each of the host's crops; a cascade's
steps run on the frame's own worker thread. --lone-frame-threads 0 puts
every run on its worker's threads, to see the cascade's gain without
that difference.
"""
import argparse
import io
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
if "--bin" in sys.argv[:-1]:  # the e2e helpers read it when imported
    os.environ["OSPREY_BIN"] = str(Path(sys.argv[sys.argv.index("--bin") + 1]).resolve())

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

from ospreyd_client import Worker  # noqa: E402

CACHE = Path(os.environ.get("OSPREY_CACHE", Path.home() / ".cache" / "osprey"))
MARGIN = 0.2  # a step's default margin (docs/cascades.md, The crops)
TICK = os.sysconf("SC_CLK_TCK")

# name: (photo, the models in order, the first step's labels, each step's crop)
CHAINS = {
    "faces": ("basketball1.png", ["ultraface", "face-embed"], None, ["square"]),
    "car": ("licenseplate_restored.png", ["ssd-oidv4-int8", "ocr-det", "ocr-rec"], ["Car"],
            ["grown", "box"]),
}


def server_cpu(pid):
    """utime + stime of the process so far, seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def client_cpu():
    t = os.times()
    return t.user + t.system


def crop(rgb, box, how):
    """The host's crop of box from its decoded frame: the square around
    it grown by MARGIN (a face for an embedder), the box grown by MARGIN
    of its longer side (for a detector), or the box itself; and the
    crop's top-left corner in the frame."""
    h, w = rgb.shape[:2]
    x1, y1, x2, y2 = box
    if how == "square":
        side = max(x2 - x1, y2 - y1) * (1 + MARGIN)
        cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
        x1, y1, x2, y2 = cx - side / 2, cy - side / 2, cx + side / 2, cy + side / 2
    elif how == "grown":
        grow = max(x2 - x1, y2 - y1) * MARGIN / 2
        x1, y1, x2, y2 = x1 - grow, y1 - grow, x2 + grow, y2 + grow
    x1, y1 = max(0, int(round(x1))), max(0, int(round(y1)))
    x2, y2 = min(w, int(round(x2))), min(h, int(round(y2)))
    return rgb[y1:max(y2, y1 + 1), x1:max(x2, x1 + 1)], (x1, y1)


def texts(dets, key):
    """Every text read in dets and inside them (a step after a detector):
    the cascade's fields on each detection, or (key "step") the host's
    answers kept under that key."""
    out = []
    for d in dets:
        r = d.get(key, {}) if key else d
        if r.get("text"):
            out.append(r["text"])
        out += texts(r.get("detections", []) if key else r.get("objects", []), key)
    return out


def jpeg_of(pixels):
    out = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(pixels)).save(out, "JPEG", quality=90)
    return out.getvalue()


class Chain:
    """One chain's models on the worker: the cascade, the first model
    alone and each step's model alone."""

    def __init__(self, name, base, step_batch=None, tile=1):
        self.name = name
        photo, models, labels, self.hows = CHAINS[name]
        self.first, self.steps = models[0], models[1:]
        path = CACHE / "media" / photo
        if tile > 1:  # the photo tiled tile x tile: more objects a frame
            rgb = np.asarray(Image.open(path).convert("RGB"))
            self.jpeg = jpeg_of(np.concatenate([np.concatenate([rgb] * tile, axis=1)] * tile))
        else:
            self.jpeg = path.read_bytes() if photo.endswith(".jpg") else jpeg_of(
                np.asarray(Image.open(path).convert("RGB")))
        self.rgb = np.asarray(Image.open(io.BytesIO(self.jpeg)).convert("RGB"))
        step = None
        for m in reversed(self.steps):  # nested: each step inside the one before
            step = dict({"model": m}, **({"then": [step]} if step else {}))
            if step_batch is not None:
                step["batch"] = step_batch
        if labels:
            step["labels"] = labels
        self.labels = labels
        self.configs = ([{"model": self.first, "then": [step]}, {"model": self.first}] +
                        [{"model": m} for m in self.steps])
        self.cascade, self.alone = base, base + 1
        self.stepm = list(range(base + 2, base + 2 + len(self.steps)))

    def by_cascade(self, c):
        rec = c.infer_jpeg(self.cascade, self.jpeg)
        if "error" in rec:
            raise SystemExit(f"bench/cascade: {self.name}: {rec['error']}")
        return rec["detections"]

    def by_host(self, c):
        rec = c.infer_jpeg(self.alone, self.jpeg)
        if "error" in rec:
            raise SystemExit(f"bench/cascade: {self.name}: {rec['error']}")
        dets = rec["detections"]
        self.host_steps(c, [d for d in dets if not self.labels or d["label"] in self.labels], 0)
        return dets

    def host_steps(self, c, dets, k):
        """Step k on each of dets (boxes in frame pixels), and the steps
        after it on each box it finds."""
        for d in dets:
            pixels, (x0, y0) = crop(self.rgb, d["box"], self.hows[k])
            r = c.infer_jpeg(self.stepm[k], jpeg_of(pixels))
            if "error" in r:
                raise SystemExit(f"bench/cascade: {self.name} step {self.steps[k]}: {r['error']}")
            d["step"] = r
            if k + 1 < len(self.steps):
                inner = r.get("detections", [])
                for e in inner:
                    x1, y1, x2, y2 = e["box"]
                    e["box"] = [x1 + x0, y1 + y0, x2 + x0, y2 + y0]
                self.host_steps(c, inner, k + 1)


    def same(self, got, host):
        """The two ways' answers side by side: a face's embeddings' cosine,
        a car's texts (the host's crop is its own, so they are near, not equal)."""
        out = []
        for d, e in zip(got, host):
            if "step" not in e:
                continue
            if "embedding" in d:
                a, b = np.array(d["embedding"]), np.array(e["step"]["embedding"])
                out.append(f"cosine {float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)):.3f}")
            else:
                out.append(f"texts {texts([d], None)} / {texts([e], 'step')}")
        return ", ".join(out) or "no step ran"


def measure(w, fn, frames):
    """fn run frames times back to back: latencies (ms), server and client
    CPU per frame (ms)."""
    lat = []
    s0, c0 = server_cpu(w.proc.pid), client_cpu()
    for _ in range(frames):
        t = time.perf_counter()
        fn(w.conn)
        lat.append((time.perf_counter() - t) * 1000)
    s1, c1 = server_cpu(w.proc.pid), client_cpu()
    return lat, (s1 - s0) * 1000 / frames, (c1 - c0) * 1000 / frames


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--frames", type=int, default=20)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--chains", default="faces,car")
    ap.add_argument("--lone-frame-threads", type=int, default=None,
                    help="the server's loneFrameThreads (default: its own, the cores); 0: every "
                         "run on its worker's threads, as a cascade's steps run")
    ap.add_argument("--step-batch", type=int, default=None,
                    help="the step's \"batch\" (default: its own, every crop of a frame in one run "
                         "when its model allows); 1: one crop a run")
    ap.add_argument("--tile", type=int, default=1,
                    help="send each chain's photo tiled N x N (more objects a frame)")
    a = ap.parse_args()
    chains, base = [], 0
    for n in a.chains.split(","):
        chains.append(Chain(n, base, a.step_batch, a.tile))
        base += len(chains[-1].configs)
    w = Worker(())
    try:
        models = [cfg for ch in chains for cfg in ch.configs]
        hello = {"runtime": "onnxruntime", "concurrency": 2, "models": models}
        if a.lone_frame_threads is not None:
            hello["loneFrameThreads"] = a.lone_frame_threads
        ready = w.conn.hello(hello)
        if ready.get("status") != "ready" or ready.get("models") != len(models):
            raise SystemExit(f"bench/cascade: ospreyd not ready: {ready}\n{w.describe()}")
        lone = a.lone_frame_threads
        if lone is None:
            lone = f"{os.cpu_count()} (the cores)"
        print(f"bench/cascade: {a.frames} frames a run, median of {a.runs} runs; "
              f"loneFrameThreads {lone}; step batch {a.step_batch or 'default'}; tile {a.tile}; "
              f"load average {os.getloadavg()[0]:.2f} at the start")
        for ch in chains:
            got = ch.by_cascade(w.conn)
            host = ch.by_host(w.conn)
            taken = [d for d in got if len(d) > 4]
            print(f"  {ch.name}: {' -> '.join([ch.first, *ch.steps])}: {len(got)} detections, "
                  f"{len(taken)} with the step's fields (host: {sum('step' in d for d in host)}); "
                  f"{ch.same(got, host)}")
            for _ in range(2):  # warm both ways
                ch.by_cascade(w.conn)
                ch.by_host(w.conn)
            runs = {"cascade": [], "host": []}
            for _ in range(a.runs):
                for how, fn in (("cascade", ch.by_cascade), ("host", ch.by_host)):
                    runs[how].append(measure(w, fn, a.frames))
            med = {}
            for how, rs in runs.items():
                med[how] = (statistics.median(pct(r[0], 50) for r in rs),
                            statistics.median(pct(r[0], 99) for r in rs),
                            statistics.median(r[1] for r in rs),
                            statistics.median(r[2] for r in rs),
                            statistics.median(r[1] + r[2] for r in rs))
                p50, p99, srv, cli, cpu = med[how]
                print(f"    {how:8s} p50 {p50:7.1f} ms  p99 {p99:7.1f} ms  CPU/frame "
                      f"{cpu:7.1f} ms (server {srv:7.1f}, client {cli:6.1f})")
            h, c = med["host"], med["cascade"]
            print(f"    ratio host/cascade: p50 {h[0] / c[0]:.2f}x  p99 {h[1] / c[1]:.2f}x  "
                  f"CPU {h[4] / c[4]:.2f}x  (load average {os.getloadavg()[0]:.2f})")
        w.close_stdin()
        w.wait(60)
    finally:
        w.kill()


if __name__ == "__main__":
    main()
