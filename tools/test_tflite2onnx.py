"""Tests for tools/tflite2onnx.py.  Run with Debian's Python:

    /usr/bin/python3 -m pytest -q tools/test_tflite2onnx.py

The converted ONNX model is run by ONNX Runtime's C library (tools/ort_run.c,
compiled here with `cc`) and compared with a small numpy interpreter of the
TFLite graph itself (NHWC, TFLite semantics, float64), which shares only the
flatbuffer reader with the converter.  Tests needing the ORT library, a C
compiler or the SSD model skip with a reason when those are missing.
"""

import os
import shutil
import struct
import subprocess
import sys
import time

import numpy as np
import pytest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tflite2onnx as t2o  # noqa: E402
from testenv import CACHE, ORT_DIR, ORT_HDR, ORT_LIB, missing  # noqa: E402

PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
CONVERTER = os.path.join(HERE, "tflite2onnx.py")
SSD = os.path.join(CACHE, "models", "ssd-oidv4.tflite")

TOL = 1e-3        # max abs diff allowed between ORT and the numpy reference


# ----------------------------------------------------------------------------
# numpy reference interpreter of a TFLite graph (NHWC, TFLite semantics)
# ----------------------------------------------------------------------------

def _tfl_pad(in_size, k, stride, dil, same):
    """TFLite padding: out size and (before, after); extra pixel at the end."""
    eff = dil * (k - 1) + 1
    if not same:
        return (in_size - eff + stride) // stride, (0, 0)
    out = (in_size + stride - 1) // stride
    total = max(0, (out - 1) * stride + eff - in_size)
    return out, (total // 2, total // 2 + total % 2)


def _act(x, act):
    if act == 0:
        return x
    if act == 1:
        return np.maximum(x, 0)
    if act == 2:
        return np.clip(x, -1, 1)
    if act == 3:
        return np.clip(x, 0, 6)
    raise AssertionError("activation %d" % act)


def _conv_nhwc(x, w, b, o, depthwise):
    n, h, wd, c = x.shape
    kh, kw = w.shape[1], w.shape[2]
    same = o["padding"] == 0
    oh, (pt, pb) = _tfl_pad(h, kh, o["stride_h"], o["dilation_h"], same)
    ow, (pl, pr) = _tfl_pad(wd, kw, o["stride_w"], o["dilation_w"], same)
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    sh, sw, dh, dw = o["stride_h"], o["stride_w"], o["dilation_h"], o["dilation_w"]
    if depthwise:
        mult = w.shape[3] // c
        xp = np.repeat(xp, mult, axis=3)          # channel c*mult+m reads input c
    out = np.zeros((n, oh, ow, w.shape[0] if not depthwise else w.shape[3]))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw, :]
            if depthwise:
                out += patch * w[0, i, j, :]
            else:
                out += patch @ w[:, i, j, :].T
    if b is not None:
        out += b
    return _act(out, o["act"])


def reference_run(model, x):
    """Execute the TFLite graph on x (NHWC) with numpy; returns the outputs."""
    vals = {}
    for t in model.tensors:
        if t.data is not None and len(t.data):
            dt = {0: "<f4", 1: "<f2", 2: "<i4", 4: "<i8"}[t.type]
            vals[t.index] = np.frombuffer(t.data, dtype=dt).reshape(t.shape).astype(
                np.float64 if t.type in (0, 1) else np.int64)
    vals[model.inputs[0]] = x.astype(np.float64)
    for op in model.operators:
        ins = [vals[i] if i >= 0 else None for i in op.inputs]
        name = op.name
        if name == "DEQUANTIZE":
            r = ins[0].astype(np.float64)
        elif name in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            r = _conv_nhwc(ins[0], ins[1], ins[2] if len(ins) > 2 else None, op.opts,
                           name == "DEPTHWISE_CONV_2D")
        elif name == "ADD":
            r = _act(ins[0] + ins[1], op.opts.get("act", 0))
        elif name == "CONCATENATION":
            r = _act(np.concatenate(ins, axis=op.opts["axis"]), op.opts.get("act", 0))
        elif name == "RESHAPE":
            shape = list(model.tensors[op.outputs[0]].shape)
            shape[0] = ins[0].shape[0]
            r = ins[0].reshape(shape)
        else:
            raise AssertionError("reference: op %s" % name)
        vals[op.outputs[0]] = r
    return [vals[i] for i in model.outputs]


# ----------------------------------------------------------------------------
# a tiny flatbuffer writer, to build small TFLite models by hand
# ----------------------------------------------------------------------------

