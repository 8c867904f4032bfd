#!/usr/bin/python3
"""Time Pillow doing what imageprep's BenchmarkPreprocessPhotos does.

For each photo given: Image.open from the bytes in memory, convert("RGB"),
resize((224, 224), BILINEAR), then numpy: to float32, scale to 0-1,
normalise with the ImageNet mean/std and transpose to an NCHW array. Prints
one line per photo, "name ns_per_image", the mean over enough repetitions
to take at least --min-seconds.

Needs Debian's python3-pil and python3-numpy.
"""
import argparse
import io
import os
import time

import numpy as np
from PIL import Image

MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
SCALE = np.float32(1.0 / 255)


def preprocess(data):
    im = Image.open(io.BytesIO(data)).convert("RGB").resize((224, 224), Image.BILINEAR)
    a = (np.asarray(im, dtype=np.float32) * SCALE - MEAN) / STD
    return np.ascontiguousarray(a.transpose(2, 0, 1))


def time_one(data, min_seconds):
    preprocess(data)  # warm up
    n, start = 0, time.perf_counter()
    while True:
        preprocess(data)
        n += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds and n >= 10:
            return elapsed / n


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("photos", nargs="+")
    p.add_argument("--min-seconds", type=float, default=1.0)
    args = p.parse_args()
    for path in args.photos:
        with open(path, "rb") as f:
            data = f.read()
        print(os.path.basename(path), int(time_one(data, args.min_seconds) * 1e9))


if __name__ == "__main__":
    main()
