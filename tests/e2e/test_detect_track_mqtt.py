"""osprey detect --track --mqtt against a real mosquitto that wants a login
(mqtt_broker.py's broker): the events in Frigate's layout on frigate/events,
the same records as --events writes; the counts per camera and per zone on
frigate/CAMERA/LABEL and frigate/ZONE/LABEL, replayed from those events;
Home Assistant's discovery configs, retained; frigate/available online at
the start and offline at a clean end, and offline by the last will when
osprey is killed; each reported object's best picture in --snapshots; the
password read from a file and never shown. A broker that cannot be reached
or refuses the login at the start is exit status 1 before any frame, and
bad options are exit status 2 (docs/tracking.md, MQTT and Home
Assistant)."""
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import MEDIA, lines, need
from test_detect_track import FRIGATE_KEYS, cut
from mqtt_broker import PASSWORD, USER, pwfile, broker, certs, drain, free_port, session  # noqa: F401

FRAMES = 100
ZONES = {
    "zones": {"left": {"coordinates": "0,0,0.5,0,0.5,1,0,1", "objects": ["Person"]}},
    "lines": {"walkway": {"coordinates": "0,0.5,1,0.5", "objects": ["Person"]}},
}


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    return cut(tmp_path_factory.mktemp("track-mqtt"), FRAMES)


@pytest.fixture(scope="module")
def zones(tmp_path_factory):
    f = tmp_path_factory.mktemp("zones") / "zones.json"
    f.write_text(json.dumps(ZONES))
    return f


def detect(osprey, *args, env=None):
    e = dict(os.environ)
    e.pop("OSPREY_MQTT_PASSWORD", None)
    e.update(env or {})
    return subprocess.run([str(osprey), "detect", "--quiet", "--track", *map(str, args)],
                          capture_output=True, text=True, timeout=300, env=e)


def replay(events, zone=None):
    """What PREFIX/SCOPE/Person must say after each frame, from the event
    records: the reported objects not ended (in the zone, when given)."""
    alive, seq = {}, [0]
    frames = sorted({e["frame"] for e in events})
    for f in frames:
        for e in (e for e in events if e["frame"] == f):
            a = e["after"]
            if a["label"] != "Person":
                continue
            if e["type"] == "end":
                alive.pop(a["id"], None)
            else:
                alive[a["id"]] = a["current_zones"]
        n = sum(1 for z in alive.values() if zone is None or zone in z)
        if n != seq[-1]:
            seq.append(n)
    if seq[-1] != 0:
        seq.append(0)  # the end of the run clears what is left
    return seq


def frigate_spelling(line):
    """An event line of --events as MQTT carries it: the record alone, its
    labels in lower case as Frigate's are."""
    ev = {k: json.loads(json.dumps(line[k])) for k in ("type", "before", "after")}
    for side in ("before", "after"):
        ev[side]["label"] = ev[side]["label"].lower()
    return ev


def dedupe(values):
    out = []
    for v in values:
        if not out or out[-1] != v:
            out.append(v)
    return out


