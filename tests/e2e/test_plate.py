"""A licence plate read by a cascade (docs/cascades.md, Plates): the car
found by the SSD, the text inside it by ocr-det, the text read by ocr-rec,
on licenseplate_restored.png — OpenCV's motion-blurred car
(licenseplate_motion.jpg) with its blur undone by set-up (tools/deblur.py).
The plate says 127-RFS (seen on the restored photo); what is read is scored
as characters right out of its 6 letters and digits: 6 less the edit
distance from what was read, the separator left out. Nothing read, or
noise, scores 0 or 1."""
import json

import pytest

from conftest import lines, media, model, run

PLATE = "127RFS"
CHAIN = {"model": "ssd-oidv4",
         "then": [{"model": "ocr-det", "labels": ["Car"], "as": "plates",
                   "then": [{"model": "ocr-rec"}]}]}


@pytest.fixture(scope="module", autouse=True)
def models():
    for name in ("ssd-oidv4", "ocr-det", "ocr-rec"):
        model(name)


def edit_distance(a, b):
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[len(b)]


def chars_right(text):
    read = "".join(c for c in text.upper() if c.isalnum())
    return max(0, len(PLATE) - edit_distance(read, PLATE))


def test_the_score():
    assert chars_right("127-RFS") == 6
    assert chars_right("127-RFSY") == 5
    assert chars_right("127-RES") == 5
    assert chars_right("") == 0 and chars_right("V") == 0


def best_text(osprey, tmp_path, image, chain):
    cfg = tmp_path / "plate.json"
    cfg.write_text(json.dumps(chain))
    r = run(osprey, "detect", "--quiet", "--config", cfg, image)
    assert r.returncode == 0, r.stderr
    (rec,) = lines(r.stdout)
    cars = [d for d in rec["detections"] if d["label"] == "Car"]
    assert cars, rec
    read = [p for d in cars for p in d.get("plates", []) if p.get("text")]
    return max(read, key=lambda p: p["textScore"], default={"text": "", "box": None})


def test_the_restored_plate_is_read_whole(osprey, tmp_path):
    plate = best_text(osprey, tmp_path, media("licenseplate_restored.png"), CHAIN)
    assert chars_right(plate["text"]) == 6, plate
    # found on the plate, below the boot's handle: [238, 233, 350, 285] measured
    x1, y1, x2, y2 = plate["box"]
    assert 220 < x1 < x2 < 370 and 215 < y1 < y2 < 300, plate


def test_a_pattern_keeps_the_plate(osprey, tmp_path):
    step = dict(CHAIN["then"][0], then=[{"model": "ocr-rec", "pattern": "[0-9]{3}-?[A-Z]{3}"}])
    plate = best_text(osprey, tmp_path, media("licenseplate_restored.png"), dict(CHAIN, then=[step]))
    assert chars_right(plate["text"]) == 6, plate
