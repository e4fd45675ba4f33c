"""Shutdown: stdin EOF and SIGTERM/SIGINT finish and answer what is in
flight, then exit 0."""
import json
import signal
import time

import pytest

from ospreyd_client import (model, MSG_RAW, SSD_CATALOG, check_clean, media_bytes, need, p_raw,
                            person, spawn, tb_config, tb_script, worker)  # noqa: F401


def in_flight(c, tmp_path):
    """Frames, a slow load and probes, none answered yet."""
    slow = tb_script(tmp_path / "slowload.json", load_delay_ms=500)
    ids = [c.send(MSG_RAW, p_raw(0, 8, 8, 0, bytes(192))) for _ in range(6)]
    load = c.send_command({"cmd": "load", "index": 1, "config": slow})
    st = c.send_command({"cmd": "status"})
    ms = c.send_command({"cmd": "mem_stats"})
    return ids, load, st, ms


@pytest.mark.parametrize("how", ["eof", "SIGTERM", "SIGINT"])
def test_in_flight_answered_then_exit_0(worker, tmp_path, how):
    m = tb_script(tmp_path / "m.json", run_delay_ms=150)
    w, _ = worker(tb_config([m], concurrency=2))
    c = w.conn
    ids, load, st, ms = in_flight(c, tmp_path)
    time.sleep(0.05)  # let the worker read them
    if how == "eof":
        w.close_stdin()
    else:
        w.signal(getattr(signal, how))
    assert w.wait(20) == 0, w.describe()
    c.wait_closed(5)
    everything = ids + [load, st, ms]
    missing, twice = c.all_answered_once(everything)
    assert not missing and not twice, (missing, twice, w.describe())
    for i in ids:
        r = c.replies[i][0]
        assert r.get("dropped") or (r["kind"] == "detections" and "error" not in r), r
    assert c.replies[load][0]["status"] == "ok", c.replies[load]
    assert c.replies[st][0]["cmd"] == "status"
    check_clean(c)


def test_eof_real_model(worker):
    model("ssd-oidv4")
    w, _ = worker({"runtime": "onnxruntime", "models": [SSD_CATALOG]})
    c = w.conn
    ids = [c.send(1, b"\x00" + media_bytes("messi5.jpg")) for _ in range(3)]
    w.close_stdin()
    assert w.wait(30) == 0
    for i in ids:
        assert person(c.reply(i, timeout=1)) >= 0.7, c.replies.get(i)
    check_clean(c)


def test_eof_idle(worker):
    w, _ = worker({"runtime": "test", "models": []})
    t0 = time.monotonic()
    w.close_stdin()
    assert w.wait(10) == 0
    assert time.monotonic() - t0 < 5


def test_eof_before_handshake(spawn):
    w = spawn()
    w.close_stdin()
    rc = w.wait(10)
    assert rc in (0, 1), rc  # nothing was asked: no crash, no hang
    assert rc >= 0, "killed by a signal"


def test_eof_mid_frame(worker):
    w, _ = worker({"runtime": "test", "models": []})
    rid = w.conn.send_command({"cmd": "mem_stats"})
    w.conn.send_bytes(json.dumps({"x": 1}).encode()[:5])  # half a header
    w.close_stdin()
    rc = w.wait(10)
    assert rc >= 0, "killed by a signal"
    assert w.conn.replies[rid][0]["status"] == "ok"


def test_exit_while_load_hung(worker, tmp_path):
    """A load that never returns cannot keep the worker alive at shutdown."""
    hang = tb_script(tmp_path / "forever.json", load_block_file=tmp_path / "never")
    w, _ = worker(tb_config([], timeout_ms=300))
    r = w.conn.command({"cmd": "load", "index": 0, "config": hang})
    assert r["reason"] == "compile-timeout", r
    w.close_stdin()
    assert w.wait(15) == 0


def test_sigterm_socket_mode(spawn, tmp_path):
    m = tb_script(tmp_path / "m.json", run_delay_ms=200)
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps(tb_config([m], concurrency=2)))
    sock = tmp_path / "s.sock"
    w = spawn("--listen", f"unix:{sock}", "--config", cfg, stdio=False)
    conns = [w.connect_unix(sock) for _ in range(2)]
    sent = []
    for c in conns:
        c.hello({})
        sent.append([c.send(MSG_RAW, p_raw(0, 8, 8, 0, bytes(192))) for _ in range(2)])
    time.sleep(0.05)
    w.signal(signal.SIGTERM)
    assert w.wait(20) == 0, w.describe()
    for c, ids in zip(conns, sent):
        for i in ids:
            r = c.reply(i, timeout=1)
            assert r["kind"] == "detections" and "error" not in r, r
