#!/usr/bin/env python3
"""The soak: a long mixed run of ospreyd with model churn, watching memory.

    bench/soak.py --ospreyd build/bin/ospreyd [--requests 1000000] [--preload LIB]

One ospreyd serves three models on a Unix socket (ultraface, blazeface,
face-liveness from the asset cache). --clients connections keep
--inflight requests each in flight, closed loop, mixing small raw frames,
JPEG, frames with deadlines too short to meet, infer_batch, status
commands, frames for an index never loaded and payloads that do not
parse. A churn connection changes the models every --churn-s seconds in
turn: replace slot 0 (ultraface and its int8 variant alternately),
unload slot 1, load it again, replace slot 2 (face-liveness and
face-embed alternately) — so frames also meet a slot that is empty.

Every second the server's resident set, threads and open descriptors are
read from /proc; every --report-s and at the end a line is printed. When
the clients stop, every request must have had its one reply, and the
server's mem_stats "requests" must equal what the clients saw: received =
the inference requests sent, served, shed by reason and errors by kind as
the replies said, received = served + shed + errors. The exit status is 1
when either fails. Memory is a figure, not a check: the ratio of the
resident set at the end to the one at 10 % of the run is printed, and the
ratio of the medians of the samples near 10 % (7.5-12.5 %) and of the
last 5 %, against the target (1.05).

The last line is a JSON record of the run (--json-out writes it to a file
too). The allocator named is the one ospreyd runs with: jemalloc when it
is linked with it (the default build) or preloaded (--preload
/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 on a build without it),
glibc's otherwise.
"""
import argparse
import json
import os
import random
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

MSG_COMMAND, MSG_JPEG, MSG_RAW, MSG_BATCH = 0, 1, 2, 3
NEVER = 3  # a slot no model is loaded at
TARGET = 1.05
KINDS = ("badRequest", "notLoaded", "notCached", "failed", "noMemory", "timedOut", "reloading")

# slot -> the models the churn alternates between
SLOTS = {0: ({"model": "ultraface"}, {"model": "ultraface-int8"}),
         1: ({"model": "blazeface"},),
         2: ({"model": "face-liveness"}, {"model": "face-embed"})}


def frame(req_id, msg_type, payload):
    return struct.pack("<IIB", 5 + len(payload), req_id, msg_type) + payload


