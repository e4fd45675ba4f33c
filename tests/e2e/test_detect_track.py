"""osprey detect --track on real footage: the first 200 frames of vtest.avi
(people walking), cut into a clip of their own. Boxes of confirmed objects
carry a trackId that stays with the person, each change of an object is an
event line in Frigate's frigate/events shape, a line across the walkway
counts the people crossing it, and the second look is taken once per
object instead of at every box (docs/tracking.md, osprey detect --track).
A still clip (vtest's first frame repeated) runs the model only now and
then: the motion pass says nothing moved."""
import json
import re
import shutil
import subprocess

import pytest

from conftest import MEDIA, need, run, lines, iou

FRAMES = 200
ZONES = {
    "zones": {"left": {"coordinates": "0,0,0.5,0,0.5,1,0,1", "objects": ["Person"]}},
    "lines": {"walkway": {"coordinates": "0,0.5,1,0.5", "objects": ["Person"]}},
}
FRIGATE_KEYS = {"id", "camera", "frame_time", "label", "sub_label", "score", "top_score", "box",
                "area", "region", "stationary", "active", "motionless_count", "current_zones",
                "entered_zones", "start_time", "end_time", "snapshot", "false_positive"}


def cut(tmp, frames):
    if not shutil.which("ffmpeg"):
        pytest.skip("ffmpeg is not installed")
    out = tmp / f"vtest-{frames}.avi"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(need(MEDIA / "vtest.avi")),
                    "-frames:v", str(frames), "-c", "copy", str(out)], check=True)
    return out


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    return cut(tmp_path_factory.mktemp("track"), FRAMES)


@pytest.fixture(scope="module")
def zones(tmp_path_factory):
    f = tmp_path_factory.mktemp("zones") / "zones.json"
    f.write_text(json.dumps(ZONES))
    return f


@pytest.fixture(scope="module")
def tracked(osprey, clip, zones):
    """One run with zones, records and events interleaved on stdout."""
    r = run(osprey, "detect", "--quiet", "--track", "--zones", zones, clip)
    assert r.returncode == 0, r.stderr
    return r, lines(r.stdout)


def records(out):
    return [x for x in out if x.get("kind") == "detections"]


def test_boxes_of_a_person_keep_their_track_id(tracked):
    _, out = tracked
    recs = records(out)
    assert [r["frame"] for r in recs] == list(range(FRAMES))
    ids = {d["trackId"] for r in recs for d in r["detections"] if "trackId" in d}
    assert len(ids) >= 5, ids
    # a person's box in one frame and the next: the pairs that are each
    # other's best overlap keep their id
    same = moved = 0
    for a, b in zip(recs, recs[1:]):
        pa = [d for d in a["detections"] if d["label"] == "Person" and "trackId" in d]
        pb = [d for d in b["detections"] if d["label"] == "Person" and "trackId" in d]
        for d in pb:
            best = max(pa, key=lambda e: iou(e["box"], d["box"]), default=None)
            if not best or iou(best["box"], d["box"]) < 0.7:
                continue
            back = max(pb, key=lambda e: iou(e["box"], best["box"]))
            if back is not d:
                continue
            same += best["trackId"] == d["trackId"]
            moved += best["trackId"] != d["trackId"]
    assert same >= 300 and moved <= same // 50, (same, moved)


