"""ospreyd watching cameras itself (docs/cameras.md): a --config file with a
"cameras" list and nothing else. A camera played from a real video (vtest)
gives tracked objects' events in Frigate's layout; a real RTSP camera
(GStreamer's server) is watched, reconnected after it drops, and its
password never printed; a camera that is down at start is retried, not
fatal; a bad camera config is refused with the camera and the key named."""
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from assets import BIN, media, model  # noqa: F401 (model: the catalog is what the config names)
from camera_daemon import Daemon, daemons, events, free_port, site, summary  # noqa: F401 (a fixture)

HERE = Path(__file__).resolve().parent
PY = sys.executable if Path(sys.executable).exists() else "/usr/bin/python3"


def rtsp_server(port, path, *extra):
    p = subprocess.Popen([PY, str(HERE / "rtsp_server.py"), str(port), path, *extra],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready", p.stderr.read()
    return p


def test_a_camera_played_from_video_gives_frigates_events(daemons, tmp_path):
    vtest = media("vtest.avi")
    d = daemons(tmp_path, site([{"name": "yard", "url": str(vtest), "fps": 5,
                                 "objects": ["Person"]}]))
    # vtest's walkers become tracked objects within its first seconds, in real time
    d.wait_for(lambda log: len([e for e in events(d.stdout()) if e["type"] == "new"]) >= 3,
               "three new objects")
    assert d.stop() == 0, d.log()[-3000:]
    log = d.log()
    evs = events(d.stdout())
    news = [e for e in evs if e["type"] == "new"]
    assert len({e["after"]["id"] for e in news}) == len(news), "each object is new once"
    for e in evs:
        assert set(e) == {"type", "before", "after"}
        a = e["after"]
        assert a["camera"] == "yard" and a["label"] == "Person", a
        for key in ("id", "score", "top_score", "box", "current_zones", "entered_zones",
                    "stationary", "start_time", "end_time", "false_positive"):
            assert key in a, (key, a)
        # the wall clock's time, as Frigate's events carry
        assert abs(a["start_time"] - time.time()) < 600, a
    s = summary(log, "yard")
    assert s["submitted"] > 0 and s["detected"] + s["shed"] + s["failed"] == s["submitted"], s
    assert s["events"] == len(evs), s
    # fps 5 from a 10 frames/s file: about half its frames go to the model
    assert s["submitted"] <= s["frames_in"] // 2 + 2, s


def test_an_rtsp_camera_is_watched_through_a_drop(daemons, tmp_path):
    port = free_port()
    server = rtsp_server(port, "/door")
    try:
        d = daemons(tmp_path, site([{"name": "door", "url": f"rtsp://127.0.0.1:{port}/door",
                                     "fps": 5}]))
        d.wait_for(lambda log: "camera door: watching rtsp://127.0.0.1" in log, "watching")
        time.sleep(3)
        server.kill()
        server.wait(10)
        d.wait_for(lambda log: re.search(r"camera door: .*drop", log, re.I), "the drop")
        server = rtsp_server(port, "/door")
        d.wait_for(lambda log: re.search(r"camera door: .*reconnect", log, re.I), "the reconnect",
                   timeout=90)
        time.sleep(2)
        assert d.stop() == 0, d.log()[-3000:]
        s = summary(d.log(), "door")
        assert s["frames_in"] > 0 and s["submitted"] > 0 and s["reconnects"] >= 1, s
        assert s["detected"] + s["shed"] + s["failed"] == s["submitted"], s
    finally:
        server.kill()
        server.wait(10)


def test_a_cameras_password_is_never_printed(daemons, tmp_path):
    port = free_port()
    secret = "s3cr3t-Pw-77"
    server = rtsp_server(port, "/gate", "--auth", f"viewer:{secret}")
    try:
        d = daemons(tmp_path, site([{"name": "gate", "fps": 2,
                                     "url": f"rtsp://viewer:${{GATE_PASSWORD}}@127.0.0.1:{port}/gate"}]),
                    env={"GATE_PASSWORD": secret})
        d.wait_for(lambda log: "camera gate: watching" in log, "watching")
        time.sleep(2)
        assert d.stop() == 0, d.log()[-3000:]
        assert summary(d.log(), "gate")["frames_in"] > 0
        assert secret not in d.log() and secret not in d.stdout()
    finally:
        server.kill()
        server.wait(10)


def test_a_camera_down_at_start_is_retried(daemons, tmp_path):
    port = free_port()  # nothing listens there
    d = daemons(tmp_path, site([{"name": "shed", "url": f"rtsp://127.0.0.1:{port}/x", "fps": 1}]))
    d.wait_for(lambda log: "camera shed: cannot open its source" in log, "the failed open")
    d.wait_for(lambda log: log.count("camera shed: cannot open its source") >= 2, "a retry",
               timeout=60)
    t0 = time.monotonic()
    assert d.stop() == 0, d.log()[-3000:]
    assert time.monotonic() - t0 < 30, "a stop does not wait out the backoff"


@pytest.mark.parametrize("camera, says", [
    ({"name": "x"}, 'camera 0 (x): "url" is required'),
    ({"name": "bad name", "url": "a.mp4"}, '"name" must be 1-63 letters'),
    ({"name": "x", "url": "a.mp4", "fps": 0}, '"fps" must be a number from 0.1 to 60'),
    ({"name": "x", "url": "a.mp4", "decodeThreads": 0},
     'camera 0 (x): "decodeThreads" must be a whole number from 1 to 16'),
    ({"name": "x", "url": "a.mp4", "decodeThreads": 2.5}, '"decodeThreads" must be a whole number'),
    ({"name": "x", "url": "a.mp4", "decodeThreads": 1e300}, '"decodeThreads" must be a whole number'),
    ({"name": "x", "url": "a.mp4", "decodeThreads": "2"}, '"decodeThreads" must be a whole number'),
    ({"name": "x", "url": "rtsp://u:${NOT_SET_ANYWHERE}@h/p"}, "${NOT_SET_ANYWHERE}, which is not set"),
    ({"name": "x", "url": "a.mp4", "model": "no-such-model"}, "camera x: no model no-such-model"),
    ({"name": "x", "url": "a.mp4", "motion": "off"}, 'camera 0 (x): "motion" must be true or false'),
    ({"name": "x", "url": "a.mp4", "regions": "yes"},
     'camera 0 (x): "regions" must be "auto", true or false'),
    ({"name": "x", "url": "a.mp4", "regions": 1}, '"regions" must be "auto", true or false'),
    ({"name": "x", "url": "a.mp4", "regions": True, "motion": False},
     'camera 0 (x): "regions": true needs the motion pass'),
    ({"name": "x", "url": "a.mp4", "motionMask": "0,0,1,0"},
     'camera 0 (x): "motionMask" polygon 1 has 2 points; a polygon needs at least 3'),
    ({"name": "x", "url": "a.mp4", "motionMask": ["0,0,1,0,1,1", [[0, 0], [1.5, 0], [1, 1]]]},
     'camera 0 (x): "motionMask" polygon 2: coordinate 3 (x of point 2) is 1.5, outside 0-1'),
    ({"name": "x", "url": "a.mp4", "motionMask": {"a": 1}},
     'camera 0 (x): "motionMask" must be a polygon'),
])
def test_a_bad_camera_is_refused_by_name(tmp_path, camera, says):
    path = tmp_path / "site.json"
    path.write_text(json.dumps(site([camera])))
    p = subprocess.run([str(BIN / "ospreyd"), "--config", str(path)], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and says in p.stderr, p.stderr[-2000:]


def test_an_unknown_key_is_warned_with_the_nearest(daemons, tmp_path):
    d = daemons(tmp_path, site([{"name": "yard", "url": str(media("vtest.avi")), "fsp": 5}]))
    d.wait_for(lambda log: 'camera yard: unknown key "fsp" ignored (did you mean "fps"?)' in log,
               "the warning")
    assert d.stop() == 0


def test_config_alone_needs_cameras(tmp_path):
    path = tmp_path / "site.json"
    path.write_text(json.dumps({"runtime": "onnxruntime", "models": []}))
    p = subprocess.run([str(BIN / "ospreyd"), "--config", str(path)], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and 'or lists "cameras"' in p.stderr, p.stderr


def run_vtest_camera(daemons, tmp_path, events_cfg, news=4):
    d = daemons(tmp_path, dict(site([{"name": "yard", "url": str(media("vtest.avi")), "fps": 5,
                                      "objects": ["Person"]}]), events=events_cfg))
    d.wait_for(lambda log: len([e for e in events(d.stdout()) if e["type"] == "new"]) >= news,
               f"{news} new objects")
    assert d.stop() == 0, d.log()[-3000:]
    return d


def test_events_are_kept_in_sqlite_one_row_per_object(daemons, tmp_path):
    import sqlite3
    db = tmp_path / "events.db"
    d = run_vtest_camera(daemons, tmp_path, {"db": str(db)})
    last = {}
    for e in events(d.stdout()):
        last[e["after"]["id"]] = e
    con = sqlite3.connect(db)
    try:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        rows = con.execute("SELECT id, camera, label, start_time, end_time, top_score, record "
                           "FROM events").fetchall()
    finally:
        con.close()
    assert {r[0] for r in rows} == set(last), "a row per object, and no other"
    for id_, camera, label, start, end, top, record in rows:
        e = last[id_]
        assert json.loads(record) == e, "the row holds the object's last record"
        a = e["after"]
        assert (camera, label) == ("yard", "Person")
        assert start == pytest.approx(a["start_time"]) and top == pytest.approx(a["top_score"], abs=1e-4)
        assert (end is None) == (a["end_time"] is None), (end, a["end_time"])
    assert re.search(r"events database .*: \d+ record\(s\) written, 0 dropped, 0 failed", d.log())


def test_events_retention_keeps_the_newest_rows(daemons, tmp_path):
    import sqlite3
    db = tmp_path / "events.db"
    d = run_vtest_camera(daemons, tmp_path, {"db": str(db), "retainRows": 2}, news=5)
    ids = []
    for e in events(d.stdout()):
        if e["after"]["id"] not in ids:
            ids.append(e["after"]["id"])
    starts = {e["after"]["id"]: e["after"]["start_time"] for e in events(d.stdout())}
    con = sqlite3.connect(db)
    try:
        kept = [r[0] for r in con.execute("SELECT id FROM events ORDER BY start_time DESC")]
    finally:
        con.close()
    assert len(ids) >= 5 and len(kept) == 2, (ids, kept)
    newest = sorted(starts.values(), reverse=True)[:2]
    assert sorted((starts[i] for i in kept), reverse=True) == newest


@pytest.mark.parametrize("cfg, says", [
    ({"retainRows": 5}, '"events": "db" must be the path of a database file'),
    ({"db": "x.db", "retainDays": -1}, '"retainDays" must be a number from 0'),
    ({"db": "/nonexistent-dir/x.db"}, "events database /nonexistent-dir/x.db"),
])
def test_a_bad_events_config_is_refused(tmp_path, cfg, says):
    path = tmp_path / "site.json"
    path.write_text(json.dumps(dict(site([{"name": "x", "url": str(media("vtest.avi"))}]),
                                    events=cfg)))
    p = subprocess.run([str(BIN / "ospreyd"), "--config", str(path)], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and says in p.stderr, p.stderr[-2000:]


def test_sighup_rereads_the_cameras_and_touches_only_what_changed(daemons, tmp_path):
    vtest = str(media("vtest.avi"))
    cams = {n: {"name": n, "url": vtest, "fps": 2} for n in ("keep", "change", "drop")}
    d = daemons(tmp_path, site(list(cams.values())))
    d.wait_for(lambda log: all(f"camera {n}: watching" in log for n in cams), "three cameras")
    path = tmp_path / "site.json"
    path.write_text("{ not json")
    d.proc.send_signal(signal.SIGHUP)
    d.wait_for(lambda log: "the cameras are left as they were" in log, "a bad list refused")
    cams["change"]["fps"] = 3
    del cams["drop"]
    cams["new"] = {"name": "new", "url": vtest, "fps": 2}
    path.write_text(json.dumps(site(list(cams.values()))))
    d.proc.send_signal(signal.SIGHUP)
    d.wait_for(lambda log: "cameras re-read: 1 kept, 2 stopped, 2 started, 0 failed to start" in log,
               "the re-read")
    d.wait_for(lambda log: "camera new: watching" in log, "the new camera")
    assert d.stop() == 0, d.log()[-3000:]
    log = d.log()
    assert log.count("camera keep: watching") == 1, "the unchanged camera is not touched"
    assert log.count("camera change: watching") == 2 and "at 3 frames/s" in log
    assert log.count("camera drop: watching") == 1
    assert re.search(r"camera drop: \d+ frames in", log), "a dropped camera's counts are logged"
