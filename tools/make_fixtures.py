#!/usr/bin/python3
"""Write tiny ONNX models whose outputs are known, one per output layout a
postprocessor reads, so a decoder can be checked end to end through ONNX
Runtime and the letterbox with nothing learned in the way.

    /usr/bin/python3 tools/make_fixtures.py DIR

Each model takes an image input [1,3,320,320] and emits constant tensors:
every output is Add(constant, Mul(ReduceMean(input), 0)), so the runtime
must read the input but the numbers never depend on it. Beside each
<name>.onnx goes <name>.json:

    {"model": "<name>.onnx", "postprocessor": ..., "input": [w, h],
     "inputType": "float32" | "uint8", "config": {model config keys} | null,
     "what": "what the outputs encode",
     "expect": [{"class", "label", "score", "box": [x1,y1,x2,y2] in INPUT
                pixels, optional "landmarks": [[x,y]…] in input pixels}],
     best score first}

The expected boxes are what a correct decoder reports in input pixels; the
test maps them to the frame through the letterbox itself. The fixtures:

    yolo_v8       [1,84,2100]   Ultralytics v8/v11, channel-major
    yolo_v8t      [1,2100,84]   the same, transposed
    yolo_v5       [1,6300,85]   v5/v7 with objectness (3 anchors a cell)
    yolo_e2e      [1,300,6]     NMS-free end-to-end (v10/YOLO26)
    yolox         [1,2100,85]   YOLOX with raw grid outputs
    yolonas       boxes [1,2100,4] + scores [1,2100,80], uint8 input
    ssd_nms       TFLite_Detection_PostProcess: boxes, classes, scores,
                  count, listed in a shuffled order
    scrfd         9 outputs (scores/boxes/landmarks at strides 8/16/32)

All YOLO-family fixtures hold the same scene: a person (class 0, 0.9), a
dog (class 16, 0.8), a weaker duplicate of the person (0.7) that class-aware
NMS removes (the end-to-end export keeps it: its graph already chose), and a
car at 0.1, under every threshold used.

Needs numpy and onnx (Debian: python3-numpy python3-onnx).
"""
import json
import math
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SIDE = 320
CELLS = sum((SIDE // s) ** 2 for s in (8, 16, 32))  # 2100 anchor-free cells

PERSON = dict(cls=0, label="person", score=0.9, box=[40.0, 60.0, 120.0, 220.0])
DOG = dict(cls=16, label="dog", score=0.8, box=[200.0, 100.0, 300.0, 200.0])
DUP = dict(cls=0, label="person", score=0.7, box=[44.0, 64.0, 124.0, 224.0])
LOW = dict(cls=2, label="car", score=0.1, box=[10.0, 10.0, 30.0, 30.0])
SCENE = [PERSON, DOG, DUP, LOW]


def cxcywh(box):
    x1, y1, x2, y2 = box
    return (x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1


def expect(dets):
    return [dict(**{"class": d["cls"]}, label=d["label"], score=d["score"], box=d["box"],
                 **({"landmarks": d["landmarks"]} if "landmarks" in d else {}))
            for d in dets]


def model(outputs, input_type=TensorProto.FLOAT):
    """A graph that returns each (name, array) of outputs, reading the input."""
    nodes = []
    src = "images"
    if input_type != TensorProto.FLOAT:
        nodes.append(helper.make_node("Cast", ["images"], ["images_f"], to=TensorProto.FLOAT))
        src = "images_f"
    nodes += [
        helper.make_node("ReduceMean", [src], ["mean"], keepdims=0),
        helper.make_node("Constant", [], ["zero"],
                         value=numpy_helper.from_array(np.array(0, np.float32), "zero")),
        helper.make_node("Mul", ["mean", "zero"], ["nothing"]),
    ]
    outs = []
    for name, arr in outputs:
        arr = np.ascontiguousarray(arr, dtype=np.float32)
        nodes.append(helper.make_node("Constant", [], [name + "_c"],
                                      value=numpy_helper.from_array(arr, name + "_c")))
        nodes.append(helper.make_node("Add", [name + "_c", "nothing"], [name]))
        outs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(arr.shape)))
    graph = helper.make_graph(
        nodes, "fixture",
        [helper.make_tensor_value_info("images", input_type, [1, 3, SIDE, SIDE])], outs)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def yolo_v8():
    out = np.zeros((84, CELLS), np.float32)
    for i, d in zip((5, 700, 1500, 2000), SCENE):
        out[0:4, i] = cxcywh(d["box"])
        out[4 + d["cls"], i] = d["score"]
    out[4 + 7, 700] = 0.5  # a weaker class of the dog's anchor: not reported
    return out


def yolo_v5():
    out = np.zeros((3 * CELLS, 85), np.float32)
    for i, d in zip((17, 2222, 4444, 6000), SCENE):
        out[i, 0:4] = cxcywh(d["box"])
        out[i, 4] = 0.95
        out[i, 5 + d["cls"]] = d["score"] / 0.95
    out[3000, 4] = 0.99  # high objectness, no class above threshold
    out[3000, 0:4] = (160, 160, 50, 50)
    out[3000, 5 + 3] = 0.2
    return out


def yolo_e2e():
    out = np.zeros((300, 6), np.float32)
    for i, d in enumerate(sorted(SCENE, key=lambda d: -d["score"])):
        out[i, 0:4] = d["box"]
        out[i, 4] = d["score"]
        out[i, 5] = d["cls"]
    return out


def yolox():
    out = np.zeros((CELLS, 85), np.float32)
    starts = {8: 0, 16: (SIDE // 8) ** 2, 32: (SIDE // 8) ** 2 + (SIDE // 16) ** 2}
    for s, d in zip((8, 16, 32, 16), SCENE):
        cx, cy, w, h = cxcywh(d["box"])
        gx, gy = int(cx // s), int(cy // s)
        i = starts[s] + gy * (SIDE // s) + gx
        out[i, 0:4] = (cx / s - gx, cy / s - gy, math.log(w / s), math.log(h / s))
        out[i, 4] = d["score"]
        out[i, 5 + d["cls"]] = 1.0
    return out


def yolonas():
    boxes = np.zeros((CELLS, 4), np.float32)
    scores = np.zeros((CELLS, 80), np.float32)
    for i, d in zip((9, 999, 1999, 2099), SCENE):
        boxes[i] = d["box"]
        scores[i, d["cls"]] = d["score"]
    return boxes, scores


def ssd_nms():
    n = 10
    boxes = np.zeros((n, 4), np.float32)
    classes = np.zeros(n, np.float32)
    scores = np.zeros(n, np.float32)
    for i, d in enumerate((PERSON, DOG, LOW)):
        x1, y1, x2, y2 = (v / SIDE for v in d["box"])
        boxes[i] = (y1, x1, y2, x2)
        classes[i] = d["cls"]
        scores[i] = d["score"]
    boxes[3] = (0.5, 0.5, 0.9, 0.9)  # beyond the count: never reported
    classes[3], scores[3] = 5, 0.99
    return boxes, classes, scores, np.array([3], np.float32)


SCRFD_FACE = dict(cls=0, label="face", score=0.88, box=[56.0, 64.0, 104.0, 136.0])


def scrfd():
    """Strides 8/16/32 at 320: 40x40, 20x20, 10x10 cells, 2 anchors each."""
    outs = {}
    for s in (8, 16, 32):
        a = (SIDE // s) ** 2 * 2
        outs[s] = [np.zeros((a, 1), np.float32), np.zeros((a, 4), np.float32),
                   np.zeros((a, 10), np.float32)]
    # stride 16, cell (5, 6), second anchor: centre (80, 96)
    i = (6 * 20 + 5) * 2 + 1
    sc, bx, kp = outs[16]
    sc[i] = SCRFD_FACE["score"]
    bx[i] = (1.5, 2.0, 1.5, 2.5)  # (80-24, 96-32, 80+24, 96+40)
    offs = [(-0.5, -0.5), (0.5, -0.5), (0.0, 0.25), (-0.4, 1.0), (0.4, 1.0)]
    kp[i] = np.array(offs, np.float32).reshape(-1)
    marks = [[80 + dx * 16, 96 + dy * 16] for dx, dy in offs]
    # a weak face at stride 8, under the 0.5 confidence of the config
    outs[8][0][100] = 0.3
    outs[8][1][100] = (1, 1, 1, 1)
    face = dict(SCRFD_FACE, landmarks=marks)
    order = [(f"score_{s}", outs[s][0]) for s in (8, 16, 32)] + \
            [(f"bbox_{s}", outs[s][1]) for s in (8, 16, 32)] + \
            [(f"kps_{s}", outs[s][2]) for s in (8, 16, 32)]
    return order, face


def main(argv):
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    out = Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    yolo_expect = expect([PERSON, DOG])
    v8 = yolo_v8()
    nas_boxes, nas_scores = yolonas()
    b, c, s, n = ssd_nms()
    scrfd_outs, face = scrfd()
    fixtures = [
        ("yolo_v8", "yolo", [("output0", v8[None])], None, yolo_expect,
         "YOLOv8 [1,84,2100]: cx,cy,w,h then 80 class scores per anchor column"),
        ("yolo_v8t", "yolo", [("output0", v8.T[None])], None, yolo_expect,
         "YOLOv8 transposed [1,2100,84]: one row per anchor"),
        ("yolo_v5", "yolo", [("output0", yolo_v5()[None])], None, yolo_expect,
         "YOLOv5 [1,6300,85]: cx,cy,w,h, objectness 0.95, class scores; score = obj*cls"),
        ("yolo_e2e", "yolo", [("output0", yolo_e2e()[None])], None,
         expect([PERSON, DOG, DUP]),
         "end-to-end [1,300,6]: x1,y1,x2,y2,score,class; NMS-free, so the duplicate stays"),
        ("yolo_max1", "yolo", [("output0", v8[None])], {"maxDetections": 1, "confidence": 0.3},
         expect([PERSON]), "the yolo_v8 outputs with maxDetections 1 from a --config file"),
        ("yolox", "yolox", [("output", yolox()[None])], None, yolo_expect,
         "YOLOX [1,2100,85] raw: (x+gx)*s, exp(w)*s on the 8/16/32 grids, obj*cls"),
        ("yolonas", "yolonas", [("boxes", nas_boxes[None]), ("scores", nas_scores[None])], None,
         yolo_expect, "YOLO-NAS: boxes [1,2100,4] x1y1x2y2 + scores [1,2100,80]; uint8 input"),
        ("ssd_nms", "ssd-nms",
         [("detection_scores", s[None]), ("detection_boxes", b[None]),
          ("num_detections", n), ("detection_classes", c[None])], None,
         expect([PERSON, DOG]),
         "TFLite_Detection_PostProcess: ymin,xmin,ymax,xmax normalised; count 3 of 10 rows"),
        ("scrfd", "scrfd", scrfd_outs, {"inputNormalization": "scrfd", "confidence": 0.5},
         expect([face]), "SCRFD: 9 outputs, one face at stride 16 with 5 landmarks"),
    ]
    for name, post, outputs, config, exp, what in fixtures:
        itype = TensorProto.UINT8 if name == "yolonas" else TensorProto.FLOAT
        onnx.save(model(outputs, itype), str(out / f"{name}.onnx"))
        side = {"model": f"{name}.onnx", "postprocessor": post, "input": [SIDE, SIDE],
                "inputType": "uint8" if itype == TensorProto.UINT8 else "float32",
                "config": config, "what": what, "expect": exp}
        (out / f"{name}.json").write_text(json.dumps(side, indent=1) + "\n")
        print(f"{name}: {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
