"""Writes ranges.json beside this file: numpy's `np.histogram(a, bins,
range=(lo, hi))` for arrays of every dtype with ranges given as Python
floats (`Histogram::new`'s), the cases where numpy refuses the bins
included. Run with numpy 2 and ml_dtypes:

    python core/src/stats/generate_ranges.py
"""

import json
import pathlib
import warnings

import ml_dtypes
import numpy as np

DTYPES = {
    "<f4": np.float32,
    "<f2": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "float8_e5m2": ml_dtypes.float8_e5m2,
    "float8_e8m0fnu": ml_dtypes.float8_e8m0fnu,
    "<f8": np.float64,
    "<i2": np.int16,
    "|u1": np.uint8,
}

rng = np.random.default_rng(15)


def bits(x):
    return np.float64(x).view(np.uint64).item().to_bytes(8, "big").hex()


def case(name, dtype, lo, hi, bins):
    width = max(hi - lo, 1.0)
    spread = rng.uniform(lo - 0.1 * width, hi + 0.1 * width, 40)
    near = np.array([lo, hi, (lo + hi) / 2, lo + (hi - lo) / 3, np.nextafter(lo, -np.inf)])
    values = np.concatenate([spread, near]).astype(DTYPES[dtype])
    try:
        bins_edges = np.histogram_bin_edges(values, bins, range=(lo, hi))
    except ValueError as err:
        assert "Too many bins" in str(err), err
        out = "too many bins"
    else:
        values = np.concatenate([values, bins_edges.astype(DTYPES[dtype])])
        try:
            counts, edges = np.histogram(values, bins, range=(lo, hi))
        except (ValueError, IndexError):
            return None  # numpy fails while counting: left out
        out = {"counts": counts.tolist(), "edges": [bits(e) for e in edges.astype(np.float64)]}
    return {
        "name": name,
        "dtype": dtype,
        "lo": bits(lo),
        "hi": bits(hi),
        "bins": bins,
        "bytes": values.tobytes().hex(),
        "histogram": out,
    }


def ranges(dtype):
    if dtype == "float8_e8m0fnu":
        yield 0.3, 7.1, 3
        yield 0.01, 100.0, 5
        yield 2.0, 2.0, 2
    elif dtype.startswith("float8"):
        yield -3.3, 5.2, 4
        yield 0.1, 0.7, 3
        yield 1.0, 1.0, 2
        yield -100.0, 20.0, 7
    elif dtype in ("<i2", "|u1"):
        yield 0.5, 200.25, 7
        yield 3.0, 3.0, 4
        yield 10.0, 11.0, 64
    else:
        yield 0.1, 5.2, 2
        yield -1.7, 2.3, 64
        yield 0.1, 0.7, 3
        yield 3.0, 3.0, 2
        yield 1000.0, 1001.0, 64
        yield 1e-3, 2e-3, 7
        for _ in range(6):
            lo = round(float(rng.normal(0, 10)), int(rng.integers(1, 4)))
            hi = lo + round(float(rng.exponential(5)), int(rng.integers(1, 4)))
            yield lo, hi, int(rng.choice([1, 2, 5, 10, 64, 100]))


cases = []
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for dtype in DTYPES:
        for lo, hi, bins in ranges(dtype):
            c = case(f"{dtype} ({lo}, {hi}) {bins} bins", dtype, lo, hi, bins)
            if c is not None:
                cases.append(c)

path = pathlib.Path(__file__).with_name("ranges.json")
path.write_text(json.dumps({"numpy": np.__version__, "ml_dtypes": ml_dtypes.__version__, "cases": cases}, indent=0) + "\n")
print(f"{len(cases)} cases: {path}")
