"""What a peer can reach and what it can make ospreyd do (docs/security.md):
files confined to the model roots, one answer for "not found or not
allowed", loopback and token for sockets, bounded handshakes, frames and
parameters, and a start that fails cleanly without a config."""
import json
import os
import socket
import stat
import struct
import subprocess
import time

import pytest

from ospreyd_client import (model_asset, MSG_COMMAND, MSG_RAW, ospreyd_exe, frame, free_port,  # noqa: F401
                            need, solid, spawn, tb_config, tb_script, worker)

FACE = [(0.9, [0.1, 0.1, 0.5, 0.5])]
TOKEN = "s3cr3t-token-0123456789abcdef"


def roots(tmp_path):
    """models/ (a root once --config names a model there) and secret/
    (outside every root), with a test-backend model in each."""
    models, secret = tmp_path / "models", tmp_path / "secret"
    models.mkdir()
    secret.mkdir()
    inside = tb_script(models / "face.json", faces=FACE)
    outside = tb_script(secret / "face.json", faces=FACE)
    (secret / "labels.txt").write_text("SECRET-0\nSECRET-1\n")
    return models, secret, inside, outside


def serve(spawn, tmp_path, config, *extra, transport="unix"):
    cfg = tmp_path / "ospreyd.json"
    cfg.write_text(json.dumps(config))
    if transport == "unix":
        addr = tmp_path / "ospreyd.sock"
        w = spawn("--listen", f"unix:{addr}", "--config", cfg, *extra, stdio=False)
        w.sock_path = addr
        w.connect = lambda: w.connect_unix(addr)
    else:
        host, port = transport, free_port()
        w = spawn("--listen", f"tcp:{host}:{port}", "--config", cfg, *extra, stdio=False)
        w.connect = lambda: w.connect_tcp(port)
    return w


def labels_seen(conn, idx):
    rec = conn.infer_raw(idx, solid(64, 64))
    return [d["label"] for d in rec.get("detections", [])], rec


# ---- files a peer names -------------------------------------------------------------

def test_labels_outside_the_roots_are_never_read(spawn, tmp_path):
    models, secret, inside, _ = roots(tmp_path)
    w = serve(spawn, tmp_path, tb_config([inside]))
    c = w.connect()
    assert c.hello({})["status"] == "ready"
    leak = str(secret / "labels.txt")
    r = c.command({"cmd": "load", "index": 1, "config": dict(inside, labels=leak)})
    assert r == {"cmd": "load", "index": 1, "status": "error",
                 "error": f"labels file not found or not allowed: {leak}"}, r
    # nor through a link inside the root, nor in a connection's handshake
    (models / "face.labels").symlink_to(secret / "labels.txt")
    link = tb_script(models / "face2.json", faces=FACE)
    (models / "face2.labels").symlink_to(secret / "labels.txt")
    b = w.connect()
    ready = b.hello({"models": [inside, dict(inside, labels=leak), link]})
    assert ready["status"] == "ready" and ready["total"] == 3, ready
    for idx in (0, 1, 2):
        got, rec = labels_seen(b, idx)
        assert not any("SECRET" in l for l in got), rec
    # a labels file inside the roots is read
    (models / "names.txt").write_text("first\nsecond\n")
    r = c.command({"cmd": "replace", "index": 1,
                   "config": dict(inside, labels=str(models / "names.txt"))})
    assert r["status"] == "ok", r
    got, rec = labels_seen(c, 1)
    assert got and set(got) <= {"first", "second"}, rec
    for conn in (b, c):
        assert not any(b"SECRET" in body for _, body in conn.raw)


def test_load_refusals_do_not_tell_what_exists(spawn, tmp_path):
    models, secret, inside, outside = roots(tmp_path)
    (secret / "garbage.onnx").write_bytes(b"not a model")
    (models / "escape.json").symlink_to(secret / "face.json")
    w = serve(spawn, tmp_path, tb_config([inside]))
    c = w.connect()
    c.hello({})
    probes = [outside["path"], str(secret / "garbage.onnx"), str(secret / "missing.onnx"),
              "/etc/passwd", "/etc/no-such-file", str(models / "escape.json"),
              str(models / "missing.json"), str(models / ".." / "secret" / "face.json")]
    texts = set()
    for i, path in enumerate(probes):
        r = c.command({"cmd": "load", "index": 2, "config": {"path": path, "postprocessor": "ultraface"}})
        assert r["status"] == "error", (path, r)
        texts.add(r["error"].replace(path, "<path>"))
    assert texts == {"model file not found or not allowed: <path>"}, texts
    # open_stream names a file too
    r = c.command({"cmd": "open_stream", "config": {"path": "/etc/passwd", "frameLen": 4}})
    assert r["error"] == "model file not found or not allowed: /etc/passwd", r
    # a model inside the roots loads
    other = tb_script(models / "other.json", faces=FACE)
    assert c.command({"cmd": "load", "index": 2, "config": other})["status"] == "ok"


