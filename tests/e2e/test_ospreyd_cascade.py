"""Cascades in ospreyd (docs/cascades.md, "In ospreyd"): a model config
with "then", at startup or in a load, answers each frame with the fields
osprey detect --then writes for the same picture; a model without one
answers as it always did; a step that cannot be loaded fails its load
with the step named, and the server serves on; loads and unloads of a
cascade leave nothing behind (the ASan run of this file)."""
import base64
import json
import re
import struct

import pytest

from conftest import MEDIA, lines, model, need, run
from face_library import library, recognize  # noqa: F401 (a fixture)
from ospreyd_client import (Worker, assert_python_json, media_bytes, media_image,  # noqa: F401
                            spawn)

PHOTOS = ("basketball1.png", "messi5.jpg", "astronaut.png")
EMBED = {"model": "ultraface", "then": [{"model": "face-embed"}]}


@pytest.fixture(scope="module")
def server(library, tmp_path_factory):
    """0: UltraFace alone; 1: with face-embed; 2: with names from the library."""
    w = Worker((), workdir=tmp_path_factory.mktemp("ospreyd"))
    ready = w.conn.hello({"runtime": "onnxruntime", "concurrency": 2,
                          "models": [{"model": "ultraface"}, EMBED, recognize(library)]})
    assert ready.get("status") == "ready" and ready["models"] == 3, (ready, w.describe())
    yield w
    w.kill()


def cli(osprey, *args):
    r = run(osprey, "detect", "--quiet", "--model", "ultraface", "--one-look", *args)
    assert r.returncode == 0, r.stderr
    (rec,) = lines(r.stdout)
    return rec


def box_iou(a, b):
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def pairs(served, written):
    """Each face the server found, with the CLI's face in the same place."""
    out = []
    for d in served["detections"]:
        best = max(written["detections"], key=lambda e: box_iou(d["box"], e["box"]))
        assert box_iou(d["box"], best["box"]) > 0.95, (d, written)
        out.append((d, best))
    return out


@pytest.mark.parametrize("photo", PHOTOS)
def test_embeddings_are_the_clis(osprey, server, photo):
    rec = server.conn.infer_jpeg(1, media_bytes(photo))
    assert rec["detections"], rec
    written = cli(osprey, "--then", "face-embed", need(MEDIA / photo))
    for d, e in pairs(rec, written):
        assert set(d) == {"label", "class", "score", "box", "embedding"}, d
        assert len(d["embedding"]) == 512
        assert max(abs(x - y) for x, y in zip(d["embedding"], e["embedding"])) < 2e-3


@pytest.mark.parametrize("photo,who", [("messi5.jpg", "footballer"),
                                       ("astronaut.png", "astronaut")])
def test_names_are_the_clis(osprey, server, library, photo, who):
    rec = server.conn.infer_jpeg(2, media_bytes(photo))
    written = cli(osprey, "--recognize", library, need(MEDIA / photo))
    got = pairs(rec, written)
    for d, e in got:
        assert set(d) == {"label", "class", "score", "box", "name", "nameScore"}, d
        assert d["name"] == e["name"]
        assert abs(d["nameScore"] - e["nameScore"]) < 2e-3
    assert who in [d["name"] for d, _ in got], rec


def test_text_is_the_clis(osprey, server):
    """A text detector then the recognizer on each of its boxes, loaded by
    command: each box gains the text osprey detect reads."""
    for name in ("ocr-det", "ocr-rec"):
        model(name)
    cfg = {"model": "ocr-det", "then": [{"model": "ocr-rec"}]}
    assert server.conn.command({"cmd": "load", "index": 3, "config": cfg})["status"] == "ok"
    rec = server.conn.infer_jpeg(3, media_bytes("scenetext01.jpg"))
    r = run(osprey, "detect", "--quiet", "--model", "ocr-det", "--then", "ocr-rec",
            need(MEDIA / "scenetext01.jpg"))
    assert r.returncode == 0, r.stderr
    (written,) = lines(r.stdout)
    got = pairs(rec, written)
    assert len(got) == len(written["detections"]), (rec, written)
    for d, e in got:
        assert d["text"] == e["text"] and abs(d["textScore"] - e["textScore"]) < 2e-3, (d, e)
    assert "PROHIBITED" in [d["text"] for d, _ in got], rec
    assert server.conn.command({"cmd": "unload", "index": 3})["status"] == "ok"


