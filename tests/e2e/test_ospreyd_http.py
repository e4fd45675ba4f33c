"""ospreyd --http (docs/http.md): health, readiness while a model loads,
the models and mem_stats as JSON, Prometheus metrics that promtool accepts
and that count the frames served over the pipe protocol, the event stream,
the dashboard in headless Chromium, and the bind's safety."""
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from ospreyd_client import (BIN, model, ROOT, SANITIZED, SSD_CATALOG, TIMEOUT, free_port, http_connection,  # noqa: F401
                            media_image, need, solid, spawn, tb_script)

BROWSER_DIR = Path(__file__).resolve().parent / "browser"


TOKEN = "k3Zq9-osprey-http-token-0123456789"


def get(port, path, method="GET", body=None, timeout=10, headers=None, source="127.0.0.1"):
    """(status, headers, body text) of one request to 127.0.0.1:port, sent
    from the address source (another loopback address is another host)."""
    c = http_connection(port, timeout, source)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        return r.status, dict(r.getheaders()), r.read().decode()
    finally:
        c.close()


def wait_http(w, port, path="/healthz", timeout=TIMEOUT):
    end = time.monotonic() + timeout
    while True:
        try:
            return get(port, path, timeout=2)
        except OSError:
            if not w.alive():
                pytest.fail(f"ospreyd exited before its HTTP door answered\n{w.describe()}")
            if time.monotonic() > end:
                pytest.fail(f"no HTTP answer on port {port}\n{w.describe()}")
            time.sleep(0.05)


def serve(spawn, tmp_path, config):
    """ospreyd on a TCP socket with config preloaded and --http on a free port."""
    cfg = tmp_path / "ospreyd.json"
    cfg.write_text(json.dumps(config))
    port, hport = free_port(), free_port()
    w = spawn("--listen", f"tcp:127.0.0.1:{port}", "--config", cfg, "--http", f"127.0.0.1:{hport}",
              stdio=False)
    w.connect = lambda: w.connect_tcp(port)
    w.hport = hport
    return w


def ready_conn(w):
    conn = w.connect()
    ready = conn.hello({"protocolVersion": 2})
    assert ready["status"] == "ready", ready
    return conn


