"""Commands through ospreyd with real models: load, replace, unload,
reconfigure, status, mem_stats; and the frame-size cap."""
import json
import struct
import time

from ospreyd_client import (model, MSG_COMMAND, MSG_RAW, SSD_CATALOG, ULTRAFACE_CATALOG,
                            check_clean, iou, media_bytes, media_image, need, p_raw,
                            person, solid, spawn, ssd_path_config, tb_script, worker)  # noqa: F401

ASTRONAUT_FACE = [180, 62, 268, 174]


def start_ssd(worker, *args, **extra):
    model("ssd-oidv4")
    cfg = {"runtime": "onnxruntime", "models": [ssd_path_config()]}
    cfg.update(extra)
    w, ready = worker(cfg, *args)
    assert ready["models"] == 1, ready
    return w


def one_face(rec):
    faces = rec["detections"]
    assert len(faces) == 1, rec
    assert iou(faces[0]["box"], ASTRONAUT_FACE) >= 0.7, faces
    return faces[0]


def test_load_replace_unload(worker):
    model("ultraface")
    w = start_ssd(worker)
    c = w.conn
    done0 = c.mem_stats()["modelLoad"]["completed"]
    r = c.command({"cmd": "load", "index": 1, "config": ULTRAFACE_CATALOG})
    assert list(r) == ["cmd", "index", "status", "loadMs"], r
    assert r["cmd"] == "load" and r["index"] == 1 and r["status"] == "ok"
    assert isinstance(r["loadMs"], int) and r["loadMs"] >= 0
    st = c.status()
    assert list(st) == ["cmd", "models", "benchCache"], st
    assert st["cmd"] == "status"
    assert [list(m) for m in st["models"]] == [["index", "path", "loaded", "postprocessor"]] * 2
    m0, m1 = st["models"]
    assert m0 == {"index": 0, "path": str(model("ssd-oidv4")), "loaded": True,
                  "postprocessor": "ssd"}, m0
    assert m1["index"] == 1 and m1["loaded"] is True and m1["postprocessor"] == "ultraface", m1
    assert isinstance(m1["path"], str) and m1["path"].endswith(".onnx"), m1
    one_face(c.infer_raw(1, media_image("astronaut.png")))
    # index 0 unaffected
    assert person(c.infer_jpeg(0, media_bytes("messi5.jpg"))) >= 0.7

    r = c.command({"cmd": "replace", "index": 1, "config": ssd_path_config()})
    assert list(r) == ["cmd", "index", "status", "loadMs"] and r["cmd"] == "replace", r
    assert r["status"] == "ok"
    assert person(c.infer_jpeg(1, media_bytes("messi5.jpg"))) >= 0.7
    assert c.status()["models"][1]["postprocessor"] == "ssd"

    assert c.command({"cmd": "unload", "index": 1}) == {"cmd": "unload", "index": 1, "status": "ok"}
    assert c.status()["models"][1] == {"index": 1, "path": None, "loaded": False,
                                       "postprocessor": None}
    assert c.infer_jpeg(1, media_bytes("messi5.jpg")) == {
        "error": "Model 1 not loaded", "kind": "detections", "detections": [], "inferenceMs": 0}
    ms = c.mem_stats()
    assert ms["modelsLoaded"] == 1
    assert ms["modelLoad"]["completed"] == done0 + 2, ms["modelLoad"]
    assert ms["modelLoad"]["failed"] == 0, ms["modelLoad"]
    # and load again into the freed slot
    assert c.command({"cmd": "load", "index": 1, "config": ULTRAFACE_CATALOG})["status"] == "ok"
    one_face(c.infer_raw(1, media_image("astronaut.png")))
    check_clean(c)


def test_load_far_index_grows_status(worker):
    w = start_ssd(worker)
    r = w.conn.command({"cmd": "load", "index": 3, "config": SSD_CATALOG})
    assert r["status"] == "ok", r
    st = w.conn.status()["models"]
    assert [m["index"] for m in st] == [0, 1, 2, 3]
    assert [m["loaded"] for m in st] == [True, False, False, True]
    assert person(w.conn.infer_jpeg(3, media_bytes("messi5.jpg"))) >= 0.7


def test_load_failure_in_time(worker):
    w = start_ssd(worker)
    r = w.conn.command({"cmd": "load", "index": 1,
                        "config": {"path": "/nonexistent/x.onnx", "postprocessor": "ssd"}})
    assert r["cmd"] == "load" and r["index"] == 1 and r["status"] == "error", r
    assert list(r)[:4] == ["cmd", "index", "status", "error"] or "reason" in r, r
    assert "/nonexistent/x.onnx" in r["error"], r
    assert w.conn.status()["models"][1]["loaded"] is False
    assert w.conn.mem_stats()["modelLoad"]["failed"] == 1
    # a refused load leaves the worker loading
    assert w.conn.command({"cmd": "load", "index": 1, "config": SSD_CATALOG})["status"] == "ok"


