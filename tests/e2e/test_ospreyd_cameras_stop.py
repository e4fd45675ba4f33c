"""A camera's objects end when it stops (docs/cameras.md, Events when a
camera stops): real RTSP cameras (GStreamer's server playing vtest with
no end) publishing to a real mosquitto that wants a password, with the
events in SQLite on disk. ospreyd stopped (SIGTERM) while people walk
leaves no object without its end: each "new" has one "end" in the JSON
log, on frigate/events and in its database row, ended at the last frame's
time and not as a false positive. A SIGHUP that removes one of two
cameras ends that camera's objects, and only its."""
import json
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from assets import media
from camera_daemon import daemons, events, free_port, site  # noqa: F401 (a fixture)
from mqtt_broker import PASSWORD, USER, Broker, certs, drain, pwfile, session  # noqa: F401

HERE = Path(__file__).resolve().parent
PY = sys.executable if Path(sys.executable).exists() else "/usr/bin/python3"


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    """vtest as RTP/JPEG carries it (JPEG's standard tables)."""
    out = tmp_path_factory.mktemp("stop") / "vtest.avi"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(media("vtest.avi")), "-t", "70",
                    "-c:v", "mjpeg", "-huffman", "default", "-pix_fmt", "yuvj420p", "-q:v", "5",
                    str(out)], check=True)
    return out


