"""ospreyd watching cameras, for the tests of its cameras
(test_ospreyd_cameras*.py, test_ospreyd_camera_bounds.py): a daemon
started on a --config file with its log collected, the site config, and
its event records and per-camera counts read back."""
import json
import os
import re
import signal
import subprocess
import threading
import time

import pytest

from assets import BIN
from ospreyd_client import free_port  # noqa: F401 (for the camera tests)


class Daemon:
    """ospreyd --config FILE, its log lines collected as they come."""

    def __init__(self, tmp_path, config, env=None, args=()):
        path = tmp_path / "site.json"
        path.write_text(json.dumps(config))
        self.proc = subprocess.Popen([str(BIN / "ospreyd"), "--config", str(path), *map(str, args)],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True,
                                     env=dict(os.environ, **(env or {})))
        self.out, self.err = [], []
        self.pumps = [threading.Thread(target=lambda f=f, into=into: into.extend(f), daemon=True)
                      for f, into in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))]
        for t in self.pumps:
            t.start()

    def log(self):
        return "".join(self.err)

    def stdout(self):
        return "".join(self.out)

    def wait_for(self, pred, what, timeout=120):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if pred(self.log()):
                return
            assert self.proc.poll() is None, f"ospreyd exited {self.proc.returncode}:\n{self.log()}"
            time.sleep(0.1)
        raise AssertionError(f"no {what} in {timeout} s:\n{self.log()[-4000:]}")

    def until(self, pred, what, timeout=90):
        """pred()'s first true value, asked every 0.2 s (an OSError, a page
        not up yet, counts as false)."""
        end = time.monotonic() + timeout
        last = None
        while time.monotonic() < end:
            assert self.proc.poll() is None, f"ospreyd exited {self.proc.returncode}:\n{self.log()}"
            try:
                last = pred()
                if last:
                    return last
            except OSError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"no {what} in {timeout} s (last: {last}):\n{self.log()[-4000:]}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(60)
        for t in self.pumps:
            t.join(10)
        return rc

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def daemons():
    made = []
    yield lambda *a, **kw: made.append(Daemon(*a, **kw)) or made[-1]
    for d in made:
        d.kill()


def records(out):
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def events(out):
    """The event records of ospreyd's output (its line crossings left out)."""
    return [r for r in records(out) if "kind" not in r]


def crossings(out):
    """The line crossings of ospreyd's output, {"kind": "crossing", ...}."""
    return [r for r in records(out) if r.get("kind") == "crossing"]


def summary(log, name):
    m = re.search(rf"camera {name}: (\d+) frames in, (\d+) submitted, (\d+) detected, (\d+) shed, "
                  rf"(\d+) failed, (\d+) events, (\d+) reconnects, (\d+) skipped", log)
    assert m, log[-3000:]
    keys = ("frames_in", "submitted", "detected", "shed", "failed", "events", "reconnects",
            "skipped")
    out = dict(zip(keys, map(int, m.groups())))
    runs = re.search(rf"camera {name}: .*, (\d+) model runs, (\d+) region runs", log)
    if runs:
        out["runs"], out["region_runs"] = map(int, runs.groups())
    steps = re.search(rf"camera {name}: .*, (\d+) step runs", log)
    if steps:
        out["step_runs"] = int(steps.group(1))
    made = re.search(rf"camera {name}: .*, (\d+) made RGB", log)
    if made:
        out["made_rgb"] = int(made.group(1))
    return out


def cameras_at_end(d, names, page, timeout, sample=None):
    """Once every camera of names has logged its source's end (sample()
    asked every 0.25 s meanwhile, if given): /api/cameras's cameras by
    name, page() its (status, body); then d stopped, and killed whatever
    happened."""
    try:
        end = time.monotonic() + timeout
        while not all(f"camera {n}: the source ended" in d.log() for n in names):
            assert time.monotonic() < end, f"no end of {names} in {timeout} s:\n{d.log()[-4000:]}"
            assert d.proc.poll() is None, f"ospreyd exited {d.proc.returncode}:\n{d.log()[-4000:]}"
            if sample:
                sample()
            time.sleep(0.25)
        status, body = page()
        assert status == 200, body
        cams = {c["name"]: c for c in body["cameras"]}
        assert d.stop() == 0, d.log()[-3000:]
    finally:
        d.kill()
    return cams


def site(cameras, models=None):
    return {"runtime": "onnxruntime",
            "models": models or [{"model": "ssd-oidv4-int8"}],
            "cameras": cameras}
