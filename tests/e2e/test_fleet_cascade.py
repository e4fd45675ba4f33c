"""A fleet job to a model with a cascade (docs/cascades.md, "In ospreyd";
docs/fleet.md): the worker crops from the job's own pixels (a JPEG decoded
whole, a raw frame as sent), and the result record gains the same fields,
with the same numbers, as the pipe's reply to the same picture; a model
without a cascade answers a fleet job with the record it always did. A
real redis-server, real models, a real face library."""
import json

from conftest import MEDIA, model, need
from face_library import library, recognize  # noqa: F401 (a fixture)
from ospreyd_client import detections_match, jpeg_to_rgb, media_bytes, spawn, worker  # noqa: F401
from redis_server import redis  # noqa: F401
from test_fleet import by_id, start, submit, wait_results
from test_ospreyd_cascade import box_iou

TIMINGS = ("inferenceMs", "preprocessMs", "predictMs")


def same_faces(got, pipe, fields):
    """Each face of the fleet's record is the pipe's, with the same fields."""
    assert len(got["detections"]) == len(pipe["detections"]) > 0, (got, pipe)
    for d in got["detections"]:
        e = max(pipe["detections"], key=lambda x: box_iou(d["box"], x["box"]))
        assert box_iou(d["box"], e["box"]) > 0.99, (d, e)
        assert list(d) == list(e) == ["label", "class", "score", "box", *fields], (d, e)
        for k in fields:
            if isinstance(d[k], str):
                assert d[k] == e[k], (k, d, e)
            elif isinstance(d[k], list):
                assert max(abs(x - y) for x, y in zip(d[k], e[k])) < 2e-3, (k, d, e)
            else:
                assert abs(d[k] - e[k]) < 2e-3, (k, d, e)


def test_a_fleet_job_is_named_as_the_pipe_names_it(spawn, worker, redis, tmp_path, library):
    r = redis()
    c = r.client()
    cfg = {"runtime": "onnxruntime", "concurrency": 2, "models": [recognize(library)]}
    w = start(spawn, tmp_path, r, "cams", cfg)
    img = jpeg_to_rgb(need(MEDIA / "messi5.jpg"))
    submit(c, "cams", "jpeg", model="ultraface", data=media_bytes("messi5.jpg"))
    submit(c, "cams", "png", model="ultraface", kind="png", data=media_bytes("astronaut.png"))
    submit(c, "cams", "rgb", model="ultraface", kind="raw", w=img.w, h=img.h, fmt="rgb",
           data=img.data)
    res = by_id(wait_results(c, "cams:results", 3, what=w.describe))
    assert all(v[0]["status"] == b"served" for v in res.values()), res
    pw, _ = worker(cfg)
    jpeg = json.loads(res["jpeg"][0]["result"])
    same_faces(jpeg, pw.conn.infer_jpeg(0, media_bytes("messi5.jpg")), ["name", "nameScore"])
    assert "footballer" in [d["name"] for d in jpeg["detections"]], jpeg
    png = json.loads(res["png"][0]["result"])
    same_faces(png, pw.conn.infer_jpeg(0, media_bytes("astronaut.png")), ["name", "nameScore"])
    assert "astronaut" in [d["name"] for d in png["detections"]], png
    rgb = json.loads(res["rgb"][0]["result"])
    same_faces(rgb, jpeg, ["name", "nameScore"])  # the same pixels, sent raw


def test_embeddings_and_a_plain_model_beside_it(spawn, worker, redis, tmp_path, library):
    """face-embed's vectors are the pipe's; a job to the model without a
    cascade in the same worker gets the record it always got."""
    r = redis()
    c = r.client()
    model("ssd-oidv4")
    cfg = {"runtime": "onnxruntime", "concurrency": 2,
           "models": [{"model": "ultraface", "then": [{"model": "face-embed"}]},
                      {"model": "ssd-oidv4"}]}
    w = start(spawn, tmp_path, r, "cams", cfg)
    submit(c, "cams", "faces", model="ultraface", data=media_bytes("basketball1.png"), kind="png")
    submit(c, "cams", "plain", model="ssd-oidv4", data=media_bytes("messi5.jpg"))
    res = by_id(wait_results(c, "cams:results", 2, what=w.describe))
    assert all(v[0]["status"] == b"served" for v in res.values()), res
    pw, _ = worker(cfg)
    faces = json.loads(res["faces"][0]["result"])
    same_faces(faces, pw.conn.infer_jpeg(0, media_bytes("basketball1.png")), ["embedding"])
    plain = json.loads(res["plain"][0]["result"])
    pipe = pw.conn.infer_jpeg(1, media_bytes("messi5.jpg"))
    assert list(plain) == list(pipe), (plain, pipe)
    for d in plain["detections"]:
        assert list(d) == ["label", "class", "score", "box"], d
    assert {k: v for k, v in plain.items() if k not in TIMINGS and k != "detections"} == \
        {k: v for k, v in pipe.items() if k not in TIMINGS and k != "detections"}
    assert detections_match(plain, pipe, px=0.5, score=0.001), (plain, pipe)

