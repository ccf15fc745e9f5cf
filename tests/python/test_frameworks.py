"""torch and JAX as real clients: every bytelens dtype through
``bytelens.View``'s DLPack export and through ``bytelens._frameworks``,
zero-copy checked by data pointers and values compared bit for bit; files
written by ``safetensors.torch.save_file`` read back by
``bl.load(framework="torch")``, and files ``bl.save`` writes read by
``safetensors.torch.load_file``.

torch and JAX are installed into the numpy 2 test venv only (the xtask's
``PY_FRAMEWORKS``). There the tests must run: a missing torch or JAX fails
them rather than skipping, so CI cannot pass without them. Elsewhere
(venv-np1, a developer's own venv) they skip.
"""

import doctest
import sys
import warnings

import ml_dtypes
import numpy as np
import pytest

import bytelens as bl
from bytelens import _frameworks
from _support import frameworks_required


def _import(name):
    if frameworks_required():
        return __import__(name)  # an ImportError here fails the test run
    return pytest.importorskip(name)


torch = _import("torch")
jax = _import("jax")
import jax.dlpack  # noqa: E402

DTYPES = [
    np.dtype(d)
    for d in ("?", "u1", "i1", "<u2", "<i2", "<u4", "<i4", "<u8", "<i8", "<f2", ml_dtypes.bfloat16, "<f4", "<f8",
              ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float8_e8m0fnu)
]  # fmt: skip
IDS = [d.name for d in DTYPES]


def _jax_x64(enabled):
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", enabled)
    yield
    jax.config.update("jax_enable_x64", before)


@pytest.fixture
def x64():
    """JAX with 64-bit types (else it makes 32-bit copies of them)."""
    yield from _jax_x64(True)


@pytest.fixture
def no_x64():
    """JAX without 64-bit types, its default, whatever the process was started with."""
    yield from _jax_x64(False)


def random_array(dtype, shape=(8, 12), offset=0, seed=0):
    """Random bytes (bool: 0 or 1) as `dtype`, `offset` bytes into a 4 KiB aligned buffer."""
    n = int(np.prod(shape)) * dtype.itemsize
    buf = bl.Buffer(offset + n, align=4096)
    raw = buf.view("u1", offset, (n,))
    raw[:] = np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)
    if dtype == np.bool_:
        raw %= 2
    return buf.view(dtype, offset, shape)


def address(a):
    return a.__array_interface__["data"][0]


def torch_bytes(t):
    """A tensor's elements in C order, as bytes."""
    flat = t.contiguous().reshape(-1)
    return flat.numpy().tobytes() if t.dtype == torch.bool else flat.view(torch.uint8).numpy().tobytes()


def c_bytes(a):
    return np.ascontiguousarray(a).tobytes()


def jax_bytes(j):
    return np.ascontiguousarray(np.asarray(j)).tobytes()


