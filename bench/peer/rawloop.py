"""The raw run loop of MEASURING.md for the Python side's ONNX Runtime.

    rawloop.py MODEL_PATH SECONDS

The runtime on a pre-made input, nothing around it, for SECONDS after a
warm-up, in the two configurations the limit takes the best of: one session
with the runtime's default intra-op threads, and one single-thread session
per core, each run from its own Python thread (run() releases the GIL).
Prints one JSON line: {"one": fps, "many": fps, "limit": best, "version": …}.
Run inside the tree bench/peer/setup.sh built (bench/peer/worker.sh
rawloop.py …), so it measures the runtime the Python worker gets.
"""

import json
import os
import sys
import threading
import time

import numpy as np
import onnxruntime as ort


def make_input(session):
    inp = session.get_inputs()[0]
    shape = [d if isinstance(d, int) and d > 0 else 1 for d in inp.shape]
    rng = np.random.default_rng(0)  # picture-like values, not zeros
    if inp.type == "tensor(uint8)":
        return {inp.name: rng.integers(0, 256, size=shape, dtype=np.uint8)}
    return {inp.name: rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)}


def run_for(session, feed, seconds, counts, slot):
    for _ in range(3):
        session.run(None, feed)
    n = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        session.run(None, feed)
        n += 1
    counts[slot] = n


def measure(sessions, seconds):
    feed = make_input(sessions[0])
    counts = [0] * len(sessions)
    threads = [threading.Thread(target=run_for, args=(s, feed, seconds, counts, i))
               for i, s in enumerate(sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / seconds


def main():
    path, seconds = sys.argv[1], float(sys.argv[2])
    cores = max(1, min(8, len(os.sched_getaffinity(0))))
    providers = ["CPUExecutionProvider"]
    one = measure([ort.InferenceSession(path, providers=providers)], seconds)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    many = measure([ort.InferenceSession(path, opts, providers=providers) for _ in range(cores)], seconds)
    print(json.dumps({"one": round(one, 1), "many": round(many, 1), "limit": round(max(one, many), 1),
                      "cores": cores, "version": ort.__version__}))


if __name__ == "__main__":
    main()
