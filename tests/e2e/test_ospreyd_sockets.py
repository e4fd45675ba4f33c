"""ospreyd --listen (extension): many connections, each with its own
handshake and wire version, sharing the models the --config file preloads."""
import json
import signal
import socket
import struct
import threading
import time

import pytest

from ospreyd_client import (model, MSG_COMMAND, MSG_JPEG, MSG_RAW, SSD_CATALOG,
                            ULTRAFACE_CATALOG, check_clean, frame, free_port, iou, media_bytes,
                            media_image, need, p_raw, person, solid, spawn, tb_config,  # noqa: F401
                            tb_script)

TRUNC_V2 = {"error": "truncated deadline prefix on msg_type=2 (3 bytes, need 8)"}
TRUNC_V1 = {"error": "truncated infer_raw header"}


def serve(spawn, tmp_path, config, transport="unix", *extra):
    cfg_file = tmp_path / "ospreyd.json"
    cfg_file.write_text(json.dumps(config))
    if transport == "unix":
        addr = tmp_path / "ospreyd.sock"
        w = spawn("--listen", f"unix:{addr}", "--config", cfg_file, *extra, stdio=False)
        w.connect = lambda: w.connect_unix(addr)
    else:
        port = free_port()
        w = spawn("--listen", f"tcp:127.0.0.1:{port}", "--config", cfg_file, *extra, stdio=False)
        w.connect = lambda: w.connect_tcp(port)
    return w


def hello(conn, version, models=None):
    cfg = {} if version is None else {"protocolVersion": version}
    if models is not None:
        cfg["models"] = models
    ready = conn.hello(cfg)
    assert ready["status"] == "ready" and ready["protocolVersion"] == 2, ready
    return ready


@pytest.fixture
def ssd_server(spawn, tmp_path):
    model("ssd-oidv4")
    return serve(spawn, tmp_path, {"runtime": "onnxruntime", "models": [SSD_CATALOG],
                                   "concurrency": 2})


def test_unix_two_versions_share_models(ssd_server):
    model("ultraface")
    a, b = ssd_server.connect(), ssd_server.connect()
    # a connection naming the preloaded model shares it (no second load);
    # one naming none counts none in its ready reply but serves the slots
    ra = hello(a, None, [SSD_CATALOG])
    rb = hello(b, 2)
    assert (ra["models"], ra["total"]) == (1, 1), ra
    assert (rb["models"], rb["total"]) == (0, 0), rb
    loads = [l for l in ssd_server.stderr_text().splitlines() if "loading model" in l]
    assert len(loads) <= 1, loads
    assert a.wire == 1 and b.wire == 2
    # each connection has its own wire version
    assert a.request(MSG_RAW, b"\x00\x01\x02", prefix=False) == TRUNC_V1
    assert b.request(MSG_RAW, b"\x00\x01\x02", prefix=False) == TRUNC_V2
    # and the same preloaded model
    assert person(a.infer_jpeg(0, media_bytes("messi5.jpg"))) >= 0.7
    assert person(b.infer_jpeg(0, media_bytes("messi5.jpg"))) >= 0.7
    # a load on one connection is seen by the other
    assert a.command({"cmd": "load", "index": 1, "config": ULTRAFACE_CATALOG})["status"] == "ok"
    assert b.status()["models"][1]["loaded"] is True
    faces = b.infer_raw(1, media_image("astronaut.png"))["detections"]
    assert len(faces) == 1 and iou(faces[0]["box"], [180, 62, 268, 174]) >= 0.7, faces
    # a frame cached on a connection is served to it
    assert b.cache_frame(4, media_image("messi5.jpg"))["status"] == "cached"
    assert person(b.infer_cached(0, 4)) >= 0.7
    for c in (a, b):
        check_clean(c)
    # a goes away; b carries on
    a.close()
    time.sleep(0.2)
    assert person(b.infer_jpeg(0, media_bytes("messi5.jpg"))) >= 0.7