CASES = {
    "c": lambda a: a,
    "transposed": lambda a: a.T,
    "sliced": lambda a: a[1:7, ::3],
    "column": lambda a: a[:, 5],
    "0-d": lambda a: a[2:3, 3:4].reshape(()),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_torch_from_dlpack_of_a_view_is_zero_copy_and_bit_for_bit(dtype, case):
    x = CASES[case](random_array(dtype))
    t = torch.from_dlpack(bl.View.of(x))
    assert str(t.dtype) == f"torch.{dtype.name}"
    assert tuple(t.shape) == x.shape
    assert t.stride() == tuple(s // dtype.itemsize for s in x.strides)
    assert t.data_ptr() == address(x)
    assert torch_bytes(t) == c_bytes(x)


def test_torch_writes_show_in_the_buffer_and_the_buffer_stays_alive():
    buf = bl.Buffer(64)
    a = buf.view("<f4", 0, (4, 4))
    t = torch.from_dlpack(bl.View.of(a.T))
    del a
    with pytest.raises(BufferError, match="live export"):
        buf.close()
    t[1, 0] = 7.0  # a.T[1, 0] is a[0, 1], the second float
    assert buf.view("<f4")[1] == 7.0
    del t
    import gc

    gc.collect()
    buf.close()


def test_torch_sees_a_read_only_view_through_a_versioned_capsule():
    # torch asks for max_version (1, 0); a read-only view is flagged so (torch
    # has no read-only tensors and does not refuse it: _frameworks copies).
    a = random_array(np.dtype("<i4"))
    a.flags.writeable = False
    t = torch.from_dlpack(bl.View.of(a))
    assert t.data_ptr() == address(a)


@pytest.mark.parametrize("case", ["c", "transposed", "0-d"])
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_jax_from_dlpack_of_a_64_byte_aligned_view_is_zero_copy(dtype, case, x64):
    x = CASES[case](random_array(dtype))
    j = jax.dlpack.from_dlpack(bl.View.of(x))
    assert j.dtype == dtype and j.shape == x.shape
    if case != "0-d":  # the 0-d element is not at a multiple of 64
        assert address(x) % 64 == 0
        assert j.unsafe_buffer_pointer() == address(x)
    assert jax_bytes(j) == c_bytes(x)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_jax_copies_a_view_whose_first_byte_is_not_at_a_multiple_of_64(dtype, x64):
    x = random_array(dtype, offset=dtype.itemsize)  # aligned for the dtype, not to 64
    j = jax.dlpack.from_dlpack(bl.View.of(x))
    assert j.unsafe_buffer_pointer() != address(x)
    assert jax_bytes(j) == c_bytes(x)


@pytest.mark.parametrize("case", ["sliced", "column"])
def test_jax_refuses_a_view_with_gaps_and_frameworks_copies_it_first(case, x64):
    x = CASES[case](random_array(np.dtype("<f4")))
    with pytest.raises(Exception, match="compact"):
        jax.dlpack.from_dlpack(bl.View.of(x))
    j = _frameworks.to_framework(x, "jax")
    assert jax_bytes(j) == c_bytes(x)


def test_jax_without_x64_makes_32_bit_copies_of_64_bit_dtypes(no_x64):
    x = random_array(np.dtype("<i8"))
    j = jax.dlpack.from_dlpack(bl.View.of(x))
    assert j.dtype == np.int32


# --- bytelens._frameworks -----------------------------------------------------------


@pytest.mark.parametrize(
    "spelling, name",
    [("numpy", "numpy"), ("np", "numpy"), ("torch", "torch"), ("pt", "torch"), ("pytorch", "torch"),
     ("jax", "jax"), ("flax", "jax")],
)  # fmt: skip
def test_framework_names(spelling, name):
    assert _frameworks.framework_name(spelling) == name


@pytest.mark.parametrize("bad", ["tf", "Torch", "", None, 3])
def test_unknown_frameworks_name_the_accepted_spellings(bad):
    with pytest.raises(ValueError, match="'numpy', 'np', 'torch', 'pt', 'pytorch', 'jax', 'flax'"):
        _frameworks.framework_name(bad)


@pytest.mark.parametrize("case", ["c", "transposed", "sliced", "column", "0-d"])
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_to_torch_is_zero_copy_for_writable_arrays(dtype, case):
    x = CASES[case](random_array(dtype))
    t = _frameworks.to_framework(x, "torch")
    assert str(t.dtype) == f"torch.{dtype.name}" and tuple(t.shape) == x.shape
    assert t.data_ptr() == address(x)
    assert torch_bytes(t) == c_bytes(x)


@pytest.mark.parametrize(
    "make",
    [
        lambda: np.arange(12, dtype="<i4")[::-1],
        lambda: np.arange(12, dtype=">f4").reshape(3, 4),
        lambda: np.broadcast_to(np.arange(4, dtype="<f2"), (3, 4)),
    ],
    ids=["reversed", "big-endian", "broadcast"],
)
def test_to_torch_copies_what_torch_cannot_share(make):
    x = make()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "non-writable array" warning from torch
        t = _frameworks.to_framework(x, "torch")
    assert t.data_ptr() != address(x)
    assert t.numpy().tolist() == x.tolist()
    t.flatten()[0] = 1  # the copy is torch's own: writing it touches nothing else


def test_to_torch_copies_a_read_only_array_so_a_write_cannot_crash():
    data = np.arange(16, dtype="<f4").tobytes()
    ro = bl.Buffer.wrap(data).view("<f4")  # over bytes, which nothing may write
    assert not ro.flags.writeable
    t = _frameworks.to_framework(ro, "torch")
    assert t.data_ptr() != address(ro)
    t[0] = 99.0
    assert ro[0] == 0.0 and t.tolist()[1:] == ro.tolist()[1:]


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_to_jax_is_zero_copy_for_aligned_read_only_arrays(dtype, x64):
    x = random_array(dtype)
    x.flags.writeable = False  # as bl.load(mode="r") hands out
    j = _frameworks.to_framework(x, "jax")
    assert j.dtype == dtype and j.shape == x.shape
    assert j.unsafe_buffer_pointer() == address(x)
    assert jax_bytes(j) == c_bytes(x)


def test_to_jax_copies_big_endian_arrays_to_native(x64):
    x = np.arange(12, dtype=">i8").reshape(3, 4)
    j = _frameworks.to_framework(x, "jax")
    assert np.asarray(j).tolist() == x.tolist() and j.dtype == np.int64


def test_to_framework_numpy_is_the_array_itself():
    x = np.arange(3)
    assert _frameworks.to_framework(x, "numpy") is x


def test_to_framework_refuses_what_is_not_a_bytelens_array():
    with pytest.raises(TypeError, match="complex128"):
        _frameworks.to_framework(np.zeros(2, complex), "torch")
    with pytest.raises(TypeError, match="list"):
        _frameworks.to_framework([1, 2], "jax")


def test_a_missing_framework_names_the_pip_package():
    from _support import run_child

    code = """
        import sys; sys.modules["torch"] = None
        import numpy as np
        from bytelens import _frameworks
        try:
            _frameworks.to_framework(np.zeros(2), "torch")
        except ModuleNotFoundError as err:
            print(err)
    """
    rc, out = run_child(code)
    assert rc == 0 and "pip install torch" in out, out


def test_the_modules_docstring_examples_run():
    import bytelens._view

    for module in (_frameworks, bytelens._view):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__


# --- safetensors' torch files ---------------------------------------------------------

st_torch = pytest.importorskip("safetensors.torch") if not frameworks_required() else __import__(
    "safetensors.torch", fromlist=["save_file"]
)


def torch_tensors(shapes=((3, 5), (7,), (2, 3, 4), (1,))):
    """One tensor of every dtype safetensors and torch share, odd sizes and
    shapes included, with random bits."""
    out = {}
    for i, dtype in enumerate(DTYPES):
        shape = shapes[i % len(shapes)]
        a = np.ascontiguousarray(random_array(dtype, shape=(int(np.prod(shape)),), seed=i)).reshape(shape)
        out[f"t{i}.{dtype.name}"] = _frameworks.to_framework(a, "torch").clone()
    return out


def same_bits(t, u):
    return t.dtype == u.dtype and t.shape == u.shape and torch_bytes(t) == torch_bytes(u)


@pytest.mark.parametrize("shapes", [((3, 5), (7,), (2, 3, 4), (1,)), ((),)], ids=["shaped", "0-d"])
def test_safetensors_torch_files_load_as_torch_tensors_bit_for_bit(tmp_path, shapes):
    tensors = torch_tensors(shapes)
    path = tmp_path / "model.safetensors"
    st_torch.save_file(tensors, path)
    got = bl.load(path, framework="torch")
    assert set(got) == set(tensors)
    for name, t in tensors.items():
        assert isinstance(got[name], torch.Tensor), name
        assert same_bits(got[name], t), name
    # Writable (copy-on-write for mode "r"), and a write reaches neither the
    # file nor a second load.
    first = next(iter(got))
    got[first].reshape(-1).view(torch.uint8)[0] ^= 1
    assert not same_bits(got[first], tensors[first])
    assert same_bits(st_torch.load_file(path)[first], tensors[first])


def test_bl_save_files_load_with_safetensors_torch_bit_for_bit(tmp_path):
    tensors = torch_tensors()
    path = tmp_path / "out.safetensors"
    bl.save(path, {k: _as_numpy(t) for k, t in tensors.items()})
    back = st_torch.load_file(path)
    assert set(back) == set(tensors)
    for name, t in tensors.items():
        assert same_bits(back[name], t), name


def _as_numpy(t):
    """A torch tensor as the numpy array of the same dtype and bytes (the
    ml_dtypes types through unsigned integers of their size, which
    ``Tensor.numpy()`` refuses for them)."""
    name = str(t.dtype).removeprefix("torch.")
    if not hasattr(ml_dtypes, name):
        return t.numpy()
    return t.view(getattr(torch, f"uint{t.element_size() * 8}")).numpy().view(getattr(ml_dtypes, name))


def test_bl_save_keeps_0_d_tensors_0_d(tmp_path):
    tensors = torch_tensors(shapes=((),))
    path = tmp_path / "scalars.safetensors"
    bl.save(path, {k: _as_numpy(t) for k, t in tensors.items()})
    back = st_torch.load_file(path)
    assert {k: tuple(t.shape) for k, t in back.items()} == {k: () for k in tensors}
    for name, t in tensors.items():
        assert same_bits(back[name], t), name


def test_jax_loads_safetensors_files_bit_for_bit(tmp_path, x64):
    tensors = torch_tensors()
    path = tmp_path / "model.safetensors"
    st_torch.save_file(tensors, path)
    got = bl.load(path, framework="jax")
    for name, t in tensors.items():
        assert isinstance(got[name], jax.Array), name
        assert jax_bytes(got[name]) == torch_bytes(t), name


def _misaligned_safetensors(path):
    """A safetensors file whose float32 tensor "b" ([1.5, 2.5]) starts at an
    odd byte, after a one-byte tensor "a": bl.load must copy "b" to align it."""
    import json
    import struct

    header = json.dumps(
        {"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},
         "b": {"dtype": "F32", "shape": [2], "data_offsets": [1, 9]}}
    ).encode()
    header += b" " * (-len(header) % 8)
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\x07" + np.array([1.5, 2.5], "<f4").tobytes())
    return path


def test_torch_under_r_plus_never_gets_a_copy_whose_writes_are_lost(tmp_path):
    # A misaligned tensor and a big-endian .npy once reached torch as
    # writable copies: w["b"][0] = 42 succeeded and the file kept 1.5.
    misaligned = _misaligned_safetensors(tmp_path / "m.safetensors")
    w = bl.load(misaligned, "r+", framework="torch")
    w["a"][0] = 9  # aligned: a view of the file, written through
    with pytest.raises(bl.FormatError, match=r"'b': not handed to torch under mode=\"r\+\": it is a copy \(offset \d+ is not a multiple of 4"):
        w["b"]
    assert "b" in w and "b" in w.unavailable and list(w) == ["a", "b"]
    del w
    assert bl.load(misaligned)["a"].tolist() == [9] and bl.load(misaligned)["b"].tolist() == [1.5, 2.5]
    # Under "c" and "r" the copy is asked for (private pages): writable, as before.
    assert bl.load(misaligned, "c", framework="torch")["b"].tolist() == [1.5, 2.5]
    big = tmp_path / "be.npy"
    np.save(big, np.array([1.5, 2.5], ">f4"))
    with pytest.raises(bl.FormatError, match="byte order is not this machine's"):
        bl.load(big, "r+", framework="torch")["array"]
    # numpy gets a read-only copy there, so that a write raises.
    assert not bl.load(misaligned, "r+")["b"].flags.writeable
    # JAX's arrays are immutable: nothing written can be lost, so they load.
    assert bl.load(misaligned, "r+", framework="jax")["b"].tolist() == [1.5, 2.5]
