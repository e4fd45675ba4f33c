#!/usr/bin/env python3
"""The doors' soak: every door of ospreyd under load at once, for a time.

    bench/soak_doors.py --bin build/bin [--seconds 600] [--check-memory]

One ospreyd serves every door that can share a process:

    ospreyd --listen unix:SOCK --config CFG --http 127.0.0.1:PORT
            --zmq ipc://DIR/zmq --jobs redis://127.0.0.1:RPORT/0/soak

with five models (slot 0 ultraface, 1 blazeface, 2 face-liveness for the
socket clients; 3 ssd-oidv4 for Frigate's detector; 4 ssd-oidv4-int8 for
the fleet's jobs; slot 5 is never loaded), so each door's requests land in
rows of mem_stats' ledger of their own. The pipe cannot be served by that
process: a worker on stdin and stdout is the host's, and --listen, or
--jobs with its --config, leaves no host on stdin. A second ospreyd serves
it, started as a host starts one (the startup config as the first frame).

For --seconds, all of this at once:
- socket clients (--clients, 3) and one pipe client, each keeping 2
  requests in flight, closed loop, with bench/soak.py's mix (raw frames,
  JPEG, deadlines too short to meet, infer_batch, status, frames for an
  empty slot, payloads that do not parse);
- model churn on the socket every --churn-s seconds (bench/soak.py's:
  replace, unload, load, replace in turn);
- HTTP: /metrics and /healthz every 100 ms, /v1/stats, /v1/models and
  /readyz every second; --event-streams (3) clients reading /events from
  start to end on one connection each;
- Frigate: --frigate (2) detector clients as Frigate's plugin talks, a
  300x300 messi5.jpg every 100 ms each, given 30 s to answer rather than
  200 ms, so that a slow answer is a figure and not a lost frame;
- the fleet: a real redis-server, a producer keeping --jobs-out (4) jobs out (JPEG for
  ssd-oidv4-int8; one in ten with its deadline already past, one in ten
  naming a model not served), each result read, and job and result
  deleted once read, as `osprey jobs` does.

Every second both servers' resident set, threads and descriptors are read
from /proc. At the end, with nothing in flight:
- nothing unanswered: every request had its one reply, every scrape its
  answer (/healthz and /metrics 200), every Frigate frame its rows, every
  job its one result, every event stream stayed open and received about
  one record a second;
- the counters add up per door and in total: mem_stats' `requests` rows
  for the socket's slots equal what the socket clients saw; Frigate's row
  and `inferZmq` what its clients saw (rows with the person = served,
  zero rows = shed); the fleet's row, `jobsClaimed` and `jobsServed` /
  `jobsDropped` / `jobsFailed` the results; the total received the sum of
  the doors'; each row received = served + shed + errors; /metrics'
  `osprey_requests_*` and `osprey_jobs_total` equal mem_stats; the pipe
  worker's own ledger what its client saw;
- both servers exit 0 (SIGTERM; the pipe's end of input).
The exit status is 1 when one fails. Memory is printed: the resident set
at 10 % of the run and at the end, and the ratio of the medians of the
samples near 10 % (7.5-12.5 %) and over the last 5 %, against 1.05; with
--check-memory (`make soak-doors`) that ratio above 1.05, or threads or
descriptors growing, fails the run too. The last line is a JSON record
(--json-out writes it, with every sample, to a file).
"""
import argparse
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
if "--bin" in sys.argv[:-1]:  # the e2e helpers read it when imported
    os.environ["OSPREY_BIN"] = str(Path(sys.argv[sys.argv.index("--bin") + 1]).resolve())

import numpy as np  # noqa: E402
import zmq  # noqa: E402
from PIL import Image as PILImage  # noqa: E402

from frigate_client import FrigateZmq, decode  # noqa: E402
from ospreyd_client import free_port  # noqa: E402
from redis_server import RedisServer  # noqa: E402
from soakload import (SLOTS, TARGET, Client, Conn, adds_up, allocator, churn_ops, churn_step, ledger_expected,  # noqa: E402
                      proc_sample, rss_medians)

