"""A small host for ospreyd, the pool worker, as the end-to-end tests drive it.

It spawns the real binary (stdio or `--listen` sockets), writes request frames,
reads reply frames on a background thread and hands them out by req_id with a
timeout, so a hung worker fails a test instead of hanging the suite. Every
process it starts is killed at teardown (the `spawn` fixture).

Wire (docs/protocol.md), little-endian:
  request  [u32 total_len][u32 req_id][u8 msg_type][payload], total_len = 5 + len(payload)
  reply    [u32 total_len][u32 req_id][JSON],                 total_len = 4 + len(JSON)
At wire v2 the sheddable types (1, 2, 3, 5) start their payload with a u64
absolute deadline in epoch milliseconds (0 = none).

Also here: a pure-Python PNG reader (zlib + the five filters) that turns the
media PNGs into raw pixels for infer_raw, and the JPEG-to-RGB helper built
from fixtures/jpeg2rgb.c with libturbojpeg.
"""
import http.client
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import select
import tempfile
import threading
import time
import zlib
from pathlib import Path

import pytest

from assets import BIN, CACHE, MEDIA, ROOT, media, model, model_asset, need  # noqa: F401

HERE = Path(__file__).resolve().parent
# "address" or "thread" when the binaries under test are a sanitizer build
# (make check SANITIZE=..., make check-tsan): much slower, so a test that
# needs the server overloaded may not get there.
SANITIZED = os.environ.get("OSPREY_SANITIZE", "")
FIXTURES = HERE / "fixtures"

MSG_COMMAND, MSG_JPEG, MSG_RAW, MSG_BATCH, MSG_CACHE, MSG_CACHED = 0, 1, 2, 3, 4, 5
SHEDDABLE = {MSG_JPEG, MSG_RAW, MSG_BATCH, MSG_CACHED}
FMT_RGB, FMT_BGR, FMT_GRAY = 0, 1, 2
EVENT_ID = 0xFFFFFFFF
TIMEOUT = float(os.environ.get("OSPREYD_TEST_TIMEOUT", "30"))

# The person in messi5.jpg (548x342), as test_detect.py pins it.
MESSI_PERSON = [73, 57, 456, 342]

# The SSD detector given the seed's way (a path and its preprocessing keys)
# and osprey's way (a catalog name, an extension).
def ssd_path_config():
    return {"path": str(model("ssd-oidv4")), "postprocessor": "ssd", "inputSize": 300,
            "preprocessMode": "resize", "mean": 127.5, "std": 127.5}


SSD_CATALOG = {"model": "ssd-oidv4"}
ULTRAFACE_CATALOG = {"model": "ultraface"}

DROPPED_DEADLINE = {"kind": "detections", "detections": [], "inferenceMs": 0, "dropped": True,
                    "shedReason": "deadline-expired"}
DROPPED_QUEUE = {"kind": "detections", "detections": [], "inferenceMs": 0, "dropped": True,
                 "shedReason": "queue-full"}


def ospreyd_exe() -> Path:
    exe = BIN / "ospreyd"
    if not exe.exists():
        pytest.fail(f"{exe} is not built: run make")
    return exe


def now_ms() -> int:
    return int(time.time() * 1000)


def iou(a, b):
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def python_json(obj) -> bytes:
    """The bytes Python's json.dumps writes (", " and ": ", ensure_ascii)."""
    return json.dumps(obj).encode()


# ---- payload builders ---------------------------------------------------------

def frame(req_id: int, msg_type: int, payload: bytes = b"") -> bytes:
    return struct.pack("<IIB", 5 + len(payload), req_id, msg_type) + payload


def deadline_prefix(deadline_ms: int) -> bytes:
    return struct.pack("<Q", deadline_ms)


def p_jpeg(model_idx: int, jpeg: bytes) -> bytes:
    return bytes([model_idx]) + jpeg


def p_raw(model_idx: int, w: int, h: int, fmt: int, pixels: bytes) -> bytes:
    return struct.pack("<BIIB", model_idx, w, h, fmt) + pixels


