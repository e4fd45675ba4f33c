"""Every message type through ospreyd with real models and media."""
import pytest

from ospreyd_client import (FMT_BGR, FMT_GRAY, model, SSD_CATALOG, assert_python_json,
                            check_clean, detections_match, iou, media_bytes, media_image, need,
                            now_ms, person, solid, spawn, ssd_path_config, worker)  # noqa: F401

RESULT_KEYS = ["kind", "detections", "inferenceMs", "preprocessMs", "predictMs", "batchSize",
               "frameSize"]


@pytest.fixture(params=["path", "catalog"])
def ssd(request, worker):
    """A worker with the SSD detector at index 0, given the seed's way (a
    path and its preprocessing keys) or by catalog name (extension)."""
    model("ssd-oidv4")
    cfg = ssd_path_config() if request.param == "path" else SSD_CATALOG
    w, ready = worker({"runtime": "onnxruntime", "models": [cfg]})
    assert ready["models"] == 1, ready
    return w


def test_infer_jpeg_finds_messi(ssd):
    rec = ssd.conn.infer_jpeg(0, media_bytes("messi5.jpg"))
    assert [k for k in rec if k in RESULT_KEYS] == RESULT_KEYS, rec
    assert rec["kind"] == "detections"
    assert rec["frameSize"] == "548x342"
    assert rec["batchSize"] == 1
    for k in ("inferenceMs", "preprocessMs", "predictMs"):
        assert isinstance(rec[k], (int, float)) and rec[k] >= 0, k
    assert rec["inferenceMs"] + 0.05 >= rec["predictMs"]
    assert person(rec) >= 0.7, rec
    for d in rec["detections"]:
        assert list(d)[:4] == ["label", "class", "score", "box"], d
        x1, y1, x2, y2 = d["box"]
        assert 0 <= x1 <= x2 <= 548 and 0 <= y1 <= y2 <= 342, d
        assert isinstance(d["class"], int) and 0 < d["score"] <= 1
    check_clean(ssd.conn)


def test_jpeg_and_raw_agree(ssd):
    jpeg = ssd.conn.infer_jpeg(0, media_bytes("messi5.jpg"))
    img = media_image("messi5.jpg")  # the host's own decode (libturbojpeg)
    raw = ssd.conn.infer_raw(0, img)
    assert raw["frameSize"] == "548x342"
    assert person(raw) >= 0.7, raw
    assert detections_match(jpeg, raw), (jpeg["detections"], raw["detections"])
    bgr = ssd.conn.infer_raw(0, img, fmt=FMT_BGR)
    assert detections_match(raw, bgr, px=0.01, score=1e-4), (raw, bgr)


def test_raw_png_cat(ssd):
    rec = ssd.conn.infer_raw(0, media_image("chelsea.png"))
    assert rec["frameSize"] == "451x300"
    cats = [d for d in rec["detections"] if d["label"] == "Cat"]
    assert cats and max(d["score"] for d in cats) >= 0.8, rec
    assert cats[0]["class"] == 8


def test_raw_gray(ssd):
    img = media_image("basketball1.png")
    assert img.channels == 1
    rec = ssd.conn.infer_raw(0, img, fmt=FMT_GRAY)
    assert rec["kind"] == "detections" and rec["frameSize"] == "640x480", rec
    assert "error" not in rec
    # the same luminance as RGB triplets gives the same answer
    from ospreyd_client import Image
    rgb = Image(img.w, img.h, 3, bytes(b for v in img.data for b in (v, v, v)))
    assert detections_match(rec, ssd.conn.infer_raw(0, rgb), px=2, score=0.02)


def test_infer_batch_four(ssd):
    messi, cat = media_image("messi5.jpg"), media_image("chelsea.png")
    singles = [ssd.conn.infer_raw(0, im) for im in (messi, cat)]
    reply = ssd.conn.infer_batch(0, [messi, cat, messi, cat])
    assert list(reply) == ["results"], reply
    res = reply["results"]
    assert len(res) == 4
    assert [r["frameSize"] for r in res] == ["548x342", "451x300", "548x342", "451x300"]
    for r, single in zip(res, singles + singles):
        assert r["kind"] == "detections"
        assert detections_match(r, single, px=0.5, score=0.005), (r, single)
    assert person(res[0]) >= 0.7 and person(res[2]) >= 0.7


