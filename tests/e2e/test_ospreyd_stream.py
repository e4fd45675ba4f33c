"""Streams in ospreyd (extension): a stateful sequence model (Silero VAD) on
pushed audio chunks; every push is answered at once with the newest reading
and its age, whatever the model is doing."""
import struct
import subprocess
import time
import wave

import pytest

from ospreyd_client import model_asset, need, spawn, worker  # noqa: F401

MSG_PUSH = 0x07
CHUNK = 512  # samples at 16 kHz per frame


def speech(tmp_path, text="the quick brown fox jumps over the lazy dog"):
    wav = tmp_path / "s.wav"
    subprocess.run(["espeak-ng", "-s", "150", "-w", str(wav), text], check=True)
    with wave.open(str(wav)) as f:
        rate, data = f.getframerate(), f.readframes(f.getnframes())
    samples = struct.unpack("<%dh" % (len(data) // 2), data)
    if rate != 16000:  # espeak-ng speaks at 22050 Hz: resample linearly
        n = int(len(samples) * 16000 / rate)
        samples = [samples[min(int(i * rate / 16000), len(samples) - 1)] for i in range(n)]
    return [s / 32768.0 for s in samples]


def push(conn, sid, chunk):
    return conn.send(MSG_PUSH, struct.pack("<I", sid) + struct.pack("<%df" % len(chunk), *chunk))


def test_vad_stream_answers_every_push_at_once(worker, tmp_path):
    model_asset("silero_vad_v5.onnx")
    w, _ = worker({"runtime": "onnxruntime", "models": []})
    c = w.conn
    opened = c.command({"cmd": "open_stream", "config": {"model": "silero-vad"}}, timeout=60)
    assert opened["status"] == "ok" and opened["frameLen"] == CHUNK, opened
    sid = opened["streamId"]
    voice = speech(tmp_path)
    silence = [0.0] * 16000
    audio = silence + voice + silence
    audio += [0.0] * (-len(audio) % CHUNK)
    chunks = [audio[i:i + CHUNK] for i in range(0, len(audio), CHUNK)]
    speech_frames = range(len(silence) // CHUNK, (len(silence) + len(voice)) // CHUNK + 1)
    ids = []
    for ch in chunks:
        ids.append(push(c, sid, ch))
        time.sleep(0.002)  # faster than real time: 32 ms of audio every ~2 ms
    recs = [c.reply(i, timeout=30) for i in ids]
    assert [r["pushed"] for r in recs] == list(range(1, len(chunks) + 1))
    assert all(r["accepted"] and r["streamId"] == sid for r in recs)
    live = [r for r in recs if not r["warmingUp"]]
    assert live, "no reading ever completed"
    for r in live:
        # a reading is for a frame already pushed, and its age says how far back
        assert 0 <= r["frame"] < r["pushed"] and r["ageFrames"] == r["pushed"] - 1 - r["frame"], r
        assert len(r["scores"]) == 1 and 0.0 <= r["scores"][0] <= 1.0
    loud = [r["frame"] for r in live if r["scores"][0] > 0.5]
    assert loud, "speech never detected"
    assert all(f in speech_frames or f - 20 in speech_frames for f in loud), (loud, speech_frames)
    quiet = [r["frame"] for r in live if r["frame"] < speech_frames[0] - 2]
    assert all(r["scores"][0] < 0.5 for r in live if r["frame"] in quiet)
    closed = c.command({"cmd": "close_stream", "streamId": sid})
    assert closed["status"] == "ok" and closed["pushed"] == len(chunks) and closed["windowsCompleted"] > 0
    # the stream is gone: with no stream open, 0x07 is an unknown type again
    assert c.reply(push(c, sid, [0.0] * CHUNK)) == {"error": "unknown msg_type: 7"}


def test_stream_errors(worker):
    model_asset("silero_vad_v5.onnx")
    w, _ = worker({"runtime": "onnxruntime", "models": []})
    c = w.conn
    bad = c.command({"cmd": "open_stream", "config": {"model": "nope"}})
    assert bad["status"] == "error" and "unknown model" in bad["error"]
    bad = c.command({"cmd": "open_stream", "config": {"path": "/missing.onnx", "frameLen": 4}}, timeout=30)
    assert bad["status"] == "error" and "/missing.onnx" in bad["error"]
    bad = c.command({"cmd": "open_stream", "config": {"path": "/x.onnx"}})
    assert bad["status"] == "error" and "frameLen" in bad["error"]
    sid = c.command({"cmd": "open_stream", "config": {"model": "silero-vad"}}, timeout=60)["streamId"]
    r = c.reply(c.send(MSG_PUSH, struct.pack("<I", sid) + b"\0" * 12))
    assert "takes 512 float32 values" in r["error"], r
    r = c.reply(c.send(MSG_PUSH, struct.pack("<I", sid + 5) + b"\0" * 2048))
    assert "is not open" in r["error"], r
    r = c.reply(c.send(MSG_PUSH, b"\1"))
    assert r == {"error": "truncated stream_push header"}
    assert c.command({"cmd": "close_stream", "streamId": sid + 9})["status"] == "error"
    assert c.mem_stats()["status"] == "ok"  # still serving
