"""Cascades (docs/cascades.md): models run on each detection's crop by
osprey detect — embeddings, names from a face library made by osprey
faces, a detector inside a box — on the real models and photos; and each
mistake named: in the config, in the library, in the images given."""
import base64
import json
import math
import sqlite3
import struct

import pytest

from conftest import MEDIA, model, need, run, lines
from face_library import library  # noqa: F401 (a fixture)


@pytest.fixture(scope="module", autouse=True)
def models():
    for name in ("ultraface", "blazeface", "face-embed"):
        model(name)


def detect(osprey, *args, ok=True):
    r = run(osprey, "detect", "--quiet", *args)
    if ok:
        assert r.returncode == 0, r.stderr
    return r


def config(tmp_path, cfg, name="cascade.json"):
    p = tmp_path / name
    p.write_text(json.dumps(cfg))
    return p


def test_each_face_gets_its_embedding(osprey):
    (rec,) = lines(detect(osprey, "--model", "ultraface", "--then", "face-embed",
                          need(MEDIA / "basketball1.png")).stdout)
    faces = rec["detections"]
    assert len(faces) == 2, rec
    for d in faces:
        assert set(d) == {"label", "class", "score", "box", "embedding"}, d
        assert len(d["embedding"]) == 512
        assert abs(math.sqrt(sum(x * x for x in d["embedding"])) - 1) < 1e-3
    # two people: their embeddings are far apart
    a, b = (d["embedding"] for d in faces)
    assert sum(x * y for x, y in zip(a, b)) < 0.5


def unpack(text):
    """A base64 embedding: its little-endian float32 values."""
    raw = base64.b64decode(text, validate=True)
    assert len(raw) % 4 == 0, text
    return struct.unpack(f"<{len(raw) // 4}f", raw)


def test_base64_embeddings(osprey, tmp_path):
    """A model config's "embeddingEncoding": "base64" packs its steps'
    embeddings too: the same numbers as the list, exact to the list's
    six decimals."""
    photo = need(MEDIA / "basketball1.png")
    (listed,) = lines(detect(osprey, "--model", "ultraface", "--then", "face-embed", photo).stdout)
    enc = config(tmp_path, {"embeddingEncoding": "base64"})
    (packed,) = lines(detect(osprey, "--model", "ultraface", "--config", enc, "--then",
                             "face-embed", photo).stdout)
    assert [d["box"] for d in packed["detections"]] == [d["box"] for d in listed["detections"]]
    assert len(packed["detections"]) == 2, packed
    for d, e in zip(packed["detections"], listed["detections"]):
        assert isinstance(d["embedding"], str), d
        v = unpack(d["embedding"])
        assert len(v) == 512
        assert max(abs(x - y) for x, y in zip(v, e["embedding"])) < 1e-6
    # in a config's own cascade as well
    cfg = config(tmp_path, {"model": "ultraface", "embeddingEncoding": "base64",
                            "then": [{"model": "face-embed", "as": "vec"}]}, "own.json")
    (own,) = lines(detect(osprey, "--config", cfg, photo).stdout)
    for d, e in zip(own["detections"], listed["detections"]):
        assert max(abs(x - y) for x, y in zip(unpack(d["vec"]), e["embedding"])) < 1e-6


def test_a_video_on_worker_threads(osprey):
    """Each worker thread crops from its own frame: every face of every
    frame run gets its embedding, the same face in near frames a near one."""
    recs = lines(detect(osprey, "--model", "ultraface", "--then", "face-embed", "--workers", "2",
                        "--per-frame", "--every", "40", need(MEDIA / "Megamind.avi")).stdout)
    faces = [d for r in recs for d in r["detections"]]
    assert len(faces) >= 6, recs
    assert all(len(d["embedding"]) == 512 for d in faces)
    # frames 200 and 240: the man with glasses, one face each
    by = {r["frame"]: r["detections"] for r in recs}
    (a,), (b,) = by[200], by[240]
    assert sum(x * y for x, y in zip(a["embedding"], b["embedding"])) > 0.45