def test_frigate_topics_discovery_and_snapshots(osprey, broker, clip, zones, pwfile, tmp_path):
    session(broker, "frigate/#", "homeassistant/#")
    snaps = tmp_path / "snaps"
    r = detect(osprey, "--zones", zones, "--camera", "door", "--events", tmp_path / "ev.jsonl",
               "--snapshots", snaps, clip, "--mqtt", f"mqtt://{USER}@127.0.0.1:{broker.port}",
               "--mqtt-password-file", pwfile)
    assert r.returncode == 0, r.stderr
    assert PASSWORD not in r.stdout + r.stderr
    assert '"failed": false' in r.stderr and '"dropped": 0' in r.stderr
    got = drain(broker, "frigate/#", "homeassistant/#")
    topics = [t for _, t, _ in got]

    # availability: online first, offline last
    avail = [p for _, t, p in got if t == "frigate/available"]
    assert avail == ["online", "offline"], avail
    assert topics[-1] == "frigate/available"

    # frigate/events: the records --events wrote, in order, in Frigate's layout
    written = [x for x in lines((tmp_path / "ev.jsonl").read_text()) if x["kind"] == "event"]
    events = [json.loads(p) for _, t, p in got if t == "frigate/events"]
    assert len(events) >= 5
    assert events == [frigate_spelling(x) for x in written]
    for ev in events:
        assert set(ev) == {"type", "before", "after"}
        assert ev["type"] in ("new", "update", "end")
        for side in ("before", "after"):
            assert FRIGATE_KEYS <= set(ev[side])
            assert ev[side]["camera"] == "door"
    assert any("left" in ev["after"]["entered_zones"] for ev in events)

    # counts: what the events say, frame by frame, for the camera and the zone
    for scope, zone in (("door", None), ("left", "left")):
        values = [int(p) for _, t, p in got if t == f"frigate/{scope}/person"]
        assert dedupe(values) == replay(written, zone), scope
        assert max(values) > 0
        active = [int(p) for _, t, p in got if t == f"frigate/{scope}/person/active"]
        assert len(active) == len(values) and all(a <= c for a, c in zip(active, values))

    # what stays on the broker: the discovery configs, offline, the counts at 0
    kept = {t: (retained, p) for retained, t, p in drain(broker, "frigate/#", "homeassistant/#",
                                                           client_id=None, wait=2)}
    assert all(retained for retained, _ in kept.values())
    assert kept["frigate/available"][1] == "offline"
    assert kept["frigate/door/person"][1] == "0" and kept["frigate/left/person"][1] == "0"
    assert not [t for t in kept if "Person" in t]
    assert "frigate/events" not in kept
    configs = {t: json.loads(p) for t, (_, p) in kept.items() if t.startswith("homeassistant/")}
    assert set(configs) == {
        "homeassistant/binary_sensor/osprey_door/all_person_occupancy/config",
        "homeassistant/sensor/osprey_door/all_person_count/config",
        "homeassistant/binary_sensor/osprey_door/left_person_occupancy/config",
        "homeassistant/sensor/osprey_door/left_person_count/config",
    }
    ids = set()
    for t, c in configs.items():
        scope = "left" if "/left_" in t else "door"
        assert c["state_topic"] == f"frigate/{scope}/person"
        assert c["availability_topic"] == "frigate/available"
        assert (c["payload_available"], c["payload_not_available"]) == ("online", "offline")
        assert c["device"]["identifiers"] == ["osprey_door"]
        ids.add(c["unique_id"])
        if "/binary_sensor/" in t:
            assert c["device_class"] == "occupancy"
            assert "value | int > 0" in c["value_template"]
        else:
            assert c["state_class"] == "measurement"
    assert len(ids) == 4

    # --snapshots: one picture per reported object, named by its event id
    reported = {ev["after"]["id"] for ev in events if ev["type"] == "new"}
    pictures = {p.name for p in snaps.iterdir()}
    assert pictures == {f"{i}.jpg" for i in reported}
    for p in snaps.iterdir():
        assert p.read_bytes()[:3] == b"\xff\xd8\xff"


