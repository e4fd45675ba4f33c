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
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from soakload import (SLOTS, TARGET, Client, Conn, adds_up, allocator, churn_ops, churn_step, ledger_expected,
                      proc_sample, rss_medians)


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
    a.allocator = allocator(srv.pid)
    ctl = Conn.unix(sock)
    ctl.call({})
    per = a.requests // a.clients
    clients = [Client(Conn.unix(sock), 1000 + i, a.inflight, per + (i < a.requests % a.clients), pixels, jpeg)
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
            churn_step(ctl, ops, churn)
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
    want, seen, sent, commands = ledger_expected(clients)
    failures = [c.failure for c in clients if c.failure]
    unanswered = sum(len(c.pending) for c in clients)
    req = stats.get("requests", {})
    got = {k: req.get(k) for k in want}
    added = adds_up(req)
    agree = got == want
    ratio = last[2] / at10[2] if at10[2] else float("nan")
    total = last[1] or 1
    m10, mend = rss_medians([s[2] for s in samples], [s[1] / total for s in samples], at10[2], last[2])
    mratio = mend / m10 if m10 else float("nan")
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
    print(f"soak: unanswered {unanswered}; counters {'add up' if added else 'DO NOT add up'} and "
          f"{'equal' if agree else 'DIFFER from'} what the clients saw"
          + ("" if agree else f": server {got}, clients {want}"))
    for f in failures:
        print(f"soak: client failed: {f}")
    if exit_status != 0:
        print(f"soak: ospreyd exited with status {exit_status} after SIGTERM; see {work / 'ospreyd.log'}")
    ok = not failures and unanswered == 0 and added and agree and exit_status == 0
    rec = {"allocator": a.allocator, "requests": sent + commands, "seconds": round(elapsed, 1),
           "unanswered": unanswered, "serverExit": exit_status, "addsUp": added, "agrees": agree, "clientsFailed": failures,
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
