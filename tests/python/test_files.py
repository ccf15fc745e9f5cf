"""Real files: .npy, .npz and safetensors written by numpy's and the
safetensors package's own writers, loaded by bl.load as views over one
mapped file; what bl.save writes, read back by those packages' loaders;
hostile headers; the inspect command; plans with explicit offsets."""

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors.numpy import load_file, save_file

import bytelens as bl

NPY_DTYPES = ["|b1", "|u1", "|i1", "<u2", ">i2", "<u4", ">i4", "<u8", ">i8", "<f2", ">f2", "<f4", ">f4", "<f8", ">f8"]
SAFETENSORS_DTYPES = ["bool", "u1", "i1", "i2", "u2", "f2", "i4", "u4", "f4", "f8", "i8", "u8"]


def sample(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=int(np.prod(shape)) * np.dtype(dtype).itemsize, dtype=np.uint8)
    array = raw.view(dtype).reshape(shape)
    if np.dtype(dtype).kind == "f":  # no NaNs: equality must mean equal
        array = np.where(np.isfinite(array), array, 0).astype(dtype)
    if np.dtype(dtype).kind == "b":
        array = raw.view(np.uint8).reshape(shape) % 2 == 1
    return array


def assert_maps(array, path, offset):
    """``array`` is a view of the mapped file ``path`` at byte ``offset``."""
    whole = np.frombuffer(array.base, np.uint8)
    assert whole.size == os.path.getsize(path)
    assert array.ctypes.data - whole.ctypes.data == offset


def assert_same(ours, theirs):
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("dtype", NPY_DTYPES)
@pytest.mark.parametrize("order", ["C", "F"])
def test_npy_written_by_numpy_loads_equal_and_zero_copy(tmp_path, dtype, order):
    array = np.asarray(sample(dtype, (3, 5)), order=order)
    path = tmp_path / "a.npy"
    np.save(path, array)
    ours = bl.load(path)["array"]
    assert_same(ours, np.load(path))
    assert ours.flags.f_contiguous == (order == "F") and not ours.flags.writeable
    report = bl.inspect(path)
    assert (report.format, report.version, report["array"].copy) == ("npy", (1, 0), None)
    assert_maps(ours, path, report["array"].offset)
    # "r+" writes go to the file: the array is a view of it, not a copy.
    writable = bl.load(path, mode="r+")["array"]
    writable[...] = array[0, 0]
    del writable
    assert (np.load(path) == array[0, 0]).all()


@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3), (1,) * 32])
def test_npy_edge_shapes(tmp_path, shape):
    path = tmp_path / "edge.npy"
    np.save(path, np.ones(shape, "<i4"))
    assert_same(bl.load(path)["array"], np.load(path))


def test_npy_versions_2_and_3(tmp_path):
    from numpy.lib import format as npformat

    array = sample("<f4", (4, 4))
    for version in [(2, 0), (3, 0)]:
        path = tmp_path / f"v{version[0]}.npy"
        with open(path, "wb") as f:
            npformat.write_array(f, array, version=version)
        assert bl.inspect(path).version == version
        assert_same(bl.load(path)["array"], array)


def test_npz_stored_members_are_views_and_compressed_ones_copies(tmp_path):
    arrays = {"a": sample("<f4", (4, 3)), "b": sample(">i2", (7,)), "c": sample("|u1", (5,))}
    stored, packed = tmp_path / "s.npz", tmp_path / "c.npz"
    np.savez(stored, **arrays)
    np.savez_compressed(packed, **arrays)
    for path in (stored, packed):
        ours = bl.load(path)
        with np.load(path) as theirs:
            assert sorted(ours) == sorted(theirs.files)
            for name in ours:
                assert_same(ours[name], theirs[name])
    # np.savez stores members wherever the zip puts them: a view where the
    # offset suits the dtype, an aligned copy where it does not.
    report = bl.inspect(stored)
    assert report.format == "npz" and report["c"].copy is None
    for a in report.arrays:
        itemsize = np.dtype(a.descr).itemsize
        assert (a.copy is None) == (a.offset % itemsize == 0), str(report)
    assert all(bl.inspect(packed)[name].copy == "the member is compressed" for name in arrays)
    assert "of c.npy" in str(bl.inspect(packed))
    views = bl.load(stored)
    for a in report.arrays:
        if a.copy is None:
            assert_maps(views[a.name], stored, a.offset)
    with pytest.raises(ValueError, match="CRC-32"):
        bl.load(stored, mode="r+")


