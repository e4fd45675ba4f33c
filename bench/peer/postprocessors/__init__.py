"""Decoders for the Python pool worker when it is measured next to ospreyd.

The Python worker imports ``POSTPROCESSORS`` from a package of this name and
calls ``POSTPROCESSORS[name](outputs, config, frame_w, frame_h, scale, pad)``
after every inference: ``outputs`` maps the model's output names to numpy
arrays, ``config`` is the model's config from the handshake, ``scale`` and
``pad`` describe the letterbox (1.0 and (0, 0) after a plain resize). The
decoder returns the result record; the worker adds the timing fields.

Only the two models ``make bench-peer`` drives are covered, decoded the way
osprey decodes them (src/post/ssd.c, src/post/ultraface.c, src/post/nms.c) so
that both servers report the same detections in the same shape:

    {"label": "Person", "class": 4, "score": 0.46, "box": [x1, y1, x2, y2]}

box in pixels of the original frame. Everything is vectorised numpy: this
code is part of what the measurement charges to the Python worker.
"""

import math
import os
import threading

import numpy as np

__all__ = ["POSTPROCESSORS"]

_MAX_DETECTIONS = 100
_cache_lock = threading.Lock()
_label_cache = {}
_anchor_cache = {}


# ---- shared helpers -----------------------------------------------------------


def _labels(config, fallback):
    """The model's label list: the file named by ``labels``, else the
    ``.labels`` file beside the model (osprey's convention), else fallback."""
    path = config.get("labels") or os.path.splitext(str(config.get("path", "")))[0] + ".labels"
    with _cache_lock:
        if path in _label_cache:
            return _label_cache[path]
    try:
        with open(path, encoding="utf-8") as f:
            names = [line.rstrip("\r\n") for line in f]
    except OSError:
        names = list(fallback)
    with _cache_lock:
        _label_cache[path] = names
    return names


def _greedy_nms(boxes, scores, classes, iou_limit, keep_max):
    """Indices kept by greedy NMS, best score first. A box is dropped when its
    IoU with a kept box of the same class exceeds iou_limit."""
    if scores.size == 0:
        return np.empty(0, dtype=np.intp)
    # Separate the classes in space so one pass does per-class suppression.
    span = float(np.abs(boxes).max()) * 2.0 + 1.0
    shifted = boxes + (classes.astype(np.float64) * span)[:, None]
    x1, y1, x2, y2 = shifted[:, 0], shifted[:, 1], shifted[:, 2], shifted[:, 3]
    area = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
    order = np.argsort(-scores, kind="stable")
    keep = []
    while order.size and len(keep) < keep_max:
        best = order[0]
        keep.append(best)
        rest = order[1:]
        if rest.size == 0:
            break
        iw = np.clip(np.minimum(x2[best], x2[rest]) - np.maximum(x1[best], x1[rest]), 0, None)
        ih = np.clip(np.minimum(y2[best], y2[rest]) - np.maximum(y1[best], y1[rest]), 0, None)
        inter = iw * ih
        union = area[best] + area[rest] - inter
        with np.errstate(divide="ignore", invalid="ignore"):
            iou = np.where((union > 0) & (area[best] > 0) & (area[rest] > 0), inter / union, 0.0)
        order = rest[iou <= iou_limit]
    return np.asarray(keep, dtype=np.intp)


def _to_frame(boxes, config, frame_w, frame_h, scale, pad):
    """Boxes normalised to the model input -> pixels of the original frame,
    clamped to it."""
    if config.get("preprocessMode", "letterbox") == "resize":
        out = boxes * np.array([frame_w, frame_h, frame_w, frame_h], dtype=np.float64)
    else:
        side = float(config.get("inputSize", 640))
        s = float(scale) if scale else 1.0
        px, py = float(pad[0]), float(pad[1])
        out = (boxes * side - np.array([px, py, px, py])) / s
    np.clip(out[:, 0::2], 0, frame_w, out=out[:, 0::2])
    np.clip(out[:, 1::2], 0, frame_h, out=out[:, 1::2])
    return out


def _record(boxes, scores, classes, names):
    dets = []
    for b, s, c in zip(boxes.tolist(), scores.tolist(), classes.tolist()):
        c = int(c)
        label = names[c] if 0 <= c < len(names) and names[c] else str(c)
        dets.append({
            "label": label,
            "class": c,
            "score": round(s, 4),
            "box": [round(b[0], 1), round(b[1], 1), round(b[2], 1), round(b[3], 1)],
        })
    return {"kind": "detections", "detections": dets}


def _pick(outputs, last_dim, hint, exclude=None):
    """The output array with the given last dimension, preferring a name that
    contains hint."""
    found = None
    for name, arr in outputs.items():
        if name == exclude or getattr(arr, "ndim", 0) < 2 or arr.shape[-1] != last_dim:
            continue
        if hint in name.lower():
            return name
        if found is None:
            found = name
    return found


def _settings(config, conf_default, iou_default):
    conf = float(config.get("confidence", conf_default))
    iou = float(config.get("nmsIouThreshold", iou_default))
    keep = int(config.get("maxDetections", _MAX_DETECTIONS))
    return conf, iou, keep


# ---- SSD (TF object-detection API, SSD-MobileNetV2 Open Images V4) -----------


