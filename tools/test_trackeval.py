"""Tests for tools/trackeval.py's measures and tools/trackclip.py's counts, on
tracks made up here whose MOTA, IDF1 and counts are worked out by hand. Run
with

    /usr/bin/python3 -m pytest -q tools/test_trackeval.py

(tests/e2e/test_track_quality.py runs them on osprey detect --track.)
"""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trackclip as tc  # noqa: E402
import trackeval as te  # noqa: E402

P, Q = [0, 0, 10, 20], [50, 0, 60, 20]  # two people, apart
FAR = [200, 200, 210, 220]


def frames(*per_frame):
    return {f: list(objs) for f, objs in enumerate(per_frame)}


def test_perfect_tracks():
    truth = frames([(1, P)], [(1, P)], [(1, P)], [(1, P)])
    hyp = frames([(7, P)], [(7, P)], [(7, P)], [(7, P)])
    r = te.evaluate(truth, hyp, 4)
    assert (r["MOTA"], r["IDF1"], r["IDSW"], r["FP"], r["FN"]) == (1, 1, 0, 0, 0)
    assert r["pairs"] == {1: 7}


def test_an_id_switch():
    # one person, followed by track 1 then track 2: every box found, one
    # switch: MOTA 1 - 1/4; at best 2 of the 4 frames agree: IDF1 2*2/(4+4)
    truth = frames([(1, P)], [(1, P)], [(1, P)], [(1, P)])
    hyp = frames([(1, P)], [(1, P)], [(2, P)], [(2, P)])
    r = te.evaluate(truth, hyp, 4)
    assert r["IDSW"] == 1 and r["MOTA"] == pytest.approx(0.75)
    assert r["IDTP"] == 2 and r["IDF1"] == pytest.approx(0.5)


def test_misses_and_false_boxes():
    # person 2 is never found, track 2 is nobody: 6 truth boxes, 2 missed,
    # 2 false: MOTA 1 - 4/6; IDTP 4 of 6 + 6: IDF1 2/3
    truth = frames([(1, P), (2, Q)], [(1, P), (2, Q)], [(1, P)], [(1, P)])
    hyp = frames([(1, P), (2, FAR)], [(1, P), (2, FAR)], [(1, P)], [(1, P)])
    r = te.evaluate(truth, hyp, 4)
    assert (r["FN"], r["FP"], r["IDSW"]) == (2, 2, 0)
    assert r["MOTA"] == pytest.approx(1 / 3)
    assert r["IDF1"] == pytest.approx(2 / 3)
    assert (r["IDP"], r["IDR"]) == (pytest.approx(2 / 3), pytest.approx(2 / 3))
    assert r["found"] == {1: 1, 2: 0}


def test_two_people_swap_tracks():
    # a crossing gone wrong: the tracks swap people halfway. Two switches:
    # MOTA 1 - 2/8; each pairing agrees on half: IDF1 0.5
    truth = frames(*[[(1, P), (2, Q)]] * 4)
    hyp = frames([(1, P), (2, Q)], [(1, P), (2, Q)], [(2, P), (1, Q)], [(2, P), (1, Q)])
    r = te.evaluate(truth, hyp, 4)
    assert r["IDSW"] == 2 and r["MOTA"] == pytest.approx(0.75)
    assert r["switches"] == {1: 1, 2: 1} and r["found"] == {1: 1, 2: 1}
    assert r["IDF1"] == pytest.approx(0.5)


def test_a_match_is_kept_while_it_overlaps():
    # frame 1: track 2 fits the person better, but track 1 still overlaps
    # (IoU 2/3): CLEAR MOT keeps track 1, so no switch, and track 2 is false
    moved = [2, 0, 12, 20]
    truth = frames([(1, P)], [(1, P)])
    hyp = frames([(1, P)], [(1, moved), (2, P)])
    r = te.evaluate(truth, hyp, 2)
    assert (r["IDSW"], r["FP"], r["FN"]) == (0, 1, 0)
    assert r["MOTA"] == pytest.approx(0.5)


def test_an_overlap_under_half_is_no_match():
    truth = frames([(1, P)])
    hyp = frames([(1, [0, 0, 10, 9])])  # IoU 0.45
    r = te.evaluate(truth, hyp, 1)
    assert (r["FN"], r["FP"], r["MOTA"], r["IDF1"]) == (1, 1, -1, 0)


