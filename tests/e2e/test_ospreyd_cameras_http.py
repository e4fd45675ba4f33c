"""ospreyd's cameras over --http (docs/cameras.md, HTTP): /api/cameras and
the cameras' series on /metrics (checked by promtool), the newest frame of
a camera as a JPEG with its boxes and zones drawn, the events from the
SQLite database by filter (bad filters refused), an event's snapshot, and
every one of them behind the token. One ospreyd for the file: a camera
played from vtest with a zones file, and one whose RTSP server is not
there."""
import io
import json
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from PIL import Image

from assets import BIN, media, model
from camera_daemon import Daemon, free_port
from ospreyd_client import http_connection
from test_ospreyd_http import parse_metrics

TOKEN = "Vq7-cameras-http-token-0123456789abc"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def get(port, path, headers=AUTH, timeout=15):
    """(status, headers, body bytes)."""
    c = http_connection(port, timeout)
    try:
        c.request("GET", path, headers=headers or {})
        r = c.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        c.close()


def get_json(port, path):
    status, _, body = get(port, path)
    return status, json.loads(body)


class Site(Daemon):
    """ospreyd --config site.json --http PORT --auth-token-file, its log collected."""

    def __init__(self, tmp, config):
        token = tmp / "token"
        token.write_text(TOKEN + "\n")
        token.chmod(0o600)
        self.port = free_port()
        super().__init__(tmp, config, args=("--http", f"127.0.0.1:{self.port}",
                                            "--auth-token-file", token))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    model("ssd-oidv4-int8")
    tmp = tmp_path_factory.mktemp("cameras_http")
    (tmp / "zones.json").write_text(json.dumps({
        "zones": {"street": {"coordinates": "0.05,0.5,0.95,0.5,0.95,0.95,0.05,0.95"}},
        "lines": {"middle": {"coordinates": "0.5,0.1,0.5,0.9"}}}))
    snaps = tmp / "snaps"
    snaps.mkdir()
    s = Site(tmp, {"runtime": "onnxruntime", "models": [{"model": "ssd-oidv4-int8"}],
                   "events": {"db": str(tmp / "events.db"), "snapshots": str(snaps)},
                   "cameras": [{"name": "yard", "url": str(media("vtest.avi")), "fps": 5,
                                "objects": ["Person"], "zones": str(tmp / "zones.json")},
                               {"name": "gone", "url": f"rtsp://127.0.0.1:{free_port()}/x",
                                "fps": 1}]})
    s.tmp, s.snaps = tmp, snaps
    s.until(lambda: get(s.port, "/api/events")[0] == 200, "the events database open")
    yield s
    rc = s.stop()
    assert rc == 0, s.log()[-3000:]


def camera(site, name):
    status, body = get_json(site.port, "/api/cameras")
    assert status == 200, body
    return next((c for c in body["cameras"] if c["name"] == name), None)  # None: not started yet


def test_api_cameras_says_each_cameras_state_and_counts(site):
    yard = site.until(lambda: (lambda c: c if c and c["detected"] >= 10 and c["events"] >= 1
                                  and c["fps"] > 0
                                  else None)(camera(site, "yard")),
                         "yard's frames detected and its events")
    assert yard["state"] == "up" and yard["model"] == "ssd-oidv4-int8", yard
    assert yard["fpsMax"] == 5 and 0 < yard["fps"] <= 6, yard
    assert yard["framesIn"] >= yard["submitted"] >= yard["detected"] > 0, yard
    assert yard["submitted"] >= yard["detected"] + yard["shed"] + yard["failed"], yard
    assert yard["reconnects"] == 0 and yard["tracksActive"] >= 0, yard
    assert yard["decodeMs"] is not None and yard["decodeMs"] > 0, yard  # a file: measured
    # people walk in vtest: motion in most of its frames, few held back
    assert 0 < yard["motion"] <= 1 and 0 <= yard["skipped"] < yard["submitted"], yard
    assert abs(yard["frameTime"] - time.time()) < 600, yard
    gone = camera(site, "gone")
    assert gone["state"] in ("connecting", "down") and gone["framesIn"] == 0, gone


