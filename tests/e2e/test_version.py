"""--version of both binaries: osprey's version, the git commit it was built
from, the ONNX Runtime it runs on and that runtime's execution providers."""
import ctypes
import re
import shutil
import subprocess

import pytest

from conftest import BIN, ROOT


def project_version():
    m = re.search(r"project\(osprey VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text())
    return m.group(1)


def loaded_ort_version(exe):
    """The version the ONNX Runtime library the binary links says it is,
    asked of the library itself (its C API base), not of osprey."""
    ldd = subprocess.run(["ldd", str(exe)], capture_output=True, text=True).stdout
    m = re.search(r"libonnxruntime\.so[.0-9]* => (\S+)", ldd)
    assert m, ldd
    lib = ctypes.CDLL(m.group(1))
    lib.OrtGetApiBase.restype = ctypes.POINTER(ctypes.c_void_p * 2)
    base = lib.OrtGetApiBase().contents
    return ctypes.CFUNCTYPE(ctypes.c_char_p)(base[1])().decode()


def version_fields(exe, *args):
    r = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r
    assert r.stderr == "", r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 4, r.stdout
    fields = dict(l.split(": ", 1) for l in lines[1:])
    return lines[0], fields


@pytest.mark.parametrize("prog,args", [("ospreyd", ["--version"]), ("osprey", ["--version"]),
                                       ("osprey", ["version"])])
def test_version_text(prog, args):
    exe = BIN / prog
    first, f = version_fields(exe, *args)
    assert first == f"{prog} {project_version()}"
    assert set(f) == {"git", "onnxruntime", "providers"}, f
    if (ROOT / ".git").exists() and shutil.which("git"):
        head = subprocess.run(["git", "-C", str(ROOT), "describe", "--tags", "--always"],
                              capture_output=True, text=True).stdout.strip()
        assert f["git"] == head or f["git"].startswith(head + "-dirty"), (f["git"], head)
    assert f["onnxruntime"] == loaded_ort_version(exe)
    providers = f["providers"].split(", ")
    assert "CPUExecutionProvider" in providers, providers
    assert all(p.endswith("ExecutionProvider") for p in providers), providers


def test_git_describe_outside_a_checkout(tmp_path):
    # a source tree without .git (a release tarball) builds, and says so
    out = tmp_path / "git_describe.h"
    r = subprocess.run(["cmake", f"-DSRC={tmp_path}", f"-DOUT={out}", "-P",
                        str(ROOT / "cmake" / "gitdescribe.cmake")], capture_output=True,
                       text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert '#define OSP_GIT_DESCRIBE "unknown"' in out.read_text()
