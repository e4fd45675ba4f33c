"""Every error reply of the protocol, and that ospreyd serves on after each.

One worker per wire version serves the whole module (a real SSD at index 0);
each case sends one bad request, checks the exact reply, then checks that the
same stream still answers a good frame and a probe."""
import json
import struct

import pytest

from ospreyd_client import (model, MSG_BATCH, MSG_CACHE, MSG_CACHED, MSG_COMMAND, MSG_JPEG,
                            MSG_RAW, SSD_CATALOG, Worker, check_clean, deadline_prefix,
                            media_bytes, need, p_batch, p_cache, p_cached, p_raw, person, solid)

NOT_LOADED = {"error": "Model 3 not loaded", "kind": "detections", "detections": [],
              "inferenceMs": 0}


def _start(tmp_path_factory, version):
    model("ssd-oidv4")
    w = Worker(workdir=tmp_path_factory.mktemp(f"errors-v{version}"))
    ready = w.conn.hello({"runtime": "onnxruntime", "models": [SSD_CATALOG],
                          "protocolVersion": version})
    assert ready["status"] == "ready" and ready["models"] == 1, ready
    return w


@pytest.fixture(scope="module")
def v1(tmp_path_factory):
    w = _start(tmp_path_factory, 1)
    yield w
    w.kill()


@pytest.fixture(scope="module")
def v2(tmp_path_factory):
    w = _start(tmp_path_factory, 2)
    yield w
    w.kill()


def still_serving(w):
    c = w.conn
    assert w.alive(), w.describe()
    assert person(c.infer_jpeg(0, media_bytes("messi5.jpg"))) >= 0.7
    assert c.mem_stats()["status"] == "ok"
    check_clean(c)


ITEM = (4, 4, 0, bytes(48))

# (name, msg_type, payload, expected reply or a (key, prefix) check)
V1_CASES = [
    ("empty infer_jpeg", MSG_JPEG, b"", {"error": "empty infer_jpeg payload"}),
    ("jpeg decode", MSG_JPEG, b"\x00not a jpeg at all", ("error", "jpeg decode failed: ")),
    ("jpeg truncated", MSG_JPEG, b"\x00" + b"\xff\xd8\xff\xe0" + bytes(40),
     ("error", "jpeg decode failed: ")),
    ("infer_raw header", MSG_RAW, p_raw(0, 2, 2, 0, b"")[:9], {"error": "truncated infer_raw header"}),
    ("infer_raw empty", MSG_RAW, b"", {"error": "truncated infer_raw header"}),
    ("raw too few pixels", MSG_RAW, p_raw(0, 10, 10, 0, bytes(299)), ("error", "raw wrap failed: ")),
    ("raw gray too few", MSG_RAW, p_raw(0, 10, 10, 2, bytes(99)), ("error", "raw wrap failed: ")),
    ("raw no pixels", MSG_RAW, p_raw(0, 10, 10, 1, b""), ("error", "raw wrap failed: ")),
    ("infer_batch header", MSG_BATCH, b"\x00\x01\x00\x00\x00", {"error": "truncated infer_batch header"}),
    ("batch item header", MSG_BATCH, p_batch(0, [ITEM], count=2),
     {"error": "truncated batch item header", "results": []}),
    ("batch item header part", MSG_BATCH, p_batch(0, [ITEM], count=2) + bytes(12),
     {"error": "truncated batch item header", "results": []}),
    ("batch item payload", MSG_BATCH, p_batch(0, [ITEM])[:-1],
     {"error": "truncated batch item payload", "results": []}),
    ("batch item wrap", MSG_BATCH, p_batch(0, [(10, 10, 0, bytes(10))]),
     ("error", "raw wrap failed: ", {"results": []})),
    ("cache_frame header", MSG_CACHE, p_cache(1, 2, 2, 0, b"")[:12],
     {"error": "truncated cache_frame header"}),
    ("cache_frame wrap", MSG_CACHE, p_cache(1, 10, 10, 0, bytes(30)),
     ("error", "cache_frame wrap failed: ")),
    ("infer_cached header", MSG_CACHED, p_cached(0, 1)[:4], {"error": "truncated infer_cached header"}),
    ("not in cache", MSG_CACHED, p_cached(0, 424242), {"error": "frame 424242 not in cache"}),
    ("jpeg model not loaded", MSG_JPEG, b"\x03" + b"JPEG?", None),  # decode error or not-loaded
    ("raw model not loaded", MSG_RAW, p_raw(3, 4, 4, 0, bytes(48)), NOT_LOADED),
    ("batch model not loaded", MSG_BATCH, p_batch(3, [ITEM, ITEM]),
     {"error": "Model 3 not loaded", "results": []}),
    ("unknown msg_type 9", 9, b"abc", {"error": "unknown msg_type: 9"}),
    ("unknown msg_type 200", 200, b"", {"error": "unknown msg_type: 200"}),
    ("unknown command", MSG_COMMAND, b'{"cmd": "bogus"}',
     {"cmd": "bogus", "status": "error", "error": "Unknown command: bogus"}),
    ("command without cmd", MSG_COMMAND, b'{"index": 1}',
     {"cmd": "unknown", "status": "error", "error": "Unknown command: None"}),
    ("command not JSON", MSG_COMMAND, b"{not json", ("error", "", {"cmd": "unknown", "status": "error"})),
    ("reconfigure unloaded", MSG_COMMAND,
     b'{"cmd": "reconfigure", "index": 5, "config": {"nmsIouThreshold": 0.5}}',
     {"cmd": "reconfigure", "index": 5, "status": "error", "error": "model 5 is not loaded"}),
    ("unload unloaded", MSG_COMMAND, b'{"cmd": "unload", "index": 6}',
     {"cmd": "unload", "index": 6, "status": "ok"}),
]


