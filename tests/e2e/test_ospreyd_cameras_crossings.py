"""Line crossings from ospreyd's cameras (docs/cameras.md, Events), against
`osprey detect --track` on the same clip; and the names of a camera's
threads (osp-cam-NAME, osp-dec-NAME), by which its CPU is read by stage.

A line across vtest's walkway: ospreyd watching the clip over a real RTSP
server (GStreamer's) with a real mosquitto (a password) reports each
crossing as a record {"kind": "crossing", ...} on stdout, on
frigate/crossings and in /api/cameras' "crossings"; and as many as
`osprey detect --track` counts on the same frames, within a tolerance
(TOLERANCE): the camera takes its frames on the wall clock and sheds a
frame its model cannot answer within one frame interval (a loaded machine
does), and a frame the tracker does not see can split a track in two or
skip the frame where an object's point passes the line.

Each crossing is also a row of the events database (SQLite on disk),
served at /api/crossings by camera, line and time: as many rows as records
on stdout and messages on frigate/crossings, none lost, and a bad
parameter refused with the reason."""
import json
import sqlite3
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from assets import BIN, media, model  # noqa: F401 (model: the catalog the config names)
from camera_daemon import crossings, daemons, events, free_port, site, summary  # noqa: F401
from mqtt_broker import USER, broker, certs, drain, pwfile, session  # noqa: F401

HERE = Path(__file__).resolve().parent
PY = sys.executable if Path(sys.executable).exists() else "/usr/bin/python3"
SECONDS = 30
ZONES = {"lines": {"walkway": {"coordinates": "0,0.5,1,0.5", "objects": ["Person"]}}}
# the larger of 3 crossings and a quarter of detect's, each way
TOLERANCE = (3, 0.25)


def rtsp_server(port, path, *extra):
    p = subprocess.Popen([PY, str(HERE / "rtsp_server.py"), str(port), path, *extra],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready", p.stderr.read()
    return p


def mjpeg(tmp_path):
    """vtest's first SECONDS as an AVI of JPEG frames (RTP/JPEG's Huffman tables)."""
    out = tmp_path / "walkway.avi"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(media("vtest.avi")), "-frames:v",
                    str(SECONDS * 10), "-c:v", "mjpeg", "-huffman", "default", "-q:v", "4",
                    "-pix_fmt", "yuvj420p", "-an", str(out)], check=True)
    return out


