"""The demo's test files, written with numpy, and numpy's answers about them.

    python web-demo/tests/fixtures.py OUT_DIR

(`cargo xtask test demo` runs it with the numpy 2 venv's python, writing
into target/demo-files/, unless its outputs are newer than this script.)

Files, each small:

- c_order.npy     float32 (24, 40), C order: a 2-D pattern (100 * row + col)
                  with NaN, +-inf, -0.0 and subnormals in row 0
- fortran.npy     the same values in Fortran order (fortran_order: True)
- int16_be.npy    >i2 (5, 7), negative values too
- tensors.safetensors
                  bf16 (16, 24) bfloat16 and f8 (8, 32) float8_e4m3fn
                  (both with NaN and subnormals; bf16 with +-inf), a
                  header padded to 64 bytes, then f32 (3, 5) float32
- heatmap.npy     float32 (512, 768): a horizontal gradient col / 767 with
                  a square of 2.0 over rows 128..256, cols 256..384
- numpy.json      numpy's answers (see `main`); it is written last, so a
                  run that stopped part way leaves it older than the script.
                  Its "served" files are not written on their own: the
                  tests serve their bytes (base64) in the page's network:
  narrow.npy      float32 (24, 40) of 1.0 and the next float32 up, whose
                  range numpy makes no 64 bins of

Values are text: `repr(float(x))` ("nan", "inf", "-0.0", "1.5") or
`str(int(x))`, so that nothing is lost in JSON; "hex" is the element's
bytes, most significant first, as "0x3f800000".
"""

import base64
import json
import struct
import sys
from pathlib import Path

import ml_dtypes
import numpy as np

# The core's dtype table, by numpy's (and ml_dtypes') names.
DTYPES = {
    "bool": np.dtype(np.bool_),
    "uint8": np.dtype(np.uint8),
    "int8": np.dtype(np.int8),
    "uint16": np.dtype(np.uint16),
    "int16": np.dtype(np.int16),
    "uint32": np.dtype(np.uint32),
    "int32": np.dtype(np.int32),
    "uint64": np.dtype(np.uint64),
    "int64": np.dtype(np.int64),
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
    "float8_e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn),
    "float8_e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "float8_e8m0fnu": np.dtype(ml_dtypes.float8_e8m0fnu),
}
FIRST = 64  # values listed per tensor
BINS = 64


def text(x):
    """One element as exact text."""
    if isinstance(x, (bool, np.bool_)):
        return "true" if x else "false"
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    return repr(float(x))


def hex_of(raw, order):
    """The element's bytes, most significant first."""
    b = raw[::-1] if order == "little" else raw
    return "0x" + b.hex()


def reading(raw, name, order):
    """`np.frombuffer` of `raw` as dtype `name` in `order`, or None past the end."""
    dtype = DTYPES[name]
    if len(raw) < dtype.itemsize:
        return None
    raw = raw[: dtype.itemsize]
    dtype = dtype.newbyteorder("<" if order == "little" else ">") if dtype.itemsize > 1 else dtype
    return {"value": text(np.frombuffer(raw, dtype)[0]), "hex": hex_of(raw, order)}


def is_float(dtype):
    return dtype.kind == "f" or dtype.type in (ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn)


