#!/usr/bin/env python3
"""Writes tests/vectors/*.json with numpy as the oracle.

Each case is written here as inputs plus, for the cases the seeds spell out,
the values a person expects; numpy computes every expected value, layout and
error, and the script stops if numpy disagrees with a stated expectation.
Needs numpy (any of 1.26 / 2.x) and ml_dtypes (the float8 dtypes' values and
rounding). Run: python tests/vectors/generate.py

Case format (what every language's runner reads):
  bytes    hex string, the whole buffer
  layout   {"dtype": "<i4", "offset": 0, "shape": [..], "strides": [..]}
           without "shape": the whole buffer as 1-D (np.frombuffer);
           "shape" without "strides": C-contiguous
  unaligned  optional bool: opt out of the alignment check
  ops      optional list applied in order: {"op": "reinterpret", "dtype"},
           {"op": "slice", "axis", "start", "stop", "step"} (null = omitted),
           {"op": "index", "axis", "index"}, {"op": "transpose"},
           {"op": "permute", "axes"}, {"op": "reshape", "shape"},
           {"op": "broadcast_to", "shape"}
  write    optional list of values written through the view in C order
  expect   {"error": kind} or {"shape", "strides", "offset", "values"[, "bytes"]}
args.json has a format of its own, described above ARGS.
Values: bool, int and float as JSON; 64-bit integers as decimal strings;
"nan", "inf", "-inf" for non-finite floats. Dtypes are type strings as
bytelens writes them: "<i4", "|u1", ">bfloat16", "|float8_e4m3fn".
"""

import json
import math
import os
import struct

import ml_dtypes
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def h(*chunks):
    """Concatenate hex strings and packed values: h("0001", ("<i", 5))."""
    out = b""
    for c in chunks:
        out += bytes.fromhex(c) if isinstance(c, str) else struct.pack(*c)
    return out.hex()


def np_dtype(s):
    """numpy dtype for a vector dtype string; bf16 is read through uint16, the
    float8s are ml_dtypes' (one byte: no byte order)."""
    if s.endswith("bfloat16"):
        return np.dtype(s[0] + "u2" if s[0] in "<>" else "u2")
    name = s.lstrip("<>|=")
    if name.startswith("float8_"):
        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(s)


def is_bf16(s):
    return s.endswith("bfloat16")


def encode(arr, bf16):
    out = []
    flat = [arr[ix] for ix in np.ndindex(arr.shape)]
    for v in flat:
        if bf16:
            v = np.array([int(v) << 16], dtype=np.uint32).view(np.float32)[0]
        if isinstance(v, np.bool_):
            out.append(bool(v))
        elif v.dtype.kind in "iu":
            out.append(str(int(v)) if v.dtype.itemsize == 8 else int(v))
        else:
            f = float(v)
            out.append("nan" if math.isnan(f) else ("inf" if f == math.inf else ("-inf" if f == -math.inf else f)))
    return out


def relative_aligned(arr, base_addr):
    if arr.size == 0:
        return True
    a = arr.dtype.itemsize  # bytelens aligns every dtype to its size
    off = arr.__array_interface__["data"][0] - base_addr
    return off % a == 0 and all(s % a == 0 for s, n in zip(arr.strides, arr.shape) if n > 1)


