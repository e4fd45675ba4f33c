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


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


# ONNX Runtime's uint8 x int8 kernels on x86 without VNNI add pairs of
# products in 16 bits, which saturate (255 * 127 * 2 > 32767): an int8
# model there does not compute the exact arithmetic its graph describes.
_FLAGS = _cpu_flags()
SATURATING_INT8 = "avx2" in _FLAGS and not ({"avx512_vnni", "avx_vnni"} & _FLAGS)
exact_int8 = pytest.mark.xfail(
    SATURATING_INT8, strict=True,
    reason="this CPU has AVX2 without VNNI: ONNX Runtime's int8 kernels saturate 16-bit pair sums")
