"""Writes stats.json: numpy's statistics and histograms of a few arrays,
the oracle for the core's `Stats` and `Histogram` (core/tests/stats.rs)
and for the web demo's statistics.

Each case: `dtype` (a type string the core reads), `bytes` (hex), and
numpy's answers over the finite values `f = a[np.isfinite(a)]`:
`count`, `finite`, `nan`, `posinf`, `neginf`, `zero`, `subnormal`;
`min`, `max`, `mean`, `std` as the hex of float64 bits
(`np.nanmin(f)`, `np.nanmax(f)`, `np.mean(f.astype(np.float64))`,
`np.std(f.astype(np.float64))`), null without finite values; and
`histogram`: `np.histogram(f, bins=64)`'s `counts` and `edges` (float64
bits, hex), null without finite values, or "too many bins" where numpy
refuses (edges that do not increase: a range too narrow for the type). The float8 cases' histogram is
numpy's of `f.astype(np.float64)` (numpy's own float8 edges round to a
few values, or NaN).

    /work/main/.venv/bin/python tests/vectors/generate_stats.py
"""

import json
import pathlib

import ml_dtypes
import numpy as np

BINS = 64
rng = np.random.default_rng(33)


def bits(x):
    return "%016x" % np.float64(x).view(np.uint64)


def case(name, a, dtype_string):
    a = np.asarray(a)
    if a.dtype.kind == "b" or a.dtype.kind in "iu":
        f = a
        finite_mask = np.ones(a.shape, bool)
        nan = posinf = neginf = subnormal = 0
    else:
        wide = a.astype(np.float64)
        finite_mask = np.isfinite(wide)
        f = a[finite_mask]
        nan = int(np.isnan(wide).sum())
        posinf = int((wide == np.inf).sum())
        neginf = int((wide == -np.inf).sum())
        fw = f.astype(np.float64)
        info = ml_dtypes.finfo(a.dtype) if a.dtype.names is None else None
        tiny = float(info.smallest_normal)
        if a.dtype == ml_dtypes.float8_e8m0fnu:
            tiny = 0.0
        subnormal = int(((fw != 0) & (np.abs(fw) < tiny)).sum())
    fw = f.astype(np.float64)
    out = {
        "name": name,
        "dtype": dtype_string,
        "bytes": a.tobytes().hex(),
        "count": int(a.size),
        "finite": int(f.size),
        "nan": nan,
        "posinf": posinf,
        "neginf": neginf,
        "zero": int((fw == 0).sum()),
        "subnormal": subnormal,
    }
    if f.size:
        out.update(
            min=bits(np.nanmin(fw)),
            max=bits(np.nanmax(fw)),
            mean=bits(np.mean(fw)),
            std=bits(np.std(fw)),
        )
        source = fw if a.dtype.itemsize == 1 and a.dtype.kind not in "biu" else f
        try:
            counts, edges = np.histogram(source, bins=BINS)
        except ValueError as e:
            # "Too many bins for data range": edges not increasing.
            assert "Too many bins" in str(e), e
            out["histogram"] = "too many bins"
        else:
            out["histogram"] = {
                "counts": [int(c) for c in counts],
                "edges": [bits(e) for e in edges.astype(np.float64)],
            }
    else:
        out.update(min=None, max=None, mean=None, std=None, histogram=None)
    return out


def with_specials(values, dtype, tiny):
    a = values.astype(dtype)
    n = a.size
    picks = rng.choice(n, size=12, replace=False)
    specials = [np.nan, np.nan, np.inf, -np.inf, 0.0, -0.0, tiny, -tiny, tiny * 3]
    for i, v in zip(picks, specials):
        a[i] = v
    return a


cases = []
f32 = with_specials(rng.normal(1.0, 3.0, 2000), np.float32, 1e-40)
cases.append(case("float32 with NaN, inf and subnormals", f32, "<f4"))
cases.append(case("float32 big-endian", f32.astype(">f4"), ">f4"))
f16 = with_specials(rng.normal(0.0, 10.0, 1500), np.float16, 1e-6)
cases.append(case("float16 with NaN, inf and subnormals", f16, "<f2"))
bf = with_specials(rng.normal(-2.0, 0.5, 1500), ml_dtypes.bfloat16, 1e-39)
cases.append(case("bfloat16 with NaN, inf and subnormals", bf, "<bfloat16"))
e4 = rng.normal(0.0, 20.0, 300).astype(ml_dtypes.float8_e4m3fn)
e4[:2] = np.nan
cases.append(case("float8_e4m3fn", e4, "float8_e4m3fn"))
cases.append(case("uniform float64", rng.uniform(-1e6, 1e6, 999), "<f8"))
i16 = rng.integers(-1000, 1000, 700, dtype=np.int16)
i16[:5] = 0
cases.append(case("int16", i16, "<i2"))
cases.append(case("int16 big-endian", i16.astype(">i2"), ">i2"))
cases.append(case("uint8", rng.integers(0, 256, 500, dtype=np.uint8), "|u1"))
cases.append(case("int64", rng.integers(-(2**40), 2**40, 300, dtype=np.int64), "<i8"))
cases.append(case("constant float32", np.full(10, 2.5, np.float32), "<f4"))
cases.append(case("constant int16", np.full(5, 7, np.int16), "<i2"))
cases.append(case("constant float16", np.full(3, -3.0, np.float16), "<f2"))
cases.append(case("one float64", np.array([3.25]), "<f8"))
cases.append(case("one large float32", np.array([3e38], np.float32), "<f4"))
cases.append(
    case("no finite values", np.array([np.nan, np.inf, -np.inf], np.float32), "<f4")
)
cases.append(case("empty", np.array([], np.float32), "<f4"))

path = pathlib.Path(__file__).with_name("stats.json")
path.write_text(json.dumps({"bins": BINS, "cases": cases}, indent=1) + "\n")
print(f"wrote {len(cases)} cases to {path}")