def test_replace_failure_keeps_old_model(worker):
    w = start_ssd(worker)
    r = w.conn.command({"cmd": "replace", "index": 0, "config": {"path": "/nonexistent/y.onnx"}})
    assert r["status"] == "error", r
    assert person(w.conn.infer_jpeg(0, media_bytes("messi5.jpg"))) >= 0.7
    assert w.conn.status()["models"][0]["path"] == str(model("ssd-oidv4"))


def test_reconfigure(worker):
    w = start_ssd(worker)
    c = w.conn
    messi = media_bytes("messi5.jpg")
    base = c.infer_jpeg(0, messi)
    assert person(base) >= 0.7
    r = c.command({"cmd": "reconfigure", "index": 0, "config": {"nmsIouThreshold": 0.3}})
    assert r == {"cmd": "reconfigure", "index": 0, "status": "ok"}
    assert list(r) == ["cmd", "index", "status"]
    # confidence (an osprey addition) takes effect on the next frame
    r = c.command({"cmd": "reconfigure", "index": 0, "config": {"confidence": 0.95}})
    assert r["status"] == "ok", r
    high = c.infer_jpeg(0, messi)
    assert all(d["score"] >= 0.95 for d in high["detections"]), high
    r = c.command({"cmd": "reconfigure", "index": 0, "config": {"confidence": 0.05}})
    assert r["status"] == "ok", r
    low = c.infer_jpeg(0, messi)
    assert len(low["detections"]) > len(base["detections"]), (base, low)
    assert min(d["score"] for d in low["detections"]) < 0.25
    assert person(low) >= 0.7


def test_reconfigure_refuses_reload_keys(worker):
    w = start_ssd(worker)
    c = w.conn
    messi = media_bytes("messi5.jpg")
    base = c.infer_jpeg(0, messi)
    r = c.command({"cmd": "reconfigure", "index": 0,
                   "config": {"path": "/other.onnx", "confidence": 0.99}})
    assert list(r) == ["cmd", "index", "status", "error"], r
    assert r["status"] == "error" and r["index"] == 0
    err = r["error"]
    assert err.startswith("keys not reconfigurable without a reload: path (allowed: "), err
    allowed = err[err.index("(allowed: ") + len("(allowed: "):-1].split(", ")
    assert "nmsIouThreshold" in allowed and "confidence" in allowed and "path" not in allowed, err
    assert allowed == sorted(allowed)
    # nothing of the refused patch was applied (confidence stays)
    after = c.infer_jpeg(0, messi)
    assert len(after["detections"]) == len(base["detections"]), (base, after)
    r = c.command({"cmd": "reconfigure", "index": 0,
                   "config": {"inputSize": 640, "postprocessor": "yolo"}})
    assert r["error"].startswith(
        "keys not reconfigurable without a reload: inputSize, postprocessor (allowed: "), r
    assert c.status()["models"][0]["path"] == str(model("ssd-oidv4"))


MEM_KEYS = ["cmd", "status", "memory", "mallocArenas", "counters", "backpressure",
            "modelsLoaded", "frameCacheEntries", "preprocessCacheEntries",
            "benchPreprocessCacheEntries", "uptimeSec", "threading", "modelLoad", "requests"]


