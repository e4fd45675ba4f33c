#!/usr/bin/python3
"""quantize: the graph half of `osprey quantize` (static post-training int8, QDQ).

`osprey quantize` calibrates in C, through osprey's own preprocessing and
ONNX Runtime; this tool only reads and writes ONNX graphs, in two steps:

    quantize.py prepare IN.onnx CALIB.onnx TENSORS.txt [--float-heads]
        CALIB.onnx is IN.onnx (upgraded to opset 13 when older) with every
        tensor that will be quantized added as a graph output, output
        osprey_calib_K for line K (from 0) of TENSORS.txt, which names the
        tensors, one a line.  osprey runs CALIB.onnx on the calibration
        frames and records each tensor's range.

    quantize.py write IN.onnx RANGES.txt OUT.onnx [--float-heads]
        RANGES.txt has one line per tensor, "NAME<TAB>MIN<TAB>MAX".  OUT.onnx
        is IN.onnx with QuantizeLinear/DequantizeLinear pairs (uint8,
        asymmetric) on those tensors, int8 weights per output channel, int32
        biases, at opset 13.

Which operators are quantized: Conv, Gemm and MatMul with a constant weight,
and Add, Mul and Concat over activations — the ones ONNX Runtime fuses into
integer kernels when each input comes from a DequantizeLinear and the output
goes into a QuantizeLinear.  Not a Conv that reads the image (3 channels),
nor a depthwise Conv reading a float one: ONNX Runtime's float kernels beat
its integer ones there (Plan.weighted_qops).  A Relu or Clip(0, x) right
after one of them is folded into the output's range (uint8 saturation at
zero clips the same values).  The result of an int8 Conv, Gemm or MatMul is
quantized even where only float operators read it (a detector's heads), so
that it runs on an integer kernel; --float-heads leaves those results float.
The tails stay float: the reshapes and concatenations of a detector's raw
outputs, softmax, box decoding read dequantized tensors, so the model's
outputs are computed in float.

Both steps plan the same graph the same way, so TENSORS.txt of `prepare` is
exactly what `write` needs.  Output is deterministic: the same IN.onnx and
RANGES.txt give the same bytes.  Needs numpy and onnx (Debian's python3-numpy
and python3-onnx 1.12).  Exit status 2 on a bad model or ranges file.
"""

import argparse
import copy
import os
import sys

import numpy as np

try:
    import onnx
    from onnx import TensorProto, helper, numpy_helper, shape_inference, version_converter
except ImportError:                           # reported by main()
    onnx = None

OPSET = 13                      # per-axis DequantizeLinear needs 13
CALIB_PREFIX = "osprey_calib_"  # output k of CALIB.onnx is line k of TENSORS.txt
WEIGHTED = {"Conv", "Gemm", "MatMul"}
ACTIVATIONS = {"Add", "Mul", "Concat"}


HEADS_HELP = ("leave float the results of int8 operators that only float operators read "
              "(a detector's heads); the same flag for both steps")


class QuantError(Exception):
    pass


# ----------------------------------------------------------------------------
# opset
# ----------------------------------------------------------------------------

def opset_of(model):
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return 0


def upgrade(model):
    """The model at opset >= 13 (onnx's version converter)."""
    if opset_of(model) >= OPSET:
        return model
    model = copy.deepcopy(model)
    # Softmax changed meaning at 13 and its adapter needs the input's rank;
    # a Softmax producing a graph output gets it from the declared output.
    outs = {o.name: o for o in model.graph.output}
    known = {v.name for v in model.graph.value_info}
    for n in model.graph.node:
        if n.op_type == "Softmax" and n.output[0] in outs and n.input[0] not in known:
            v = copy.deepcopy(outs[n.output[0]])
            v.name = n.input[0]
            model.graph.value_info.append(v)
    model = shape_inference.infer_shapes(model)
    try:
        model = version_converter.convert_version(model, OPSET)
    except Exception as e:
        raise QuantError("cannot upgrade the model from opset %d to %d: %s"
                         % (opset_of(model), OPSET, e))
    return model


