"""A cascade's faults in ospreyd (docs/cascades.md, "In ospreyd"): a step
that would start past the request's deadline is skipped, its fields left
out and counted; a step whose run does not return is covered by the
watchdog's bound, the model is reloaded with its cascade and later
frames get their steps' fields again. After each, every request received
is served, shed or answered with an error (mem_stats).

The models are the test backend's (a TEST DOUBLE, docs/test-backend.md):
the first is a test script that finds one face; the step's model is a
catalog name, so the catalog is pointed (OSPREY_CACHE) at a folder where
face-embed-batch.onnx is a test-backend script too: an "embedder" of 8 values
that can be made to sleep or hang."""
import json

from ospreyd_client import EVENT_ID, now_ms, solid, spawn, tb_config, tb_script  # noqa: F401

FACE = (0.9, [0.1, 0.1, 0.5, 0.5])
VEC = [1, 2, 3, 4, 5, 6, 7, 8]
NORM = sum(v * v for v in VEC) ** 0.5


def fake_catalog(tmp_path, **run):
    """A cache folder whose face-embed-batch.onnx is a test-backend script: input
    as the catalog's face-embed (1x3x112x112 float32), output 8 values."""
    models = tmp_path / "cache" / "models"
    models.mkdir(parents=True)
    script = {"inputs": [{"name": "input", "dtype": "float32", "shape": [1, 3, 112, 112]}],
              "outputs": [{"name": "embedding", "dtype": "float32", "shape": [1, 8],
                           "values": VEC}]}
    script.update({k: str(v) for k, v in run.items() if k.endswith("_file")})
    script.update({k: v for k, v in run.items() if not k.endswith("_file")})
    (models / "face-embed-batch.onnx").write_text(json.dumps(script))
    return {"OSPREY_CACHE": str(tmp_path / "cache")}


def start(spawn, env, first):
    w = spawn(env=env)
    ready = w.conn.hello(tb_config([first], protocol=2))
    assert ready.get("status") == "ready" and ready["models"] == 1, (ready, w.describe())
    return w


def balanced(c):
    req = c.mem_stats()["requests"]
    shed, errors = sum(req["shed"].values()), sum(req["errors"].values())
    assert req["received"] == req["served"] + shed + errors, req
    return req


def step_counts(c):
    (step,) = c.mem_stats()["cascades"]["0"]
    assert step["step"] == "face-embed" and step["depth"] == 0, step
    return step["runs"], step["skippedPastDeadline"]


def has_embedding(rec):
    (face,) = rec["detections"]
    assert len(face["box"]) == 4, rec
    assert len(face["embedding"]) == len(VEC), face
    assert max(abs(v * NORM - x) for v, x in zip(face["embedding"], VEC)) < 1e-4, face
    return face


def test_a_step_past_the_deadline_is_skipped(spawn, tmp_path):
    """The first model takes 3 s; the frame's deadline is 1.5 s away when
    sent, so it passes the gate before the run and is past when the step
    would start: the detection comes back without its embedding. (Under a
    load heavy enough to hold the frame 1.5 s before its run it is shed
    instead, as any late frame: tried again then.)"""
    first = tb_script(tmp_path / "slow.json", faces=[FACE], run_delay_ms=3000)
    first["then"] = [{"model": "face-embed"}]
    w = start(spawn, fake_catalog(tmp_path), first)
    c = w.conn
    has_embedding(c.infer_raw(0, solid(32, 32)))  # no deadline: the step runs
    assert step_counts(c) == (1, 0)
    for attempt in range(4):
        rec = c.infer_raw(0, solid(32, 32), deadline=now_ms() + 1500)
        if rec.get("shedReason") != "deadline-expired":
            break
    assert rec.get("detections"), rec
    (face,) = rec["detections"]
    assert set(face) == {"label", "class", "score", "box"}, face
    assert rec["frameSize"] == "32x32" and "error" not in rec, rec
    assert step_counts(c) == (1, 1)
    # the next frame with time to spare gets its step again
    has_embedding(c.infer_raw(0, solid(32, 32), deadline=now_ms() + 60000))
    assert step_counts(c) == (2, 1)
    req = balanced(c)
    assert req["served"] == 3 and sum(req["errors"].values()) == 0, req
    assert req["shed"]["deadlineExpired"] == attempt, req


def test_a_hanging_step_is_given_up_and_the_cascade_reloaded(spawn, tmp_path):
    """The step's run holds until a file exists: the run (the first model
    and its step) passes runTimeoutMs, is answered with an error and given
    up, and the model is reloaded with its cascade; once the step returns
    again, frames get their embeddings."""
    release = tmp_path / "step.release"
    env = fake_catalog(tmp_path, run_block_file=release)
    first = tb_script(tmp_path / "first.json", faces=[FACE])
    first.update(runTimeoutMs=800, then=[{"model": "face-embed"}])
    w = start(spawn, env, first)
    c = w.conn
    rec = c.infer_raw(0, solid(32, 32), timeout=30)
    assert "error" in rec and "abandoned" in rec["error"], rec
    assert rec["detections"] == [], rec
    ev = {}
    c.wait_for(lambda: any(e.get("event") == "model-reloaded" for e in c.replies.get(EVENT_ID, [])),
               30, "the model reloaded")
    for e in c.replies.get(EVENT_ID, []):
        ev.setdefault(e.get("event"), e)
    assert ev["run-timeout"]["reloading"] is True, ev
    assert ev["model-reloaded"]["ok"] is True, ev
    # reloaded with its cascade: its step is there, counted afresh
    assert c.status()["models"][0]["loaded"] is True
    assert step_counts(c) == (0, 0)
    release.write_text("")
    has_embedding(c.infer_raw(0, solid(32, 32), timeout=30))
    has_embedding(c.infer_raw(0, solid(32, 32), timeout=30))
    assert step_counts(c) == (2, 0)
    st = c.mem_stats()
    assert st["counters"]["runsAbandoned"] == 1, st["counters"]
    req = balanced(c)
    assert req["served"] == 2 and sum(req["errors"].values()) == 1, req
