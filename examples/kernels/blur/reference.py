#!/usr/bin/env python3
"""Plain-Python reference of the `blur` example kernel (docs/protocol.md, "The example kernel").

It is slow and obvious on purpose: the arithmetic is written exactly as the protocol states it
(setup image, normalized Gaussian weights, horizontal then vertical pass with clamped edges, sums
in order i = -r..r), so every client's blur can be checked against it. It writes CHECKSUMS next to
itself: one line per (size, radius) with the checksum = sum of out[y][x] in row-major order.

Usage: python3 examples/kernels/blur/reference.py            # rewrite CHECKSUMS
       python3 examples/kernels/blur/reference.py --check    # recompute and compare to CHECKSUMS
"""
import math
import os
import sys

# (size, radius) pairs recorded: the one every client's tests check, and the defaults.
CASES = [(64, 3), (256, 3)]


def weights(radius):
    s = radius / 2.0
    w = [math.exp(-(i * i) / (2 * s * s)) for i in range(-radius, radius + 1)]
    total = 0.0
    for v in w:  # summed in order i = -radius..radius
        total += v
    return [v / total for v in w]


def image(size):
    return [[((x * 7 + y * 13) % 256) / 255.0 for x in range(size)] for y in range(size)]


def clamp(v, lo, hi):
    return lo if v < lo else hi if v > hi else v


def blur(img, w, radius):
    size = len(img)
    tmp = [[0.0] * size for _ in range(size)]
    out = [[0.0] * size for _ in range(size)]
    for y in range(size):
        row = img[y]
        for x in range(size):
            acc = 0.0
            for i in range(-radius, radius + 1):
                acc += w[i + radius] * row[clamp(x + i, 0, size - 1)]
            tmp[y][x] = acc
    for y in range(size):
        for x in range(size):
            acc = 0.0
            for i in range(-radius, radius + 1):
                acc += w[i + radius] * tmp[clamp(y + i, 0, size - 1)][x]
            out[y][x] = acc
    return out


def checksum(size, radius):
    out = blur(image(size), weights(radius), radius)
    total = 0.0
    for row in out:  # row-major order
        for v in row:
            total += v
    return total


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "CHECKSUMS")
    lines = [
        "# checksum of the blur kernel (sum of out[y][x], row-major) per size and radius.",
        "# Made by: python3 examples/kernels/blur/reference.py (plain Python, the protocol's arithmetic).",
        "# The C implementation (examples/kernels/blur/c) computes the same value for size 64 radius 3;",
        "# `make -C clients/c test` checks it. Every client must agree to 1e-9 relative.",
        "# size radius checksum",
    ]
    for size, radius in CASES:
        lines.append("%d %d %.17g" % (size, radius, checksum(size, radius)))
    text = "\n".join(lines) + "\n"
    if "--check" in sys.argv[1:]:
        with open(path) as f:
            old = f.read()
        if old != text:
            sys.stderr.write("reference.py: error: %s differs from a fresh computation; rerun without --check\n" % path)
            return 1
        return 0
    with open(path, "w") as f:
        f.write(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