def test_model_roots_option_replaces_the_default(spawn, tmp_path):
    models, secret, inside, outside = roots(tmp_path)
    w = serve(spawn, tmp_path, tb_config([inside]), "--model-root", secret)
    c = w.connect()
    c.hello({})
    assert c.command({"cmd": "load", "index": 1, "config": outside})["status"] == "ok"
    # --config's folder stays a root; the cache's models folder is not one now
    assert c.command({"cmd": "load", "index": 2, "config": inside})["status"] == "ok"
    r = c.command({"cmd": "load", "index": 3, "config": {"model": "ultraface"}})
    assert r["status"] == "error" and "not found or not allowed" in r["error"], r
    bad = spawn("--listen", f"unix:{tmp_path / 'x.sock'}", "--model-root", tmp_path / "nope", stdio=False)
    assert bad.wait(20) == 2 and "--model-root" in bad.stderr_text()


def test_stdio_host_keeps_its_own_paths(spawn, tmp_path):
    # the host that started the worker names any file, as with the Python worker
    _, secret, _, outside = roots(tmp_path)
    w = spawn()
    assert w.conn.hello(tb_config([outside]))["models"] == 1
    r = w.conn.command({"cmd": "load", "index": 1,
                        "config": dict(outside, labels=str(secret / "labels.txt"))})
    assert r["status"] == "ok", r
    got, rec = labels_seen(w.conn, 1)
    assert got and set(got) <= {"SECRET-0", "SECRET-1"}, rec


def test_devices_and_fifos_are_refused_at_once(spawn, tmp_path):
    _, secret, _, outside = roots(tmp_path)
    fifo = tmp_path / "model.fifo"
    os.mkfifo(fifo)
    (tmp_path / "big.labels").write_bytes(b"x\n" * (1 << 20))  # 2 MiB
    w = spawn()
    w.conn.hello(tb_config([], timeout_ms=5000))
    cases = [({"labels": "/dev/zero"}, "labels file is not a regular file: /dev/zero"),
             ({"labels": str(tmp_path / "big.labels")}, "labels file is larger than 1048576 bytes"),
             ({"path": str(fifo)}, f"model file is not a regular file: {fifo}")]
    for extra, text in cases:
        t0 = time.monotonic()
        r = w.conn.command({"cmd": "load", "index": 1, "config": dict(outside, **extra)})
        assert r["status"] == "error" and text in r["error"] and "reason" not in r, r
        assert time.monotonic() - t0 < 4, "answered before the load's bound"
    # the loader was never stuck: the next load is served
    assert w.conn.command({"cmd": "load", "index": 1, "config": outside})["status"] == "ok"
    st = w.conn.mem_stats()
    assert st["memory"]["rssKb"] < 1 << 20, st["memory"]


# ---- sockets: who may connect ------------------------------------------------------

def test_tcp_beyond_loopback_needs_a_token(spawn, tmp_path):
    port = free_port()
    w = spawn("--listen", f"tcp:0.0.0.0:{port}", stdio=False)
    try:
        rc = w.proc.wait(20)
    except subprocess.TimeoutExpired:
        pytest.fail("ospreyd listened on 0.0.0.0 without --auth-token-file")
    assert rc != 0 and "--auth-token-file" in w.stderr_text(), w.describe()


def token_file(tmp_path, text=TOKEN + "\n"):
    f = tmp_path / "token"
    f.write_text(text)
    f.chmod(0o600)
    return f


@pytest.mark.parametrize("transport", ["0.0.0.0", "unix"])
def test_every_connection_presents_the_token(spawn, tmp_path, transport):
    _, _, inside, _ = roots(tmp_path)
    w = serve(spawn, tmp_path, tb_config([inside]), "--auth-token-file", token_file(tmp_path),
              transport=transport)
    for given in (None, "wrong", TOKEN[:-1], TOKEN + "x", 12345):
        c = w.connect()
        cfg = {} if given is None else {"authToken": given}
        r = c.hello(cfg)
        assert r == {"status": "error", "error": "authentication failed"}, r
        c.wait_closed()
    good = w.connect()
    ready = good.hello({"authToken": TOKEN})
    assert ready["status"] == "ready", ready
    assert good.infer_raw(0, solid(64, 64))["detections"], "serves after the token"
    assert TOKEN not in w.stderr_text()


