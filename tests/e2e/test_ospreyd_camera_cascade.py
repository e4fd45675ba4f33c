"""A camera whose model has a cascade (docs/cameras.md, Names and plates;
docs/cascades.md): ospreyd runs the steps once per object, not on every
frame the camera sends to the model (the camera's step runs, on its log
line, /api/cameras and /metrics, are a few for a face seen in every
frame), a tracked face keeps the name it was given, and the camera's
events carry it as Frigate's sub_label, [name, score], on the log, on
frigate/events of a real mosquitto and in the SQLite database. A camera
whose model has none writes its events as it always did: sub_label null,
no plate keys and no step runs. The clip is a real photo (the footballer of the
cascade tests) played as a camera by tests/e2e/rtsp_server.py; the face
library holds that photo (osprey faces add)."""
import json
import sqlite3
import subprocess
import time

import pytest

from assets import model
from camera_daemon import daemons, events, free_port, summary  # noqa: F401 (a fixture)
from conftest import MEDIA, need
from face_library import library  # noqa: F401 (a fixture)
from mqtt_broker import USER, broker, certs, drain, pwfile, session  # noqa: F401 (fixtures)
from test_ospreyd_cameras import rtsp_server
from test_ospreyd_cameras_http import TOKEN, get, get_json
from test_ospreyd_http import parse_metrics

PLATE_KEYS = ("recognized_license_plate", "recognized_license_plate_score")


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    """The footballer's photo as 30 s of MJPEG at 10 frames a second, as
    RTP/JPEG carries it: 4:2:0, the standard Huffman tables, sides padded
    to a multiple of 8."""
    out = tmp_path_factory.mktemp("clip") / "footballer.avi"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-loop", "1", "-i",
                    str(need(MEDIA / "messi5.jpg")), "-t", "30", "-r", "10", "-vf", "pad=552:344",
                    "-c:v", "mjpeg", "-huffman", "default", "-pix_fmt", "yuvj420p", "-q:v", "3",
                    str(out)], check=True)
    return out


def test_a_cameras_events_name_the_face(daemons, tmp_path, broker, pwfile, library, clip):
    model("ssd-oidv4-int8")
    port = free_port()
    server = rtsp_server(port, "/door", "--file", str(clip))
    try:
        session(broker, "frigate/events")
        db = tmp_path / "events.db"
        url = f"rtsp://127.0.0.1:{port}/door"
        cfg = {"runtime": "onnxruntime",
               "models": [{"model": "ultraface",
                           "then": [{"model": "face-embed", "labels": ["face"],
                                     "faceLibrary": str(library)}]},
                          {"model": "ssd-oidv4-int8"}],
               "cameras": [{"name": "door", "url": url, "model": "ultraface", "fps": 5,
                            "motion": False},
                           {"name": "yard", "url": str(need(MEDIA / "vtest.avi")),
                            "model": "ssd-oidv4-int8", "fps": 5,
                            "motion": False, "objects": ["Person"]}],
               "events": {"db": str(db)},
               "mqtt": {"url": f"mqtt://127.0.0.1:{broker.port}", "user": USER,
                        "passwordFile": str(pwfile)}}
        token = tmp_path / "token"
        token.write_text(TOKEN + "\n")
        token.chmod(0o600)
        http = free_port()
        d = daemons(tmp_path, cfg, args=("--http", f"127.0.0.1:{http}", "--auth-token-file", token))

        def named():
            return [e for e in events(d.stdout()) if e["after"]["camera"] == "door"
                    and e["after"]["sub_label"]]

        d.until(named, "an event of door with a sub_label", timeout=120)
        d.until(lambda: [e for e in events(d.stdout()) if e["after"]["camera"] == "yard"],
                "an event of yard", timeout=120)

        def cameras():
            status, body = get_json(http, "/api/cameras")
            return {c["name"]: c for c in body["cameras"]} if status == 200 else None

        # the face is in every frame of door: 30 frames detected, its steps run
        # on few of them
        cams = d.until(lambda: (lambda c: c if c and c["door"]["detected"] >= 30 else None)(
            cameras()), "30 frames of door detected", timeout=180)
        door, yard = cams["door"], cams["yard"]
        assert 1 <= door["stepRuns"] <= max(4, door["detected"] // 10), door
        assert yard["stepRuns"] == 0, yard
        status, _, body = get(http, "/metrics")
        assert status == 200, body
        m = parse_metrics(body.decode())
        assert m[("osprey_camera_step_runs_total", frozenset({("camera", "door")}))] >= 1, m
        assert m[("osprey_camera_step_runs_total", frozenset({("camera", "yard")}))] == 0, m
        time.sleep(1)
        assert d.stop() == 0, d.log()[-3000:]
    finally:
        server.kill()
        server.wait(10)
    counts = summary(d.log(), "door")
    ratio = counts["step_runs"] / counts["detected"]
    print(f"door: {counts['step_runs']} step runs in {counts['detected']} frames with its face "
          f"({ratio:.3f})")
    assert counts["detected"] >= 30 and 1 <= counts["step_runs"] and ratio <= 0.1, counts
    assert summary(d.log(), "yard")["step_runs"] == 0
    logged = events(d.stdout())
    door = [e for e in logged if e["after"]["camera"] == "door"]
    yard = [e for e in logged if e["after"]["camera"] == "yard"]
    for e in door:
        for o in (e["before"], e["after"]):
            assert list(o)[4:7] == ["sub_label", *PLATE_KEYS], o
            assert o[PLATE_KEYS[0]] is None and o[PLATE_KEYS[1]] is None, o
            if o["sub_label"] is not None:
                name, score = o["sub_label"]
                assert name == "footballer" and 0.45 <= score <= 1.0, o
    assert any(e["after"]["sub_label"] for e in door)
    for e in yard:  # no cascade: as its events always were
        for o in (e["before"], e["after"]):
            assert o["sub_label"] is None and not set(PLATE_KEYS) & set(o), o
            assert list(o)[3:5] == ["label", "sub_label"], o
    published = [json.loads(p) for _, t, p in drain(broker, "frigate/events")]
    assert [e for e in published if e["after"]["camera"] == "door"] == door
    # on MQTT a label is spelt Frigate's way (person), otherwise the same
    for e in yard:
        for o in (e["before"], e["after"]):
            o["label"] = o["label"].lower()
    assert [e for e in published if e["after"]["camera"] == "yard"] == yard
    rows = {r[0]: json.loads(r[1]) for r in sqlite3.connect(db).execute(
        "SELECT id, record FROM events")}
    last = {e["after"]["id"]: e["after"] for e in door}
    for i, a in last.items():
        if a["sub_label"]:
            assert json.dumps(rows[i]).find("footballer") >= 0, rows[i]


@pytest.mark.serial  # a camera's deadline is one frame interval: run alone
def test_text_read_on_a_camera_is_kept_when_it_fits_the_pattern(daemons, tmp_path):
    """A street sign (scenetext01.jpg: NOTICE, DOUBLE, PARKING,
    PROHIBITED, AT ALL TIMES) has lines of text enough to test a pattern
    (the plate below has one). The sign, played as a camera through
    the text detector and recognizer with a pattern that only two of its
    words fit: those two objects carry their text as
    recognized_license_plate, the others null. The steps share the
    frame's deadline of one frame interval: 10 s here, which the detector
    and five readings meet even on a loaded machine."""
    for name in ("ocr-det", "ocr-rec"):
        model(name)
    clip = tmp_path / "sign.avi"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-loop", "1", "-i",
                    str(need(MEDIA / "scenetext01.jpg")), "-t", "90", "-r", "10", "-c:v", "mjpeg",
                    "-pix_fmt", "yuvj420p", "-q:v", "3", str(clip)], check=True)
    cfg = {"runtime": "onnxruntime",
           "models": [{"model": "ocr-det",
                       "then": [{"model": "ocr-rec", "pattern": "P[A-Z]+"}]}],
           "cameras": [{"name": "street", "url": str(clip), "fps": 0.1, "motion": False}]}
    d = daemons(tmp_path, cfg)

    def plates():
        return {e["after"]["recognized_license_plate"] for e in events(d.stdout())} - {None}

    d.until(lambda: plates() >= {"PARKING", "PROHIBITED"}, "both words read", timeout=240)
    assert d.stop() == 0, d.log()[-3000:]
    logged = events(d.stdout())
    ids = {e["after"]["id"] for e in logged}
    assert len(ids) >= 4, logged  # the sign's lines are objects, read or not
    for e in logged:
        for o in (e["before"], e["after"]):
            text, score = o["recognized_license_plate"], o["recognized_license_plate_score"]
            assert o["sub_label"] is None, o
            assert (text is None) == (score is None), o
            assert text in (None, "PARKING", "PROHIBITED"), o
            assert score is None or 0 < score <= 1, o
    read = {e["after"]["id"] for e in logged if e["after"]["recognized_license_plate"]}
    assert 0 < len(read) < len(ids), logged