class Conn:
    """One socket connection: writes frames, reads replies in order of arrival."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.rfile = self.sock.makefile("rb", buffering=1 << 16)
        self.next_id = 1

    def send(self, msg_type, payload):
        rid = self.next_id
        self.next_id += 1
        self.sock.sendall(frame(rid, msg_type, payload))
        return rid

    def read(self):
        head = self.rfile.read(8)
        if len(head) < 8:
            raise EOFError("ospreyd closed the connection")
        n, rid = struct.unpack("<II", head)
        body = self.rfile.read(n - 4)
        if len(body) < n - 4:
            raise EOFError("ospreyd closed the connection")
        return rid, json.loads(body)

    def call(self, cmd):
        rid = self.send(MSG_COMMAND, json.dumps(cmd).encode())
        got, rec = self.read()
        while got != rid:  # only the unsolicited event can come between
            got, rec = self.read()
        return rec

    def close(self):
        self.sock.close()


def outcome(rec):
    """'served', 'shed:<reason>' or 'error' for an inference reply."""
    if "error" in rec:
        return "error"
    items = rec["results"] if "results" in rec and "kind" not in rec else [rec]
    if items and all(i.get("dropped") for i in items):
        return "shed:" + items[0]["shedReason"]
    return "served"


class Client(threading.Thread):
    """A closed loop of `inflight` requests on its own connection."""

    def __init__(self, path, seed, inflight, budget, pixels, jpeg):
        super().__init__(daemon=True)
        self.conn = Conn(path)
        self.rng = random.Random(seed)
        self.inflight, self.budget = inflight, budget
        self.pixels, self.jpeg = pixels, jpeg
        self.pending = {}  # req_id -> expected error kind, None, or "command"
        self.sent = self.commands = 0
        self.seen = {}  # outcome -> count; errors as "error:<kind>"
        self.failure = None
        self.lock = threading.Lock()

    def hello(self):
        self.conn.send(MSG_COMMAND, json.dumps({"protocolVersion": 2}).encode())
        _, rec = self.conn.read()
        if rec.get("status") != "ready":
            raise RuntimeError(f"handshake refused: {rec}")

    def one(self):
        """Send one request of the mix; returns (msg_type, payload, expected kind)."""
        r = self.rng.random()
        idx = self.rng.randrange(3)
        w, h, px = self.pixels
        dl = struct.pack("<Q", 0)
        raw = struct.pack("<BIIB", idx, w, h, 0) + px
        if r < 0.55:
            return MSG_RAW, dl + raw, None
        if r < 0.70:
            return MSG_JPEG, dl + bytes([idx]) + self.jpeg, None
        if r < 0.80:  # a deadline 0-3 ms away: some are met, some expire
            soon = int(time.time() * 1000) + self.rng.randrange(4)
            return MSG_RAW, struct.pack("<Q", soon) + raw, None
        if r < 0.85:
            item = struct.pack("<IIBI", w, h, 0, len(px)) + px
            return MSG_BATCH, dl + struct.pack("<BBI", idx, 2, 0) + item * 2, None
        if r < 0.90:
            return MSG_COMMAND, json.dumps({"cmd": "status"}).encode(), "command"
        if r < 0.96:
            return MSG_RAW, dl + struct.pack("<BIIB", NEVER, w, h, 0) + px, "notLoaded"
        return MSG_RAW, dl + struct.pack("<BI", idx, w), "badRequest"  # truncated header

    def fill(self):
        while len(self.pending) < self.inflight and self.sent + self.commands < self.budget:
            msg_type, payload, expect = self.one()
            rid = self.conn.send(msg_type, payload)
            self.pending[rid] = expect
            if expect == "command":
                self.commands += 1
            else:
                self.sent += 1

    def count(self, key):
        with self.lock:
            self.seen[key] = self.seen.get(key, 0) + 1

    def run(self):
        try:
            self.fill()
            while self.pending:
                rid, rec = self.conn.read()
                if rid not in self.pending:
                    if rid != 0xFFFFFFFF:
                        raise RuntimeError(f"reply to req {rid}, not asked or answered twice")
                    continue
                expect = self.pending.pop(rid)
                if expect == "command":
                    if rec.get("cmd") != "status":
                        raise RuntimeError(f"status answered with {rec}")
                    self.count("command")
                else:
                    o = outcome(rec)
                    if o == "error":
                        o = "error:" + (expect or error_kind(rec))
                    elif expect is not None:
                        raise RuntimeError(f"expected {expect}, got {rec}")
                    self.count(o)
                self.fill()
        except Exception as e:  # noqa: BLE001  reported, and the run fails
            self.failure = f"{type(e).__name__}: {e}"

    def answered(self):
        with self.lock:
            return sum(self.seen.values())


def error_kind(rec):
    """The ledger's kind for an error reply to a request meant to succeed."""
    text = rec["error"]
    if "not loaded" in text:
        return "notLoaded"  # its slot was emptied by the churn
    return "failed"


def proc_sample(pid):
    """(rss_kb, threads, fds) of pid, from /proc."""
    rss = threads = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
    return rss, threads, len(os.listdir(f"/proc/{pid}/fd"))


