"""Tests for tools/quantize.py.  Run with Debian's Python:

    /usr/bin/python3 -m pytest -q tools/test_quantize.py

Small graphs are built here with onnx.helper, calibrated in numpy, written
by the tool and run by ONNX Runtime's C library (tools/ort_run.c, compiled
with `cc`).  The quantized model's outputs are compared with a numpy
simulation of the same quantization (fake-quantized tensors, int8 weights,
int32 biases): ONNX Runtime's integer kernels must land within a few
quantization steps of it, far closer than to a model quantized wrongly.
Tests needing the ORT library or a C compiler skip with a reason.
"""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import quantize as qz  # noqa: E402
from testenv import ORT_DIR, ORT_HDR, ORT_LIB, exact_int8, missing  # noqa: E402

import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
TOOL = os.path.join(HERE, "quantize.py")


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
        p = subprocess.run([exe, str(model_path), inp, str(tmp / "out")] + [str(d) for d in x.shape],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        outs = {}
        for i, line in enumerate(p.stdout.strip().splitlines()):
            name, *dims = line.split()
            outs[name] = np.fromfile(str(tmp / ("out%d.f32" % i)), dtype="<f4").reshape(
                [int(d) for d in dims])
        return outs
    return run


def tool(*args):
    return subprocess.run([PY, TOOL] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=120)


# ----------------------------------------------------------------------------
# a small residual network and its numpy twin
# ----------------------------------------------------------------------------

RNG = np.random.default_rng(7)
W1 = RNG.normal(0, 0.4, (4, 4, 3, 3)).astype(np.float32)   # 4 channels in: not a stem
B1 = RNG.normal(0, 0.2, 4).astype(np.float32)
W2 = RNG.normal(0, 0.4, (4, 4, 1, 1)).astype(np.float32)
B2 = RNG.normal(0, 0.2, 4).astype(np.float32)
W3 = RNG.normal(0, 0.4, (2, 4, 1, 1)).astype(np.float32)
B3 = RNG.normal(0, 0.2, 2).astype(np.float32)


def conv(x, w, b, pad):
    n, c, h, wd = x.shape
    m, _, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.zeros((n, m, h, wd))
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("nchw,mc->nmhw", xp[:, :, i:i + h, j:j + wd], w[:, :, i, j])
    return out + b.reshape(1, -1, 1, 1)


def residual_model(opset=13):
    """x -> Conv -> Relu = t1 -> Conv = t2 -> Add(t1, t2) = t3 -> Conv = head -> Reshape -> y"""
    inits = [numpy_helper.from_array(a, n) for a, n in
             ((W1, "w1"), (B1, "b1"), (W2, "w2"), (B2, "b2"), (W3, "w3"), (B3, "b3"),
              (np.array([1, -1], np.int64), "shape"))]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["t1"]),
             helper.make_node("Conv", ["t1", "w2", "b2"], ["t2"]),
             helper.make_node("Add", ["t1", "t2"], ["t3"]),
             helper.make_node("Conv", ["t3", "w3", "b3"], ["head"]),
             helper.make_node("Reshape", ["head", "shape"], ["y"])]
    g = helper.make_graph(nodes, "residual",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 72])],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7
    return m


def float_tensors(x):
    t1 = np.maximum(conv(x, W1, B1, 1), 0)
    t2 = conv(t1, W2, B2, 0)
    t3 = t1 + t2
    head = conv(t3, W3, B3, 0)
    return {"x": x, "t1": t1, "t2": t2, "t3": t3, "head": head, "y": head.reshape(1, -1)}


def fq(v, lo, hi):
    s, zp = qz.act_params(lo, hi)
    s, zp = np.float64(s), int(zp)
    return (np.clip(np.round(v / s) + zp, 0, 255) - zp) * s


def wq(w):
    q, s = qz.weight_params(w, 0)
    return q.astype(np.float64) * s.astype(np.float64).reshape(-1, 1, 1, 1), s


def bq(b, lo, hi, s_w):
    s_x = qz.act_params(lo, hi)[0]
    q, s_b = qz.bias_int32(b, s_x, s_w)
    return q.astype(np.float64) * s_b.astype(np.float64)