def run(case):
    raw = bytearray(bytes.fromhex(case["bytes"]))
    buf = np.frombuffer(raw, dtype=np.uint8)
    base = buf.__array_interface__["data"][0]
    lay = case["layout"]
    dtype_s = lay["dtype"]
    bf16 = is_bf16(dtype_s)
    dt = np_dtype(dtype_s)
    if "shape" not in lay:
        arr = np.frombuffer(raw, dtype=dt)
    else:
        shape = tuple(lay["shape"])
        strides = lay.get("strides")
        if strides is None:
            strides, step = [], dt.itemsize
            for n in reversed(shape):
                strides.insert(0, step)
                step *= max(n, 1)
        arr = np.ndarray(shape, dtype=dt, buffer=raw, offset=lay.get("offset", 0), strides=tuple(strides))
    for op in case.get("ops", []):
        kind = op["op"]
        if kind == "reinterpret":
            bf16 = is_bf16(op["dtype"])
            arr = arr.view(np_dtype(op["dtype"]))
        elif kind == "slice":
            key = (slice(None),) * op["axis"] + (slice(op["start"], op["stop"], op["step"]),)
            arr = arr[key]
        elif kind == "index":
            arr = arr[(slice(None),) * op["axis"] + (op["index"],)]
        elif kind == "transpose":
            arr = arr.T
        elif kind == "permute":
            arr = arr.transpose(op["axes"])
        elif kind == "reshape":
            arr = np.reshape(arr, op["shape"], copy=False)
        elif kind == "broadcast_to":
            arr = np.broadcast_to(arr, op["shape"])
        else:
            raise ValueError(kind)
    if not case.get("unaligned") and not relative_aligned(arr, base):
        raise AlignmentFault()
    if "write" in case:
        if not arr.flags.writeable:
            raise ReadOnlyFault()
        for ix, v in zip(np.ndindex(arr.shape), case["write"]):
            arr[ix] = float(v) if isinstance(v, str) else v
    return {
        "shape": list(arr.shape),
        "strides": list(arr.strides),
        "offset": arr.__array_interface__["data"][0] - base if arr.size else lay.get("offset", 0),
        "values": encode(arr, bf16),
        **({"bytes": bytes(raw).hex()} if "write" in case else {}),
    }


class AlignmentFault(Exception):
    pass


class ReadOnlyFault(Exception):
    pass


def case(name, bytes_hex, layout, ops=(), write=None, error=None, values=None, unaligned=False, out_bytes=None):
    c = {"name": name, "bytes": bytes_hex, "layout": layout}
    if ops:
        c["ops"] = list(ops)
    if unaligned:
        c["unaligned"] = True
    if write is not None:
        c["write"] = write
    try:
        got = run(c)
    except AlignmentFault:
        assert error == "Misaligned", f"{name}: numpy gives a misaligned array, expected {error}"
        c["expect"] = {"error": error}
        return c
    except ReadOnlyFault:
        assert error == "ReadOnly", name
        c["expect"] = {"error": error}
        return c
    except (ValueError, TypeError, IndexError, AttributeError) as e:
        assert error is not None, f"{name}: numpy raised {e!r}"
        c["expect"] = {"error": error}
        return c
    assert error is None, f"{name}: numpy succeeded where {error} was expected: {got}"
    if values is not None:
        assert got["values"] == values, f"{name}: numpy gives {got['values']}, expected {values}"
    if out_bytes is not None:
        assert got["bytes"] == out_bytes, f"{name}: numpy wrote {got['bytes']}"
    c["expect"] = got
    return c


def L(dtype, offset=None, shape=None, strides=None):
    d = {"dtype": dtype}
    if offset is not None:
        d["offset"] = offset
    if shape is not None:
        d["shape"] = shape
    if strides is not None:
        d["strides"] = strides
    return d


def R(dtype):
    return {"op": "reinterpret", "dtype": dtype}


def S(axis, start, stop, step=1):
    return {"op": "slice", "axis": axis, "start": start, "stop": stop, "step": step}


SEEDS = [
    case("seed: int32 0x11223344 read as int16", h(("<i", 0x11223344)), L("<i4", 0, [1]),
         [R("<i2")], values=[0x3344, 0x1122]),
    case("seed: four int32 with [0] = 0x11223344 as eight int16", h(("<4i", 0x11223344, 0, 0, 0)), L("<i4"),
         [R("<i2")], values=[13124, 4386, 0, 0, 0, 0, 0, 0]),
    case("seed: 3-byte buffer viewed as int16 fails", "000000", L("|i1", 0, [3]), [R("<i2")],
         error="ItemsizeMismatch"),
    case("seed: 3-byte buffer as int16 from the whole buffer fails", "000000", L("<i2"), error="ItemsizeMismatch"),
    case("seed: the 2-byte slice of a 3-byte buffer as int16", "010000", L("|i1", 0, [3]),
         [S(0, None, 2), R("<i2")], values=[1]),
    case("seed: float32 1.0 written into a byte buffer", "00000000" * 2, L("<f4"), write=[1.0, 0.0],
         out_bytes="0000803f00000000"),
    case("seed: 1.0 written through int16 of the same bytes", "0000", L("<i2"), write=[1], out_bytes="0100"),
    case("seed: floats A,B then ints D over the same bytes", h(("<3f", 1.5, -2.0, 0.25)), L("<f4", 4, [2]),
         [R("<i4")], values=[-1073741824, 1048576000]),
]

