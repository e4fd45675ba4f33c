"""A model file of one's own: osprey detect reads its layout from the output
shapes (or says which --postprocessor values fit), labels it from a labels
file beside it or --labels."""
import json
import shutil

from conftest import MEDIA, need, run, lines
from ospreyd_client import model, model_asset


def detect(osprey, *args):
    r = run(osprey, "detect", "--quiet", *args)
    assert r.returncode == 0, r.stderr
    return lines(r.stdout), r.stderr


def own_copy(tmp_path, catalog_model, name):
    dst = tmp_path / name
    shutil.copyfile(model(catalog_model), dst)
    return dst


def test_copy_of_the_ssd_is_an_ssd(osprey, tmp_path):
    mine = own_copy(tmp_path, "ssd-oidv4", "my-ssd.onnx")
    messi = need(MEDIA / "messi5.jpg")
    (rec,), err = detect(osprey, "--model", mine, "--threshold", "0.4", messi)
    assert "outputs fit postprocessor ssd" in err, err
    (ref,), _ = detect(osprey, "--model", "ssd-oidv4", "--threshold", "0.4", messi)
    # decoded and prepared as the catalog's model: the same boxes
    assert [(d["class"], d["box"]) for d in rec["detections"]] == \
        [(d["class"], d["box"]) for d in ref["detections"]]
    # no labels anywhere: the class index is all there is
    assert {d["label"] for d in rec["detections"]} <= {str(d["class"]) for d in rec["detections"]}
    # --labels FILE names them
    labels = model_asset("ssd-oidv4.labels")
    (named,), _ = detect(osprey, "--model", mine, "--labels", labels, "--threshold", "0.4", messi)
    assert "Person" in {d["label"] for d in named["detections"]}
    # and so does a labels file beside the model
    shutil.copyfile(labels, tmp_path / "my-ssd.labels")
    (beside,), _ = detect(osprey, "--model", mine, "--threshold", "0.4", messi)
    assert beside["detections"] == named["detections"]


def test_copy_of_ultraface_is_a_face_detector(osprey, tmp_path):
    mine = own_copy(tmp_path, "ultraface", "faces.onnx")
    (rec,), err = detect(osprey, "--model", mine, "--threshold", "0.5",
                         need(MEDIA / "astronaut.png"))
    assert "outputs fit postprocessor ultraface" in err
    (face,) = rec["detections"]
    assert face["label"] == "face" and face["score"] >= 0.9


def test_wrong_postprocessor_says_what_fits(osprey, tmp_path):
    mine = own_copy(tmp_path, "ssd-oidv4", "my-ssd.onnx")
    r = run(osprey, "detect", "--model", mine, "--postprocessor", "yolo", MEDIA / "messi5.jpg")
    assert r.returncode == 2
    assert "is no YOLO layout" in r.stderr and "fit --postprocessor ssd" in r.stderr, r.stderr
    # the embedder as published, its batch fixed at 1 (the catalog's copy
    # takes any batch, for cascades: docs/models.md)
    emb = run(osprey, "detect", "--model", model_asset("face-embed.onnx"), MEDIA / "messi5.jpg")
    assert emb.returncode == 2
    assert "[1,512]" in emb.stderr and "--postprocessor embedding" in emb.stderr, emb.stderr
    # the catalog's copy, its batch axis open: no detector layout is claimed
    # for it at load (a YOLO fit once was, then failed on the first frame)
    batch = run(osprey, "detect", "--model", model_asset("face-embed-batch.onnx"),
                MEDIA / "messi5.jpg")
    assert batch.returncode == 2, batch.stderr
    assert "[-1,512]" in batch.stderr and "--postprocessor embedding" in batch.stderr, batch.stderr
    r = run(osprey, "detect", "--model", mine, "--labels", tmp_path / "none.labels",
            MEDIA / "messi5.jpg")
    assert r.returncode == 2 and "none.labels" in r.stderr
