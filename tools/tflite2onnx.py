#!/usr/bin/python3
"""tflite2onnx: convert a small float TFLite model to a float32 ONNX model (opset 13).

Written for the SSD-MobileNetV2 OIDv4 detector (ssd-oidv4.tflite), so it supports
exactly the builtin ops that model uses:

    ADD, CONCATENATION, CONV_2D, DEPTHWISE_CONV_2D, DEQUANTIZE, RESHAPE

plus the fused activations NONE, RELU, RELU_N1_TO_1 and RELU6.  Anything else
makes it exit with status 2 and a message naming the op and the model.

Needs only the Python standard library, numpy and onnx (Debian's python3-numpy
and python3-onnx); the TFLite flatbuffer is parsed by a small reader below.

Layout: the ONNX model keeps the TFLite input (NHWC) and output names and
shapes.  A Transpose to NCHW follows each 4-D graph input, convolutions run in
NCHW, and a Transpose back to NHWC is inserted wherever a tensor's NHWC
memory order matters (before RESHAPE, for a graph output, when mixing layouts).

By default the batch axis is dynamic (a symbolic dim "N"); --static-batch keeps
the TFLite batch size as a fixed dim.
"""

import argparse
import os
import struct
import sys

import numpy as np

# ----------------------------------------------------------------------------
# TFLite schema facts (tensorflow/lite/schema/schema.fbs)
# ----------------------------------------------------------------------------

# TensorType
TT_FLOAT32, TT_FLOAT16, TT_INT32, TT_UINT8, TT_INT64 = 0, 1, 2, 3, 4
TT_INT8 = 9
TENSOR_TYPE_NAMES = {0: "FLOAT32", 1: "FLOAT16", 2: "INT32", 3: "UINT8", 4: "INT64",
                     5: "STRING", 6: "BOOL", 7: "INT16", 8: "COMPLEX64", 9: "INT8",
                     10: "FLOAT64"}
NUMPY_OF_TENSOR_TYPE = {TT_FLOAT32: "<f4", TT_FLOAT16: "<f2", TT_INT32: "<i4",
                        TT_UINT8: "u1", TT_INT64: "<i8", TT_INT8: "i1", 10: "<f8"}

