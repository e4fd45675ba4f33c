"""ospreyd --jobs: workers of a fleet fed by a Redis Streams consumer group
(docs/fleet.md), against a real redis-server the tests start on a free
loopback port. Each guarantee of the fleet is a test here: nothing lost
when a worker is SIGKILLed, one result per job id when two workers run the
same job, poison jobs end, a Redis restart loses nothing, SIGTERM finishes
what is held. The real ssd-oidv4 finds the person in messi5.jpg; the test
backend (docs/test-backend.md) makes a model slow, to hold jobs in flight."""
import io
import os
import json
import signal
import time
import urllib.request

import pytest
from PIL import Image as PILImage

from ospreyd_client import (MEDIA, SANITIZED, SSD_CATALOG, counted_runs, detections_match,  # noqa: F401
                            free_port, jpeg_to_rgb, media_bytes, need, now_ms, person, spawn, tb_config,
                            tb_script, worker)
from lying_redis import LyingRedis
from redis_server import RedisError, entries, redis  # noqa: F401

WAIT = 120 if SANITIZED else 60
TIMINGS = ("inferenceMs", "preprocessMs", "predictMs")


def start(spawn, tmp_path, r, stream, config, *extra, name=None, listen=False):
    """A fleet worker; returns it once it serves jobs."""
    n = len(list(tmp_path.glob("models-*.json")))
    cfg = tmp_path / f"models-{n}.json"
    cfg.write_text(json.dumps(config))
    args = ["--config", cfg, "--jobs", r.url(stream), *extra]
    if name:
        args += ["--consumer", name]
    sock = tmp_path / f"host-{n}.sock"
    if listen:
        args += ["--listen", f"unix:{sock}"]
    return spawn(*args, stdio=False).serving("serving jobs from", sock if listen else None, WAIT)


def counters(w):
    return w.counters()


def submit(c, stream, job_id, model="ssd-oidv4", kind="jpeg", data=None, **more):
    args = ["XADD", stream, "*", "id", job_id, "model", model, "kind", kind]
    for k, v in more.items():
        args += [k, v]
    if data is not None:
        args += ["data", data]
    return c.call(*args).decode()


def wait_results(c, stream, n, timeout=WAIT, what=None):
    end = time.monotonic() + timeout
    while True:
        got = entries(c, stream)
        if len(got) >= n:
            return got
        if time.monotonic() > end:
            pytest.fail(f"{len(got)} of {n} results on {stream} after {timeout}s{what() if what else ''}")
        time.sleep(0.05)


def by_id(results):
    out = {}
    for _, f in results:
        out.setdefault(f["id"].decode(), []).append(f)
    return out


def group_pending(c, stream, group="osprey"):
    return c.call("XPENDING", stream, group)[0]


def held_by(c, consumer, stream="cams"):
    """The entries consumer holds; none while the group is not made yet (a
    worker makes it on its first connection, after its start-up line)."""
    try:
        return c.call("XPENDING", stream, "osprey", "-", "+", 10, consumer)
    except RedisError as e:
        if "NOGROUP" in str(e):
            return []
        raise


def slow_model(tmp_path, delay_ms, name="slow"):
    return tb_script(tmp_path / f"{name}.json", run_delay_ms=delay_ms,
                     faces=[(0.9, [0.1, 0.1, 0.5, 0.5])])


# ---- what a job is and what its result says ---------------------------------------

