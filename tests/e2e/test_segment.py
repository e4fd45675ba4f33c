"""osprey segment end to end: real clips joined with FFmpeg must be cut at
the joins by the `scene` scorer and not inside the static-camera clip;
uniform chunk times are exact; a live replay with a slow describe stage
drops the oldest frames while a file loses none; the VLM stage against
vlm_stub.py (a TEST DOUBLE of an OpenAI-compatible server) sends the right
frames and prompts, keeps chunk order and aborts in flight on a stop; the
procedure checker's records and summary arrive."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import MEDIA, need, run, lines

HERE = Path(__file__).resolve().parent
FPS = 20


def ffmpeg(*args):
    exe = shutil.which("ffmpeg")
    if not exe:
        pytest.fail("the ffmpeg command is missing: run scripts/bootstrap.sh (Debian package ffmpeg)")
    subprocess.run([exe, "-v", "error", "-y", *map(str, args)], check=True, timeout=300)


def frame_count(path):
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_packets",
                          "-show_entries", "stream=nb_read_packets", "-of", "csv=p=0", str(path)],
                         capture_output=True, text=True, check=True).stdout
    return int(out.strip())


@pytest.fixture(scope="session")
def joined(tmp_path_factory):
    """vtest.avi + cockatoo.mp4 + cityCC0.mpg + Megamind.avi at 640x360,
    20 fps; returns (path, the join times in seconds)."""
    d = tmp_path_factory.mktemp("segment")
    parts, joins, total = [], [], 0
    for i, name in enumerate(["vtest.avi", "cockatoo.mp4", "cityCC0.mpg", "Megamind.avi"]):
        part = d / f"part{i}.avi"
        ffmpeg("-i", need(MEDIA / name), "-an", "-vf", f"scale=640:360,setsar=1,fps={FPS}",
               "-c:v", "mpeg4", "-q:v", "4", part)
        parts.append(part)
        total += frame_count(part)
        joins.append(total / FPS)
    lst = d / "list.txt"
    lst.write_text("".join(f"file '{p}'\n" for p in parts))
    out = d / "joined.avi"
    ffmpeg("-f", "concat", "-safe", "0", "-i", lst, "-c", "copy", out)
    return out, joins[:-1]


@pytest.fixture(scope="session")
def short_clip(tmp_path_factory):
    """The first 12 s of vtest.avi (10 fps, 120 frames)."""
    out = tmp_path_factory.mktemp("segment-short") / "short.avi"
    ffmpeg("-i", need(MEDIA / "vtest.avi"), "-t", "12", "-c:v", "mpeg4", "-q:v", "4", out)
    return out


def stats(stderr):
    for l in stderr.splitlines():
        if l.startswith('{"segment_stats"'):
            return json.loads(l)["segment_stats"]
    raise AssertionError(f"no stats line in: {stderr}")


def segment(osprey, *args, timeout=300):
    r = run(osprey, "segment", *args, timeout=timeout)
    assert r.returncode == 0, r.stderr
    return lines(r.stdout), stats(r.stderr)


def test_scene_cuts_at_every_join(osprey, joined):
    path, joins = joined
    recs, st = segment(osprey, path)
    assert st["frames_dropped"] == 0
    cuts = [r["end_time"] for r in recs[:-1]]
    for j in joins:
        near = [c for c in cuts if abs(c - j) <= 0.5]
        assert near, f"no cut within 0.5 s of the join at {j:.2f} s; cuts {cuts}"
    # Inside the static-camera clip only max-length cuts.
    for r in recs:
        if r["end_time"] < joins[0] - 0.5:
            assert r["cv_boundary_score"] < 0.8
            assert abs(r["end_time"] - r["start_time"] - 10.0) < 1.0 / FPS + 1e-6
    assert [r["chunk_idx"] for r in recs] == list(range(len(recs)))
    assert recs[-1]["end_time"] == pytest.approx(st["duration"])
    assert sum(r["frame_number"] for r in recs) == st["frames_read"]
    assert all(r["sensor_id"] == "joined" for r in recs)


def frame_diff_model(path):
    """A per-frame boundary model for --scorer: the mean absolute difference
    of the window's two frames, x8, capped at 1."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def const(name, value, dtype):
        return helper.make_node("Constant", [], [name],
                                value=numpy_helper.from_array(np.array(value, dtype=dtype), name))
    nodes = [
        const("shape2", [2, -1], np.int64), const("s0", [0], np.int64),
        const("s1", [1], np.int64), const("s2", [2], np.int64),
        const("k", 8.0, np.float32), const("one", 1.0, np.float32),
        const("shape11", [1, 1], np.int64),
        helper.make_node("Reshape", ["input", "shape2"], ["x"]),
        helper.make_node("Slice", ["x", "s0", "s1", "s0"], ["a"]),
        helper.make_node("Slice", ["x", "s1", "s2", "s0"], ["b"]),
        helper.make_node("Sub", ["b", "a"], ["d"]),
        helper.make_node("Abs", ["d"], ["ad"]),
        helper.make_node("ReduceMean", ["ad"], ["m"], keepdims=0),
        helper.make_node("Mul", ["m", "k"], ["y"]),
        helper.make_node("Min", ["y", "one"], ["yc"]),
        helper.make_node("Reshape", ["yc", "shape11"], ["output"]),
    ]
    graph = helper.make_graph(
        nodes, "framediff", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, "n"])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.save(model, str(path))
    return path