def stats(a):
    """numpy's statistics of a tensor (for the tensor panel's tests)."""
    dtype = a.dtype
    x = a.astype(np.float64).ravel()
    np.seterr(invalid="ignore")  # nanmin's reduce warns of the NaNs it skips
    finite = x[np.isfinite(x)]
    out = {
        "count": int(x.size),
        "nanmin": text(np.nanmin(x)),
        "nanmax": text(np.nanmax(x)),
        "nanmean": text(np.nanmean(x)),
        "nanstd": text(np.nanstd(x)),
        "nan": int(np.isnan(x).sum()),
        "posinf": int(np.isposinf(x).sum()),
        "neginf": int(np.isneginf(x).sum()),
        "zero": int((x == 0).sum()),
        "subnormal": 0,
    }
    if is_float(dtype):
        tiny = float(ml_dtypes.finfo(dtype).smallest_normal)
        out["subnormal"] = int(((x != 0) & (np.abs(x) < tiny)).sum())
    # Of the finite values, as the core's Stats gives them (numpy's nan*
    # above count the infinities in).
    out.update({"min": text(finite.min()), "max": text(finite.max()), "mean": text(finite.mean()), "std": text(finite.std())}
               if finite.size else {"min": None, "max": None, "mean": None, "std": None})
    # np.histogram of the finite values in the array's own dtype, as numpy
    # bins them (float32 edges for float32; float16 and bfloat16 theirs),
    # but the float8s, in float64 (numpy's float8 edges round to a handful).
    own = a.ravel()[np.isfinite(x)]
    if dtype.itemsize == 1 and is_float(dtype):
        own = own.astype(np.float64)
    try:
        counts, edges = np.histogram(own, bins=BINS)
    except ValueError as err:  # "Too many bins for data range", a range too narrow for the dtype
        out["histogram"] = {"bins": BINS, "refused": str(err)}
    else:
        out["histogram"] = {"bins": BINS, "counts": [int(c) for c in counts], "edges": [text(e) for e in edges]}
    return out


class File:
    """A file written to OUT and what numpy says of it."""

    def __init__(self, name, data, fmt):
        self.name, self.data, self.format = name, data, fmt
        self.arrays = []  # (name, ndarray, data offset)

    def element(self, b):
        """The array element holding byte `b`: its array, multi-index, value."""
        for name, a, start in self.arrays:
            if start <= b < start + a.nbytes:
                k = (b - start) // a.itemsize  # the element's place in memory
                order = "F" if a.flags.f_contiguous and not a.flags.c_contiguous else "C"
                index = [int(i) for i in np.unravel_index(k, a.shape, order=order)]
                at = start + k * a.itemsize
                raw = self.data[at : at + a.itemsize]
                return {
                    "array": name,
                    "index": index,
                    "flat": int(np.ravel_multi_index(index, a.shape)),  # in C order
                    "offset": at,
                    "value": text(a[tuple(index)]),
                    "hex": hex_of(raw, "big" if a.dtype.byteorder == ">" else "little"),
                }
        return None

    def answers(self, offsets):
        out = {"size": len(self.data), "format": self.format, "arrays": {}, "offsets": []}
        for name, a, start in self.arrays:
            c = np.ascontiguousarray(a).ravel()
            out["arrays"][name] = {
                "dtype": a.dtype.str if a.dtype.kind != "V" else str(a.dtype),
                "shape": list(a.shape),
                "fortran": bool(a.flags.f_contiguous and not a.flags.c_contiguous),
                "offset": start,
                "nbytes": a.nbytes,
                "first": [text(v) for v in c[:FIRST]],
                "stats": stats(a),
            }
        for b in offsets:
            raw = self.data[b : b + 8]
            out["offsets"].append({
                "offset": b,
                "readings": {n: {o: reading(raw, n, o) for o in ("little", "big")} for n in DTYPES},
                "element": self.element(b),
            })
        return out


def npy(name, a):
    import io

    buf = io.BytesIO()
    np.save(buf, a)
    data = buf.getvalue()
    f = File(name, data, "npy")
    f.arrays.append(("array", a, len(data) - a.nbytes))
    return f