@pytest.mark.serial  # a camera's deadline is one frame interval: run alone
def test_a_cars_plate_read_on_a_camera_is_its_recognized_license_plate(daemons, tmp_path):
    """The restored car photo (licenseplate_restored.png, made by set-up:
    docs/cascades.md, Plates) played as a camera through the plate chain
    of the docs, car -> ocr-det -> ocr-rec with a pattern: the car's
    events carry its plate, 127-RFS, as Frigate's
    recognized_license_plate, on the log and in the database, and the
    text boxes that do not fit the pattern are not taken for it."""
    for name in ("ssd-oidv4-int8", "ocr-det", "ocr-rec"):
        model(name)
    clip = tmp_path / "car.avi"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-loop", "1", "-i",
                    str(need(MEDIA / "licenseplate_restored.png")), "-t", "60", "-r", "10",
                    "-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2", "-c:v", "mjpeg",
                    "-pix_fmt", "yuvj420p", "-q:v", "2", str(clip)], check=True)
    db = tmp_path / "events.db"
    cfg = {"runtime": "onnxruntime",
           "models": [{"model": "ssd-oidv4-int8",
                       "then": [{"model": "ocr-det", "labels": ["Car"], "as": "plates",
                                 "then": [{"model": "ocr-rec",
                                           "pattern": "[0-9]{3}-?[A-Z]{3}"}]}]}],
           "cameras": [{"name": "drive", "url": str(clip), "fps": 0.2, "motion": False,
                        "objects": ["Car"]}],
           "events": {"db": str(db)}}
    d = daemons(tmp_path, cfg)

    def plates():
        return {e["after"]["recognized_license_plate"] for e in events(d.stdout())} - {None}

    d.until(lambda: plates(), "the plate read", timeout=240)
    assert d.stop() == 0, d.log()[-3000:]
    logged = events(d.stdout())
    assert plates() == {"127-RFS"}, logged
    for e in logged:
        assert e["after"]["label"] == "Car", e
        score = e["after"]["recognized_license_plate_score"]
        assert score is None or 0.5 < score <= 1, e
    rows = [json.loads(r[0]) for r in sqlite3.connect(db).execute("SELECT record FROM events")]
    assert rows and all(r["after"]["recognized_license_plate"] == "127-RFS" for r in rows), rows