# BuiltinOperator
OP_ADD, OP_CONCATENATION, OP_CONV_2D, OP_DEPTHWISE_CONV_2D = 0, 2, 3, 4
OP_DEQUANTIZE, OP_RESHAPE = 6, 22
BUILTIN_NAMES = {
    0: "ADD", 1: "AVERAGE_POOL_2D", 2: "CONCATENATION", 3: "CONV_2D",
    4: "DEPTHWISE_CONV_2D", 5: "DEPTH_TO_SPACE", 6: "DEQUANTIZE",
    7: "EMBEDDING_LOOKUP", 8: "FLOOR", 9: "FULLY_CONNECTED",
    10: "HASHTABLE_LOOKUP", 11: "L2_NORMALIZATION", 12: "L2_POOL_2D",
    13: "LOCAL_RESPONSE_NORMALIZATION", 14: "LOGISTIC", 15: "LSH_PROJECTION",
    16: "LSTM", 17: "MAX_POOL_2D", 18: "MUL", 19: "RELU", 20: "RELU_N1_TO_1",
    21: "RELU6", 22: "RESHAPE", 23: "RESIZE_BILINEAR", 24: "RNN", 25: "SOFTMAX",
    26: "SPACE_TO_DEPTH", 27: "SVDF", 28: "TANH", 29: "CONCAT_EMBEDDINGS",
    30: "SKIP_GRAM", 31: "CALL", 32: "CUSTOM", 33: "EMBEDDING_LOOKUP_SPARSE",
    34: "PAD", 35: "UNIDIRECTIONAL_SEQUENCE_RNN", 36: "GATHER",
    37: "BATCH_TO_SPACE_ND", 38: "SPACE_TO_BATCH_ND", 39: "TRANSPOSE",
    40: "MEAN", 41: "SUB", 42: "DIV", 43: "SQUEEZE",
    44: "UNIDIRECTIONAL_SEQUENCE_LSTM", 45: "STRIDED_SLICE",
    46: "BIDIRECTIONAL_SEQUENCE_RNN", 47: "EXP", 48: "TOPK_V2", 49: "SPLIT",
    50: "LOG_SOFTMAX", 51: "DELEGATE", 52: "BIDIRECTIONAL_SEQUENCE_LSTM",
    53: "CAST", 54: "PRELU", 55: "MAXIMUM", 56: "ARG_MAX", 57: "MINIMUM",
    58: "LESS", 59: "NEG", 60: "PADV2", 61: "GREATER", 62: "GREATER_EQUAL",
    63: "LESS_EQUAL", 64: "SELECT", 65: "SLICE", 66: "SIN", 67: "TRANSPOSE_CONV",
    68: "SPARSE_TO_DENSE", 69: "TILE", 70: "EXPAND_DIMS", 71: "EQUAL",
    72: "NOT_EQUAL", 73: "LOG", 74: "SUM", 75: "SQRT", 76: "RSQRT", 77: "SHAPE",
    78: "POW", 79: "ARG_MIN", 80: "FAKE_QUANT", 81: "REDUCE_PROD",
    82: "REDUCE_MAX", 83: "PACK", 84: "LOGICAL_OR", 85: "ONE_HOT",
    86: "LOGICAL_AND", 87: "LOGICAL_NOT", 88: "UNPACK", 89: "REDUCE_MIN",
    90: "FLOOR_DIV", 91: "REDUCE_ANY", 92: "SQUARE", 93: "ZEROS_LIKE", 94: "FILL",
    95: "FLOOR_MOD", 96: "RANGE", 97: "RESIZE_NEAREST_NEIGHBOR", 98: "LEAKY_RELU",
    99: "SQUARED_DIFFERENCE", 100: "MIRROR_PAD", 101: "ABS", 102: "SPLIT_V",
    114: "QUANTIZE", 117: "HARD_SWISH", 126: "BATCH_MATMUL",
}
SUPPORTED_OPS = {OP_ADD, OP_CONCATENATION, OP_CONV_2D, OP_DEPTHWISE_CONV_2D,
                 OP_DEQUANTIZE, OP_RESHAPE}
SUPPORTED_NAMES = ", ".join(sorted(BUILTIN_NAMES[o] for o in SUPPORTED_OPS))

# BuiltinOptions union type ids
BO_CONV2D, BO_DEPTHWISE, BO_CONCAT, BO_ADD, BO_RESHAPE = 1, 2, 10, 11, 17

# ActivationFunctionType
ACT_NONE, ACT_RELU, ACT_RELU_N1_TO_1, ACT_RELU6 = 0, 1, 2, 3
ACT_NAMES = {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH",
             5: "SIGN_BIT"}

# Padding
PAD_SAME, PAD_VALID = 0, 1


class ConvertError(Exception):
    """A problem reported to the user as a one-line message (exit status 2)."""


# ----------------------------------------------------------------------------
# Minimal flatbuffer reader
# ----------------------------------------------------------------------------

class FB:
    """Reads little-endian flatbuffer tables/vectors out of a bytes object,
    checking every offset against the buffer size."""

    def __init__(self, data):
        self.b = data
        self.n = len(data)

    def _need(self, pos, size):
        if pos < 0 or pos + size > self.n:
            raise ConvertError("corrupt flatbuffer: offset %d (+%d) outside a %d-byte file"
                               % (pos, size, self.n))

    def scalar(self, fmt, pos):
        size = struct.calcsize(fmt)
        self._need(pos, size)
        return struct.unpack_from("<" + fmt, self.b, pos)[0]

    def root(self):
        return Table(self, self.scalar("I", 0))