def test_token_file_must_be_a_real_secret(spawn, tmp_path):
    short = token_file(tmp_path, "abc\n")
    w = spawn("--listen", f"unix:{tmp_path / 's.sock'}", "--auth-token-file", short, stdio=False)
    assert w.wait(20) == 2 and "at least 16 bytes" in w.stderr_text()


def test_unix_socket_permissions(spawn, tmp_path):
    _, _, inside, _ = roots(tmp_path)
    w = serve(spawn, tmp_path, tb_config([inside]))
    w.connect().hello({})
    assert stat.S_IMODE(os.stat(w.sock_path).st_mode) == 0o660
    (tmp_path / "b").mkdir()
    w2 = serve(spawn, tmp_path / "b", tb_config([inside]), "--socket-mode", "0600")
    w2.connect().hello({})
    assert stat.S_IMODE(os.stat(w2.sock_path).st_mode) == 0o600


def test_read_only_sockets_cannot_change_models(spawn, tmp_path):
    models, _, inside, _ = roots(tmp_path)
    other = tb_script(models / "other.json", faces=FACE)
    w = serve(spawn, tmp_path, tb_config([inside]), "--read-only")
    c = w.connect()
    ready = c.hello({"models": [inside, other]})  # slot 1 is empty: not filled
    assert (ready["models"], ready["total"]) == (1, 2), ready
    text = "the server is read-only: socket connections may not change its models"
    for cmd in ({"cmd": "load", "index": 1, "config": other},
                {"cmd": "replace", "index": 0, "config": other},
                {"cmd": "unload", "index": 0},
                {"cmd": "reconfigure", "index": 0, "config": {"confidence": 0.99}}):
        r = c.command(cmd)
        assert r == {"cmd": cmd["cmd"], "index": cmd["index"], "status": "error", "error": text}, r
    st = c.status()["models"]
    assert st[0]["loaded"] is True and (len(st) < 2 or st[1]["loaded"] is False), st
    assert c.infer_raw(0, solid(64, 64))["detections"]


def test_a_silent_connection_is_closed(spawn, tmp_path):
    _, _, inside, _ = roots(tmp_path)
    w = serve(spawn, tmp_path, tb_config([inside]), "--handshake-timeout-ms", "300")
    silent, partial, talker = w.connect(), w.connect(), w.connect()
    talker.hello({})
    partial.send_bytes(struct.pack("<IIB", 100, 0, MSG_COMMAND) + b'{"runt')
    silent.wait_closed(timeout=15)
    partial.wait_closed(timeout=15)
    time.sleep(0.5)  # past the bound: the one that handshook stays
    assert talker.mem_stats()["status"] == "ok"
    assert "sent no startup config in time" in w.stderr_text()


def test_a_silent_connection_is_closed_by_default(spawn, tmp_path):
    # with no option at all: a connection that never handshakes was once held forever
    _, _, inside, _ = roots(tmp_path)
    w = serve(spawn, tmp_path, tb_config([inside]))
    silent = w.connect()
    t0 = time.monotonic()
    silent.wait_closed(timeout=30)
    assert time.monotonic() - t0 >= 9, "closed before the 10 s default"
    assert "sent no startup config in time" in w.stderr_text()


# ---- the start, frames and echoes ----------------------------------------------------