def test_a_jpeg_job_is_served_with_the_pipes_record(spawn, worker, redis, tmp_path):
    r = redis()
    c = r.client()
    jpeg = media_bytes("messi5.jpg")
    w = start(spawn, tmp_path, r, "cams", {"runtime": "onnxruntime", "concurrency": 2,
                                            "models": [SSD_CATALOG]})
    submit(c, "cams", "frame-1", data=jpeg)
    (_, got), = wait_results(c, "cams:results", 1, what=w.describe)
    assert got["id"] == b"frame-1" and got["status"] == b"served", got
    assert got["worker"].decode().endswith(f"-{w.proc.pid}")  # HOSTNAME-PID
    assert int(got["deliveries"]) == 1 and float(got["workerMs"]) > 0
    rec = json.loads(got["result"])
    assert person(rec), rec
    # the pipe's record for the same bytes: same keys in the same order, same detections
    pw, _ = worker({"runtime": "onnxruntime", "models": [SSD_CATALOG]})
    pipe = pw.conn.infer_jpeg(0, jpeg)
    assert list(rec) == list(pipe), (rec, pipe)
    assert {k: v for k, v in rec.items() if k not in TIMINGS and k != "detections"} == \
        {k: v for k, v in pipe.items() if k not in TIMINGS and k != "detections"}
    assert detections_match(rec, pipe, px=0.5, score=0.001), (rec, pipe)
    assert group_pending(c, "cams") == 0