def test_naive_linker():
    # a box moving 2 pixels a frame keeps its id; one that appears far off
    # gets a new one; a frame without boxes ends every id
    a = [[x, 0, x + 10, 20] for x in (0, 2, 4)]
    boxes = {0: [a[0]], 1: [a[1], FAR], 2: [a[2], FAR], 3: [], 4: [a[2]]}
    out = te.naive_link(boxes)
    assert [i for i, _ in out[0]] == [1]
    assert [i for i, _ in out[1]] == [1, 2]
    assert [i for i, _ in out[2]] == [1, 2]
    assert out[3] == [] and [i for i, _ in out[4]] == [3]


def test_naive_linker_takes_the_largest_overlap_first():
    # two boxes of the frame before, one box now overlapping both: it
    # continues the one it overlaps more, the other ends
    boxes = {0: [[0, 0, 10, 20], [6, 0, 16, 20]], 1: [[5, 0, 15, 20]]}
    out = te.naive_link(boxes)
    assert [i for i, _ in out[1]] == [2]


def walk(xs, y=100, w=10, h=20):
    """A track whose bottom centre goes along XS at height Y."""
    return [(f, [x - w / 2, y - h, x + w / 2, y]) for f, x in enumerate(xs)]


LINE = {"lines": {"door": {"coordinates": "0.5,0,0.5,0.5"}}}  # top to bottom, x 50, y 0-50


def counts(tracks, zones, w=100, h=100):
    return tc.expected_events(dict(enumerate(tracks)), zones, w, h)


def test_a_line_crossed_both_ways():
    right = walk([40, 45, 55, 60], y=30)
    left = walk([60, 55, 45, 40], y=30)
    _, c = counts([right, right, left], LINE)
    assert c == {"door": {"in": 2, "out": 1}}  # going right is "in"


def test_around_the_end_of_a_line_is_no_crossing():
    _, c = counts([walk([40, 60], y=80)], LINE)
    assert c == {"door": {"in": 0, "out": 0}}


def test_standing_on_a_line_counts_nothing():
    # within 1 % of the frame's smaller side (1 pixel here) of the line
    _, c = counts([walk([49.5, 50.5, 49.5, 50.5, 49.5], y=30)], LINE)
    assert c == {"door": {"in": 0, "out": 0}}


ZONE = {"zones": {"box": {"coordinates": "0.4,0,0.6,0,0.6,0.5,0.4,0.5"}}}  # x 40-60, y 0-50


def test_a_zone_is_entered_after_its_inertia():
    # inside for 2 frames: not in (inertia 3); for 3: in, once
    assert counts([walk([30, 50, 50, 30, 30, 30], y=30)], ZONE)[0] == {"box": 0}
    assert counts([walk([30, 50, 50, 50, 50, 30], y=30)], ZONE)[0] == {"box": 1}
    # out (the count back to 0) and in again: two entries
    in_out_in = [30] + [50] * 3 + [30] * 3 + [50] * 3
    assert counts([walk(in_out_in, y=30)], ZONE)[0] == {"box": 2}


def test_the_tracker_counts_are_read_from_its_lines(tmp_path):
    # a zone entered at the new event and another at an update; the same
    # zone listed again is no new entry; crossings by direction
    def ev(tid, zones):
        return {"kind": "event", "type": "update", "after": {"label": "Person", "track_id": tid,
                                                             "current_zones": zones}}
    out = [{"kind": "detections", "frame": 0, "detections": [
               {"label": "Person", "box": P, "trackId": 1}, {"label": "Person", "box": Q},
               {"label": "Car", "box": FAR, "trackId": 2}]},
           ev(1, ["a"]), ev(1, ["a", "b"]), ev(1, ["b"]), ev(3, ["a"]),
           {"kind": "crossing", "line": "door", "direction": "in", "label": "Person"},
           {"kind": "crossing", "line": "door", "direction": "out", "label": "Car"}]
    f = tmp_path / "out.jsonl"
    f.write_text("".join(json.dumps(x) + "\n" for x in out))
    tracked, boxes, entries, crossings = te.read_output([f], "Person")
    assert tracked == {0: [(1, P)]} and boxes == {0: [P, Q]}
    assert entries == {"a": 2, "b": 1}
    assert crossings == {"door": {"in": 1, "out": 0}}
