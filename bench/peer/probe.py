#!/usr/bin/python3
"""One frame through a pool worker: the detections it answers.

    probe.py SERVER MODEL_CONFIG_JSON IMAGE

SERVER is run without arguments and spoken to on its stdin/stdout (ospreyd,
or bench/peer/worker.sh for the Python worker); MODEL_CONFIG_JSON is one
model config of the protocol (loadgen --explicit-config --print-config
prints osprey's); IMAGE is sent as infer_jpeg. Prints one line per
detection, or the error. Exit status 0 when the reply is a result.
"""

import json
import struct
import subprocess
import sys


def frame(req_id, msg_type, payload):
    return struct.pack("<IIB", 5 + len(payload), req_id, msg_type) + payload


def reply(stream):
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError("the server closed its stdout")
    total, req_id = struct.unpack("<II", head)
    return req_id, json.loads(stream.read(total - 4))


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    server, model_cfg, image = sys.argv[1:]
    with open(image, "rb") as f:
        jpeg = f.read()
    config = {"runtime": "onnxruntime", "concurrency": 1, "models": [json.loads(model_cfg)]}
    proc = subprocess.Popen([server], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    try:
        proc.stdin.write(frame(0, 0, json.dumps(config).encode()))
        proc.stdin.flush()
        _, ready = reply(proc.stdout)
        if ready.get("status") != "ready" or not ready.get("models"):
            print(f"not ready: {ready}")
            return 1
        proc.stdin.write(frame(1, 1, b"\x00" + jpeg))
        proc.stdin.flush()
        _, result = reply(proc.stdout)
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    if "error" in result:
        print(f"error: {result['error']}")
        return 1
    for d in result.get("detections", []):
        print(f"{d.get('label')} {d.get('score'):.3f} {d.get('box')}")
    if not result.get("detections"):
        print("(no detections)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