def test_raw_png_and_reply_to(spawn, redis, tmp_path):
    r = redis()
    c = r.client()
    img = jpeg_to_rgb(need(MEDIA / "messi5.jpg"))
    w = start(spawn, tmp_path, r, "cams", {"runtime": "onnxruntime", "models": [SSD_CATALOG]})
    y = bytes(img.w * img.h)  # a grey NV12 frame: nothing to find, but served
    uv = bytes([128]) * (2 * ((img.w + 1) // 2) * ((img.h + 1) // 2))
    submit(c, "cams", "rgb", kind="raw", w=img.w, h=img.h, fmt="rgb", data=img.data)
    submit(c, "cams", "bgr", kind="raw", w=img.w, h=img.h, fmt="bgr", data=img.bgr())
    submit(c, "cams", "nv12", kind="raw", w=img.w, h=img.h, fmt="nv12", data=y + uv)
    out = io.BytesIO()
    PILImage.open(MEDIA / "messi5.jpg").save(out, format="PNG")
    submit(c, "cams", "png", kind="png", data=out.getvalue())
    submit(c, "cams", "mine", data=media_bytes("messi5.jpg"), reply_to="answers:host7")
    res = by_id(wait_results(c, "cams:results", 4, what=w.describe))
    assert all(v[0]["status"] == b"served" for v in res.values()), res
    for k in ("rgb", "bgr", "png"):
        assert person(json.loads(res[k][0]["result"])), (k, res[k])
    assert json.loads(res["nv12"][0]["result"])["frameSize"] == f"{img.w}x{img.h}"
    (_, mine), = wait_results(c, "answers:host7", 1)
    assert mine["id"] == b"mine" and person(json.loads(mine["result"]))
    assert "mine" not in res


def test_a_png_bomb_job_costs_a_row(spawn, redis, tmp_path):
    """A fleet job's PNG is decoded as infer_jpeg's (docs/security.md): 400 MB
    of pixels in a 400 KB PNG go into the tensor a row at a time, and one to
    be held whole past 50 million pixels is an error, not a worker's memory."""
    from test_ospreyd_png import peak_kb, png, zeros
    r = redis()
    c = r.client()
    w = start(spawn, tmp_path, r, "cams", {"runtime": "onnxruntime", "models": [SSD_CATALOG]})
    submit(c, "cams", "warm", data=media_bytes("messi5.jpg"))
    wait_results(c, "cams:results", 1, what=w.describe)
    before = peak_kb(w)
    submit(c, "cams", "bomb", kind="png", data=png(16384, 8192, zeros))
    submit(c, "cams", "whole", kind="png", data=png(8192, 8192, zeros, interlaced=True))
    res = by_id(wait_results(c, "cams:results", 3, what=w.describe))
    assert res["bomb"][0]["status"] == b"served", res["bomb"]
    assert json.loads(res["bomb"][0]["result"])["frameSize"] == "16384x8192"
    assert res["whole"][0]["status"] == b"error", res["whole"]
    assert "more than the 50000000 pixels held whole" in json.loads(res["whole"][0]["result"])["error"]
    assert peak_kb(w) - before < 64 * 1024, (before, peak_kb(w))


def test_bad_jobs_are_answered_with_errors(spawn, redis, tmp_path):
    r = redis()
    c = r.client()
    w = start(spawn, tmp_path, r, "cams", {"runtime": "onnxruntime", "models": [SSD_CATALOG]},
              "--max-frame", "100000", listen=True)
    jpeg = media_bytes("messi5.jpg")
    cases = {
        "no-model": (["id", "no-model", "kind", "jpeg", "data", jpeg], "model"),
        "unknown-model": (["id", "unknown-model", "model", "yolo-nope", "kind", "jpeg", "data", jpeg],
                          "not served here"),
        "bad-kind": (["id", "bad-kind", "model", "ssd-oidv4", "kind", "gif", "data", jpeg], "kind"),
        "no-data": (["id", "no-data", "model", "ssd-oidv4", "kind", "jpeg"], "no data"),
        "not-jpeg": (["id", "not-jpeg", "model", "ssd-oidv4", "kind", "jpeg", "data", b"\xff\xd8junk"],
                     "decode failed"),
        "raw-size": (["id", "raw-size", "model", "ssd-oidv4", "kind", "raw", "w", "10", "h", "10",
                      "fmt", "rgb", "data", b"x" * 299], "takes 300"),
        "raw-fmt": (["id", "raw-fmt", "model", "ssd-oidv4", "kind", "raw", "w", "10", "h", "10",
                     "fmt", "rgba", "data", b"x" * 400], "fmt"),
        "raw-side": (["id", "raw-side", "model", "ssd-oidv4", "kind", "raw", "w", "0", "h", "10",
                      "fmt", "rgb", "data", b"x"], "w and h"),
        "raw-huge": (["id", "raw-huge", "model", "ssd-oidv4", "kind", "raw", "w", "99999999999",
                      "h", "99999999999", "fmt", "rgb", "data", b"x"], "w and h"),
        "deadline": (["id", "deadline", "model", "ssd-oidv4", "kind", "jpeg", "deadline_ms", "soon",
                      "data", jpeg], "deadline_ms"),
        "too-large": (["id", "too-large", "model", "ssd-oidv4", "kind", "jpeg",
                       "data", b"\xff" * 100001], "exceeds the limit"),
        "many-fields": (["id", "many-fields"] + [f"f{i}" for i in range(80)], "more than 32"),
        "long-id": (["id", "x" * 129, "model", "ssd-oidv4", "kind", "jpeg", "data", jpeg], "id"),
        # names are taken on their whole length: what C would keep of them is no name
        "nul-model": (["id", "nul-model", "model", b"ssd-oidv4\0x", "kind", "jpeg", "data", jpeg],
                      "model: holds a NUL byte"),
        "nul-reply": (["id", "nul-reply", "reply_to", b"answers\0x", "model", "ssd-oidv4",
                       "kind", "jpeg", "data", jpeg], "reply_to: holds a NUL byte"),
        "nul-id": (["id", b"cam7\0-000123", "model", "ssd-oidv4", "kind", "jpeg", "data", jpeg],
                   "id: holds a NUL byte"),
    }
    for args, _ in cases.values():
        c.call("XADD", "cams", "*", *args)
    c.call("XADD", "cams", "*", "model", "ssd-oidv4", "kind", "jpeg", "data", jpeg)  # no id
    got = wait_results(c, "cams:results", len(cases) + 1, what=w.describe)
    res = by_id(got)
    for job_id, (_, text) in cases.items():
        key = "" if job_id in ("long-id", "nul-id") else job_id
        answers = [f for f in res.get(key, []) if text in json.loads(f["result"]).get("error", "")]
        assert answers and answers[0]["status"] == b"error", (job_id, res.get(key))
    assert len(res[""]) == 3  # the id-less job, the over-long and the NUL id: never merged
    assert b"answers" not in c.call("KEYS", "*")  # nothing filed where C cut the name
    assert w.alive()
    assert group_pending(c, "cams") == 0
    k = counters(w)
    assert k["jobsFailed"] == len(cases) + 1 and k["jobsServed"] == 0, k


def test_an_expired_job_is_dropped_and_never_run(spawn, redis, tmp_path):
    r = redis()
    c = r.client()
    counter = tmp_path / "runs.txt"
    model = tb_script(tmp_path / "counted.json", counter_file=counter)
    w = start(spawn, tmp_path, r, "cams", tb_config([model]), listen=True)
    before = counted_runs(counter)  # the start's measurement of the model
    jpeg = media_bytes("messi5.jpg")
    submit(c, "cams", "late", model="counted", data=jpeg, deadline_ms=now_ms() - 1)
    submit(c, "cams", "in-time", model="counted", data=jpeg, deadline_ms=now_ms() + 60000)
    res = by_id(wait_results(c, "cams:results", 2, what=w.describe))
    late = json.loads(res["late"][0]["result"])
    assert res["late"][0]["status"] == b"dropped", res
    assert late["dropped"] is True and late["shedReason"] == "deadline-expired", late
    assert res["in-time"][0]["status"] == b"served"
    assert counted_runs(counter) == before + 1  # in-time only
    assert counters(w)["jobsDropped"] == 1
    # a job that reached its model is one inference request with one outcome
    req = w.host.mem_stats()["requests"]
    shed = sum(req["shed"].values())
    assert req["received"] == 2 and req["served"] == 1 and req["shed"]["deadlineExpired"] == 1, req
    assert req["received"] == req["served"] + shed + sum(req["errors"].values()), req


# ---- the guarantees -----------------------------------------------------------------

def test_a_busy_worker_claims_no_more_than_it_admits(spawn, redis, tmp_path):
    r = redis()
    c = r.client()
    model = slow_model(tmp_path, 150)
    w = start(spawn, tmp_path, r, "cams", tb_config([model], concurrency=1), name="w1")
    jpeg = media_bytes("messi5.jpg")
    for i in range(20):
        submit(c, "cams", f"j{i}", model="slow", data=jpeg)
    most = 0
    end = time.monotonic() + WAIT
    while len(entries(c, "cams:results")) < 20:
        pend = len(held_by(c, "w1"))
        most = max(most, pend)
        assert pend <= 3, pend  # 1 run slot + 2 waiting
        assert time.monotonic() < end, w.describe()
        time.sleep(0.02)
    assert most >= 2
    assert len(by_id(entries(c, "cams:results"))) == 20


def test_a_killed_worker_loses_nothing(spawn, redis, tmp_path):
    r = redis()
    c = r.client()
    model = slow_model(tmp_path, 100)
    cfg = tb_config([model], concurrency=1)
    a = start(spawn, tmp_path, r, "cams", cfg, "--claim-idle-ms", "1000", name="a")
    jpeg = media_bytes("messi5.jpg")
    for i in range(30):
        submit(c, "cams", f"j{i}", model="slow", data=jpeg)
    wait_results(c, "cams:results", 3, what=a.describe)
    b = start(spawn, tmp_path, r, "cams", cfg, "--claim-idle-ms", "1000", name="b", listen=True)
    end = time.monotonic() + WAIT
    while not held_by(c, "a"):
        assert time.monotonic() < end
        time.sleep(0.01)
    a.proc.kill()
    a.proc.wait(10)
    held_by_a = [e[0].decode() for e in held_by(c, "a")]
    assert held_by_a
    res = by_id(wait_results(c, "cams:results", 30, what=b.describe))
    assert sorted(res) == sorted(f"j{i}" for i in range(30))
    assert all(len(v) == 1 for v in res.values()), {k: len(v) for k, v in res.items() if len(v) > 1}
    assert all(v[0]["status"] == b"served" for v in res.values())
    ids = {e: f["id"].decode() for e, f in entries(c, "cams")}
    for entry in held_by_a:
        f = res[ids[entry]][0]
        assert f["worker"] == b"b" and int(f["deliveries"]) >= 2, f
    assert counters(b)["jobsReclaimed"] >= len(held_by_a)
    assert group_pending(c, "cams") == 0


def test_two_workers_finishing_one_job_leave_one_result(spawn, redis, tmp_path):
    r = redis()
    c = r.client()
    model = slow_model(tmp_path, 300)
    cfg = tb_config([model], concurrency=1)
    a = start(spawn, tmp_path, r, "cams", cfg, name="a", listen=True)
    jpeg = media_bytes("messi5.jpg")
    for i in range(3):
        submit(c, "cams", f"j{i}", model="slow", data=jpeg)
    end = time.monotonic() + WAIT
    while len(held_by(c, "a")) < 3:
        assert time.monotonic() < end, a.describe()
        time.sleep(0.005)
    a.signal(signal.SIGSTOP)  # a holds three jobs and looks dead
    try:
        b = start(spawn, tmp_path, r, "cams", cfg, "--claim-idle-ms", "500", name="b", listen=True)
        wait_results(c, "cams:results", 3, what=b.describe)
    finally:
        a.signal(signal.SIGCONT)
    end = time.monotonic() + WAIT
    while True:  # a finishes what it held, finds each filed, and says so
        k = counters(a)
        if k["jobsDeduplicated"] + k["jobsServed"] >= 3:
            break
        assert time.monotonic() < end, (k, a.describe())
        time.sleep(0.05)
    assert k["jobsDeduplicated"] >= 1, k
    time.sleep(0.3)
    res = by_id(entries(c, "cams:results"))
    assert sorted(res) == ["j0", "j1", "j2"]
    assert all(len(v) == 1 for v in res.values()), res
    assert group_pending(c, "cams") == 0


def test_a_poison_job_ends_with_an_error(spawn, redis, tmp_path):
    r = redis()
    c = r.client()
    jpeg = media_bytes("messi5.jpg")
    c.call("XGROUP", "CREATE", "cams", "osprey", "0", "MKSTREAM")
    poison = submit(c, "cams", "poison", model="slow", data=jpeg)
    healthy = submit(c, "cams", "twice", model="slow", data=jpeg)
    c.call("XREADGROUP", "GROUP", "osprey", "ghost", "COUNT", 2, "STREAMS", "cams", ">")
    for _ in range(2):  # a worker that took the poison job died with it, twice more
        c.call("XCLAIM", "cams", "osprey", "ghost", 0, poison)
    assert [e[3] for e in c.call("XPENDING", "cams", "osprey", "-", "+", 10)] == [3, 1]
    time.sleep(0.2)
    port = free_port()
    w = start(spawn, tmp_path, r, "cams", tb_config([slow_model(tmp_path, 0)]),
              "--claim-idle-ms", "100", "--max-deliveries", "3", "--http", str(port), listen=True)
    res = by_id(wait_results(c, "cams:results", 2, what=w.describe))
    assert res["poison"][0]["status"] == b"error", res
    assert "more than --max-deliveries 3" in json.loads(res["poison"][0]["result"])["error"]
    assert int(res["poison"][0]["deliveries"]) == 4
    assert res["twice"][0]["status"] == b"served" and int(res["twice"][0]["deliveries"]) == 2
    assert group_pending(c, "cams") == 0
    k = counters(w)
    assert k["jobsPoisoned"] == 1 and k["jobsReclaimed"] == 2, k
    assert "job poison" in w.stderr_text()
    metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    for line in ('osprey_jobs_total{event="poisoned"} 1', 'osprey_jobs_total{event="reclaimed"} 2',
                 'osprey_jobs_total{event="served"} 1', 'osprey_jobs_total{event="failed"} 1'):
        assert line in metrics, metrics


def test_a_redis_restart_loses_nothing(spawn, redis, tmp_path):
    r = redis(aof=True)
    c = r.client()
    model = slow_model(tmp_path, 60)
    w = start(spawn, tmp_path, r, "cams", tb_config([model], concurrency=1))
    jpeg = media_bytes("messi5.jpg")
    for i in range(40):
        submit(c, "cams", f"j{i}", model="slow", data=jpeg)
    wait_results(c, "cams:results", 10, what=w.describe)
    c.close()
    r.stop()
    time.sleep(1.0)  # the worker runs what it holds, and cannot file it
    r.start()
    c = r.client()
    res = by_id(wait_results(c, "cams:results", 40, what=w.describe))
    assert sorted(res) == sorted(f"j{i}" for i in range(40))
    assert all(len(v) == 1 and v[0]["status"] == b"served" for v in res.values())
    log = w.stderr_text()
    assert "lost redis://127.0.0.1" in log and "connected to redis://127.0.0.1" in log, log
    assert group_pending(c, "cams") == 0
    assert w.alive()


def test_sigterm_finishes_what_is_held_and_claims_no_more(spawn, redis, tmp_path):
    r = redis()
    c = r.client()
    model = slow_model(tmp_path, 200)
    w = start(spawn, tmp_path, r, "cams", tb_config([model], concurrency=1), name="w")
    jpeg = media_bytes("messi5.jpg")
    for i in range(12):
        submit(c, "cams", f"j{i}", model="slow", data=jpeg)
    end = time.monotonic() + WAIT
    while len(held_by(c, "w")) < 3:
        assert time.monotonic() < end, w.describe()
        time.sleep(0.005)
    held = {e[0] for e in held_by(c, "w")}
    w.signal(signal.SIGTERM)
    assert w.wait() == 0, w.describe()
    res = by_id(entries(c, "cams:results"))
    ids = {e: f["id"].decode() for e, f in entries(c, "cams")}
    assert all(ids[e.decode()] in res for e in held), (held, res)
    assert all(len(v) == 1 for v in res.values())
    assert group_pending(c, "cams") == 0
    # the rest stay in the stream, never delivered, for the other workers
    left = c.call("XREADGROUP", "GROUP", "osprey", "next", "COUNT", 100, "STREAMS", "cams", ">")
    assert len(res) < 12 and len(left[0][1]) == 12 - len(res), (res, left)


def test_a_password_is_never_printed(spawn, redis, tmp_path):
    r = redis(password="s3cret-pw")
    c = r.client()
    w = start(spawn, tmp_path, r, "cams", tb_config([slow_model(tmp_path, 0)]))
    submit(c, "cams", "j", model="slow", data=media_bytes("messi5.jpg"))
    wait_results(c, "cams:results", 1, what=w.describe)
    port = r.port
    bad = spawn("--config", tmp_path / "models-0.json", "--jobs",
                f"redis://:wrong-pw@127.0.0.1:{port}/cams", stdio=False)
    end = time.monotonic() + WAIT
    while "credentials" not in bad.stderr_text():
        assert time.monotonic() < end and bad.alive(), bad.describe()
        time.sleep(0.05)
    for log in (w.stderr_text(), bad.stderr_text()):
        assert "s3cret-pw" not in log and "wrong-pw" not in log, log
        assert f"redis://***@127.0.0.1:{port}/0/cams" in log, log


def test_bad_options_are_refused(spawn, tmp_path):
    cfg = tmp_path / "m.json"
    cfg.write_text(json.dumps(tb_config([slow_model(tmp_path, 0)])))
    for args, text in ((["--jobs", "redis://127.0.0.1:1/s"], "needs --config"),
                       (["--config", cfg, "--jobs", "redis://:pw@127.0.0.1:99999/s"], "port"),
                       (["--config", cfg, "--jobs", "redis://127.0.0.1:6379"], "stream"),
                       (["--config", cfg, "--jobs", "nats://127.0.0.1:4222/s"], "no jobs engine"),
                       (["--config", cfg, "--listen", f"unix:{tmp_path}/s", "--group", "g"],
                        "go with --jobs"),
                       (["--config", cfg, "--jobs", "redis://127.0.0.1:1/s", "--max-deliveries", "0"],
                        "max-deliveries")):
        w = spawn(*args, stdio=False)
        rc = w.wait()
        assert rc != 0 and text in w.stderr_text(), (args, w.describe())
        assert "pw" not in w.stderr_text()


# ---- a Redis that lies -----------------------------------------------------------

def vm_kb(pid, key):
    """VmRSS or VmHWM (the peak) of a live process, in KiB."""
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {key} for {pid}")


def test_a_lying_redis_is_dropped_not_buffered(spawn, tmp_path):
    """A server on the --jobs address that announces a 2 GiB bulk and streams
    it: the worker reads no more than its --max-frame and a little, drops the
    connection saying why, and reconnects; its memory stays where it was."""
    fake = LyingRedis(limit=384 << 20)
    cfg = tmp_path / "models.json"
    cfg.write_text(json.dumps(tb_config([slow_model(tmp_path, 0)])))
    w = spawn("--config", cfg, "--jobs", fake.url("cams"), "--max-frame", str(1 << 20), stdio=False)
    w.serving("serving jobs from", timeout=WAIT)
    end = time.monotonic() + WAIT
    while len(fake.lies) < 3:  # three lies told, each ended by the worker
        assert time.monotonic() < end and w.alive(), (fake.lies, w.describe())
        time.sleep(0.05)
    hwm = vm_kb(w.proc.pid, "VmHWM")
    log = w.stderr_text()
    assert "redis sent an item of more than 1114112 bytes" in log, log
    assert "reconnecting" in log and fake.connections >= 3, (fake.connections, log)
    # each lie ended once the worker had read 1 MiB and 64 KiB, plus what the two
    # sockets' buffers held; read whole, each would have been all 384 MiB
    assert max(fake.lies[:3]) < 16 << 20, fake.lies
    print(f"lies {fake.lies} peak RSS {hwm} KiB")
    # bounded memory, measured without a sanitizer (ASan's quarantine keeps
    # what was freed: the figure would be its, not the reader's)
    if not os.environ.get("OSPREY_SANITIZE"):
        assert hwm < 160 << 10, f"peak RSS {hwm} KiB"
    fake.close()


def test_a_job_past_max_frame_is_answered_unread(spawn, redis, tmp_path):
    """A job whose data the worker will never read (2 MiB past a 1 MiB
    --max-frame, in a Redis without proto-max-bulk-len): its first delivery is
    dropped unread, and its takeover, which measures its fields on the Redis
    server, answers it with an error instead of dropping it again forever."""
    r = redis()
    c = r.client()
    w = start(spawn, tmp_path, r, "cams", tb_config([slow_model(tmp_path, 0)]),
              "--max-frame", str(1 << 20), "--claim-idle-ms", "100")
    submit(c, "cams", "huge", model="slow", data=bytes(2 << 20), reply_to="answers")
    (_, got), = wait_results(c, "answers", 1, what=w.describe)
    assert got["id"] == b"huge" and got["status"] == b"error", got
    assert json.loads(got["result"])["error"] == \
        "a field of 2097152 bytes, more than --max-frame 1048576: not read", got
    log = w.stderr_text()
    assert "redis sent an item of more than 1114112 bytes" in log, log
    assert "a field of 2097152 bytes" in log, log
    # the worker serves on: a job within the bound
    submit(c, "cams", "small", model="slow", data=media_bytes("messi5.jpg"))
    (_, ok), = wait_results(c, "cams:results", 1, what=w.describe)
    assert ok["id"] == b"small" and ok["status"] == b"served", ok
    assert group_pending(c, "cams") == 0


def test_jobs_cli_drops_a_lying_redis(tmp_path):
    """osprey jobs reads no reply item past a job's size (64 MiB) either."""
    import subprocess
    from ospreyd_client import BIN
    fake = LyingRedis(limit=384 << 20, lie_to=("XINFO",))
    p = subprocess.Popen([str(BIN / "osprey"), "jobs", "status", "--redis", fake.url("cams")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    hwm = 0
    while p.poll() is None:
        try:
            hwm = max(hwm, vm_kb(p.pid, "VmHWM"))
        except (OSError, AssertionError):
            pass
        time.sleep(0.01)
    err = p.stderr.read()
    assert p.returncode != 0 and "redis sent an item of more than 67174400 bytes" in err, err
    assert fake.lies and fake.lies[0] < 80 << 20, fake.lies
    print(f"lies {fake.lies} peak RSS {hwm} KiB")
    # bounded memory, measured without a sanitizer (ASan's quarantine keeps
    # what was freed: the figure would be its, not the reader's)
    if not os.environ.get("OSPREY_SANITIZE"):
        assert hwm < 200 << 10, f"peak RSS {hwm} KiB"
    fake.close()


def test_jobs_status_survives_replies_of_the_wrong_shape(tmp_path):
    """Integers where names belong, and a name with a NUL: osprey jobs status
    reads what it can and prints, never reads a string that is not there."""
    import subprocess
    from ospreyd_client import BIN
    groups = b"*2\r\n*2\r\n:1\r\n:2\r\n*4\r\n$4\r\nname\r\n$8\r\nosprey\0x\r\n$3\r\nlag\r\n:9\r\n"
    fake = LyingRedis(lie_to=(), replies={"XINFO": groups, "XLEN": b":3\r\n"})
    st = subprocess.run([str(BIN / "osprey"), "jobs", "status", "--redis", fake.url("cams")],
                        capture_output=True, text=True, timeout=WAIT)
    assert st.returncode == 0, st.stderr
    s = json.loads(st.stdout)
    assert s["entries"] == 3 and s["group"] == {}, s  # "osprey\0x" is not the group osprey
    fake.close()


# ---- the host's side: osprey jobs --------------------------------------------------

def test_jobs_submit_prints_what_detect_prints(spawn, redis, tmp_path):
    import subprocess
    from ospreyd_client import BIN
    r = redis()
    c = r.client()
    w = start(spawn, tmp_path, r, "cams", {"runtime": "onnxruntime", "concurrency": 2,
                                            "models": [SSD_CATALOG]}, name="box1")
    inputs = [str(need(MEDIA / "messi5.jpg")), str(need(MEDIA / "vtest.avi"))]
    env = dict(os.environ)
    sub = subprocess.run([str(BIN / "osprey"), "jobs", "submit", "--redis", r.url("cams"),
                          "--every", "150", *inputs], capture_output=True, text=True,
                         timeout=WAIT * 2, env=env)
    assert sub.returncode == 0, (sub.stderr, w.describe())
    # the worker's config decides thresholds: the wire's (0.3, suppression per label,
    # one look), which osprey detect gives with these options
    det = subprocess.run([str(BIN / "osprey"), "detect", "--model", "ssd-oidv4", "--threshold", "0.3",
                          "--per-class-nms", "--one-look", "--per-frame", "--every", "150", "--out", str(tmp_path), *inputs], capture_output=True, text=True, timeout=WAIT * 2, env=env)
    assert det.returncode == 0, det.stderr
    got = [json.loads(x) for x in sub.stdout.splitlines()]
    want = [json.loads(x) for x in det.stdout.splitlines() if '"detections"' in x]
    assert [(g["source"], g["frame"]) for g in got] == [(d["source"], d["frame"]) for d in want]
    assert len(got) == 1 + len(range(0, 795, 150)), got
    for g, d in zip(got, want):
        assert [k for k in g if k not in ("worker",)] == list(d), (g, d)
        assert detections_match(g, d, px=0.5, score=0.001), (g, d)
    # the stream is left as it was found: the jobs and the reply stream are gone
    assert c.call("XLEN", "cams") == 0
    assert not [k for k in c.call("KEYS", "cams:reply:*")]
    st = subprocess.run([str(BIN / "osprey"), "jobs", "status", "--redis", r.url("cams")],
                        capture_output=True, text=True, timeout=WAIT)
    assert st.returncode == 0, st.stderr
    s = json.loads(st.stdout)
    assert s["group"]["name"] == "osprey" and s["group"]["pending"] == 0, s
    assert [x["name"] for x in s["consumers"]] == ["box1"] and s["consumers"][0]["pending"] == 0