@pytest.fixture
def rtsp(clip):
    port = free_port()
    p = subprocess.Popen([PY, str(HERE / "rtsp_server.py"), str(port), "/cam", "--file",
                          str(clip), "--endless"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready", p.stderr.read()
    yield f"rtsp://127.0.0.1:{port}/cam"
    p.kill()
    p.wait(10)


@pytest.fixture
def mosquitto(tmp_path, certs):  # noqa: F811 (certs: a fixture)
    (tmp_path / "broker").mkdir()
    b = Broker(tmp_path / "broker", certs)
    session(b, "frigate/events")
    yield b
    b.close()


def camera(name, url):
    return {"name": name, "url": url, "fps": 5, "objects": ["Person"]}


def config(cams, broker, pwfile, db):
    return dict(site(cams), events={"db": str(db)},
                mqtt={"url": f"mqtt://127.0.0.1:{broker.port}", "user": USER,
                      "passwordFile": str(pwfile)})


def retained_configs(broker):
    """The Home Assistant discovery entries the broker keeps."""
    return {t for _, t, p in drain(broker, "homeassistant/#", client_id=None, wait=1) if p}


def open_ids(recs, cam):
    """The camera's objects reported and not ended, by id."""
    new = {e["after"]["id"] for e in recs if e["type"] == "new" and e["after"]["camera"] == cam}
    end = {e["after"]["id"] for e in recs if e["type"] == "end" and e["after"]["camera"] == cam}
    return new - end


def check_ended(recs, on_mqtt, rows, cam):
    """Each of cam's objects: one new and one end in the log, the same on
    MQTT, and its row ended at the end's time."""
    def count(rs, kind):
        out = {}
        for e in rs:
            if e["type"] == kind and e["after"]["camera"] == cam:
                out[e["after"]["id"]] = out.get(e["after"]["id"], 0) + 1
        return out
    new, end = count(recs, "new"), count(recs, "end")
    assert new, f"{cam}: no object reported"
    assert set(new) == set(end), (cam, set(new) ^ set(end))
    assert set(new.values()) == {1} and set(end.values()) == {1}, (new, end)
    assert count(on_mqtt, "new") == new and count(on_mqtt, "end") == end
    ends = {e["after"]["id"]: e["after"]["end_time"] for e in recs
            if e["type"] == "end" and e["after"]["camera"] == cam}
    mine = {i: r for i, r in rows.items() if r[0] == cam}
    assert set(mine) == set(new), (cam, set(mine) ^ set(new))
    for i, (_, end_time) in mine.items():
        assert end_time == pytest.approx(ends[i]), (i, end_time, ends[i])


def db_rows(db):
    con = sqlite3.connect(db)
    try:
        return {r[0]: (r[1], r[2]) for r in con.execute("SELECT id, camera, end_time FROM events")}
    finally:
        con.close()


def mqtt_events(broker):
    return [json.loads(p) for _, t, p in drain(broker, "frigate/events") if t == "frigate/events"]


def test_a_stop_ends_every_object_still_tracked(daemons, tmp_path, rtsp, mosquitto, pwfile):
    db = tmp_path / "events.db"
    d = daemons(tmp_path, config([camera("door", rtsp)], mosquitto, pwfile, db))
    # people walk in vtest from its first seconds: stop with two of them tracked
    d.until(lambda: len(open_ids(events(d.stdout()), "door")) >= 2, "two objects tracked",
            timeout=120)
    assert d.stop() == 0, d.log()[-3000:]
    log, recs = d.log(), events(d.stdout())
    on_mqtt = mqtt_events(mosquitto)
    m = re.search(r"camera door: (\d+) objects still tracked end as it stops", log)
    assert m and int(m.group(1)) >= 2, log[-3000:]
    # the ends at the stop: the last records, at the last frame's time
    at_stop = recs[-int(m.group(1)):]
    assert all(e["type"] == "end" and not e["after"]["false_positive"] for e in at_stop), at_stop
    before = max(e["after"]["frame_time"] for e in recs[:-len(at_stop)])
    for e in at_stop:
        assert e["after"]["end_time"] == pytest.approx(e["after"]["frame_time"]), e
        assert e["after"]["end_time"] >= before - 1e-3, (before, e)
    assert len({e["after"]["end_time"] for e in at_stop}) == 1, at_stop
    assert all(e["after"]["start_time"] <= e["after"]["end_time"] for e in at_stop)
    check_ended(recs, on_mqtt, db_rows(db), "door")
    assert PASSWORD not in log


def test_a_camera_removed_by_sighup_ends_its_objects_only(daemons, tmp_path, rtsp, mosquitto,
                                                         pwfile):
    db = tmp_path / "events.db"
    cfg = config([camera("door", rtsp), camera("yard", rtsp)], mosquitto, pwfile, db)
    d = daemons(tmp_path, cfg)
    d.until(lambda: all(len(open_ids(events(d.stdout()), c)) >= 1 for c in ("door", "yard")),
            "objects tracked on both cameras", timeout=120)
    configs = retained_configs(mosquitto)
    assert any("yard" in t for t in configs) and any("door" in t for t in configs), configs
    (tmp_path / "site.json").write_text(json.dumps(dict(cfg, cameras=[camera("door", rtsp)])))
    d.proc.send_signal(signal.SIGHUP)
    d.wait_for(lambda log: "cameras re-read: 1 kept, 1 stopped, 0 started" in log, "the re-read")
    # the removed camera's Home Assistant entities are gone (removed once
    # its thread has published its last events), the kept one's stay
    d.until(lambda: not any("yard" in t for t in retained_configs(mosquitto)),
            "the yard's entities removed", timeout=20)
    assert {t for t in retained_configs(mosquitto) if "door" in t} == \
        {t for t in configs if "door" in t}
    # the yard's thread wrote its ends before the re-read was logged
    d.until(lambda: not open_ids(events(d.stdout()), "yard"), "the yard's objects ended",
            timeout=10)
    log = d.log()
    assert re.search(r"camera yard: \d+ objects still tracked end as it stops", log), log[-3000:]
    assert not re.search(r"camera door: \d+ objects still tracked end", log), log[-3000:]
    yard_done = len([e for e in events(d.stdout()) if e["after"]["camera"] == "yard"])
    # the door goes on: its records still coming
    n = len(events(d.stdout()))
    d.until(lambda: len(events(d.stdout())) > n, "a door record after the re-read", timeout=60)
    assert d.stop() == 0, d.log()[-3000:]
    recs = events(d.stdout())
    assert len([e for e in recs if e["after"]["camera"] == "yard"]) == yard_done
    on_mqtt = mqtt_events(mosquitto)
    rows = db_rows(db)
    check_ended(recs, on_mqtt, rows, "yard")
    check_ended(recs, on_mqtt, rows, "door")