# ----------------------------------------------------------------------------
# the plan: which operators run in int8, which tensors carry a Q/DQ pair
# ----------------------------------------------------------------------------

class Plan:
    def __init__(self, model, float_heads=False):
        g = model.graph
        self.nodes = list(g.node)        # one wrapper per node: id() below is stable
        self.inits = {t.name: t for t in g.initializer}
        self.const_nodes = {n.output[0]: n for n in self.nodes if n.op_type == "Constant"}
        self.consumers = {}
        for n in self.nodes:
            for i in n.input:
                if i:
                    self.consumers.setdefault(i, []).append(n)
        self.graph_outputs = {o.name for o in g.output}
        self.producer = {o: n for n in self.nodes for o in n.output}
        qop_ids = self.weighted_qops()
        # Add, Mul and Concat run in int8 only where their result feeds an
        # int8 operator (directly or through a Relu): elsewhere (a detector's
        # output tail) a float reader would dequantize it again at once
        grown = True
        while grown:
            grown = False
            for n in self.nodes:
                if id(n) in qop_ids or n.op_type not in ACTIVATIONS or not self.is_qop(n):
                    continue
                readers = list(self.consumers.get(n.output[0], []))
                if len(readers) == 1 and self.is_relu(readers[0]):
                    readers += self.consumers.get(readers[0].output[0], [])
                if any(id(r) in qop_ids for r in readers):
                    qop_ids.add(id(n))
                    grown = True
        self.qops = [n for n in self.nodes if id(n) in qop_ids]
        self.qop_ids = qop_ids
        # tensors read by an int8 operator: each carries one Q/DQ pair
        self.tensors = []
        seen = set()
        for n in self.qops:
            for i in self.act_inputs(n):
                if i not in seen:
                    seen.add(i)
                    self.tensors.append(i)
        # the result of every int8 Conv, Gemm or MatMul is quantized, also
        # where only float operators read it (a detector's heads): ONNX
        # Runtime runs such an operator on its integer kernel only when a
        # QuantizeLinear follows, and otherwise dequantizes its input and
        # weights on every run and convolves in float (UltraFace: 8 heads,
        # 24 DequantizeLinear and 16 layout Transposes a run; quantizing the
        # heads' results made it 1.08x faster at the same agreement).
        # float_heads keeps those results float: 8 bits of a box regression
        # cost the SSD 0.02 of mean IoU
        for n in self.qops:
            if n.op_type not in WEIGHTED or float_heads:
                continue
            o = n.output[0]
            users = self.consumers.get(o, [])
            if len(users) == 1 and o not in self.graph_outputs and self.is_relu(users[0]):
                o = users[0].output[0]
            if o not in seen and o not in self.graph_outputs:
                seen.add(o)
                self.tensors.append(o)
        # Relu / Clip(0, x) after an int8 operator whose result is quantized
        # anyway: the uint8 output saturates at zero, so the node goes
        self.folded = set()                          # id() of the folded nodes
        self.renamed = {}                            # int8 output -> the folded node's output
        for n in self.qops:
            o = n.output[0]
            users = self.consumers.get(o, [])
            if len(users) == 1 and o not in self.graph_outputs and self.is_relu(users[0]):
                act = users[0]
                if act.output[0] in seen and id(act) not in qop_ids:
                    self.folded.add(id(act))
                    self.renamed[o] = act.output[0]

    def weighted_qops(self):
        """id() of the Conv, Gemm and MatMul nodes to run in int8.

        Two kinds of Conv stay float, where ONNX Runtime's integer kernels
        are slower than its float ones (UltraFace, node by node, one
        thread, AVX-512 VNNI): a stem reading an image (3 input channels:
        418 us in int8 against 193 in float, before quantizing the input),
        and a depthwise Conv whose input comes from a float Conv or the
        model's input (every depthwise Conv ran at 0.4-0.8x of float, the
        pointwise ones at 1.3-2.9x; one reading an int8 tensor stays int8,
        as a dequantize and quantize around it would cost more).
        """
        ids = set()
        for n in self.nodes:                          # in graph (topological) order
            if n.op_type not in WEIGHTED or not self.is_qop(n):
                continue
            if n.op_type == "Conv":
                w = self.const_value(n.input[1])
                group = {a.name: helper.get_attribute_value(a) for a in n.attribute}.get("group", 1)
                if group == 1 and w.shape[1] <= 3:
                    continue                          # a stem
                if group > 1 and w.shape[1] == 1 and w.shape[0] == group:
                    src = self.producer.get(n.input[0])
                    if src is not None and self.is_relu(src):
                        src = self.producer.get(src.input[0])
                    if src is None or (src.op_type == "Conv" and id(src) not in ids):
                        continue                      # depthwise, reading float
            ids.add(id(n))
        return ids

    def const_value(self, name):
        if name in self.inits:
            return numpy_helper.to_array(self.inits[name])
        n = self.const_nodes.get(name)
        if n is not None:
            for a in n.attribute:
                if a.name == "value":
                    return numpy_helper.to_array(a.t)
        return None

    def is_const(self, name):
        return name in self.inits or name in self.const_nodes

    def act_inputs(self, n):
        if n.op_type in WEIGHTED:
            return [n.input[0]]
        return [i for i in n.input if i]

    def is_qop(self, n):
        if n.domain not in ("", "ai.onnx") or not n.input:
            return False
        if n.op_type in WEIGHTED:
            # weights as initializers or Constant nodes (paddle2onnx's)
            if len(n.input) < 2 or not self.is_const(n.input[1]) or self.is_const(n.input[0]):
                return False
            w = self.const_value(n.input[1])
            if w.dtype != np.float32:
                return False
            if n.op_type == "Conv":
                return w.ndim >= 3
            if n.op_type == "Gemm":
                attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
                return w.ndim == 2 and not attrs.get("transA", 0)
            return w.ndim == 2                                   # MatMul
        if n.op_type in ACTIVATIONS:
            ins = [i for i in n.input if i]
            return len(ins) >= 2 and not any(self.is_const(i) for i in ins)
        return False

    def is_relu(self, n):
        if n.op_type == "Relu":
            return True
        if n.op_type != "Clip":
            return False
        lo = self.const_value(n.input[1]) if len(n.input) > 1 and n.input[1] else None
        return lo is not None and lo.size == 1 and float(lo.reshape(-1)[0]) == 0.0