def simulated(x, r, float_heads=False):
    """What the QDQ model computes for ranges r, in float64."""
    w1, s1 = wq(W1)
    w2, s2 = wq(W2)
    w3, s3 = wq(W3)
    xq = fq(x, *r["x"])
    t1 = fq(conv(xq, w1, bq(B1, *r["x"], s1), 1), *r["t1"])      # Relu folded: uint8 from 0
    t2 = fq(conv(t1, w2, bq(B2, *r["t1"], s2), 0), *r["t2"])
    t3 = fq(t1 + t2, *r["t3"])
    head = conv(t3, w3, bq(B3, *r["t3"], s3), 0)
    return (head if float_heads else fq(head, *r["head"])).reshape(1, -1)


def write_ranges(path, r):
    with open(path, "w") as f:
        for k, (lo, hi) in r.items():
            f.write("%s\t%.9g\t%.9g\n" % (k, lo, hi))


@pytest.fixture(scope="module")
def residual(tmp_path_factory):
    d = tmp_path_factory.mktemp("residual")
    src = d / "float.onnx"
    onnx.save(residual_model(), str(src))
    x = np.random.default_rng(1).uniform(-1, 1, (1, 4, 6, 6))
    ft = float_tensors(x)
    ranges = {k: (float(ft[k].min()), float(ft[k].max())) for k in ("x", "t1", "t2", "t3", "head")}
    return {"dir": d, "src": src, "x": x, "float": ft, "ranges": ranges}


# ----------------------------------------------------------------------------
# tests
# ----------------------------------------------------------------------------

def test_plan_quantizes_the_body_and_the_heads_results(residual):
    d = residual["dir"]
    p = tool("prepare", residual["src"], d / "calib.onnx", d / "tensors.txt")
    assert p.returncode == 0, p.stderr
    assert (d / "tensors.txt").read_text().split() == ["x", "t1", "t2", "t3", "head"]
    calib = onnx.load(str(d / "calib.onnx"))
    assert [o.name for o in calib.graph.output] == ["y"] + ["osprey_calib_%d" % k for k in range(5)]
    p = tool("prepare", residual["src"], d / "calib.onnx", d / "tensors.txt", "--float-heads")
    assert p.returncode == 0, p.stderr
    assert (d / "tensors.txt").read_text().split() == ["x", "t1", "t2", "t3"]


def test_written_model_structure(residual):
    d = residual["dir"]
    write_ranges(d / "ranges.txt", residual["ranges"])
    p = tool("write", residual["src"], d / "ranges.txt", d / "int8.onnx")
    assert p.returncode == 0, p.stderr
    m = onnx.load(str(d / "int8.onnx"))
    ops = [n.op_type for n in m.graph.node]
    assert "Relu" not in ops                                  # folded into t1's range
    assert ops.count("QuantizeLinear") == 5
    producers = {o: n for n in m.graph.node for o in n.output}
    head = next(n for n in m.graph.node if n.op_type == "Conv" and n.output[0] == "head")
    assert producers[head.input[0]].op_type == "DequantizeLinear"
    reshape = next(n for n in m.graph.node if n.op_type == "Reshape")
    assert reshape.input[0] == "head_dequantized"             # the tail reads the int8 head, in float
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    assert inits["w1_int8"].dtype == np.int8 and inits["w1_int8_scale"].shape == (4,)
    assert np.array_equal(inits["w1_int8"], np.round(W1 / inits["w1_int8_scale"].reshape(-1, 1, 1, 1)))
    s_x = qz.act_params(*residual["ranges"]["x"])[0]
    assert inits["b1_int32"].dtype == np.int32
    assert np.allclose(inits["b1_int32_scale"], s_x * inits["w1_int8_scale"])
    assert "w1" not in inits                                  # the float weights are gone
    assert all(o.version == 13 for o in m.opset_import if o.domain == "")
    p = tool("write", residual["src"], d / "ranges.txt", d / "fh.onnx", "--float-heads")
    assert p.returncode == 0, p.stderr
    m = onnx.load(str(d / "fh.onnx"))
    assert [n.op_type for n in m.graph.node].count("QuantizeLinear") == 4
    assert not any(n.input and n.input[0] == "head" and n.op_type == "QuantizeLinear"
                   for n in m.graph.node)                      # the head's result stays float


