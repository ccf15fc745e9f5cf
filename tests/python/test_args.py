"""How buf.view(dtype, offset, shape, strides) resolves its arguments.

The rule lives in the core (core/src/args.rs, `ViewArgs`), and the wasm
package runs the same two checks as here: every case of
tests/vectors/args.json, and random argument combinations compared with a
small reference model of the rule written from its documentation. Both
bindings agreeing with the model and the vectors is what makes Python and
JavaScript give the same layout (or the same error kind) for the same
arguments.
"""

import json
import os

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import bytelens as bl

ARGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vectors", "args.json")
with open(ARGS) as f:
    CASES = json.load(f)["cases"]

# (type string, itemsize) for every dtype, in both byte orders where that means something.
DTYPES = [
    ("|b1", 1), ("|u1", 1), ("|i1", 1),
    ("<u2", 2), (">i2", 2), ("<f2", 2), (">bfloat16", 2), ("<bf16", 2),
    ("<u4", 4), (">i4", 4), ("<f4", 4),
    ("<u8", 8), (">i8", 8), (">f8", 8),
]


def resolve(nbytes, dtype, args):
    """What buf.view gives: ("ok", shape, strides, element offsets) or ("error", kind)."""
    buf = bl.Buffer(nbytes)
    kwargs = {key: (tuple(v) if isinstance(v, list) else v) for key, v in args.items()}
    try:
        arr = buf.view(dtype, **kwargs)
    except bl.LayoutError as err:
        return ("error", err.kind)
    start = arr.__array_interface__["data"][0] - buf.address
    offsets = [start + sum(i * s for i, s in zip(ix, arr.strides)) for ix in np.ndindex(*arr.shape)]
    return ("ok", list(arr.shape), list(arr.strides), offsets)


def model(nbytes, dtype, itemsize, offset, shape, strides):
    """The rule of core/src/args.rs, written out again, for small arguments."""
    if offset < 0 or offset > nbytes:
        return ("error", "OutOfBounds")
    if shape is None:
        if strides is not None:
            return ("error", "MissingShape")
        if (nbytes - offset) % itemsize:
            return ("error", "ItemsizeMismatch")
        shape = [(nbytes - offset) // itemsize]
    if strides is None:
        strides, step = [], itemsize
        for n in reversed(shape):
            strides.insert(0, step)
            step *= max(n, 1)
    elif len(strides) != len(shape):
        return ("error", "LengthMismatch")
    if all(n > 0 for n in shape):
        low = offset + sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
        high = offset + sum(max(0, (n - 1) * s) for n, s in zip(shape, strides)) + itemsize
        if low < 0 or high > nbytes:
            return ("error", "OutOfBounds")
        if offset % itemsize or any(n > 1 and s % itemsize for n, s in zip(shape, strides)):
            return ("error", "Misaligned")
    if dtype == ">bfloat16":
        # A layout that fits, but no numpy array can be big-endian bfloat16 (test_hostile).
        return ("error", "BadDType")
    offsets = [offset + sum(i * s for i, s in zip(ix, strides)) for ix in np.ndindex(*shape)]
    return ("ok", list(shape), list(strides), offsets)


def test_every_dtype_of_the_core_is_covered():
    names = {np.dtype(d).name if "bf" not in d else "bfloat16" for d, _ in DTYPES}
    assert len(names) == 13


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_vector(case):
    args = dict(case["args"])
    dtype = args.pop("dtype")
    got = resolve(case["nbytes"], dtype, args)
    expect = case["expect"]
    if "error" in expect:
        assert got == ("error", expect["error"])
    else:
        assert got == ("ok", expect["shape"], expect["strides"], expect["offsets"])


@pytest.mark.parametrize("case", [c for c in CASES if "shape" in c["args"]], ids=lambda c: c["name"])
def test_layouts_without_a_buffer_resolve_alike(case):
    """bl.Layout takes the same arguments and rule, minus the buffer's checks."""
    args = dict(case["args"])
    if "error" in case["expect"] or args["dtype"].endswith("3"):
        return
    layout = bl.Layout(args["dtype"], tuple(args["shape"]), args.get("strides"), args.get("offset", 0))
    assert list(layout.shape) == case["expect"]["shape"]
    assert list(layout.strides) == case["expect"]["strides"]
    assert layout.offset == args.get("offset", 0)


def test_the_messages_name_the_numbers():
    with pytest.raises(bl.BoundsError, match="offset -4 is outside the buffer of 16 bytes"):
        bl.Buffer(16).view("<i4", offset=-4)
    with pytest.raises(bl.LayoutError, match="strides were given without a shape") as err:
        bl.Buffer(16).view("<i4", strides=(4,))
    assert err.value.kind == "MissingShape"
    with pytest.raises(bl.LayoutError, match="2 strides given for 1 dimensions"):
        bl.Buffer(16).view("<i4", shape=(2,), strides=(4, 4))


small = st.integers(min_value=0, max_value=4)


@given(
    dtype=st.sampled_from(DTYPES),
    nbytes=st.integers(min_value=0, max_value=48),
    offset=st.integers(min_value=-9, max_value=56),
    shape=st.none() | st.lists(small, max_size=3),
    strides=st.none() | st.lists(st.integers(min_value=-17, max_value=17), max_size=3),
)
def test_random_arguments_follow_the_rule(dtype, nbytes, offset, shape, strides):
    dtype, itemsize = dtype
    args = {"offset": offset}
    if shape is not None:
        args["shape"] = shape
    if strides is not None:
        args["strides"] = strides
    assert resolve(nbytes, dtype, args) == model(nbytes, dtype, itemsize, offset, shape, strides)