# ----------------------------------------------------------------------------
# quantization arithmetic
# ----------------------------------------------------------------------------

def act_params(lo, hi):
    """uint8 asymmetric scale and zero point for the range [lo, hi] (0 included)."""
    lo, hi = min(0.0, float(lo)), max(0.0, float(hi))
    scale = np.float32((hi - lo) / 255.0)
    if not np.isfinite(scale) or scale <= 0:
        scale = np.float32(1.0)
    zp = int(np.clip(np.round(-lo / np.float64(scale)), 0, 255))
    return scale, np.uint8(zp)


def weight_params(w, axis):
    """int8 symmetric per-channel weights along axis: (q, scales)."""
    moved = np.moveaxis(w.astype(np.float64), axis, 0).reshape(w.shape[axis], -1)
    amax = np.abs(moved).max(axis=1)
    # an all-zero (pruned) channel, or one so small its scale underflows
    # float32, gets scale 1: its weights quantize to 0 either way
    scales = amax / 127.0
    scales = np.where(scales >= np.finfo(np.float32).tiny, scales, 1.0).astype(np.float32)
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.clip(np.round(w / scales.reshape(shape).astype(np.float64)), -127, 127).astype(np.int8)
    return q, scales


def bias_int32(b, s_x, s_w):
    s_b = (np.float32(s_x) * s_w).astype(np.float32)
    s_b = np.where(s_b > 0, s_b, np.float32(1.0)).astype(np.float32)
    q = np.round(b.astype(np.float64) / s_b.astype(np.float64))
    q = np.clip(q, -(2 ** 31) + 1, 2 ** 31 - 1).astype(np.int32)
    return q, s_b


def weight_axis(n):
    if n.op_type == "Conv":
        return 0
    if n.op_type == "Gemm":
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        return 0 if attrs.get("transB", 0) else 1
    return 1                                                        # MatMul [K,N]