def parse_metrics(text):
    """{(name, frozenset(labels.items())): value} of an exposition text."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)', line)
        assert m, f"not a sample line: {line!r}"
        labels = dict(re.findall(r'([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        out[(m.group(1), frozenset(labels.items()))] = float(m.group(3))
    return out


def sample(metrics, name, **labels):
    key = (name, frozenset(labels.items()))
    assert key in metrics, f"no {name}{labels} in the scrape"
    return metrics[key]


@pytest.fixture
def ssd_http(spawn, tmp_path):
    model("ssd-oidv4")
    w = serve(spawn, tmp_path, {"runtime": "onnxruntime", "models": [SSD_CATALOG], "concurrency": 2})
    wait_http(w, w.hport)
    return w


def test_metrics_count_pipe_frames_and_pass_promtool(ssd_http, tmp_path):
    w = ssd_http
    conn = ready_conn(w)
    img = media_image("messi5.jpg")
    for _ in range(6):
        rec = conn.infer_raw(0, img)
        assert rec.get("kind") == "detections", rec
    status, headers, text = get(w.hport, "/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
    m = parse_metrics(text)
    assert sample(m, "osprey_frames_total", model="ssd-oidv4", outcome="served") == 6
    for outcome in ("shed", "expired", "error"):
        assert sample(m, "osprey_frames_total", model="ssd-oidv4", outcome=outcome) == 0
    for stage in ("queue", "preprocess", "predict", "total"):
        assert sample(m, "osprey_frame_duration_seconds_count", model="ssd-oidv4", stage=stage) == 6
        assert sample(m, "osprey_frame_duration_seconds_bucket", model="ssd-oidv4", stage=stage,
                      le="+Inf") == 6
        for le in ("0.001", "1"):
            sample(m, "osprey_frame_duration_seconds_bucket", model="ssd-oidv4", stage=stage, le=le)
    total = sample(m, "osprey_frame_duration_seconds_sum", model="ssd-oidv4", stage="total")
    parts = sum(sample(m, "osprey_frame_duration_seconds_sum", model="ssd-oidv4", stage=s)
                for s in ("queue", "preprocess", "predict"))
    assert total > 0 and abs(total - parts) < 0.001 * 6 + 0.01 * total
    assert sample(m, "osprey_queue_depth", model="ssd-oidv4") == 0
    assert sample(m, "osprey_model_loaded", model="ssd-oidv4") == 1
    assert sample(m, "osprey_resident_memory_bytes") > 50e6
    # every family has HELP and TYPE lines
    families = set(re.findall(r"^# TYPE (\S+) ", text, re.M))
    assert set(re.findall(r"^# HELP (\S+) ", text, re.M)) == families
    assert {"osprey_frames_total", "osprey_frame_duration_seconds", "osprey_queue_depth",
            "osprey_model_loaded", "osprey_resident_memory_bytes"} <= families
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing (Debian's prometheus; scripts/bootstrap.sh installs it)"
    r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(), (r.stdout, r.stderr)


def test_models_stats_and_ready(ssd_http):
    w = ssd_http
    conn = ready_conn(w)
    conn.infer_raw(0, solid(300, 300))
    status, headers, body = get(w.hport, "/v1/models")
    assert status == 200 and headers["Content-Type"] == "application/json"
    (m,) = json.loads(body)["models"]
    assert m["index"] == 0 and m["name"] == "ssd-oidv4" and m["state"] == "loaded"
    assert m["file"].endswith("ssd-oidv4.onnx") and m["postprocessor"] == "ssd"
    assert m["input"].startswith("300x300x3 ")
    assert m["counters"]["served"] == 1 and m["counters"]["shed"] == 0
    assert m["counters"]["p50Ms"] > 0 and m["loadMs"] > 0 and m["error"] is None
    status, _, body = get(w.hport, "/v1/stats")
    assert status == 200
    stats = json.loads(body)
    pipe = conn.mem_stats()
    assert stats["cmd"] == "mem_stats" and stats["status"] == "ok"
    assert set(stats) == set(pipe) and set(stats["counters"]) == set(pipe["counters"])
    assert stats["counters"]["inferRaw"] == 1 and stats["modelsLoaded"] == 1
    status, _, body = get(w.hport, "/readyz")
    assert status == 200 and json.loads(body) == {"ready": True, "models": 1, "notReady": []}
    assert get(w.hport, "/healthz")[:1] == (200,)


def test_readyz_is_503_while_a_model_loads(spawn, tmp_path):
    release = tmp_path / "release"  # the load is held until the test lets it go
    model = tb_script(tmp_path / "slow.json", load_block_file=release)
    w = serve(spawn, tmp_path, {"runtime": "test", "models": [model]})
    end = time.monotonic() + TIMEOUT
    while True:  # the door may answer before the config is read: that is a 503 too, with a reason
        status, _, body = wait_http(w, w.hport, "/readyz")
        assert status == 503, body
        doc = json.loads(body)
        assert doc["ready"] is False
        if "reason" not in doc:
            break
        assert doc["reason"] == "waiting for the startup config" and doc["notReady"] == [], doc
        assert time.monotonic() < end, w.describe()
        time.sleep(0.05)
    assert doc["notReady"] == [{"index": 0, "name": "slow", "state": "loading", "error": None}]
    assert get(w.hport, "/healthz")[0] == 200  # alive while it loads
    m = parse_metrics(get(w.hport, "/metrics")[2])
    assert sample(m, "osprey_model_loaded", model="slow") == 0
    release.touch()
    end = time.monotonic() + TIMEOUT
    while get(w.hport, "/readyz")[0] != 200:
        assert time.monotonic() < end, w.describe()
        time.sleep(0.05)
    m = parse_metrics(get(w.hport, "/metrics")[2])
    assert sample(m, "osprey_model_loaded", model="slow") == 1


def test_events_say_starting_until_the_cameras_start(spawn, tmp_path):
    """The cameras start once the startup models are loaded, the HTTP door
    before: meanwhile /api/events is 503 "starting", never a 404 saying
    the config names no database."""
    release = tmp_path / "release"
    model = tb_script(tmp_path / "slow.json", load_block_file=release)
    w = serve(spawn, tmp_path, {"runtime": "test", "models": [model],
                                "events": {"db": str(tmp_path / "events.db")},
                                "cameras": [{"name": "door", "model": "slow", "fps": 1,
                                             "url": f"rtsp://127.0.0.1:{free_port()}/x"}]})
    status, _, body = wait_http(w, w.hport, "/api/events")
    assert status == 503 and "starting" in json.loads(body)["error"], body
    assert get(w.hport, "/api/events/1.000000-1/snapshot.jpg")[0] == 503
    release.touch()
    end = time.monotonic() + TIMEOUT
    while (r := get(w.hport, "/api/events"))[0] != 200:
        assert r[0] == 503 and time.monotonic() < end, (r, w.describe())
        time.sleep(0.05)
    assert json.loads(r[2]) == []


def test_readyz_names_a_failed_model(spawn, tmp_path):
    good = tb_script(tmp_path / "good.json")
    bad = tb_script(tmp_path / "bad.json", load_error="no such weights")
    w = serve(spawn, tmp_path, {"runtime": "test", "models": [good, bad]})
    conn = ready_conn(w)  # the socket opens after the preload
    status, _, body = get(w.hport, "/readyz")
    assert status == 503
    (nr,) = json.loads(body)["notReady"]
    assert nr["index"] == 1 and nr["name"] == "bad" and nr["state"] == "failed"
    assert "no such weights" in nr["error"]
    models = {m["name"]: m for m in json.loads(get(w.hport, "/v1/models")[2])["models"]}
    assert models["good"]["state"] == "loaded" and models["bad"]["state"] == "failed"
    # a load command that succeeds makes it ready
    r = conn.command({"cmd": "load", "index": 1, "config": good})
    assert r["status"] == "ok", r
    assert get(w.hport, "/readyz")[0] == 200


def test_event_stream_reports_frames_per_second(ssd_http):
    w = ssd_http
    conn = ready_conn(w)
    stop = threading.Event()
    load = threading.Thread(target=lambda: [conn.infer_raw(0, solid(300, 300)) for _ in iter(stop.is_set, True)],
                            daemon=True)
    load.start()
    try:
        c = http.client.HTTPConnection("127.0.0.1", w.hport, timeout=10)
        c.request("GET", "/events")
        r = c.getresponse()
        assert r.status == 200 and r.getheader("Content-Type") == "text/event-stream"
        events = []
        while len(events) < 3:
            line = r.readline().decode()
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
        c.close()
    finally:
        stop.set()
        load.join(TIMEOUT)
    later = events[-1]
    (m,) = later["models"]
    assert m["name"] == "ssd-oidv4" and m["state"] == "loaded"
    assert m["fps"] > 0 and m["p50Ms"] > 0 and m["p99Ms"] >= m["p50Ms"]
    assert 0.5 < later["intervalS"] < 3 and later["rssBytes"] > 0
    assert any(e["state"] == "loaded" and e["name"] == "ssd-oidv4" for e in events[0]["loadEvents"])
    assert later["loadEvents"] == []  # each event only once


@pytest.fixture
def ssd_http_token(spawn, tmp_path):
    model("ssd-oidv4")
    cfg = tmp_path / "ospreyd.json"
    cfg.write_text(json.dumps({"runtime": "onnxruntime", "models": [SSD_CATALOG], "concurrency": 2}))
    port, hport = free_port(), free_port()
    w = spawn("--listen", f"tcp:127.0.0.1:{port}", "--config", cfg, "--http", f"127.0.0.1:{hport}",
              "--auth-token-file", token_file(tmp_path), stdio=False)
    w.connect = lambda: w.connect_tcp(port)
    w.hport = hport
    wait_http(w, hport)
    return w


@pytest.mark.parametrize("with_token", [False, True], ids=["open", "token"])
def test_dashboard_in_headless_chromium(request, tmp_path, with_token):
    """The page reads /events with fetch, sending the token it was opened
    with (/#token=…) as Authorization: Bearer."""
    w = request.getfixturevalue("ssd_http_token" if with_token else "ssd_http")
    node, chromium = shutil.which("node"), Path("/usr/bin/chromium")
    driver = BROWSER_DIR / "node_modules" / "playwright-core"
    assert node and chromium.exists() and driver.exists(), \
        "node, Debian's chromium and tests/e2e/browser/node_modules (scripts/bootstrap.sh) are needed"
    status, headers, page = get(w.hport, "/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert 'fetch("/events"' in page and "http://" not in page and "https://" not in page
    conn = ready_conn(w) if not with_token else w.connect()
    if with_token:
        assert conn.hello({"protocolVersion": 2, "authToken": TOKEN})["status"] == "ready"
    url = f"http://127.0.0.1:{w.hport}/" + (f"#token={TOKEN}" if with_token else "")
    stop = threading.Event()
    load = threading.Thread(target=lambda: [conn.infer_raw(0, solid(300, 300)) for _ in iter(stop.is_set, True)],
                            daemon=True)
    shot = w.workdir / "dashboard.png"  # next to ospreyd's log
    load.start()
    try:
        r = subprocess.run([node, str(BROWSER_DIR / "dashboard.mjs"), url,
                            str(shot), "ssd-oidv4", str(tmp_path / "chromium-profile")],
                           capture_output=True, text=True, timeout=120, cwd=BROWSER_DIR)
    finally:
        stop.set()
        load.join(TIMEOUT)
    assert r.returncode == 0, f"{r.stdout}\n{r.stderr}"
    seen = json.loads(r.stdout.strip().splitlines()[-1])
    nonzero = [v for v in seen["fps"] if v > 0]
    assert nonzero and len(set(nonzero)) >= 2, seen
    assert seen["state"] == "loaded"
    assert shot.stat().st_size > 10000
    if with_token:
        assert TOKEN not in w.stderr_text()
        assert seen.get("url") and "token" not in seen["url"], seen  # taken out of the address bar
    keep = BIN.parent / "e2e"
    keep.mkdir(exist_ok=True)
    shutil.copy(shot, keep / "dashboard.png")
    print(f"dashboard screenshot: {shot} (and {keep / 'dashboard.png'})")


def token_file(tmp_path, text=TOKEN + "\n"):
    f = tmp_path / "token"
    f.write_text(text)
    f.chmod(0o600)
    return f


def test_bind_is_loopback_unless_asked(spawn, tmp_path):
    port = free_port()
    w = spawn("--http", str(port))
    wait_http(w, port)
    assert f"ospreyd: http on 127.0.0.1 port {port}" in w.stderr_text()
    assert "warning" not in w.stderr_text()
    # before the startup config: alive, not ready
    status, _, body = get(port, "/readyz")
    assert status == 503 and json.loads(body)["reason"] == "waiting for the startup config"
    # beyond loopback: refused at startup without a token, before anything is served
    for spec in (f"0.0.0.0:{free_port()}", f"[::]:{free_port()}"):
        w2 = spawn("--http", spec)
        assert w2.wait() == 2, w2.describe()
        assert f"--http {spec} is reachable from other machines: give --auth-token-file" in w2.stderr_text()
    port3 = free_port()
    w3 = spawn("--http", f"0.0.0.0:{port3}", "--auth-token-file", token_file(tmp_path))
    wait_http(w3, port3)
    assert f"http on 0.0.0.0 port {port3}, reachable from other machines" in w3.stderr_text()
    # the token file is the one rule for every door: a short one is refused here too
    short = tmp_path / "short"
    short.write_text("abc\n")
    w4 = spawn("--http", f"0.0.0.0:{free_port()}", "--auth-token-file", short)
    assert w4.wait() == 2 and "at least 16 bytes" in w4.stderr_text()


def test_every_page_but_healthz_needs_the_token(spawn, tmp_path):
    port = free_port()
    w = spawn("--http", f"0.0.0.0:{port}", "--auth-token-file", token_file(tmp_path))
    wait_http(w, port)
    assert get(port, "/healthz")[0] == 200
    status, headers, page = get(port, "/")  # the static page; what it shows comes from /events
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    good = {"Authorization": f"Bearer {TOKEN}"}
    for path in ("/readyz", "/v1/models", "/v1/stats", "/metrics", "/events", "/nope"):
        for given in (None, "Bearer wrong", f"Bearer {TOKEN[:-1]}", f"Bearer {TOKEN}x",
                      f"Basic {TOKEN}", TOKEN, "Bearer "):
            status, headers, body = get(port, path, headers={"Authorization": given} if given else {})
            assert status == 401, (path, given, status)
            assert headers["WWW-Authenticate"].startswith("Bearer") and "Authorization: Bearer" in body
            assert TOKEN not in body
    assert get(port, "/readyz", headers=good)[0] == 503  # no startup config yet: past the door
    assert get(port, "/v1/models", headers=good)[0] == 200
    assert get(port, "/metrics", headers=good)[0] == 200
    assert get(port, "/metrics", headers={"Authorization": f"bearer   {TOKEN}"})[0] == 200
    assert get(port, "/nope", headers=good)[0] == 404
    assert get(port, "/metrics", method="POST", headers=good)[0] == 405
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/events", headers=good)
    r = c.getresponse()
    assert r.status == 200 and r.getheader("Content-Type") == "text/event-stream"
    assert r.read1(4096).startswith(b"retry:")
    c.close()
    # the same token is the sockets' (docs/security.md); it is never logged
    assert TOKEN not in w.stderr_text()


def test_auth_token_file_goes_with_a_door_that_checks_it(spawn, tmp_path):
    w = spawn("--zmq", f"ipc://{tmp_path}/z", "--auth-token-file", token_file(tmp_path))
    assert w.wait() == 2 and "--auth-token-file goes with --listen or --http" in w.stderr_text()


def test_requests_a_peer_gets_wrong(spawn):
    port = free_port()
    w = spawn("--http", f"127.0.0.1:{port}")
    wait_http(w, port)
    assert get(port, "/nope")[0] == 404
    assert get(port, "/metrics/")[0] == 404
    assert get(port, "/metrics", method="POST")[0] == 405
    assert get(port, "/v1/models", method="DELETE")[0] == 405
    assert get(port, "/v1/models", method="PUT", body=b"x" * 1000)[0] in (405, 413)
    status, _, body = get(port, "/metrics", method="HEAD")
    assert status == 200 and body == ""
    # headers past the per-connection cap: refused, and the server goes on
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.putrequest("GET", "/healthz")
    c.putheader("X-Filler", "y" * 40000)
    try:
        c.endheaders()
        assert c.getresponse().status in (400, 413, 414, 431)
    except (ConnectionResetError, http.client.RemoteDisconnected, BrokenPipeError):
        pass  # or closed at once: either way nothing past the cap was kept
    c.close()
    assert get(port, "/healthz")[0] == 200
    assert w.alive()


def test_bad_http_option(spawn):
    for spec, why in (("nonsense", "from 1 to 65535"), ("::1:80", "brackets")):
        w = spawn("--http", spec)
        assert w.wait() == 2
        assert why in w.stderr_text()
    port = free_port()
    w = spawn("--http", str(port))
    wait_http(w, port)
    w2 = spawn("--http", str(port))  # the port is taken
    assert w2.wait() == 1
    assert "cannot listen on 127.0.0.1 port" in w2.stderr_text()


# ---- what a peer gets wrong on purpose ------------------------------------------------

def raw_request(port, data, timeout=10):
    """What the server answers (all of it, until it closes or resets) to these bytes."""
    out = b""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            while chunk := s.recv(65536):
                out += chunk
        except (ConnectionResetError, BrokenPipeError):
            pass
    return out


def test_nul_in_path_or_query_is_refused(spawn):
    """C cuts a string at its NUL: /healthz%00x was answered as /healthz."""
    port = free_port()
    w = spawn("--http", f"127.0.0.1:{port}")
    wait_http(w, port)
    for target in ("/healthz%00x", "/healthz%00", "/metrics?name=a%00b", "/v1/models?%00=1",
                   "/%00/healthz"):
        status, _, body = get(port, target)
        assert status == 400 and "NUL" in body, (target, status, body)
    # escaped text that only looks like it is not a NUL
    assert get(port, "/healthz%2500")[0] == 404
    assert get(port, "/metrics?name=%2500")[0] == 200
    assert get(port, "/healthz")[0] == 200 and w.alive()


def test_a_raw_nul_in_the_request_line_is_refused(spawn):
    """A raw NUL byte cuts the target before osprey reads it: /healthz\\0x
    was answered as /healthz, /metrics\\0/../x as /metrics."""
    port = free_port()
    w = spawn("--http", f"127.0.0.1:{port}")
    wait_http(w, port)
    for target in (b"/healthz\0x", b"/metrics\0/../x", b"/healthz\0", b"/metrics?a=b\0c",
                   b"/healthz\0HTTP/1.1"):
        out = raw_request(port, b"GET " + target + b" HTTP/1.1\r\nHost: osprey\r\n\r\n")
        head, _, body = out.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400") and b"NUL" in body, (target, out[:200])
    # what the library tolerates around a target is still read as before
    for line, status in ((b"GET /healthz HTTP/1.1", b"200"), (b"GET  /healthz HTTP/1.1", b"200"),
                         (b"GET /healthz  HTTP/1.1", b"404"), (b"GET /metrics?x=1 HTTP/1.1", b"200")):
        out = raw_request(port, line + b"\r\nHost: osprey\r\n\r\n")
        assert out.startswith(b"HTTP/1.1 " + status), (line, out[:200])
    assert w.alive()


HEADER_S = 10  # the door's deadline for a request's header (src/server/http/http.c, docs/http.md)


def test_a_slow_but_whole_header_is_answered(spawn):
    """The header deadline cuts only what is past it: a header sent in five
    pieces over 2 s (a fifth of the deadline) is answered."""
    port = free_port()
    w = spawn("--http", f"127.0.0.1:{port}")
    wait_http(w, port)
    req = b"GET /healthz HTTP/1.1\r\nHost: osprey\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=HEADER_S + 10) as s:
        for i in range(0, len(req), 8):
            s.sendall(req[i:i + 8])
            time.sleep(0.5)
        reply = s.recv(65536)
    assert reply.startswith(b"HTTP/1.1 200"), reply


class Drip:
    """n connections from the address source that each send a request's
    header one byte a second and never finish it (the slow-header attack);
    one the server closes is opened again at once. Records how long each
    closed connection lived."""
    HEAD = b"GET /healthz HTTP/1.1\r\nHost: osprey\r\nX-Drip: " + b"a" * 100000

    def __init__(self, port, n, source="127.0.0.1"):
        self.port, self.n, self.source = port, n, source
        self.lives = []
        self.stop = threading.Event()
        self.held = threading.Event()  # all n opened once
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _open(self):
        s = socket.socket()
        s.bind((self.source, 0))
        s.settimeout(10)
        s.connect(("127.0.0.1", self.port))
        s.setblocking(False)
        return [s, time.monotonic(), 0]

    def _run(self):
        conns = [self._open() for _ in range(self.n)]
        self.held.set()
        while not self.stop.wait(1.0):
            for i, c in enumerate(conns):
                s, t0, sent = c
                try:
                    closed = s.recv(4096) is not None  # data or EOF: the server let go
                except BlockingIOError:
                    closed = False
                except OSError:
                    closed = True
                if not closed:
                    try:
                        c[2] += s.send(self.HEAD[sent:sent + 1])
                    except BlockingIOError:
                        pass
                    except OSError:
                        closed = True
                if closed:
                    self.lives.append(time.monotonic() - t0)
                    s.close()
                    conns[i] = self._open()
        for c in conns:
            c[0].close()

    def __enter__(self):
        self.thread.start()
        assert self.held.wait(60), "the drip clients could not connect"
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(30)


def frames_per_second(conn, seconds):
    n, t0 = 0, time.monotonic()
    img = solid(300, 300)
    while time.monotonic() - t0 < seconds:
        assert "detections" in conn.infer_raw(0, img)
        n += 1
    return n / (time.monotonic() - t0)


def rss_kb(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


# How long the drip lasts: 20 s by default, a little over twice the header
# deadline, so every drip connection is closed and opened again at least
# once; OSPREY_E2E_DRIP_S=60 runs the full minute.
DRIP_S = float(os.environ.get("OSPREY_E2E_DRIP_S", "20"))


# alone: it compares the frames a second before and during the drip, and a
# test beside it would take its share of the cores in one half only
@pytest.mark.serial
def test_slow_clients_do_not_hold_the_probes_hostage(ssd_http):
    """256 connections drip a header byte a second; /healthz and /metrics,
    probed from another address (as a kubelet or Prometheus would be),
    answer within 2 s throughout, and frames keep flowing. On the door that
    held 32 connections and had no header deadline a probe waited ~50 s."""
    w = ssd_http
    conn = ready_conn(w)
    base_fps = frames_per_second(conn, 4)
    rss0 = rss_kb(w.proc.pid)
    probes, drip_fps, rss_peak = [], [], rss0
    with Drip(w.hport, 256) as drip:
        # one address holds at most 256 of the door's 512: a 257th from it is
        # turned away at once, while another address is served
        extra = raw_request(w.hport, b"GET /healthz HTTP/1.1\r\nHost: o\r\n\r\n")
        assert not extra.startswith(b"HTTP/1.1 200"), "the 257th connection from one address was served"
        frames = threading.Thread(target=lambda: drip_fps.append(frames_per_second(conn, DRIP_S)),
                                  daemon=True)
        frames.start()
        end = time.monotonic() + DRIP_S
        while time.monotonic() < end:
            for path in ("/healthz", "/metrics"):
                t0 = time.monotonic()
                try:
                    status = get(w.hport, path, timeout=10, source="127.0.0.2")[0]
                except OSError as e:
                    status = repr(e)
                probes.append((path, status, time.monotonic() - t0))
            rss_peak = max(rss_peak, rss_kb(w.proc.pid))
            time.sleep(0.5)
        frames.join(DRIP_S + 30)
        lives = list(drip.lives)
    worst = max(p[2] for p in probes)
    print(f"drip {DRIP_S:.0f} s, 256 connections: {len(probes)} probes, worst {worst * 1000:.0f} ms; "
          f"frames/s {base_fps:.1f} before, {drip_fps[0]:.1f} during; "
          f"RSS {rss0 // 1024} MiB before, {rss_peak // 1024} MiB at most during "
          f"({(rss_peak - rss0) / 256:.0f} KiB a connection); "
          f"{len(lives)} drip connections closed, lived {min(lives, default=0):.1f}-"
          f"{max(lives, default=0):.1f} s")
    bad = [p for p in probes if p[1] != 200 or p[2] > 2.0]
    assert not bad, f"probes not answered within 2 s: {bad[:10]}"
    # the header deadline closed every first-round drip connection, each at
    # about 10 s (bounds: 8 s, and 10 s plus a second of the drip's own
    # polling and 4 s of slack; with no deadline none is ever closed)
    assert len(lives) >= 256, f"only {len(lives)} drip connections were closed"
    assert all(HEADER_S - 2 <= t <= HEADER_S + 5 for t in lives), sorted(lives)[:5] + sorted(lives)[-5:]
    # the frame path: a generous bound (a third of the rate before), since
    # other work shares this machine; the figures are printed above
    assert drip_fps and drip_fps[0] >= base_fps / 3, (base_fps, drip_fps)
    # memory a connection may hold: its 32 KiB and a thread's touched stack
    # (a sanitizer's shadow of each thread is its own: measured without one)
    if not os.environ.get("OSPREY_SANITIZE"):
        assert rss_peak - rss0 < 256 * 512, (rss0, rss_peak)
    # the operator sees it: each close is counted
    # (from the probes' address: the drip's may still hold its 256 while they close)
    closed = sample(parse_metrics(get(w.hport, "/metrics", source="127.0.0.2")[2]),
                    "osprey_http_header_timeouts_total")
    assert closed >= len(lives), (closed, len(lives))
