"""Log lines on stderr (docs/operations.md): a daemon's carry a UTC timestamp
and a level, --log-json makes each a JSON object, and a host on the pipe
reads the Python worker's bare lines. stdout never carries one."""
import json
import re
import signal

from conftest import MEDIA, need, run
from ospreyd_client import check_clean, spawn, tb_config, tb_script  # noqa: F401

TEXT_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (ERROR|WARN|INFO|DEBUG) \S")


def daemon(spawn, tmp_path, *extra):
    cfg = tmp_path / "ospreyd.json"
    cfg.write_text(json.dumps(tb_config([tb_script(tmp_path / "m.json")])))
    sock = tmp_path / "ospreyd.sock"
    w = spawn("--listen", f"unix:{sock}", "--config", cfg, *extra, stdio=False)
    conn = w.connect_unix(sock)
    assert conn.hello({})["status"] == "ready"
    conn.close()
    w.signal(signal.SIGTERM)
    assert w.wait() == 0, w.describe()
    assert w.stdout_bytes == b""
    return w.stderr_text().splitlines()


def test_daemon_lines_have_time_and_level(spawn, tmp_path):
    lines = daemon(spawn, tmp_path)
    assert lines, "no log lines"
    bad = [l for l in lines if not TEXT_LINE.match(l)]
    assert not bad, bad
    # the message itself is unchanged after the prefix
    assert any(re.search(r" INFO ospreyd: listening on unix:", l) for l in lines), lines
    assert any(" INFO ospreyd: ready, " in l for l in lines), lines


def test_daemon_log_json(spawn, tmp_path):
    lines = daemon(spawn, tmp_path, "--log-json")
    recs = [json.loads(l) for l in lines]  # every line is one JSON object
    assert recs
    for r in recs:
        assert set(r) == {"time", "level", "msg"}, r
        assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", r["time"]), r
        assert r["level"] in ("error", "warn", "info", "debug"), r
    msgs = [r["msg"] for r in recs]
    assert any(m.startswith("ospreyd: listening on unix:") for m in msgs), msgs
    assert any("finishing what is in flight" in m for m in msgs), msgs


def test_log_format_refuses_unknown(spawn, tmp_path):
    w = spawn("--log-format", "xml")
    assert w.wait() == 2
    assert "--log-format takes plain, text or json" in w.stderr_text()


def test_pipe_host_reads_bare_lines(spawn, tmp_path):
    # the host that started the worker reads its stderr into its own log:
    # the lines are the messages alone, as the Python worker wrote them
    w = spawn()
    ready = w.conn.hello(tb_config([tb_script(tmp_path / "m.json")]))
    assert ready["status"] == "ready"
    check_clean(w.conn)
    w.close_stdin()
    assert w.wait() == 0
    lines = w.stderr_text().splitlines()
    assert any(l.startswith("ospreyd: ready, ") for l in lines), lines
    assert not any(TEXT_LINE.match(l) for l in lines), lines


def test_pipe_host_may_ask_for_json(spawn, tmp_path):
    w = spawn("--log-json")
    w.conn.hello(tb_config([tb_script(tmp_path / "m.json")]))
    check_clean(w.conn)  # stdout: frames only, whatever the log format
    w.close_stdin()
    assert w.wait() == 0
    msgs = [json.loads(l)["msg"] for l in w.stderr_text().splitlines()]
    assert any(m.startswith("ospreyd: ready, ") for m in msgs), msgs


def test_cli_log_json(osprey, tmp_path):
    good = need(MEDIA / "messi5.jpg").read_bytes()
    bad = tmp_path / "broken.jpg"
    bad.write_bytes(good[:200] + b"\x00" * 50)
    r = run(osprey, "--log-json", "detect", "--quiet", MEDIA / "messi5.jpg", bad)
    assert r.returncode == 2, r
    assert len(r.stdout.splitlines()) == 1  # the good image's record; stdout holds no log line
    recs = []
    for l in r.stderr.splitlines():
        if l.startswith("{"):
            recs.append(json.loads(l))
    loaded = [x for x in recs if x["msg"].startswith("osprey: model ssd-oidv4") and " loaded on " in x["msg"]]
    assert loaded and loaded[0]["level"] == "info", r.stderr
    failed = [x for x in recs if "broken.jpg" in x["msg"]]
    assert failed and failed[0]["level"] == "error", r.stderr


def test_cli_log_text_and_default(osprey):
    img = need(MEDIA / "messi5.jpg")
    r = run(osprey, "--log-format", "text", "detect", "--quiet", img)
    assert r.returncode == 0, r.stderr
    assert any(TEXT_LINE.match(l) and " INFO osprey: model ssd-oidv4" in l and " loaded on " in l
               for l in r.stderr.splitlines()), r.stderr
    plain = run(osprey, "detect", "--quiet", img)
    assert any((l.startswith("osprey: model ssd-oidv4") and " loaded on " in l)
               for l in plain.stderr.splitlines()), plain.stderr
    bad = run(osprey, "--log-format", "xml", "detect", img)
    assert bad.returncode == 2 and "--log-format" in bad.stderr