def test_last_will_when_killed(osprey, broker, pwfile):
    """A prefix of one's own, no discovery; SIGKILL mid-run: the broker
    says offline for osprey."""
    session(broker, "home/cams/#", "homeassistant/#")
    p = subprocess.Popen([str(osprey), "detect", "--quiet", "--track", "-j", "1",
                          str(need(MEDIA / "vtest.avi")), "--ha-discovery", "off", "--mqtt",
                          f"mqtt://{USER}@127.0.0.1:{broker.port}/home/cams",
                          "--mqtt-password-file", str(pwfile)],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    # a few frames in: osprey is connected, online was sent before them
    for _ in range(20):
        assert p.stdout.readline(), "osprey ended before it was killed"
    with open(f"/proc/{p.pid}/cmdline", "rb") as f:
        assert PASSWORD.encode() not in f.read()
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    got = drain(broker, "home/cams/#", "homeassistant/#")
    avail = [pl for _, t, pl in got if t == "home/cams/available"]
    assert avail == ["online", "offline"], got
    assert not [t for _, t, _ in got if t.startswith("homeassistant/")]
    kept = {t: pl for _, t, pl in drain(broker, "home/cams/available", client_id=None, wait=2)}
    assert kept == {"home/cams/available": "offline"}


def test_unreachable_broker_fails_at_the_start(osprey, clip, pwfile):
    port = free_port()
    r = detect(osprey, clip, "--mqtt", f"mqtt://{USER}@127.0.0.1:{port}",
               "--mqtt-password-file", pwfile)
    assert r.returncode == 1, r.stderr
    assert r.stdout == ""  # not one frame
    assert f"osprey detect: --mqtt mqtt://***@127.0.0.1:{port}: cannot reach the " \
           "broker: Connection refused" in r.stderr
    assert "retrying" not in r.stderr  # it is not retried
    assert PASSWORD not in r.stderr


def test_wrong_password_fails_at_the_start(osprey, broker, clip, tmp_path):
    bad = tmp_path / "bad.pw"
    bad.write_text("hunter5-wrong\n")
    r = detect(osprey, clip, "--mqtt", f"mqtt://{USER}@127.0.0.1:{broker.port}",
               "--mqtt-password-file", bad)
    assert r.returncode == 1, r.stderr
    assert r.stdout == ""
    assert "hunter5-wrong" not in r.stderr
    assert "refused the connection" in r.stderr and "not retrying" in r.stderr


@pytest.mark.parametrize("args, message", [
    (["--mqtt", "mqtt://"], "is not mqtt[s]://[USER[:PASSWORD]@]HOST[:PORT][/TOPIC]"),
    (["--mqtt", "kafka://127.0.0.1:9092/t"], "--mqtt with --track is an mqtt:// or mqtts:// URL"),
    (["--ha-discovery", "homeassistant"], "--ha-discovery needs --mqtt"),
    (["--mqtt", "mqtt://127.0.0.1:1/x", "--ha-discovery", "ha/#"], "is not a topic prefix"),
    (["--camera", "front door"], "--camera 'front door' must be 1-63 letters"),
])
def test_bad_options(osprey, clip, args, message):
    r = detect(osprey, clip, *args)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr
    assert r.stdout == ""


def test_help_says_what_mqtt_does_with_track(osprey):
    r = subprocess.run([str(osprey), "detect", "--help"], capture_output=True, text=True)
    for words in ("PREFIX/events", "PREFIX/CAMERA/LABEL", "PREFIX/ZONE/LABEL", "PREFIX/available",
                  "last will", "--ha-discovery", "--snapshots DIR", "--camera NAME",
                  "exit status 1 before any frame", "reconnected"):
        assert words in r.stdout, words


def test_broker_lost_mid_run_is_reconnected(osprey, broker, pwfile, tmp_path):
    """The broker stops a few frames in and comes back: the frames go on,
    the messages of meanwhile wait in osprey's queue, every event arrives
    in order, and osprey is online again once reconnected."""
    clip = cut(tmp_path, 200)
    session(broker, "frigate/#")
    p = subprocess.Popen([str(osprey), "detect", "--quiet", "--track", "-j", "1", str(clip),
                          "--events", str(tmp_path / "ev.jsonl"), "--ha-discovery", "off",
                          "--mqtt", f"mqtt://{USER}@127.0.0.1:{broker.port}",
                          "--mqtt-password-file", str(pwfile)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(20):
        assert p.stdout.readline(), "osprey ended before the broker stopped"
    broker.close()
    time.sleep(1)
    broker.start()
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    assert "retrying" in err and '"dropped": 0' in err and PASSWORD not in out + err
    got = drain(broker, "frigate/#")
    written = [x for x in lines((tmp_path / "ev.jsonl").read_text()) if x["kind"] == "event"]
    events = [json.loads(pl) for _, t, pl in got if t == "frigate/events"]
    assert events == [frigate_spelling(x) for x in written]
    avail = [pl for _, t, pl in got if t == "frigate/available"]
    assert avail[0] == "online" and avail[-1] == "offline" and avail.count("online") == 2, avail
