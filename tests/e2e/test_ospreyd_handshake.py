"""ospreyd's startup handshake over stdin/stdout, at wire v1 and v2."""
import json

from ospreyd_client import (MSG_COMMAND, MSG_JPEG, MSG_RAW, model, SSD_CATALOG, check_clean,
                            frame, media_bytes, need, p_raw, person, solid, spawn,  # noqa: F401
                            ssd_path_config, worker)  # noqa: F401

READY_KEYS = ["status", "models", "total", "startupMs", "runtime", "workers", "protocolVersion"]


def test_ready_v1_old_host(worker):
    model("ssd-oidv4")
    w, ready = worker({"runtime": "onnxruntime", "models": [ssd_path_config()]})
    assert list(ready) == READY_KEYS, ready
    assert ready["status"] == "ready"
    assert ready["models"] == 1 and ready["total"] == 1
    assert isinstance(ready["startupMs"], int) and ready["startupMs"] >= 0
    assert ready["runtime"] == "onnxruntime"
    assert isinstance(ready["workers"], int) and ready["workers"] >= 1
    # the worker's own highest version, not the negotiated minimum
    assert ready["protocolVersion"] == 2
    # v1: no deadline prefix; a frame goes straight to the model
    rec = w.conn.infer_jpeg(0, media_bytes("messi5.jpg"))
    assert person(rec) >= 0.7, rec
    check_clean(w.conn)


def test_ready_reply_on_config_req_id(spawn):
    w = spawn()
    w.conn.send(MSG_COMMAND, json.dumps({"runtime": "test", "models": []}).encode(), req_id=77)
    ready = w.conn.reply(77)
    assert ready["status"] == "ready" and ready["models"] == 0 and ready["total"] == 0
    assert list(ready) == READY_KEYS
    assert w.conn.order == [77]


def test_ready_v2_deadline_prefix(worker):
    w, ready = worker({"runtime": "onnxruntime", "models": [SSD_CATALOG], "protocolVersion": 2})
    assert ready["protocolVersion"] == 2 and ready["models"] == 1
    assert w.conn.wire == 2
    # the client prefixes [u64 deadline=0]: served
    rec = w.conn.infer_jpeg(0, media_bytes("messi5.jpg"))
    assert person(rec) >= 0.7, rec
    # a sheddable payload shorter than the prefix
    rid = w.conn.send(MSG_RAW, b"\x00\x01\x02", prefix=False)
    assert w.conn.reply(rid) == {"error": "truncated deadline prefix on msg_type=2 (3 bytes, need 8)"}


def test_host_above_worker_negotiates_worker_version(worker):
    w, ready = worker({"runtime": "test", "models": [], "protocolVersion": 9})
    assert ready["protocolVersion"] == 2
    rid = w.conn.send(MSG_JPEG, b"", prefix=False)
    assert w.conn.reply(rid) == {"error": "truncated deadline prefix on msg_type=1 (0 bytes, need 8)"}


def test_garbage_version_means_v1(worker):
    for declared in ("abc", None, 0, [2]):
        w, ready = worker({"runtime": "test", "models": [], "protocolVersion": declared})
        assert ready["protocolVersion"] == 2, declared
        # at v1 a 3-byte infer_raw payload is a truncated raw header, not a
        # truncated deadline prefix
        rid = w.conn.send(MSG_RAW, b"\x00\x01\x02", prefix=False)
        assert w.conn.reply(rid) == {"error": "truncated infer_raw header"}, declared
        w.kill()


def test_string_version_two_is_v2(worker):
    # the seed reads int(value): "2" is version 2
    w, _ = worker({"runtime": "test", "models": [], "protocolVersion": "2"})
    rid = w.conn.send(MSG_RAW, b"\x00\x01\x02", prefix=False)
    assert w.conn.reply(rid)["error"].startswith("truncated deadline prefix on msg_type=2")


def test_failed_model_leaves_slot_unloaded(worker):
    model("ssd-oidv4")
    w, ready = worker({"runtime": "onnxruntime",
                       "models": [{"path": "/nonexistent/model.onnx", "postprocessor": "ssd"},
                                  ssd_path_config()]})
    assert ready["models"] == 1 and ready["total"] == 2, ready
    st = w.conn.status()
    assert [m["loaded"] for m in st["models"]] == [False, True], st
    assert person(w.conn.infer_jpeg(1, media_bytes("messi5.jpg"))) >= 0.7
    assert w.conn.infer_jpeg(0, media_bytes("messi5.jpg")) == {
        "error": "Model 0 not loaded", "kind": "detections", "detections": [], "inferenceMs": 0}


def test_concurrency_sets_workers(worker):
    w, ready = worker({"runtime": "test", "models": [], "concurrency": 3})
    assert ready["workers"] >= 3
    w, ready = worker({"runtime": "test", "models": [], "concurrency": 0})
    assert ready["workers"] >= 1


def test_first_frame_not_a_command_exits_1(spawn):
    w = spawn()
    w.conn.send_bytes(frame(0, MSG_JPEG, b"\x00" + media_bytes("messi5.jpg")[:100]))
    assert w.wait() == 1
    assert w.stderr_text().strip(), "no stderr line"
    assert w.conn.order == [] and not w.conn.problems  # nothing on stdout


def test_first_frame_raw_exits_1(spawn):
    w = spawn()
    w.conn.send_bytes(frame(5, MSG_RAW, p_raw(0, 2, 2, 0, bytes(12))))
    assert w.wait() == 1
    assert w.stderr_text().strip()
    assert w.conn.order == []


def test_stdout_carries_frames_only(worker):
    # load a model at startup (logs), run, fail: stdout must still parse as frames
    w, _ = worker({"runtime": "onnxruntime", "models": [SSD_CATALOG, {"path": "/nope.onnx"}]})
    w.conn.infer_jpeg(0, media_bytes("messi5.jpg"))
    w.conn.infer_raw(0, solid(40, 30))
    w.conn.command({"cmd": "load", "index": 2, "config": {"path": "/also/missing.onnx"}})
    w.conn.mem_stats()
    w.close_stdin()
    assert w.wait() == 0
    check_clean(w.conn)
    assert w.stderr_text().strip()  # the logs went to stderr
    # the ready reply went first and alone
    assert w.conn.order[0] == 0