# ----------------------------------------------------------------------------
# the two steps
# ----------------------------------------------------------------------------

def prepare(model, float_heads=False):
    """(calibration model, tensor names)."""
    model = upgrade(model)
    plan = Plan(model, float_heads)
    calib = copy.deepcopy(model)
    # each tensor leaves through an Identity named by its line in TENSORS.txt:
    # tensor names can be longer than a runtime reports whole
    for k, t in enumerate(plan.tensors):
        out = "%s%d" % (CALIB_PREFIX, k)
        calib.graph.node.append(helper.make_node("Identity", [t], [out], name=out))
        calib.graph.output.append(helper.make_tensor_value_info(out, TensorProto.FLOAT, None))
    return calib, plan.tensors


def read_ranges(path):
    ranges = {}
    with open(path, encoding="utf-8") as f:
        for ln, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            parts = line.split("\t")
            try:
                if len(parts) != 3:
                    raise ValueError
                lo, hi = float(parts[1]), float(parts[2])
                if not (np.isfinite(lo) and np.isfinite(hi)) or lo > hi:
                    raise ValueError
            except ValueError:
                raise QuantError("%s:%d: expected NAME<TAB>MIN<TAB>MAX with MIN <= MAX, got %r"
                                 % (path, ln, line))
            ranges[parts[0]] = (lo, hi)
    return ranges


def write(model, ranges, float_heads=False):
    """The QDQ model for the calibrated ranges."""
    model = upgrade(model)
    plan = Plan(model, float_heads)
    missing = [t for t in plan.tensors if t not in ranges]
    if missing:
        raise QuantError("no range for %d tensor(s), first %s: calibrate with the CALIB.onnx "
                         "of `prepare` on this model" % (len(missing), missing[0]))
    g = model.graph
    new_inits = []
    params = {}                                      # tensor -> (scale, zp)
    for t in plan.tensors:
        s, zp = act_params(*ranges[t])
        params[t] = (s, zp)
        new_inits.append(numpy_helper.from_array(np.array(s, np.float32), t + "_scale"))
        new_inits.append(numpy_helper.from_array(np.array(zp, np.uint8), t + "_zero_point"))

    def qdq(t):
        return [helper.make_node("QuantizeLinear", [t, t + "_scale", t + "_zero_point"],
                                 [t + "_quantized"], name=t + "_QuantizeLinear"),
                helper.make_node("DequantizeLinear", [t + "_quantized", t + "_scale", t + "_zero_point"],
                                 [t + "_dequantized"], name=t + "_DequantizeLinear")]

    quantized = set(plan.tensors)
    nodes = []
    for i in g.input:
        if i.name in quantized:
            nodes.extend(qdq(i.name))
    for n in plan.nodes:
        if id(n) in plan.folded:
            continue                                 # its range is its producer's now
        orig, n = n, copy.deepcopy(n)
        for k, o in enumerate(n.output):
            n.output[k] = plan.renamed.get(o, o)
        if n.op_type in WEIGHTED and id(orig) in plan.qop_ids:
            w_name = n.input[1]
            w = plan.const_value(w_name)
            axis = weight_axis(n)
            q, s_w = weight_params(w, axis)
            base = w_name + "_int8"
            new_inits += [numpy_helper.from_array(q, base),
                          numpy_helper.from_array(s_w, base + "_scale"),
                          numpy_helper.from_array(np.zeros(len(s_w), np.int8), base + "_zero_point")]
            nodes.append(helper.make_node("DequantizeLinear", [base, base + "_scale", base + "_zero_point"],
                                          [base + "_dequantized"], axis=axis,
                                          name=base + "_DequantizeLinear"))
            n.input[1] = base + "_dequantized"
            b_idx = 2 if n.op_type in ("Conv", "Gemm") else -1
            if b_idx > 0 and len(n.input) > b_idx and plan.is_const(n.input[b_idx]):
                b = plan.const_value(n.input[b_idx])
                if b.dtype == np.float32 and b.ndim == 1 and b.shape[0] == len(s_w):
                    qb, s_b = bias_int32(b, params[n.input[0]][0], s_w)
                    bb = n.input[b_idx] + "_int32"
                    new_inits += [numpy_helper.from_array(qb, bb),
                                  numpy_helper.from_array(s_b, bb + "_scale"),
                                  numpy_helper.from_array(np.zeros(len(s_b), np.int32), bb + "_zero_point")]
                    nodes.append(helper.make_node("DequantizeLinear", [bb, bb + "_scale", bb + "_zero_point"],
                                                  [bb + "_dequantized"], axis=0,
                                                  name=bb + "_DequantizeLinear"))
                    n.input[b_idx] = bb + "_dequantized"
        # every reader of a quantized tensor reads its dequantized copy, so
        # the producer's only consumer is its QuantizeLinear (what the fusion needs)
        for k, i in enumerate(n.input):
            if i in quantized:
                n.input[k] = i + "_dequantized"
        nodes.append(n)
        for o in n.output:
            if o in quantized:
                nodes.extend(qdq(o))
    # the float weights replaced and a folded Clip's bounds are read no more
    still_read = {i for n in nodes for i in n.input} | {o.name for o in g.output}
    nodes = [n for n in nodes if n.op_type != "Constant" or n.output[0] in still_read]
    keep = [t for t in g.initializer if t.name in still_read]
    dropped = {t.name for t in g.initializer} - {t.name for t in keep}
    inputs = [i for i in g.input if i.name not in dropped]   # old models list initializers as inputs
    graph = helper.make_graph(nodes, g.name, inputs, list(g.output), initializer=keep + new_inits)
    out = helper.make_model(graph, producer_name="osprey quantize",
                            opset_imports=[helper.make_opsetid("", OPSET)] +
                            [o for o in model.opset_import if o.domain not in ("", "ai.onnx")])
    out.ir_version = max(7, model.ir_version)
    out.doc_string = ("int8 QDQ: %d operators in int8, %d quantized tensors; tails in float"
                      % (len(plan.qops), len(plan.tensors)))
    onnx.checker.check_model(out)
    return out, plan