class FT:
    """A table: {field_id: (kind, value)}; kinds b/B/i/I scalars, 'tab', 'tabs',
    'ints' (int32 vector), 'bytes', 'str'."""

    def __init__(self, **fields):
        self.fields = fields


def fb_build(root, ident=b"TFL3"):
    buf = bytearray(8)
    buf[4:8] = ident
    pending = [(0, root)]                 # (where to patch a uoffset, object)

    def align(n=4):
        while len(buf) % n:
            buf.append(0)

    def write(obj):
        align(8 if isinstance(obj, tuple) and obj[0] == "bytes" else 4)
        if isinstance(obj, FT):
            fids = sorted(int(k[1:]) for k in obj.fields)
            nf = fids[-1] + 1 if fids else 0
            vt_pos = len(buf)
            buf.extend(b"\0" * (4 + 2 * nf))
            align()
            tpos = len(buf)
            struct.pack_into("<HH", buf, vt_pos, 4 + 2 * nf, 4 + 4 * len(fids))
            buf.extend(struct.pack("<i", tpos - vt_pos))
            children = []
            for slot, fid in enumerate(fids):
                kind, v = obj.fields["f%d" % fid]
                fpos = tpos + 4 + 4 * slot
                struct.pack_into("<H", buf, vt_pos + 4 + 2 * fid, fpos - tpos)
                if kind in ("b", "B", "i", "I"):
                    buf.extend(struct.pack("<" + kind, v).ljust(4, b"\0"))
                else:
                    buf.extend(b"\0\0\0\0")
                    children.append((fpos, (kind, v)))
            return tpos, children
        kind, v = obj
        if kind == "tab":
            return write(v)
        pos = len(buf)
        if kind == "ints":
            buf.extend(struct.pack("<I%di" % len(v), len(v), *v))
            return pos, []
        if kind in ("bytes", "str"):
            raw = v.encode() if kind == "str" else bytes(v)
            if kind == "bytes":                  # keep the data 8-aligned
                while (len(buf) + 4) % 8:
                    buf.append(0)
                pos = len(buf)
            buf.extend(struct.pack("<I", len(raw)) + raw + (b"\0" if kind == "str" else b""))
            return pos, []
        if kind == "tabs":
            buf.extend(struct.pack("<I", len(v)) + b"\0" * (4 * len(v)))
            return pos, [(pos + 4 + 4 * i, e) for i, e in enumerate(v)]
        raise ValueError(kind)

    while pending:
        at, obj = pending.pop(0)
        pos, children = write(obj)
        struct.pack_into("<I", buf, at, pos - at)
        pending.extend(children)
    return bytes(buf)


def tiny_tflite(tensors, ops, inputs, outputs, buffers):
    """tensors: (name, shape, type, buffer); ops: (builtin, ins, outs, opts_type, FT);
    buffers: list of bytes (buffer 0 should be empty)."""
    codes = sorted({o[0] for o in ops})
    op_tabs = []
    for code, ins, outs, otype, opts in ops:
        f = dict(f0=("I", codes.index(code)), f1=("ints", ins), f2=("ints", outs))
        if opts is not None:
            f.update(f3=("B", otype), f4=("tab", opts))
        op_tabs.append(FT(**f))
    sg = FT(f0=("tabs", [FT(f0=("ints", s), f1=("b", ty), f2=("I", b), f3=("str", n))
                         for n, s, ty, b in tensors]),
            f1=("ints", inputs), f2=("ints", outputs), f3=("tabs", op_tabs), f4=("str", "main"))
    root = FT(f0=("I", 3),
              f1=("tabs", [FT(f0=("b", min(c, 127)), f2=("i", 1), f3=("i", c)) for c in codes]),
              f2=("tabs", [sg]), f3=("str", "hand-built"),
              f4=("tabs", [FT(f0=("bytes", b)) if b else FT() for b in buffers]))
    return fb_build(root)