DTYPES = [
    case("bool reads non-zero bytes as true", "00010280", L("|b1"), values=[False, True, True, True]),
    case("uint8", "00ff7f80", L("|u1"), values=[0, 255, 127, 128]),
    case("int8", "00ff7f80", L("|i1"), values=[0, -1, 127, -128]),
    case("uint16 little-endian", "3412ffff", L("<u2"), values=[0x1234, 0xFFFF]),
    case("uint16 big-endian", "1234ffff", L(">u2"), values=[0x1234, 0xFFFF]),
    case("int16 big-endian", "fffe8000", L(">i2"), values=[-2, -32768]),
    case("uint32 both orders", h(("<I", 0xDEADBEEF)), L(">u4"), values=[0xEFBEADDE]),
    case("int32 little-endian", h(("<2i", -1, 2**31 - 1)), L("<i4"), values=[-1, 2**31 - 1]),
    case("uint64 beyond 2^53 as a string", h(("<Q", 2**64 - 1)), L("<u8"), values=[str(2**64 - 1)]),
    case("int64 big-endian", h((">q", -(2**62) - 3)), L(">i8"), values=[str(-(2**62) - 3)]),
    case("float16 1.0, inf, -inf, subnormal", "003c007c00fc0100", L("<f2"),
         values=[1.0, "inf", "-inf", 5.960464477539063e-08]),
    case("float16 nan", "007e", L("<f2"), values=["nan"]),
    case("float16 big-endian -2.0", "c000", L(">f2"), values=[-2.0]),
    case("bfloat16 1.0 and -0.5", "803f00bf", L("<bfloat16"), values=[1.0, -0.5]),
    case("bfloat16 big-endian 3.0", "4040", L(">bfloat16"), values=[3.0]),
    case("float32 little-endian", h(("<2f", 1.0, -0.0)), L("<f4"), values=[1.0, -0.0]),
    case("float32 big-endian", h((">f", 0.1)), L(">f4")),
    case("float64 both orders", h((">d", math.pi)), L(">f8"), values=[math.pi]),
    case("float64 read little from big bytes", h((">d", 1.0)), L("<f8"), values=[3.03865e-319]),
    case("big-endian int32 as big-endian int16", h((">i", 0x11223344)), L(">i4", 0, [1]), [R(">i2")],
         values=[0x1122, 0x3344]),
    case("float32 written big-endian", "00000000", L(">f4"), write=[1.0], out_bytes="3f800000"),
    case("float16 written", "0000", L("<f2"), write=[-2.0], out_bytes="00c0"),
] + [
    # The float8s, with ml_dtypes computing every value: the special
    # patterns read, and writes that round (ties, overflow, underflow, NaN).
    case("float8_e4m3fn: zeros, subnormals, normals, the largest, NaN", "0080010708387efe7fff",
         L("|float8_e4m3fn"),
         values=[0.0, -0.0, 2.0**-9, 7 * 2.0**-9, 2.0**-6, 1.0, 448.0, -448.0, "nan", "nan"]),
    case("float8_e5m2: zeros, subnormals, the largest, infinities, NaN", "008001043c7bfb7cfc7d7eff",
         L("|float8_e5m2"),
         values=[0.0, -0.0, 2.0**-16, 2.0**-14, 1.0, 57344.0, -57344.0, "inf", "-inf", "nan", "nan", "nan"]),
    case("float8_e8m0fnu: powers of two from 2^-127, NaN at 0xff", "00017f80feff", L("|float8_e8m0fnu"),
         values=[2.0**-127, 2.0**-126, 1.0, 2.0, 2.0**127, "nan"]),
    case("float8_e5m2 strided from an offset", "003c003c00c0", L("|float8_e5m2", 1, [3], [2]),
         values=[1.0, 1.0, -2.0]),
    case("uint8 bytes reinterpreted as float8_e4m3fn", "3840c8", L("|u1"), [R("|float8_e4m3fn")],
         values=[1.0, 2.0, -4.0]),
    case("float8_e4m3fn written: ties to even, overflow to NaN, underflow to zero", "00" * 13,
         L("|float8_e4m3fn"),
         write=[0.3, 1.0625, 1.1875, 1.0625 + 2.0**-40, 464.0, 470.0, 1e6, -1e6, 2.0**-10, 3 * 2.0**-10,
                "inf", "nan", -0.0],
         out_bytes="2a383a397e7f7fff00027f7f80"),
    case("float8_e5m2 written: ties to even, overflow to infinity", "00" * 12, L("|float8_e5m2"),
         write=[57344.0, 61440.0, 61439.0, 1e6, -1e6, 2.0**-17, 3 * 2.0**-17, 1.125, 1.375, "nan", -0.0, "-inf"],
         out_bytes="7b7c7b7cfc0002" "3c3e7e80fc"),
    case("float8_e8m0fnu written: ties away, zero and negatives NaN, underflow to 2^-127", "00" * 12,
         L("|float8_e8m0fnu"),
         write=[1.0, 1.5, 3.0, 0.75, 0.0, -1.0, 2.0**-127, 1e-300, 2.0**127, 1.5 * 2.0**127, "inf", "nan"],
         out_bytes="7f80817fffff0000feffffff"),
]