def test_frames_at_once(server):
    """Frames of two cascades sent without waiting, two at a time on each
    model: each answered as it is alone (ThreadSanitizer watches); those
    past the queue are shed, as any model's."""
    c = server.conn
    photos = [media_bytes(p) for p in PHOTOS]
    alone = {(m, i): c.infer_jpeg(m, jpeg) for m in (1, 2) for i, jpeg in enumerate(photos)}
    sent = {}
    for _ in range(2):
        for (m, i) in alone:
            sent[c.send(1, bytes([m]) + photos[i])] = (m, i)
    served = 0
    for rid, key in sent.items():
        r = c.reply(rid)
        if r.get("shedReason") == "queue-full":
            continue
        served += 1
        got, want = r["detections"], alone[key]["detections"]
        assert [d["box"] for d in got] == [d["box"] for d in want]
        for d, e in zip(got, want):
            if "name" in d:
                assert d["name"] == e["name"]
            else:
                assert max(abs(x - y) for x, y in zip(d["embedding"], e["embedding"])) < 1e-5
    assert served >= 4, served  # each model's two run slots took a frame at once


def test_base64_embeddings(server):
    """With "embeddingEncoding": "base64" a step's embedding is the base64
    of its little-endian float32 values: the list's numbers, to its six
    decimals, over each front end's frame."""
    cfg = dict(EMBED, embeddingEncoding="base64")
    assert server.conn.command({"cmd": "load", "index": 4, "config": cfg})["status"] == "ok"
    try:
        c = server.conn
        img = media_image("basketball1.png")
        c.cache_frame(8, img)
        fronts = (lambda m: c.infer_jpeg(m, media_bytes("basketball1.png")),
                  lambda m: c.infer_raw(m, img), lambda m: c.infer_cached(m, 8))
        for front in fronts:
            listed, rec = front(1), front(4)
            assert len(rec["detections"]) == len(listed["detections"]) == 2, rec
            for d, e in pairs(rec, listed):
                raw = base64.b64decode(d["embedding"], validate=True)
                assert len(raw) == 2048, d
                v = struct.unpack("<512f", raw)
                assert max(abs(x - y) for x, y in zip(v, e["embedding"])) < 1e-6
    finally:
        assert server.conn.command({"cmd": "unload", "index": 4})["status"] == "ok"


def test_raw_and_cached_frames_run_the_cascade(server):
    img = media_image("astronaut.png")
    by_jpeg = server.conn.infer_jpeg(2, media_bytes("astronaut.png"))
    raw = server.conn.infer_raw(2, img)
    server.conn.cache_frame(7, img)
    cached = server.conn.infer_cached(2, 7)
    for rec in (raw, cached):
        assert [d["name"] for d in rec["detections"]] == [d["name"] for d in by_jpeg["detections"]]


def without_times(body):
    return re.sub(rb'"(\w*Ms)": [0-9.e-]+', rb'"\1": 0', body)


def test_a_model_without_a_cascade_answers_as_before(server, tmp_path):
    """Model 0 of the server with cascades, and the same model of a server
    with none, answer a frame with the same bytes (times aside)."""
    plain = Worker((), workdir=tmp_path)
    try:
        assert plain.conn.hello({"runtime": "onnxruntime",
                                 "models": [{"model": "ultraface"}]})["status"] == "ready"
        bodies = []
        for w in (server, plain):
            rid = w.conn.send(1, bytes([0]) + media_bytes("basketball1.png"))
            w.conn.reply(rid)
            bodies.append(without_times(dict(w.conn.raw)[rid]))
        assert bodies[0] == bodies[1]
        assert b"embedding" not in bodies[0]
        assert_python_json(plain.conn)
    finally:
        plain.kill()


def test_step_runs_are_counted(server):
    c = server.conn
    before = c.mem_stats()["cascades"]
    assert {"1", "2"} <= set(before), before
    rec = c.infer_jpeg(1, media_bytes("basketball1.png"))
    after = c.mem_stats()["cascades"]
    (step,) = after["1"]
    assert step["step"] == "face-embed" and step["depth"] == 0
    assert step["runs"] - before["1"][0]["runs"] == len(rec["detections"]) == 2
    assert step["skippedPastDeadline"] == 0
    assert after["2"] == before["2"]


