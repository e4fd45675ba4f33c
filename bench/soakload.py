"""The soaks' shared pieces: the pipe protocol's mixed load and what is read
back from the server (bench/soak.py, bench/soak_doors.py).

A Client keeps `inflight` requests in flight on one pipe-protocol stream
(a Unix socket, or a worker's stdin and stdout), closed loop, mixing small
raw frames, JPEG, frames with deadlines too short to meet, infer_batch,
status commands, frames for a slot no model is loaded at and payloads
that do not parse; it counts each reply's outcome as mem_stats' request
ledger counts it, so that `ledger_expected` can say what the server's
`requests` must read. `churn_ops` is the model churn, `proc_sample` reads
a process's resident set, threads and descriptors from /proc, and
`rss_medians` the steadier figure of memory at 10 % of a run and at its
end.
"""
import json
import os
import random
import socket
import struct
import threading
import time

MSG_COMMAND, MSG_JPEG, MSG_RAW, MSG_BATCH = 0, 1, 2, 3
EVENT_ID = 0xFFFFFFFF
TARGET = 1.05
KINDS = ("badRequest", "notLoaded", "notCached", "failed", "noMemory", "timedOut", "reloading")

# slot -> the models the churn alternates between
SLOTS = {0: ({"model": "ultraface"}, {"model": "ultraface-int8"}),
         1: ({"model": "blazeface"},),
         2: ({"model": "face-liveness"}, {"model": "face-embed"})}


def frame(req_id, msg_type, payload):
    return struct.pack("<IIB", 5 + len(payload), req_id, msg_type) + payload


class Conn:
    """One pipe-protocol stream: writes frames, reads replies in order of arrival."""

    def __init__(self, rfile, write, close):
        self.rfile, self._write, self._close = rfile, write, close
        self.next_id = 1

    @classmethod
    def unix(cls, path):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(str(path))
        return cls(sock.makefile("rb", buffering=1 << 16), sock.sendall, sock.close)

    @classmethod
    def stdio(cls, proc):
        """A worker's stdin and stdout (subprocess.Popen with both PIPE)."""
        def write(data):
            proc.stdin.write(data)
            proc.stdin.flush()
        return cls(proc.stdout, write, proc.stdin.close)

    def send(self, msg_type, payload):
        rid = self.next_id
        self.next_id += 1
        self._write(frame(rid, msg_type, payload))
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
        self._close()


def outcome(rec):
    """'served', 'shed:<reason>' or 'error' for an inference reply."""
    if "error" in rec:
        return "error"
    items = rec["results"] if "results" in rec and "kind" not in rec else [rec]
    if items and all(i.get("dropped") for i in items):
        return "shed:" + items[0]["shedReason"]
    return "served"


def error_kind(rec):
    """The ledger's kind for an error reply to a request meant to succeed."""
    text = rec["error"]
    if "not loaded" in text:
        return "notLoaded"  # its slot was emptied by the churn
    return "failed"


class Client(threading.Thread):
    """A closed loop of `inflight` requests on its own stream, until `budget`
    requests are sent or `stop` (a threading.Event) is set; then it reads
    the replies still owed. Models are chosen among slots 0-2; `never` is
    a slot no model is loaded at."""

    def __init__(self, conn, seed, inflight, budget, pixels, jpeg, never=3, stop=None):
        super().__init__(daemon=True)
        self.conn = conn
        self.rng = random.Random(seed)
        self.inflight, self.budget, self.stop = inflight, budget, stop
        self.pixels, self.jpeg, self.never = pixels, jpeg, never
        self.pending = {}  # req_id -> expected error kind, None, or "command"
        self.sent = self.commands = 0
        self.seen = {}  # outcome -> count; errors as "error:<kind>"
        self.failure = None
        self.lock = threading.Lock()

    def hello(self, config=None):
        self.conn.send(MSG_COMMAND, json.dumps(config or {"protocolVersion": 2}).encode())
        _, rec = self.conn.read()
        if rec.get("status") != "ready":
            raise RuntimeError(f"handshake refused: {rec}")

    def one(self):
        """One request of the mix: (msg_type, payload, expected kind)."""
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
            return MSG_RAW, dl + struct.pack("<BIIB", self.never, w, h, 0) + px, "notLoaded"
        return MSG_RAW, dl + struct.pack("<BI", idx, w), "badRequest"  # truncated header

    def fill(self):
        while (len(self.pending) < self.inflight and self.sent + self.commands < self.budget
               and not (self.stop and self.stop.is_set())):
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
                    if rid != EVENT_ID:
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


def ledger_expected(clients):
    """What mem_stats' `requests` must read after these clients' requests:
    (expected ledger, outcomes seen, inference requests sent, commands sent)."""
    seen, sent, commands = {}, 0, 0
    for c in clients:
        sent += c.sent
        commands += c.commands
        for k, v in c.seen.items():
            seen[k] = seen.get(k, 0) + v
    want = {"received": sent, "served": seen.get("served", 0),
            "shed": {"deadlineExpired": seen.get("shed:deadline-expired", 0),
                     "queueFull": seen.get("shed:queue-full", 0)},
            "errors": {k: seen.get("error:" + k, 0) for k in KINDS}}
    return want, seen, sent, commands


def adds_up(row):
    """received = served + shed + errors, for a ledger row (or the total)."""
    return bool(row) and row["received"] == row["served"] + sum(row["shed"].values()) + \
        sum(row["errors"].values())


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


def allocator(pid):
    with open(f"/proc/{pid}/maps") as f:
        return "jemalloc" if "libjemalloc" in f.read() else "glibc"


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


def churn_step(ctl, ops, churn):
    """The next model change on the control connection, counted in churn
    ({"ops", "failed"})."""
    rec = ctl.call(next(ops))
    churn["ops"] += 1
    churn["failed"] += rec.get("status") != "ok"


def rss_medians(rss, share, at10, last):
    """A load under way holds tens of MB for a moment: the medians of the
    resident set sampled around 10 % of the run (7.5-12.5 %) and over its
    last 5 % are the steadier figure. rss: [rss_kb]; share: the run's share
    done at each sample, 0-1. Returns (median near 10 %, median at the end)."""
    near10 = sorted(r for r, p in zip(rss, share) if 0.075 <= p <= 0.125) or [at10]
    tail = sorted(r for r, p in zip(rss, share) if p >= 0.95) or [last]
    return near10[len(near10) // 2], tail[len(tail) // 2]