@exact_int8
def test_onnxruntime_matches_the_simulated_quantization(residual, ort_run):
    d = residual["dir"]
    x, r = residual["x"], residual["ranges"]
    write_ranges(d / "ranges.txt", r)
    assert tool("write", residual["src"], d / "ranges.txt", d / "int8.onnx").returncode == 0
    got = ort_run(d / "int8.onnx", x)["y"].astype(np.float64)
    want = simulated(x, r)
    fl = residual["float"]["y"]
    step = qz.act_params(*r["t3"])[0] * np.abs(W3).sum(axis=(1, 2, 3)).max()
    # ORT rounds each requantization once; the simulation too, in float64
    assert np.abs(got - want).max() <= 3 * step
    # and the int8 model is a fair copy of the float one
    assert np.abs(got - fl).max() <= 0.05 * (fl.max() - fl.min())
    # a model quantized with the wrong ranges is not within those bounds
    bad = {k: (lo * 0.2, hi * 0.2) for k, (lo, hi) in r.items()}
    write_ranges(d / "bad.txt", bad)
    assert tool("write", residual["src"], d / "bad.txt", d / "bad.onnx").returncode == 0
    wrong = ort_run(d / "bad.onnx", x)["y"]
    assert np.abs(wrong - want).max() > 3 * step


def test_same_ranges_same_bytes(residual):
    d = residual["dir"]
    write_ranges(d / "ranges.txt", residual["ranges"])
    for out in ("a.onnx", "b.onnx"):
        assert tool("write", residual["src"], d / "ranges.txt", d / out).returncode == 0
    assert (d / "a.onnx").read_bytes() == (d / "b.onnx").read_bytes()


def test_bad_ranges_are_refused(residual):
    d = residual["dir"]
    (d / "short.txt").write_text("x\t0\t1\n")
    p = tool("write", residual["src"], d / "short.txt", d / "out.onnx")
    assert p.returncode == 2 and "no range for 4 tensor(s)" in p.stderr
    (d / "garbled.txt").write_text("x\t1\t0\n")
    p = tool("write", residual["src"], d / "garbled.txt", d / "out.onnx")
    assert p.returncode == 2 and "MIN <= MAX" in p.stderr


def old_opset_model():
    """opset 9: Conv -> Relu -> Reshape -> Transpose -> Slice (attributes) -> Softmax output."""
    w = RNG.normal(0, 0.5, (4, 4, 1, 1)).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array([1, 4, 16], np.int64), "shape")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Conv", ["r", "w2"], ["c2"]),
             helper.make_node("Reshape", ["c2", "shape"], ["flat"]),
             helper.make_node("Transpose", ["flat"], ["t"], perm=[0, 2, 1]),
             helper.make_node("Slice", ["t"], ["s"], axes=[2], starts=[0], ends=[2]),
             helper.make_node("Softmax", ["s"], ["scores"], axis=2)]
    inits.append(numpy_helper.from_array(RNG.normal(0, 0.5, (4, 4, 1, 1)).astype(np.float32), "w2"))
    g = helper.make_graph(nodes, "old",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 4, 4])],
                          [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 16, 2])],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)])
    m.ir_version = 4
    return m


@exact_int8
def test_old_opset_is_upgraded_and_loads(tmp_path, ort_run):
    src = tmp_path / "old.onnx"
    onnx.save(old_opset_model(), str(src))
    x = np.random.default_rng(3).uniform(-1, 1, (1, 4, 4, 4))
    p = tool("prepare", src, tmp_path / "calib.onnx", tmp_path / "tensors.txt")
    assert p.returncode == 0, p.stderr
    assert "opset 9 -> 13" in p.stdout
    names = (tmp_path / "tensors.txt").read_text().split()
    assert names == ["x", "r", "c2"]
    ref = ort_run(src, x)["scores"]
    calib = ort_run(tmp_path / "calib.onnx", x)
    assert np.allclose(calib["scores"], ref, atol=1e-6)      # the upgrade changed nothing
    seen = [calib["osprey_calib_%d" % k] for k in range(len(names))]
    write_ranges(tmp_path / "ranges.txt",
                 {n: (float(v.min()), float(v.max())) for n, v in zip(names, seen)})
    p = tool("write", src, tmp_path / "ranges.txt", tmp_path / "int8.onnx")
    assert p.returncode == 0, p.stderr
    got = ort_run(tmp_path / "int8.onnx", x)["scores"]       # per-axis DequantizeLinear loads
    assert np.abs(got - ref).max() < 0.05