def test_mem_stats_every_field(worker):
    w = start_ssd(worker)
    c = w.conn
    messi = media_bytes("messi5.jpg")
    c.infer_jpeg(0, messi)
    c.infer_jpeg(0, messi)
    c.infer_raw(0, solid(32, 32))
    c.infer_batch(0, [solid(32, 32)] * 3)
    c.cache_frame(4, solid(16, 16))
    c.infer_cached(0, 4)
    c.infer_cached(0, 4)
    c.status()
    ms = c.mem_stats()
    keys = [k for k in ms if k != "gcCounts"]
    assert keys == MEM_KEYS, list(ms)
    assert ms["cmd"] == "mem_stats" and ms["status"] == "ok"
    # osprey's extension: the thread economy it chose
    th = ms["threading"]
    assert th["cores"] >= 1 and th["predictWorkers"] >= 1 and th["intraOpThreads"] >= 1, th
    assert th["predictWorkers"] * th["intraOpThreads"] <= max(th["cores"], th["predictWorkers"]), th
    assert th["intraOpThreads"] <= th["loneFrameThreads"] <= max(th["cores"], th["intraOpThreads"])
    assert isinstance(th["loneRuns"], int) and th["loneRuns"] >= 0, th
    mem = ms["memory"]
    for k in ("rssKb", "vmKb", "hwmKb", "swapKb", "threads", "maxRssKb"):
        assert isinstance(mem.get(k), int), (k, mem)
    assert mem["rssKb"] > 0 and mem["vmKb"] >= mem["rssKb"] and mem["hwmKb"] >= mem["rssKb"]
    assert mem["threads"] >= 2 and mem["swapKb"] >= 0 and mem["maxRssKb"] > 0
    assert ms["mallocArenas"] is None or (isinstance(ms["mallocArenas"], int)
                                          and ms["mallocArenas"] >= 1)
    cnt = ms["counters"]
    for k in ("inferJpeg", "inferRaw", "inferBatch", "inferCached", "commands", "framesCached",
              "shedDeadlineExpired", "totalInference", "shedQueueFull", "errors"):
        assert isinstance(cnt.get(k), int), (k, cnt)
    assert cnt["inferJpeg"] == 2 and cnt["inferRaw"] == 1 and cnt["inferBatch"] == 1, cnt
    assert cnt["inferCached"] == 2 and cnt["framesCached"] == 1, cnt
    assert cnt["totalInference"] == 6, cnt
    assert cnt["commands"] == 2, cnt  # the status and this mem_stats
    assert cnt["shedDeadlineExpired"] == 0 and cnt["shedQueueFull"] == 0, cnt
    bp = ms["backpressure"]
    assert isinstance(bp, dict)
    for k, v in bp.items():
        assert k.isdigit() and v == {"running": 0, "pending": 0}, bp
    assert ms["modelsLoaded"] == 1
    assert ms["frameCacheEntries"] == 1
    assert isinstance(ms["preprocessCacheEntries"], int)
    assert isinstance(ms["benchPreprocessCacheEntries"], int)
    assert isinstance(ms["uptimeSec"], int) and ms["uptimeSec"] >= 0
    ml = ms["modelLoad"]
    assert list(ml) == ["inFlight", "poisonedBy", "boundMs", "completed", "failed", "timedOut",
                        "finishedLate"], ml
    assert ml["inFlight"] is None and ml["poisonedBy"] is None
    assert ml["boundMs"] == 120000
    assert ml["failed"] == 0 and ml["timedOut"] == 0
    # the seed counts only command loads (the loader's); startup models are
    # loaded before the loader exists
    assert ml["completed"] == 0, ml
    assert ml["finishedLate"] == 0


def test_mem_stats_bound_from_config(worker):
    w, _ = worker({"runtime": "test", "models": [], "modelLoadTimeoutMs": 4321})
    assert w.conn.mem_stats()["modelLoad"]["boundMs"] == 4321


def test_uptime_advances(worker):
    w, _ = worker({"runtime": "test", "models": []})
    a = w.conn.mem_stats()["uptimeSec"]
    time.sleep(2.2)
    b = w.conn.mem_stats()["uptimeSec"]
    assert b >= a + 1, (a, b)


def test_status_not_overtaking_load(worker):
    model("ultraface")
    w = start_ssd(worker)
    c = w.conn
    load = c.send_command({"cmd": "load", "index": 1, "config": ULTRAFACE_CATALOG})
    st = c.send_command({"cmd": "status"})
    unload = c.send_command({"cmd": "unload", "index": 1})
    st2 = c.send_command({"cmd": "status"})
    assert c.reply(load)["status"] == "ok"
    assert c.reply(st)["models"][1]["loaded"] is True
    assert c.reply(unload)["status"] == "ok"
    assert c.reply(st2)["models"][1]["loaded"] is False
    order = [r for r in c.order if r in (load, st, unload, st2)]
    assert order == [load, st, unload, st2]


def test_frame_over_cap_stdio_exits_nonzero(worker, tmp_path):
    m = tb_script(tmp_path / "m.json")
    w, _ = worker({"runtime": "test", "models": [m]}, "--max-frame", str(1 << 20))
    c = w.conn
    # just under the cap is fine
    img = solid(600, 580)  # 1 044 000 bytes of pixels
    rid = c.send(MSG_RAW, p_raw(0, img.w, img.h, img.fmt, img.data))
    r = c.reply(rid)
    assert r["kind"] == "detections" and "error" not in r and r["frameSize"] == "600x580", r
    # a declared length over the cap: an error on its req_id, then the end
    big = 2 << 20
    c.send_bytes(struct.pack("<IIB", 5 + big, 99, MSG_RAW) + bytes(4096))
    r = c.reply(99)
    assert isinstance(r.get("error"), str) and r["error"], r
    assert w.wait() != 0
    c.wait_closed()
    check_clean(c)
    assert w.stderr_text().strip()


def test_frame_over_default_cap(worker):
    w, _ = worker({"runtime": "test", "models": []})
    c = w.conn
    c.send_bytes(struct.pack("<IIB", (64 << 20) + 100, 7, MSG_COMMAND))
    r = c.reply(7)
    assert "error" in r, r
    assert w.wait() != 0


def test_unicode_and_escapes_in_command(worker):
    w, _ = worker({"runtime": "test", "models": []})
    r = w.conn.command({"cmd": "caf\u00e9 \"x\"\n"})
    assert r == {"cmd": "caf\u00e9 \"x\"\n", "status": "error",
                 "error": "Unknown command: caf\u00e9 \"x\"\n"}
    body = w.conn.raw[-1][1]
    assert b"\\u00e9" in body and b"\\\"x\\\"\\n" in body, body  # ensure_ascii
    assert json.loads(body) == r