def api_cameras(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/cameras", timeout=5) as r:
        return {c["name"]: c for c in json.load(r)["cameras"]}


def walkway_played(daemons, tmp_path, port, hport, zones, broker, pwfile, **config):
    """ospreyd (config's keys added to its site) watching the walkway on
    the RTSP server at port with zones, publishing on broker, its HTTP door
    at hport, once the clip has played."""
    d = daemons(tmp_path, dict(site([{"name": "walk", "url": f"rtsp://127.0.0.1:{port}/walkway",
                                      "fps": 10, "objects": ["Person"], "zones": str(zones)}]),
                               mqtt={"url": f"mqtt://127.0.0.1:{broker.port}", "user": USER,
                                     "passwordFile": str(pwfile)}, **config),
                args=("--http", f"127.0.0.1:{hport}"))
    # a loaded machine answers slowly: the bound only ends a run that hangs
    d.wait_for(lambda log: "camera walk: the source ended" in log, "the clip played",
               timeout=SECONDS * 20)
    return d


@pytest.mark.clip
def test_a_cameras_line_crossings_match_osprey_detect_track(daemons, tmp_path, broker, pwfile):
    clip = mjpeg(tmp_path)
    zones = tmp_path / "zones.json"
    zones.write_text(json.dumps(ZONES))
    port, hport = free_port(), free_port()
    server = rtsp_server(port, "/walkway", "--file", str(clip))
    session(broker, "frigate/#")
    try:
        d = walkway_played(daemons, tmp_path, port, hport, zones, broker, pwfile)
        page = d.until(lambda: api_cameras(hport).get("walk"), "the camera's page")
        assert d.stop() == 0, d.log()[-3000:]
    finally:
        server.terminate()
        server.wait(10)
    out = d.stdout()
    got = crossings(out)
    assert got and {c["line"] for c in got} == {"walkway"}, out[-2000:]
    assert all(c["camera"] == "walk" and c["label"] == "Person" and c["direction"] in ("in", "out")
               for c in got), got
    assert events(out), "the events' records are still there, apart"
    # the same on MQTT (label in Frigate's lower case) and on the page
    published = [json.loads(p) for _, t, p in drain(broker, "frigate/#") if t == "frigate/crossings"]
    assert [(c["trackId"], c["direction"], c["t"]) for c in published] == \
        [(c["trackId"], c["direction"], c["t"]) for c in got]
    assert all(c["label"] == "person" and c["camera"] == "walk" for c in published)
    assert page["crossings"] == len(got), page

    # osprey detect --track on the same frames, one look a frame as a camera takes
    r = subprocess.run([str(BIN / "osprey"), "detect", "-q", "--model", "ssd-oidv4-int8",
                        "--track", "--one-look", "--zones", str(zones), "--fps", "10", str(clip)],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    ref = [json.loads(line) for line in r.stdout.splitlines() if '"crossing"' in line]
    ref = [c for c in ref if c.get("kind") == "crossing"]
    assert ref, r.stderr[-2000:]
    s = summary(d.log(), "walk")
    for way in ("in", "out"):
        a = sum(c["direction"] == way for c in got)
        b = sum(c["direction"] == way for c in ref)
        slack = max(TOLERANCE[0], TOLERANCE[1] * b)
        assert abs(a - b) <= slack, (way, a, b, s)


def get(port, path):
    """(status, JSON body) of a GET."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def test_crossings_are_rows_of_the_events_database_served_by_filter(daemons, tmp_path, broker,
                                                                      pwfile):
    clip = mjpeg(tmp_path)
    zones = tmp_path / "zones.json"
    zones.write_text(json.dumps(ZONES))
    port, hport = free_port(), free_port()
    db = tmp_path / "events.db"
    server = rtsp_server(port, "/walkway", "--file", str(clip))
    session(broker, "frigate/crossings")
    try:
        d = walkway_played(daemons, tmp_path, port, hport, zones, broker, pwfile,
                           events={"db": str(db)})
        got = crossings(d.stdout())
        assert got, d.stdout()[-2000:]
        # the writer is a thread of its own: the rows come soon after
        rows = d.until(lambda: (lambda s, r: s == 200 and len(r) == len(got) and r)(
            *get(hport, "/api/crossings?limit=500")), "every crossing in the database")
        # newest first; each row's record the one logged, its fields the record's
        assert [r["record"] for r in reversed(rows)] == got
        for r in rows:
            rec = r["record"]
            assert (r["camera"], r["line"], r["direction"], r["trackId"], r["label"]) == \
                (rec["camera"], rec["line"], rec["direction"], rec["trackId"], rec["label"])
            assert abs(r["time"] - rec["t"]) < 1e-3
        # by line, camera, time and number
        assert get(hport, "/api/crossings?line=walkway&limit=500")[1] == rows
        assert get(hport, "/api/crossings?line=nowhere") == (200, [])
        assert get(hport, "/api/crossings?camera=other") == (200, [])
        assert get(hport, "/api/crossings?camera=walk&limit=2")[1] == rows[:2]
        # a time between two crossings' (a row's own time is kept to more
        # digits than the page writes)
        times = sorted({r["time"] for r in rows})
        assert len(times) >= 2, rows
        mid = round((times[len(times) // 2 - 1] + times[len(times) // 2]) / 2, 6)
        later = get(hport, f"/api/crossings?after={mid}&limit=500")[1]
        assert later == [r for r in rows if r["time"] > mid]
        earlier = get(hport, f"/api/crossings?before={mid}&limit=500")[1]
        assert earlier == [r for r in rows if r["time"] < mid]
        # a parameter that is not one, or not well made, is refused with the reason
        for query, says in (("label=Person", "unknown parameter \"label\""),
                            ("line=a%20b", "line must be a name"),
                            ("limit=501", "limit must be a whole number from 1 to 500"),
                            ("after=yesterday", "after must be a time")):
            status, body = get(hport, f"/api/crossings?{query}")
            assert status == 400 and says in body["error"], (query, status, body)
        assert d.stop() == 0, d.log()[-3000:]
    finally:
        server.terminate()
        server.wait(10)
    # none lost: rows = MQTT messages = records logged
    con = sqlite3.connect(db)
    n_rows = con.execute("SELECT count(*) FROM crossings").fetchone()[0]
    con.close()
    published = [t for _, t, _ in drain(broker, "frigate/crossings")]
    assert n_rows == len(published) == len(got), (n_rows, len(published), len(got))


def thread_names(pid):
    """The names of a process's threads; one that ends while they are read
    is left out."""
    names = []
    for t in Path(f"/proc/{pid}/task").iterdir():
        try:
            names.append((t / "comm").read_text().strip())
        except OSError:  # ENOENT or ESRCH: it ended
            pass
    return names


def test_a_cameras_threads_are_named_by_stage(daemons, tmp_path):
    frames = tmp_path / "frames"
    frames.mkdir()
    subprocess.run(["ffmpeg", "-v", "error", "-i", str(mjpeg(tmp_path)), "-frames:v", "50",
                    "-c:v", "copy", "-f", "image2", str(frames / "%05d.jpg")], check=True)
    port, hport = free_port(), free_port()
    server = rtsp_server(port, "/live", "--live", str(frames))
    try:
        d = daemons(tmp_path, site([{"name": "front-door", "url": f"rtsp://127.0.0.1:{port}/live",
                                     "fps": 10, "decodeThreads": 2}]),
                    args=("--http", f"127.0.0.1:{hport}"))
        cam = d.until(lambda: (c := api_cameras(hport).get("front-door")) and c["framesIn"] > 0
                      and c, "frames in")
        names = thread_names(d.proc.pid)
        assert d.stop() == 0, d.log()[-3000:]
    finally:
        server.terminate()
        server.wait(10)
    # cut to the 15 bytes Linux keeps
    assert "osp-cam-front-d" in names and "osp-dec-front-d" in names, names
    assert "osp-predict0" in names and "osp-prepare0" in names, names
    assert cam["decodeThreads"] == 2 and cam["decodeMs"] is None, cam  # live: its own thread