def stem_model():
    """x (3 channels) -> stem Conv -> Relu -> depthwise -> Relu -> pointwise -> Relu
    -> depthwise -> Relu -> pointwise = y"""
    def w(name, shape):
        return numpy_helper.from_array(RNG.normal(0, 0.4, shape).astype(np.float32), name)
    inits = [w("ws", (16, 3, 3, 3)), w("wd1", (16, 1, 3, 3)), w("wp1", (16, 16, 1, 1)),
             w("wd2", (16, 1, 3, 3)), w("wp2", (8, 16, 1, 1))]
    nodes = []
    x = "x"
    for k, (name, wname, group) in enumerate((("stem", "ws", 1), ("dw1", "wd1", 16), ("pw1", "wp1", 1),
                                               ("dw2", "wd2", 16), ("pw2", "wp2", 1))):
        pads = [1, 1, 1, 1] if name != "pw1" and name != "pw2" else [0, 0, 0, 0]
        nodes.append(helper.make_node("Conv", [x, wname], [name], name=name, group=group, pads=pads))
        x = name
        if name != "pw2":
            nodes.append(helper.make_node("Relu", [x], [name + "_relu"]))
            x = name + "_relu"
    g = helper.make_graph(nodes, "stem",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("pw2", TensorProto.FLOAT, [1, 8, 8, 8])],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    return m


def test_the_stem_and_depthwise_convs_reading_float_stay_float():
    plan = qz.Plan(stem_model())
    assert [n.name for n in plan.qops] == ["pw1", "dw2", "pw2"]
    # the first int8 operator reads the float depthwise result; the graph's
    # output (pw2) is not quantized
    assert plan.tensors == ["dw1_relu", "pw1_relu", "dw2_relu"]


def test_pruned_and_tiny_weight_channels_quantize_to_zero():
    w = np.zeros((3, 2, 1, 1), np.float32)
    w[0] = 0.5
    w[2] = 1e-44                                              # a scale that underflows float32
    q, s = qz.weight_params(w, 0)
    assert np.all(np.isfinite(s)) and np.all(s > 0)
    assert q[0].max() == 127 and not q[1].any() and not q[2].any()
    qb, s_b = qz.bias_int32(np.ones(3, np.float32), 1e-30, s)
    assert np.all(np.isfinite(s_b)) and np.all(s_b > 0)


def test_weights_in_constant_nodes_are_quantized():
    """paddle2onnx (PP-OCR) stores weights as Constant nodes, not initializers."""
    w1 = RNG.normal(0, 0.4, (8, 4, 1, 1)).astype(np.float32)
    w2 = RNG.normal(0, 0.4, (8, 8, 1, 1)).astype(np.float32)
    nodes = [helper.make_node("Constant", [], ["w1"], value=numpy_helper.from_array(w1)),
             helper.make_node("Constant", [], ["w2"], value=numpy_helper.from_array(w2)),
             helper.make_node("Conv", ["x", "w1"], ["c1"], name="c1"),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["y"], name="c2")]
    g = helper.make_graph(nodes, "const",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 4, 4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    out, plan = qz.write(m, {"x": (-1.0, 1.0), "r1": (0.0, 2.0)})
    assert [n.name for n in plan.qops] == ["c1", "c2"]
    ops = [n.op_type for n in out.graph.node]
    assert "Constant" not in ops                              # the float weights went
    inits = {t.name: numpy_helper.to_array(t) for t in out.graph.initializer}
    assert inits["w1_int8"].dtype == np.int8 and inits["w2_int8"].dtype == np.int8
