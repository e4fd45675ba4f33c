"""ospreyd's cameras on MQTT and on disk (docs/cameras.md, MQTT and
snapshots), against a real mosquitto that wants a password
(mqtt_broker.py): two cameras played from cuts of vtest publish through one
connection; every event of ospreyd's log is on frigate/events and in the
SQLite database, none lost; Home Assistant's discovery configs are
retained, per camera, and a camera removed by SIGHUP loses them while one
added gets them; each camera's availability goes online then offline,
ospreyd's own too; the best snapshot of each reported object is a JPEG
named by its event id; the password is nowhere in ospreyd's output. A
broker that is down at the start, and one killed mid-run, never stall the
cameras: their events go on, and what did not fit the bounded queue is
counted as dropped."""
import io
import json
import os
import re
import signal
import sqlite3
import subprocess

import pytest
from PIL import Image

from assets import BIN
from conftest import MEDIA, need
from mqtt_broker import PASSWORD, USER, pwfile, Broker, broker, certs, drain, session  # noqa: F401
from camera_daemon import daemons, events, site, summary  # noqa: F401 (a fixture)

# a sanitizer's build runs the model several times slower: longer clips
# give its cameras as many objects to report
SLOW = 2 if os.environ.get("OSPREY_SANITIZE") else 1


def cut(tmp, start_s, frames, name):
    """frames of vtest (10 a second, played in real time) from start_s, as
    a clip of its own (MJPEG: any cut starts on a whole picture)."""
    out = tmp / f"{name}.avi"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-ss", str(start_s), "-i",
                    str(need(MEDIA / "vtest.avi")), "-frames:v", str(frames), "-c:v", "mjpeg",
                    "-q:v", "4", str(out)], check=True)
    return out


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cam-mqtt")
    return cut(tmp, 0, 60 * SLOW, "door"), cut(tmp, 20, 60 * SLOW, "yard")


@pytest.fixture(scope="module")
def long_clips(tmp_path_factory):
    """Long enough for the broker to come, go, and the cameras to go on."""
    tmp = tmp_path_factory.mktemp("cam-mqtt-long")
    return cut(tmp, 0, 120 * SLOW, "door"), cut(tmp, 20, 120 * SLOW, "yard")


def retained_configs(broker):
    return {t for _, t, _ in drain(broker, "homeassistant/#", client_id=None, wait=1)}


def camera(name, clip):
    return {"name": name, "url": str(clip), "fps": 5, "objects": ["Person"]}


def mqtt_stats(log):
    m = re.search(r"MQTT \S+: (\d+) messages queued, (\d+) published, (\d+) acknowledged, "
                  r"(\d+) dropped", log)
    assert m, log[-3000:]
    return dict(zip(("queued", "published", "acked", "dropped"), map(int, m.groups())))


def test_two_cameras_publish_events_discovery_availability_and_snapshots(
        daemons, tmp_path, broker, clips, pwfile):
    door, yard = clips
    session(broker, "frigate/#", "homeassistant/#")
    db, snaps = tmp_path / "events.db", tmp_path / "snaps"
    cfg = dict(site([camera("door", door), camera("yard", yard)]),
               events={"db": str(db), "snapshots": str(snaps)},
               mqtt={"url": f"mqtt://127.0.0.1:{broker.port}", "user": USER,
                     "passwordFile": str(pwfile), "prefx": "x"})
    d = daemons(tmp_path, cfg)
    d.wait_for(lambda log: '"mqtt": unknown key "prefx" ignored (did you mean "prefix"?)' in log,
               "the warning")
    d.wait_for(lambda log: "camera door: the source ended" in log
               and "camera yard: the source ended" in log, "both clips played")
    # SIGHUP: yard removed, gate added
    cfg["cameras"] = [camera("door", door), camera("gate", door)]
    (tmp_path / "site.json").write_text(json.dumps(cfg))
    d.proc.send_signal(signal.SIGHUP)
    d.wait_for(lambda log: "cameras re-read: 1 kept, 1 stopped, 1 started" in log, "the re-read")
    d.wait_for(lambda log: "camera gate: watching" in log, "gate's source opened")
    assert d.stop() == 0, d.log()[-3000:]
    log, out = d.log(), d.stdout()
    assert PASSWORD not in log + out
    st = mqtt_stats(log)
    assert st["dropped"] == 0 and st["acked"] == st["published"] == st["queued"], st

    got = drain(broker, "frigate/#", "homeassistant/#")
    # none lost: the log's events = frigate/events = the database's rows
    logged = events(out)
    published = [json.loads(p) for _, t, p in got if t == "frigate/events"]
    assert len(published) == len(logged)
    for name in ("door", "yard", "gate"):  # in order, camera by camera
        assert [(e["type"], e["after"]["id"]) for e in published
                if e["after"]["camera"] == name] == \
            [(e["type"], e["after"]["id"]) for e in logged if e["after"]["camera"] == name]
    assert {e["after"]["id"] for e in published} == {e["after"]["id"] for e in logged}
    assert {e["after"]["camera"] for e in logged if e["type"] == "new"} >= {"door", "yard"}
    assert all(e["after"]["label"] == "person" for e in published)  # Frigate's spelling
    ids = {e["after"]["id"] for e in logged}
    rows = {r[0] for r in sqlite3.connect(db).execute("SELECT id FROM events")}
    assert rows == ids
    for name in ("door", "yard"):
        assert summary(log, name)["events"] == len([e for e in logged
                                                    if e["after"]["camera"] == name])

    # availability: each camera online then offline; ospreyd's own last
    for name in ("door", "yard", "gate"):
        avail = [p for _, t, p in got if t == f"frigate/{name}/available"]
        assert avail[0] == "online" and avail[-1] == "offline", (name, avail)
    assert [p for _, t, p in got if t == "frigate/available"] == ["online", "offline"]
    assert [t for _, t, _ in got][-1] == "frigate/available"
    # counts per camera, back to 0 at the end
    assert max(int(p) for _, t, p in got if t == "frigate/door/person") > 0

    kept = {t: p for _, t, p in drain(broker, "frigate/#", "homeassistant/#", client_id=None,
                                      wait=2)}
    configs = {t: json.loads(p) for t, p in kept.items() if t.startswith("homeassistant/")}
    assert set(configs) == {f"homeassistant/{kind}/osprey_{cam}/all_person_{what}/config"
                            for cam in ("door", "gate")
                            for kind, what in (("binary_sensor", "occupancy"),
                                               ("sensor", "count"))}
    for t, c in configs.items():
        cam = t.split("/")[2][len("osprey_"):]
        assert c["state_topic"] == f"frigate/{cam}/person"
        assert [a["topic"] for a in c["availability"]] == \
            ["frigate/available", f"frigate/{cam}/available"]
        assert c["availability_mode"] == "all" and c["device"]["model"] == "ospreyd"
    # the removed camera's entities are gone, its last word kept
    assert kept["frigate/yard/available"] == "offline" and kept["frigate/yard/person"] == "0"
    assert kept["frigate/available"] == "offline"

    # the best snapshot of every reported object, named by its event id
    reported = {e["after"]["id"] for e in logged if e["type"] == "new"}
    pictures = {p.name for p in snaps.iterdir()}
    assert pictures == {f"{i}.jpg" for i in reported}
    for i in reported:
        with Image.open(io.BytesIO((snaps / f"{i}.jpg").read_bytes())) as im:
            im.load()
            assert im.format == "JPEG" and im.size == (768, 576)


