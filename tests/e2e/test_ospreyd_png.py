"""PNG frames on the wire (infer_jpeg takes PNG bytes, as the Python worker
did): a non-interlaced PNG goes into the tensor a row at a time, so a small
PNG that is huge decoded costs one row of memory; what is held whole (an
interlaced PNG, a JPEG after its scaled decode) is capped at 50 million
pixels (docs/security.md). The tensor is the one the whole frame gives."""
import struct
import zlib

import pytest

from ospreyd_client import (FMT_GRAY, model, Image, SSD_CATALOG, media_image, need, spawn,  # noqa: F401
                            tb_config, tb_script, worker)

# Adam7: (first column, first row, column step, row step) of each pass
ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
         (0, 1, 1, 2)]


def chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))


def png(w, h, rows, interlaced=False):
    """An 8-bit RGB PNG of w x h; rows(pass_w, pass_h, pass) yields each
    (sub-)image's rows of pass_w * 3 bytes (pass is None without interlace)."""
    z = zlib.compressobj(9)
    idat = []
    passes = [(p, (w - x0 + dx - 1) // dx, (h - y0 + dy - 1) // dy)
              for p, (x0, y0, dx, dy) in enumerate(ADAM7)] if interlaced else [(None, w, h)]
    for p, pw, ph in passes:
        if pw == 0 or ph == 0:
            continue
        for row in rows(pw, ph, p):
            idat.append(z.compress(b"\0" + row))
    idat.append(z.flush())
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 1 if interlaced else 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", b"".join(idat))
            + chunk(b"IEND", b""))


def zeros(pw, ph, p):
    row = bytes(pw * 3)
    return (row for _ in range(ph))


def rgb(img):
    if img.fmt != FMT_GRAY:
        return img
    return Image(img.w, img.h, 3, bytes(v for v in img.data for _ in range(3)))


def of_image(img, interlaced=False):
    """img (an RGB Image) as a PNG."""
    data, w = img.data, img.w

    def rows(pw, ph, p):
        x0, y0, dx, dy = ADAM7[p] if p is not None else (0, 0, 1, 1)
        for y in range(y0, img.h, dy):
            line = data[y * w * 3:(y + 1) * w * 3]
            yield b"".join(line[x * 3:x * 3 + 3] for x in range(x0, w, dx))
    return png(img.w, img.h, rows, interlaced)


def peak_kb(w):
    status = open(f"/proc/{w.proc.pid}/status").read()
    return int(next(ln.split()[1] for ln in status.splitlines() if ln.startswith("VmHWM:")))


@pytest.fixture
def tb(worker, tmp_path):
    w, _ = worker(tb_config([tb_script(tmp_path / "m.json", faces=[(0.9, [0.1, 0.1, 0.5, 0.5])])]))
    return w


def test_a_png_bomb_costs_a_row(tb):
    bomb = png(16384, 8192, zeros)  # 400 MB of pixels in under 1 MB
    assert len(bomb) < 1 << 20
    before = peak_kb(tb)
    rec = tb.conn.infer_jpeg(0, bomb)
    assert rec.get("frameSize") == "16384x8192", rec
    assert len(rec["detections"]) == 1, rec
    # its pixels whole would be 400 MB; a row is 48 KB
    assert peak_kb(tb) - before < 64 * 1024, (before, peak_kb(tb))
    assert tb.conn.mem_stats()["counters"]["errors"] == 0


def test_what_is_held_whole_is_capped(tb):
    bomb = png(8192, 8192, zeros, interlaced=True)  # 67 million pixels, 200 MB whole
    before = peak_kb(tb)
    rec = tb.conn.infer_jpeg(0, bomb)
    assert "8192x8192 is more than the 50000000 pixels held whole" in rec.get("error", ""), rec
    assert peak_kb(tb) - before < 64 * 1024
    # under the cap an interlaced PNG is decoded whole, as before
    small = png(640, 480, zeros, interlaced=True)
    assert tb.conn.infer_jpeg(0, small).get("frameSize") == "640x480"


def test_a_truncated_png_is_an_error_between_rows(tb):
    stripes = (bytes(range(256)) * 24)[:2000 * 3]
    whole = png(2000, 2000, lambda pw, ph, p: (stripes for _ in range(ph)))
    cut = whole[:len(whole) // 2]
    rec = tb.conn.infer_jpeg(0, cut)
    assert rec.get("error", "").startswith("jpeg decode failed: png decode failed"), rec
    # and the worker is whole again for the next frame
    assert tb.conn.infer_jpeg(0, whole).get("frameSize") == "2000x2000"


def test_rows_give_the_tensor_of_the_whole_frame(worker):
    """The SSD on chelsea and basketball1: PNG bytes row by row, the same
    PNG interlaced (held whole) and the raw pixels give the same answer."""
    model("ssd-oidv4")
    w, _ = worker({"runtime": "onnxruntime", "models": [SSD_CATALOG]})
    for name in ("chelsea.png", "basketball1.png"):
        img = rgb(media_image(name))
        raw = w.conn.infer_raw(0, img)
        rows = w.conn.infer_jpeg(0, of_image(img))
        whole = w.conn.infer_jpeg(0, of_image(img, interlaced=True))
        assert raw["detections"], raw
        assert "detections" in rows and "detections" in whole, (rows, whole)
        assert rows["detections"] == raw["detections"] == whole["detections"], (rows, raw, whole)