FRIGATE_SLOT, FLEET_SLOT, NEVER = 3, 4, 5
FRIGATE_MODEL, FLEET_MODEL = "ssd-oidv4", "ssd-oidv4-int8"
SOCKET_SLOTS = ("0", "1", "2", str(NEVER))  # and noModel
STREAM = "soak"


def empty_row():
    return {"received": 0, "served": 0, "shed": {"deadlineExpired": 0, "queueFull": 0},
            "errors": {}}


def row_sum(rows):
    """The sum of ledger rows (mem_stats' requests.models values)."""
    out = empty_row()
    for r in rows:
        out["received"] += r["received"]
        out["served"] += r["served"]
        for k, v in r["shed"].items():
            out["shed"][k] = out["shed"].get(k, 0) + v
        for k, v in r["errors"].items():
            out["errors"][k] = out["errors"].get(k, 0) + v
    return out


class Door(threading.Thread):
    """A thread of load on one door: counts, and the first failure."""

    def __init__(self, stop):
        super().__init__(daemon=True)
        self.stop = stop
        self.failure = None
        self.lock = threading.Lock()

    def run(self):
        try:
            self.work()
        except Exception as e:  # noqa: BLE001  reported, and the run fails
            self.failure = f"{type(self).__name__}: {type(e).__name__}: {e}"


