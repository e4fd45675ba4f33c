"""A camera much larger than its model, run as regions (docs/cameras.md,
Regions): vtest's first 20 s placed at its own size in a 1920x1080 black
canvas, so its people are as small in the frame as a far camera's. One
ospreyd watches the canvas through a camera with "regions": false and one
with "regions": "auto" (1080 >= 3 x 300: regions), and vtest at its own
size through a camera with "auto" (576 < 3 x 300: whole frames), the
reference of what the model finds in vtest. Shrunk whole into 300x300 the
canvas's people are a few input pixels wide and the model misses most of
them; in crops around what moved it sees them at their own size, and the
whole-frame pass, run as the crops that cover the canvas, finds those who
stand still."""
import shutil
import subprocess
from collections import Counter

import pytest

from assets import media, model
from camera_daemon import cameras_at_end, events, summary
from test_ospreyd_cameras_http import Site, get_json

CLIP_S = 20
CANVAS_W, CANVAS_H = 1920, 1080
AT_X, AT_Y = 576, 252  # vtest's 768x576 centred in the canvas
VTEST_W, VTEST_H = 768, 576


def clips(tmp):
    if not shutil.which("ffmpeg"):
        pytest.skip("ffmpeg is not installed")
    small, canvas = tmp / "vtest20.avi", tmp / "canvas.avi"
    for out, vf in ((small, []), (canvas, ["-vf", f"pad={CANVAS_W}:{CANVAS_H}:{AT_X}:{AT_Y}:black"])):
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(media("vtest.avi")), "-t",
                        str(CLIP_S), *vf, "-r", "10", "-c:v", "mjpeg", "-q:v", "3", str(out)],
                       check=True)
    return small, canvas


@pytest.fixture(scope="module")
def watched(tmp_path_factory):
    """/api/cameras once the clips have ended, the objects each camera
    tracked as sampled from it while they played, and the events and log
    after the stop."""
    model("ssd-oidv4-int8")
    tmp = tmp_path_factory.mktemp("camera_regions")
    small, canvas = clips(tmp)
    # 2 frames a second: a frame of regions is a few runs, each with a
    # deadline of one frame interval, on a machine shared with other work
    cam = {"fps": 2, "objects": ["Person"]}
    s = Site(tmp, {"runtime": "onnxruntime", "models": [{"model": "ssd-oidv4-int8"}],
                   "cameras": [{"name": "ref", "url": str(small), **cam},
                               {"name": "whole", "url": str(canvas), "regions": False, **cam},
                               {"name": "regions", "url": str(canvas), "regions": "auto", **cam}]})
    names = ("ref", "whole", "regions")
    tracked = {n: [] for n in names}

    def sample():
        try:
            status, body = get_json(s.port, "/api/cameras")
        except OSError:  # not up yet
            return
        for c in body.get("cameras", []) if status == 200 else []:
            if c["state"] == "up" and c["frameTime"] is not None:
                tracked[c["name"]].append(c["tracksActive"])

    cams = cameras_at_end(s, names, lambda: get_json(s.port, "/api/cameras"), CLIP_S + 150, sample)
    evs = events(s.stdout())
    return cams, tracked, {n: [e for e in evs if e["after"]["camera"] == n] for n in names}, s.log()


def people(evs):
    return {e["after"]["id"] for e in evs if e["type"] == "new" and e["after"]["label"] == "Person"}


def test_auto_runs_a_large_frame_as_regions_and_a_small_one_whole(watched):
    cams, _, _, _ = watched
    ref, whole, regions = cams["ref"], cams["whole"], cams["regions"]
    assert ref["regionRuns"] == 0 and ref["runs"] == ref["submitted"], ref
    assert whole["regionRuns"] == 0 and whole["runs"] == whole["submitted"], whole
    # the first frame whole and as the 6 crops that cover it, the frames
    # motion sends as crops
    assert regions["regionRuns"] > regions["submitted"] / 2, regions
    assert regions["runs"] - regions["regionRuns"] >= 1, regions


def test_regions_find_the_people_a_whole_frame_misses(watched):
    cams, tracked, evs, _ = watched
    found = {n: people(evs[n]) for n in evs}
    mean = {n: sum(v) / len(v) if v else 0 for n, v in tracked.items()}
    print(f"people found (objects): {({n: len(v) for n, v in found.items()})}; "
          f"objects tracked, mean of /api/cameras samples: {mean}; runs a frame: "
          f"{({n: round(c['runs'] / max(1, c['submitted']), 2) for n, c in cams.items()})}")
    assert found["ref"], evs["ref"]  # people walk in vtest
    assert len(found["regions"]) > len(found["whole"]), found
    # those who stand still make no motion: the cover of the whole-frame
    # pass finds them, where the canvas shrunk whole showed them too small
    # (3 of vtest's 6 people then): all but one of the reference's
    assert len(found["regions"]) >= max(4, len(found["ref"]) - 1), found
    # against vtest at its own size: a share of its people found, where the
    # whole canvas finds far fewer
    assert mean["regions"] >= 0.3 * mean["ref"] and mean["regions"] > 1.5 * mean["whole"], mean


def test_region_events_carry_boxes_in_frame_pixels(watched):
    _, _, evs, _ = watched
    assert evs["regions"], evs
    slack = 2
    for e in evs["regions"]:
        a = e["after"]
        x1, y1, x2, y2 = a["box"]
        if e["type"] == "end":
            # an object still open when the clip ends is ended with the box
            # its track has then, which the tracker may have predicted past
            # the crop it was last found in (its "region")
            assert 0 <= x1 < x2 <= CANVAS_W and 0 <= y1 < y2 <= CANVAS_H, a
            continue
        # vtest's people are where vtest is in the canvas
        assert AT_X - slack <= x1 < x2 <= AT_X + VTEST_W + slack, a
        assert AT_Y - slack <= y1 < y2 <= AT_Y + VTEST_H + slack, a
        if a["region"] is not None:  # found in a crop: the crop holds the box
            rx1, ry1, rx2, ry2 = a["region"]
            assert 0 <= rx1 and 0 <= ry1 and rx2 <= CANVAS_W and ry2 <= CANVAS_H, a
            assert rx2 - rx1 >= 300 and ry2 - ry1 >= 300, a  # at least the model's side
            assert rx1 <= x1 and ry1 <= y1 and x2 <= rx2 and y2 <= ry2, (e["type"], a)
    assert any(e["after"]["region"] for e in evs["regions"]), evs["regions"]


def test_the_counts_add_up(watched):
    cams, _, evs, log = watched
    for n, c in cams.items():
        s = summary(log, n)
        assert s["submitted"] == s["detected"] + s["shed"] + s["failed"], (n, s)
        assert (s["submitted"], s["runs"], s["region_runs"]) == \
            (c["submitted"], c["runs"], c["regionRuns"]), (n, s, c)
        assert s["runs"] >= s["submitted"] and s["events"] == len(evs[n]), (n, s)
        assert c["framesIn"] >= c["submitted"] + c["skipped"], (n, c)
    assert Counter(e["type"] for e in evs["regions"])["new"] >= 1, evs["regions"]
