#!/usr/bin/python3
"""onnx_batch: copy an ONNX model exported with a batch of 1 so that it takes any batch.

    tools/onnx_batch.py IN.onnx OUT.onnx

Some models are exported with every graph input and output fixed at a batch
of 1 ([1,3,112,112] in, [1,512] out) although nothing in them depends on it
but the shapes written down. The copy gives dim 0 of each graph input and
output a symbolic size ("N"), drops the intermediate shapes recorded in the
graph (the runtime infers them again), and makes each Reshape whose target
shape is a constant starting with 1 keep its input's dim 0 instead (0, the
ONNX Reshape meaning "as the input's"). A model with a Reshape whose
constant target shape does not start with 1, or whose target shape is
computed, is refused (exit status 2): it may mix the batch with other
axes, and only a run can tell.

Needs only Debian's python3-onnx (and python3-numpy, which it uses).
The bytes written depend only on the input's, so set-up can remake the
copy at will.
"""

import sys

import onnx
from onnx import numpy_helper


def refuse(msg):
    print(f"onnx_batch: {msg}", file=sys.stderr)
    sys.exit(2)


def symbolic_batch(value_info, what):
    dims = value_info.type.tensor_type.shape.dim
    if not dims:
        refuse(f"{what} {value_info.name} has no shape")
    d0 = dims[0]
    if d0.dim_param:
        return 0
    if d0.dim_value != 1:
        refuse(f"{what} {value_info.name} has batch {d0.dim_value}, not 1")
    d0.Clear()
    d0.dim_param = "N"
    return 1


def reshape_targets(graph):
    """Each Reshape's constant target shape: its initializer or Constant
    node, by name. Refuses a Reshape whose target is computed."""
    inits = {t.name: t for t in graph.initializer}
    consts = {}
    for n in graph.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    consts[n.output[0]] = a.t
    out = []
    for n in graph.node:
        if n.op_type != "Reshape":
            continue
        name = n.input[1]
        t = inits.get(name) or consts.get(name)
        if t is None:
            refuse(f"Reshape {n.name or n.output[0]}: its target shape {name} is computed")
        out.append((n, t))
    return out


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    model = onnx.load(argv[1])
    g = model.graph
    inits = {t.name for t in g.initializer}
    changed = 0
    for vi in g.input:
        if vi.name not in inits:
            changed += symbolic_batch(vi, "input")
    for vi in g.output:
        changed += symbolic_batch(vi, "output")
    done = set()  # a target shape two Reshapes share is changed once
    for n, t in reshape_targets(g):
        if n.input[1] in done:
            continue
        done.add(n.input[1])
        shape = numpy_helper.to_array(t).copy()
        if shape.ndim != 1 or shape.size < 1 or shape[0] not in (0, 1):
            refuse(f"Reshape {n.name or n.output[0]}: target shape {shape.tolist()} does not start with 1")
        if shape[0] == 1:
            shape[0] = 0
            t.CopyFrom(numpy_helper.from_array(shape, t.name))
            changed += 1
    del g.value_info[:]
    onnx.checker.check_model(model)
    onnx.save(model, argv[2])
    print(f"onnx_batch: {argv[2]}: {changed} shape(s) made batch-free")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
