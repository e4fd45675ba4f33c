"""A real mosquitto for the MQTT tests: a broker on loopback that wants a
login (a password file) on one listener and TLS (a certificate signed by a
CA the tests make with openssl) on another, its fixtures, and the
subscribers that read what osprey published (mosquitto_sub)."""
import shutil
import socket
import subprocess
import time

import pytest

from certs import make_certs
from ospreyd_client import free_port  # noqa: F401 (the tests take it from here too)

USER, PASSWORD = "ha", "s3cr3t-Pw"
TOPIC = "osprey/cam1"  # Broker.subscribe's


def wait_listening(port, proc, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            pytest.fail(f"mosquitto exited: {proc.stderr.read()}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    pytest.fail(f"mosquitto is not listening on {port}")


def need_exe(name):
    exe = shutil.which(name)
    if not exe:
        pytest.fail(f"{name} is missing: run scripts/bootstrap.sh (Debian packages mosquitto, "
                    "mosquitto-clients)")
    return exe


class Broker:
    """mosquitto with a password file on `port` and TLS on `tls_port`."""

    def __init__(self, d, certs):
        self.port, self.tls_port, self.certs = free_port(), free_port(), certs
        pw = d / "passwd"
        subprocess.run([need_exe("mosquitto_passwd"), "-b", "-c", str(pw), USER, PASSWORD],
                       check=True, capture_output=True)
        pw.chmod(0o600)
        conf = self.conf = d / "mosquitto.conf"
        conf.write_text(
            "user root\n"  # when run as root: stay root, to read the test's files
            # sessions and their queued records survive a restart (saved on exit)
            f"persistence true\npersistence_location {d}/\n"
            "per_listener_settings false\n"
            "allow_anonymous false\n"
            f"password_file {pw}\n"
            f"listener {self.port} 127.0.0.1\n"
            f"listener {self.tls_port} 127.0.0.1\n"
            f"cafile {certs.ca}\ncertfile {certs.cert}\nkeyfile {certs.key}\n")
        self.start()

    def start(self):
        self.proc = subprocess.Popen([need_exe("mosquitto"), "-c", str(self.conf)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wait_listening(self.port, self.proc)
        wait_listening(self.tls_port, self.proc)

    def subscribe(self, count, resume=False):
        """A subscriber (with the login, on the plain listener) for count
        records. Its session is one the broker keeps (clean session off,
        made and subscribed before this returns), so records published
        before the subscriber is connected, or while the broker restarts,
        are queued for it: no race with osprey's first publish. resume:
        the session exists already (and may hold records): just connect."""
        args = [need_exe("mosquitto_sub"), "-h", "127.0.0.1", "-p", str(self.port), "-u", USER,
                "-P", PASSWORD, "-t", TOPIC, "-q", "1", "-i", "osprey-test-sub", "-c"]
        if not resume:
            subprocess.run([*args, "-E"], check=True, capture_output=True, timeout=30)
        return subprocess.Popen([*args, "-C", str(count), "-W", "60"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("mqtt-certs"))


@pytest.fixture
def broker(tmp_path, certs):  # noqa: F811 (certs: the fixture above)
    b = Broker(tmp_path, certs)
    yield b
    b.close()


def sub_args(broker, client_id, *topics):
    args = [need_exe("mosquitto_sub"), "-h", "127.0.0.1", "-p", str(broker.port), "-u", USER,
            "-P", PASSWORD, "-q", "1", "-F", "%r %t %p"]
    if client_id:
        args += ["-i", client_id, "-c"]
    for t in topics:
        args += ["-t", t]
    return args


def session(broker, *topics):
    """A subscription the broker keeps (clean session off) made before
    osprey starts: every message from then on is queued for it."""
    subprocess.run([*sub_args(broker, "osprey-track-test", *topics), "-E"], check=True,
                   capture_output=True, timeout=30)


def drain(broker, *topics, client_id="osprey-track-test", wait=3):
    """The messages waiting for a session, or the retained ones (client_id
    None), as (retained, topic, payload) in the order they came. Queued
    messages come without the retained flag; the session's subscribing
    again brings the retained ones once more, flagged: left out."""
    r = subprocess.run([*sub_args(broker, client_id, *topics), "-W", str(wait)],
                       capture_output=True, text=True, timeout=60)
    out = []
    for line in r.stdout.splitlines():
        flag, topic, payload = line.split(" ", 2)
        if client_id is None or flag == "0":
            out.append((flag == "1", topic, payload))
    return out


@pytest.fixture
def pwfile(tmp_path):
    """The broker's password in a file only its owner reads."""
    f = tmp_path / "mqtt.pw"
    f.write_text(PASSWORD + "\n")
    f.chmod(0o600)
    return f