WORDS = h(*[("<H", i) for i in range(12)])  # 24 bytes: uint16 0..11

STRIDED = [
    case("3x4 uint16 C order", WORDS, L("<u2", 0, [3, 4]), values=list(range(12))),
    case("3x4 transposed walks column by column", WORDS, L("<u2", 0, [3, 4]), [{"op": "transpose"}],
         values=[0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]),
    case("strided column", WORDS, L("<u2", 2, [3], [8]), values=[1, 5, 9]),
    case("negative stride reverses", WORDS, L("<u2", 22, [12], [-2]), values=list(range(11, -1, -1))),
    case("negative step slice", WORDS, L("<u2"), [S(0, None, None, -3)], values=[11, 8, 5, 2]),
    case("slice with negative bounds", WORDS, L("<u2"), [S(0, -5, -1, 2)], values=[7, 9]),
    case("index the last row", WORDS, L("<u2", 0, [3, 4]), [{"op": "index", "axis": 0, "index": -1}],
         values=[8, 9, 10, 11]),
    case("permute 2x3x2", WORDS, L("<u2", 0, [2, 3, 2]), [{"op": "permute", "axes": [2, 0, 1]}]),
    case("reshape 3x4 to 2x6", WORDS, L("<u2", 0, [3, 4]), [{"op": "reshape", "shape": [2, 6]}]),
    case("reshape a column slice without copy", WORDS, L("<u2", 0, [3, 4]),
         [S(1, 0, 2), {"op": "reshape", "shape": [3, 2, 1]}]),
    case("broadcast a row", WORDS, L("<u2", 0, [1, 4]), [{"op": "broadcast_to", "shape": [2, 3, 4]}]),
    case("zero-size view at the end of the buffer", WORDS, L("<u2", 24, [0]), values=[]),
    case("zero-size 2-D view", WORDS, L("<u4", 8, [3, 0]), values=[]),
    case("uint16 rows as uint32", WORDS, L("<u2", 0, [3, 4]), [R("<u4")]),
    case("uint16 rows as uint8", WORDS, L("<u2", 0, [3, 4]), [R("|u1"), S(1, None, None, 2)]),
    case("transposed view reinterpreted with the same size", WORDS, L("<u2", 0, [3, 4]),
         [{"op": "transpose"}, R("<i2")]),
    case("unaligned int32 with opt-in", h("00", ("<2i", 7, -7), "000000"), L("<i4", 1, [2]), unaligned=True,
         values=[7, -7]),
    case("stride-0 axis in a plain layout", WORDS, L("<u2", 4, [3], [0]), values=[2, 2, 2]),
]

