"""A TEST DOUBLE for a vision-language model server: a tiny OpenAI-compatible
chat-completions endpoint (POST /v1/chat/completions) for the osprey segment
tests, since no VLM weights can run here. It understands nothing: it records
what each request carried and answers in the OpenAI response format.

Each request is appended to --log as one JSON line: arrival index and time,
path, model, max_tokens, temperature, the system and user prompts, and for
the images their count and whether each decodes as a JPEG data URL. When
the client hangs up before the reply (an abort), a line {"aborted": index,
"t": time} is added.

Replies: the content is the --replies file's line for this arrival
(warm-up excluded), else "frames=N prompt=<first 40 chars>". --delays
"s0,s1,..." delays the reply to the i-th request (warm-up excluded) by s_i
seconds (the last value repeats); the delay ends early if the client leaves.

Run: python3 vlm_stub.py --log FILE [--replies F] [--delays ...]; it prints
"PORT <n>" on its first stdout line.
"""
import argparse
import base64
import json
import select
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--replies")
    ap.add_argument("--delays", default="0")
    args = ap.parse_args()
    replies = []
    if args.replies:
        with open(args.replies) as f:
            replies = [l.rstrip("\n") for l in f]
    delays = [float(x) for x in args.delays.split(",") if x.strip()] or [0.0]
    lock = threading.Lock()
    state = {"n": 0, "chunks": 0}

    def log(rec):
        with lock, open(args.log, "a") as f:
            f.write(json.dumps(rec) + "\n")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_POST(self):
            n = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(n))
            msgs = body.get("messages", [])
            system = [m["content"] for m in msgs if m.get("role") == "system"]
            user = [m for m in msgs if m.get("role") == "user"]
            parts = user[0]["content"] if user else []
            texts = [p["text"] for p in parts if p.get("type") == "text"]
            images = [p["image_url"]["url"] for p in parts if p.get("type") == "image_url"]
            jpeg_ok = []
            for u in images:
                ok = u.startswith("data:image/jpeg;base64,")
                if ok:
                    raw = base64.b64decode(u.split(",", 1)[1])
                    ok = raw[:2] == b"\xff\xd8" and raw[-2:] == b"\xff\xd9"
                jpeg_ok.append(ok)
            warm = texts == ["Say Hi"]
            with lock:
                idx = state["n"]
                state["n"] += 1
                chunk = -1
                if not warm:
                    chunk = state["chunks"]
                    state["chunks"] += 1
            log({"index": idx, "t": time.time(), "path": self.path, "warmup": warm,
                 "arrival": chunk, "model": body.get("model"),
                 "max_tokens": body.get("max_tokens"),
                 "temperature": body.get("temperature"), "system": system,
                 "prompt": texts, "images": len(images), "jpeg_ok": jpeg_ok})
            if chunk >= 0:
                delay = delays[min(chunk, len(delays) - 1)]
                end = time.time() + delay
                while time.time() < end:
                    r, _, _ = select.select([self.connection], [], [], 0.02)
                    if r and not self.connection.recv(1, 0x2):  # MSG_PEEK: EOF = client left
                        log({"aborted": idx, "t": time.time()})
                        self.close_connection = True
                        return
            if chunk >= 0 and chunk < len(replies):
                content = replies[chunk]
            else:
                content = f"frames={len(images)} prompt={(texts[0] if texts else '')[:40]}"
            out = json.dumps({
                "id": f"chatcmpl-{idx}", "object": "chat.completion", "created": int(time.time()),
                "model": body.get("model"),
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    print(f"PORT {srv.server_address[1]}", flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