def save(model, path):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(model.SerializeToString())
    os.replace(tmp, path)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="quantize", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="step", required=True)
    p = sub.add_parser("prepare", help="write the calibration model and the tensors to calibrate")
    p.add_argument("input", metavar="IN.onnx")
    p.add_argument("calib", metavar="CALIB.onnx")
    p.add_argument("tensors", metavar="TENSORS.txt")
    p.add_argument("--float-heads", action="store_true", help=HEADS_HELP)
    w = sub.add_parser("write", help="write the QDQ model from calibrated ranges")
    w.add_argument("input", metavar="IN.onnx")
    w.add_argument("ranges", metavar="RANGES.txt")
    w.add_argument("output", metavar="OUT.onnx")
    w.add_argument("--float-heads", action="store_true", help=HEADS_HELP)
    args = ap.parse_args(argv)
    if onnx is None:
        print("quantize: needs python3-onnx and python3-numpy; run with /usr/bin/python3",
              file=sys.stderr)
        return 2
    try:
        model = onnx.load(args.input)
        if args.step == "prepare":
            calib, tensors = prepare(model, args.float_heads)
            save(calib, args.calib)
            with open(args.tensors, "w", encoding="utf-8") as f:
                f.writelines(t + "\n" for t in tensors)
            print("quantize: %s: %d tensors to calibrate (opset %d -> %d)"
                  % (args.input, len(tensors), opset_of(model), opset_of(calib)))
        else:
            out, plan = write(model, read_ranges(args.ranges), args.float_heads)
            save(out, args.output)
            print("quantize: wrote %s (%d operators in int8, %d activations quantized, "
                  "%d Relu/Clip folded)" % (args.output, len(plan.qops), len(plan.tensors),
                                            len(plan.folded)))
    except QuantError as e:
        print("quantize: %s" % e, file=sys.stderr)
        return 2
    except Exception as e:                   # unreadable files, models onnx rejects
        print("quantize: %s: %s: %s" % (args.input, type(e).__name__, e), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