def test_infer_batch_frame_id_hits_bench_cache(ssd):
    messi = media_image("messi5.jpg")
    before = ssd.conn.status()["benchCache"]
    assert list(before) == ["hits", "misses"]
    first = ssd.conn.infer_batch(0, [messi] * 4, frame_id=77)["results"]
    assert len(first) == 4 and all(person(r) >= 0.7 for r in first), first
    mid = ssd.conn.status()["benchCache"]
    assert mid["misses"] >= before["misses"] + 1, (before, mid)
    assert (mid["hits"] + mid["misses"]) - (before["hits"] + before["misses"]) >= 1
    second = ssd.conn.infer_batch(0, [messi] * 4, frame_id=77)["results"]
    after = ssd.conn.status()["benchCache"]
    # the same frame again: every item is a cache hit, nothing is preprocessed
    assert after["hits"] >= mid["hits"] + 4, (mid, after)
    assert after["misses"] == mid["misses"], (mid, after)
    assert all(detections_match(a, b, px=0.01, score=1e-4) for a, b in zip(first, second))
    ms = ssd.conn.mem_stats()
    assert ms["benchPreprocessCacheEntries"] >= 1, ms
    # an untagged batch does not touch the cache
    ssd.conn.infer_batch(0, [messi] * 2)
    assert ssd.conn.status()["benchCache"] == after
    # uncache_frame drops the preprocessed tensors of that frame id
    assert ssd.conn.command({"cmd": "uncache_frame", "frameId": 77}) == {
        "cmd": "uncache_frame", "status": "ok", "frameId": 77}
    assert ssd.conn.mem_stats()["benchPreprocessCacheEntries"] == 0


def test_cache_frame_infer_cached_uncache(ssd):
    cat = media_image("chelsea.png")
    assert ssd.conn.cache_frame(5, cat) == {"status": "cached", "frameId": 5, "width": 451,
                                            "height": 300}
    assert ssd.conn.mem_stats()["frameCacheEntries"] == 1
    direct = ssd.conn.infer_raw(0, cat)
    one = ssd.conn.infer_cached(0, 5)
    two = ssd.conn.infer_cached(0, 5)
    assert one["frameSize"] == "451x300"
    assert detections_match(one, direct, px=0.5, score=0.005), (one, direct)
    assert detections_match(one, two, px=0.01, score=1e-4)
    assert any(d["label"] == "Cat" for d in two["detections"])
    assert ssd.conn.command({"cmd": "uncache_frame", "frameId": 5}) == {
        "cmd": "uncache_frame", "status": "ok", "frameId": 5}
    assert ssd.conn.infer_cached(0, 5) == {"error": "frame 5 not in cache"}
    ms = ssd.conn.mem_stats()
    assert ms["frameCacheEntries"] == 0 and ms["preprocessCacheEntries"] == 0, ms
    # uncaching what is not there is fine
    assert ssd.conn.command({"cmd": "uncache_frame", "frameId": 12345})["status"] == "ok"


def test_cache_frame_replaces_same_id(ssd):
    ssd.conn.cache_frame(9, media_image("chelsea.png"))
    ssd.conn.infer_cached(0, 9)
    assert ssd.conn.cache_frame(9, media_image("messi5.jpg"))["width"] == 548
    rec = ssd.conn.infer_cached(0, 9)
    assert rec["frameSize"] == "548x342" and person(rec) >= 0.7, rec


def test_v2_every_type(worker):
    model("ssd-oidv4")
    w, ready = worker({"runtime": "onnxruntime", "models": [SSD_CATALOG], "protocolVersion": 2})
    c = w.conn
    later = now_ms() + 60_000
    assert person(c.infer_jpeg(0, media_bytes("messi5.jpg"), deadline=later)) >= 0.7
    assert person(c.infer_raw(0, media_image("messi5.jpg"), deadline=later)) >= 0.7
    assert person(c.infer_raw(0, media_image("messi5.jpg"), deadline=0)) >= 0.7
    res = c.infer_batch(0, [media_image("messi5.jpg")] * 2, deadline=later)["results"]
    assert len(res) == 2 and all(person(r) >= 0.7 for r in res)
    # cache_frame carries no deadline at any version
    assert c.cache_frame(3, media_image("messi5.jpg"))["status"] == "cached"
    assert person(c.infer_cached(0, 3, deadline=later)) >= 0.7
    ms = c.mem_stats()
    assert ms["counters"]["shedDeadlineExpired"] == 0