def check(reply, expected):
    if isinstance(expected, dict):
        assert reply == expected
        assert list(reply) == list(expected)  # key order too
    elif isinstance(expected, tuple):
        key, prefix = expected[0], expected[1]
        rest = expected[2] if len(expected) > 2 else {}
        assert isinstance(reply.get(key), str) and reply[key].startswith(prefix), reply
        assert len(reply[key]) > len(prefix), reply
        # one prefix: the wire's, not the wire's and again the decoder's
        assert not prefix or not reply[key][len(prefix):].startswith(prefix), reply
        for k, v in rest.items():
            assert reply.get(k) == v, reply
        assert set(reply) == {key, *rest}, reply


@pytest.mark.parametrize("name,msg_type,payload,expected", V1_CASES, ids=[c[0] for c in V1_CASES])
def test_error_v1(v1, name, msg_type, payload, expected):
    rid = v1.conn.send(msg_type, payload)
    reply = v1.conn.reply(rid)
    if expected is None:
        assert reply.get("error", "").startswith(("jpeg decode failed: ", "Model 3 not loaded")), reply
    else:
        check(reply, expected)
    still_serving(v1)


def test_infer_cached_model_not_loaded(v1):
    c = v1.conn
    assert c.cache_frame(11, solid(8, 8))["status"] == "cached"
    assert c.infer_cached(3, 11) == {"error": "model 3 not loaded"}
    still_serving(v1)


def test_jpeg_model_not_loaded(v1):
    assert v1.conn.infer_jpeg(3, media_bytes("messi5.jpg")) == NOT_LOADED
    still_serving(v1)


def test_errors_counted(v1):
    before = v1.conn.mem_stats()["counters"]
    v1.conn.request(9, b"")
    v1.conn.request(MSG_JPEG, b"")
    after = v1.conn.mem_stats()["counters"]
    assert after["errors"] >= before["errors"] + 2, (before, after)


V2_CASES = [(t, n) for t in (MSG_JPEG, MSG_RAW, MSG_BATCH, MSG_CACHED) for n in (0, 1, 7)]


@pytest.mark.parametrize("msg_type,n", V2_CASES, ids=[f"type{t}-{n}bytes" for t, n in V2_CASES])
def test_truncated_deadline_prefix_v2(v2, msg_type, n):
    rid = v2.conn.send(msg_type, bytes(n), prefix=False)
    assert v2.conn.reply(rid) == {
        "error": f"truncated deadline prefix on msg_type={msg_type} ({n} bytes, need 8)"}
    still_serving(v2)


V2_AFTER_PREFIX = [
    ("empty infer_jpeg", MSG_JPEG, b"", {"error": "empty infer_jpeg payload"}),
    ("infer_raw header", MSG_RAW, bytes(9), {"error": "truncated infer_raw header"}),
    ("infer_batch header", MSG_BATCH, bytes(5), {"error": "truncated infer_batch header"}),
    ("infer_cached header", MSG_CACHED, bytes(4), {"error": "truncated infer_cached header"}),
    ("raw model not loaded", MSG_RAW, p_raw(3, 4, 4, 0, bytes(48)), NOT_LOADED),
]


