"""ospreyd --http (docs/http.md): health, readiness while a model loads,
the models and mem_stats as JSON, Prometheus metrics that promtool accepts
and that count the frames served over the pipe protocol, the event stream,
the dashboard in headless Chromium, and the bind's safety."""
import http.client
import json
import os
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from ospreyd_client import (BIN, model, ROOT, SANITIZED, SSD_CATALOG, TIMEOUT, free_port,  # noqa: F401
                            media_image, need, solid, spawn, tb_script)

BROWSER_DIR = Path(__file__).resolve().parent / "browser"


def get(port, path, method="GET", body=None, timeout=10):
    """(status, headers, body text) of one request to 127.0.0.1:port."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, path, body=body)
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
    status, _, body = wait_http(w, w.hport, "/readyz")
    assert status == 503, body
    doc = json.loads(body)
    assert doc["ready"] is False
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


def test_dashboard_in_headless_chromium(ssd_http, tmp_path):
    w = ssd_http
    node, chromium = shutil.which("node"), Path("/usr/bin/chromium")
    driver = BROWSER_DIR / "node_modules" / "playwright-core"
    assert node and chromium.exists() and driver.exists(), \
        "node, Debian's chromium and tests/e2e/browser/node_modules (scripts/bootstrap.sh) are needed"
    status, headers, page = get(w.hport, "/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert "EventSource(\"/events\")" in page and "http://" not in page and "https://" not in page
    conn = ready_conn(w)
    stop = threading.Event()
    load = threading.Thread(target=lambda: [conn.infer_raw(0, solid(300, 300)) for _ in iter(stop.is_set, True)],
                            daemon=True)
    shot = w.workdir / "dashboard.png"  # next to ospreyd's log
    load.start()
    try:
        r = subprocess.run([node, str(BROWSER_DIR / "dashboard.mjs"), f"http://127.0.0.1:{w.hport}/",
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
    keep = BIN.parent / "e2e"
    keep.mkdir(exist_ok=True)
    shutil.copy(shot, keep / "dashboard.png")
    print(f"dashboard screenshot: {shot} (and {keep / 'dashboard.png'})")


def test_bind_is_loopback_unless_asked(spawn):
    port = free_port()
    w = spawn("--http", str(port))
    wait_http(w, port)
    assert f"ospreyd: http on 127.0.0.1 port {port}" in w.stderr_text()
    assert "warning" not in w.stderr_text()
    # before the startup config: alive, not ready
    status, _, body = get(port, "/readyz")
    assert status == 503 and json.loads(body)["reason"] == "waiting for the startup config"
    port2 = free_port()
    w2 = spawn("--http", f"0.0.0.0:{port2}")
    wait_http(w2, port2)
    assert (f"ospreyd: warning: http on 0.0.0.0 port {port2} is reachable from other machines"
            in w2.stderr_text())


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
