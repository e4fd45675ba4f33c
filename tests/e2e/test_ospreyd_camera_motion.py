"""ospreyd's cameras and their motion pass (docs/cameras.md, Motion): one
ospreyd watching a still clip (vtest's first frame repeated, as
test_detect_track makes it, 4:2:0) through a camera with its motion pass
on and through one with it off ("motion": false), the same clip in 4:4:4
(decoded to RGB) through a third, and vtest, where people walk, through a
camera with a motion mask. The still camera sends its model a few frames,
finds no motion and keeps the same objects as the camera that sends every
frame (each of them ended once, when the clip ends), and makes RGB of the
frames it sends only; the moving one finds motion and writes its events."""
from collections import Counter

import pytest

from assets import media, model
from camera_daemon import cameras_at_end, events, summary
from test_detect_track import still_clip
from test_ospreyd_cameras_http import Site, get_json

STILL_S = 14  # the model runs at the start, after motion's warm-up, and 10 s on


@pytest.fixture(scope="module")
def watched(tmp_path_factory):
    """The daemon's /api/cameras once both still clips have ended, and
    its events and log after its stop."""
    model("ssd-oidv4-int8")
    tmp = tmp_path_factory.mktemp("camera_motion")
    clip = still_clip(tmp, STILL_S, pix_fmt="yuvj420p")  # 4:2:0, as a camera's video is
    rgb = still_clip(tmp, STILL_S)  # 4:4:4: decoded to RGB
    s = Site(tmp, {"runtime": "onnxruntime", "models": [{"model": "ssd-oidv4-int8"}],
                   "cameras": [{"name": "still", "url": str(clip), "fps": 5},
                               {"name": "every", "url": str(clip), "fps": 5, "motion": False},
                               {"name": "rgb", "url": str(rgb), "fps": 5},
                               {"name": "walk", "url": str(media("vtest.avi")), "fps": 5,
                                "objects": ["Person"],
                                "motionMask": ["0,0,0.2,0,0.2,0.1,0,0.1",
                                               [[0.8, 0.9], [1, 0.9], [1, 1], [0.8, 1]]]}]})
    cams = cameras_at_end(s, ("still", "every", "rgb"), lambda: get_json(s.port, "/api/cameras"),
                          timeout=STILL_S + 90)
    evs = events(s.stdout())
    return cams, {n: [e for e in evs if e["after"]["camera"] == n] for n in cams}, s.log()


def taken(cam):
    return cam["submitted"] + cam["skipped"]


def test_a_still_camera_sends_its_model_a_few_frames(watched):
    cams, _, log = watched
    still, every = cams["still"], cams["every"]
    # fps 5 of a 10 frames/s clip: about 70 frames taken by each
    assert taken(still) >= 50 and taken(every) >= 50, cams
    # the model ran on the first frame, the end of motion's warm-up, 10 s
    # on; a frame shed or failed (a sanitizer build) is followed by one more
    assert 2 <= still["detected"] <= 5, still
    assert still["motion"] is not None and still["motion"] < 0.02, still
    # with its motion pass off every frame taken goes to the model
    assert every["skipped"] == 0 and every["motion"] is None, every
    s = summary(log, "still")
    assert (s["submitted"], s["skipped"]) == (still["submitted"], still["skipped"]), (s, still)
    # the clip's 4:2:0 frames come as decoded: the gate reads their luma,
    # and only a frame it sends is made RGB, once; one it holds back never
    assert s["skipped"] > 0 and s.get("made_rgb") == s["submitted"], s
    e = summary(log, "every")
    assert e.get("made_rgb") == e["submitted"] == taken(every), (e, every)
    # a clip decoded to RGB (4:4:4 JPEGs) is gated and run as it comes
    r = summary(log, "rgb")
    assert r["skipped"] > 0 and r["detected"] >= 2 and r.get("made_rgb") == 0, r


def test_a_still_camera_keeps_the_objects_of_every_frame(watched):
    cams, evs, _ = watched
    new = {n: Counter(e["after"]["label"] for e in evs[n] if e["type"] == "new")
           for n in ("still", "every")}
    assert new["every"], evs["every"]  # people and cars stand in vtest's first frame
    assert new["still"] == new["every"], new
    assert cams["still"]["tracksActive"] == cams["every"]["tracksActive"], cams
    # nobody comes or goes: each object is new once, and ends once, when
    # the clip ends, at its last frame's time
    for n in ("still", "every"):
        ids = [e["after"]["id"] for e in evs[n] if e["type"] == "new"]
        ends = [e["after"] for e in evs[n] if e["type"] == "end"]
        assert len(ids) == len(set(ids)) and sorted(ids) == sorted(a["id"] for a in ends), evs[n]
        assert {e["type"] for e in evs[n][:-len(ends)]} <= {"new", "update"}, evs[n]
        assert len({a["end_time"] for a in ends}) == 1, ends
        assert not any(a["false_positive"] for a in ends), ends


def test_a_moving_camera_finds_motion_and_writes_its_events(watched):
    cams, evs, _ = watched
    walk = cams["walk"]
    # people walk in every frame of vtest: nearly every frame has motion
    assert walk["motion"] > 0.5 and walk["submitted"] > 5 * walk["skipped"], walk
    assert [e for e in evs["walk"] if e["type"] == "new"], walk
    assert all(e["after"]["label"] == "Person" for e in evs["walk"])