class Scraper(Door):
    """/metrics and /healthz every 100 ms, the JSON pages every second; one
    keep-alive connection, reopened when the server closes it."""

    FAST = ("/metrics", "/healthz")
    SLOW = ("/v1/stats", "/v1/models", "/readyz")

    def __init__(self, stop, port):
        super().__init__(stop)
        self.port = port
        self.status = {}  # path -> {status: count}
        self.unanswered = 0
        self.worst_ms = 0.0

    def get(self, conn, path):
        t = time.monotonic()
        try:
            conn.request("GET", path)
            r = conn.getresponse()
            body = r.read()
        except (OSError, http.client.HTTPException):
            conn.close()  # a keep-alive connection closed under us: once more on a new one
            conn.request("GET", path)
            r = conn.getresponse()
            body = r.read()
        ms = (time.monotonic() - t) * 1000
        with self.lock:
            by = self.status.setdefault(path, {})
            by[r.status] = by.get(r.status, 0) + 1
            self.worst_ms = max(self.worst_ms, ms)
        return r.status, body

    def work(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        n = 0
        while not self.stop.is_set():
            paths = self.FAST + (self.SLOW if n % 10 == 0 else ())
            for p in paths:
                try:
                    self.get(conn, p)
                except (OSError, http.client.HTTPException) as e:
                    with self.lock:
                        self.unanswered += 1
                    raise RuntimeError(f"GET {p} unanswered: {e}") from e
            n += 1
            self.stop.wait(0.1)
        conn.close()


class EventStream(Door):
    """One /events client, connected from start to end."""

    def __init__(self, stop, port):
        super().__init__(stop)
        self.port = port
        self.records = 0
        self.last = None
        self.open_until_stop = False
        self.sock = None

    def work(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        conn.request("GET", "/events")
        r = conn.getresponse()
        if r.status != 200:
            raise RuntimeError(f"/events answered {r.status}")
        while not self.stop.is_set():
            line = r.readline()
            if not line:
                if self.stop.is_set():
                    break
                raise RuntimeError(f"/events closed by the server after {self.records} records")
            if line.startswith(b"data:"):
                self.last = json.loads(line[5:])
                with self.lock:
                    self.records += 1
        self.open_until_stop = True
        conn.close()


class Frigate(Door):
    """One of Frigate's detectors: a frame every 100 ms, each waited for."""

    def __init__(self, stop, ctx, endpoint, tensor):
        super().__init__(stop)
        self.ctx, self.endpoint, self.tensor = ctx, endpoint, tensor
        self.sent = self.detected = self.zeros = self.unanswered = 0

    def work(self):
        f = FrigateZmq(self.ctx, self.endpoint, FRIGATE_MODEL, timeout_ms=30000)
        if not f.ready:
            raise RuntimeError(f"handshake for {FRIGATE_MODEL}: {f.handshake}")
        try:
            while not self.stop.is_set():
                self.sent += 1
                frames = f.send_raw([json.dumps({"shape": list(self.tensor.shape), "dtype": "uint8",
                                                 "model_type": "ssd"}).encode(), self.tensor.tobytes()])
                if frames is None:
                    self.unanswered += 1
                    continue
                rows = decode(frames)
                if rows[:, 1].max() > 0:
                    self.detected += 1
                else:
                    self.zeros += 1
                self.stop.wait(0.1)
        finally:
            f.close()


class Fleet(Door):
    """A producer keeping `out` jobs in the stream, reading each result."""

    def __init__(self, stop, redis, jpeg, out=4):
        super().__init__(stop)
        self.c = redis.client()
        self.jpeg, self.out = jpeg, out
        self.pending = {}  # job id -> (entry id, what it is: "model", "late", "nomodel")
        self.pushed = {"model": 0, "late": 0, "nomodel": 0}
        self.results = {}  # (what, status) -> count
        self.dups = 0
        self.n = 0

    def push(self):
        self.n += 1
        what = "late" if self.n % 10 == 3 else "nomodel" if self.n % 10 == 7 else "model"
        jid = f"job-{self.n}"
        args = ["XADD", STREAM, "*", "id", jid, "model", "no-such-model" if what == "nomodel" else FLEET_MODEL,
                "kind", "jpeg", "data", self.jpeg]
        if what == "late":
            args += ["deadline_ms", "1"]
        self.pending[jid] = (self.c.call(*args), what)
        self.pushed[what] += 1

    def collect(self, last):
        got = self.c.call("XREAD", "COUNT", 100, "BLOCK", 200, "STREAMS", f"{STREAM}:results", last)
        if not got:
            return last
        for eid, flat in got[0][1]:
            f = {flat[i].decode(): flat[i + 1] for i in range(0, len(flat), 2)}
            jid = f["id"].decode()
            if jid not in self.pending:
                self.dups += 1
                continue
            entry, what = self.pending.pop(jid)
            key = (what, f["status"].decode())
            self.results[key] = self.results.get(key, 0) + 1
            self.c.call("XDEL", STREAM, entry)
            self.c.call("XDEL", f"{STREAM}:results", eid)
            last = eid
        return last

    def work(self):
        last = b"0-0"
        while not self.stop.is_set():
            while len(self.pending) < self.out:
                self.push()
            last = self.collect(last)
        end = time.monotonic() + 60
        while self.pending and time.monotonic() < end:
            last = self.collect(last)
        self.c.close()


def start_main(a, work, http_port, redis_url):
    cfg = work / "doors.json"
    cfg.write_text(json.dumps({"runtime": "onnxruntime", "concurrency": 2,
                               "models": [SLOTS[0][0], SLOTS[1][0], SLOTS[2][0], {"model": FRIGATE_MODEL},
                                          {"model": FLEET_MODEL}]}))
    sock = work / "ospreyd.sock"
    log = open(work / "ospreyd.log", "wb")
    proc = subprocess.Popen([str(a.bin / "ospreyd"), "--listen", f"unix:{sock}", "--config", str(cfg),
                             "--http", f"127.0.0.1:{http_port}", "--zmq", f"ipc://{work}/zmq",
                             "--jobs", redis_url, "--consumer", "soak"],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    end = time.monotonic() + 180
    while "serving jobs from" not in (work / "ospreyd.log").read_text(errors="replace") \
            or not sock.exists():
        if proc.poll() is not None or time.monotonic() > end:
            proc.kill()
            sys.exit(f"soak-doors: ospreyd did not start; see {work / 'ospreyd.log'}")
        time.sleep(0.1)
    return proc, sock


def start_pipe(a, work):
    log = open(work / "pipe.log", "wb")
    proc = subprocess.Popen([str(a.bin / "ospreyd")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=log)
    return proc


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, type=Path, help="the folder of the ospreyd to soak")
    ap.add_argument("--seconds", type=float, default=float(os.environ.get("SOAK_DOORS_S", 600)))
    ap.add_argument("--clients", type=int, default=3, help="socket clients")
    ap.add_argument("--inflight", type=int, default=2, help="requests in flight per socket or pipe client")
    ap.add_argument("--frigate", type=int, default=2, help="Frigate detector clients")
    ap.add_argument("--event-streams", type=int, default=3)
    ap.add_argument("--jobs-out", type=int, default=4, help="fleet jobs kept in the stream (0: none)")
    ap.add_argument("--churn-s", type=float, default=10.0)
    ap.add_argument("--report-s", type=float, default=60.0)
    ap.add_argument("--frame", default="96x72", help="raw frame size WxH of the socket and pipe clients")
    ap.add_argument("--check-memory", action="store_true",
                    help="fail when the resident set grows past 1.05, or threads or descriptors grow")
    ap.add_argument("--cache", default=os.environ.get("OSPREY_CACHE", str(Path.home() / ".cache" / "osprey")))
    ap.add_argument("--json-out")
    a = ap.parse_args()
    a.bin = a.bin.resolve()

    cache = Path(a.cache)
    jpeg = (cache / "media" / "messi5.jpg").read_bytes()
    w, h = (int(v) for v in a.frame.split("x"))
    px = bytes((x * 7 + y * 3) & 255 for y in range(h) for x in range(w) for _ in range(3))
    tensor = np.asarray(PILImage.open(cache / "media" / "messi5.jpg").convert("RGB").resize((300, 300)),
                        dtype=np.uint8)[None]
    work = Path(tempfile.mkdtemp(prefix="osprey-soak-doors-"))
    redis = RedisServer(work / "redis")
    http_port = free_port()
    procs = []
    try:
        srv, sock = start_main(a, work, http_port, redis.url(STREAM))
        procs.append(srv)
        pipe = start_pipe(a, work)
        procs.append(pipe)
        return soak(a, work, redis, srv, sock, pipe, http_port, (w, h, px), jpeg, tensor)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(10)
        redis.stop()


def soak(a, work, redis, srv, sock, pipe, http_port, pixels, jpeg, tensor):
    a.allocator = allocator(srv.pid)
    stop = threading.Event()
    ctl = Conn.unix(sock)
    ctl.call({})
    sockets = [Client(Conn.unix(sock), 1000 + i, a.inflight, float("inf"), pixels, jpeg, NEVER, stop)
               for i in range(a.clients)]
    for c in sockets:
        c.hello()
    piped = Client(Conn.stdio(pipe), 2000, a.inflight, float("inf"), pixels, jpeg, 3, stop)
    piped.hello({"protocolVersion": 2, "runtime": "onnxruntime", "concurrency": 2,
                 "models": [SLOTS[0][0], SLOTS[1][0], SLOTS[2][0]]})
    ctx = zmq.Context()
    scraper = Scraper(stop, http_port)
    streams = [EventStream(stop, http_port) for _ in range(a.event_streams)]
    frigates = [Frigate(stop, ctx, f"ipc://{work}/zmq", tensor) for _ in range(a.frigate)]
    fleet = Fleet(stop, redis, jpeg, a.jobs_out)
    doors = [scraper, *streams, *frigates, fleet]
    s0, p0 = proc_sample(srv.pid), proc_sample(pipe.pid)
    print(f"soak-doors: ospreyd pid {srv.pid} ({a.allocator}) on a socket ({a.clients} clients x {a.inflight}), "
          f"HTTP :{http_port} (scrapes every 100 ms, {a.event_streams} event streams), Frigate's zmq "
          f"({a.frigate} detectors), the fleet (redis :{redis.port}), churn every {a.churn_s:g} s; "
          f"ospreyd pid {pipe.pid} on a pipe (1 client x {a.inflight}); {a.seconds:g} s", flush=True)
    print(f"soak-doors: loaded: RSS {s0[0] / 1024:.0f} MB, {s0[1]} threads, {s0[2]} fds; the pipe's "
          f"{p0[0] / 1024:.0f} MB, {p0[1]} threads, {p0[2]} fds", flush=True)
    t0 = time.monotonic()
    for d in [*sockets, piped, *doors]:
        d.start()
    ops = churn_ops()
    churn = {"ops": 0, "failed": 0}
    samples = []  # (seconds, (rss, threads, fds) main, (…) pipe)
    next_churn, next_report = t0 + a.churn_s, t0 + a.report_s
    while time.monotonic() - t0 < a.seconds:
        time.sleep(1.0)
        now = time.monotonic()
        samples.append((now - t0, proc_sample(srv.pid), proc_sample(pipe.pid)))
        if now >= next_churn:
            churn_step(ctl, ops, churn)
            next_churn = time.monotonic() + a.churn_s
        if now >= next_report:
            print(line(samples[-1], a.seconds, sockets, piped, scraper, frigates, fleet), flush=True)
            next_report += a.report_s
        if any(d.failure for d in [*sockets, piped, *doors]):
            break  # a door failed: the verdict says which
    stop.set()
    elapsed = time.monotonic() - t0
    last = (elapsed, proc_sample(srv.pid), proc_sample(pipe.pid))
    print(line(last, a.seconds, sockets, piped, scraper, frigates, fleet) + "  (end)", flush=True)
    for d in [*sockets, piped, *doors]:
        d.join(90)
    stats = ctl.call({"cmd": "mem_stats"})
    metrics = http_get(http_port, "/metrics")
    pipe_stats = piped.conn.call({"cmd": "mem_stats"}) if not piped.is_alive() else {}
    ctl.close()
    for c in sockets:
        c.conn.close()
    ctx.destroy(linger=0)
    srv.terminate()
    pipe.stdin.close()  # the host is gone: the worker answers what it holds and exits
    exits = {}
    for name, p in (("ospreyd", srv), ("pipe", pipe)):
        try:
            exits[name] = p.wait(120)
        except subprocess.TimeoutExpired:
            exits[name] = None
    run = {"sockets": sockets, "piped": piped, "scraper": scraper, "streams": streams,
           "frigates": frigates, "fleet": fleet, "stats": stats, "pipe_stats": pipe_stats,
           "metrics": metrics, "samples": samples, "last": last, "elapsed": elapsed, "exits": exits,
           "churn": churn}
    return verdict(a, work, run)


def line(s, total, sockets, piped, scraper, frigates, fleet):
    t, (rss, thr, fds), (prss, _, _) = s
    return (f"soak-doors: {t:6.0f} s ({100 * t / total:5.1f} %)  RSS {rss / 1024:6.1f} MB  threads {thr}  "
            f"fds {fds}  | pipe RSS {prss / 1024:6.1f} MB | answered: socket {sum(c.answered() for c in sockets)}, "
            f"pipe {piped.answered()}, scrapes {sum(sum(v.values()) for v in scraper.status.values())}, "
            f"frigate {sum(f.detected + f.zeros for f in frigates)}, jobs {sum(fleet.results.values())}")


def http_get(port, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.read().decode() if r.status == 200 else ""
    except (OSError, http.client.HTTPException):
        return ""
    finally:
        conn.close()


def metric_sums(text):
    """{series name (and event label for osprey_jobs_total): sum over its labels}."""
    out = {}
    for ln in text.splitlines():
        if ln.startswith("#") or not ln.strip():
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)", ln)
        if not m:
            continue
        name = m.group(1)
        if name == "osprey_jobs_total":
            ev = re.search(r'event="([^"]*)"', m.group(2) or "")
            name += ":" + (ev.group(1) if ev else "")
        out[name] = out.get(name, 0) + float(m.group(3))
    return out


def verdict(a, work, v):
    """The checks and figures of a run; v: what soak() gathered."""
    sockets, piped, scraper, streams = v["sockets"], v["piped"], v["scraper"], v["streams"]
    frigates, fleet, stats, pipe_stats = v["frigates"], v["fleet"], v["stats"], v["pipe_stats"]
    samples, last, elapsed, exits, churn = v["samples"], v["last"], v["elapsed"], v["exits"], v["churn"]
    checks = []  # (what, ok, detail)

    def check(what, ok, detail=""):
        checks.append((what, bool(ok), detail))

    doors = [*sockets, piped, scraper, *streams, *frigates, fleet]
    for d in doors:
        check(f"{type(d).__name__} ran to the end", d.failure is None and not d.is_alive(), d.failure or "")
    req = stats.get("requests", {})
    rows = req.get("models", {})
    ctr = stats.get("counters", {})

    # the socket: its slots' rows, and the pipe protocol's counters
    want, seen, sent, commands = ledger_expected(sockets)
    # a payload too short to name a slot is noModel's; only the socket sends such
    got = row_sum([rows[k] for k in SOCKET_SLOTS if k in rows] + [req.get("noModel", empty_row())])
    got["errors"] = {k: got["errors"].get(k, 0) for k in want["errors"]}
    unanswered_socket = sum(len(c.pending) for c in sockets)
    check("socket: every request answered once", unanswered_socket == 0, f"{unanswered_socket} unanswered")
    check("socket: its slots' ledger rows equal what its clients saw", got == want,
          f"server {got}, clients {want}")
    check("socket: counters.totalInference = its inference requests", ctr.get("totalInference") == sent,
          f"{ctr.get('totalInference')} vs {sent}")

    # the pipe: a worker of its own, its whole ledger
    pwant, pseen, psent, pcommands = ledger_expected([piped])
    preq = pipe_stats.get("requests", {})
    check("pipe: every request answered once", not piped.pending, f"{len(piped.pending)} unanswered")
    check("pipe: its worker's ledger equals what its client saw and adds up",
          {k: preq.get(k) for k in pwant} == pwant and adds_up(preq),
          f"server {({k: preq.get(k) for k in pwant})}, client {pwant}")

    # Frigate: its slot's row and inferZmq
    f_sent = sum(f.sent for f in frigates)
    f_det, f_zero = sum(f.detected for f in frigates), sum(f.zeros for f in frigates)
    f_unans = sum(f.unanswered for f in frigates)
    frow = rows.get(str(FRIGATE_SLOT), empty_row())
    check("frigate: every frame answered", f_unans == 0 and f_det + f_zero == f_sent,
          f"{f_sent} sent, {f_det} with the person, {f_zero} zero rows, {f_unans} unanswered")
    check("frigate: inferZmq and its slot's row equal what its detectors saw",
          ctr.get("inferZmq") == f_sent and frow["received"] == f_sent and frow["served"] == f_det
          and sum(frow["shed"].values()) + sum(frow["errors"].values()) == f_zero,
          f"inferZmq {ctr.get('inferZmq')}, row {frow}; detectors: {f_sent} sent, {f_det} served, {f_zero} zeros")

    # the fleet: its slot's row and the jobs counters
    res = fleet.results
    j_pushed = sum(fleet.pushed.values())
    j_filed = sum(res.values())
    by_status = {s: sum(n for (_, st), n in res.items() if st == s) for s in ("served", "dropped", "error")}
    reached = fleet.pushed["model"] + fleet.pushed["late"]
    jrow = rows.get(str(FLEET_SLOT), empty_row())
    check("fleet: every job one result", not fleet.pending and fleet.dups == 0 and j_filed == j_pushed,
          f"{j_pushed} pushed, {j_filed} results, {len(fleet.pending)} without, {fleet.dups} duplicates")
    check("fleet: results as the jobs asked",
          res.get(("model", "served"), 0) == fleet.pushed["model"] and
          res.get(("late", "dropped"), 0) == fleet.pushed["late"] and
          res.get(("nomodel", "error"), 0) == fleet.pushed["nomodel"], f"{res}")
    check("fleet: jobs counters equal the results",
          ctr.get("jobsClaimed") == j_pushed and ctr.get("jobsServed") == by_status["served"]
          and ctr.get("jobsDropped") == by_status["dropped"] and ctr.get("jobsFailed") == by_status["error"],
          f"counters {({k: ctr.get(k) for k in ('jobsClaimed', 'jobsServed', 'jobsDropped', 'jobsFailed')})}, "
          f"results {by_status}")
    check("fleet: its slot's row equals the jobs that reached its model",
          jrow["received"] == reached and jrow["served"] == by_status["served"]
          and jrow["shed"]["deadlineExpired"] == by_status["dropped"],
          f"row {jrow}; {reached} jobs named it, {by_status}")

    # in total
    check("total: received = the doors' requests",
          req.get("received") == sent + f_sent + reached,
          f"{req.get('received')} vs socket {sent} + frigate {f_sent} + fleet {reached}")
    every = {**rows, "noModel": req.get("noModel", empty_row())}
    bad_rows = [k for k, r in every.items() if not adds_up(r)]
    check("total: received = served + shed + errors, in total and in every row",
          adds_up(req) and not bad_rows and row_sum(every.values())["received"] == req.get("received"),
          f"rows not adding up: {bad_rows}; rows' sum {row_sum(every.values())['received']}")
    m = metric_sums(v["metrics"])
    mgot = {"received": m.get("osprey_requests_received_total"), "served": m.get("osprey_requests_served_total"),
            "shed": m.get("osprey_requests_shed_total"), "errors": m.get("osprey_requests_errors_total")}
    mwant = {"received": req.get("received"), "served": req.get("served"),
             "shed": sum(req.get("shed", {}).values()), "errors": sum(req.get("errors", {}).values())}
    jwant = {e: ctr.get("jobs" + e.capitalize()) for e in ("claimed", "served", "dropped", "failed")}
    jgot = {e: m.get(f"osprey_jobs_total:{e}") for e in jwant}
    check("/metrics: the request and job series equal mem_stats", mgot == mwant and jgot == jwant,
          f"metrics {mgot} {jgot}, mem_stats {mwant} {jwant}")

    # HTTP
    st = scraper.status
    fast_bad = {p: {c: n for c, n in st.get(p, {}).items() if c != 200} for p in Scraper.FAST}
    check("http: every scrape answered, /metrics and /healthz 200",
          scraper.unanswered == 0 and not any(fast_bad.values()) and all(st.get(p) for p in Scraper.FAST),
          f"{scraper.unanswered} unanswered; not 200: {fast_bad}")
    short = [s.records for s in streams if s.records < 0.25 * elapsed or not s.open_until_stop]
    check("http: every event stream open to the end, its records arriving", not short,
          f"records {[s.records for s in streams]} in {elapsed:.0f} s")
    for name, code in exits.items():
        check(f"{name} exits 0", code == 0, f"exit status {code}; see {work / (name + '.log')}")

    # memory, threads, descriptors
    share = [s[0] / elapsed for s in samples]
    at10 = min(samples, key=lambda s: abs(s[0] / elapsed - 0.10)) if samples else last
    mem = {}
    for k, name in ((1, "ospreyd"), (2, "pipe")):
        m10, mend = rss_medians([s[k][0] for s in samples], share, at10[k][0], last[k][0])
        t10, tend = rss_medians([s[k][1] for s in samples], share, at10[k][1], last[k][1])
        d10, dend = rss_medians([s[k][2] for s in samples], share, at10[k][2], last[k][2])
        after = [s[k] for s in samples if s[0] >= at10[0]] or [last[k]]
        mem[name] = {"rssAt10Kb": at10[k][0], "rssEndKb": last[k][0],
                     "rssRatio": round(last[k][0] / at10[k][0], 4) if at10[k][0] else None,
                     "rssMedian10Kb": m10, "rssMedianEndKb": mend,
                     "rssMedianRatio": round(mend / m10, 4) if m10 else None,
                     "rssAfter10Kb": [min(x[0] for x in after), max(x[0] for x in after)],
                     "threads": [t10, tend], "fds": [d10, dend],
                     "threadsRange": [min(x[1] for x in after), max(x[1] for x in after)],
                     "fdsRange": [min(x[2] for x in after), max(x[2] for x in after)]}
    if a.check_memory:
        for name, mm in mem.items():
            check(f"{name}: resident set at the end within {TARGET} of 10 % (medians)",
                  mm["rssMedianRatio"] is not None and mm["rssMedianRatio"] <= TARGET,
                  f"ratio {mm['rssMedianRatio']}")
            check(f"{name}: threads and descriptors do not grow (medians, 10 % vs the end)",
                  mm["threads"][1] <= mm["threads"][0] + 2 and mm["fds"][1] <= mm["fds"][0] + 4,
                  f"threads {mm['threads']}, fds {mm['fds']}")

    # the figures
    print(f"soak-doors: {elapsed:.0f} s; socket: {sent + commands} requests ({sent} inference, {commands} status), "
          f"served {want['served']}, shed {want['shed']}, errors {want['errors']}; "
          f"{churn['ops']} model changes ({churn['failed']} failed)")
    print(f"soak-doors: pipe: {psent + pcommands} requests ({psent} inference), served {pwant['served']}, "
          f"shed {pwant['shed']}, errors {pwant['errors']}")
    print(f"soak-doors: http: {', '.join(f'{p} {st.get(p)}' for p in (*Scraper.FAST, *Scraper.SLOW))}; "
          f"slowest answer {scraper.worst_ms:.0f} ms; event streams {[s.records for s in streams]} records")
    print(f"soak-doors: frigate: {f_sent} frames, {f_det} with the person, {f_zero} zero rows; "
          f"fleet: {j_pushed} jobs {fleet.pushed}, results {by_status}")
    print(f"soak-doors: mem_stats requests: received {req.get('received')}, served {req.get('served')}, "
          f"shed {req.get('shed')}, errors {req.get('errors')}")
    for name, mm in mem.items():
        print(f"soak-doors: {name}: RSS at 10 % {mm['rssAt10Kb'] / 1024:.1f} MB (at {at10[0]:.0f} s), at the end "
              f"{mm['rssEndKb'] / 1024:.1f} MB: ratio {mm['rssRatio']}; medians {mm['rssMedian10Kb'] / 1024:.1f} MB "
              f"(7.5-12.5 %) and {mm['rssMedianEndKb'] / 1024:.1f} MB (last 5 %): ratio {mm['rssMedianRatio']} "
              f"(target <= {TARGET}{'' if a.check_memory else ', a figure'}); after 10 % "
              f"{mm['rssAfter10Kb'][0] / 1024:.1f}-{mm['rssAfter10Kb'][1] / 1024:.1f} MB; threads "
              f"{mm['threadsRange'][0]}-{mm['threadsRange'][1]}, fds {mm['fdsRange'][0]}-{mm['fdsRange'][1]}")
    for what, ok, detail in checks:
        print(f"soak-doors: {'ok  ' if ok else 'FAIL'} {what}" + ("" if ok else f": {detail}"))
    ok = all(c[1] for c in checks)
    rec = {"allocator": a.allocator, "seconds": round(elapsed, 1), "ok": ok,
           "checks": {what: good for what, good, _ in checks},
           "failed": [f"{what}: {detail}" for what, good, detail in checks if not good],
           "socket": {"requests": sent + commands, "inference": sent, "seen": seen},
           "pipe": {"requests": psent + pcommands, "inference": psent, "seen": pseen, "requestsStats": preq},
           "http": {"status": {p: {str(c): n for c, n in by.items()} for p, by in st.items()},
                    "worstMs": round(scraper.worst_ms, 1), "eventRecords": [s.records for s in streams]},
           "frigate": {"frames": f_sent, "detected": f_det, "zeros": f_zero, "unanswered": f_unans},
           "fleet": {"pushed": fleet.pushed, "results": {f"{w}:{s}": n for (w, s), n in res.items()}},
           "churn": churn, "exits": exits, "memory": mem, "target": TARGET, "requestsStats": req,
           "counters": ctr, "log": str(work / "ospreyd.log")}
    if a.json_out:
        Path(a.json_out).write_text(json.dumps({**rec, "samples": [[round(s[0], 1), *s[1], *s[2]]
                                                                   for s in samples]}))
    print(json.dumps(rec))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