def test_records_without_a_cascade_are_unchanged(osprey):
    (rec,) = lines(detect(osprey, "--model", "ultraface", need(MEDIA / "basketball1.png")).stdout)
    for d in rec["detections"]:
        assert set(d) == {"label", "class", "score", "box"}, d


def test_the_largest_first(osprey, tmp_path):
    cfg = config(tmp_path, {"model": "ultraface", "then": [{"model": "face-embed", "maxObjects": 1,
                                                             "labels": ["face"]}]})
    (rec,) = lines(detect(osprey, "--config", cfg, need(MEDIA / "basketball1.png")).stdout)
    with_emb = [d for d in rec["detections"] if "embedding" in d]
    assert len(with_emb) == 1
    area = lambda d: (d["box"][2] - d["box"][0]) * (d["box"][3] - d["box"][1])  # noqa: E731
    assert area(with_emb[0]) == max(area(d) for d in rec["detections"])


def test_landmarks_inside_a_box(osprey, tmp_path):
    """BlazeFace on the square around UltraFace's face, then the face turned
    upright from BlazeFace's landmarks: a detector's own steps."""
    cfg = config(tmp_path, {"model": "ultraface", "then": [
        {"model": "blazeface", "margin": 0.6, "as": "faces",
         "then": [{"model": "face-embed", "align": "landmarks"}]}]})
    (rec,) = lines(detect(osprey, "--config", cfg, need(MEDIA / "astronaut.png")).stdout)
    (face,) = rec["detections"]
    (inner,) = face["faces"]
    assert inner["label"] == "face" and len(inner["landmarks"]) == 6
    assert len(inner["embedding"]) == 512
    # BlazeFace's box, in frame pixels, is on UltraFace's face
    ix = min(face["box"][2], inner["box"][2]) - max(face["box"][0], inner["box"][0])
    assert ix > 0.7 * (face["box"][2] - face["box"][0]), (face["box"], inner["box"])


def test_faces_are_named(osprey, library):
    r = detect(osprey, "--model", "ultraface", "--recognize", library,
               need(MEDIA / "messi5.jpg"), need(MEDIA / "astronaut.png"),
               need(MEDIA / "basketball2.png"))
    by = {rec["source"].rsplit("/", 1)[-1]: rec["detections"] for rec in lines(r.stdout)}
    (m,) = by["messi5.jpg"]
    (a,) = by["astronaut.png"]
    assert m["name"] == "footballer" and m["nameScore"] > 0.9, m
    assert a["name"] == "astronaut" and a["nameScore"] > 0.9, a
    assert "embedding" not in a
    # people who are not in the library
    assert [d["name"] for d in by["basketball2.png"]] == ["unknown", "unknown"], by
    assert all(d["nameScore"] < 0.5 for d in by["basketball2.png"])


def test_faces_list_and_remove(osprey, tmp_path, library):
    lib = tmp_path / "copy.db"
    lib.write_bytes(library.read_bytes())
    r = run(osprey, "faces", "-l", lib, "list")
    assert r.returncode == 0 and r.stdout.splitlines() == ["astronaut\t1\t512", "footballer\t1\t512"]
    r = run(osprey, "faces", "-l", lib, "remove", "astronaut")
    assert r.returncode == 0 and "astronaut: 1 face removed" in r.stdout
    r = run(osprey, "faces", "-l", lib, "remove", "astronaut")
    assert r.returncode == 1 and "no face named 'astronaut'" in r.stderr
    assert run(osprey, "faces", "-l", lib, "list").stdout.splitlines() == ["footballer\t1\t512"]
    # the astronaut is now unknown
    (rec,) = lines(detect(osprey, "--model", "ultraface", "--recognize", lib,
                          need(MEDIA / "astronaut.png")).stdout)
    assert rec["detections"][0]["name"] == "unknown"


