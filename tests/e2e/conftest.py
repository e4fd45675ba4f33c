"""Shared fixtures for the end-to-end suite: the built binaries and the
real models and media of the asset cache (scripts/fetch-assets.sh)."""
import json
import os
import subprocess

import pytest

from assets import BIN, CACHE, MEDIA, ROOT, media, model, model_asset, need  # noqa: F401


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "serial: run alone, not beside another test (make check runs these after the "
        "others, one at a time): a peer's own deadline is part of what it checks")
    config.addinivalue_line(
        "markers", "clip: measures what a real model finds over a whole clip (accuracy, model "
        "runs a frame); a sanitizer build skips it")


def pytest_collection_modifyitems(config, items):
    """A sanitizer build (OSPREY_SANITIZE) skips the tests marked clip: they
    measure the model's findings, which a sanitizer does not change, and the
    code they run is run by the shorter tests at a fraction of the cost."""
    if not os.environ.get("OSPREY_SANITIZE"):
        return
    skip = pytest.mark.skip(reason="a whole clip's measure: run by the plain build only")
    for item in items:
        if item.get_closest_marker("clip"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def osprey():
    exe = BIN / "osprey"
    if not exe.exists():
        pytest.fail(f"{exe} is not built: run make")
    return exe


def run(exe, *args, timeout=900):  # a guard against a hang, not a speed test
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def lines(stdout: str):
    return [json.loads(l) for l in stdout.splitlines() if l.strip()]


def iou(a, b):
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0