def churn_ops():
    """The model changes, in turn, forever."""
    turn = 0
    while True:
        other = (turn + 1) % 2
        yield {"cmd": "replace", "index": 0, "config": SLOTS[0][other]}
        yield {"cmd": "unload", "index": 1}
        yield {"cmd": "load", "index": 1, "config": SLOTS[1][0]}
        yield {"cmd": "replace", "index": 2, "config": SLOTS[2][other]}
        turn += 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ospreyd", required=True)
    ap.add_argument("--requests", type=int, default=int(os.environ.get("SOAK_REQUESTS", 1000000)),
                    help="requests sent in all, commands of the mix included (SOAK_REQUESTS)")
    ap.add_argument("--clients", type=int, default=3)
    ap.add_argument("--inflight", type=int, default=2, help="requests in flight per client")
    ap.add_argument("--churn-s", type=float, default=10.0)
    ap.add_argument("--report-s", type=float, default=60.0)
    ap.add_argument("--frame", default="96x72", help="raw frame size WxH")
    ap.add_argument("--preload", help="a library to preload into ospreyd (LD_PRELOAD), e.g. an allocator")
    ap.add_argument("--cache", default=os.environ.get("OSPREY_CACHE", str(Path.home() / ".cache" / "osprey")))
    ap.add_argument("--json-out")
    a = ap.parse_args()

    cache = Path(a.cache)
    jpeg = (cache / "media" / "messi5.jpg").read_bytes()
    w, h = (int(v) for v in a.frame.split("x"))
    px = bytes((x * 7 + y * 3) & 255 for y in range(h) for x in range(w) for _ in range(3))
    work = Path(tempfile.mkdtemp(prefix="osprey-soak-"))
    sock = work / "ospreyd.sock"
    cfg = work / "config.json"
    cfg.write_text(json.dumps({"runtime": "onnxruntime", "concurrency": 2,
                               "models": [SLOTS[0][0], SLOTS[1][0], SLOTS[2][0]]}))
    env = dict(os.environ)
    if a.preload:
        env["LD_PRELOAD"] = a.preload
    log = open(work / "ospreyd.log", "wb")
    srv = subprocess.Popen([a.ospreyd, "--listen", f"unix:{sock}", "--config", str(cfg)],
                           stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env)
    try:
        return soak(a, srv, sock, (w, h, px), jpeg, work)
    finally:
        srv.terminate()
        try:
            srv.wait(30)
        except subprocess.TimeoutExpired:
            srv.kill()


def soak(a, srv, sock, pixels, jpeg, work):
    end = time.monotonic() + 120
    while not sock.exists():
        if srv.poll() is not None or time.monotonic() > end:
            sys.exit(f"soak: ospreyd did not start; see {work / 'ospreyd.log'}")
        time.sleep(0.05)
    with open(f"/proc/{srv.pid}/maps") as f:
        a.allocator = "jemalloc" if "libjemalloc" in f.read() else "glibc"
    ctl = Conn(str(sock))
    ctl.send(MSG_COMMAND, json.dumps({}).encode())
    ctl.read()
    per = a.requests // a.clients
    clients = [Client(str(sock), 1000 + i, a.inflight, per + (i < a.requests % a.clients), pixels, jpeg)
               for i in range(a.clients)]
    for c in clients:
        c.hello()
    rss0, thr0, fd0 = proc_sample(srv.pid)
    print(f"soak: ospreyd pid {srv.pid} ({a.allocator}), {a.requests} requests, {a.clients} clients x "
          f"{a.inflight} in flight, {pixels[0]}x{pixels[1]} raw frames, model churn every {a.churn_s:g} s; "
          f"loaded: RSS {rss0 / 1024:.0f} MB, {thr0} threads, {fd0} fds", flush=True)
    t0 = time.monotonic()
    for c in clients:
        c.start()
    ops = churn_ops()
    churn = {"ops": 0, "failed": 0}
    samples = []  # (seconds, answered, rss_kb, threads, fds)
    at10 = None
    next_churn, next_report = t0 + a.churn_s, t0 + a.report_s
    while any(c.is_alive() for c in clients):
        time.sleep(1.0)
        now = time.monotonic()
        done = sum(c.answered() for c in clients)
        s = (now - t0, done) + proc_sample(srv.pid)
        samples.append(s)
        if at10 is None and done >= a.requests / 10:
            at10 = s
        if now >= next_churn:
            rec = ctl.call(next(ops))
            churn["ops"] += 1
            churn["failed"] += rec.get("status") != "ok"
            next_churn = time.monotonic() + a.churn_s
        if now >= next_report:
            print(line(s, a.requests), flush=True)
            next_report += a.report_s
    elapsed = time.monotonic() - t0
    last = (elapsed, sum(c.answered() for c in clients)) + proc_sample(srv.pid)
    print(line(last, a.requests) + "  (end)", flush=True)
    stats = ctl.call({"cmd": "mem_stats"})
    ctl.close()
    for c in clients:
        c.conn.close()
    srv.terminate()  # answers what is in flight and exits 0 (a sanitizer's finding: not 0)
    try:
        exit_status = srv.wait(120)
    except subprocess.TimeoutExpired:
        exit_status = None
    return verdict(a, clients, stats, churn, samples, at10 or last, last, elapsed, work, exit_status)


def line(s, total):
    t, done, rss, thr, fds = s
    return (f"soak: {t:7.0f} s  {done:8d} answered ({100 * done / total:5.1f} %)  RSS {rss / 1024:6.1f} MB  "
            f"threads {thr}  fds {fds}")