def test_onnx_scorer_cuts_at_every_join(osprey, joined, tmp_path):
    path, joins = joined
    model = frame_diff_model(tmp_path / "framediff.onnx")
    recs, st = segment(osprey, path, "--scorer", model)
    assert st["scores_skipped"] == 0 and st["frames_dropped"] == 0
    cuts = [r["end_time"] for r in recs[:-1]]
    for j in joins:
        assert [c for c in cuts if abs(c - j) <= 0.5], f"no cut near {j:.2f}: {cuts}"
    for r in recs:
        if r["end_time"] < joins[0] - 0.5:
            assert r["cv_boundary_score"] < 0.8
    assert sum(r["frame_number"] for r in recs) == st["frames_read"]
    r = run(osprey, "segment", path, "--scorer", tmp_path / "none.onnx")
    assert r.returncode == 2 and "none.onnx" in r.stderr


def test_static_camera_only_max_length_cuts(osprey):
    recs, st = segment(osprey, need(MEDIA / "vtest.avi"), "--max-length", "6",
                       "--camera", "cell-3")
    assert len(recs) == 14  # 79.5 s: 13 cuts at 6 s, then the rest
    for i, r in enumerate(recs[:-1]):
        assert r["start_time"] == pytest.approx(6.0 * i)
        assert r["end_time"] == pytest.approx(6.0 * (i + 1))
        assert r["cv_boundary_score"] < 0.8
        assert r["frame_number"] == 60
    assert recs[-1]["end_time"] == pytest.approx(79.5)
    assert {r["sensor_id"] for r in recs} == {"cell-3"}
    for k in ("response", "checker_result", "cv_execute_time", "vlm_execute_time",
              "pipeline_starting_timestamp", "pipeline_cv_ready_timestamp",
              "pipeline_chunk_end_timestamp", "pipeline_vlm_ready_timestamp"):
        assert k in recs[0]


def test_uniform_chunk_times_are_exact(osprey):
    recs, st = segment(osprey, need(MEDIA / "vtest.avi"), "--uniform", "3")
    assert len(recs) == 27
    for i, r in enumerate(recs):
        assert r["chunk_idx"] == i
        assert r["start_time"] == pytest.approx(3.0 * i, abs=1e-9)
        assert r["cv_boundary_score"] == 1.0
    for r in recs[:-1]:
        assert r["end_time"] == pytest.approx(r["start_time"] + 3.0, abs=1e-9)
        assert r["frame_number"] == 30
    assert recs[-1]["end_time"] == pytest.approx(79.5)
    assert recs[-1]["frame_number"] == 15
    assert st["frames_read"] == 795


def test_live_drops_oldest_file_loses_none(osprey, short_clip):
    slow = ["--max-length", "2", "--slow-describe-ms", "1000"]
    recs, st = segment(osprey, short_clip, "--live", "--speed", "4", *slow)
    assert st["frame_queue"] == 30
    assert st["frames_read"] == 120  # the source read everything
    assert st["frames_dropped"] > 0
    assert st["frames_described"] + st["frames_dropped"] == 120
    assert sum(r["frame_number"] for r in recs) == st["frames_described"]
    # The source never waited on the slow stage: it saw the last frame about
    # when a 4x replay reaches it (3 s), not after the describe backlog (>= 6 s).
    last_seen = max(r["pipeline_chunk_end_timestamp"] for r in recs)
    assert last_seen - recs[0]["pipeline_starting_timestamp"] < 4.5

    recs, st = segment(osprey, short_clip, *slow)
    assert st["frames_dropped"] == 0
    assert st["frames_described"] == 120
    assert sum(r["frame_number"] for r in recs) == 120