def small_model(rng):
    """input [1,7,9,3] -> DEPTHWISE(mult 2, stride 2, SAME, RELU_N1_TO_1)
    -> CONV_2D(3x3, stride 2, SAME, RELU6, fp16 weights via DEQUANTIZE)
    -> ADD(const [C]) -> CONV_2D(1x1 dilation 1 VALID) -> RESHAPE [1,-1,2]."""
    dw = rng.uniform(-1, 1, (1, 3, 3, 6)).astype("<f4")
    dwb = rng.uniform(-.5, .5, 6).astype("<f4")
    cw = rng.uniform(-1, 1, (4, 3, 3, 6)).astype("<f2")
    cb = rng.uniform(-.5, .5, 4).astype("<f4")
    addc = rng.uniform(-1, 1, 4).astype("<f4")
    pw = rng.uniform(-1, 1, (8, 1, 1, 4)).astype("<f4")
    buffers = [b"", b"", dw.tobytes(), dwb.tobytes(), b"", cw.tobytes(), b"", cb.tobytes(), b"",
               addc.tobytes(), b"", pw.tobytes(), b"", b""]
    tensors = [("in", [1, 7, 9, 3], 0, 1), ("dw_w", [1, 3, 3, 6], 0, 2), ("dw_b", [6], 0, 3),
               ("dw_out", [1, 4, 5, 6], 0, 4), ("c_w16", [4, 3, 3, 6], 1, 5), ("c_w", [4, 3, 3, 6], 0, 6),
               ("c_b", [4], 0, 7), ("c_out", [1, 2, 3, 4], 0, 8), ("add_c", [4], 0, 9),
               ("add_out", [1, 2, 3, 4], 0, 10), ("p_w", [8, 1, 1, 4], 0, 11),
               ("p_out", [1, 2, 3, 8], 0, 12), ("out", [1, 24, 2], 0, 13)]
    conv = lambda pad, s, act: FT(f0=("b", pad), f1=("i", s), f2=("i", s), f3=("b", act),
                                  f4=("i", 1), f5=("i", 1))
    ops = [(4, [0, 1, 2], [3], 2, FT(f0=("b", 0), f1=("i", 2), f2=("i", 2), f3=("i", 2), f4=("b", 2))),
           (6, [4], [5], 0, None),
           (3, [3, 5, 6], [7], 1, conv(0, 2, 3)),
           (0, [7, 8], [9], 11, FT(f0=("b", 0))),
           (3, [9, 10, -1], [11], 1, conv(1, 1, 0)),
           (22, [11], [12], 17, FT(f0=("ints", [1, -1, 2])))]
    return tiny_tflite(tensors, ops, [0], [12], buffers)


# ----------------------------------------------------------------------------
# fixtures
# ----------------------------------------------------------------------------

