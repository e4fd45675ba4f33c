#!/usr/bin/python3
"""deblur: undo a straight motion blur of a photo with a Wiener filter.

    tools/deblur.py IN.jpg OUT.png

Made for licenseplate_motion.jpg (Debian's opencv-doc): a car whose plate
is smeared by the camera's motion along a straight line 22 pixels long,
rising 45 degrees from left to right (the parameters OpenCV's own
deconvolution.py sample gives for this photo: --angle 135 --d 22, its angle
measured with y down, and a signal-to-noise ratio of 25 dB). Each colour
channel is restored alone:

  1. the blur's point spread function (PSF) is that segment, drawn on a
     frame of the photo's size with its centre at the origin (wrapping
     round), each of its points shared among the four nearest pixels;
  2. the photo's borders are blended, over BORDER pixels, into the photo
     blurred by the PSF itself, so that the periodic picture the Fourier
     transform sees has no edge at the wrap (an edge would ring across the
     whole result);
  3. its spectrum is multiplied by the Wiener filter conj(H) / (|H|^2 + K),
     H the PSF's spectrum, K = 10^(-SNR/10), and transformed back.

The result is clipped to 0..255 and written as an 8-bit RGB PNG. Only
Debian's python3-numpy and python3-pil are used; the bytes depend only on
the input's (and on those packages), so set-up checks them by hash.
"""

import sys

import numpy as np
from PIL import Image

LENGTH = 22.0  # pixels
ANGLE = 45.0  # degrees, counter-clockwise from +x with y up
SNR_DB = 25.0
BORDER = 31  # pixels


def motion_psf(h, w, length, angle):
    """A line segment of LENGTH pixels at ANGLE through (0, 0), summing to 1, on an h x w torus."""
    t = np.linspace(-length / 2, length / 2, 4 * int(length) + 1)
    a = np.deg2rad(angle)
    x, y = t * np.cos(a), -t * np.sin(a)  # image rows grow downwards
    x0, y0 = np.floor(x), np.floor(y)
    fx, fy = x - x0, y - y0
    psf = np.zeros((h, w))
    for dy, wy in ((0, 1 - fy), (1, fy)):
        for dx, wx in ((0, 1 - fx), (1, fx)):
            np.add.at(psf, ((y0.astype(int) + dy) % h, (x0.astype(int) + dx) % w), wy * wx)
    return psf / psf.sum()


def border_weight(h, w, border):
    """1 inside, falling linearly to 0 at the frame's edge over BORDER pixels."""
    rows = np.minimum(np.arange(h), np.arange(h)[::-1])[:, None]
    cols = np.minimum(np.arange(w), np.arange(w)[::-1])[None, :]
    return np.clip(np.minimum(rows, cols) / border, 0.0, 1.0)


def deblur(rgb):
    h, w, _ = rgb.shape
    otf = np.fft.fft2(motion_psf(h, w, LENGTH, ANGLE))
    wiener = np.conj(otf) / (np.abs(otf) ** 2 + 10 ** (-SNR_DB / 10))
    keep = border_weight(h, w, BORDER)
    out = np.empty_like(rgb)
    for c in range(rgb.shape[2]):
        g = rgb[:, :, c]
        smeared = np.real(np.fft.ifft2(np.fft.fft2(g) * otf))
        g = keep * g + (1 - keep) * smeared
        out[:, :, c] = np.real(np.fft.ifft2(np.fft.fft2(g) * wiener))
    return np.clip(np.floor(out + 0.5), 0, 255).astype(np.uint8)


def main():
    if len(sys.argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        sys.exit(2)
    rgb = np.asarray(Image.open(sys.argv[1]).convert("RGB"), dtype=np.float64)
    Image.fromarray(deblur(rgb)).save(sys.argv[2], format="PNG")


if __name__ == "__main__":
    main()
