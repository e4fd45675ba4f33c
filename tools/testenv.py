"""Where the tools' tests find ONNX Runtime and the asset cache.

`make check` names both (OSPREY_ORT_DIR, the ONNX Runtime scripts/bootstrap.sh
reported; OSPREY_CACHE), and there a missing input fails the test: set-up
must have made it. Run by hand without them, the tests look where
scripts/bootstrap.sh puts things and skip, with the reason, what they cannot
run."""
import os
import re

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.environ.get("OSPREY_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "osprey")


def _bootstrap_ort_version():
    with open(os.path.join(HERE, "..", "scripts", "bootstrap.sh")) as f:
        return re.search(r"^ORT_VERSION=(\S+)", f.read(), re.M).group(1)


ORT_DIR = os.environ.get("OSPREY_ORT_DIR") or os.path.join(CACHE, "onnxruntime", _bootstrap_ort_version())
ORT_LIB = os.path.join(ORT_DIR, "lib", "libonnxruntime.so.1")
ORT_HDR = os.path.join(ORT_DIR, "include", "onnxruntime_c_api.h")
UNDER_MAKE = bool(os.environ.get("OSPREY_ORT_DIR"))


def missing(why):
    """A test's input is not there: a failure under make check, else a skip."""
    if UNDER_MAKE:
        pytest.fail(why + " (make check sets it up: scripts/bootstrap.sh, scripts/fetch-assets.sh)")
    pytest.skip(why)