class Table:
    def __init__(self, fb, pos):
        self.fb = fb
        self.pos = pos
        vt = pos - fb.scalar("i", pos)          # soffset to the vtable
        self.vt = vt
        self.vt_len = fb.scalar("H", vt)
        if self.vt_len < 4:
            raise ConvertError("corrupt flatbuffer: bad vtable at %d" % vt)
        fb._need(vt, self.vt_len)

    def _field(self, fid):
        slot = 4 + 2 * fid
        if slot + 2 > self.vt_len:
            return 0
        return self.fb.scalar("H", self.vt + slot)

    def has(self, fid):
        return self._field(fid) != 0

    def scalar(self, fid, fmt, default=0):
        off = self._field(fid)
        if not off:
            return default
        return self.fb.scalar(fmt, self.pos + off)

    def _indirect(self, fid):
        off = self._field(fid)
        if not off:
            return None
        p = self.pos + off
        return p + self.fb.scalar("I", p)

    def table(self, fid):
        p = self._indirect(fid)
        return None if p is None else Table(self.fb, p)

    def _vector(self, fid):
        p = self._indirect(fid)
        if p is None:
            return None, 0
        n = self.fb.scalar("I", p)
        return p + 4, n

    def vector_len(self, fid):
        return self._vector(fid)[1]

    def tables(self, fid):
        start, n = self._vector(fid)
        if start is None:
            return []
        self.fb._need(start, 4 * n)
        out = []
        for i in range(n):
            e = start + 4 * i
            out.append(Table(self.fb, e + self.fb.scalar("I", e)))
        return out

    def bytes(self, fid):
        start, n = self._vector(fid)
        if start is None:
            return None
        self.fb._need(start, n)
        return self.fb.b[start:start + n]

    def ints(self, fid, fmt="i"):
        start, n = self._vector(fid)
        if start is None:
            return None
        size = struct.calcsize(fmt)
        self.fb._need(start, size * n)
        return list(struct.unpack_from("<%d%s" % (n, fmt), self.fb.b, start))

    def string(self, fid):
        raw = self.bytes(fid)
        return None if raw is None else bytes(raw).decode("utf-8", "replace")


# ----------------------------------------------------------------------------
# TFLite model -> plain Python objects
# ----------------------------------------------------------------------------

class Tensor:
    def __init__(self, index, name, shape, ttype, buffer, data):
        self.index, self.name, self.shape = index, name, shape
        self.type, self.buffer, self.data = ttype, buffer, data

    def const_array(self):
        """numpy array of the tensor's constant data, or None if not constant."""
        if self.data is None or len(self.data) == 0:
            return None
        dt = NUMPY_OF_TENSOR_TYPE.get(self.type)
        if dt is None:
            raise ConvertError("constant tensor %r has unsupported type %s"
                               % (self.name, TENSOR_TYPE_NAMES.get(self.type, self.type)))
        arr = np.frombuffer(self.data, dtype=dt)
        count = int(np.prod(self.shape)) if self.shape else 1
        if arr.size != count:
            raise ConvertError("constant tensor %r: %d values for shape %s"
                               % (self.name, arr.size, self.shape))
        return arr.reshape(self.shape)


class Operator:
    def __init__(self, index, opcode, inputs, outputs, opts_type, opts):
        self.index, self.opcode = index, opcode
        self.inputs, self.outputs = inputs, outputs
        self.opts_type, self.opts = opts_type, opts

    @property
    def name(self):
        return BUILTIN_NAMES.get(self.opcode, "builtin %d" % self.opcode)


class Model:
    pass