def test_metrics_have_a_series_set_per_camera_that_promtool_accepts(site):
    site.until(lambda: (camera(site, "yard") or {}).get("detected", 0) >= 5, "yard's frames")
    status, headers, body = get(site.port, "/metrics")
    assert status == 200, body
    text = body.decode()
    m = parse_metrics(text)

    def sample(name, **labels):
        key = (name, frozenset(labels.items()))
        assert key in m, f"no {name}{labels} in:\n{text}"
        return m[key]

    assert sample("osprey_camera_frames_total", camera="yard", outcome="detected") >= 5
    for outcome in ("shed", "failed"):
        assert sample("osprey_camera_frames_total", camera="yard", outcome=outcome) >= 0
    assert sample("osprey_camera_frames_in_total", camera="yard") >= 5
    assert sample("osprey_camera_frames_in_total", camera="gone") == 0
    assert sample("osprey_camera_state", camera="yard", state="up") == 1
    assert sample("osprey_camera_state", camera="yard", state="down") == 0
    assert sample("osprey_camera_state", camera="gone", state="up") == 0
    for name in ("osprey_camera_events_total", "osprey_camera_reconnects_total",
                 "osprey_camera_tracks_active", "osprey_camera_fps"):
        sample(name, camera="yard")
        sample(name, camera="gone")
    assert sample("osprey_camera_decode_seconds", camera="yard") > 0
    assert 0 < sample("osprey_camera_motion_ratio", camera="yard") <= 1
    assert ("osprey_camera_motion_ratio", frozenset({("camera", "gone")})) not in m  # no frame yet
    assert sample("osprey_camera_frames_skipped_total", camera="yard") >= 0
    assert sample("osprey_camera_frames_skipped_total", camera="gone") == 0
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing (Debian's prometheus; scripts/bootstrap.sh installs it)"
    r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_latest_jpg_is_the_newest_frame_with_its_boxes_and_zones(site):
    status, headers, body = site.until(
        lambda: (lambda r: r if r[0] == 200 else None)(get(site.port, "/api/cameras/yard/latest.jpg")),
        "yard's latest.jpg")
    assert headers["Content-Type"] == "image/jpeg", headers
    img = Image.open(io.BytesIO(body))
    assert img.format == "JPEG" and img.size == (768, 576), (img.format, img.size)
    # the zone's outline (yellow, 255,214,0) runs along y = 0.5 of the frame;
    # the boxes and their labels, drawn over it, hide some of it where people
    # walk on it (23 of these 32 points were yellow in one frame), and vtest
    # has no such yellow on that row of its own (none in 5 frames sampled)
    px = img.convert("RGB").load()
    row = [px[x, 288] for x in range(60, 700, 20)]
    yellow = [p for p in row if p[0] > 180 and p[1] > 170 and p[2] < 130]
    assert len(yellow) >= len(row) // 2, row
    keep = BIN.parent / "e2e"
    keep.mkdir(exist_ok=True)
    (keep / "camera-latest.jpg").write_bytes(body)
    # a newer frame, once the camera has gone on
    time.sleep(1.5)
    status2, _, body2 = get(site.port, "/api/cameras/yard/latest.jpg")
    assert status2 == 200 and body2 != body
    # no such camera: 404; a camera without a frame: 503
    assert get(site.port, "/api/cameras/nobody/latest.jpg")[0] == 404
    assert get(site.port, "/api/cameras/gone/latest.jpg")[0] == 503
    assert get(site.port, "/api/cameras/..%2F/latest.jpg")[0] == 404


def events(site, query=""):
    status, body = get_json(site.port, "/api/events" + query)
    assert status == 200, body
    return body


def test_api_events_reads_the_database_by_filter(site):
    rows = site.until(lambda: (lambda r: r if len({e["start_time"] for e in r}) >= 2 else None)(
        events(site)), "events of objects that started apart in the database")
    assert all(r["camera"] == "yard" and r["label"] == "Person" for r in rows), rows
    starts = [r["start_time"] for r in rows]
    assert starts == sorted(starts, reverse=True), "newest first"
    for r in rows:
        assert set(r) == {"id", "camera", "label", "start_time", "end_time", "top_score", "zones",
                          "record"}, r
        assert r["record"]["after"]["id"] == r["id"], r
        assert r["zones"] == r["record"]["after"]["entered_zones"], r
    # the same rows as a reader of the file sees them
    db = sqlite3.connect(f"file:{site.tmp / 'events.db'}?mode=ro", uri=True)
    known = {row[0] for row in db.execute("SELECT id FROM events")}
    db.close()
    assert {r["id"] for r in rows} <= known
    assert len(events(site, "?limit=2")) == 2
    assert events(site, "?camera=gone") == []
    assert events(site, "?camera=yard&label=Car") == []
    # a time between two objects' starts parts them (start times are shown to the microsecond)
    mid = (rows[0]["start_time"] + rows[-1]["start_time"]) / 2
    later, earlier = events(site, f"?after={mid}&limit=500"), events(site, f"?before={mid}&limit=500")
    assert later and all(r["start_time"] > mid - 1e-6 for r in later), later
    assert earlier and all(r["start_time"] < mid + 1e-6 for r in earlier), earlier
    assert rows[-1]["id"] in {r["id"] for r in earlier} and rows[0]["id"] in {r["id"] for r in later}
    assert events(site, f"?after={time.time() + 1000}") == []
    # vtest's walkers cross the street zone's edge: some entered it, and only those match
    site.until(lambda: any("street" in r["zones"] for r in events(site)), "an entry into street")
    inside = events(site, "?zone=street&limit=500")
    assert inside and all("street" in r["zones"] for r in inside), inside


@pytest.mark.parametrize("query, says", [
    ("?limit=0", "limit must be a whole number from 1 to 500"),
    ("?limit=501", "limit must be a whole number from 1 to 500"),
    ("?limit=ten", "limit must be"),
    ("?after=yesterday", "after must be a time"),
    ("?before=1e999", "before must be a time"),
    ("?camera=yard%27%3B%20DROP%20TABLE%20events%3B--", "camera must be a name"),
    ("?zone=..%2Fx", "zone must be a name"),
    ("?camera", "camera must be a name"),
    ("?camrea=yard", 'unknown parameter "camrea"'),
])
def test_a_bad_filter_is_refused_with_the_reason(site, query, says):
    status, _, body = get(site.port, "/api/events" + query)
    assert status == 400, body
    assert says in json.loads(body)["error"], body
    assert isinstance(events(site), list)  # and the database is as it was


def test_an_events_snapshot_is_served_from_the_snapshots_directory(site):
    """ospreyd keeps each object's best picture as SNAPSHOTS/ID.jpg; the
    page serves that file, and only for an event of the database. Objects
    that ended are used: their pictures are written no more."""
    ended = lambda: [r for r in events(site, "?limit=500") if r["end_time"] is not None]  # noqa: E731
    rows = site.until(lambda: (lambda r: r if len(r) >= 2 else None)(ended()), "two ended objects")
    shown, removed = rows[0]["id"], rows[1]["id"]
    status, headers, body = get(site.port, f"/api/events/{shown}/snapshot.jpg")
    assert status == 200 and headers["Content-Type"] == "image/jpeg", body[:200]
    assert body == (site.snaps / f"{shown}.jpg").read_bytes() and body[:3] == b"\xff\xd8\xff"
    (site.snaps / f"{removed}.jpg").unlink()
    assert get(site.port, f"/api/events/{removed}/snapshot.jpg")[0] == 404  # no file
    buf = io.BytesIO()
    Image.new("RGB", (64, 48), (200, 30, 30)).save(buf, "JPEG")
    # a file whose id is not in the database is not served
    (site.snaps / "1.000000-999999.jpg").write_bytes(buf.getvalue())
    assert get(site.port, "/api/events/1.000000-999999/snapshot.jpg")[0] == 404
    # a link in the directory is not followed (to a file of the test's own:
    # a link to a system file would be written through by a later test);
    # names that are paths are no event's
    secret = site.tmp / "outside-snapshots.jpg"
    secret.write_bytes(buf.getvalue())
    (site.snaps / f"{removed}.jpg").symlink_to(secret)
    assert get(site.port, f"/api/events/{removed}/snapshot.jpg")[0] == 404
    (site.snaps / f"{removed}.jpg").unlink()
    for path in ("/api/events/..%2F..%2Fetc%2Fhostname/snapshot.jpg", "/api/events/../snapshot.jpg",
                 "/api/events/site/snapshot.jpg", "/api/events/token/snapshot.jpg"):
        assert get(site.port, path)[0] == 404, path


def test_the_dashboard_shows_the_cameras_and_their_events_in_headless_chromium(site):
    """The page, opened with the token in its fragment, shows the camera's
    newest frames (fetched with the token), its frames/s, and the events
    with an event's snapshot."""
    node, chromium = shutil.which("node"), Path("/usr/bin/chromium")
    browser = Path(__file__).resolve().parent / "browser"
    assert node and chromium.exists() and (browser / "node_modules" / "playwright-core").exists(), \
        "node, Debian's chromium and tests/e2e/browser/node_modules (scripts/bootstrap.sh) are needed"
    # the newest object that ended (its picture is written no more) of the
    # 20 newest the page lists: an older one may leave the list while the
    # browser starts
    ended = lambda: [r for r in events(site, "?limit=20") if r["end_time"] is not None]  # noqa: E731
    event = site.until(lambda: (lambda r: r if r else None)(ended()), "an ended object")[0]["id"]
    buf = io.BytesIO()
    Image.new("RGB", (96, 72), (40, 160, 220)).save(buf, "JPEG")
    snap = site.snaps / f"{event}.jpg"
    snap.unlink(missing_ok=True)  # written anew, never through a link
    snap.write_bytes(buf.getvalue())
    shot = site.tmp / "dashboard-cameras.png"
    r = subprocess.run([node, str(browser / "cameras.mjs"), f"http://127.0.0.1:{site.port}/#token={TOKEN}",
                        str(shot), "yard", event, str(site.tmp / "chromium-profile")],
                       capture_output=True, text=True, timeout=120, cwd=browser)
    assert r.returncode == 0, f"{r.stdout}\n{r.stderr}"
    seen = json.loads(r.stdout.strip().splitlines()[-1])
    assert seen["width"] == 768 and seen["frames"] >= 2 and seen["thumb"] == 96, seen
    assert shot.stat().st_size > 20000
    assert TOKEN not in site.log()
    keep = BIN.parent / "e2e"
    keep.mkdir(exist_ok=True)
    shutil.copy(shot, keep / "dashboard-cameras.png")
    print(f"dashboard screenshot: {shot} (and {keep / 'dashboard-cameras.png'})")


@pytest.mark.parametrize("path", ["/api/cameras", "/api/cameras/yard/latest.jpg", "/metrics",
                                  "/api/events", "/api/events?camera=yard",
                                  "/api/events/1.000000-1/snapshot.jpg"])
def test_the_cameras_pages_need_the_token(site, path):
    status, headers, _ = get(site.port, path, headers={})
    assert status == 401 and headers.get("WWW-Authenticate", "").startswith("Bearer"), headers
    status, _, _ = get(site.port, path, headers={"Authorization": "Bearer wrong-token-0123456789abcdef"})
    assert status == 401
    assert get(site.port, "/healthz", headers={})[0] == 200