def safetensors(name, tensors):
    """A safetensors file of (name, code, ndarray), its data from a 64-byte boundary."""
    header, at, blobs = {}, 0, []
    for tname, code, a in tensors:
        raw = np.ascontiguousarray(a).tobytes()
        header[tname] = {"dtype": code, "shape": list(a.shape), "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    js = json.dumps(header, separators=(",", ":"))
    js += " " * (-(8 + len(js)) % 64)
    start = 8 + len(js)
    data = struct.pack("<Q", len(js)) + js.encode() + b"".join(blobs)
    f = File(name, data, "safetensors")
    for tname, _, a in tensors:
        f.arrays.append((tname, a, start + header[tname]["data_offsets"][0]))
    return f


def main(out):
    out.mkdir(parents=True, exist_ok=True)
    rows, cols = np.mgrid[0:24, 0:40]
    pattern = (100 * rows + cols).astype(np.float32)
    pattern[0, :8] = [np.nan, np.inf, -np.inf, -0.0, 1e-40, -3e-42, np.float32(1.1), 1e30]
    pattern[23, 39] = np.float32(-2.5e-39)  # a subnormal at the very end
    c_order = npy("c_order.npy", pattern)
    fortran = npy("fortran.npy", np.asfortranarray(pattern))
    assert b"'fortran_order': True" in fortran.data
    int16 = npy("int16_be.npy", (np.arange(35, dtype=np.int64).reshape(5, 7) * 937 - 16000).astype(">i2"))

    bf = (np.arange(16 * 24, dtype=np.float64).reshape(16, 24) - 100) / 8
    bf[0, :6] = [np.nan, np.inf, -np.inf, -0.0, 1e-39, 3.0e38]
    f8 = ((np.arange(8 * 32, dtype=np.float64).reshape(8, 32) - 128) / 4)
    f8[0, :4] = [np.nan, -0.0, 2.0**-8, 448]
    f32 = np.linspace(-1, 1, 15, dtype=np.float32).reshape(3, 5)
    tensors = safetensors("tensors.safetensors", [
        ("bf16", "BF16", bf.astype(ml_dtypes.bfloat16)),
        ("f8", "F8_E4M3", f8.astype(ml_dtypes.float8_e4m3fn)),
        ("f32", "F32", f32),
    ])

    ys, xs = np.mgrid[0:512, 0:768]
    heat = (xs / 767).astype(np.float32)
    heat[128:256, 256:384] = 2.0
    heatmap = npy("heatmap.npy", heat)

    # An n-d array whose slices differ (cube[k, i, j] = 100 k + i) and an
    # RGB image (red = column, green = row, blue = 30), for the slice picker
    # and the heatmap of an image's pixels over their channels.
    k, i, _ = np.mgrid[0:3, 0:16, 0:24]
    cube = npy("cube.npy", (100 * k + i).astype(np.float32))
    ys, xs = np.mgrid[0:20, 0:30]
    image = npy("image.npy", np.stack([xs, ys, np.full_like(xs, 30)], axis=-1).astype(np.uint8))

    def picks(f):
        """Offsets for the inspector: the start, the header, each array's
        first bytes, an element's middle, a deep element, and the last 8 bytes
        (where the wider dtypes run past the end of the file)."""
        n = len(f.data)
        got = {0, 1, 9, min(60, n - 1)}
        for _, a, start in f.arrays:
            k = a.size // 3
            got |= {start, start + 1, start + a.itemsize * k, start + a.itemsize * (a.size - 1)}
            if a.ndim == 2:
                got.add(start + a.itemsize * (a.shape[1] + 2))
        got |= set(range(n - 8, n))
        return sorted(b for b in got if 0 <= b < n)

    answers = {"numpy": np.__version__, "ml_dtypes": ml_dtypes.__version__, "dtypes": list(DTYPES), "files": {}}
    for f in [c_order, fortran, int16, tensors]:
        (out / f.name).write_bytes(f.data)
        answers["files"][f.name] = f.answers(picks(f))
    (out / heatmap.name).write_bytes(heatmap.data)
    for f in [cube, image]:
        (out / f.name).write_bytes(f.data)
    h = heatmap.answers([])
    h["pattern"] = {"gradient": "col / 767 (float32)", "square": {"rows": [128, 256], "cols": [256, 384], "value": "2.0"}}
    answers["files"][heatmap.name] = h
    # A range too narrow for 64 float32 bins: np.histogram refuses it.
    ones = np.ones((24, 40), dtype=np.float32)
    ones.ravel()[::3] = np.nextafter(np.float32(1), np.float32(2))
    narrow = npy("narrow.npy", ones)
    answers["served"] = {}
    for f in [narrow]:
        served = f.answers([])
        served["base64"] = base64.b64encode(f.data).decode()
        answers["served"][f.name] = served
    assert "refused" in answers["served"]["narrow.npy"]["arrays"]["array"]["stats"]["histogram"]
    (out / "numpy.json").write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: fixtures.py OUT_DIR")
    main(Path(sys.argv[1]))
