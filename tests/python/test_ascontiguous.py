"""bl.ascontiguous against numpy as the oracle.

For any array (reversed, sliced, transposed, permuted, broadcast with zero
strides, unaligned; either byte order) and any target dtype: where numpy's
same_kind casting allows the conversion, the result must equal
np.ascontiguousarray(a).astype(dtype) bit for bit (floats compared as their
unsigned bits, so NaN payloads, -0.0 and rounding ties count), be
C-contiguous and sit in a 64-byte aligned bytelens Buffer; where it refuses
it, CastError naming both dtypes.
"""

import doctest
import math
import pathlib

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import bytelens as bl
import bytelens._copy
from _support import BF16, BF16_BE, address_of, other_thread_runs_during, raw, unsupported_arrays

BASE = [np.dtype(c) for c in ["?", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8"]] + [BF16]


def orders(dt):
    """The dtype in each byte order it has (one for single bytes)."""
    if dt.itemsize == 1:
        return [dt]
    return [dt.newbyteorder("<"), dt.newbyteorder(">")]


DTYPES = [o for dt in BASE for o in orders(dt)]


def kind(dt):
    return "f" if dt.type is BF16.type else dt.kind


def same_kind(a, b):
    """numpy's same_kind rule over bytelens' dtypes (bfloat16 is a float)."""
    ka, kb = kind(a), kind(b)
    if ka == "b" or kb == "f":
        return True
    return (ka, kb) in {("u", "u"), ("u", "i"), ("i", "i")}


def is_bf16_be(dt):
    return dt.type is BF16.type and dt.byteorder == ">"


def converted(a, dtype):
    """bl.ascontiguous(a, dtype), into an out= array for big-endian bfloat16."""
    if not is_bf16_be(dtype):
        return bl.ascontiguous(a, dtype=dtype)
    out = np.empty(a.shape, dtype)
    return bl.ascontiguous(a, dtype=dtype, out=out)


def native(dt):
    return dt.newbyteorder("=")


# ml_dtypes before 0.7 (the last for numpy 1.x is 0.5.4) converts float64
# and 32- and 64-bit integers to bfloat16 through float32, rounding twice:
# a value just past a bfloat16 tie that float32 rounds onto the tie then
# goes to even, the wrong way. 0.7 rounds once, as bytelens does.
ROUNDS_TWICE = tuple(int(p) for p in ml_dtypes.__version__.split(".")[:2]) < (0, 7)


def odd_f64(c):
    """64-bit integers as float64 rounded to odd, in Python's exact integers:
    53 significant bits kept, the last one set if any below it were not 0."""
    out = []
    for v in c.reshape(-1).tolist():
        n = abs(v)
        shift = max(n.bit_length() - 53, 0)
        kept = (n >> shift) | (1 if n & ((1 << shift) - 1) else 0)
        out.append(math.copysign(math.ldexp(kept, shift), v))
    return np.array(out, dtype=np.float64).reshape(c.shape)


def bf16_rounded_once(c):
    """``c`` (float64 or integers, native order) as bfloat16, rounded once
    from its float64 value: first to float32 rounding to odd (toward zero,
    the last bit set where that was inexact), which makes the second
    rounding, to bfloat16, land where one rounding would."""
    d = c.astype(np.float64) if c.dtype.itemsize < 8 or c.dtype.kind == "f" else odd_f64(c)
    f = d.astype(np.float32)
    wide = f.astype(np.float64)
    inexact = np.isfinite(d) & (wide != d)
    f = np.where(inexact & (np.abs(wide) > np.abs(d)), np.nextafter(f, np.float32(0)), f)
    return (f.view(np.uint32) | inexact.astype(np.uint32)).view(np.float32).astype(BF16)


def oracle(a, dtype):
    """np.ascontiguousarray(a).astype(dtype), through native byte order
    (a byte order change is an exact byteswap), keeping a 0-d shape
    (np.ascontiguousarray makes it 1-d); bfloat16 rounded once where the
    installed ml_dtypes rounds twice (see ROUNDS_TWICE)."""
    c = np.array(a, order="C").astype(native(a.dtype))
    with np.errstate(all="ignore"):  # overflow to inf is part of the conversion
        if ROUNDS_TWICE and dtype.type is BF16.type and (c.dtype == np.float64 or (c.dtype.kind in "iu" and c.dtype.itemsize >= 4)):
            # np.asarray: a 0-d array's arithmetic gives numpy scalars, whose
            # byte order is always native.
            return np.asarray(bf16_rounded_once(c)).reshape(c.shape).astype(dtype)
        return c.astype(native(dtype)).astype(dtype)


def bits_equal(got, want):
    assert got.shape == want.shape
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert raw(got).tobytes() == raw(want).tobytes()


# Mantissa widths of the IEEE-style floats, whose NaNs carry payloads.
MANTISSA = {np.dtype(np.float16): 10, BF16: 7, np.dtype(np.float32): 23, np.dtype(np.float64): 52}


def nans(a):
    """Where the elements of ``a``, in C order, are NaNs, read from their bits
    (None for a dtype without payloads)."""
    dt = native(a.dtype)
    man = MANTISSA.get(dt)
    if man is None:
        return None
    bits = np.array(a, order="C").astype(dt).view(f"u{dt.itemsize}").astype(np.uint64)
    exponent = np.uint64(((1 << (8 * dt.itemsize - 1)) - 1) ^ ((1 << man) - 1))
    return ((bits & exponent) == exponent) & ((bits & np.uint64((1 << man) - 1)) != 0)


def _nan_bits_are_the_cpus():
    """Whether this numpy's (and ml_dtypes') float casts give the CPU's NaN
    bits rather than x86-64 numpy's, which bytelens gives everywhere. They do
    on aarch64, where a cast is fcvt: it quiets a signaling NaN (x86-64
    numpy keeps it), and ml_dtypes' bfloat16 -> float16 keeps the payload
    (x86-64's gives the bare quiet NaN)."""
    snan = np.array([0x7D01], np.uint16).view(np.float16)
    return bool(snan.astype(np.float32).view(np.uint32)[0] & 0x0040_0000)


NAN_BITS_ARE_THE_CPUS = _nan_bits_are_the_cpus()


def matches_oracle(a, dtype, got):
    """``got`` is ``oracle(a, dtype)`` bit for bit. Where the oracle's NaN
    bits are the CPU's (aarch64), an element converted from a NaN is held
    only to being a NaN of the same sign: its exact bits are x86-64 numpy's
    and ml_dtypes', which tests/vectors/convert.txt carries to every
    platform (test_conversion_vectors)."""
    want = oracle(a, dtype)
    converts = native(a.dtype) != native(dtype) and kind(dtype) == "f"
    nan = nans(a) if NAN_BITS_ARE_THE_CPUS and converts else None
    if nan is None or not nan.any():
        bits_equal(got, want)
        return
    nan = nan.reshape(got.shape)
    bits_equal(got[~nan], want[~nan])
    source = np.array(a, order="C").astype(native(a.dtype))[nan].astype(np.float64)
    wide = got[nan].astype(native(dtype)).astype(np.float64)
    assert np.isnan(wide).all()
    assert (np.signbit(wide) == np.signbit(source)).all()


def mantissa_bits(dt):
    return {2: 10, 4: 23, 8: 52}[dt.itemsize] if dt.type is not BF16.type else 7


def random_values(rng, dt, n):
    """n values of dt (native order) from random bits; for floats, half of them
    with their low mantissa bits set to a rounding tie or one past it, the
    cases where conversions that round differently disagree."""
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    size = dt.itemsize
    u = np.dtype(f"u{size}")
    bits = rng.integers(0, 256, n * size, dtype=np.uint8).view(u)
    if kind(dt) in "fiu" and size > 1:
        k = rng.integers(0, mantissa_bits(dt) if kind(dt) == "f" else 8 * size - 1, n).astype(u)
        one = u.type(1)
        tie = (bits & ~((one << (k + one)) - one)) | (one << k) | (bits & one)
        pick = rng.integers(0, 2, n).astype(bool)
        bits = np.where(pick, tie, bits)
    return bits.view(native(dt))


@st.composite
def arrays(draw, dtype):
    """An array of `dtype`, not C-contiguous in general: over a base with
    random values, unaligned or not, sliced with any steps, permuted, with
    a broadcast (zero-stride) axis sometimes."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    ndim = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(0, 6), min_size=ndim, max_size=ndim)))
    n = math.prod(shape)
    base = random_values(rng, dtype, n).astype(dtype).reshape(shape)
    if draw(st.booleans()) and dtype.itemsize > 1:
        # The same values at an odd address: numpy calls it unaligned.
        store = np.zeros(base.nbytes + 1, np.uint8)
        base = np.frombuffer(store.data, dtype, count=n, offset=1).reshape(shape)
        base[...] = random_values(rng, dtype, n).astype(dtype).reshape(shape)
        assert base.size == 0 or not base.flags.aligned
    index = []
    for length in shape:
        step = draw(st.sampled_from([1, 1, 2, 3, -1, -2]))
        start = draw(st.integers(0, max(length - 1, 0)))
        stop = draw(st.integers(0, length))
        index.append(slice(start, stop, step) if step > 0 else slice(stop, start, step))
    view = base[tuple(index)] if index else base[...]
    view = view.transpose(draw(st.permutations(range(view.ndim))))
    if draw(st.booleans()):
        axis = draw(st.integers(0, view.ndim))
        widened = list(view.shape)
        widened.insert(axis, draw(st.integers(0, 3)))
        view = np.broadcast_to(np.expand_dims(view, axis), widened)
    return view


pairs = st.tuples(st.sampled_from(DTYPES), st.sampled_from(DTYPES))


@given(pairs.flatmap(lambda p: st.tuples(st.just(p[1]), arrays(p[0]))))
def test_matches_numpy_bit_for_bit(case):
    dtype, a = case
    note(f"{a.dtype} -> {dtype}, shape {a.shape}, strides {a.strides}")
    if not same_kind(a.dtype, dtype):
        with pytest.raises(bl.CastError):
            bl.ascontiguous(a, dtype=dtype)
        return
    if is_bf16_be(dtype):
        # No result array can be big-endian bfloat16 (ml_dtypes reads its
        # elements wrong: see test_hostile); out= still takes one.
        with pytest.raises(bl.LayoutError, match="big-endian bfloat16"):
            bl.ascontiguous(a, dtype=dtype)
        out = np.full(a.shape, 7, dtype)
        assert bl.ascontiguous(a, dtype=dtype, out=out) is out
        matches_oracle(a, dtype, out)
        return
    got = bl.ascontiguous(a, dtype=dtype)
    matches_oracle(a, dtype, got)
    assert got.flags.c_contiguous and got.flags.writeable
    if got.size:
        assert address_of(got) % 64 == 0
    out = np.full(got.shape, 7, dtype)
    assert bl.ascontiguous(a, dtype=dtype, out=out) is out
    bits_equal(out, got)


@given(st.sampled_from(DTYPES).flatmap(arrays))
def test_no_dtype_keeps_the_dtype_in_native_byte_order(a):
    got = bl.ascontiguous(a)
    assert got.dtype == native(a.dtype) and got.dtype.isnative
    matches_oracle(a, native(a.dtype), got)


def pool(dt):
    """Every value of a 2-byte float; for the others, their edges, random bits
    and the bit patterns next to rounding ties (float mantissas, and integers
    of two set bits, plus and minus one)."""
    dt = native(dt)
    if dt.kind == "b":
        return np.array([False, True, True, False])
    u = np.dtype(f"u{dt.itemsize}")
    if dt.itemsize == 2 and kind(dt) == "f":
        return np.arange(1 << 16, dtype=np.uint32).astype(u).view(dt)
    rng = np.random.default_rng(12)
    width = 8 * dt.itemsize
    values = [rng.integers(0, 256, 8192 * dt.itemsize, dtype=np.uint8).view(u)]
    if kind(dt) == "f":
        values.append(random_values(rng, dt, 16384).view(u))
        info = np.finfo(dt)
        edges = [0.0, -0.0, np.inf, -np.inf, info.max, -info.max, info.tiny, info.smallest_subnormal,
                 65504.0, 65520.0, 65519.99, 3.3895e38, 6.0e-8, 2.9e-8, 5.96e-8, 1e-45, 9.2e-41]
        values.append(np.array(edges, dt).view(u))
        nan_bits = [(1 << (width - 1)) - (1 << k) for k in range(width - 9)]  # quiet and signalling NaNs
        values.append(np.array(nan_bits + [b | (1 << (width - 1)) for b in nan_bits], dtype=np.uint64).astype(u))
    else:
        two = sorted({(1 << a) + (1 << b) for a in range(width) for b in range(a)} | {1 << a for a in range(width)})
        pat = np.array(two, dtype=np.uint64)
        values += [pat.astype(u), (pat + 1).astype(u), (pat - 1).astype(u), (~pat).astype(u)]
    return np.concatenate(values).view(dt)


@pytest.mark.parametrize("dst", BASE, ids=str)
@pytest.mark.parametrize("src", BASE, ids=str)
def test_every_pair_and_byte_order_over_dense_values(src, dst):
    values = pool(src)
    for s in orders(src):
        for d in orders(dst):
            a = values.astype(s)
            if not same_kind(s, d):
                with pytest.raises(bl.CastError):
                    bl.ascontiguous(a, dtype=d)
                continue
            matches_oracle(a, d, converted(a, d))
            square = a[: (a.size // 64) * 64].reshape(-1, 64).T  # the same through the tiled walk
            matches_oracle(square, d, converted(square, d))


def test_conversion_vectors():
    """tests/vectors/convert.txt, the cases every binding runs, in all four byte orders."""
    path = pathlib.Path(__file__).resolve().parents[1] / "vectors" / "convert.txt"
    name = {"bfloat16": BF16}
    cases = 0
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        frm, to, src, dst = line.split()
        frm, to = name.get(frm, np.dtype(frm)), name.get(to, np.dtype(to))
        a = np.frombuffer(bytes.fromhex(src), frm.newbyteorder("<"))
        want = np.frombuffer(bytes.fromhex(dst), to.newbyteorder("<"))
        for s in orders(frm):
            for d in orders(to):
                got = converted(a.astype(s), d)
                bits_equal(got.astype(d.newbyteorder("<")), want)
        cases += 1
    assert cases > 100


def test_float8_conversion_vectors():
    """tests/vectors/convert_float8.txt (ml_dtypes 0.7's answers: every float8
    pattern, every float16 and bfloat16 pattern, the float32, float64 and
    integer boundaries) through bl.ascontiguous, in every byte order it
    takes, flat and through the tiled walk of a transposed view."""
    path = pathlib.Path(__file__).resolve().parents[1] / "vectors" / "convert_float8.txt"
    elements = 0
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        frm, to, src, dst = line.split()
        frm, to = np.dtype(bl_dtype(frm)), np.dtype(bl_dtype(to))
        if src == "all":  # every pattern of the source, in increasing order
            src_bytes = np.arange(1 << (8 * frm.itemsize), dtype="<u8").astype(f"<u{frm.itemsize}").tobytes()
        else:
            src_bytes = bytes.fromhex(src)
        a = np.frombuffer(src_bytes, frm.newbyteorder("<"))
        want = np.frombuffer(bytes.fromhex(dst), to.newbyteorder("<"))
        for s in orders(frm):
            for d in orders(to):
                if is_bf16_be(s):
                    continue  # no numpy array is big-endian bfloat16 (see test_hostile)
                x = a.astype(s)
                bits_equal(converted(x, d).astype(d.newbyteorder("<")), want)
                n = x.size // 64 * 64
                if n:
                    square = x[:n].reshape(-1, 64).T
                    wanted = np.ascontiguousarray(want[:n].reshape(-1, 64).T)
                    bits_equal(converted(square, d).astype(d.newbyteorder("<")), wanted)
        elements += a.size
    assert elements > 400_000


def bl_dtype(name):
    """The numpy dtype of a dtype table name: ml_dtypes' type where the table names one."""
    row = next(row for row in bl.dtypes() if name in row["spellings"])
    return getattr(ml_dtypes, row["ml_dtypes"]) if row["ml_dtypes"] else np.dtype(row["name"])


def test_the_rule_is_numpys_same_kind():
    for a in DTYPES:
        for b in DTYPES:
            if BF16.type not in (a.type, b.type):
                assert same_kind(a, b) == np.can_cast(a, b, "same_kind"), (a, b)


@pytest.mark.parametrize("src,dst,names", [
    ("<f8", "<i4", ("float64", "int32")),
    (">f4", "u1", ("float32", "uint8")),
    ("<i4", "?", ("int32", "bool")),
    ("<i2", "<u8", ("int16", "uint64")),
    ("i1", "u1", ("int8", "uint8")),
    (BF16, "<i8", ("bfloat16", "int64")),
    ("<f2", "?", ("float16", "bool")),
])
def test_casts_same_kind_refuses_name_both_dtypes(src, dst, names):
    a = np.zeros(3, np.dtype(src))
    with pytest.raises(bl.CastError) as err:
        bl.ascontiguous(a, dtype=dst)
    assert isinstance(err.value, TypeError)
    for name in names:
        assert name in str(err.value)


@pytest.mark.parametrize("array", unsupported_arrays())
def test_dtypes_bytelens_does_not_handle_are_refused(array):
    with pytest.raises(bl.LayoutError, match="cannot copy an array of dtype"):
        bl.ascontiguous(array)


@pytest.mark.parametrize("dtype", ["O", np.complex128, "U3", "nonsense"])
def test_target_dtypes_bytelens_does_not_handle_are_refused(dtype):
    with pytest.raises(bl.LayoutError):
        bl.ascontiguous(np.zeros(3, np.float32), dtype=dtype)


def test_dtype_spellings():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    for spec, want in [
        ("float16", np.float16), (np.float64, np.float64), ("<f8", np.dtype("<f8")),
        (">f8", np.dtype(">f8")), ("bf16", BF16), ("bfloat16", BF16),
    ]:
        got = bl.ascontiguous(a.T, dtype=spec)
        assert got.dtype == np.dtype(want)
        assert got.astype(np.float64).tolist() == a.T.tolist()


def test_bytes_like_objects_are_read_as_their_format():
    import array

    assert bl.ascontiguous(b"\x01\x02").tolist() == [1, 2]
    floats = bl.ascontiguous(memoryview(array.array("f", [1.5, 2.5])))
    assert floats.dtype == np.float32 and floats.tolist() == [1.5, 2.5]
    buf = bl.Buffer(8)
    buf.view("<i4")[:] = [1, 2]
    assert bl.ascontiguous(buf).tolist() == [1, 0, 0, 0, 2, 0, 0, 0]
    assert bl.ascontiguous(buf.view("<i4")[::-1], dtype="<i8").tolist() == [2, 1]
    assert bl.ascontiguous([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]


def test_the_result_owns_a_new_aligned_buffer():
    a = np.arange(1000, dtype=np.float64)[1::3]
    got = bl.ascontiguous(a)
    assert address_of(got) % 64 == 0
    assert type(got.base).__name__ == "_Export"  # a bytelens Buffer's memory
    assert not np.shares_memory(got, a)
    got[0] = -1.0
    assert a[0] == 1.0
    empty = bl.ascontiguous(np.zeros((0, 3), np.float32).T)
    assert empty.shape == (3, 0) and empty.dtype == np.float32


@pytest.mark.parametrize("offset", [0, 4, 8, 60, 64, 4032, 4088])
def test_large_results_are_aligned_whatever_the_source_address(offset):
    # Results of 1 MiB or more come from another allocator, placed by the
    # source's address: still 64-byte aligned, still right, and freed.
    # Room for a start up to 8183 bytes in and the 1 MiB + 56 bytes after it.
    store = np.zeros((1 << 20) + 3 * 4096, np.uint8)
    start = (-address_of(store)) % 4096 + offset
    a = np.frombuffer(store.data, np.float64, count=(1 << 17) + 7, offset=start)
    a[:] = np.arange(a.size)
    for dtype in [None, np.float32, ">f8"]:
        got = bl.ascontiguous(a, dtype=dtype)
        assert address_of(got) % 64 == 0
        assert got.nbytes >= 1 << 19 and (got == a).all()
        del got
    got = bl.ascontiguous(a[::-1])
    assert address_of(got) % 64 == 0 and (got == a[::-1]).all()


def test_zero_dimensional_arrays_keep_their_shape():
    # Unlike np.ascontiguousarray, which makes them 1-d.
    got = bl.ascontiguous(np.array(3.5, dtype=">f8"), dtype=np.float16)
    assert got.shape == () and got.dtype == np.float16 and float(got) == 3.5
    assert bl.ascontiguous(np.float32(2.0)).shape == ()


# --- out= ----------------------------------------------------------------------


def test_out_receives_the_values_and_is_returned():
    a = np.arange(12, dtype=">i2").reshape(3, 4)
    out = np.zeros((4, 3), np.float32)
    assert bl.ascontiguous(a.T, dtype=np.float32, out=out) is out
    assert out.tolist() == a.T.tolist()
    over_buffer = bl.Buffer(48).view("<f4", shape=(4, 3))
    bl.ascontiguous(a.T, dtype="<f4", out=over_buffer)
    assert over_buffer.tolist() == a.T.tolist()


@pytest.mark.parametrize("out,message", [
    (np.zeros((3, 4), np.float32), r"out must have shape \(4, 3\) and dtype float32 .* has shape \(3, 4\) and dtype float32"),
    (np.zeros((4, 3), np.float64), r"out must have shape \(4, 3\) and dtype float32 .* has shape \(4, 3\) and dtype float64"),
    (np.zeros((4, 3), ">f4"), r"dtype float32 .* dtype >f4"),
    (np.zeros((12,), np.float32), r"has shape \(12,\)"),
    (np.zeros((4, 3), object), r"dtype object"),
    (np.zeros((3, 4), np.float32).T, "out must be C-contiguous"),
    (np.zeros((4, 6), np.float32)[:, ::2], "out must be C-contiguous"),
    (np.broadcast_to(np.float32(0), (4, 3)), "out must be C-contiguous"),
])
def test_a_wrong_out_is_refused_naming_what_was_expected(out, message):
    a = np.zeros((3, 4), np.float32)
    with pytest.raises(ValueError, match=message):
        bl.ascontiguous(a.T, out=out)


def test_a_read_only_or_foreign_out_is_refused():
    out = np.zeros((2, 2), np.float32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="out is read-only"):
        bl.ascontiguous(np.zeros((2, 2), np.float32), out=out)
    with pytest.raises(TypeError, match="out must be a numpy array, not list"):
        bl.ascontiguous(np.zeros(2, np.float32), out=[0.0, 0.0])


def test_out_of_the_dtype_asked_for():
    a = np.arange(4, dtype=np.float64)
    out = np.zeros(4, ">f2")
    bl.ascontiguous(a, dtype=">f2", out=out)
    assert out.tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="dtype float64"):
        bl.ascontiguous(a, out=out)  # no dtype: the result would be native float64


@pytest.mark.parametrize("make", [
    lambda x: (x[::-1], x),                              # reversed onto itself
    lambda x: (x[:-1], x[1:]),                           # shifted by one, forwards
    lambda x: (x[1:], x[:-1]),                           # shifted by one, backwards
    lambda x: (x.reshape(6, 6).T, x.reshape(6, 6)),      # transposed in place
    lambda x: (x[::2], x[:18]),                          # strided over a prefix
    lambda x: (np.broadcast_to(x[:1], (36,)), x),        # one element onto all
])
def test_out_sharing_memory_with_the_source_reads_it_first(make):
    # As numpy's `out[...] = a` does: the result is a's values before out changed.
    x = np.arange(36, dtype=np.float32)
    a, out = make(x)
    want = np.array(a, copy=True)
    bl.ascontiguous(a, out=out)
    assert out.tolist() == want.tolist()


def test_out_sharing_memory_through_a_bytelens_buffer():
    buf = bl.Buffer(64)
    wide = buf.view("<i4")
    wide[:] = np.arange(16)
    halves = buf.view("<i2")
    want = halves[::2].astype("<i4").copy()  # the low halves, before the copy
    bl.ascontiguous(halves[::2], dtype="<i4", out=wide)
    assert wide.tolist() == want.tolist()


# --- threads, docs ---------------------------------------------------------------


@pytest.mark.parametrize("into", ["new", "out"])
def test_other_threads_run_during_a_copy(into):
    # The GIL is released during the copy: another thread keeps running in
    # the middle of it, not only at its ends.
    a = (np.arange(4096 * 4096, dtype=np.float32) % 2048).reshape(4096, 4096)
    out = np.empty((4096, 4096), np.float16) if into == "out" else None
    # Up to three copies, so that one slow wake-up on a loaded machine
    # cannot fail the test; with the GIL held, no copy could pass.
    got = other_thread_runs_during(lambda: bl.ascontiguous(a.T, dtype=np.float16, out=out), tries=3)
    bits_equal(got, a.T.astype(np.float16))


def test_the_docstring_example_runs():
    failed, attempted = doctest.testmod(bytelens._copy)
    assert attempted > 0 and failed == 0