def test_faces_add_refuses_no_face_and_several(osprey, tmp_path):
    lib = tmp_path / "f.db"
    r = run(osprey, "faces", "-l", lib, "add", "cup", need(MEDIA / "coffee.png"))
    assert r.returncode == 1 and "coffee.png: no face found" in r.stderr, r.stderr
    # one good photo and one of two people: nothing is stored
    r = run(osprey, "faces", "-l", lib, "add", "x", need(MEDIA / "astronaut.png"),
            need(MEDIA / "basketball1.png"))
    assert r.returncode == 1 and "basketball1.png: 2 faces found" in r.stderr, r.stderr
    assert run(osprey, "faces", "-l", lib, "list").stdout == ""
    assert run(osprey, "faces", "-l", lib, "add", "", need(MEDIA / "astronaut.png")).returncode == 2
    assert run(osprey, "faces", "-l", lib, "rename").returncode == 2


def test_a_file_that_is_not_a_library(osprey, tmp_path):
    text = tmp_path / "notes.db"
    text.write_text("a shopping list, not faces\n" * 100)
    other = tmp_path / "other.db"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE t(x)")
    db.commit()
    db.close()
    for f in (text, other):
        r = detect(osprey, "--model", "ultraface", "--recognize", f, need(MEDIA / "astronaut.png"),
                   ok=False)
        assert r.returncode == 2 and "is not a face library" in r.stderr, r.stderr
        r = run(osprey, "faces", "-l", f, "list")
        assert r.returncode == 2 and "is not a face library" in r.stderr, r.stderr
    r = detect(osprey, "--model", "ultraface", "--recognize", tmp_path / "none.db",
               need(MEDIA / "astronaut.png"), ok=False)
    assert r.returncode == 2 and "cannot open face library" in r.stderr
    assert not (tmp_path / "none.db").exists()


def test_a_corrupt_library_is_an_error_not_a_crash(osprey, tmp_path, library):
    data = bytearray(library.read_bytes())
    # every page after the first overwritten: the schema reads, the rows do not
    for i in range(4096, len(data)):
        data[i] = (i * 131) & 0xFF
    bad = tmp_path / "corrupt.db"
    bad.write_bytes(bytes(data))
    r = detect(osprey, "--model", "ultraface", "--recognize", bad, need(MEDIA / "astronaut.png"),
               ok=False)
    assert r.returncode == 2, r.stderr
    assert "face library" in r.stderr, r.stderr
    # a vector of the wrong size
    wrong = tmp_path / "wrong.db"
    wrong.write_bytes(library.read_bytes())
    db = sqlite3.connect(wrong)
    db.execute("UPDATE faces SET embedding = x'00000000'")
    db.commit()
    db.close()
    r = detect(osprey, "--model", "ultraface", "--recognize", wrong, need(MEDIA / "astronaut.png"),
               ok=False)
    assert r.returncode == 2 and "damaged" in r.stderr, r.stderr


@pytest.mark.parametrize("cfg,message", [
    ({"model": "ultraface", "then": [{"model": "arcface"}]},
     'model "arcface" is not in the catalog'),
    ({"model": "ultraface", "then": [{"model": "face-embed", "labels": ["person"]}]},
     'ultraface never gives the label "person" (its labels: face)'),
    ({"model": "ultraface", "then": [{"model": "face-embed", "labels": ["Face"]}]},
     'did you mean "face"?'),
    ({"model": "ultraface", "then": [{"model": "blazeface", "then": [{"model": "ultraface"}]}]},
     "a cycle: ultraface runs on its own output"),
    ({"model": "ultraface", "then": [{"model": "face-embed", "align": "landmarks"}]},
     'align "landmarks" needs landmarks, and ultraface gives none'),
    ({"model": "ultraface", "then": [{"model": "face-embed", "maxObjcts": 3}]},
     'unknown key "maxObjcts" (did you mean "maxObjects"?)'),
])
def test_config_mistakes_are_named(osprey, tmp_path, cfg, message):
    r = detect(osprey, "--config", config(tmp_path, cfg), need(MEDIA / "astronaut.png"), ok=False)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr, r.stderr
    assert r.stdout == ""


def test_recognize_needs_faces(osprey, library):
    r = detect(osprey, "--recognize", library, need(MEDIA / "astronaut.png"), ok=False)
    assert r.returncode == 2, r.stderr
    assert 'ssd-oidv4-int8 never gives the label "face"' in r.stderr, r.stderr