def p_batch(model_idx: int, items, frame_id: int = 0, count=None) -> bytes:
    """items: [(w, h, fmt, pixels)]; count overrides the declared item count."""
    out = struct.pack("<BBI", model_idx, len(items) if count is None else count, frame_id)
    for w, h, fmt, pixels in items:
        out += struct.pack("<IIBI", w, h, fmt, len(pixels)) + pixels
    return out


def p_cache(frame_id: int, w: int, h: int, fmt: int, pixels: bytes) -> bytes:
    return struct.pack("<IIIB", frame_id, w, h, fmt) + pixels


def p_cached(model_idx: int, frame_id: int) -> bytes:
    return struct.pack("<BI", model_idx, frame_id)


# ---- images -------------------------------------------------------------------

class Image:
    """Raw 8-bit pixels, RGB or GRAY, row-major, no padding."""

    def __init__(self, w, h, channels, data):
        self.w, self.h, self.channels, self.data = w, h, channels, bytes(data)

    @property
    def fmt(self):
        return FMT_GRAY if self.channels == 1 else FMT_RGB

    def bgr(self) -> bytes:
        assert self.channels == 3
        b = bytearray(self.data)
        b[0::3], b[2::3] = self.data[2::3], self.data[0::3]
        return bytes(b)

    def gray_from_rgb(self) -> "Image":
        d = self.data
        g = bytes((299 * d[i] + 587 * d[i + 1] + 114 * d[i + 2] + 500) // 1000
                  for i in range(0, len(d), 3))
        return Image(self.w, self.h, 1, g)


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def read_png(path) -> Image:
    """Decode an 8-bit non-interlaced PNG (gray, RGB, gray+alpha, RGBA) to
    GRAY or RGB (alpha dropped)."""
    data = Path(path).read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG")
    pos, idat, hdr = 8, [], None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    w, h, depth, ctype, _, _, interlace = hdr
    if depth != 8 or interlace != 0 or ctype not in (0, 2, 4, 6):
        raise ValueError(f"{path}: unsupported PNG (depth {depth}, type {ctype}, interlace {interlace})")
    bpp = {0: 1, 2: 3, 4: 2, 6: 4}[ctype]
    raw = zlib.decompress(b"".join(idat))
    stride = w * bpp
    out = bytearray(h * stride)
    prev = bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif f == 2:
            for i in range(stride):
                line[i] = (line[i] + prev[i]) & 255
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif f == 4:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                upleft = prev[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + _paeth(left, prev[i], upleft)) & 255
        elif f != 0:
            raise ValueError(f"{path}: bad filter {f} on row {y}")
        out[y * stride:(y + 1) * stride] = line
        prev = line
    if ctype in (0, 2):
        return Image(w, h, 1 if ctype == 0 else 3, out)
    keep = 1 if ctype == 4 else 3
    px = bytearray()
    for i in range(0, len(out), bpp):
        px += out[i:i + keep]
    return Image(w, h, keep, px)


_JPEG2RGB = None
_JPEG2RGB_LOCK = threading.Lock()