class Stub:
    def __init__(self, tmp_path, n, *args):
        self.log = tmp_path / f"stub{n}.jsonl"
        self.proc = subprocess.Popen([sys.executable, str(HERE / "vlm_stub.py"), "--log",
                                      str(self.log), *args], stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("PORT "), line
        self.url = f"http://127.0.0.1:{int(line.split()[1])}"

    def records(self):
        if not self.log.exists():
            return []
        return [json.loads(l) for l in self.log.read_text().splitlines() if l.strip()]

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture
def stub_factory(tmp_path):
    stubs = []

    def make(*args):
        s = Stub(tmp_path, len(stubs), *args)
        stubs.append(s)
        return s
    yield make
    for s in stubs:
        s.close()


def test_vlm_frames_prompts_and_order(osprey, short_clip, stub_factory, tmp_path):
    # The first chunk's reply comes last: the records must still be in order.
    stub = stub_factory("--delays", "1.0,0.6,0.3,0")
    pf = tmp_path / "prompt.txt"
    pf.write_text("from the file\n")
    recs, st = segment(osprey, short_clip, "--uniform", "2.5", "--vlm", stub.url,
                       "--vlm-model", "qwen-test", "--vlm-fps", "2", "--prompt", "what happens?",
                       "--prompt-file", pf, "--temperature", "0.2")
    seen = stub.records()
    assert seen[0]["warmup"] and seen[0]["images"] == 3
    reqs = sorted((r for r in seen if not r["warmup"]), key=lambda r: r["arrival"])
    # 2.5 s chunks at 2 frames/s of video at its real 10 fps: 5 frames; the
    # final 2 s chunk: 4.
    assert [r["images"] for r in reqs] == [5, 5, 5, 5, 4]
    for r in reqs:
        assert all(r["jpeg_ok"])
        assert r["prompt"] == ["what happens?"]
        assert r["system"] == ["Answer the questions."]
        assert r["max_tokens"] == 256 and r["temperature"] == pytest.approx(0.2)
        assert r["model"] == "qwen-test" and r["path"] == "/v1/chat/completions"
    assert [r["chunk_idx"] for r in recs] == [0, 1, 2, 3, 4]
    for r in recs:
        assert r["response"] == f"frames={r['vlm_frames']} prompt=what happens?"
    assert [r["vlm_frames"] for r in recs] == [5, 5, 5, 5, 4]
    assert recs[0]["vlm_execute_time"] >= 0.9

    # Without --prompt, the file's prompt.
    stub2 = stub_factory()
    recs, _ = segment(osprey, short_clip, "--uniform", "6", "--vlm", stub2.url + "/v1",
                      "--vlm-model", "m", "--prompt-file", pf)
    assert {tuple(r["prompt"]) for r in stub2.records() if not r["warmup"]} == {("from the file",)}


def test_stop_aborts_request_in_flight(osprey, stub_factory):
    stub = stub_factory("--delays", "60")
    p = subprocess.Popen([str(osprey), "segment", str(need(MEDIA / "vtest.avi")), "--uniform",
                          "2", "--vlm", stub.url, "--vlm-model", "m"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    while time.time() < deadline and not any(r.get("arrival") == 0 for r in stub.records()):
        time.sleep(0.05)
    assert any(r.get("arrival") == 0 for r in stub.records())
    t_stop = time.time()
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=30)
    aborted = [r for r in stub.records() if "aborted" in r]
    assert aborted, "the request in flight was not aborted"
    assert aborted[0]["t"] - t_stop < 1.0
    recs = lines(out)
    assert recs and recs[0]["vlm_error"] == "stopped"
    assert stats(err)["stopped"] is True


def test_procedure_check(osprey, short_clip, stub_factory, tmp_path):
    steps = {"steps": [
        {"id": "pick", "name": "pick up the part", "aliases": ["picks"]},
        {"id": "place", "name": "place in fixture", "aliases": ["places"]},
        {"id": "inspect", "name": "inspect", "aliases": ["inspects"]}]}
    actions = tmp_path / "actions.json"
    actions.write_text(json.dumps(steps))
    replies = tmp_path / "replies.txt"
    replies.write_text("The worker picks a part\nHe Inspects it\nThe worker places it\n"
                       "The worker picks a part\nnothing\nidle\n")
    stub = stub_factory("--replies", str(replies))
    recs, _ = segment(osprey, short_clip, "--uniform", "2", "--vlm", stub.url, "--vlm-model",
                      "m", "--vlm-concurrency", "1", "--procedure", actions)
    chunks, summary = recs[:-1], recs[-1]
    assert [r["checker_result"]["matched_step"] for r in chunks] == \
        ["pick", "inspect", "place", "pick", None, None]
    assert [v["type"] for v in chunks[1]["checker_result"]["violations"]] == ["skipped"]
    assert [v["type"] for v in chunks[2]["checker_result"]["violations"]] == ["out_of_order"]
    assert chunks[3]["checker_result"]["cycle_closed"]["complete"] is True
    assert summary["chunk_idx"] == -1
    s = summary["checker_result"]
    # pick, (place skipped), inspect: 2/3 >= 0.6, complete; then pick alone: 1/3.
    assert s["cycles"] == 2 and s["completed"] == 1
    assert s["cycle_completion"] == pytest.approx([2 / 3, 1 / 3])
    assert s["missing_steps"] == [[], ["place", "inspect"]]


def test_help_and_bad_input(osprey, tmp_path, stub_factory):
    r = run(osprey, "segment", "--help")
    assert r.returncode == 0 and "--max-length" in r.stdout and "--uniform" in r.stdout
    assert run(osprey, "segment", tmp_path / "none.avi").returncode == 2
    assert run(osprey, "segment", need(MEDIA / "vtest.avi"), "--vlm", "http://x").returncode == 2
    assert run(osprey, "segment", need(MEDIA / "vtest.avi"), "--uniform", "0").returncode == 2
    # Nothing listens on the VLM's port: the warm-up fails, exit 1.
    r = run(osprey, "segment", need(MEDIA / "vtest.avi"), "--vlm", "http://127.0.0.1:9",
            "--vlm-model", "m")
    assert r.returncode == 1 and "warm-up" in r.stderr


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(*cmd):
    exe = shutil.which(cmd[0])
    if not exe:
        pytest.fail(f"{cmd[0]} is missing: run scripts/bootstrap.sh (Debian packages mosquitto, "
                    "mosquitto-clients)")
    return subprocess.Popen([exe, *map(str, cmd[1:])], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)


def wait_port(port, proc, timeout=10):
    import socket
    end = time.time() + timeout
    while time.time() < end and proc.poll() is None:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    pytest.fail(f"mosquitto is not listening on {port}")


def mqtt_run(osprey, clip, port, broker_delay, tmp, *extra):
    """Segment clip into 1 s chunks published to a real mosquitto broker on
    loopback, started broker_delay seconds after osprey; returns osprey's
    records, its stderr and what a subscriber received. The subscriber's
    session is one the broker keeps (persistence, clean session off): made
    before osprey starts, it is queued for even when osprey publishes (or
    reconnects to the late broker) before the subscriber is back."""
    conf = tmp / "mosquitto.conf"
    conf.write_text(f"user root\nlistener {port} 127.0.0.1\nallow_anonymous true\n"
                    f"persistence true\npersistence_location {tmp}/\n")
    sub_args = ["mosquitto_sub", "-p", port, "-t", "seg/t", "-q", "1", "-i", "seg-sub", "-c"]
    procs = []
    try:
        broker = start("mosquitto", "-c", conf)
        procs.append(broker)
        wait_port(port, broker)
        made = start(*sub_args, "-E")  # subscribe, then leave the session behind
        made.communicate(timeout=30)
        if broker_delay:
            broker.terminate()
            broker.wait(timeout=10)
        else:
            sub = start(*sub_args, "-C", "12", "-W", "60")
            procs.append(sub)
        p = subprocess.Popen([str(osprey), "segment", str(clip), "--uniform", "1", "--mqtt",
                              f"mqtt://127.0.0.1:{port}/seg/t", *extra],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if broker_delay:
            time.sleep(broker_delay)
            broker = start("mosquitto", "-c", conf)
            procs.append(broker)
            wait_port(port, broker)
            sub = start(*sub_args, "-C", "12", "-W", "60")
            procs.append(sub)
        out, err = p.communicate(timeout=60)
        got, _ = sub.communicate(timeout=60)
        return lines(out), err, lines(got)
    finally:
        for q in procs:
            if q.poll() is None:
                q.terminate()
                q.wait(timeout=10)


def test_mqtt_every_record_once_in_order(osprey, short_clip, tmp_path):
    recs, err, got = mqtt_run(osprey, short_clip, free_port(), 0, tmp_path)
    assert [r["chunk_idx"] for r in got] == list(range(12))
    assert got == recs
    assert '"dropped": 0' in err


def test_mqtt_broker_down_at_start_is_retried(osprey, short_clip, tmp_path):
    # A live replay at 2x: the stages go on (every chunk printed on time)
    # while the records wait for the broker that comes up 1.5 s in.
    recs, err, got = mqtt_run(osprey, short_clip, free_port(), 1.5, tmp_path, "--live",
                              "--speed", "2")
    assert "retrying" in err
    assert len(recs) == 12
    assert [r["chunk_idx"] for r in got] == list(range(12))