def test_a_broker_down_or_killed_never_stalls_the_cameras(daemons, tmp_path, certs, long_clips,
                                                          pwfile):
    door, yard = long_clips
    b = Broker(tmp_path, certs)
    b.close()  # down at the start
    d = daemons(tmp_path, dict(site([camera("door", door), camera("yard", yard)]),
                               mqtt={"url": f"mqtt://127.0.0.1:{b.port}", "user": USER,
                                     "passwordFile": str(pwfile), "queue": 16}))
    try:
        # the events go on without a broker; the 16 places of the queue
        # overflow (10 messages at the start, the discovery configs first,
        # then each new object's event and counts: 3 more)
        d.wait_for(lambda log: len([e for e in events(d.stdout()) if e["type"] == "new"]) >= 3,
                   "events without a broker")
        b.start()
        # once connected, each camera says its retained state again
        d.wait_for(lambda log: len(retained_configs(b)) == 4,
                   "the discovery configs again once the broker is up")
        b.proc.kill()  # gone mid-run
        b.proc.wait(10)
        n = len(events(d.stdout()))
        d.wait_for(lambda log: len(events(d.stdout())) > n, "events after the broker died")
        d.wait_for(lambda log: "camera door: the source ended" in log
                   and "camera yard: the source ended" in log, "both clips played")
        assert d.stop() == 0, d.log()[-3000:]
    finally:
        b.proc.kill()
        b.proc.wait(10)
    log = d.log()
    assert PASSWORD not in log + d.stdout()
    st = mqtt_stats(log)
    assert st["dropped"] > 0, st  # the bounded queue overflowed, counted
    for name in ("door", "yard"):
        s = summary(log, name)
        assert s["detected"] > 0 and s["detected"] + s["shed"] + s["failed"] == s["submitted"], s


@pytest.mark.parametrize("mqtt, says", [
    ({"user": USER}, '"mqtt": "url" is required'),
    ({"url": f"mqtt://{USER}:{PASSWORD}@/frigate"}, "is not mqtt[s]://"),
    ({"url": "mqtt://127.0.0.1", "user": USER, "password": "${OSPREY_TEST_UNSET}"},
     '"mqtt": "password" names ${OSPREY_TEST_UNSET}, which is not set'),
    ({"url": "mqtt://127.0.0.1", "user": USER, "password": PASSWORD, "passwordFile": "/x"},
     '"password" and "passwordFile" are one or the other'),
    ({"url": "mqtt://127.0.0.1", "user": USER, "passwordFile": "/nonexistent/pw"},
     '"passwordFile" /nonexistent/pw: No such file'),
    ({"url": "mqtt://127.0.0.1", "password": PASSWORD}, 'a password needs a "user"'),
    ({"url": "mqtt://127.0.0.1", "queue": 3}, '"queue" must be a whole number from 16'),
    ({"url": "mqtt://127.0.0.1", "haDiscovery": 5}, '"haDiscovery" must be a topic prefix'),
    ({"url": "mqtt://127.0.0.1", "tls": "yes"}, '"tls" must be {"ca": the path of a CA file}'),
])
def test_a_bad_mqtt_config_is_refused_without_its_password(tmp_path, clips, mqtt, says):
    path = tmp_path / "site.json"
    path.write_text(json.dumps(dict(site([camera("door", clips[0])]), mqtt=mqtt)))
    p = subprocess.run([str(BIN / "ospreyd"), "--config", str(path)], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and says in p.stderr, p.stderr[-2000:]
    assert PASSWORD not in p.stdout + p.stderr
