#!/usr/bin/env python3
"""Writes tests/vectors/convert.txt: dtype conversions with numpy (and
ml_dtypes for bfloat16) as the oracle, for bytelens' convert kernels; and
tests/vectors/convert_float8.txt: conversions to and from ml_dtypes' float8
types (float8_e4m3fn, float8_e5m2, float8_e8m0fnu), ml_dtypes the oracle.

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

convert_float8.txt has the same lines, except that SRC may be `all`: every
bit pattern of FROM in increasing order (256 of a float8, 65536 of a float16
or bfloat16), so that the exhaustive cases need no source hex. Its cases:
every float8 pattern into every float (float8 included); every float16 and
every bfloat16 pattern into each float8; float32 and float64 values at, one
unit above and one below each float8 value and each midpoint between
neighbouring float8 values (the rounding boundaries: ties, the smallest
subnormal's half, the overflow thresholds), both signs, with float64 also
just past each midpoint by less than float32 can hold (double rounding
would get those wrong), the sources' own edges (zeros, subnormals, largest
finite, infinities, NaNs with payloads) and random bits; integers of every
width around the same boundaries, with every int8 and uint8.

Needs numpy (2.x; 1.26 gives the same bits) and ml_dtypes 0.7 (0.5.4
rounds float64 to float8 twice, through float32).
Run: python tests/vectors/generate_convert.py
"""

import os
import warnings

import ml_dtypes
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "convert.txt")
OUT_FLOAT8 = os.path.join(HERE, "convert_float8.txt")

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
    write_float8()


FLOAT8 = ["float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu"]
F8 = {name: np.dtype(getattr(ml_dtypes, name)) for name in FLOAT8}
INTS = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64"]
RNG8 = np.random.default_rng(20261202)  # its own, so convert.txt stays as it was


def f8_dtype(name):
    return F8[name] if name in F8 else dtype(name)


def f8_bits(name):
    return np.dtype("<u%d" % f8_dtype(name).itemsize)


def as_bits(values, name):
    """`values` (Python ints, any sign or size) as FROM's bit patterns."""
    width = f8_dtype(name).itemsize * 8
    mask = (1 << width) - 1
    return np.array([v & mask for v in values], dtype=np.uint64).astype(f8_bits(name))


def boundaries(f8):
    """float64 values of every finite non-negative float8 value and of each
    midpoint between neighbours, the midpoint past the largest finite value
    (toward the next power of the format, where it overflows) included."""
    with np.errstate(all="ignore"):
        v = np.arange(256, dtype=np.uint8).view(F8[f8]).astype(np.float64)
    v = np.unique(v[np.isfinite(v) & (v >= 0)])
    top = v[-1] + (v[-1] - v[-2])  # one unit past the largest finite value
    ext = np.append(v, top)
    mids = (ext[:-1] + ext[1:]) / 2  # exact: float8 values have few bits
    if v[0] > 0:  # no zero (float8_e8m0fnu): below the smallest, and half of it
        mids = np.append(mids, [v[0] / 2, v[0] * 0.75])
    return np.concatenate([v, mids, [top]])


def float_samples(src, f8, count):
    """Bit patterns of `src` (float32 or float64) for conversion to `f8`."""
    fd = np.dtype(src)
    bits = f8_bits(src)
    width = fd.itemsize * 8
    out = []
    with np.errstate(all="ignore"):
        edges = boundaries(f8)
        at = edges.astype(fd)
        b = [int(x) for x in at.view(bits)]
        out += [x + d for x in b for d in (-1, 0, 1)]
        if src == "float64":
            # Just past a midpoint (or a value) by 2^-30 of it, which float32
            # would lose: through float32 it lands on the tie.
            nudge = edges * (1 + 2.0 ** -30)
            under = edges * (1 - 2.0 ** -30)
            out += [int(x) for x in np.concatenate([nudge, under]).view(bits)]
    out += [int(x) for x in as_bits(float_edges("float32" if src == "float32" else "float64"), src)]
    out += [int(x) for x in RNG8.integers(0, 1 << width, count, dtype=np.uint64)]
    # Random values spread over the float8's range and a little past it.
    lo, hi = np.log2(edges[edges > 0].min()) - 3, np.log2(edges.max()) + 2
    mag = np.exp2(RNG8.uniform(lo, hi, count)).astype(fd)
    out += [int(x) for x in mag.view(bits)]
    out += [x | 1 << (width - 1) for x in out]  # both signs
    return np.unique(as_bits(out, src))


def int_samples(name, f8, count):
    """Bit patterns of integers of `name` for conversion to `f8`: every one
    of a one-byte type; else the boundaries (rounded to integers, with
    their neighbours), the extremes and random ones, both signs."""
    d = np.dtype(name)
    if d.itemsize == 1:
        return np.arange(256, dtype=np.uint8)
    info = np.iinfo(d)
    n = d.itemsize * 8
    v = [0, 1, 2, 3, int(info.max), int(info.max) - 1, int(info.min), int(info.min) + 1]
    for e in boundaries(f8):
        if 1 <= e < 2.0 ** 64:
            k = int(e)
            v += [k - 1, k, k + 1]
    for k in range(4, n):  # powers of two and their neighbours
        v += [(1 << k) - 1, 1 << k, (1 << k) + 1, 3 << (k - 1), (3 << (k - 1)) + 1]
    v += [int(x) for x in RNG8.integers(0, 1 << n, count, dtype=np.uint64)]
    v += [-x for x in v]
    return np.unique(as_bits(v, name))


def float8_cases():
    """(FROM, TO, source bits or None for every pattern) for convert_float8.txt."""
    cases = []
    for a in FLOAT8:
        for b in FLOAT8 + ["float16", "bfloat16", "float32", "float64"]:
            cases.append((a, b, None))
    for b in FLOAT8:
        cases.append(("float16", b, None))
        cases.append(("bfloat16", b, None))
        cases.append(("float32", b, float_samples("float32", b, 1500)))
        cases.append(("float64", b, float_samples("float64", b, 1500)))
        # ml_dtypes reads a bool's byte as a number (2 -> 2.0); numpy, and
        # bytelens, read any non-zero byte as True.
        cases.append(("bool", b, np.array([0, 1], np.uint8)))
        for i in INTS:
            cases.append((i, b, int_samples(i, b, 200)))
    return cases


def write_float8():
    lines = [
        "# Generated by tests/vectors/generate_convert.py with numpy %s and "
        "ml_dtypes %s; do not edit." % (np.__version__, ml_dtypes.__version__),
        "# FROM TO SRC DST: little-endian hex, DST = SRC.astype(TO); SRC `all`: "
        "every pattern of FROM, in increasing order.",
    ]
    elements = 0
    for a, b, s in float8_cases():
        every = s is None
        if every:
            s = np.arange(1 << (8 * f8_dtype(a).itemsize), dtype=np.uint64).astype(f8_bits(a))
        with np.errstate(all="ignore"):
            got = s.view(f8_bits(a)).view(f8_dtype(a)).astype(f8_dtype(b))
        src = "all" if every else s.tobytes().hex()
        lines.append("%s %s %s %s" % (a, b, src, got.view(f8_bits(b)).tobytes().hex()))
        elements += len(s)
    with open(OUT_FLOAT8, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("%s: %d lines, %d elements" % (OUT_FLOAT8, len(lines) - 2, elements))


if __name__ == "__main__":
    main()