def test_tcp_many_connections(spawn, tmp_path):
    model("ssd-oidv4")
    w = serve(spawn, tmp_path, {"runtime": "onnxruntime", "models": [SSD_CATALOG],
                                "concurrency": 2}, "tcp")
    conns = [w.connect() for _ in range(8)]
    for k, c in enumerate(conns):
        hello(c, 2 if k % 2 else 1)
    results, errors = {}, []
    messi = media_bytes("messi5.jpg")

    def client(k, c):
        try:
            results[k] = [c.infer_jpeg(0, messi, timeout=60) for _ in range(3)]
        except BaseException as e:  # reported below
            errors.append((k, e))

    threads = [threading.Thread(target=client, args=(k, c)) for k, c in enumerate(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    assert not errors, errors
    served = 0
    for k, recs in results.items():
        for r in recs:
            if r.get("dropped"):
                assert r.get("shedReason") == "queue-full", r
            else:
                assert person(r) >= 0.7, r
                served += 1
    assert len(results) == 8 and served >= 8, results
    for c in conns:
        check_clean(c)


def test_slow_reader_does_not_stall_others(spawn, tmp_path):
    m = tb_script(tmp_path / "m.json", faces=[(0.9, [0.1, 0.1, 0.5, 0.5])])
    w = serve(spawn, tmp_path, tb_config([m], concurrency=2))
    other = w.connect()  # waits for the socket
    hello(other, 1)
    # a client that handshakes, then floods requests and never reads a reply
    slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    slow.connect(str(tmp_path / "ospreyd.sock"))
    slow.sendall(frame(0, MSG_COMMAND, b"{}"))
    hdr = b""
    slow.settimeout(30)
    while len(hdr) < 8:
        hdr += slow.recv(8 - len(hdr))
    total, rid = struct.unpack("<II", hdr)
    body = b""
    while len(body) < total - 4:
        body += slow.recv(total - 4 - len(body))
    assert json.loads(body)["status"] == "ready"
    probe = frame(1, MSG_COMMAND, b'{"cmd": "mem_stats"}')
    flood_done = threading.Event()

    def flood():
        try:
            slow.settimeout(60)
            for _ in range(40):  # ~ 20 000 mem_stats, megabytes of replies
                slow.sendall(probe * 500)
        except OSError:
            pass
        flood_done.set()

    t = threading.Thread(target=flood, daemon=True)
    t.start()
    time.sleep(1.0)
    t0 = time.monotonic()
    for _ in range(20):
        rec = other.infer_raw(0, solid(32, 32), timeout=5)
        assert rec["detections"], rec
        assert other.mem_stats(timeout=5)["status"] == "ok"
    assert time.monotonic() - t0 < 10
    assert w.alive()
    # its unread replies passed 4 MiB long before the 20 000th request, and
    # the server stopped reading it: the flood is stuck in its sendall
    assert not flood_done.is_set()
    slow.close()
    time.sleep(0.3)
    assert other.infer_raw(0, solid(32, 32), timeout=5)["detections"]
    third = w.connect()
    hello(third, 2)
    assert third.infer_raw(0, solid(32, 32), timeout=5)["detections"]


def test_frame_over_cap_closes_only_that_connection(spawn, tmp_path):
    m = tb_script(tmp_path / "m.json")
    w = serve(spawn, tmp_path, tb_config([m]), "unix", "--max-frame", str(1 << 20))
    a, b = w.connect(), w.connect()
    hello(a, 1)
    hello(b, 1)
    a.send_bytes(struct.pack("<IIB", 5 + (3 << 20), 55, MSG_RAW) + bytes(1000))
    r = a.reply(55)
    assert isinstance(r.get("error"), str), r
    a.wait_closed(10)
    assert w.alive()
    assert b.infer_raw(0, solid(32, 32))["kind"] == "detections"
    c = w.connect()
    hello(c, 2)
    assert c.mem_stats()["status"] == "ok"


def test_first_frame_not_command_closes_connection(spawn, tmp_path):
    m = tb_script(tmp_path / "m.json")
    w = serve(spawn, tmp_path, tb_config([m]))
    bad = w.connect()
    bad.send(MSG_JPEG, b"\x00\xff\xd8")
    bad.wait_closed(10)
    assert w.alive()
    good = w.connect()
    hello(good, 1)
    assert good.infer_raw(0, solid(32, 32))["kind"] == "detections"


def test_disconnect_with_requests_in_flight(spawn, tmp_path):
    m = tb_script(tmp_path / "m.json", run_delay_ms=100)
    w = serve(spawn, tmp_path, tb_config([m], concurrency=1))
    gone = w.connect()
    hello(gone, 1)
    for _ in range(5):
        gone.send(MSG_RAW, p_raw(0, 8, 8, 0, bytes(192)))
    gone.send_command({"cmd": "status"})
    gone.close()
    stay = w.connect()
    hello(stay, 2)
    rec = stay.infer_raw(0, solid(32, 32), timeout=10)
    assert rec["kind"] == "detections" and "error" not in rec, rec
    time.sleep(0.8)
    assert w.alive()
    assert stay.mem_stats()["status"] == "ok"


def test_events_reach_connections(spawn, tmp_path):
    """The compile-finished-late event is an unsolicited frame on req_id
    0xFFFFFFFF: a socket host that issued the load sees it."""
    release = tmp_path / "go"
    hang = tb_script(tmp_path / "hang.json", load_block_file=release)
    # nothing preloaded: the script's folder is named a root
    w = serve(spawn, tmp_path, tb_config([], timeout_ms=300), "unix", "--model-root", tmp_path)
    c, d = w.connect(), w.connect()
    hello(c, 2)
    hello(d, 1)
    r = c.command({"cmd": "load", "index": 0, "config": hang})
    assert r["reason"] == "compile-timeout", r
    # the other connection's loads are refused too: the poison is the worker's
    r = d.command({"cmd": "load", "index": 1, "config": hang})
    assert r["reason"] == "worker-poisoned", r
    release.touch()
    for conn in (c, d):
        ev = conn.event(timeout=10)
        assert ev["event"] == "compile-finished-late" and ev["modelId"] == "hang", ev
        check_clean(conn)


def test_handshake_load_does_not_stall_others(spawn, tmp_path):
    """A connection whose handshake names a new model that is still loading
    must not stop the worker serving the connections already there: they are
    answered while that load is held, and the handshake completes once it is
    let go."""
    m = tb_script(tmp_path / "m.json", faces=[(0.9, [0.1, 0.1, 0.5, 0.5])])
    release = tmp_path / "release"
    slow = tb_script(tmp_path / "slowload.json", load_block_file=release)
    w = serve(spawn, tmp_path, tb_config([m], concurrency=2))
    a = w.connect()
    hello(a, 1)
    b = w.connect()
    b.send(MSG_COMMAND, json.dumps({"models": [m, slow]}).encode(), req_id=0)
    time.sleep(0.2)
    assert a.mem_stats(timeout=10)["status"] == "ok"
    assert a.infer_raw(0, solid(32, 32), timeout=10)["detections"]
    # a was served while b's load is still held (nothing has released it)
    assert not release.exists()
    release.touch()
    ready = b.reply(0, timeout=30)
    assert ready["status"] == "ready" and ready["models"] == 2, ready


# ---- the socket file: one server per path, replaced only when stale, gone at exit ----------


def test_second_daemon_refused_first_keeps_answering(spawn, tmp_path):
    m = tb_script(tmp_path / "m.json", faces=[(0.9, [0.1, 0.1, 0.5, 0.5])])
    first = serve(spawn, tmp_path, tb_config([m]))
    a = first.connect()
    hello(a, 2)
    sock = tmp_path / "ospreyd.sock"
    second = spawn("--listen", f"unix:{sock}", "--config", tmp_path / "ospreyd.json", stdio=False)
    assert second.wait() == 1, second.describe()
    err = second.stderr_text()
    assert f"cannot listen on unix:{sock}: a server is answering there" in err, err
    assert "loading model" not in err  # refused before its models load
    # the first still owns the path: the open connection and a new one are served
    assert a.infer_raw(0, solid(32, 32))["detections"]
    b = first.connect()
    hello(b, 1)
    rec = b.infer_raw(0, solid(32, 32))
    assert rec.get("detections"), rec
    assert first.alive()


def test_stale_socket_replaced(spawn, tmp_path):
    sock = tmp_path / "ospreyd.sock"
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(sock))  # a socket file no server answers on, as a killed run leaves
    dead.close()
    assert sock.is_socket()
    w = serve(spawn, tmp_path, tb_config([tb_script(tmp_path / "m.json")]))
    c = w.connect()
    hello(c, 2)
    assert c.mem_stats()["status"] == "ok"
    assert "was a stale socket (no server answered); replaced" in w.stderr_text()


def test_two_daemons_starting_at_once_on_a_stale_socket(spawn, tmp_path):
    """Both find the file stale; one takes the path and answers, the other is
    refused, never leaving the first deaf (its socket unlinked). Ten pairs."""
    cfg = tmp_path / "ospreyd.json"
    cfg.write_text(json.dumps(tb_config([tb_script(tmp_path / "m.json")])))
    for i in range(10):
        sock = tmp_path / f"s{i}.sock"
        dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        dead.bind(str(sock))
        dead.close()
        pair = [spawn("--listen", f"unix:{sock}", "--config", cfg, stdio=False) for _ in range(2)]
        deadline = time.time() + 20  # both still up then: one of them is deaf
        while all(w.alive() for w in pair) and time.time() < deadline:
            time.sleep(0.02)
        alive = [w for w in pair if w.alive()]
        assert len(alive) == 1, [w.describe() for w in pair]
        lost = next(w for w in pair if w is not alive[0])
        assert lost.wait() == 1, lost.describe()
        assert "a server is answering there" in lost.stderr_text(), lost.stderr_text()
        c = alive[0].connect_unix(sock)
        hello(c, 2)
        assert c.mem_stats()["status"] == "ok"
        alive[0].kill()


def test_other_file_at_socket_path_kept(spawn, tmp_path):
    sock = tmp_path / "ospreyd.sock"
    sock.write_text("not a socket")
    w = serve(spawn, tmp_path, tb_config([tb_script(tmp_path / "m.json")]))
    assert w.wait() == 1
    assert "the path exists and is not a socket" in w.stderr_text()
    assert sock.read_text() == "not a socket"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_socket_file_removed_on_exit(spawn, tmp_path, sig):
    sock = tmp_path / "ospreyd.sock"
    w = serve(spawn, tmp_path, tb_config([tb_script(tmp_path / "m.json")]))
    c = w.connect()
    hello(c, 2)
    assert sock.is_socket()
    w.signal(sig)
    assert w.wait() == 0, w.describe()
    assert not sock.exists()


def test_socket_file_removed_on_failed_start(spawn, tmp_path):
    # listening worked, a later part (the zmq endpoint) did not: the exit
    # leaves no socket file behind either
    sock = tmp_path / "ospreyd.sock"
    w = serve(spawn, tmp_path, tb_config([tb_script(tmp_path / "m.json")]), "unix",
              "--zmq", f"ipc://{tmp_path}/no/such/dir/zmq")
    assert w.wait() == 1, w.describe()
    assert "--zmq" in w.stderr_text()
    assert not sock.exists()


def test_a_handshake_load_past_its_bound_is_answered(spawn, tmp_path):
    """A handshake naming a model whose load hangs is answered once the load
    bound passes, without that model; the load is abandoned and poisons the
    worker for loads until it returns, as a load command's would."""
    m = tb_script(tmp_path / "m.json", faces=[(0.9, [0.1, 0.1, 0.5, 0.5])])
    release = tmp_path / "release"
    hang = tb_script(tmp_path / "hang.json", load_block_file=release)
    w = serve(spawn, tmp_path, tb_config([m], concurrency=2, timeout_ms=500))
    a = w.connect()
    hello(a, 2)
    b = w.connect()
    b.send(MSG_COMMAND, json.dumps({"models": [m, hang]}).encode(), req_id=0)
    ready = b.reply(0, timeout=30)
    assert ready["status"] == "ready" and ready["models"] == 1, ready
    r = a.command({"cmd": "load", "index": 2, "config": m})
    assert r["status"] == "error" and r["reason"] == "worker-poisoned", r
    release.touch()
    for conn in (a, b):
        ev = conn.event(timeout=10)
        assert ev["event"] == "compile-finished-late" and ev["modelId"] == "hang", ev
    assert a.command({"cmd": "load", "index": 2, "config": m})["status"] == "ok"
    rec = b.infer_raw(0, solid(32, 32))
    assert rec.get("detections"), rec