def verdict(a, clients, stats, churn, samples, at10, last, elapsed, work, exit_status):
    seen, sent, commands = {}, 0, 0
    failures = [c.failure for c in clients if c.failure]
    for c in clients:
        sent += c.sent
        commands += c.commands
        for k, v in c.seen.items():
            seen[k] = seen.get(k, 0) + v
    unanswered = sum(len(c.pending) for c in clients)
    req = stats.get("requests", {})
    want = {"received": sent, "served": seen.get("served", 0),
            "shed": {"deadlineExpired": seen.get("shed:deadline-expired", 0),
                     "queueFull": seen.get("shed:queue-full", 0)},
            "errors": {k: seen.get("error:" + k, 0) for k in KINDS}}
    got = {k: req.get(k) for k in want}
    adds_up = bool(req) and req["received"] == req["served"] + sum(req["shed"].values()) + \
        sum(req["errors"].values())
    agree = got == want
    ratio = last[2] / at10[2] if at10[2] else float("nan")
    # a load under way holds tens of MB for a moment: the medians of the
    # samples around 10 % (7.5-12.5 %) and of the last 5 % are the steadier figure
    total = last[1] or 1
    near10 = sorted(s[2] for s in samples if 0.075 <= s[1] / total <= 0.125) or [at10[2]]
    tail = sorted(s[2] for s in samples if s[1] / total >= 0.95) or [last[2]]
    m10, mend = near10[len(near10) // 2], tail[len(tail) // 2]
    mratio = mend / m10 if m10 else float("nan")
    rss = [s[2] for s in samples] or [last[2]]
    thr = [s[3] for s in samples] or [last[3]]
    fds = [s[4] for s in samples] or [last[4]]
    print(f"soak: {sent + commands} requests in {elapsed:.0f} s ({(sent + commands) / elapsed:.0f}/s): "
          f"{sent} inference, {commands} status; served {want['served']}, shed {want['shed']}, "
          f"errors {want['errors']}; {churn['ops']} model changes ({churn['failed']} failed)")
    print(f"soak: RSS at 10 % of the run {at10[2] / 1024:.1f} MB (at {at10[0]:.0f} s), at the end "
          f"{last[2] / 1024:.1f} MB: ratio {ratio:.3f}; medians {m10 / 1024:.1f} MB (7.5-12.5 %) and "
          f"{mend / 1024:.1f} MB (last 5 %): ratio {mratio:.3f} (target <= {TARGET}); min-max after 10 % "
          f"{min(s[2] for s in samples if s[0] >= at10[0]) / 1024:.1f}-"
          f"{max(s[2] for s in samples if s[0] >= at10[0]) / 1024:.1f} MB; threads {min(thr)}-{max(thr)}, "
          f"fds {min(fds)}-{max(fds)}; mallocArenas {stats.get('mallocArenas')}")
    print(f"soak: unanswered {unanswered}; counters {'add up' if adds_up else 'DO NOT add up'} and "
          f"{'equal' if agree else 'DIFFER from'} what the clients saw"
          + ("" if agree else f": server {got}, clients {want}"))
    for f in failures:
        print(f"soak: client failed: {f}")
    if exit_status != 0:
        print(f"soak: ospreyd exited with status {exit_status} after SIGTERM; see {work / 'ospreyd.log'}")
    ok = not failures and unanswered == 0 and adds_up and agree and exit_status == 0
    rec = {"allocator": a.allocator, "requests": sent + commands, "seconds": round(elapsed, 1),
           "unanswered": unanswered, "serverExit": exit_status, "addsUp": adds_up, "agrees": agree, "clientsFailed": failures,
           "rssAt10Kb": at10[2], "rssEndKb": last[2], "rssRatio": round(ratio, 4),
           "rssMedian10Kb": m10, "rssMedianEndKb": mend, "rssMedianRatio": round(mratio, 4), "target": TARGET,
           "threads": [min(thr), max(thr)], "fds": [min(fds), max(fds)], "churn": churn,
           "seen": seen, "requestsStats": req, "log": str(work / "ospreyd.log"),
           "samples": [[round(s[0], 1), s[1], s[2], s[3], s[4]] for s in samples]}
    if a.json_out:
        Path(a.json_out).write_text(json.dumps(rec))
    print(json.dumps({k: v for k, v in rec.items() if k != "samples"}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
