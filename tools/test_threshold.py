"""Tests for tools/threshold.py's counting, on boxes made up here. Run with

    /usr/bin/python3 -m pytest -q tools/test_threshold.py

(tests/e2e/test_detect_threshold.py runs it on the real models and media.)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import threshold as th  # noqa: E402

A, B = [0, 0, 10, 10], [100, 100, 120, 140]


def test_match_counts():
    # one true box found twice: one hit, one false box; the other missed
    found = [(0.9, [1, 0, 10, 10]), (0.8, [0, 1, 10, 10])]
    assert th.match([A, B], found, 0.5) == (1, 1, 1)
    # below the threshold nothing counts, and misses are all the truth
    assert th.match([A, B], found, 0.95) == (0, 0, 2)
    # an overlap under 0.5 is no hit
    assert th.match([A], [(0.9, [5, 0, 15, 10])], 0.5) == (0, 1, 1)
    assert th.match([], [(0.9, A)], 0.5) == (0, 1, 0)


def test_best_score_matched_first():
    # the better-scored of two boxes on one person takes it
    truth = [[0, 0, 10, 20]]
    found = [(0.6, [0, 0, 10, 12]), (0.7, [0, 0, 10, 19])]
    assert th.match(truth, found, 0.5) == (1, 1, 0)


def test_static_boxes():
    # a box in 3 of 10 frames is static (> 1/5), one in 2 of 10 is not
    frames = {f: [] for f in range(10)}
    for f in (0, 4, 8):
        frames[f].append({"label": "Person", "score": 0.5, "box": [0, 0, 10, 20]})
    for f in (1, 2):
        frames[f].append({"label": "Person", "score": 0.5, "box": B})
    frames[3].append({"label": "Car", "score": 0.9, "box": B})
    st = th.static_boxes(frames, "Person", 0.3)
    assert st == [(3, [0, 0, 10, 20])]
    assert th.static_boxes(frames, "Person", 0.6) == []
