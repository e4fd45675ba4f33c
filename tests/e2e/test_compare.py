"""osprey compare: face detection (ultraface), a crop with a margin, and the
face-embed embedder; the same face scores high, different people low."""
from conftest import MEDIA, model, need, run, lines


def compare(osprey, a, b, *args):
    model("face-embed")
    r = run(osprey, "compare", *args, a, b)
    assert r.returncode == 0, r.stderr
    (rec,) = lines(r.stdout)
    return rec


def mirror(src, dst):
    from PIL import Image, ImageOps  # Debian python3-pil
    ImageOps.mirror(Image.open(src).convert("RGB")).save(dst)
    return dst


def test_same_face_mirrored(osprey, tmp_path):
    a = need(MEDIA / "astronaut.png")
    rec = compare(osprey, a, mirror(a, tmp_path / "astronaut-mirror.png"))
    assert rec["similarity"] >= 0.8, rec
    # the mirrored box is the original's reflection (the image is 512 wide)
    ax1, _, ax2, _ = rec["faceA"]["box"]
    bx1, _, bx2, _ = rec["faceB"]["box"]
    assert abs((512 - ax2) - bx1) < 15 and abs((512 - ax1) - bx2) < 15, rec


def test_same_image_is_one(osprey):
    a = need(MEDIA / "astronaut.png")
    assert compare(osprey, a, a)["similarity"] >= 0.999


def test_different_people(osprey):
    rec = compare(osprey, need(MEDIA / "astronaut.png"), need(MEDIA / "messi5.jpg"))
    assert rec["similarity"] <= 0.3, rec
    assert rec["faceB"]["score"] >= 0.9


def test_no_face(osprey):
    r = run(osprey, "compare", need(MEDIA / "astronaut.png"), need(MEDIA / "coffee.png"))
    assert r.returncode == 1 and "no face" in r.stderr
    assert r.stdout == ""


def test_embedding_of_a_face_crop(osprey, tmp_path):
    from PIL import Image
    Image.open(need(MEDIA / "astronaut.png")).convert("RGB").crop((170, 50, 280, 185)).save(
        tmp_path / "face.png")
    r = run(osprey, "detect", "--quiet", "--model", "face-embed", tmp_path / "face.png")
    assert r.returncode == 0, r.stderr
    (rec,) = lines(r.stdout)
    assert rec["kind"] == "embedding" and len(rec["embedding"]) == 512
    assert abs(sum(v * v for v in rec["embedding"]) - 1) < 1e-3


def test_bad_usage(osprey, tmp_path):
    r = run(osprey, "compare", need(MEDIA / "astronaut.png"))
    assert r.returncode == 2 and "exactly two" in r.stderr
    r = run(osprey, "compare", tmp_path / "none.png", need(MEDIA / "astronaut.png"))
    assert r.returncode == 2 and "cannot open" in r.stderr
    r = run(osprey, "compare", "--margin", "-1", need(MEDIA / "astronaut.png"), need(MEDIA / "astronaut.png"))
    assert r.returncode == 2 and "--margin" in r.stderr
