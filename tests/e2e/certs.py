"""Self-signed TLS material for the end-to-end tests, made with the openssl
command in a temporary folder: a CA, a server certificate it signs for
127.0.0.1 and localhost, and a second CA that signed nothing of it."""
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class Certs:
    ca: Path          # the CA that signed server.crt
    other_ca: Path    # a CA that did not
    cert: Path        # the server's certificate (CN localhost, SAN 127.0.0.1)
    key: Path


def _openssl(*args, cwd):
    exe = shutil.which("openssl")
    if not exe:
        pytest.fail("the openssl command is missing (Debian package openssl)")
    subprocess.run([exe, *map(str, args)], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_certs(d: Path) -> Certs:
    d.mkdir(parents=True, exist_ok=True)
    for name in ("ca", "other"):
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                 "-subj", f"/CN=osprey test {name} CA", "-keyout", f"{name}.key",
                 "-out", f"{name}.crt", cwd=d)
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                               "basicConstraints=CA:FALSE\n")
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
             "-keyout", "server.key", "-out", "server.csr", cwd=d)
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-days", "2", "-extfile", "san.ext", "-out", "server.crt", cwd=d)
    for f in d.iterdir():
        f.chmod(0o644)  # the broker may run as another user
    return Certs(d / "ca.crt", d / "other.crt", d / "server.crt", d / "server.key")
