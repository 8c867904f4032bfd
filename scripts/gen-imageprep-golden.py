#!/usr/bin/python3
"""Generate the Pillow reference tensors internal/imageprep's tests compare with.

Run once, from the repository root, with Debian's Pillow (python3-pil):

    scripts/gen-imageprep-golden.py

It reads the photos in ../shared/testdata/images and writes 64x64 8-bit RGB
images as binary PPM (P6: a one-line text header, then the raw RGB bytes)
into internal/imageprep/testdata/. The files are committed; the tests do not
need Pillow. Each golden is what Pillow gives for one resize case:

  stretch   Image.resize((64, 64), BILINEAR or NEAREST) of the whole image
  crop      resize the shorter side to 64 (torchvision's Resize(64) sizes),
            BILINEAR, then the centred 64x64 window (torchvision CenterCrop)
"""
import os
import sys

from PIL import Image

SIZE = 64
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMAGES = os.path.join(ROOT, "..", "shared", "testdata", "images")
OUT = os.path.join(ROOT, "internal", "imageprep", "testdata")

# (output name, photo, mode, filter)
CASES = [
    ("cat_stretch_bilinear", "winml_cat.jpg", "stretch", Image.BILINEAR),
    ("wolves_stretch_bilinear", "ortex_wolves.jpg", "stretch", Image.BILINEAR),
    ("wolves_crop_bilinear", "ortex_wolves.jpg", "crop", Image.BILINEAR),
    ("pineapple_stretch_bilinear", "ortext_pineapple.png", "stretch", Image.BILINEAR),
    ("pineapple_crop_bilinear", "ortext_pineapple.png", "crop", Image.BILINEAR),
    ("pineapple_stretch_nearest", "ortext_pineapple.png", "stretch", Image.NEAREST),
]


def shorter_crop(im, size, resample):
    w, h = im.size
    if w <= h:
        rw, rh = size, int(size * h / w)
    else:
        rw, rh = int(size * w / h), size
    im = im.resize((rw, rh), resample)
    left, top = int(round((rw - size) / 2.0)), int(round((rh - size) / 2.0))
    return im.crop((left, top, left + size, top + size))


def main():
    if not os.path.isdir(IMAGES):
        sys.exit(f"no photos at {IMAGES}: clone the shared test data next to the repository")
    os.makedirs(OUT, exist_ok=True)
    for name, photo, mode, resample in CASES:
        im = Image.open(os.path.join(IMAGES, photo)).convert("RGB")
        if mode == "stretch":
            im = im.resize((SIZE, SIZE), resample)
        else:
            im = shorter_crop(im, SIZE, resample)
        path = os.path.join(OUT, name + ".ppm")
        im.save(path, format="PPM")
        print(f"{path}: {photo} {mode} {SIZE}x{SIZE}")


if __name__ == "__main__":
    main()