@pytest.mark.parametrize("dtype", SAFETENSORS_DTYPES)
def test_safetensors_written_by_the_package_load_equal(tmp_path, dtype):
    tensors = {"w": sample(dtype, (3, 4), 1), "b": sample(dtype, (5,), 2), "empty": sample(dtype, (0, 2))}
    path = tmp_path / "m.safetensors"
    save_file(tensors, str(path), metadata={"format": "np"})
    ours = bl.load(path)
    theirs = load_file(str(path))
    assert sorted(ours) == sorted(theirs)
    for name in theirs:
        assert_same(ours[name], theirs[name])
    report = bl.inspect(path)
    assert report.metadata == {"format": "np"}
    for array in report.arrays:
        assert array.copy is None, str(report)
        assert_maps(ours[array.name], path, array.offset)
    writable = bl.load(path, mode="r+")
    writable["w"][...] = tensors["w"][0, 0]
    del writable
    assert (load_file(str(path))["w"] == tensors["w"][0, 0]).all()


def raw_safetensors(path, tensors):
    """A safetensors file laid out exactly as given: [(name, code, shape, bytes)]."""
    header, data = {}, b""
    for name, code, shape, raw in tensors:
        header[name] = {"dtype": code, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    Path(path).write_bytes(struct.pack("<Q", len(text)) + text + data)


def test_a_misaligned_tensor_is_copied_or_refused(tmp_path):
    path = tmp_path / "odd.safetensors"
    values = np.arange(4, dtype="<f4")
    raw_safetensors(path, [("tag", "U8", [3], b"abc"), ("x", "F32", [4], values.tobytes())])
    report = bl.inspect(path)
    assert report["x"].offset % 4 != 0 and "not a multiple of 4" in report["x"].copy
    assert "copy:" in str(report)
    loaded = bl.load(path)
    assert_same(loaded["x"], load_file(str(path))["x"])
    assert loaded["x"].ctypes.data % 4 == 0 and not loaded["x"].flags.writeable
    with pytest.raises(bl.AlignmentError, match="strict=True"):
        bl.load(path, strict=True)
    empty = tmp_path / "empty.safetensors"
    raw_safetensors(empty, [("tag", "U8", [3], b"abc"), ("none", "F32", [0, 4], b"")])
    assert bl.inspect(empty)["none"].copy is None
    assert bl.load(empty, strict=True)["none"].shape == (0, 4)


FLOAT8 = {"float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2", "float8_e8m0fnu": "F8_E8M0"}


def every_pattern(name):
    """Every byte as the ml_dtypes float8 type ``name``."""
    return np.arange(256, dtype=np.uint8).view(getattr(ml_dtypes, name))


def test_bfloat16_and_float8_load_and_unknown_dtypes_load_the_rest(tmp_path):
    path = tmp_path / "bf.safetensors"
    halves = np.array([1.0, -2.5, 3.0], dtype=ml_dtypes.bfloat16)
    e4m3 = np.array([0.5, -448.0], dtype=ml_dtypes.float8_e4m3fn)
    raw_safetensors(
        path,
        [
            ("h", "BF16", [3], halves.tobytes()),
            ("q", "F8_E4M3", [2], e4m3.tobytes()),
            ("c", "C64", [1], np.array([1 + 2j], "<c8").tobytes()),
            ("nibbles", "F4", [4], b"\x12\x34"),
            ("fnuz", "F8_E4M3FNUZ", [2], b"\x01\x02"),
        ],
    )
    report = bl.inspect(path)
    assert (report["h"].descr, report["q"].descr, report["c"].descr) == ("<bfloat16", "|float8_e4m3fn", None)
    assert report["q"].unavailable is None and report["q"].copy is None
    for name, code in [("c", "C64"), ("nibbles", "F4"), ("fnuz", "F8_E4M3FNUZ")]:
        assert report[name].unavailable == f"bytelens has no dtype {code}" and report[name].copy is None
        assert f"none: bytelens has no dtype {code}" in str(report)
    assert report["nibbles"].nbytes == 2  # F4: two to a byte, as safetensors counts them
    loaded = bl.load(path)
    assert list(loaded) == ["h", "q", "c", "nibbles", "fnuz"]  # nothing dropped silently
    assert_same(loaded["h"], halves)
    assert_same(loaded["q"], e4m3)
    assert loaded.unavailable == {
        "c": "bytelens has no dtype C64",
        "nibbles": "bytelens has no dtype F4",
        "fnuz": "bytelens has no dtype F8_E4M3FNUZ",
    }
    with pytest.raises(bl.FormatError, match=r"array 'c' has the dtype C64, which bytelens cannot view .*other arrays"):
        loaded["c"]
    assert "unavailable: bytelens has no dtype F4" in repr(loaded)
    rest = {k: loaded[k] for k in loaded if k not in loaded.unavailable}
    assert list(rest) == ["h", "q"]
    with pytest.raises(bl.FormatError, match=r"array 'c' has the dtype C64.*strict=True refuses the file"):
        bl.load(path, strict=True)
    # The safetensors package agrees on the rest of the file.
    from safetensors import safe_open

    with safe_open(str(path), "np") as f:
        assert f.get_slice("fnuz").get_shape() == [2]


@pytest.mark.parametrize("name", sorted(FLOAT8))
def test_float8_saves_under_its_code_and_reads_back_bit_for_bit(tmp_path, name):
    values = every_pattern(name).reshape(16, 16)
    path = tmp_path / f"{name}.safetensors"
    bl.save(path, {"w": values, "scale": np.float32([2.0])})
    header = bl.inspect(path)
    assert header["w"].dtype == FLOAT8[name] and header["w"].descr == f"|{name}"
    loaded = bl.load(path)["w"]
    assert loaded.dtype == values.dtype and loaded.view(np.uint8).tobytes() == values.view(np.uint8).tobytes()
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file as torch_load

    theirs = torch_load(str(path))["w"]
    assert str(theirs.dtype) == f"torch.{name}"
    assert theirs.view(torch.uint8).numpy().tobytes() == values.view(np.uint8).tobytes()


def test_float8_from_safetensors_torch_save_file(tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file as torch_save

    patterns = torch.arange(256, dtype=torch.uint8)
    tensors = {name: patterns.clone().view(getattr(torch, name)) for name in FLOAT8}
    tensors["fnuz"] = patterns.clone().view(torch.float8_e4m3fnuz)  # bytelens lacks it
    tensors["bf16"] = torch.tensor([1.5, -3.0], dtype=torch.bfloat16)
    path = tmp_path / "torch.safetensors"
    torch_save(tensors, str(path))
    report = bl.inspect(path)
    assert {a.name: a.dtype for a in report.arrays} == {
        "float8_e4m3fn": "F8_E4M3",
        "float8_e5m2": "F8_E5M2",
        "float8_e8m0fnu": "F8_E8M0",
        "fnuz": "F8_E4M3FNUZ",
        "bf16": "BF16",
    }
    loaded = bl.load(path)
    for name in FLOAT8:
        assert loaded[name].dtype == np.dtype(getattr(ml_dtypes, name))
        assert loaded[name].view(np.uint8).tobytes() == bytes(range(256)), name
        # The values, not only the bits: ml_dtypes decodes what torch encoded.
        decoded = tensors[name].float().numpy()
        np.testing.assert_array_equal(loaded[name].astype(np.float32), decoded)
    assert loaded["bf16"].astype(np.float32).tolist() == [1.5, -3.0]
    assert loaded.unavailable == {"fnuz": "bytelens has no dtype F8_E4M3FNUZ"}


@pytest.mark.parametrize("name", ["bfloat16"] + sorted(FLOAT8))
def test_npy_refuses_ml_dtypes_clearly(tmp_path, name):
    values = np.zeros(3, getattr(ml_dtypes, name))
    path = tmp_path / "a.npy"
    code = "BF16" if name == "bfloat16" else FLOAT8[name]
    with pytest.raises(TypeError, match=rf"an \.npy header cannot name {name} .*\.safetensors file, as {code}"):
        bl.save(path, values)
    assert not path.exists()
    np.save(path, values)  # numpy writes raw bytes; load says so
    report = bl.inspect(path)
    assert report["array"].dtype in ("<V2", "<V1", "<f1")  # what np.save writes: no name of them
    assert report["array"].unavailable.startswith(f"bytelens has no dtype {report['array'].dtype} (np.save writes")
    with pytest.raises(bl.FormatError, match=r"np\.save writes ml_dtypes' types"):
        bl.load(path)["array"]


@pytest.mark.parametrize("spelling", ["numpy", "np"])
def test_framework_numpy_is_the_arrays_as_they_are(tmp_path, spelling):
    path = tmp_path / "m.safetensors"
    bl.save(path, {"w": np.arange(6, dtype="<f4")})
    loaded = bl.load(path, framework=spelling)["w"]
    assert type(loaded) is np.ndarray and not loaded.flags.writeable and loaded.tolist() == list(range(6))


@pytest.mark.parametrize("bad", ["tensorflow", "Torch ", ""])
def test_framework_bad_spellings_are_refused_before_the_file_is_read(tmp_path, bad):
    with pytest.raises(ValueError, match="framework|tensorflow"):
        bl.load(tmp_path / "missing.safetensors", framework=bad)
    with pytest.raises(TypeError, match="framework is a str"):
        bl.load(tmp_path / "missing.safetensors", framework=3)


def test_save_aligns_and_other_loaders_read_it(tmp_path):
    tensors = {
        "odd": np.arange(3, dtype="u1"),
        "wide": sample("<f8", (5,)),
        "big_endian": sample(">i4", (2, 3)),
        "block": sample("<f4", (16, 16)),
        "half": sample("<f2", (3,)),
    }
    path = tmp_path / "out.safetensors"
    bl.save(path, tensors, metadata={"by": "bytelens"})
    theirs = load_file(str(path))
    for name, array in tensors.items():
        np.testing.assert_array_equal(theirs[name], array)
    report = bl.inspect(path)
    assert report.metadata == {"by": "bytelens"}
    assert report["block"].offset % 64 == 0 and report.arrays[0].offset % 64 == 0
    for array in report.arrays:
        assert array.copy is None and array.offset % np.dtype(array.descr).itemsize == 0
    ours = bl.load(path)
    np.testing.assert_array_equal(ours["big_endian"], tensors["big_endian"])
    bf = {"h": np.array([1.5, 2.0], dtype=ml_dtypes.bfloat16)}
    bl.save(tmp_path / "bf.safetensors", bf)
    assert bl.load(tmp_path / "bf.safetensors")["h"].tolist() == [1.5, 2.0]
    fortran = np.asfortranarray(sample(">f4", (3, 4)))
    bl.save(tmp_path / "f.npy", fortran)
    again = np.load(tmp_path / "f.npy")
    assert_same(again, fortran) and again.flags.f_contiguous
    assert bl.inspect(tmp_path / "f.npy")["array"].offset % 64 == 0
    with pytest.raises(TypeError, match="no dtype for complex64"):
        bl.save(tmp_path / "c.safetensors", {"c": np.zeros(2, np.complex64)})
    with pytest.raises(ValueError, match=r"\.npy or \.safetensors"):
        bl.save(tmp_path / "x.bin", {"a": np.zeros(2)})


@pytest.mark.parametrize("align", [8, 64, 256, 4096])
def test_save_aligns_to_what_it_is_asked(tmp_path, align):
    tensors = {
        "bytes": np.arange(5, dtype="u1"),
        "odd_f8": sample("<f8", (3,)),
        "odd_bf16": np.arange(7, dtype=np.float32).astype(ml_dtypes.bfloat16),
        "page": sample("<f4", (32, 32)),  # 4096 bytes: a multiple of every align
        "rows": sample("<f2", (2, 64)),  # 256 bytes
        "odd_i4": sample("<i4", (3,)),
    }
    path = tmp_path / "a.safetensors"
    bl.save(path, tensors, align=align)
    theirs = load_file(str(path))
    report = bl.inspect(path)
    for name, array in tensors.items():
        assert theirs[name].tobytes() == array.tobytes(), name
        info = report[name]
        assert info.copy is None, name  # mapped, zero-copy
        assert info.offset % array.dtype.itemsize == 0, name
        if array.nbytes % align == 0:
            assert info.offset % align == 0, (name, info.offset)
    # The data starts at a multiple of align (its first tensor does).
    assert min(a.offset for a in report.arrays) % align == 0
    assert bl.load(path)["odd_bf16"].tobytes() == tensors["odd_bf16"].tobytes()
    one = sample("<f8", (5, 3))
    bl.save(tmp_path / "a.npy", one, align=align)
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), one)
    assert bl.inspect(tmp_path / "a.npy")["array"].offset % max(align, 64) == 0