def test_events_in_frigate_shape_and_order(tracked):
    _, out = tracked
    events = [x for x in out if x.get("kind") == "event"]
    assert events
    frame = -1
    seen, ended = set(), set()
    for x in out:
        if x.get("kind") == "detections":
            frame = x["frame"]
            continue
        # after its frame's record, before the next frame's
        assert x["frame"] == frame, x
        if x["kind"] != "event":
            continue
        assert x["type"] in ("new", "update", "end")
        for side in ("before", "after"):
            assert FRIGATE_KEYS <= set(x[side]), set(x[side]) ^ FRIGATE_KEYS
        after = x["after"]
        assert after["id"] == x["before"]["id"]
        assert after["id"].endswith(f"-{after['track_id']}")
        assert after["frame_time"] == pytest.approx(x["t"], abs=1e-3)
        i = after["id"]
        assert i not in ended, f"a record after the end of {i}"
        if x["type"] == "new":
            assert i not in seen, f"two new for {i}"
            assert x["before"] == after
            seen.add(i)
        else:
            assert i in seen, f"{x['type']} of {i} before its new"
        if x["type"] == "end":
            ended.add(i)
            assert after["end_time"] is not None
    people = [x for x in events if x["type"] == "new" and x["after"]["label"] == "Person"]
    assert len(people) >= 5
    # the track ids of the boxes are the events' objects
    box_ids = {d["trackId"] for r in records(out) for d in r["detections"] if "trackId" in d}
    assert box_ids <= {x["after"]["track_id"] for x in events}
    assert any("left" in x["after"]["entered_zones"] for x in events)


def test_line_across_the_walkway_counts_crossings(tracked):
    r, out = tracked
    m = re.search(r"line walkway: in (\d+), out (\d+)", r.stderr)
    assert m, r.stderr
    crossings = [x for x in out if x.get("kind") == "crossing"]
    assert int(m[1]) + int(m[2]) > 0
    assert int(m[1]) == sum(x["direction"] == "in" for x in crossings)
    assert int(m[2]) == sum(x["direction"] == "out" for x in crossings)
    assert {x["line"] for x in crossings} == {"walkway"}
    assert all(x["label"] == "Person" for x in crossings)
    people = re.search(r"; tracked [^;]*Person (\d+)", r.stderr)
    assert people and int(people[1]) >= 5, r.stderr


def test_events_file(osprey, clip, zones, tracked, tmp_path):
    ev = tmp_path / "events.jsonl"
    r = run(osprey, "detect", "--quiet", "--track", "--zones", zones, "--events", ev, clip)
    assert r.returncode == 0, r.stderr
    assert {x["kind"] for x in lines(r.stdout)} == {"detections"}
    written = lines(ev.read_text())
    # the same run, its event and crossing lines elsewhere
    assert written == [x for x in tracked[1] if x["kind"] != "detections"]


def test_bad_zones_file(osprey, clip, tmp_path):
    bad = tmp_path / "bad-zones.json"
    bad.write_text('{"zones": {"porch": {"coordinates": "0.1,0.1,0.9,0.9"}}}')
    r = run(osprey, "detect", "--track", "--zones", bad, clip)
    assert r.returncode == 2
    assert str(bad) in r.stderr and "zones file:" in r.stderr and "2 points" in r.stderr
    bad.write_text('{"lines": {"gate": {"coordinates": "0,0.5,1,0.5", "objects": ["person"]}}}')
    r = run(osprey, "detect", "--track", "--zones", bad, clip)
    assert r.returncode == 2
    assert str(bad) in r.stderr and 'did you mean "Person"' in r.stderr
    r = run(osprey, "detect", "--zones", bad, clip)
    assert r.returncode == 2 and "--zones needs --track" in r.stderr


def test_track_refuses_an_image(osprey):
    r = run(osprey, "detect", "--track", need(MEDIA / "messi5.jpg"))
    assert r.returncode == 2
    assert "single image" in r.stderr and r.stdout == ""


@pytest.mark.clip
def test_looks_once_per_object(osprey, tmp_path):
    """The per-box second look against the once-per-object one, on 60 frames."""
    short = cut(tmp_path, 60)
    every_box = run(osprey, "detect", "--quiet", "--per-frame", short)
    assert every_box.returncode == 0, every_box.stderr
    per_box = int(re.search(r"(\d+) second looks", every_box.stderr)[1])
    tracked = run(osprey, "detect", "--quiet", "--track", short)
    assert tracked.returncode == 0, tracked.stderr
    per_object = int(re.search(r"(\d+) looks \(", tracked.stderr)[1])
    assert "second looks" not in tracked.stderr
    assert 0 < per_object * 4 < per_box, (per_object, per_box)
    # the records of --track carry the tracks' look scores
    assert any("lookScore" in d for r in lines(tracked.stdout) for d in r["detections"])


