"""osprey ocr on real models (PP-OCRv4 detector + CTC recognizer): text
rendered with Debian's DejaVu Sans Bold is read exactly, a real street sign
yields its text boxes, and bad input is refused."""
import pytest

from conftest import MEDIA, model, model_asset, need, run, lines

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"  # Debian fonts-dejavu-core


def render(path, text):
    """Black text, 40 px DejaVu Sans Bold, on white with a 20 px margin."""
    from PIL import Image, ImageDraw, ImageFont  # Debian python3-pil
    font = ImageFont.truetype(str(need_font()), 40)
    left, top, right, bottom = font.getbbox(text)
    im = Image.new("RGB", (right + 40, bottom + 40), "white")
    ImageDraw.Draw(im).text((20, 20), text, font=font, fill="black")
    im.save(path)
    return path


def need_font():
    from pathlib import Path
    p = Path(FONT)
    if not p.exists():
        pytest.fail(f"{FONT} is missing: install Debian's fonts-dejavu-core (scripts/bootstrap.sh)")
    return p


def ocr(osprey, *args):
    model("ocr-det")
    model("ocr-rec")
    model_asset("ocr-rec.labels")
    r = run(osprey, "ocr", *args)
    assert r.returncode == 0, r.stderr
    return lines(r.stdout)


@pytest.mark.parametrize("text", ["OSPREY 2026", "AB12 CDE", "Hello world"])
def test_rendered_text_read_exactly(osprey, tmp_path, text):
    img = render(tmp_path / "line.png", text)
    recs = ocr(osprey, img)
    assert [r["text"] for r in recs] == [text], recs
    (rec,) = recs
    assert rec["score"] >= 0.95, rec
    assert len(rec["charScores"]) == len(text.replace(" ", "")) + text.count(" ")
    # the box holds the text: inside the image, around the 20 px margin
    x1, y1, x2, y2 = rec["box"]
    assert 5 <= x1 <= 25 and 5 <= y1 <= 35 and x2 >= 200 and y2 <= 78, rec
    assert len(rec["polygon"]) == 4


def test_two_lines_in_reading_order(osprey, tmp_path):
    from PIL import Image
    a = Image.open(render(tmp_path / "a.png", "AB12 CDE"))
    b = Image.open(render(tmp_path / "b.png", "Hello world"))
    im = Image.new("RGB", (max(a.width, b.width), a.height + b.height), "white")
    im.paste(b, (0, 0))
    im.paste(a, (0, b.height))
    im.save(tmp_path / "two.png")
    assert [r["text"] for r in ocr(osprey, tmp_path / "two.png")] == ["Hello world", "AB12 CDE"]


def test_scenetext_boxes(osprey):
    recs = ocr(osprey, need(MEDIA / "scenetext01.jpg"))
    assert len(recs) >= 4, recs
    texts = [r["text"] for r in recs]
    for word in ("NOTICE", "DOUBLE", "PARKING", "PROHIBITED"):
        assert word in texts, texts
    for r in recs:
        x1, y1, x2, y2 = r["box"]
        assert 0 <= x1 < x2 <= 640 and 0 <= y1 < y2 <= 480, r
        assert r["boxScore"] >= 0.6
        for x, y in r["polygon"]:
            assert x1 - 0.2 <= x <= x2 + 0.2 and y1 - 0.2 <= y <= y2 + 0.2, r
    tops = [r["box"][1] for r in recs]
    assert tops == sorted(tops), "reading order: top to bottom"


def test_no_text(osprey, tmp_path):
    from PIL import Image
    Image.new("RGB", (200, 120), "white").save(tmp_path / "blank.png")
    assert ocr(osprey, tmp_path / "blank.png") == []


def test_detector_alone_gives_polygons(osprey):
    r = run(osprey, "detect", "--quiet", "--model", "ocr-det", need(MEDIA / "scenetext01.jpg"))
    assert r.returncode == 0, r.stderr
    (rec,) = lines(r.stdout)
    assert len(rec["detections"]) >= 4
    for d in rec["detections"]:
        assert d["label"] == "text" and len(d["landmarks"]) == 4


def test_bad_input(osprey, tmp_path):
    r = run(osprey, "ocr")
    assert r.returncode == 2 and "no image" in r.stderr
    r = run(osprey, "ocr", tmp_path / "missing.png")
    assert r.returncode == 2 and "cannot open" in r.stderr
    (tmp_path / "junk.png").write_bytes(b"not an image")
    r = run(osprey, "ocr", tmp_path / "junk.png")
    assert r.returncode == 2, r.stderr
    r = run(osprey, "ocr", "--threshold", "2", tmp_path / "junk.png")
    assert r.returncode == 2 and "--threshold" in r.stderr
    r = run(osprey, "ocr", "--rec", "ultraface", need(MEDIA / "scenetext01.jpg"))
    assert r.returncode == 2 and "not a text recognizer" in r.stderr
    r = run(osprey, "ocr", "--help")
    assert r.returncode == 0 and "usage: osprey ocr" in r.stdout
