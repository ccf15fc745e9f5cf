#!/usr/bin/env python3
"""Writes tests/vectors/convert.txt: dtype conversions with numpy (and
ml_dtypes for bfloat16) as the oracle, for bytelens' convert kernels.

Every line that is not blank or a comment is one case:

    FROM TO SRC DST

FROM and TO are dtype names (numpy's, and "bfloat16"); SRC is the hex of
little-endian FROM elements, DST the hex of `src.astype(TO)`, little-endian.
Runners check the other byte orders by reversing each element's bytes.

The cases: for each pair that numpy's "same_kind" casting allows (and
bfloat16 as a float, both ways), the source dtype's edge values (zeros,
subnormals, extremes, infinities, quiet and signaling NaNs with payloads,
sign bits), random bit patterns, and for every narrowing float pair the
values at, just above and just below the midpoints between neighbouring
destination values (ties), overflow and underflow thresholds included.

Needs numpy (2.x; 1.26 gives the same bits) and ml_dtypes.
Run: python tests/vectors/generate_convert.py
"""

import os
import warnings

import ml_dtypes
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "convert.txt")

BF16 = np.dtype(ml_dtypes.bfloat16)
NAMES = ["bool", "uint8", "int8", "uint16", "int16", "uint32", "int32",
         "uint64", "int64", "float16", "bfloat16", "float32", "float64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
RNG = np.random.default_rng(20261201)


def dtype(name):
    return BF16 if name == "bfloat16" else np.dtype(name)


def bits_dtype(name):
    return np.dtype("<u%d" % dtype(name).itemsize)


def allowed(a, b):
    if a in FLOATS and b in FLOATS:
        return True  # bfloat16 -> float16 too: a float kind like float16
    return bool(np.can_cast(dtype(a), dtype(b), "same_kind"))


def float_edges(name):
    """Bit patterns of a float format's special and boundary values."""
    size = dtype(name).itemsize * 8
    man = {"float16": 10, "bfloat16": 7, "float32": 23, "float64": 52}[name]
    inf = ((1 << (size - 1 - man)) - 1) << man
    top = 1 << (size - 1)
    quiet = 1 << (man - 1)
    v = [0, 1, 2, 3, (1 << man) - 1, 1 << man, (1 << man) + 1,
         inf - 1, inf, inf + 1, inf + quiet, inf + quiet + 1,
         inf + (1 << man) - 1, inf + (quiet >> 1), inf + 1 + (quiet >> 1),
         inf + (1 << (man // 2)), inf + quiet + (1 << (man - 2)),
         # one, its neighbours, powers of two around the middle
         (((1 << (size - 2 - man)) - 1) << man),
         (((1 << (size - 2 - man)) - 1) << man) + 1,
         (((1 << (size - 2 - man)) - 1) << man) - 1]
    v += [x | top for x in v]
    return v


def float_values(name, count):
    bits = bits_dtype(name)
    v = float_edges(name)
    v += [int(x) for x in RNG.integers(0, 1 << (bits.itemsize * 8), count, dtype=np.uint64)]
    # random finite values of every magnitude
    v += [int(x) for x in RNG.integers(0, 1 << (bits.itemsize * 8 - 1), count, dtype=np.uint64)]
    return np.array([x % (1 << (bits.itemsize * 8)) for x in v], dtype=np.uint64).astype(bits)


def ties(src, dst, count):
    """Source bit patterns at, above and below midpoints of `dst` values."""
    dbits = bits_dtype(dst)
    man = {"float16": 10, "bfloat16": 7, "float32": 23}[dst]
    size = dbits.itemsize * 8
    inf = ((1 << (size - 1 - man)) - 1) << man
    # low/high pairs of neighbouring finite dst values: small subnormals,
    # around one, the largest finite (whose midpoint with "max + 1 ulp" is
    # the overflow threshold), and random ones
    lows = [0, 1, 2, (1 << man) - 1, 1 << man, inf - 1, inf - 2]
    lows += [int(x) for x in RNG.integers(0, inf - 1, count)]
    lo = np.array(lows, dtype=np.uint64).astype(dbits).view(dtype(dst))
    hi = (np.array(lows, dtype=np.uint64) + 1).astype(dbits).view(dtype(dst))
    with np.errstate(all="ignore"):
        lo64 = lo.astype(np.float64)
        hi64 = hi.astype(np.float64)
        # the last "high" is infinity: the midpoint is max + half an ulp
        hi64 = np.where(np.isinf(hi64), lo64 + (lo64 - (lo.view(dbits) - 1)
                        .view(dtype(dst)).astype(np.float64)), hi64)
        mid = (lo64 + hi64) / 2  # exact in float64 for every dst
    out = []
    sbits = bits_dtype(src)
    for m in mid:
        for sign in (1.0, -1.0):
            with np.errstate(all="ignore"):
                s = np.array([m * sign], np.float64).astype(dtype(src))
            b = int(s.view(sbits)[0])
            out += [b, b + 1, b - 1]
    mask = (1 << (sbits.itemsize * 8)) - 1
    return np.array([x & mask for x in out], dtype=np.uint64).astype(sbits)


def narrower(a, b):
    """Whether some `a` values fall between `b` values (rounding, overflow)."""
    wider = b == "float64" or (b == "float32" and a in ("float16", "bfloat16"))
    return a != b and not wider


def int_values(name, count, rounding):
    """Bit patterns of integers: extremes, random ones and, if `rounding`,
    integers at and around the ties of bfloat16, float32 and float64."""
    d = np.dtype(name)
    if name == "bool":
        return np.array([0, 1, 2, 0x80, 0xff], np.uint8)
    info = np.iinfo(d)
    bits = bits_dtype(name)
    n = d.itemsize * 8
    v = [0, 1, 2, 3, info.max, info.max - 1, info.min, info.min + 1, -1, -2]
    steps = sorted(k for k in set(range(9, n, 6)) | {24, 25, 53, 54, n - 2, n - 1}
                   if k < n) if rounding else []
    for k in steps:
        v += [(1 << k) + 1, (1 << k) - 1]
        for frac in (8, 24, 53):  # bits kept by bfloat16, float32, float64
            if k > frac:
                half = 1 << (k - frac)
                v += [(1 << k) + half, (1 << k) + half + 1, (1 << k) + 3 * half]
                if k > 24:  # a float32 tie just above a bfloat16 tie
                    v += [(1 << k) + half + (1 << (k - 24)) + 1]
    v += [int(x) for x in RNG.integers(0, 1 << n, count, dtype=np.uint64)]
    mask = (1 << n) - 1
    v += [-x for x in v]
    return np.array([x & mask for x in v], dtype=np.uint64).astype(bits)


def main():
    warnings.simplefilter("ignore")
    lines = [
        "# Generated by tests/vectors/generate_convert.py with numpy %s and "
        "ml_dtypes %s; do not edit." % (np.__version__, ml_dtypes.__version__),
        "# FROM TO SRC DST: little-endian hex, DST = SRC.astype(TO).",
    ]
    cases = 0
    for a in NAMES:
        for b in NAMES:
            if not allowed(a, b):
                continue
            if a == "bool" and b == "bfloat16":
                # ml_dtypes reads a bool's byte as a number (2 -> 2.0);
                # numpy, and bytelens, read any non-zero byte as True.
                sources = [np.array([0, 1], np.uint8)]
            elif a in FLOATS:
                sources = [float_values(a, 40)]
            else:
                sources = [int_values(a, 12 if b in FLOATS else 6, b in FLOATS)]
            if a in FLOATS and b in FLOATS and narrower(a, b):
                sources.append(ties(a, b, 24))
            for s in sources:
                s = np.unique(s)
                with np.errstate(all="ignore"):
                    got = s.view(bits_dtype(a)).view(dtype(a)).astype(dtype(b))
                lines.append("%s %s %s %s" % (a, b, s.tobytes().hex(),
                                             got.view(bits_dtype(b)).tobytes().hex()))
                cases += len(s)
    with open(OUT, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("%s: %d lines, %d elements" % (OUT, len(lines) - 2, cases))


if __name__ == "__main__":
    main()