def test_eof_before_the_config_fails_at_once(tmp_path):
    exe = str(ospreyd_exe())
    try:
        r = subprocess.run([exe], stdin=subprocess.DEVNULL, capture_output=True, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("ospreyd </dev/null did not exit")
    assert r.returncode != 0 and b"before the startup config" in r.stderr, r
    p = subprocess.Popen([exe], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdin.close()
    assert p.wait(20) != 0
    p.stdout.close()
    p.stderr.close()
    # a file of frames is read to its end: a config and a probe, then EOF
    frames = tmp_path / "frames.bin"
    frames.write_bytes(frame(0, MSG_COMMAND, json.dumps(tb_config([])).encode()) +
                       frame(1, MSG_COMMAND, b'{"cmd": "mem_stats"}'))
    with open(frames, "rb") as f:
        r = subprocess.run([exe], stdin=f, capture_output=True, timeout=20)
    assert r.returncode == 0, r.stderr
    ids, off = [], 0
    while off < len(r.stdout):
        n, rid = struct.unpack_from("<II", r.stdout, off)
        ids.append(rid)
        off += 4 + n
    assert ids == [0, 1], r.stdout[:200]


@pytest.mark.parametrize("total_len", [0, 2, 4])
def test_frame_shorter_than_its_header_stdio(spawn, total_len):
    w = spawn()
    w.conn.hello(tb_config([]), req_id=7)
    rid = 4242 if total_len == 4 else 0
    body = struct.pack("<I", rid)[:total_len]
    w.conn.send_bytes(struct.pack("<I", total_len) + body)
    w.conn.send_bytes(frame(9, MSG_COMMAND, b'{"cmd": "mem_stats"}'))
    assert w.conn.reply(rid) == {"error": f"frame length {total_len} is below the 5-byte header"}
    assert w.wait(20) == 1
    assert not w.conn.has_reply(9), "nothing after the bad frame is read"
    assert "below the 5-byte header" in w.stderr_text()


def test_frame_shorter_than_its_header_socket(spawn, tmp_path):
    _, _, inside, _ = roots(tmp_path)
    w = serve(spawn, tmp_path, tb_config([inside]))
    bad, good = w.connect(), w.connect()
    bad.hello({})
    good.hello({})
    bad.send_bytes(struct.pack("<II", 4, 31337))
    assert bad.reply(31337) == {"error": "frame length 4 is below the 5-byte header"}
    bad.wait_closed()
    assert good.mem_stats()["status"] == "ok"


def test_echoed_strings_are_capped(spawn):
    w = spawn()
    ready = w.conn.hello(dict(tb_config([]), runtime="test" + "x" * (1 << 20)), timeout=60)
    assert ready["status"] == "ready" and len(ready["runtime"]) <= 64, len(ready["runtime"])
    assert len(w.stderr_text()) < 64 << 10
    r = w.conn.command({"cmd": "y" * 100000})
    assert r["status"] == "error" and len(r["cmd"]) <= 256 and len(r["error"]) <= 300, len(r["cmd"])


def test_reconfigure_with_a_list_is_refused(spawn, tmp_path):
    # the items of a list have no key; one read as a key's name killed the
    # server and every connection with it
    _, _, inside, _ = roots(tmp_path)
    w = serve(spawn, tmp_path, tb_config([inside]))
    bad, other = w.connect(), w.connect()
    bad.hello({})
    other.hello({})
    for index in (0, 1):  # a loaded slot and an empty one
        for config in ([1, 2], [{"confidence": 0.5}], "confidence"):
            r = bad.command({"cmd": "reconfigure", "index": index, "config": config})
            assert r == {"cmd": "reconfigure", "index": index, "status": "error",
                         "error": 'reconfigure needs a "config" object'}, (config, r)
    assert other.infer_raw(0, solid(64, 64))["detections"]
    assert w.alive()


@pytest.mark.parametrize("transport", ["stdio", "unix"])
def test_a_config_with_more_models_than_slots(spawn, tmp_path, transport):
    # 257 models once read a slot past the end of the table in the handshake
    _, _, inside, _ = roots(tmp_path)
    many = [inside] * 257
    if transport == "stdio":
        w = spawn()
        c = w.conn
        ready = c.hello(tb_config(many), timeout=120)
    else:
        w = serve(spawn, tmp_path, tb_config([inside]))
        c = w.connect()
        ready = c.hello({"models": many}, timeout=120)
    assert ready["status"] == "ready" and (ready["models"], ready["total"]) == (256, 257), ready
    assert c.infer_raw(255, solid(64, 64))["detections"], "the last slot serves"
    assert len(c.status()["models"]) == 256
    assert "too many models" in w.stderr_text()
    assert w.alive()


# ---- what one peer may hold ------------------------------------------------------

def test_register_shm_is_capped_and_private(spawn, tmp_path):
    _, _, inside, _ = roots(tmp_path)
    name = f"/osprey-sec-{os.getpid()}"
    with open(f"/dev/shm{name}", "wb") as f:
        f.write(bytes(64 * 64 * 3))
    try:
        w = serve(spawn, tmp_path, tb_config([inside]))
        a, b = w.connect(), w.connect()
        a.hello({})
        b.hello({})
        ids = []
        for i in range(64):
            r = a.command({"cmd": "register_shm", "name": name})
            assert r["status"] == "ok", (i, r)
            ids.append(r["regionId"])
        r = a.command({"cmd": "register_shm", "name": name})
        assert r["status"] == "error" and "at most 64 regions on a connection" in r["error"], r
        # another connection can neither use nor drop a's regions
        shm = struct.pack("<BIQIIBI", 0, ids[0], 0, 64, 64, 0, 0)
        assert b.request(0x06, shm) == {"error": f"shm region {ids[0]} not registered"}
        r = b.command({"cmd": "unregister_shm", "regionId": ids[0]})
        assert r["status"] == "error", r
        assert a.request(0x06, shm)["detections"], "a still has it"
        assert a.command({"cmd": "unregister_shm", "regionId": ids[0]})["status"] == "ok"
        assert a.command({"cmd": "register_shm", "name": name})["status"] == "ok"
    finally:
        os.unlink(f"/dev/shm{name}")


def test_register_shm_is_capped_in_all(spawn, tmp_path):
    _, _, inside, _ = roots(tmp_path)
    name = f"/osprey-sec-all-{os.getpid()}"
    with open(f"/dev/shm{name}", "wb") as f:
        f.write(bytes(4096))
    try:
        w = serve(spawn, tmp_path, tb_config([inside]))
        conns = [w.connect() for _ in range(5)]
        for c in conns:
            c.hello({})
        for c in conns[:4]:
            for i in range(64):
                r = c.command({"cmd": "register_shm", "name": name})
                assert r["status"] == "ok", (i, r)
        r = conns[4].command({"cmd": "register_shm", "name": name})
        assert r["status"] == "error" and "256 in all" in r["error"], r
        # a connection's regions go with it
        conns[0].close()
        end = time.monotonic() + 10
        while conns[4].command({"cmd": "register_shm", "name": name})["status"] != "ok":
            assert time.monotonic() < end, "the closed connection's regions were not freed"
            time.sleep(0.1)
    finally:
        os.unlink(f"/dev/shm{name}")


def stream_model(tmp_path):
    from test_segment import frame_diff_model
    path = tmp_path / "framediff.onnx"
    frame_diff_model(path)
    return path


def test_stream_parameters_have_stated_maxima(worker, tmp_path):
    path = str(stream_model(tmp_path))
    w, _ = worker({"runtime": "onnxruntime", "models": []})
    for cfg, text in (({"frameLen": 1 << 30}, "frameLen (required, 1 to 65536)"),
                      ({"frameLen": 4, "window": 2 ** 31 - 1}, "window (1 to 4096)"),
                      ({"frameLen": 4, "stride": 1, "backlog": 2 ** 40}, "backlog (0 to 1024)"),
                      ({"frameLen": 16384, "window": 4096}, "at most 16777216"),
                      ({"frameLen": 4096, "window": 2, "stride": 4096, "backlog": 1024},
                       "at most 16777216")):
        r = w.conn.command({"cmd": "open_stream", "config": dict(cfg, path=path)}, timeout=60)
        assert r["status"] == "error" and text in r["error"], (cfg, r)
    r = w.conn.command({"cmd": "open_stream", "config": {"path": path, "frameLen": 64, "window": 2}},
                       timeout=60)
    assert r["status"] == "ok", r


def test_streams_per_connection_are_capped(worker, tmp_path):
    model_asset("silero_vad_v5.onnx")
    w, _ = worker({"runtime": "onnxruntime", "models": []})
    threads0 = w.conn.mem_stats()["memory"]["threads"]
    ids = [w.conn.send_command({"cmd": "open_stream", "config": {"model": "silero-vad"}})
           for _ in range(12)]
    replies = [w.conn.reply(i, timeout=120) for i in ids]
    ok = [r for r in replies if r["status"] == "ok"]
    refused = [r for r in replies if r["status"] == "error"]
    assert len(ok) == 8, replies
    assert all("at most 8 streams on a connection" in r["error"] for r in refused), refused
    assert w.conn.mem_stats()["memory"]["threads"] <= threads0 + 2 * 8
    sid = ok[0]["streamId"]
    assert w.conn.command({"cmd": "close_stream", "streamId": sid})["status"] == "ok"
    again = w.conn.command({"cmd": "open_stream", "config": {"model": "silero-vad"}}, timeout=60)
    assert again["status"] == "ok", again


def test_stream_loads_are_bounded_like_model_loads(worker):
    model_asset("silero_vad_v5.onnx")
    # a bound no ONNX Runtime session creation meets: every open is answered at it
    w, _ = worker({"runtime": "onnxruntime", "models": [], "modelLoadTimeoutMs": 1})
    r = w.conn.command({"cmd": "open_stream", "config": {"model": "silero-vad"}}, timeout=30)
    assert r["status"] == "error" and "took longer than 1 ms" in r["error"], r
    w.conn.wait_for(lambda: "returned after its bound" in w.stderr_text(), 60, "the late load")
    assert w.conn.mem_stats()["status"] == "ok"
    w.close_stdin()
    assert w.wait(30) == 0
