"""A real redis-server for the fleet tests, started on a free loopback port
with a directory of its own, and a small RESP2 client to drive it (the
project installs redis-server, not a Python client). Nothing is skipped:
a missing redis-server fails the test that needs it, naming the package."""
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from ospreyd_client import free_port


class RedisError(Exception):
    pass


class Resp:
    """One connection; call(*args) sends a command and returns its reply
    (bytes, int, list, None; an error reply raises RedisError)."""

    def __init__(self, port, password=None, timeout=10):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""
        if password:
            self.call("AUTH", password)

    def close(self):
        self.sock.close()

    def call(self, *args):
        parts = [a if isinstance(a, bytes) else str(a).encode() for a in args]
        self.sock.sendall(b"*%d\r\n" % len(parts) +
                          b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts))
        return self._reply()

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("redis closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("redis closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            raise RedisError(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise RedisError(f"unexpected reply {line!r}")


class RedisServer:
    def __init__(self, workdir: Path, aof=False, password=None):
        exe = shutil.which("redis-server")
        if not exe:
            pytest.fail("redis-server is not installed: the fleet tests need Debian's redis-server "
                        "(scripts/bootstrap.sh installs it)")
        self.exe, self.dir, self.aof, self.password = exe, Path(workdir), aof, password
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.proc = None
        self.log = self.dir / "redis.log"
        self.start()

    def start(self):
        args = [self.exe, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir),
                "--save", "", "--logfile", str(self.log), "--daemonize", "no"]
        if self.aof:
            args += ["--appendonly", "yes", "--appendfsync", "always"]
        if self.password:
            args += ["--requirepass", self.password]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.monotonic() + 20
        while True:
            try:
                c = self.client()
                c.call("PING")
                c.close()
                return
            except (OSError, ConnectionError, RedisError):
                if self.proc.poll() is not None or time.monotonic() > end:
                    tail = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
                    pytest.fail(f"redis-server did not start on port {self.port}\n{tail}")
                time.sleep(0.05)

    def stop(self):
        """SIGTERM: redis flushes its AOF and exits."""
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def client(self):
        return Resp(self.port, self.password)

    def url(self, stream):
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/{stream}"


@pytest.fixture
def redis(tmp_path):
    servers = []

    def make(**kw):
        r = RedisServer(tmp_path / f"redis{len(servers)}", **kw)
        servers.append(r)
        return r

    yield make
    for r in servers:
        r.stop()


def fields(flat):
    """[k, v, k, v...] from a stream entry -> {str: bytes}."""
    return {flat[i].decode(): flat[i + 1] for i in range(0, len(flat), 2)}


def entries(c, stream):
    """Every entry of a stream: [(entry id, {field: bytes})]."""
    return [(e[0].decode(), fields(e[1])) for e in c.call("XRANGE", stream, "-", "+")]
