"""osprey detect --track with a cascade (docs/cascades.md, On a video,
once per object): the steps run once per object, not on every box of
every frame. A real
face library, UltraFace and face-embed, and clips made here from the
footballer's photo: panned across the frame (the face moves, its size
stays), and zoomed in on the face (it grows). Every record of the object
carries its name and its events carry it as sub_label; the summary counts
the step runs: one per object against one per frame with --per-frame; a
face the library does not hold is tried again a few times, no more; a face
that grows is run again."""
import re
import shutil
import subprocess

import pytest

from conftest import MEDIA, lines, need, run
from face_library import library, make_library  # noqa: F401 (a fixture)

FACE = "messi5.jpg"  # the footballer's photo, 548x342, one face
FRAMES = 60


def ffmpeg(out, *vf, photo=FACE, frames=FRAMES):
    if not shutil.which("ffmpeg"):
        pytest.skip("ffmpeg is not installed")
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-loop", "1", "-i", str(need(MEDIA / photo)),
                    "-frames:v", str(frames), "-r", "10", *vf, "-c:v", "mjpeg", "-q:v", "3",
                    str(out)], check=True)
    return out


@pytest.fixture(scope="module")
def pan(tmp_path_factory):
    """The photo panned 4 pixels a frame: the face moves, its size stays."""
    return ffmpeg(tmp_path_factory.mktemp("pan") / "pan.avi",
                  "-vf", "pad=848:342:150:0,crop=548:342:'t*40':0")


@pytest.fixture(scope="module")
def hold(tmp_path_factory):
    """Panned for 2 s, then still for 23 s: once motion has taken the still
    picture for its background, the frames where nothing moved are not run."""
    return ffmpeg(tmp_path_factory.mktemp("hold") / "hold.avi",
                  "-vf", "pad=848:342:150:0,crop=548:342:'min(t,2)*40':0", frames=250)


@pytest.fixture(scope="module")
def zoom(tmp_path_factory):
    """Zoomed in on the face, 2 % a frame: it ends more than twice as wide."""
    return ffmpeg(tmp_path_factory.mktemp("zoom") / "zoom.avi",
                  "-vf", "zoompan=z='1+0.02*on':d=1:x='241-iw/zoom/2':y='111-ih/zoom/2'"
                  ":s=548x342:fps=10")


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """The basketball players' photo (two faces, 640x480) panned."""
    return ffmpeg(tmp_path_factory.mktemp("pair") / "pair.avi",
                  "-vf", "pad=840:480:100:0,crop=640:480:'t*40':0", photo="basketball1.png")


def detect(osprey, *args):
    r = run(osprey, "detect", "--quiet", "--model", "ultraface", *map(str, args))
    assert r.returncode == 0, r.stderr
    return r, lines(r.stdout)


def records(out):
    return [x for x in out if x.get("kind") == "detections"]


def events(out):
    return [x for x in out if x.get("kind") == "event"]


def counts(stderr):
    """(objects, runs) of the objects' steps, and the step runs in all."""
    per = re.search(r"the cascade ran on (\d+) objects?, (\d+) times?", stderr)
    steps = re.search(r"; (\d+) cascade step runs? \(", stderr)
    assert steps, stderr
    return (int(per[1]), int(per[2])) if per else None, int(steps[1])


def test_a_face_is_named_once_per_object(osprey, library, pan):
    r, out = detect(osprey, "--track", "--recognize", library, pan)
    recs = records(out)
    assert len(recs) == FRAMES
    objects = [d for x in recs for d in x["detections"] if "trackId" in d]
    assert len(objects) >= FRAMES - 10, recs  # all but the first frames, before it is confirmed
    for d in objects:  # the name on every record of the object, the same one
        assert d["name"] == "footballer" and d["nameScore"] >= 0.45, d
        assert (d["name"], d["nameScore"]) == (objects[0]["name"], objects[0]["nameScore"]), d
    for x in recs:  # a box not yet an object has no result
        assert all("name" not in d for d in x["detections"] if "trackId" not in d), x
    new = [e for e in events(out) if e["type"] == "new"]
    assert len(new) == 1 and new[0]["after"]["sub_label"] == ["footballer",
                                                               objects[0]["nameScore"]], new
    assert new[0]["after"]["recognized_license_plate"] is None, new
    (objs, runs), steps = counts(r.stderr)
    assert (objs, runs, steps) == (1, 1, 1), r.stderr

    # each frame read alone: the steps run on the face of every frame
    r, out = detect(osprey, "--per-frame", "--recognize", library, pan)
    faces = [d for x in records(out) for d in x["detections"]]
    assert len(faces) >= FRAMES and all(d["name"] == "footballer" for d in faces), faces
    assert counts(r.stderr) == (None, len(faces)), r.stderr


