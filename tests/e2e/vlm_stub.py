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

Each record also has "inflight": the requests the stub was serving when this
one arrived, itself included (a request leaves that count just before its
reply is written, so a client that waits for replies never sees more than
it allowed), and "auth": whether the Authorization header was
"Bearer <the --api-key-file's key>" (null without --api-key-file). A request
without the right key is answered 401 and gets no reply content.

--tls-cert/--tls-key serve HTTPS (the handshake in the request's thread).
--chunked sends each reply with Transfer-Encoding: chunked, in pieces.
--redirect CODE answers a POST to any path not under /moved with CODE and
Location: /moved<path>; that leg is logged as {"redirect": path, "code": CODE}
and not counted as an arrival.

Run: python3 vlm_stub.py --log FILE [--replies F] [--delays ...]; it prints
"PORT <n>" on its first stdout line.
"""
import argparse
import base64
import json
import select
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--replies")
    ap.add_argument("--delays", default="0")
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--api-key-file")
    ap.add_argument("--chunked", action="store_true")
    ap.add_argument("--redirect", type=int)
    args = ap.parse_args()
    key = None
    if args.api_key_file:
        with open(args.api_key_file) as f:
            key = f.readline().rstrip("\r\n")
    replies = []
    if args.replies:
        with open(args.replies) as f:
            replies = [l.rstrip("\n") for l in f]
    delays = [float(x) for x in args.delays.split(",") if x.strip()] or [0.0]
    lock = threading.Lock()
    state = {"n": 0, "chunks": 0, "inflight": 0}

    def log(rec):
        with lock, open(args.log, "a") as f:
            f.write(json.dumps(rec) + "\n")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def setup(self):
            if args.tls_cert:
                self.request.do_handshake()
            super().setup()

        def client_left(self):
            r, _, _ = select.select([self.connection], [], [], 0.02)
            if not r:
                return False
            if args.tls_cert:  # only a close (or its TLS alert) arrives mid-request
                return True
            return not self.connection.recv(1, 0x2)  # MSG_PEEK: EOF = client left

        def reply(self, code, out, headers=()):
            self.send_response(code)
            for k, v in headers:
                self.send_header(k, v)
            if args.chunked and out:
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                step = max(1, len(out) // 3)
                for i in range(0, len(out), step):
                    piece = out[i:i + step]
                    self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            else:
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        def do_POST(self):
            with lock:
                state["inflight"] += 1
                inflight = state["inflight"]
            try:
                self.serve_post(inflight)
            finally:
                with lock:
                    if not getattr(self, "left", False):
                        state["inflight"] -= 1

        def leave(self):
            with lock:
                state["inflight"] -= 1
            self.left = True

        def serve_post(self, inflight):
            n = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(n)
            if args.redirect and not self.path.startswith("/moved"):
                log({"redirect": self.path, "code": args.redirect, "t": time.time()})
                self.leave()
                self.reply(args.redirect, b"", [("Location", "/moved" + self.path)])
                return
            auth = None
            if key is not None:
                auth = self.headers.get("Authorization") == f"Bearer {key}"
            body = json.loads(raw)
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
                 "arrival": chunk, "inflight": inflight, "auth": auth,
                 "model": body.get("model"),
                 "max_tokens": body.get("max_tokens"),
                 "temperature": body.get("temperature"), "system": system,
                 "prompt": texts, "images": len(images), "jpeg_ok": jpeg_ok})
            if auth is False:
                self.leave()
                self.reply(401, b'{"error": {"message": "invalid API key"}}',
                           [("Content-Type", "application/json")])
                return
            if chunk >= 0:
                delay = delays[min(chunk, len(delays) - 1)]
                end = time.time() + delay
                while time.time() < end:
                    if self.client_left():
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
            self.leave()
            self.reply(200, out, [("Content-Type", "application/json")])

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request, client_address):
            pass  # a client that rejects the certificate, or leaves: nothing to print

    srv = Server(("127.0.0.1", 0), Handler)
    if args.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls_cert, args.tls_key)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True, do_handshake_on_connect=False)
    print(f"PORT {srv.server_address[1]}", flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
