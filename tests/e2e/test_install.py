"""make install: the installed tree runs on its own (its ONNX Runtime, its
catalog models), and its systemd unit passes systemd-analyze verify."""
import json
import os
import shutil
import socket
import subprocess
import time

import pytest

from conftest import BIN, MEDIA, model, ROOT, lines, need
from ospreyd_client import MSG_COMMAND, frame


# make install builds first, and a build may link the binaries again
# (the version it embeds): beside another test, that test's exec of a
# binary being written fails, so these run alone. A sanitizer build skips
# them: what they check is the files installed and where, and the binaries
# they run are checked under the sanitizer by the rest of the suite.
pytestmark = [pytest.mark.serial,
              pytest.mark.skipif(bool(os.environ.get("OSPREY_SANITIZE")),
                                 reason="an install's files: checked on the plain build")]


def make_install(prefix, destdir=None):
    """make install of the build under test (OSPREY_BIN's folder)."""
    args = ["make", "-s", "-C", str(ROOT), "install", f"BUILD={BIN.parent}", f"PREFIX={prefix}"]
    if destdir:
        args.append(f"DESTDIR={destdir}")
    r = subprocess.run(args, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    model("ssd-oidv4")
    prefix = tmp_path_factory.mktemp("install") / "usr"
    make_install(prefix)
    return prefix


def alone(tmp_path):
    """An environment with an empty cache: what the installed tree finds is its own."""
    return dict(os.environ, OSPREY_CACHE=str(tmp_path / "empty-cache"), HOME=str(tmp_path))


def test_installed_tree(installed):
    for exe in ("bin/osprey", "bin/ospreyd"):
        assert os.access(installed / exe, os.X_OK), exe
    assert list((installed / "lib/osprey").glob("libonnxruntime.so*"))
    assert (installed / "lib/sysusers.d/osprey.conf").read_text().count("\nu osprey ") == 1
    cfg = json.loads((installed / "etc/osprey/ospreyd.json").read_text())
    assert cfg["models"] == [{"model": "ssd-oidv4"}]
    assert (installed / "share/osprey/models/ssd-oidv4.onnx").stat().st_size == \
        model("ssd-oidv4").stat().st_size
    assert (installed / "share/osprey/models/ssd-oidv4.labels").exists()
    assert (installed / "share/doc/osprey/operations.md").exists()


def test_installed_binaries_run_alone(installed, tmp_path):
    env = alone(tmp_path)
    v = subprocess.run([installed / "bin/ospreyd", "--version"], capture_output=True, text=True,
                       env=env)
    assert v.returncode == 0 and "onnxruntime: " in v.stdout, v
    # the ONNX Runtime it loads is the one installed beside it
    ldd = subprocess.run(["ldd", installed / "bin/osprey"], capture_output=True, text=True).stdout
    assert f"{installed}/bin/../lib/osprey/libonnxruntime.so" in ldd, ldd
    # the catalog: models found in the installed share/osprey/models
    m = subprocess.run([installed / "bin/osprey", "models", "--json"], capture_output=True,
                       text=True, env=env)
    recs = {r["name"]: r for r in lines(m.stdout)}
    assert recs["ssd-oidv4"]["present"] is True, recs["ssd-oidv4"]
    assert recs["ssd-oidv4"]["path"] == str(installed / "share/osprey/models/ssd-oidv4.onnx")
    d = subprocess.run([installed / "bin/osprey", "detect", "--quiet", need(MEDIA / "messi5.jpg")],
                       capture_output=True, text=True, env=env, timeout=120)
    assert d.returncode == 0, d.stderr
    (rec,) = lines(d.stdout)
    assert any(x["label"] == "Person" and x["score"] >= 0.4 for x in rec["detections"]), rec
    # the same as the build detects with the cache's copy
    built = subprocess.run([BIN / "osprey", "detect", "--quiet", MEDIA / "messi5.jpg"],
                           capture_output=True, text=True, timeout=120)
    (ref,) = lines(built.stdout)
    assert rec["detections"] == ref["detections"]


def test_installed_daemon_serves_the_example_config(installed, tmp_path):
    # the unit's command line, on a socket of our own
    sock = tmp_path / "osprey.sock"
    p = subprocess.Popen([installed / "bin/ospreyd", "--listen", f"unix:{sock}", "--config",
                          installed / "etc/osprey/ospreyd.json"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=alone(tmp_path))
    try:
        end = time.monotonic() + 120
        while not sock.exists():
            assert p.poll() is None, p.stderr.read().decode()
            assert time.monotonic() < end, "no socket"
            time.sleep(0.05)
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(str(sock))
            s.sendall(frame(0, MSG_COMMAND, json.dumps({"protocolVersion": 2}).encode()))
            s.settimeout(60)
            hdr = b""
            while len(hdr) < 8:
                hdr += s.recv(8 - len(hdr))
            n = int.from_bytes(hdr[:4], "little") - 4
            reply = b""
            while len(reply) < n:
                reply += s.recv(n - len(reply))
        ready = json.loads(reply)
        assert ready["status"] == "ready", ready
    finally:
        p.terminate()
        p.wait(30)
    err = p.stderr.read().decode()
    assert "model ssd-oidv4 loaded on" in err, err
    assert not sock.exists()


def test_unit_passes_systemd_analyze_verify(installed):
    if not shutil.which("systemd-analyze"):
        pytest.fail("systemd-analyze is missing (apt-get install systemd)")
    unit = installed / "lib/systemd/system/ospreyd.service"
    text = unit.read_text()
    assert f"ExecStart={installed}/bin/ospreyd --listen unix:/run/osprey/osprey.sock " \
           f"--config {installed}/etc/osprey/ospreyd.json\n" in text, text
    for want in ("User=osprey\n", "Restart=on-failure\n", "RuntimeDirectory=osprey\n",
                 "NoNewPrivileges=yes\n", "ProtectSystem=strict\n", "ProtectHome=yes\n"):
        assert want in text, want
    # offline: no systemd needs to run; a key it does not know is a warning
    # on stderr, which fails this as an error would
    r = subprocess.run(["systemd-analyze", "verify", "--man=no", str(unit)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and r.stderr.strip() == "", r.stderr


def test_unit_with_a_typo_fails_verify(installed, tmp_path):
    # the check above can fail: the same unit with one misspelt key does not pass
    bad = tmp_path / "ospreyd.service"
    bad.write_text((installed / "lib/systemd/system/ospreyd.service").read_text()
                   .replace("ProtectHome=yes", "ProtectHomes=yes"))
    r = subprocess.run(["systemd-analyze", "verify", "--man=no", str(bad)], capture_output=True,
                       text=True, timeout=120)
    assert "ProtectHomes" in r.stderr


def test_destdir_stages_without_naming_the_stage(tmp_path):
    stage = tmp_path / "stage"
    make_install("/opt/osprey", destdir=stage)
    root = stage / "opt/osprey"
    assert os.access(root / "bin/ospreyd", os.X_OK)
    unit = (root / "lib/systemd/system/ospreyd.service").read_text()
    assert "ExecStart=/opt/osprey/bin/ospreyd " in unit and str(stage) not in unit
    assert (root / "etc/osprey/ospreyd.json").exists()
    # a second install keeps the operator's config
    (root / "etc/osprey/ospreyd.json").write_text('{"models": []}')
    make_install("/opt/osprey", destdir=stage)
    assert (root / "etc/osprey/ospreyd.json").read_text() == '{"models": []}'