ERRORS = [
    case("misaligned int16 offset", "00" * 8, L("<i2", 1, [2]), error="Misaligned"),
    case("misaligned float32 stride", "00" * 16, L("<f4", 0, [2], [6]), error="Misaligned"),
    case("misaligned after a slice of bytes", "00" * 8, L("|u1"), [S(0, 1, 5), R("<i2")], error="Misaligned"),
    case("out of bounds past the end", "00" * 8, L("<i4", 4, [2]), error="OutOfBounds"),
    case("out of bounds before the start", "00" * 8, L("<i4", 0, [2], [-4]), error="OutOfBounds"),
    case("zero-size view past the end", "00" * 8, L("<i4", 12, [0]), error="OutOfBounds"),
    case("reinterpret a transposed view to another size", WORDS, L("<u2", 0, [3, 4]),
         [{"op": "transpose"}, R("<u4")], error="NotContiguous"),
    case("reinterpret where the last axis does not divide", WORDS, L("<u2", 0, [4, 3]), [R("<u4")],
         error="ItemsizeMismatch"),
    case("reshape a transposed view needs a copy", WORDS, L("<u2", 0, [3, 4]),
         [{"op": "transpose"}, {"op": "reshape", "shape": [12]}], error="NeedsCopy"),
    case("reshape to the wrong size", WORDS, L("<u2", 0, [3, 4]), [{"op": "reshape", "shape": [5]}],
         error="SizeMismatch"),
    case("index out of range", WORDS, L("<u2", 0, [3, 4]), [{"op": "index", "axis": 1, "index": 4}],
         error="IndexOutOfRange"),
    case("slice with step zero", WORDS, L("<u2"), [S(0, None, None, 0)], error="ZeroStep"),
    case("permute with a repeated axis", WORDS, L("<u2", 0, [3, 4]), [{"op": "permute", "axes": [0, 0]}],
         error="BadAxis"),
    case("broadcast a length-3 axis to 4", WORDS, L("<u2", 0, [3]), [{"op": "broadcast_to", "shape": [4]}],
         error="NotBroadcastable"),
    case("writing through a broadcast view", WORDS, L("<u2", 0, [3]), [{"op": "broadcast_to", "shape": [2, 3]}],
         write=[1, 2, 3, 4, 5, 6], error="ReadOnly"),
    case("unknown dtype", "0000", L("<i3"), error="BadDType"),
]