def run_converter(*args):
    return subprocess.run([PY, CONVERTER] + list(args), capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def ort_run(tmp_path_factory):
    if not (os.path.exists(ORT_LIB) and os.path.exists(ORT_HDR)):
        missing("ONNX Runtime C library not found under %s" % ORT_DIR)
    cc = shutil.which("cc")
    if not cc:
        missing("no C compiler (cc) to build tools/ort_run.c")
    exe = str(tmp_path_factory.mktemp("ort") / "ort_run")
    subprocess.run([cc, "-std=c11", "-O2", "-I" + os.path.dirname(ORT_HDR),
                    os.path.join(HERE, "ort_run.c"), "-o", exe, "-L" + os.path.dirname(ORT_LIB),
                    "-l:libonnxruntime.so.1", "-Wl,-rpath," + os.path.dirname(ORT_LIB)],
                   check=True)
    tmp = tmp_path_factory.mktemp("ortio")

    def run(model_path, x):
        x = np.ascontiguousarray(x, dtype="<f4")
        inp = str(tmp / "in.f32")
        x.tofile(inp)
        p = subprocess.run([exe, model_path, inp, str(tmp / "out")] + [str(d) for d in x.shape],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        outs = []
        for i, line in enumerate(p.stdout.strip().splitlines()):
            name, *dims = line.split()
            outs.append((name, np.fromfile(str(tmp / ("out%d.f32" % i)), dtype="<f4")
                         .reshape([int(d) for d in dims])))
        return outs
    return run


@pytest.fixture(scope="module")
def ssd(tmp_path_factory):
    if not os.path.exists(SSD):
        missing("SSD model not found at %s" % SSD)
    d = tmp_path_factory.mktemp("ssd")
    dyn, static = str(d / "ssd.onnx"), str(d / "ssd_static.onnx")
    t0 = time.time()
    p = run_converter(SSD, dyn)
    print("conversion took %.2f s" % (time.time() - t0))
    assert p.returncode == 0, p.stderr
    p = run_converter("--static-batch", SSD, static)
    assert p.returncode == 0, p.stderr
    return {"tflite": t2o.read_tflite(SSD), "dynamic": dyn, "static": static}


# ----------------------------------------------------------------------------
# tests
# ----------------------------------------------------------------------------

def _dims(vi):
    return [d.dim_param or d.dim_value for d in vi.type.tensor_type.shape.dim]


def test_ssd_model_structure(ssd):
    import onnx
    for key, batch in (("dynamic", "N"), ("static", 1)):
        m = onnx.load(ssd[key])
        onnx.checker.check_model(m)
        assert [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")] == [13]
        assert [(i.name, _dims(i)) for i in m.graph.input] == \
            [("normalized_input_image_tensor", [batch, 300, 300, 3])]
        assert [(o.name, _dims(o)) for o in m.graph.output] == \
            [("raw_outputs/box_encodings", [batch, 1917, 4]),
             ("raw_outputs/class_predictions", [batch, 1917, 24])]
        types = {i.data_type for i in m.graph.initializer}
        assert types <= {onnx.TensorProto.FLOAT, onnx.TensorProto.INT64}
        ops = {n.op_type for n in m.graph.node}
        assert ops <= {"Transpose", "Conv", "Clip", "Relu", "Add", "Reshape", "Concat", "Identity"}


def _max_diffs(outs, ref):
    return [float(np.max(np.abs(o - r))) for (_, o), r in zip(outs, ref)]


def test_ssd_matches_reference(ssd, ort_run):
    rng = np.random.default_rng(1234)
    inputs = [rng.uniform(-1, 1, (1, 300, 300, 3)) for _ in range(3)]
    # a smooth synthetic "image" (gradients and a bright disc), scaled to [-1,1]
    yy, xx = np.mgrid[0:300, 0:300] / 299.0
    disc = ((yy - .5) ** 2 + (xx - .4) ** 2 < .08).astype(float)
    inputs.append(np.stack([yy, xx, disc], -1)[None] * 2 - 1)
    worst = [0.0, 0.0]
    for x in inputs:
        ref = reference_run(ssd["tflite"], x)
        for key in ("dynamic", "static"):
            outs = ort_run(ssd[key], x)
            assert [n for n, _ in outs] == ["raw_outputs/box_encodings", "raw_outputs/class_predictions"]
            assert [o.shape for _, o in outs] == [(1, 1917, 4), (1, 1917, 24)]
            d = _max_diffs(outs, ref)
            worst = [max(a, b) for a, b in zip(worst, d)]
            assert max(d) < TOL, "max abs diff %s (%s model)" % (d, key)
        # the outputs are not degenerate
        assert np.std(ref[1]) > 0.1 and np.std(ref[0]) > 0.1
    print("max abs diff vs numpy reference: box_encodings %.2e, class_predictions %.2e" % tuple(worst))


def test_ssd_batch2(ssd, ort_run):
    rng = np.random.default_rng(99)
    x = rng.uniform(-1, 1, (2, 300, 300, 3))
    outs2 = ort_run(ssd["dynamic"], x)
    assert [o.shape for _, o in outs2] == [(2, 1917, 4), (2, 1917, 24)]
    for b in range(2):
        outs1 = ort_run(ssd["dynamic"], x[b:b + 1])
        for (_, o2), (_, o1) in zip(outs2, outs1):
            assert np.max(np.abs(o2[b:b + 1] - o1)) < 1e-4
    ref = reference_run(ssd["tflite"], x[1:2])
    assert max(_max_diffs([(n, o[1:2]) for n, o in outs2], ref)) < TOL


def test_small_handbuilt_model(tmp_path, ort_run):
    """Options the SSD model does not use: depth multiplier 2, odd sizes with
    stride 2, RELU_N1_TO_1, a broadcast constant ADD, a conv without bias."""
    src = tmp_path / "small.tflite"
    src.write_bytes(small_model(np.random.default_rng(5)))
    m = t2o.read_tflite(str(src))
    rng = np.random.default_rng(6)
    for flag in ("--dynamic-batch", "--static-batch"):
        out = str(tmp_path / ("small%s.onnx" % flag))
        p = run_converter(flag, str(src), out)
        assert p.returncode == 0, p.stderr
        for _ in range(3):
            x = rng.uniform(-2, 2, (1, 7, 9, 3))
            ref = reference_run(m, x)
            outs = ort_run(out, x)
            assert outs[0][0] == "out" and outs[0][1].shape == (1, 24, 2)
            assert max(_max_diffs(outs, ref)) < TOL
    x = rng.uniform(-2, 2, (3, 7, 9, 3))
    outs = ort_run(str(tmp_path / "small--dynamic-batch.onnx"), x)
    assert outs[0][1].shape == (3, 24, 2)
    for b in range(3):
        assert max(_max_diffs([(n, o[b:b + 1]) for n, o in outs], reference_run(m, x[b:b + 1]))) < TOL


def test_unsupported_op_handbuilt(tmp_path):
    src = tmp_path / "mul.tflite"
    src.write_bytes(tiny_tflite([("a", [1, 2, 2, 3], 0, 0), ("b", [1, 2, 2, 3], 0, 0),
                                 ("c", [1, 2, 2, 3], 0, 0)],
                                [(18, [0, 1], [2], 21, FT(f0=("b", 0)))], [0, 1], [2], [b""]))
    p = run_converter(str(src), str(tmp_path / "mul.onnx"))
    assert p.returncode == 2
    assert p.stderr.strip() == ("tflite2onnx: unsupported TFLite op MUL (builtin 18) in mul.tflite; "
                                "supported: ADD, CONCATENATION, CONV_2D, DEPTHWISE_CONV_2D, "
                                "DEQUANTIZE, RESHAPE")
    assert "Traceback" not in p.stderr and not os.path.exists(tmp_path / "mul.onnx")


def test_unsupported_activation(tmp_path):
    src = tmp_path / "tanh.tflite"
    src.write_bytes(tiny_tflite([("a", [1, 2, 2, 3], 0, 0), ("b", [1, 2, 2, 3], 0, 0),
                                 ("c", [1, 2, 2, 3], 0, 0)],
                                [(0, [0, 1], [2], 11, FT(f0=("b", 4)))], [0, 1], [2], [b""]))
    p = run_converter(str(src), str(tmp_path / "tanh.onnx"))
    assert p.returncode == 2
    assert "unsupported fused activation TANH in TFLite op ADD" in p.stderr
    assert "tanh.tflite" in p.stderr and "Traceback" not in p.stderr


def test_unsupported_op_mutated_ssd(tmp_path):
    """Rewrite the RESHAPE operator code of the real model as RESIZE_BILINEAR."""
    if not os.path.exists(SSD):
        missing("SSD model not found at %s" % SSD)
    data = bytearray(open(SSD, "rb").read())
    root = t2o.FB(bytes(data)).root()
    patched = 0
    for oc in root.tables(1):
        if max(oc.scalar(0, "b"), oc.scalar(3, "i")) == 22:
            for fid, fmt in ((0, "<b"), (3, "<i")):
                if oc.has(fid):
                    struct.pack_into(fmt, data, oc.pos + oc._field(fid), 23)
                    patched += 1
    assert patched
    src = tmp_path / "ssd-oidv4.tflite"
    src.write_bytes(bytes(data))
    p = run_converter(str(src), str(tmp_path / "x.onnx"))
    assert p.returncode == 2
    assert p.stderr.startswith("tflite2onnx: unsupported TFLite op RESIZE_BILINEAR (builtin 23) "
                               "in ssd-oidv4.tflite; supported: ADD, CONCATENATION, CONV_2D, ")
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize("content", [b"", b"hello world, not a model", b"\x10\0\0\0TFL3" + b"\xff" * 8])
def test_bad_file(tmp_path, content):
    src = tmp_path / "bad.tflite"
    src.write_bytes(content)
    p = run_converter(str(src), str(tmp_path / "bad.onnx"))
    assert p.returncode == 2
    assert p.stderr.startswith("tflite2onnx: ") and "bad.tflite" in p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_truncated_ssd(tmp_path):
    if not os.path.exists(SSD):
        missing("SSD model not found at %s" % SSD)
    src = tmp_path / "cut.tflite"
    src.write_bytes(open(SSD, "rb").read()[:100000])
    p = run_converter(str(src), str(tmp_path / "cut.onnx"))
    assert p.returncode == 2 and "Traceback" not in p.stderr and "cut.tflite" in p.stderr


def test_missing_file_and_help(tmp_path):
    p = run_converter(str(tmp_path / "nope.tflite"), str(tmp_path / "x.onnx"))
    assert p.returncode == 2 and "cannot read" in p.stderr and "Traceback" not in p.stderr
    p = run_converter("--help")
    assert p.returncode == 0 and "--static-batch" in p.stdout and "--dynamic-batch" in p.stdout


def test_same_padding():
    # TFLite SAME: odd total padding puts the extra pixel at the end
    assert t2o.same_pads(300, 3, 2, 1) == (0, 1)
    assert t2o.same_pads(19, 3, 2, 1) == (1, 1)
    assert t2o.same_pads(10, 3, 2, 1) == (0, 1)
    assert t2o.same_pads(2, 3, 2, 1) == (0, 1)
    assert t2o.same_pads(5, 3, 1, 2) == (2, 2)
    assert t2o.same_pads(7, 1, 1, 1) == (0, 0)