@pytest.mark.parametrize("align", [0, -64, 3, 96, 8192, 1 << 40])
def test_save_refuses_an_align_that_is_no_power_of_two_up_to_a_page(tmp_path, align):
    path = tmp_path / "a.safetensors"
    with pytest.raises(ValueError, match=f"align={align}: a power of two"):
        bl.save(path, {"a": np.zeros(4, "u1")}, align=align)
    assert not path.exists()


def test_save_refuses_an_align_below_an_itemsize_and_non_ints(tmp_path):
    path = tmp_path / "a.safetensors"
    with pytest.raises(ValueError, match=r"align=4 is below the itemsize of float64 \(tensor 'w'\) \(8 bytes\)"):
        bl.save(path, {"b": np.zeros(4, "u1"), "w": np.zeros(2, "<f8")}, align=4)
    with pytest.raises(ValueError, match="align=2 is below the itemsize of float32"):
        bl.save(tmp_path / "a.npy", np.zeros(2, "<f4"), align=2)
    for bad in (64.0, "64", True, None):
        with pytest.raises(TypeError, match="align is an int"):
            bl.save(path, {"a": np.zeros(4, "u1")}, align=bad)
    assert not path.exists() and not (tmp_path / "a.npy").exists()
    bl.save(path, {"b": np.zeros(4, "u1")}, align=1)  # bytes need no more
    assert bl.load(path)["b"].tolist() == [0, 0, 0, 0]