def _parse_options(op_code, otype, t):
    """Decode the builtin options table of the ops we support into a dict."""
    o = {}
    if t is None:
        return o
    if op_code == OP_CONV_2D and otype == BO_CONV2D:
        o["padding"] = t.scalar(0, "b", 0)
        o["stride_w"] = t.scalar(1, "i", 0)
        o["stride_h"] = t.scalar(2, "i", 0)
        o["act"] = t.scalar(3, "b", 0)
        o["dilation_w"] = t.scalar(4, "i", 1)
        o["dilation_h"] = t.scalar(5, "i", 1)
    elif op_code == OP_DEPTHWISE_CONV_2D and otype == BO_DEPTHWISE:
        o["padding"] = t.scalar(0, "b", 0)
        o["stride_w"] = t.scalar(1, "i", 0)
        o["stride_h"] = t.scalar(2, "i", 0)
        o["depth_multiplier"] = t.scalar(3, "i", 0)
        o["act"] = t.scalar(4, "b", 0)
        o["dilation_w"] = t.scalar(5, "i", 1)
        o["dilation_h"] = t.scalar(6, "i", 1)
    elif op_code == OP_CONCATENATION and otype == BO_CONCAT:
        o["axis"] = t.scalar(0, "i", 0)
        o["act"] = t.scalar(1, "b", 0)
    elif op_code == OP_ADD and otype == BO_ADD:
        o["act"] = t.scalar(0, "b", 0)
    elif op_code == OP_RESHAPE and otype == BO_RESHAPE:
        o["new_shape"] = t.ints(0)
    return o