RAN = re.compile(r"the model ran on (\d+) of (\d+) frames.*?(\d+) looks \(")


def test_model_runs_a_frame(tracked):
    """A doubtful new box is looked at once its track is confirmed, not on
    its first frame: on these frames about 1.46 model runs a frame, frames
    and looks (every new box at once: about 2.1)."""
    r, _ = tracked
    ran, frames, looks = map(int, RAN.search(r.stderr).groups())
    # people walk in every frame: all are run but frames 1-4, while motion
    # learns the background (frame 0 is run, and the first frame it knows)
    assert frames == FRAMES and ran == FRAMES - 4
    assert (ran + looks) / frames <= 1.6, r.stderr


def still_clip(tmp, seconds, light_at=None, pix_fmt=None):
    """vtest's first frame for `seconds` at 10 frames/s; with light_at, a
    step of brightness from that second on; with pix_fmt, its JPEGs' (4:4:4
    from the PNG without it)."""
    if not shutil.which("ffmpeg"):
        pytest.skip("ffmpeg is not installed")
    png = tmp / "vtest-0.png"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(need(MEDIA / "vtest.avi")),
                    "-frames:v", "1", str(png)], check=True)
    vf = ["-vf", f"eq=brightness='if(gte(t,{light_at}),0.25,0)':eval=frame"] if light_at else []
    out = tmp / (("light" if light_at else "still") + (f"-{pix_fmt}" if pix_fmt else "") + ".avi")
    pf = ["-pix_fmt", pix_fmt] if pix_fmt else []
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-loop", "1", "-i", str(png), "-t", str(seconds),
                    "-r", "10", *vf, "-c:v", "mjpeg", *pf, "-q:v", "3", str(out)], check=True)
    return out


@pytest.mark.clip
@pytest.mark.parametrize("light_at", [None, 30])
def test_still_scene_runs_the_model_now_and_then(osprey, tmp_path, light_at):
    """Nothing moves: the model runs on the first frame, when motion has
    learnt the background, every 10 s of the clip, and as the light changes
    and settles; the frames between carry the objects of the last frame
    run, ids and all. The looks at the objects are spent once, not again
    at every run."""
    clip = still_clip(tmp_path, 60, light_at)
    r = run(osprey, "detect", "--quiet", "--track", clip)
    assert r.returncode == 0, r.stderr
    ran, frames, looks = map(int, RAN.search(r.stderr).groups())
    assert frames == 600
    # the first frame, the end of the warm-up, 10 s, 20 s, ... 50 s; the light
    # at 30 s adds its end (its start is the pass due at 30 s)
    assert ran == (8 if light_at else 7), r.stderr
    assert (ran + looks) / frames <= 0.05, r.stderr
    out = lines(r.stdout)
    recs = records(out)
    assert [x["frame"] for x in recs] == list(range(600))
    still = [x for x in recs if x.get("still")]
    assert len(still) == frames - ran
    last = None
    for x in recs:
        boxes = [(d["label"], d.get("trackId"), d["box"]) for d in x["detections"]]
        if x.get("still"):
            assert boxes == last  # as the last frame run left them
        else:
            last = boxes
    # the people standing in the frame are objects, and stay the same ones
    people = {d["trackId"] for x in still for d in x["detections"]
              if d["label"] == "Person" and "trackId" in d}
    assert len(people) >= 2, people
    events = [x for x in out if x.get("kind") == "event"]
    assert {e["type"] for e in events} <= {"new", "update"}  # nobody ends or comes back
    assert len({e["after"]["track_id"] for e in events if e["type"] == "new"}) == len(
        {e["after"]["track_id"] for e in events})