def npy_bytes(array):
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"bytelens-fuzz-{os.getpid()}.npy"
    np.save(path, array)
    data = path.read_bytes()
    path.unlink()
    return data


def safetensors_bytes(tensors):
    from safetensors.numpy import save

    return save(tensors)


GOOD_FILES = [
    npy_bytes(np.arange(12, dtype="<i4").reshape(3, 4)),
    safetensors_bytes({"a": np.arange(6, dtype="<f4"), "b": np.ones((2, 2), "<i2")}),
]


@settings(max_examples=300)
@given(
    which=st.sampled_from(range(len(GOOD_FILES))),
    edits=st.lists(st.tuples(st.integers(0, 300), st.integers(0, 255)), max_size=6),
    cut=st.one_of(st.none(), st.integers(0, 400)),
)
def test_mutated_headers_give_clear_errors(tmp_path_factory, which, edits, cut):
    data = bytearray(GOOD_FILES[which])
    for at, byte in edits:
        if at < len(data):
            data[at] = byte
    if cut is not None:
        data = data[:cut]
    path = tmp_path_factory.mktemp("m") / "f.bin"
    path.write_bytes(bytes(data))
    try:
        arrays = bl.load(path)
    except bl.FormatError as err:
        message = str(err)
        assert message.startswith(str(path)) and len(message) < 400, message
    except (bl.LayoutError, ValueError) as err:  # a dtype or layout the core refuses
        assert len(str(err)) < 600
    else:
        for key in arrays:
            try:
                array = arrays[key]
            except bl.FormatError as err:  # an array the file names but bytelens cannot view
                message = str(err)
                assert message.startswith(str(path)) and len(message) < 400, message
                continue
            assert array.nbytes <= len(data)
            array.sum()  # every byte it covers is readable