# Argument resolution (args.json): what a binding's view(dtype, offset, shape,
# strides) means over a buffer of nbytes bytes, before any operation. The rule
# is bytelens's (core/src/args.rs): numpy has no "no shape" form with an
# offset, so numpy checks only the element offsets of the cases that succeed.
# Case format: {"name", "nbytes", "args": {"dtype"[, "offset", "shape",
# "strides"]} (an absent key is an argument not given), "expect": {"error":
# kind} or {"shape", "strides", "offsets"}}, offsets in bytes, in C order.
def arg_case(name, nbytes, dtype, offset=None, shape=None, strides=None, error=None):
    args = {"dtype": dtype}
    for key, value in [("offset", offset), ("shape", shape), ("strides", strides)]:
        if value is not None:
            args[key] = value
    if error is not None:
        return {"name": name, "nbytes": nbytes, "args": args, "expect": {"error": error}}
    dt = np_dtype(dtype)
    start = offset or 0
    if shape is None:
        shape = [(nbytes - start) // dt.itemsize]
    if strides is None:
        strides, step = [], dt.itemsize
        for n in reversed(shape):
            strides.insert(0, step)
            step *= max(n, 1)
    offsets = [start + sum(i * s for i, s in zip(ix, strides)) for ix in np.ndindex(*shape)]
    # numpy agrees on where every element is (an array of byte positions, viewed).
    where = np.arange(max(nbytes, 1), dtype=np.int64)
    if all(n > 0 for n in shape):
        seen = np.lib.stride_tricks.as_strided(where[start:], shape=shape, strides=[s * 8 for s in strides])
        assert [int(v) for v in seen.ravel()] == offsets, name
    assert all(0 <= o and o + dt.itemsize <= nbytes for o in offsets), name
    return {"name": name, "nbytes": nbytes, "args": args,
            "expect": {"shape": list(shape), "strides": list(strides), "offsets": offsets}}


ARGS = [
    arg_case("dtype alone: the whole buffer", 16, "<i4"),
    arg_case("no shape, from an offset to the end", 16, "<i4", offset=4),
    arg_case("no shape, offset at the end: empty", 16, "<i4", offset=16),
    arg_case("no shape, empty buffer", 0, "<f8"),
    arg_case("no shape, bytes left that do not divide", 10, "<i4", error="ItemsizeMismatch"),
    arg_case("no shape, an offset that leaves a partial element", 16, "<i4", offset=2, error="ItemsizeMismatch"),
    arg_case("strides without a shape", 16, "<i4", strides=[4], error="MissingShape"),
    arg_case("strides without a shape, offset too", 16, "<i2", offset=2, strides=[-2], error="MissingShape"),
    arg_case("negative offset", 16, "<i4", offset=-4, error="OutOfBounds"),
    arg_case("negative offset with a shape", 16, "|u1", offset=-1, shape=[1], error="OutOfBounds"),
    arg_case("offset past the end", 16, "|u1", offset=17, error="OutOfBounds"),
    arg_case("offset at the end, one element", 16, "<i4", offset=16, shape=[1], error="OutOfBounds"),
    arg_case("offset at the end, no elements", 16, "<i4", offset=16, shape=[0]),
    arg_case("0-d view at the last element", 16, "<i4", offset=12, shape=[]),
    arg_case("shape alone: C order", 16, "<i4", shape=[2, 2]),
    arg_case("shape alone from an offset", 16, "<u2", offset=6, shape=[5]),
    arg_case("shape alone, too long", 16, "<u2", offset=6, shape=[6], error="OutOfBounds"),
    arg_case("shape and strides: transposed", 16, "<i4", shape=[2, 2], strides=[4, 8]),
    arg_case("negative stride from the last element", 16, "<i4", offset=12, shape=[4], strides=[-4]),
    arg_case("negative stride reaching before the start", 16, "<i4", offset=8, shape=[4], strides=[-4], error="OutOfBounds"),
    arg_case("zero stride repeats one element", 16, "<i4", offset=4, shape=[3], strides=[0]),
    arg_case("more strides than axes", 16, "<i4", shape=[2], strides=[4, 4], error="LengthMismatch"),
    arg_case("fewer strides than axes", 16, "<i4", shape=[2, 2], strides=[4], error="LengthMismatch"),
    arg_case("misaligned offset with a shape", 16, "<i4", offset=2, shape=[1], error="Misaligned"),
    arg_case("misaligned stride", 16, "<i4", shape=[2], strides=[6], error="Misaligned"),
    arg_case("empty buffer, one element", 0, "|u1", shape=[1], error="OutOfBounds"),
    arg_case("empty buffer, no elements, any stride", 0, "<i4", shape=[0], strides=[4]),
    arg_case("zero-length axis with a huge stride", 8, "<i4", shape=[0, 2], strides=[1 << 40, 4]),
    arg_case("big-endian from an offset", 8, ">u2", offset=2, shape=[2]),
    arg_case("one-byte dtype at an odd offset", 8, "|i1", offset=3),
    arg_case("bfloat16 by name", 8, "<bfloat16", offset=2, shape=[3]),
    arg_case("unknown dtype", 8, "<i3", error="BadDType"),
    arg_case("sizes past the address space", 8, "|u1", shape=[1 << 62, 8], error="Overflow"),
]


def main():
    for name, cases, about in [
        ("seeds", SEEDS, "the examples from shared/seeds, read and written the bytelens way"),
        ("dtypes", DTYPES, "every dtype in both byte orders, special float values"),
        ("strided", STRIDED, "strided, transposed, negative-stride, reshaped, broadcast and empty views"),
        ("errors", ERRORS, "what must fail, with the error kind every language reports"),
        ("args", ARGS, "how a view's arguments (dtype, offset, shape?, strides?) resolve over a buffer"),
    ]:
        doc = {"about": about, "generator": "tests/vectors/generate.py (numpy " + np.__version__ + ")",
               "cases": cases}
        with open(os.path.join(HERE, name + ".json"), "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        print(f"{name}.json: {len(cases)} cases")


if __name__ == "__main__":
    main()