def test_frames_not_run_carry_the_name(osprey, library, hold):
    r, out = detect(osprey, "--track", "--recognize", library, hold)
    still = [x for x in records(out) if x.get("still") and x["frame"] > 10]
    assert len(still) > 10, r.stderr  # nothing moved after the pan
    for x in still:
        assert [d.get("name") for d in x["detections"]] == ["footballer"], x
    assert counts(r.stderr) == ((1, 1), 1), r.stderr


def test_a_face_the_library_does_not_hold_is_tried_a_few_times(osprey, pan, tmp_path):
    other = make_library(osprey, tmp_path / "astronaut.db", (("astronaut", "astronaut.png"),))
    r, out = detect(osprey, "--track", "--recognize", other, pan)
    objects = [d for x in records(out) for d in x["detections"] if "trackId" in d]
    assert objects and all(d["name"] == "unknown" for d in objects), objects
    # tried again 5 frames apart while below the threshold, 4 times in all
    assert len({d["nameScore"] for d in objects}) > 1, objects
    assert counts(r.stderr) == ((1, 4), 4), r.stderr
    assert all(e["after"]["sub_label"] is None for e in events(out)), events(out)


def test_a_face_that_grows_is_run_again(osprey, library, zoom):
    r, out = detect(osprey, "--track", "--recognize", library, zoom)
    (objs, runs), steps = counts(r.stderr)
    assert objs >= 1 and objs < runs <= 4 * objs and steps == runs, r.stderr
    objects = [d for x in records(out) for d in x["detections"] if "trackId" in d]
    assert objects and all(d["name"] == "footballer" for d in objects), objects
    # the nearer crop is surer, and kept
    assert objects[-1]["nameScore"] > objects[0]["nameScore"], (objects[0], objects[-1])
    named = [e["after"]["sub_label"] for e in events(out) if e["after"]["sub_label"]]
    # (an event is sent when the name changes, not its score: docs/tracking.md)
    assert named and named[0][0] == "footballer", named
    assert {n[1] for n in named} <= {d["nameScore"] for d in objects}, named


def test_an_embedding_is_taken_once_and_carried(osprey, pan):
    r, out = detect(osprey, "--track", "--then", "face-embed", pan)
    objects = [d for x in records(out) for d in x["detections"] if "trackId" in d]
    assert objects and len(objects[0]["embedding"]) == 512, objects[:1]
    assert all(d["embedding"] == objects[0]["embedding"] for d in objects)
    assert counts(r.stderr) == ((1, 1), 1), r.stderr


def test_two_faces_each_keep_their_own(osprey, pair):
    r, out = detect(osprey, "--track", "--then", "face-embed", pair)
    seen = {}
    for x in records(out):
        ids = [d["trackId"] for d in x["detections"] if "trackId" in d]
        assert len(ids) == len(set(ids)), x
        for d in x["detections"]:
            if "trackId" in d:
                assert d["embedding"] == seen.setdefault(d["trackId"], d["embedding"]), d
    assert len(seen) == 2 and len({tuple(e) for e in seen.values()}) == 2, seen.keys()
    assert counts(r.stderr) == ((2, 2), 2), r.stderr


def test_help_says_so(osprey):
    r = run(osprey, "detect", "--help")
    assert "runs once per object" in " ".join(r.stdout.split()), r.stdout