def test_inspect_command(tmp_path):
    path = tmp_path / "m.safetensors"
    bl.save(path, {"weights": np.arange(8, dtype="<f4"), "ids": np.arange(4, dtype="<i8")})
    scripts = Path(sys.executable).parent
    for command in ([str(scripts / "bytelens")], [sys.executable, "-m", "bytelens"]):
        out = subprocess.run(
            [*command, "inspect", str(path), "--dump", "--array", "weights", "--rows", "2"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert "safetensors" in out and "weights" in out and "ids" in out
        assert "00 00 80 3f" in out and " 1 2 3" in out, out
    raw = tmp_path / "raw.bin"
    raw.write_bytes(np.arange(10, dtype="<u2").tobytes())
    out = subprocess.run(
        [sys.executable, "-m", "bytelens", "inspect", str(raw), "--dtype", "<u2", "--offset", "4", "--dump"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "(8,)" in out and "2 3 4 5 6 7" in out, out
    bad = subprocess.run(
        [sys.executable, "-m", "bytelens", "inspect", str(raw), "--dtype", "<u4", "--offset", "2"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 1 and "not a multiple of 4" in bad.stderr, bad.stderr
    plan = tmp_path / "plan.txt"
    plan.write_text("Header\nmagic |u1 4 @0\nvalues <u2 4 @8\n")
    out = subprocess.run(
        [sys.executable, "-m", "bytelens", "inspect", str(raw), "--plan", str(plan)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "magic" in out and "8..16" in out, out


def test_inspect_reads_only_the_header(tmp_path):
    path = tmp_path / "sparse.safetensors"
    header = json.dumps({"big": {"dtype": "F32", "shape": [1 << 28], "data_offsets": [0, 1 << 30]}}).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header)
        f.truncate(8 + len(header) + (1 << 30))  # a sparse 1 GiB file
    report = bl.inspect(path)
    assert report["big"].nbytes == 1 << 30


def test_plans_with_explicit_offsets():
    plan = bl.Plan("Header").struct(magic=("|u1", (8,), 0), data=("<f4", (4,), 64), version="<u2")
    assert plan.offsets == {"magic": 0, "data": 64, "version": 80}
    assert plan.padding() == [(8, 64), (82, 84)]
    assert bl.Plan.from_text(plan.to_text()) == plan
    assert "@64" in plan.to_text()
    with pytest.raises(bl.LayoutError, match='"late" would overlap field "data"'):
        plan.struct(late=("<u4", (), 72))
    with pytest.raises(bl.AlignmentError, match="offset 66 is not a multiple of 4"):
        plan.struct(late=("<u4", (), 66))
    with pytest.raises(bl.LayoutError, match="cannot be negative"):
        plan.struct(late=("<u4", (), -8))
    buf = bl.Buffer(plan.nbytes)
    arrays = buf.arrays(plan)
    arrays["data"][:] = [1, 2, 3, 4]
    assert buf.view("<f4", offset=64, shape=(4,)).tolist() == [1, 2, 3, 4]
    shader = bl.Plan("H").struct(a=("<u4", (2,), 0), b=("<f4", (4,), 64)).wgsl()
    assert "@size(64) a: array<u32, 2>" in shader


def test_torch_tensors_over_a_read_only_load_are_copy_on_write(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "m.safetensors"
    bl.save(path, {"w": np.arange(4, dtype="<f4")})
    before = path.read_bytes()
    loaded = bl.load(path, framework="torch")["w"]  # mode="r": mapped copy-on-write
    assert isinstance(loaded, torch.Tensor)
    loaded[0] = 100.0  # neither a crash nor a write to the file
    assert loaded.tolist() == [100.0, 1.0, 2.0, 3.0] and path.read_bytes() == before
    through = bl.load(path, mode="r+", framework="pt")["w"]
    through[1] = -1.0
    del through
    assert load_file(str(path))["w"].tolist() == [0.0, -1.0, 2.0, 3.0]
    npz = tmp_path / "z.npz"
    np.savez_compressed(npz, a=np.arange(3, dtype="<i8"))
    member = bl.load(npz, framework="torch")["a"]  # converted on first access too
    assert isinstance(member, torch.Tensor) and member.tolist() == [0, 1, 2]


@pytest.mark.parametrize("suffix", [".safetensors", ".npy"])
def test_0_d_arrays_stay_0_d(tmp_path, suffix):
    path = tmp_path / f"s{suffix}"
    value = np.array(2.5, dtype="<f4")
    bl.save(path, {"s": value})
    loaded = bl.load(path)
    [array] = loaded.values()
    assert array.shape == () and array[()] == 2.5
    theirs = np.load(path) if suffix == ".npy" else load_file(str(path))["s"]
    assert theirs.shape == ()


@pytest.mark.parametrize("save", [np.savez, np.savez_compressed])
def test_an_npz_member_of_a_dtype_bytelens_lacks_loads_the_rest(tmp_path, save):
    path = tmp_path / "z.npz"
    save(path, a=np.arange(3, dtype="<i4"), c=np.ones(2, "<c8"))
    loaded = bl.load(path, verify=True)  # verify reads every other member
    assert list(loaded) == ["a", "c"] and loaded["a"].tolist() == [0, 1, 2]
    assert loaded.unavailable == {"c": "bytelens has no dtype <c8"}
    with pytest.raises(bl.FormatError, match=r"array 'c' has the dtype <c8"):
        loaded["c"]
    assert bl.inspect(path)["c"].unavailable == "bytelens has no dtype <c8"
    with pytest.raises(bl.FormatError, match="strict=True refuses the file"):
        bl.load(path, strict=True)


def test_the_files_docstrings_run():
    import doctest

    import bytelens._files

    failed, attempted = doctest.testmod(bytelens._files)
    assert failed == 0 and attempted >= 10, (failed, attempted)
