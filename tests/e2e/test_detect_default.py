"""osprey detect on a video with no flag: objects over time (the motion
gate, tracks, the second look once per object), written as records of the
usual shape: the boxes --track gives, without "trackId" and without event
lines. --per-frame reads each frame alone, as an image is read: the second
look at every box, about ten model runs a frame (docs/tracking.md)."""
import json
import re

import pytest

from conftest import MEDIA, need, run, lines
from test_detect_track import cut

FRAMES = 60
RAN = re.compile(r"the model ran on (\d+) of (\d+) frames .*?, ([\d.]+) runs a frame with the looks")
PER_FRAME = re.compile(r"(\d+) second looks, \d+ box(?:es)? taken back, ([\d.]+) model runs a frame")
TIMES = {"inferenceMs", "preprocessMs", "predictMs", "ageMs"}


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    return cut(tmp_path_factory.mktemp("default"), FRAMES)


@pytest.fixture(scope="module")
def short(tmp_path_factory):
    return cut(tmp_path_factory.mktemp("short"), 12)


def detect(osprey, *args):
    r = run(osprey, "detect", "--quiet", *args)
    assert r.returncode == 0, r.stderr
    return r


def test_the_default_follows_objects_without_naming_them(osprey, clip):
    plain = detect(osprey, clip)
    tracked = detect(osprey, "--track", clip)
    recs, out = lines(plain.stdout), lines(tracked.stdout)
    # no event line, no trackId: the records of before
    assert {x["kind"] for x in recs} == {"detections"}
    assert not any("trackId" in d for x in recs for d in x["detections"])
    # --track on the same frames names the objects and reports their events
    assert any(x["kind"] == "event" for x in out)
    assert any("trackId" in d for x in out for d in x.get("detections", []))
    # and the boxes are the same, frame by frame, still frames included
    frames = [x for x in out if x["kind"] == "detections"]
    assert [x["frame"] for x in recs] == [x["frame"] for x in frames] == list(range(FRAMES))
    for a, b in zip(recs, frames):
        assert a.get("still") == b.get("still"), (a, b)
        assert a["detections"] == [{k: v for k, v in d.items() if k != "trackId"}
                                   for d in b["detections"]], a["frame"]
    # motion: the frames while it learns the background are not run
    assert any(x.get("still") for x in recs)
    # the looks, once per object: their scores are on the boxes of those objects
    assert any("lookScore" in d for x in recs for d in x["detections"])
    ran, frames_seen, runs = RAN.search(plain.stderr).groups()
    assert RAN.search(tracked.stderr).groups() == (ran, frames_seen, runs)
    assert int(frames_seen) == FRAMES and int(ran) < FRAMES
    # a count, not a time: whole frames run plus looks, a frame (about ten
    # each frame alone). The looks depend on the model's scores, and so on
    # the CPU's int8 kernels: 1.50 where they saturate (AVX2 without
    # VNNI, docs/models.md), 1.73 with VNNI, 1.85 with the float model
    assert float(runs) <= 2.0, plain.stderr


def test_per_frame_reads_each_frame_alone(osprey, short):
    r = detect(osprey, "--per-frame", short)
    recs = lines(r.stdout)
    assert [x["frame"] for x in recs] == list(range(12))
    assert not any("still" in x or "trackId" in d for x in recs for d in x["detections"])
    # every box of vtest is small: each one is looked at again, on every frame
    dets = [d for x in recs for d in x["detections"]]
    assert len(dets) >= 5 * 12 and all("lookScore" in d for d in dets)
    looks, runs = PER_FRAME.search(r.stderr).groups()
    assert int(looks) >= len(dets) and float(runs) >= 5, r.stderr
    assert abs(float(runs) - (1 + int(looks) / 12)) < 0.01, r.stderr
    assert "the model ran on" not in r.stderr
    # the default on the same frames: the looks once per object
    default = detect(osprey, short)
    _, frames, runs_default = RAN.search(default.stderr).groups()
    assert int(frames) == 12 and float(runs_default) * 2 < float(runs), default.stderr


def test_one_look_in_both_pipelines(osprey, short):
    tracked = detect(osprey, "--one-look", short)
    alone = detect(osprey, "--one-look", "--per-frame", short)
    for r in (tracked, alone):
        assert not any("lookScore" in d for x in lines(r.stdout) for d in x["detections"])
    assert " looks (" not in tracked.stderr and "second look" not in alone.stderr
    ran, frames, runs = RAN.search(tracked.stderr).groups()
    assert int(frames) == 12 and int(ran) < 12, tracked.stderr
    assert abs(float(runs) - int(ran) / 12) < 0.01, tracked.stderr
    assert any(x.get("still") for x in lines(tracked.stdout))
    assert not any(x.get("still") for x in lines(alone.stdout))


def test_an_image_is_read_alone(osprey, tmp_path):
    """One frame: the boxes looked at again, as with --per-frame."""
    import subprocess
    png = tmp_path / "vtest150.png"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(need(MEDIA / "vtest.avi")), "-vf",
                    "select=eq(n\\,150)", "-frames:v", "1", str(png)], check=True)
    (a,) = lines(detect(osprey, png).stdout)
    (b,) = lines(detect(osprey, "--per-frame", png).stdout)
    assert {k: v for k, v in a.items() if k not in TIMES} == \
        {k: v for k, v in b.items() if k not in TIMES}
    assert len(a["detections"]) >= 5 and all("lookScore" in d for d in a["detections"])


@pytest.mark.parametrize("args", [["--track"], ["--zones", "zones.json"],
                                  ["--events", "events.jsonl"], ["--camera", "door"],
                                  ["--snapshots", "snaps"], ["--ha-discovery", "off"]])
def test_per_frame_refuses_what_follows_objects(osprey, short, tmp_path, args):
    (tmp_path / "zones.json").write_text(json.dumps({"zones": {}}))
    r = run(osprey, "detect", "--per-frame", *[str(tmp_path / a) if a.endswith(
        (".json", ".jsonl")) or a == "snaps" else a for a in args], short)
    assert r.returncode == 2, r.stderr
    assert "--per-frame" in r.stderr and args[0] in r.stderr, r.stderr
    assert r.stdout == "" and not (tmp_path / "snaps").exists()


def test_help_says_the_default_first(osprey):
    text = run(osprey, "detect", "--help").stdout
    assert "--per-frame" in text
    assert text.index("read as objects over time") < text.index("options:")
    own = text[:text.index("Publishing each record to MQTT")]
    assert max(len(line) for line in own.splitlines()) <= 80


def test_a_model_without_boxes_reads_each_frame_alone(osprey, short):
    """An embedder has no objects to follow: a record of every frame, as
    before; --track with one is refused."""
    r = detect(osprey, "--model", "face-embed", short)
    recs = lines(r.stdout)
    assert [x["frame"] for x in recs] == list(range(12))
    assert all(x["kind"] == "embedding" and len(x["embedding"]) == 512 for x in recs)
    assert "the model ran on" not in r.stderr
    bad = run(osprey, "detect", "--model", "face-embed", "--track", short)
    assert bad.returncode == 2 and "gives no boxes" in bad.stderr, bad.stderr
    assert bad.stdout == ""