@pytest.mark.parametrize("name,msg_type,payload,expected", V2_AFTER_PREFIX,
                         ids=[c[0] for c in V2_AFTER_PREFIX])
def test_error_after_deadline_prefix_v2(v2, name, msg_type, payload, expected):
    rid = v2.conn.send(msg_type, payload)  # the client adds the 8-byte prefix
    check(v2.conn.reply(rid), expected)
    still_serving(v2)


def test_v2_unprefixed_types(v2):
    c = v2.conn
    # commands and cache_frame never carry a prefix, unknown types neither
    assert c.request(MSG_COMMAND, b'{"cmd": "mem_stats"}')["status"] == "ok"
    assert c.request(MSG_CACHE, p_cache(1, 2, 2, 0, bytes(12)))["status"] == "cached"
    assert c.request(MSG_CACHE, b"abc") == {"error": "truncated cache_frame header"}
    assert c.request(7, b"") == {"error": "unknown msg_type: 7"}
    # a command whose payload happens to start like a deadline is still JSON
    assert c.request(MSG_COMMAND, deadline_prefix(0) + b"{}")["status"] == "error"
    assert c.request(MSG_COMMAND, json.dumps({"cmd": "status"}).encode())["cmd"] == "status"
    still_serving(v2)


BAD_COMMANDS = [
    {"cmd": "unload"},
    {"cmd": "reconfigure", "config": {"nmsIouThreshold": 0.5}},
    {"cmd": "load", "index": 1},
    {"cmd": "load", "index": 1, "config": {}},
    {"cmd": "load", "index": 1, "config": "ssd"},
    {"cmd": "load", "index": -1, "config": {"model": "ssd-oidv4"}},
    {"cmd": "load", "index": 256, "config": {"model": "ssd-oidv4"}},
    {"cmd": "load", "index": "one", "config": {"model": "ssd-oidv4"}},
    {"cmd": "replace", "index": 1, "config": {"model": "no-such-model"}},
    {"cmd": 5},
    ["not", "an", "object"],
]


@pytest.mark.parametrize("cmd", BAD_COMMANDS, ids=[json.dumps(c) for c in BAD_COMMANDS])
def test_bad_command_answered(v1, cmd):
    r = v1.conn.request(MSG_COMMAND, json.dumps(cmd).encode())
    assert r.get("status") == "error" and isinstance(r.get("error"), str) and r["error"], r
    assert "cmd" in r, r
    still_serving(v1)
    st = v1.conn.status()["models"]
    assert st[0]["loaded"] is True and all(m["loaded"] is False for m in st[1:]), st


def test_empty_batch(v1):
    assert v1.conn.request(MSG_BATCH, p_batch(0, [])) == {"results": []}
    still_serving(v1)


HOSTILE = [
    ("raw huge dims", MSG_RAW, p_raw(0, 0xFFFFFFFF, 0xFFFFFFFF, 0, bytes(12))),
    ("raw w*h*3 wraps 32 bits", MSG_RAW, p_raw(0, 0x10000, 0x5556, 0, bytes(8))),
    ("raw zero size", MSG_RAW, p_raw(0, 0, 0, 0, b"")),
    ("raw unknown format", MSG_RAW, p_raw(0, 2, 2, 7, bytes(12))),
    ("batch huge item size", MSG_BATCH, struct.pack("<BBIIIBI", 0, 1, 0, 4, 4, 0, 0xFFFFFFFF)),
    ("batch huge dims", MSG_BATCH, p_batch(0, [(0xFFFFFFFF, 0xFFFFFFFF, 0, bytes(12))])),
    ("cache huge dims", MSG_CACHE, p_cache(2, 0xFFFFFFFF, 0xFFFF, 0, bytes(12))),
    ("cache zero size", MSG_CACHE, p_cache(2, 0, 0, 0, b"")),
    ("jpeg of zeros", MSG_JPEG, b"\x00" + bytes(1000)),
]


@pytest.mark.parametrize("name,msg_type,payload", HOSTILE, ids=[c[0] for c in HOSTILE])
def test_hostile_payload_answered(v1, name, msg_type, payload):
    r = v1.conn.request(msg_type, payload)
    assert isinstance(r.get("error"), str) and r["error"], r
    still_serving(v1)