def test_many_in_flight_answered_by_id(ssd):
    """Several requests in flight at once; each reply carries its req_id."""
    c = ssd.conn
    messi, cat = media_bytes("messi5.jpg"), media_image("chelsea.png")
    ids = {}
    for i in range(3):
        ids[c.send(1, bytes([0]) + messi)] = "messi"
        from ospreyd_client import p_raw
        ids[c.send(2, p_raw(0, cat.w, cat.h, cat.fmt, cat.data))] = "cat"
    for rid, what in ids.items():
        rec = c.reply(rid)
        if rec.get("dropped"):
            continue  # a shed is a valid answer under load
        if what == "messi":
            assert person(rec) >= 0.7, rec
        else:
            assert any(d["label"] == "Cat" for d in rec["detections"]), rec
    assert all(len(c.replies[r]) == 1 for r in ids)


def test_replies_are_python_json(ssd):
    """Replies are byte for byte what Python's json.dumps writes."""
    c = ssd.conn
    c.infer_jpeg(0, media_bytes("messi5.jpg"))
    c.infer_raw(0, media_image("chelsea.png"))
    c.infer_batch(0, [media_image("chelsea.png")] * 2, frame_id=3)
    c.cache_frame(1, solid(64, 48))
    c.infer_cached(0, 1)
    c.infer_cached(0, 2)
    c.status()
    c.mem_stats()
    c.command({"cmd": "reconfigure", "index": 0, "config": {"path": "x"}})
    c.command({"cmd": "nope\u00e9"})
    c.infer_raw(0, solid(4, 4), fmt=0)
    assert_python_json(c)


def test_ultraface_astronaut_by_catalog(worker):
    model("ultraface")
    w, ready = worker({"runtime": "onnxruntime", "models": [{"model": "ultraface"}]})
    rec = w.conn.infer_raw(0, media_image("astronaut.png"))
    faces = rec["detections"]
    assert len(faces) == 1 and faces[0]["score"] >= 0.9, faces
    assert iou(faces[0]["box"], [180, 62, 268, 174]) >= 0.7, faces


def test_ultraface_by_path_names_its_class_face(worker):
    """A host of the Python worker names the file, not the catalog entry: the
    face detector's one class is still called "face"."""
    model("ultraface")
    cfg = {"path": str(model("ultraface")), "postprocessor": "ultraface",
           "inputWidth": 320, "inputHeight": 240}
    w, ready = worker({"runtime": "onnxruntime", "models": [cfg]})
    faces = w.conn.infer_raw(0, media_image("astronaut.png"))["detections"]
    assert len(faces) == 1 and faces[0]["label"] == "face", faces


def test_infer_jpeg_accepts_png_bytes(ssd):
    """The Python worker opened whatever image the bytes held; so does ospreyd."""
    rec = ssd.conn.infer_jpeg(0, media_bytes("chelsea.png"))
    assert rec.get("frameSize") == "451x300", rec
    assert any(d["label"] == "Cat" for d in rec["detections"]), rec


def test_frame_cache_keeps_256(worker, tmp_path):
    """osprey bounds the frame cache (docs/protocol.md): the oldest goes."""
    from ospreyd_client import tb_config, tb_script
    w, _ = worker(tb_config([tb_script(tmp_path / "m.json")]))
    c = w.conn
    for fid in range(1, 258):
        assert c.cache_frame(fid, solid(4, 4))["status"] == "cached"
    assert c.mem_stats()["frameCacheEntries"] == 256
    assert c.infer_cached(0, 1) == {"error": "frame 1 not in cache"}
    for fid in (2, 257):
        assert c.infer_cached(0, fid)["kind"] == "detections"


def test_embedding_base64_extension(worker):
    """"embeddingEncoding": "base64" packs the vector as little-endian float32
    bytes; it decodes to the same unit vector the JSON array gives."""
    import base64
    import struct as st
    model("face-embed")
    w, _ = worker({"runtime": "onnxruntime", "models": [
        {"model": "face-embed"}, {"model": "face-embed", "embeddingEncoding": "base64"}]})
    img = media_image("astronaut.png")
    plain = w.conn.infer_raw(0, img)
    packed = w.conn.infer_raw(1, img)
    assert "embedding" not in packed and plain["kind"] == packed["kind"] == "embedding"
    vec = st.unpack("<512f", base64.b64decode(packed["embeddingB64"]))
    assert max(abs(a - b) for a, b in zip(vec, plain["embedding"])) < 1e-5
    assert abs(sum(v * v for v in vec) - 1.0) < 1e-4