def read_tflite(path):
    """Parse a .tflite file; returns a Model (first subgraph only)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ConvertError("cannot read %s: %s" % (path, e.strerror or e))
    return parse_tflite(data, os.path.basename(path))


def parse_tflite(data, label="model"):
    try:
        return _parse_tflite(data, label)
    except ConvertError as e:
        if label in str(e):
            raise
        raise ConvertError("%s: %s" % (label, e))


def _parse_tflite(data, label):
    if len(data) < 8 or data[4:8] != b"TFL3":
        raise ConvertError("%s is not a TFLite flatbuffer (no 'TFL3' identifier)" % label)
    fb = FB(data)
    root = fb.root()
    m = Model()
    m.label = label
    m.version = root.scalar(0, "I", 0)
    m.description = root.string(3)
    m.opcodes = []
    for oc in root.tables(1):
        dep = oc.scalar(0, "b", 0)
        new = oc.scalar(3, "i", 0)
        m.opcodes.append(max(dep, new))
    buffers = [b.bytes(0) for b in root.tables(4)]
    subgraphs = root.tables(2)
    if not subgraphs:
        raise ConvertError("%s has no subgraph" % label)
    if len(subgraphs) > 1:
        raise ConvertError("%s has %d subgraphs; only single-subgraph models are supported"
                           % (label, len(subgraphs)))
    sg = subgraphs[0]
    m.tensors = []
    for i, t in enumerate(sg.tables(0)):
        shape = t.ints(0) or []
        buf = t.scalar(2, "I", 0)
        if buf >= len(buffers):
            raise ConvertError("%s: tensor %d refers to buffer %d of %d" % (label, i, buf, len(buffers)))
        name = t.string(3) or ("tensor_%d" % i)
        m.tensors.append(Tensor(i, name, shape, t.scalar(1, "b", 0), buf, buffers[buf]))
    m.inputs = sg.ints(1) or []
    m.outputs = sg.ints(2) or []
    m.operators = []
    for i, op in enumerate(sg.tables(3)):
        idx = op.scalar(0, "I", 0)
        if idx >= len(m.opcodes):
            raise ConvertError("%s: operator %d has opcode index %d of %d"
                               % (label, i, idx, len(m.opcodes)))
        code = m.opcodes[idx]
        otype = op.scalar(3, "B", 0)
        opts = _parse_options(code, otype, op.table(4)) if code in SUPPORTED_OPS else {}
        ins, outs = op.ints(1) or [], op.ints(2) or []
        for t in ins + outs:
            if t >= len(m.tensors) or t < -1:
                raise ConvertError("%s: operator %d refers to tensor %d of %d"
                                   % (label, i, t, len(m.tensors)))
        m.operators.append(Operator(i, code, ins, outs, otype, opts))
    return m


def check_supported(m):
    """Raise ConvertError for the first op or option value we cannot convert."""
    for op in m.operators:
        if op.opcode not in SUPPORTED_OPS:
            raise ConvertError("unsupported TFLite op %s (builtin %d) in %s; supported: %s"
                               % (op.name, op.opcode, m.label, SUPPORTED_NAMES))
        act = op.opts.get("act", ACT_NONE)
        if act not in (ACT_NONE, ACT_RELU, ACT_RELU_N1_TO_1, ACT_RELU6):
            raise ConvertError("unsupported fused activation %s in TFLite op %s (operator %d) in %s"
                               % (ACT_NAMES.get(act, str(act)), op.name, op.index, m.label))
        if op.opcode in (OP_CONV_2D, OP_DEPTHWISE_CONV_2D):
            if op.opts.get("padding") not in (PAD_SAME, PAD_VALID):
                raise ConvertError("unsupported padding %r in %s (operator %d) in %s"
                                   % (op.opts.get("padding"), op.name, op.index, m.label))
            if op.opts["stride_w"] < 1 or op.opts["stride_h"] < 1:
                raise ConvertError("bad stride in %s (operator %d) in %s" % (op.name, op.index, m.label))


def fold_constants(m):
    """Constant values (float32) by tensor index, with DEQUANTIZE of constant
    FLOAT16 tensors folded away."""
    consts = {}
    for t in m.tensors:
        if t.data is not None and len(t.data) and t.type in (TT_FLOAT32, TT_FLOAT16, TT_INT32, TT_INT64):
            a = t.const_array()
            consts[t.index] = a.astype(np.float32) if t.type in (TT_FLOAT32, TT_FLOAT16) else a
    for op in m.operators:
        if op.opcode == OP_DEQUANTIZE:
            src = m.tensors[op.inputs[0]]
            if src.index not in consts or src.type != TT_FLOAT16:
                raise ConvertError("unsupported DEQUANTIZE (operator %d) of %s tensor %r in %s: "
                                   "only constant FLOAT16 inputs are supported"
                                   % (op.index, TENSOR_TYPE_NAMES.get(src.type, src.type),
                                      src.name, m.label))
            consts[op.outputs[0]] = consts[src.index].astype(np.float32)
    return consts


def same_pads(in_size, k, stride, dil):
    """TFLite SAME padding: (before, after); the odd pixel goes at the end."""
    eff = (k - 1) * dil + 1
    out = (in_size + stride - 1) // stride
    total = max((out - 1) * stride + eff - in_size, 0)
    return total // 2, total - total // 2


# ----------------------------------------------------------------------------
# ONNX graph construction
# ----------------------------------------------------------------------------

NHWC_TO_NCHW = [0, 3, 1, 2]
NCHW_TO_NHWC = [0, 2, 3, 1]


def convert(m, dynamic_batch=True):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    check_supported(m)
    consts = fold_constants(m)
    nodes, inits = [], []
    used = set()
    counter = [0]

    def fresh(base):
        counter[0] += 1
        name = "%s__%d" % (base, counter[0])
        while name in used:
            counter[0] += 1
            name = "%s__%d" % (base, counter[0])
        used.add(name)
        return name

    def add_init(base, arr):
        name = fresh(base)
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    # value[tensor index] = (onnx name, layout) with layout "NCHW" (a 4-D NHWC
    # TFLite tensor held transposed) or "ASIS" (same memory order as TFLite).
    value = {}
    cache = {}
    onnx_name = {}
    for t in m.tensors:                      # keep TFLite names, made unique
        n = t.name
        while n in used:
            n = n + "_"
        used.add(n)
        onnx_name[t.index] = n

    graph_inputs = []
    for ti in m.inputs:
        t = m.tensors[ti]
        if t.type != TT_FLOAT32:
            raise ConvertError("input %r of %s is %s; only FLOAT32 inputs are supported"
                               % (t.name, m.label, TENSOR_TYPE_NAMES.get(t.type, t.type)))
        shape = list(t.shape)
        if dynamic_batch and shape:
            shape[0] = "N"
        graph_inputs.append(helper.make_tensor_value_info(onnx_name[ti], TensorProto.FLOAT, shape))
        if len(t.shape) == 4:
            nchw = fresh(t.name + "_nchw")
            nodes.append(helper.make_node("Transpose", [onnx_name[ti]], [nchw],
                                          perm=NHWC_TO_NCHW, name=fresh("input_to_nchw")))
            value[ti] = (nchw, "NCHW")
        else:
            value[ti] = (onnx_name[ti], "ASIS")

    def get(ti, want):
        """ONNX name of tensor ti in layout want ('NCHW' or 'ASIS')."""
        if (ti, want) in cache:
            return cache[(ti, want)]
        if ti in value:
            name, lay = value[ti]
            if lay == want:
                return name
            perm = NCHW_TO_NHWC if lay == "NCHW" else NHWC_TO_NCHW
            out = fresh(m.tensors[ti].name + ("_nhwc" if want == "ASIS" else "_nchw"))
            nodes.append(helper.make_node("Transpose", [name], [out], perm=perm,
                                          name=fresh("transpose")))
            cache[(ti, want)] = out
            return out
        if ti in consts:
            arr = consts[ti]
            if want == "NCHW":
                if arr.ndim == 4:
                    arr = arr.transpose(NHWC_TO_NCHW)
                elif arr.ndim == 1:
                    arr = arr.reshape(-1, 1, 1)
                elif arr.ndim != 0:
                    raise ConvertError("cannot broadcast constant %r of shape %s against an NHWC tensor in %s"
                                       % (m.tensors[ti].name, list(arr.shape), m.label))
            cache[(ti, want)] = add_init(m.tensors[ti].name, arr)
            return cache[(ti, want)]
        raise ConvertError("tensor %r is used before it is produced in %s" % (m.tensors[ti].name, m.label))

    def activation(op, x_name, out_name):
        act = op.opts.get("act", ACT_NONE)
        if act == ACT_NONE:
            return x_name
        if act == ACT_RELU:
            nodes.append(helper.make_node("Relu", [x_name], [out_name], name=fresh("relu")))
        else:
            lo, hi = (0.0, 6.0) if act == ACT_RELU6 else (-1.0, 1.0)
            nodes.append(helper.make_node("Clip", [x_name,
                                                   add_init("clip_min", np.array(lo, np.float32)),
                                                   add_init("clip_max", np.array(hi, np.float32))],
                                          [out_name], name=fresh("clip")))
        return out_name

    def main_out(op, base):
        """(name for the op's own output, final name after the activation)."""
        final = fresh(base)
        if op.opts.get("act", ACT_NONE) == ACT_NONE:
            return final, final
        return fresh(base + "_preact"), final

    for op in m.operators:
        outs = op.outputs
        if op.opcode == OP_DEQUANTIZE:
            continue                         # folded into consts
        if op.opcode in (OP_CONV_2D, OP_DEPTHWISE_CONV_2D):
            x_t = m.tensors[op.inputs[0]]
            w_i = op.inputs[1]
            b_i = op.inputs[2] if len(op.inputs) > 2 else -1
            if w_i not in consts:
                raise ConvertError("%s (operator %d) in %s has a non-constant filter"
                                   % (op.name, op.index, m.label))
            w = consts[w_i]
            if len(x_t.shape) != 4 or w.ndim != 4:
                raise ConvertError("%s (operator %d) in %s: expected 4-D input and filter"
                                   % (op.name, op.index, m.label))
            o = op.opts
            kh, kw = w.shape[1], w.shape[2]
            cin = x_t.shape[3]
            if o["padding"] == PAD_SAME:
                pt, pb = same_pads(x_t.shape[1], kh, o["stride_h"], o["dilation_h"])
                pl, pr = same_pads(x_t.shape[2], kw, o["stride_w"], o["dilation_w"])
            else:
                pt = pb = pl = pr = 0
            if op.opcode == OP_CONV_2D:
                if w.shape[3] != cin:
                    raise ConvertError("CONV_2D (operator %d) in %s: filter %s vs input %s"
                                       % (op.index, m.label, list(w.shape), x_t.shape))
                w_onnx = w.transpose(0, 3, 1, 2)          # OHWI -> OIHW
                group = 1
            else:
                mult = w.shape[3] // cin if cin else 0
                if w.shape[0] != 1 or mult * cin != w.shape[3]:
                    raise ConvertError("DEPTHWISE_CONV_2D (operator %d) in %s: filter %s vs input %s"
                                       % (op.index, m.label, list(w.shape), x_t.shape))
                w_onnx = w.transpose(3, 0, 1, 2)          # [1,kh,kw,C*M] -> [C*M,1,kh,kw]
                group = cin
            conv_in = [get(op.inputs[0], "NCHW"),
                       add_init(m.tensors[w_i].name + "_oihw", w_onnx.astype(np.float32))]
            if b_i >= 0:
                if b_i not in consts:
                    raise ConvertError("%s (operator %d) in %s has a non-constant bias"
                                       % (op.name, op.index, m.label))
                conv_in.append(add_init(m.tensors[b_i].name, consts[b_i].astype(np.float32).reshape(-1)))
            raw, final = main_out(op, m.tensors[outs[0]].name)
            nodes.append(helper.make_node(
                "Conv", conv_in, [raw], name=fresh(op.name.lower()),
                kernel_shape=[kh, kw], strides=[o["stride_h"], o["stride_w"]],
                dilations=[o["dilation_h"], o["dilation_w"]], pads=[pt, pl, pb, pr], group=group))
            value[outs[0]] = (activation(op, raw, final), "NCHW")
        elif op.opcode == OP_ADD:
            a, b = op.inputs[0], op.inputs[1]
            lay = "NCHW" if any(value.get(i, (None, ""))[1] == "NCHW" for i in (a, b)) else "ASIS"
            raw, final = main_out(op, m.tensors[outs[0]].name)
            nodes.append(helper.make_node("Add", [get(a, lay), get(b, lay)], [raw], name=fresh("add")))
            value[outs[0]] = (activation(op, raw, final), lay)
        elif op.opcode == OP_CONCATENATION:
            axis = op.opts.get("axis", 0)
            rank = len(m.tensors[outs[0]].shape)
            if axis < 0:
                axis += rank
            all_nchw = rank == 4 and all(value.get(i, (None, ""))[1] == "NCHW" for i in op.inputs)
            lay = "NCHW" if all_nchw else "ASIS"
            if all_nchw:
                axis = {0: 0, 1: 2, 2: 3, 3: 1}[axis]
            raw, final = main_out(op, m.tensors[outs[0]].name)
            nodes.append(helper.make_node("Concat", [get(i, lay) for i in op.inputs], [raw],
                                          axis=axis, name=fresh("concat")))
            value[outs[0]] = (activation(op, raw, final), lay)
        elif op.opcode == OP_RESHAPE:
            x_t, y_t = m.tensors[op.inputs[0]], m.tensors[outs[0]]
            target = list(y_t.shape)
            if not target:
                target = op.opts.get("new_shape") or []
                if len(op.inputs) > 1 and op.inputs[1] in consts:
                    target = [int(v) for v in consts[op.inputs[1]].reshape(-1)]
            if dynamic_batch:
                if not (x_t.shape and target and x_t.shape[0] == target[0]):
                    raise ConvertError("RESHAPE (operator %d) in %s changes the batch axis (%s -> %s); "
                                       "convert with --static-batch" % (op.index, m.label, x_t.shape, target))
                target = [0] + list(target[1:])       # 0 = copy the batch dim
            out_name = fresh(y_t.name)
            nodes.append(helper.make_node("Reshape",
                                          [get(op.inputs[0], "ASIS"),
                                           add_init(y_t.name + "_shape", np.array(target, np.int64))],
                                          [out_name], name=fresh("reshape")))
            value[outs[0]] = (out_name, "ASIS")

    graph_outputs = []
    for ti in m.outputs:
        t = m.tensors[ti]
        name = get(ti, "ASIS")
        # graph outputs carry the TFLite tensor names
        nodes.append(helper.make_node("Identity", [name], [onnx_name[ti]], name=fresh("output")))
        shape = list(t.shape)
        if dynamic_batch and shape:
            shape[0] = "N"
        graph_outputs.append(helper.make_tensor_value_info(onnx_name[ti], TensorProto.FLOAT, shape))

    graph = helper.make_graph(nodes, "tflite2onnx_" + os.path.splitext(m.label)[0],
                              graph_inputs, graph_outputs, initializer=inits)
    model = helper.make_model(graph, producer_name="osprey tflite2onnx",
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7                     # the IR version of opset 13
    if m.description:
        model.doc_string = "converted from %s (%s)" % (m.label, m.description)
    onnx.checker.check_model(model)
    return model


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="tflite2onnx",
        description="Convert a float TFLite model (ops: %s; fp16 weights via DEQUANTIZE are "
                    "folded to float32) to a float32 ONNX model, opset 13. Input/output names "
                    "and NHWC shapes are kept. Exit status 2 on an unsupported op or a bad file."
                    % SUPPORTED_NAMES)
    ap.add_argument("input", metavar="IN.tflite")
    ap.add_argument("output", metavar="OUT.onnx")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--dynamic-batch", dest="dynamic", action="store_true", default=True,
                   help="make the batch axis a symbolic dim 'N' (the default)")
    g.add_argument("--static-batch", dest="dynamic", action="store_false",
                   help="keep the TFLite batch size (1) as a fixed dim")
    args = ap.parse_args(argv)
    try:
        m = read_tflite(args.input)
        model = convert(m, dynamic_batch=args.dynamic)
    except ConvertError as e:
        print("tflite2onnx: %s" % e, file=sys.stderr)
        return 2
    except ImportError as e:
        print("tflite2onnx: %s (needs python3-onnx and python3-numpy; run with /usr/bin/python3)" % e,
              file=sys.stderr)
        return 2
    except Exception as e:                   # malformed input we did not foresee
        print("tflite2onnx: cannot convert %s: %s: %s" % (args.input, type(e).__name__, e),
              file=sys.stderr)
        return 2
    try:
        tmp = args.output + ".tmp"
        with open(tmp, "wb") as f:
            f.write(model.SerializeToString())
        os.replace(tmp, args.output)
    except OSError as e:
        print("tflite2onnx: cannot write %s: %s" % (args.output, e.strerror or e), file=sys.stderr)
        return 2
    ins = ", ".join("%s %s" % (i.name, _dims(i)) for i in model.graph.input)
    outs = ", ".join("%s %s" % (o.name, _dims(o)) for o in model.graph.output)
    print("tflite2onnx: wrote %s (%d nodes; inputs: %s; outputs: %s)"
          % (args.output, len(model.graph.node), ins, outs))
    return 0


def _dims(vi):
    return "[" + ",".join(d.dim_param or str(d.dim_value) for d in vi.type.tensor_type.shape.dim) + "]"


if __name__ == "__main__":
    sys.exit(main())
