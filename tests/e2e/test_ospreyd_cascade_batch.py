"""face-embed is set-up's copy of the package's model taking any batch
(tools/onnx_batch.py): it embeds a face as the original does, on real
faces."""
import base64
import math
import struct

from assets import model, model_asset
from ospreyd_client import Image, media_image, spawn  # noqa: F401


def vector(field):
    raw = base64.b64decode(field)
    return struct.unpack(f"<{len(raw) // 4}f", raw)


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def square_crop(img: Image, box, margin=0.2) -> Image:
    """The square around box grown by margin, inside the picture."""
    x1, y1, x2, y2 = box
    side = max(x2 - x1, y2 - y1) * (1 + margin)
    cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
    l, t = max(0, int(cx - side / 2)), max(0, int(cy - side / 2))
    r, b = min(img.w, int(cx + side / 2)), min(img.h, int(cy + side / 2))
    rows = [img.data[(y * img.w + l) * 3:(y * img.w + r) * 3] for y in range(t, b)]
    return Image(r - l, b - t, 3, b"".join(rows))


def test_the_batched_copy_embeds_as_the_original(spawn):
    """The catalog's face-embed (the copy taking any batch) and the
    package's face-embed.onnx give one face the same embedding."""
    copy, original = model("face-embed"), model_asset("face-embed.onnx")
    assert copy.name == "face-embed-batch.onnx", copy
    w = spawn()
    b64 = {"embeddingEncoding": "base64"}
    ready = w.conn.hello({"runtime": "onnxruntime", "models": [
        {"model": "ultraface"}, {"model": "face-embed", **b64},
        {"model": "face-embed", "path": str(original), **b64}]})
    assert ready.get("status") == "ready" and ready["models"] == 3, (ready, w.describe())
    img = media_image("basketball1.png")
    faces = w.conn.infer_raw(0, img)["detections"]
    assert len(faces) >= 2, faces
    for face in faces:
        crop = square_crop(img, face["box"])
        a = vector(w.conn.infer_raw(1, crop)["embeddingB64"])
        b = vector(w.conn.infer_raw(2, crop)["embeddingB64"])
        assert len(a) == len(b) == 512
        assert cosine(a, b) >= 0.9999, (face, cosine(a, b))