def test_a_batch_is_refused_clearly(server):
    rec = server.conn.infer_batch(1, [media_image("astronaut.png")])
    assert "one at a time" in json.dumps(rec), rec
    assert server.conn.infer_jpeg(0, media_bytes("astronaut.png"))["detections"]


def test_a_step_that_does_not_exist_fails_its_load(server):
    c = server.conn
    r = c.command({"cmd": "load", "index": 5,
                   "config": {"model": "ultraface", "then": [{"model": "face-embedder"}]}})
    assert r["status"] == "error" and "face-embedder" in r["error"], r
    assert "then" in r["error"], r
    # a library that is not one fails in the loader, the step named
    not_a_library = str(MEDIA / "messi5.jpg")
    r = c.command({"cmd": "load", "index": 5,
                   "config": {"model": "ultraface",
                              "then": [{"model": "face-embed", "faceLibrary": not_a_library}]}})
    assert r["status"] == "error" and "cascade step face-embed" in r["error"], r
    assert c.status()["models"][5]["loaded"] is False
    assert c.infer_jpeg(1, media_bytes("astronaut.png"))["detections"][0]["embedding"]


def test_load_unload_churn(library, tmp_path):
    """Loads, failed loads, replaces and unloads of cascades, with frames
    between, on a server of its own that must then stop cleanly (under
    ASan: nothing leaked)."""
    w = Worker((), workdir=tmp_path)
    try:
        c = w.conn
        assert c.hello({"runtime": "onnxruntime", "models": []})["status"] == "ready"
        bad = {"model": "ultraface",
               "then": [{"model": "face-embed", "faceLibrary": str(MEDIA / "messi5.jpg")}]}
        first = None
        for _ in range(3):
            assert c.command({"cmd": "load", "index": 0, "config": bad})["status"] == "error"
            assert c.command({"cmd": "load", "index": 0, "config": EMBED})["status"] == "ok"
            (face,) = c.infer_jpeg(0, media_bytes("astronaut.png"))["detections"]
            first = first or face["embedding"]
            assert max(abs(x - y) for x, y in zip(face["embedding"], first)) < 1e-5
            r = c.command({"cmd": "replace", "index": 0, "config": recognize(library)})
            assert r["status"] == "ok", r
            (face,) = c.infer_jpeg(0, media_bytes("astronaut.png"))["detections"]
            assert face["name"] == "astronaut", face
            assert c.command({"cmd": "unload", "index": 0})["status"] == "ok"
        assert "error" in json.dumps(c.infer_jpeg(0, media_bytes("astronaut.png")))
        w.close_stdin()
        assert w.wait(60) == 0, w.describe()
        assert "Sanitizer" not in w.stderr_text(), w.describe()
    finally:
        w.kill()

def test_a_peer_names_no_library_outside_the_roots(spawn, library, tmp_path):
    """The --config file's cascade reads its library wherever it is; a
    socket peer's must lie inside the model roots, as its model must."""
    cfg = tmp_path / "ospreyd.json"
    cfg.write_text(json.dumps({"runtime": "onnxruntime", "models": [recognize(library), EMBED]}))
    sock = tmp_path / "ospreyd.sock"
    w = spawn("--listen", f"unix:{sock}", "--config", cfg, stdio=False)
    c = w.connect_unix(sock)
    assert c.hello({})["status"] == "ready"
    (face,) = c.infer_jpeg(0, media_bytes("messi5.jpg"))["detections"]
    assert face["name"] == "footballer", face
    # a connection shares a loaded model only when it asks for the same cascade
    other = w.connect_unix(sock)
    ready = other.hello({"models": [{"model": "ultraface"}, EMBED]})
    assert ready["status"] == "ready" and ready["models"] == 1 and ready["total"] == 2, ready
    r = c.command({"cmd": "load", "index": 2, "config": recognize(library)})
    assert r["status"] == "error", r
    assert r["error"] == f'"then": face library not found or not allowed: {library}', r