def _ssd_anchors():
    """The TF object-detection SSD anchor grid as rows (yc, xc, h, w): six
    layers on 19, 10, 5, 3, 2, 1 cells, scales 0.2 .. 0.95, the model's own
    ratio order, an extra sqrt(s * s_next) anchor per cell, the lowest layer
    reduced to three anchors; cells in y, x order, anchors innermost."""
    with _cache_lock:
        got = _anchor_cache.get("ssd")
    if got is not None:
        return got
    maps = [19, 10, 5, 3, 2, 1]
    ratios = [1.0, 2.0, 0.5, 3.0, 1.0 / 3.0]
    lo, hi = 0.2, 0.95
    layers = len(maps)
    scale = [lo + (hi - lo) * i / (layers - 1) for i in range(layers)] + [1.0]
    rows = []
    for i, f in enumerate(maps):
        if i == 0:
            specs = [(0.1, 1.0), (scale[0], 2.0), (scale[0], 0.5)]
        else:
            specs = [(scale[i], r) for r in ratios] + [(math.sqrt(scale[i] * scale[i + 1]), 1.0)]
        hw = np.array([(s / math.sqrt(r), s * math.sqrt(r)) for s, r in specs])
        centres = (np.arange(f) + 0.5) / f
        cy, cx = np.meshgrid(centres, centres, indexing="ij")
        k = len(specs)
        grid = np.empty((f, f, k, 4))
        grid[..., 0] = cy[..., None]
        grid[..., 1] = cx[..., None]
        grid[..., 2] = hw[:, 0]
        grid[..., 3] = hw[:, 1]
        rows.append(grid.reshape(-1, 4))
    anchors = np.concatenate(rows).astype(np.float32)
    with _cache_lock:
        _anchor_cache["ssd"] = anchors
    return anchors


def ssd(outputs, config, frame_w, frame_h, scale, pad):
    box_name = _pick(outputs, 4, "box")
    cls_name = None
    for name, arr in outputs.items():
        if name != box_name and getattr(arr, "ndim", 0) >= 2:
            cls_name = name
            break
    if box_name is None or cls_name is None:
        raise ValueError("ssd needs a [1,N,4] box output and a [1,N,C] class output")
    enc = np.asarray(outputs[box_name], dtype=np.float32).reshape(-1, 4)
    logits = np.asarray(outputs[cls_name], dtype=np.float32)
    logits = logits.reshape(enc.shape[0], -1)
    anchors = _ssd_anchors()
    if anchors.shape[0] != enc.shape[0]:
        raise ValueError(f"ssd: the model has {enc.shape[0]} boxes, the anchor grid {anchors.shape[0]}")
    conf, iou, keep = _settings(config, 0.3, 0.45)

    # Filter on the logit first (class 0 is the background): only the few
    # candidates above the threshold pay for the sigmoid and the box decode.
    body = logits[:, 1:]
    if 0.0 < conf < 1.0:
        floor = math.log(conf / (1.0 - conf)) - 1e-3
        rows, cols = np.nonzero(body >= floor)
    else:
        rows, cols = np.nonzero(np.isfinite(body))
    score = 1.0 / (1.0 + np.exp(-body[rows, cols].astype(np.float64)))
    ok = score >= conf
    rows, cols, score = rows[ok], cols[ok] + 1, score[ok]

    a = anchors[rows].astype(np.float64)
    e = enc[rows].astype(np.float64)
    yc = e[:, 0] / 10.0 * a[:, 2] + a[:, 0]
    xc = e[:, 1] / 10.0 * a[:, 3] + a[:, 1]
    h = np.exp(e[:, 2] / 5.0) * a[:, 2]
    w = np.exp(e[:, 3] / 5.0) * a[:, 3]
    boxes = np.stack([xc - w / 2, yc - h / 2, xc + w / 2, yc + h / 2], axis=1)

    kept = _greedy_nms(boxes, score, cols, iou, keep)
    boxes = _to_frame(boxes[kept], config, frame_w, frame_h, scale, pad)
    return _record(boxes, score[kept], cols[kept], _labels(config, ()))


# ---- UltraFace (the graph decodes its own boxes) -----------------------------


def ultraface(outputs, config, frame_w, frame_h, scale, pad):
    score_name = _pick(outputs, 2, "score")
    box_name = _pick(outputs, 4, "box", exclude=score_name)
    if score_name is None or box_name is None:
        raise ValueError("ultraface needs outputs scores [1,N,2] and boxes [1,N,4]")
    scores = np.asarray(outputs[score_name], dtype=np.float32).reshape(-1, 2)[:, 1]
    boxes = np.asarray(outputs[box_name], dtype=np.float32).reshape(-1, 4)
    conf, iou, keep = _settings(config, 0.5, 0.4)
    idx = np.nonzero(scores >= conf)[0]
    score = scores[idx].astype(np.float64)
    corners = boxes[idx].astype(np.float64)
    classes = np.zeros(idx.size, dtype=np.intp)
    kept = _greedy_nms(corners, score, classes, iou, keep)
    corners = _to_frame(corners[kept], config, frame_w, frame_h, scale, pad)
    return _record(corners, score[kept], classes[kept], _labels(config, ("face",)))


POSTPROCESSORS = {"ssd": ssd, "ultraface": ultraface}