def jpeg_to_rgb(path) -> Image:
    """Decode a JPEG with libturbojpeg (fixtures/jpeg2rgb.c, built once)."""
    global _JPEG2RGB
    with _JPEG2RGB_LOCK:
        if _JPEG2RGB is None:
            out = Path(tempfile.mkdtemp(prefix="ospreyd-e2e-")) / "jpeg2rgb"
            cc = shutil.which("cc") or shutil.which("gcc")
            if not cc:
                pytest.fail("no C compiler to build fixtures/jpeg2rgb.c")
            r = subprocess.run([cc, "-O2", "-o", str(out), str(FIXTURES / "jpeg2rgb.c"),
                                "-lturbojpeg"], capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                pytest.fail(f"cannot build jpeg2rgb (libturbojpeg0-dev?): {r.stderr}")
            _JPEG2RGB = out
    r = subprocess.run([str(_JPEG2RGB), str(path)], capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    w, h = struct.unpack("<II", r.stdout[:8])
    assert len(r.stdout) == 8 + w * h * 3
    return Image(w, h, 3, r.stdout[8:])


# ---- test-backend scripts -----------------------------------------------------

def tb_script(path: Path, *, run_delay_ms=0, load_delay_ms=0, load_block_file=None,
                      load_error=None, run_error=None, counter_file=None, run_block_file=None,
                      faces=(), side=32):
    """Write a test-backend script for an UltraFace-shaped model: input
    [1,3,side,side] float32, outputs scores [1,4,2] and boxes [1,4,4].
    faces: up to 4 (score, [x1,y1,x2,y2] normalised) the model "finds"."""
    sets = []
    for i, (score, box) in enumerate(faces):
        sets.append(("scores", {"at": [0, i, 1], "value": score}))
        for j, v in enumerate(box):
            sets.append(("boxes", {"at": [0, i, j], "value": v}))
    script = {
        "inputs": [{"name": "input", "dtype": "float32", "shape": [1, 3, side, side]}],
        "outputs": [
            {"name": "scores", "dtype": "float32", "shape": [1, 4, 2], "fill": 0,
             "set": [s for k, s in sets if k == "scores"]},
            {"name": "boxes", "dtype": "float32", "shape": [1, 4, 4], "fill": 0,
             "set": [s for k, s in sets if k == "boxes"]},
        ],
    }
    for key, value in (("run_delay_ms", run_delay_ms), ("load_delay_ms", load_delay_ms),
                       ("load_block_file", load_block_file), ("load_error", load_error),
                       ("run_error", run_error), ("counter_file", counter_file),
                       ("run_block_file", run_block_file)):
        if value:
            script[key] = str(value) if isinstance(value, Path) else value
    path.write_text(json.dumps(script))
    return {"path": str(path), "postprocessor": "ultraface"}


def counted_runs(counter_file: Path) -> int:
    if not counter_file.exists():
        return 0
    return len([l for l in counter_file.read_text().splitlines() if l.strip()])


# ---- connections ----------------------------------------------------------------

class Conn:
    """One protocol stream to the worker. A reader thread collects reply
    frames; `reply(req_id)` waits for the one answering req_id."""

    def __init__(self, rfile, write, name="conn", on_fail=None, close=None):
        self._rfile = rfile
        self._write = write
        self._close = close
        self.name = name
        self.on_fail = on_fail or (lambda: "")
        self.wire = 1
        self._next_id = 1
        self._cv = threading.Condition()
        self.replies = {}          # req_id -> [dict]
        self.raw = []              # (req_id, json bytes) in arrival order
        self.order = []            # req_ids in arrival order
        self.problems = []         # anything that is not a well-formed reply frame
        self.eof = False
        self._thread = threading.Thread(target=self._read_loop, daemon=True)
        self._thread.start()

    # reading
    def _read_exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self._rfile(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf

    def _read_loop(self):
        try:
            while True:
                hdr = self._read_exact(8)
                if hdr is None:
                    break
                total, req_id = struct.unpack("<II", hdr)
                if total < 4 or total > (256 << 20):
                    self.problems.append(f"bad reply header {hdr!r} (stdout not frames only?)")
                    break
                body = self._read_exact(total - 4)
                if body is None:
                    self.problems.append(f"reply to {req_id} cut short")
                    break
                try:
                    obj = json.loads(body)
                except ValueError as e:
                    self.problems.append(f"reply to {req_id} is not JSON ({e}): {body[:200]!r}")
                    obj = {"__invalid__": body.decode("latin-1")}
                with self._cv:
                    self.replies.setdefault(req_id, []).append(obj)
                    self.raw.append((req_id, body))
                    self.order.append(req_id)
                    self._cv.notify_all()
        except (OSError, ValueError):
            pass
        finally:
            with self._cv:
                self.eof = True
                self._cv.notify_all()

    def _fail(self, msg):
        pytest.fail(f"{self.name}: {msg}\n{self.on_fail()}")

    def wait_for(self, pred, timeout=TIMEOUT, what="a condition"):
        end = time.monotonic() + timeout
        with self._cv:
            while not pred():
                if self.eof:
                    self._fail(f"stream closed while waiting for {what}")
                left = end - time.monotonic()
                if left <= 0:
                    self._fail(f"timed out after {timeout}s waiting for {what}")
                self._cv.wait(min(left, 0.5))

    def reply(self, req_id, timeout=TIMEOUT):
        self.wait_for(lambda: req_id in self.replies, timeout, f"the reply to req_id {req_id}")
        return self.replies[req_id][0]

    def has_reply(self, req_id):
        with self._cv:
            return req_id in self.replies

    def event(self, timeout=TIMEOUT, index=0):
        """The index-th unsolicited event (req_id 0xFFFFFFFF)."""
        self.wait_for(lambda: len(self.replies.get(EVENT_ID, [])) > index, timeout,
                      "an unsolicited event on req_id 0xFFFFFFFF")
        return self.replies[EVENT_ID][index]

    def wait_closed(self, timeout=TIMEOUT):
        self.wait_for(lambda: self.eof, timeout, "the worker to close the stream")

    # writing
    def new_id(self):
        rid = self._next_id
        self._next_id += 1
        return rid

    def send_bytes(self, data: bytes):
        self._write(data)

    def send_in_pieces(self, data: bytes, cuts, pause=0.05):
        """data written up to each offset in cuts in turn (the last piece runs
        to the end), pausing after each so the reader empties the pipe."""
        at = 0
        for cut in [*cuts, len(data)]:
            self._write(data[at:cut])
            at = cut
            time.sleep(pause)

    def send(self, msg_type, payload=b"", req_id=None, deadline=0, prefix=True):
        """Send one request; at v2 a sheddable payload gets its deadline
        prefix unless prefix=False. Returns the req_id."""
        if req_id is None:
            req_id = self.new_id()
        if prefix and self.wire >= 2 and msg_type in SHEDDABLE:
            payload = deadline_prefix(deadline) + payload
        self._write(frame(req_id, msg_type, payload))
        return req_id

    def request(self, msg_type, payload=b"", timeout=TIMEOUT, **kw):
        return self.reply(self.send(msg_type, payload, **kw), timeout)

    def hello(self, config=None, req_id=0, timeout=120):
        """The startup handshake; sets the effective wire version."""
        config = {} if config is None else config
        self.send(MSG_COMMAND, json.dumps(config).encode(), req_id=req_id)
        ready = self.reply(req_id, timeout)
        declared = config.get("protocolVersion", 1)
        try:
            declared = int(declared or 1)
        except (TypeError, ValueError):
            declared = 1
        if isinstance(ready.get("protocolVersion"), int):
            self.wire = max(1, min(ready["protocolVersion"], declared))
        return ready

    def command(self, cmd: dict, timeout=TIMEOUT, **kw):
        return self.request(MSG_COMMAND, json.dumps(cmd).encode(), timeout=timeout, **kw)

    def send_command(self, cmd: dict, **kw):
        return self.send(MSG_COMMAND, json.dumps(cmd).encode(), **kw)

    def infer_jpeg(self, model_idx, jpeg, **kw):
        return self.request(MSG_JPEG, p_jpeg(model_idx, jpeg), **kw)

    def infer_raw(self, model_idx, img: Image, fmt=None, **kw):
        fmt = img.fmt if fmt is None else fmt
        pixels = img.bgr() if fmt == FMT_BGR else img.data
        return self.request(MSG_RAW, p_raw(model_idx, img.w, img.h, fmt, pixels), **kw)

    def infer_batch(self, model_idx, images, frame_id=0, **kw):
        items = [(im.w, im.h, im.fmt, im.data) for im in images]
        return self.request(MSG_BATCH, p_batch(model_idx, items, frame_id), **kw)

    def cache_frame(self, frame_id, img: Image, **kw):
        return self.request(MSG_CACHE, p_cache(frame_id, img.w, img.h, img.fmt, img.data), **kw)

    def infer_cached(self, model_idx, frame_id, **kw):
        return self.request(MSG_CACHED, p_cached(model_idx, frame_id), **kw)

    def mem_stats(self, **kw):
        return self.command({"cmd": "mem_stats"}, **kw)

    def status(self, **kw):
        return self.command({"cmd": "status"}, **kw)

    def close(self):
        if self._close:
            self._close()

    def all_answered_once(self, req_ids):
        missing = [r for r in req_ids if r not in self.replies]
        twice = [r for r in req_ids if len(self.replies.get(r, [])) > 1]
        return missing, twice


class Worker:
    """One ospreyd process. stdio mode: `.conn` speaks over its stdin/stdout."""

    def __init__(self, args=(), workdir=None, stdio=True, env=None):
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="ospreyd-e2e-"))
        self.stderr_path = self.workdir / f"ospreyd-{id(self)}.stderr"
        self._stderr = open(self.stderr_path, "wb")
        self.args = [str(ospreyd_exe()), *map(str, args)]
        self.stdio = stdio
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.proc = subprocess.Popen(self.args, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._stderr, env=full_env,
                                     bufsize=0)
        self.conns = []
        self.conn = None
        if stdio:
            self._wlock = threading.Lock()
            self.conn = Conn(self.proc.stdout.read, self._write_stdin, name="stdio",
                             on_fail=self.describe)
            self.conns.append(self.conn)
        else:
            self._drain = threading.Thread(target=self._drain_stdout, daemon=True)
            self._drain.start()
            self.stdout_bytes = b""

    def _drain_stdout(self):
        while True:
            b = self.proc.stdout.read(65536)
            if not b:
                break
            self.stdout_bytes += b

    def _write_stdin(self, data):
        with self._wlock:
            try:
                fd = self.proc.stdin.fileno()
            except ValueError:
                return
            _write_all(fd, data, os.write, self.describe)

    def close_stdin(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass

    def stderr_text(self):
        try:
            return self.stderr_path.read_text(errors="replace")
        except OSError:
            return ""

    def describe(self):
        rc = self.proc.poll()
        tail = "\n".join(self.stderr_text().splitlines()[-25:])
        return f"[ospreyd {' '.join(self.args[1:])} | exit {rc}]\nstderr tail:\n{tail}"

    def wait(self, timeout=TIMEOUT):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"ospreyd did not exit within {timeout}s\n{self.describe()}")

    def signal(self, sig=signal.SIGTERM):
        self.proc.send_signal(sig)

    def alive(self):
        return self.proc.poll() is None

    def serving(self, line, host_sock=None, timeout=120):
        """Wait until stderr says `line` (a front end is up); with host_sock,
        attach a pipe-protocol host there (.host) for mem_stats."""
        end = time.monotonic() + timeout
        while line not in self.stderr_text():
            if not self.alive() or time.monotonic() > end:
                pytest.fail(f"ospreyd never said {line!r}\n{self.describe()}")
            time.sleep(0.05)
        if host_sock is not None:
            self.host = self.connect_unix(host_sock)
            self.host.hello({})
        return self

    def counters(self):
        """mem_stats counters, through the host serving() attached."""
        return self.host.mem_stats()["counters"]

    # sockets
    def connect_unix(self, path, timeout=TIMEOUT):
        return self._connect(lambda: _unix(path), f"unix:{path}", timeout)

    def connect_tcp(self, port, host="127.0.0.1", timeout=TIMEOUT):
        return self._connect(lambda: socket.create_connection((host, port), timeout=5),
                             f"tcp:{host}:{port}", timeout)

    def _connect(self, make, name, timeout):
        end = time.monotonic() + timeout
        while True:
            try:
                s = make()
                break
            except OSError as e:
                if self.proc.poll() is not None:
                    pytest.fail(f"ospreyd exited before {name} accepted\n{self.describe()}")
                if time.monotonic() > end:
                    pytest.fail(f"cannot connect to {name}: {e}\n{self.describe()}")
                time.sleep(0.05)
        s.setblocking(False)
        wlock = threading.Lock()

        def write(data):
            with wlock:
                _write_all(s, data, lambda sock, b: sock.send(b), self.describe)

        def read(n):
            while True:
                try:
                    r, _, _ = select.select([s], [], [], 0.5)
                    if r:
                        return s.recv(min(n, 1 << 20))
                except BlockingIOError:
                    continue
                except (OSError, ValueError):
                    return b""

        def close():
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

        c = Conn(read, write, name=f"{name}#{len(self.conns)}", on_fail=self.describe, close=close)
        c.sock = s
        self.conns.append(c)
        return c

    def kill(self):
        for c in self.conns:
            if getattr(c, "sock", None) is not None:
                try:
                    c.sock.close()
                except OSError:
                    pass
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        if self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        try:
            self._stderr.close()
        except OSError:
            pass


def _write_all(target, data, send, describe, timeout=TIMEOUT):
    """Write everything, or fail the test when the worker stops reading for
    `timeout` seconds (a blocking write would hang the suite)."""
    fd = target
    if isinstance(fd, int):
        os.set_blocking(fd, False)
    view = memoryview(data)
    end = time.monotonic() + timeout
    while view:
        try:
            _, w, _ = select.select([], [fd], [], 0.5)
        except (OSError, ValueError):
            return
        if not w:
            if time.monotonic() > end:
                pytest.fail(f"the worker stopped reading: {len(view)} bytes unsent after "
                            f"{timeout}s\n{describe()}")
            continue
        try:
            n = send(target, view[:1 << 20])
        except BlockingIOError:
            continue
        except (BrokenPipeError, ConnectionResetError):
            return  # the worker went away; the reply check will say so
        view = view[n:]
        end = time.monotonic() + timeout


def _unix(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(str(path))
    except OSError:
        s.close()
        raise
    return s


def http_connection(port, timeout, source="127.0.0.1"):
    """An HTTP connection to 127.0.0.1:port, connected. A port nothing
    listens on yet can be reached from itself (the kernel may give the
    client that very port as its own, and the two ends meet: TCP's
    simultaneous open), which would read our own request back as the
    answer: that is refused here like the connection it stands for."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=(source, 0))
    c.connect()
    if c.sock.getsockname() == c.sock.getpeername():
        c.close()
        raise ConnectionRefusedError(f"port {port}: connected to itself, nothing listens there yet")
    return c


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def spawn(tmp_path):
    """spawn(*args, stdio=True) -> Worker; every worker is killed at teardown."""
    workers = []

    def make(*args, stdio=True, env=None):
        w = Worker(args, workdir=tmp_path, stdio=stdio, env=env)
        workers.append(w)
        return w

    yield make
    for w in workers:
        w.kill()


@pytest.fixture
def worker(spawn):
    """start(config) -> (Worker, ready) for a stdio worker after the handshake."""
    def start(config=None, *args):
        w = spawn(*args)
        ready = w.conn.hello(config)
        assert ready.get("status") == "ready", ready
        return w, ready
    return start


def detections_match(a, b, px=2.0, score=0.02):
    """Same labels in the same order, boxes within px, scores within score."""
    da, db = a["detections"], b["detections"]
    if len(da) != len(db):
        return False
    for x, y in zip(sorted(da, key=lambda d: -d["score"]), sorted(db, key=lambda d: -d["score"])):
        if x["label"] != y["label"] or abs(x["score"] - y["score"]) > score:
            return False
        if any(abs(p - q) > px for p, q in zip(x["box"], y["box"])):
            return False
    return True


def person(rec, min_score=0.40):
    people = [d for d in rec.get("detections", []) if d.get("label") == "Person"
              and d.get("score", 0) >= min_score]
    return max((iou(d["box"], MESSI_PERSON) for d in people), default=0.0)


_IMAGES = {}


def media_bytes(name) -> bytes:
    return need(MEDIA / name).read_bytes()


def media_image(name) -> Image:
    """A media file decoded to raw pixels (PNG here, JPEG via libturbojpeg)."""
    if name not in _IMAGES:
        path = need(MEDIA / name)
        _IMAGES[name] = read_png(path) if name.endswith(".png") else jpeg_to_rgb(path)
    return _IMAGES[name]


def solid(w, h, value=128, channels=3) -> Image:
    return Image(w, h, channels, bytes([value]) * (w * h * channels))


def check_clean(conn):
    """The stream held nothing but well-formed reply frames, each JSON text
    exactly as Python's json.dumps writes it."""
    assert not conn.problems, conn.problems
    assert_python_json(conn)


def assert_python_json(conn):
    """Every reply's JSON bytes are what Python's json.dumps writes."""
    bad = [(rid, body) for rid, body in conn.raw if python_json(json.loads(body)) != body]
    assert not bad, f"{len(bad)} replies not in json.dumps form, e.g. {bad[:3]}"


def tb_config(models, *, concurrency=1, timeout_ms=None, protocol=None, **extra):
    """A startup config for the test runtime."""
    cfg = {"runtime": "test", "models": models, "concurrency": concurrency}
    if timeout_ms is not None:
        cfg["modelLoadTimeoutMs"] = timeout_ms
    if protocol is not None:
        cfg["protocolVersion"] = protocol
    cfg.update(extra)
    return cfg
