"""osprey detect --out: a snapshot for any detections, each label in its own
colour, and a face detector's landmarks on the face."""
from conftest import MEDIA, need, run, lines
from ospreyd_client import jpeg_to_rgb as jpeg_image, read_png


def detect(osprey, *args):
    r = run(osprey, "detect", "--quiet", *args)
    assert r.returncode == 0, r.stderr
    return lines(r.stdout), r.stderr


def pixel(img, x, y):
    i = (int(y) * img.w + int(x)) * 3
    return tuple(img.data[i:i + 3])


def near(a, b, tol=70):
    return sum(abs(p - q) for p, q in zip(a, b)) <= tol


def edge_colour(img, box):
    """The colour of a box's drawn outline: the middle of its left edge, one
    pixel in (the outline is 2 pixels wide and grows inwards)."""
    x1, y1, x2, y2 = box
    return pixel(img, x1 + 1, (y1 + y2) / 2)


def test_snapshot_of_any_detections(osprey, tmp_path):
    out = tmp_path / "snaps"
    recs, err = detect(osprey, "--out", out, need(MEDIA / "chelsea.png"),
                       need(MEDIA / "coffee.png"), need(MEDIA / "motorcycle_left.png"))
    assert [r["detections"] != [] for r in recs] == [True, True, False], recs
    assert sorted(p.name for p in out.iterdir()) == ["chelsea-best.jpg", "coffee-best.jpg"]
    assert "chelsea-best.jpg" in err and "coffee-best.jpg" in err
    # the one without detections says so, rather than leaving a silent gap
    assert "motorcycle_left.png: no detections, no snapshot" in err
    cat = jpeg_image(out / "chelsea-best.jpg")
    assert (cat.w, cat.h) == (451, 300)


def test_each_label_its_colour(osprey, tmp_path):
    recs, err = detect(osprey, "--model", "ssd-oidv4", "--out", tmp_path, "--per-frame", "--every", "700", need(MEDIA / "vtest.avi"))
    snap = jpeg_image(tmp_path / "vtest-best.jpg")
    best = int(err.split("snapshot of frame ")[1].split()[0])
    (rec,) = [r for r in recs if r["frame"] == best]
    colours = {}
    for d in rec["detections"]:
        colours.setdefault(d["label"], []).append(edge_colour(snap, d["box"]))
    assert {"Person", "Car"} <= set(colours), colours
    person, car = colours["Person"][0], colours["Car"][0]
    assert not near(person, car), (person, car)
    # one label, one colour, whichever box (a label over an edge can hide one)
    same = sum(near(c, person) for c in colours["Person"])
    assert same >= len(colours["Person"]) - 2, colours["Person"]


def test_landmarks_drawn(osprey, tmp_path):
    (rec,), _ = detect(osprey, "--model", "blazeface", "--out", tmp_path,
                       need(MEDIA / "astronaut.png"))
    (face,) = rec["detections"]
    assert len(face["landmarks"]) == 6
    snap = jpeg_image(tmp_path / "astronaut-best.jpg")
    box = edge_colour(snap, face["box"])
    orig = read_png(MEDIA / "astronaut.png")
    # each landmark is a dot in the face's colour where the photo has skin
    for x, y in face["landmarks"]:
        if not (face["box"][0] < x < face["box"][2] and face["box"][1] < y < face["box"][3]):
            continue  # an ear point on the box's edge
        assert near(pixel(snap, x, y), box, 100), (x, y, pixel(snap, x, y), box)
        assert not near(pixel(orig, x, y), box), (x, y)

