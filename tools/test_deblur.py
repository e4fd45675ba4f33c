"""tools/deblur.py on a picture blurred here by the motion it undoes: the
restored picture is much nearer the sharp one than the blurred one is, and
a blur of another direction is not undone."""
import subprocess
import sys
from pathlib import Path

import numpy as np
from PIL import Image

TOOLS = Path(__file__).resolve().parent
sys.path.insert(0, str(TOOLS))
import deblur  # noqa: E402


def sharp(h=120, w=160):
    """Bars and blocks of dark 'characters' on a light plate, in RGB."""
    img = np.full((h, w), 220.0)
    for i, x in enumerate(range(30, 130, 20)):
        img[40:80, x:x + 6] = 30.0
        img[40 + 10 * (i % 3):46 + 10 * (i % 3), x:x + 14] = 30.0
    return np.repeat(img[:, :, None], 3, axis=2)


def blurred(img, angle):
    h, w, _ = img.shape
    otf = np.fft.fft2(deblur.motion_psf(h, w, deblur.LENGTH, angle))
    return np.stack([np.real(np.fft.ifft2(np.fft.fft2(img[:, :, c]) * otf)) for c in range(3)], axis=2)


def error(a, b):  # mean absolute difference away from the tapered border
    m = deblur.BORDER
    return float(np.mean(np.abs(a[m:-m, m:-m].astype(float) - b[m:-m, m:-m])))


def test_the_motion_is_undone(tmp_path):
    img = sharp()
    smeared = np.clip(np.floor(blurred(img, deblur.ANGLE) + 0.5), 0, 255).astype(np.uint8)
    Image.fromarray(smeared).save(tmp_path / "in.png")
    r = subprocess.run([sys.executable, str(TOOLS / "deblur.py"), str(tmp_path / "in.png"),
                        str(tmp_path / "out.png")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = np.asarray(Image.open(tmp_path / "out.png"))
    assert out.shape == img.shape and out.dtype == np.uint8
    assert error(out, img) < error(smeared, img) / 2, (error(out, img), error(smeared, img))


def test_another_motion_is_not():
    img = sharp()
    other = blurred(img, deblur.ANGLE + 90)
    assert error(deblur.deblur(other), img) > error(deblur.deblur(blurred(img, deblur.ANGLE)), img) * 3


def test_usage():
    r = subprocess.run([sys.executable, str(TOOLS / "deblur.py")], capture_output=True, text=True)
    assert r.returncode == 2 and "deblur.py IN.jpg OUT.png" in r.stderr
