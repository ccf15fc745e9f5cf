"""GGUF files (llama.cpp's models) against the real ``gguf`` package
(gguf-py 0.19.0): files written by ``gguf.GGUFWriter`` with every metadata
type, a tokenizer and every type bytelens dequantises load equal to what
``gguf.GGUFReader`` reads, quantised tensors dequantised bit for bit as
``gguf.quants.dequantize`` does, each tensor a view of the mapped file;
hostile headers are each a FormatError naming the file, in a child process
with time and memory limits."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import bytelens as bl
from _support import frameworks_required, gpu_or_skip

# In the venv the xtask installs gguf into (venv-np2), its absence fails
# the run; elsewhere the tests skip.
gguf = __import__("gguf") if frameworks_required() else pytest.importorskip("gguf")

from gguf import GGMLQuantizationType as T, GGML_QUANT_SIZES  # noqa: E402
from gguf.quants import dequantize as gguf_dequantize, quantize as gguf_quantize  # noqa: E402

ml_dtypes = pytest.importorskip("ml_dtypes")

#: Types gguf-py quantises, and those written as random blocks with finite
#: float16 scales (K-quants, IQ4, ternary, MXFP4), with each block's
#: float16 fields.
QUANTIZED = ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"]
SYNTHETIC = {
    "Q2_K": [80, 82], "Q3_K": [108], "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208],
    "IQ4_NL": [0], "IQ4_XS": [0], "TQ1_0": [52], "TQ2_0": [64], "MXFP4": [],
}


def synthetic_blocks(rng: np.random.Generator, name: str, rows: int, cols: int) -> np.ndarray:
    block, size = GGML_QUANT_SIZES[T[name]]
    n = rows * cols // block
    blocks = rng.integers(0, 256, size=(n, size), dtype=np.uint8)
    for at in SYNTHETIC[name]:
        halves = rng.normal(0, 0.05, size=n).astype(np.float16)
        blocks[:, at : at + 2] = halves.view(np.uint8).reshape(n, 2)
    return blocks.reshape(rows, cols // block * size)


def write_model(path, rng: np.random.Generator, vocab: int = 3000, alignment: int | None = None) -> dict:
    """A GGUF file with every metadata type, a tokenizer and one tensor of
    each type; returns the tensors written (name to (qtype, float values or
    raw blocks))."""
    w = gguf.GGUFWriter(str(path), arch="llama")
    if alignment is not None:
        w.add_custom_alignment(alignment)
    w.add_uint8("t.u8", 200)
    w.add_int8("t.i8", -5)
    w.add_uint16("t.u16", 60000)
    w.add_int16("t.i16", -30000)
    w.add_uint32("t.u32", 4_000_000_000)
    w.add_int32("t.i32", -2_000_000_000)
    w.add_float32("t.f32", 0.1)
    w.add_uint64("t.u64", 2**64 - 1)
    w.add_int64("t.i64", -(2**63))
    w.add_float64("t.f64", 1e300)
    w.add_bool("t.bool", True)
    w.add_string("t.str", "héllo \x1b[2J")
    w.add_array("t.ints", [1, 2, 3])
    w.add_array("t.floats", [0.5, -1.5])
    w.add_array("t.bools", [True, False, True])
    tokens = [f"tok{i}\u00e9" if i % 7 else f"<0x{i % 256:02X}>" for i in range(vocab)]
    w.add_tokenizer_model("gpt2")
    w.add_token_list(tokens)
    w.add_token_scores(rng.normal(size=vocab).astype(np.float32).tolist())
    w.add_token_types([1 + i % 5 for i in range(vocab)])
    written = {}
    f32 = rng.normal(size=(4, 64)).astype(np.float32)
    w.add_tensor("norm.f32", f32)
    written["norm.f32"] = ("F32", f32)
    f16 = rng.normal(size=(3, 32)).astype(np.float16)
    w.add_tensor("emb.f16", f16)
    written["emb.f16"] = ("F16", f16)
    bf16 = rng.normal(size=(2, 64)).astype(np.float32)
    raw = gguf_quantize(bf16, T.BF16)
    w.add_tensor("w.bf16", raw, raw_dtype=T.BF16)
    written["w.bf16"] = ("BF16", raw)
    for name in QUANTIZED:
        values = rng.normal(size=(4, 256)).astype(np.float32)
        blocks = gguf_quantize(values, T[name])
        w.add_tensor(f"w.{name.lower()}", blocks, raw_dtype=T[name])
        written[f"w.{name.lower()}"] = (name, blocks)
    for name in SYNTHETIC:
        blocks = synthetic_blocks(rng, name, 3, 512)
        w.add_tensor(f"w.{name.lower()}", blocks, raw_dtype=T[name])
        written[f"w.{name.lower()}"] = (name, blocks)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return written


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("gguf") / "model.gguf"
    written = write_model(path, np.random.default_rng(32))
    return path, written, gguf.GGUFReader(str(path))


def test_metadata_equals_gguf_readers(model):
    path, _, reader = model
    arrays = bl.load(path)
    meta = arrays.metadata
    assert list(meta) == list(reader.fields)[3:]  # GGUFReader adds version and the counts
    for key, field in list(reader.fields.items())[3:]:
        got, want = meta[key], field.contents()
        if isinstance(got, np.ndarray):
            assert got.tolist() == list(want), key
        else:
            assert got == want and type(got) is type(want), key
    assert meta["t.str"] == "héllo \x1b[2J" and meta["t.u64"] == 2**64 - 1 and meta["t.i64"] == -(2**63)
    assert meta["t.f32"] == np.float32(0.1) and meta["t.bool"] is True
    assert meta["tokenizer.ggml.tokens"][:2] == ["<0x00>", "tok1é"]
    assert meta["tokenizer.ggml.scores"].dtype == np.float32 and meta["t.bools"].dtype == np.bool_
    assert bl.inspect(path).metadata.keys() == meta.keys()


def test_tensors_equal_gguf_readers_in_numpy_order_as_views(model):
    path, written, reader = model
    arrays = bl.load(path)
    assert list(arrays) == [t.name for t in reader.tensors]  # file order
    size = os.path.getsize(path)
    report = bl.inspect(path)
    for t in reader.tensors:
        got = arrays[t.name]
        qtype, source = written[t.name]
        assert tuple(got.shape) == tuple(int(n) for n in reversed(t.shape)), t.name
        if qtype in ("F32", "F16"):
            assert got.dtype == source.dtype and np.array_equal(got, source)
            assert not got.flags.writeable and not got.flags.owndata
        elif qtype == "BF16":
            assert got.dtype == ml_dtypes.bfloat16
            assert np.array_equal(got.view(np.uint16), source.view(np.uint16).reshape(got.shape))
        else:
            assert isinstance(got, bl.Quantized) and got.qtype == qtype.lower()
            assert got.nbytes == t.n_bytes == source.nbytes
            assert got.blocks.tobytes() == source.tobytes() == bytes(t.data)
            assert got.blocks.dtype.itemsize == GGML_QUANT_SIZES[T[qtype]][1]
            assert 0 < t.data_offset and t.data_offset + got.nbytes <= size
        assert report[t.name].offset == t.data_offset, t.name


def test_every_quantised_type_dequantises_as_gguf_py_does(model):
    path, written, reader = model
    arrays = bl.load(path)
    seen = set()
    for t in reader.tensors:
        got = arrays[t.name]
        if not isinstance(got, bl.Quantized):
            continue
        want = gguf_dequantize(t.data, t.tensor_type).reshape(got.shape)
        values = got.dequantize()
        assert values.dtype == np.float32 and values.shape == got.shape
        assert values.tobytes() == want.astype(np.float32).tobytes(), t.name
        assert np.asarray(got).tobytes() == values.tobytes()
        for dtype in ("float16", "bfloat16"):
            rounded = got.dequantize(dtype)
            expected = want.astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float16)
            assert rounded.view(np.uint16).tobytes() == expected.view(np.uint16).tobytes(), (t.name, dtype)
        out = np.full(got.shape, 7, np.float32)
        assert got.dequantize(out=out) is out and out.tobytes() == values.tobytes()
        seen.add(got.qtype)
    assert seen == {n.lower() for n in QUANTIZED + list(SYNTHETIC)}


def test_dequantize_on_load_hands_out_plain_arrays_once(model):
    path, _, reader = model
    arrays = bl.load(path, dequantize="float16")
    assert "not dequantised yet" in repr(arrays)
    first = arrays["w.q4_k"]
    assert first.dtype == np.float16 and arrays["w.q4_k"] is first
    assert arrays["norm.f32"].dtype == np.float32  # unquantised tensors stay as they are
    with pytest.raises(ValueError, match='dequantize must be "float32", "float16", "bfloat16" or None'):
        bl.load(path, dequantize="int8")


def test_a_quantised_tensor_pickles_with_its_blocks(model):
    import pickle

    path, _, _ = model
    q = bl.load(path)["w.q5_k"]
    back = pickle.loads(pickle.dumps(q, protocol=5))
    assert (back.qtype, back.shape, back.nbytes) == (q.qtype, q.shape, q.nbytes)
    assert back.dequantize().tobytes() == q.dequantize().tobytes()
    assert pickle.loads(pickle.dumps(bl.load(path)))["w.q5_k"].blocks.tobytes() == q.blocks.tobytes()


def test_writes_to_blocks_reach_the_file_under_r_plus(tmp_path):
    path = tmp_path / "m.gguf"
    write_model(path, np.random.default_rng(1), vocab=10)
    q = bl.load(path, mode="r+")["w.q8_0"]
    q.blocks["qs"][0, 0] = 77
    del q
    reread = gguf.GGUFReader(str(path))
    t = next(t for t in reread.tensors if t.name == "w.q8_0")
    assert bytes(t.data)[2] == 77
    assert not bl.load(path)["w.q8_0"].blocks.flags.writeable


def test_bad_dequantize_calls_say_what_is_wrong(model):
    path, _, _ = model
    q = bl.load(path)["w.q6_k"]
    with pytest.raises(ValueError, match="float32, float16 or bfloat16"):
        q.dequantize("float64")
    with pytest.raises(ValueError, match=r"out must have shape \(3, 512\) and dtype"):
        q.dequantize(out=np.zeros((3, 511), np.float32))
    with pytest.raises(ValueError, match="without dequantising"):
        np.asarray(q, copy=False)


def test_a_dtype_no_dequantiser_writes_is_one_error_on_every_path(model):
    # The CPU path raised a ValueError without a kind, the GPU paths a
    # GpuError of kind "Gpu": one mistake, one error, wherever it is made.
    path, _, _ = model
    q = bl.load(path)["w.q4_k"]

    def refused(what, call):
        for dtype in ("float64", "int8", ">f4"):
            with pytest.raises(ValueError) as info:
                call(dtype)
            err = info.value
            assert type(err) is ValueError and err.kind == "Dequantize", (what, dtype, type(err), err)
            assert "float32, float16 or bfloat16" in str(err), (what, str(err))
            assert ("'>f4'" if dtype == ">f4" else dtype) in str(err), (what, str(err))

    refused("Quantized.dequantize", q.dequantize)
    gpu = gpu_or_skip()
    refused("gpu.load, dequantize='gpu'", lambda dtype: gpu.load(path, dtype=dtype, dequantize="gpu"))
    refused("gpu.load, dequantize='cpu'", lambda dtype: gpu.load(path, dtype=dtype))
    refused("GpuBuffer.dequantize", gpu.load(path)["w.q4_k"].dequantize)


def test_inspect_summarises_the_vocabulary_and_lists_blocks(model):
    path, _, _ = model
    report = bl.inspect(path)
    text = str(report)
    assert report.format == "gguf" and report.version == (3, 0)
    assert "metadata tokenizer.ggml.tokens: 3,000 strings ['<0x00>', 'tok1\\xe9', 'tok2\\xe9', ...]" in text
    assert "metadata t.floats: 2 float32 [0.5, -1.5]" in text
    assert "metadata t.str: h\\xe9llo \\x1b[2J" in text and "\x1b" not in text
    q4k = report["w.q4_k"]
    assert (q4k.dtype, q4k.ggml, q4k.blocks, q4k.shape) == ("Q4_K", "Q4_K", 6, (3, 512))
    assert "6 blocks, dequantised on access" in text
    assert len(text.splitlines()) < 60


def test_torch_gets_the_unquantised_tensors_and_dequantised_ones(model):
    torch = pytest.importorskip("torch")
    path, _, _ = model
    arrays = bl.load(path, framework="torch", dequantize="bfloat16")
    assert arrays["norm.f32"].dtype == torch.float32
    w = arrays["w.q4_0"]
    assert isinstance(w, torch.Tensor) and w.dtype == torch.bfloat16 and tuple(w.shape) == (4, 256)


def test_a_type_bytelens_lacks_is_unavailable_and_strict_refuses(tmp_path):
    path = tmp_path / "iq.gguf"
    w = gguf.GGUFWriter(str(path), arch="llama")
    w.add_tensor("ok", np.ones(4, np.float32))
    w.add_tensor("iq2", np.zeros((1, 66), np.uint8), raw_dtype=T.IQ2_XXS)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    arrays = bl.load(path)
    assert arrays["ok"].tolist() == [1.0] * 4
    assert arrays.unavailable == {"iq2": "bytelens has no dtype IQ2_XXS"}
    with pytest.raises(bl.FormatError, match="iq2"):
        arrays["iq2"]
    with pytest.raises(bl.FormatError, match="strict=True refuses the file"):
        bl.load(path, strict=True)


def small_file(tmp_path) -> bytes:
    path = tmp_path / "small.gguf"
    w = gguf.GGUFWriter(str(path), arch="llama")
    w.add_array("tokens", ["a", "bc"])
    w.add_tensor("w", gguf_quantize(np.ones((1, 32), np.float32), T.Q8_0), raw_dtype=T.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path.read_bytes()


def test_every_prefix_of_a_small_file_is_a_format_error_naming_it(tmp_path):
    data = small_file(tmp_path)
    reader = gguf.GGUFReader(str(tmp_path / "small.gguf"))
    end = reader.tensors[0].data_offset + reader.tensors[0].n_bytes
    assert end <= len(data)  # past it, only the padding after the last tensor
    path = tmp_path / "cut.gguf"
    for n in range(end):
        path.write_bytes(data[:n])
        with pytest.raises(bl.FormatError) as err:
            bl.load(path)
        assert str(path) in str(err.value), n


def run_limited(path, seconds: int = 20) -> subprocess.CompletedProcess[str]:
    """bl.load(path) in a child with 2 GiB of address space beyond what it
    has at start and a time limit; prints the FormatError it raises."""
    code = textwrap.dedent(
        f"""
        import resource, sys
        import bytelens as bl
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        with open("/proc/self/status") as f:
            vm = next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize"))
        resource.setrlimit(resource.RLIMIT_AS, (vm + (2 << 30), hard))
        try:
            bl.load({str(path)!r})
        except bl.FormatError as err:
            print("FormatError:", err)
        """
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=seconds)


def header(version=3, n_tensors=0, n_kv=0) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_kv)


def kv(key: bytes, code: int, value: bytes) -> bytes:
    return struct.pack("<Q", len(key)) + key + struct.pack("<I", code) + value


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS and /proc are Linux's")
@pytest.mark.parametrize(
    "data, message",
    [
        (header(n_kv=1 << 62), "metadata keys, which take at least"),
        (header(n_tensors=1 << 62), "tensors, which take at least"),
        (header(n_kv=1) + kv(b"t", 9, struct.pack("<IQ", 8, 1 << 62)), "an array of 4611686018427387904 string values"),
        (header(n_kv=1) + kv(b"t", 9, struct.pack("<IQ", 9, 1)), "an array of arrays"),
        (header(n_kv=1) + kv(b"t", 13, b""), "the value type 13"),
        (header(n_kv=1) + kv(b"t", 8, struct.pack("<Q", 1 << 40)), "runs to byte"),
        (header(n_kv=2) + kv(b"k", 0, b"\x01") + kv(b"k", 0, b"\x02"), 'the key "k" twice'),
        (header(version=3 << 24), "big-endian GGUF file"),
        (header(version=1), "GGUF version 1"),
        (header(n_tensors=1) + struct.pack("<Q", 1) + b"w" + struct.pack("<I", 2) + struct.pack("<QQ", 1 << 40, 1 << 40) + struct.pack("<IQ", 0, 0), "does not fit in memory"),
        (header(n_tensors=1) + struct.pack("<Q", 1) + b"w" + struct.pack("<I", 1) + struct.pack("<Q", 100) + struct.pack("<IQ", 8, 0), "not a multiple of Q8_0's block of 32"),
    ],
)
def test_hostile_headers_are_format_errors_within_limits(tmp_path, data, message):
    path = tmp_path / "hostile.gguf"
    path.write_bytes(data + bytes(64))
    done = run_limited(path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(f"FormatError: {path}: ") and message in done.stdout, done.stdout


def test_a_large_header_loads(tmp_path):
    # A 300,000-token vocabulary: several megabytes of header. That it is
    # read in a few doubling passes (not one per 64 KiB) is the Rust file
    # layer's to show: native/src/files/open.rs, a_large_header_is_read_in_few_passes.
    path = tmp_path / "big.gguf"
    w = gguf.GGUFWriter(str(path), arch="llama")
    w.add_token_list([f"token number {i}" for i in range(300_000)])
    w.add_tensor("w", np.ones(8, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    arrays = bl.load(path)
    assert arrays.metadata["tokenizer.ggml.tokens"][-1] == "token number 299999"
    assert len(arrays.metadata["tokenizer.ggml.tokens"]) == 300_000
    assert arrays["w"].tolist() == [1.0] * 8


def test_gpu_load_uploads_blocks_or_dequantises_on_the_way(model):
    gpu = gpu_or_skip()
    path, _, reader = model
    arrays = bl.load(path)
    raw = gpu.load(path)
    assert list(raw) == list(arrays)
    for name, buffer in raw.items():
        item = arrays[name]
        if isinstance(item, bl.Quantized):
            assert (buffer.qtype, buffer.values_shape, buffer.dtype) == (item.qtype, item.shape, np.uint8)
            assert buffer.download().tobytes() == item.blocks.tobytes(), name
        else:
            assert buffer.qtype is None and buffer.values_shape is None
            assert buffer.download().tobytes() == np.ascontiguousarray(item).tobytes(), name
    for dtype in ("float32", "bfloat16"):
        on_gpu = gpu.load(path, dtype=dtype)
        for name, buffer in on_gpu.items():
            item = arrays[name]
            if isinstance(item, bl.Quantized):
                assert buffer.qtype is None and buffer.shape == item.shape
                assert buffer.download().tobytes() == item.dequantize(dtype).tobytes(), (name, dtype)


def test_gpu_load_dequantises_every_type_on_the_gpu_as_on_the_cpu(model):
    # gguf-py's file, one tensor of each type: the WGSL shaders give the
    # CPU kernel's values bit for bit (every scale here is finite).
    gpu = gpu_or_skip()
    path, _, _ = model
    arrays = bl.load(path)
    qtypes = set()
    for dtype in ("float32", "float16", "bfloat16"):
        on_gpu = gpu.load(path, dtype=dtype, dequantize="gpu")
        assert list(on_gpu) == list(arrays)
        for name, buffer in on_gpu.items():
            item = arrays[name]
            if isinstance(item, bl.Quantized):
                qtypes.add(item.qtype)
                assert (buffer.qtype, buffer.shape, buffer.dtype) == (None, item.shape, np.dtype(dtype))
                assert buffer.download().tobytes() == item.dequantize(dtype).tobytes(), (name, dtype)
    assert len(qtypes) == 15, sorted(qtypes)
    blocks = gpu.load(path)
    name = next(n for n, b in blocks.items() if b.qtype == "q4_k")
    values = blocks[name].dequantize("float16")
    assert values.download().tobytes() == arrays[name].dequantize("float16").tobytes()
    with pytest.raises(bl.GpuError, match="not quantised blocks"):
        values.dequantize("float32")
    with pytest.raises(ValueError, match='it must be "cpu" or "gpu"'):
        gpu.load(path, dtype="float32", dequantize="tpu")


def test_gpu_upload_of_a_quantised_tensor_cut_across_staging_chunks():
    # Larger than a staging chunk and cut between threads: every chunk and
    # part boundary falls somewhere inside the blocks' output.
    gpu = gpu_or_skip()
    rng = np.random.default_rng(5)
    blocks = synthetic_blocks(rng, "Q6_K", 128, 256 * 200)
    q = bl.Quantized.from_blocks("q6_k", blocks, (128, 256 * 200))
    for dtype in ("float32", "float16"):
        buffer = gpu.upload(q, dtype=dtype)
        assert buffer.download().tobytes() == q.dequantize(dtype).tobytes(), dtype
    raw = gpu.upload(q)
    assert (raw.qtype, raw.values_shape, raw.nbytes) == ("q6_k", q.shape, q.nbytes)
    with pytest.raises(ValueError, match="float32, float16 or bfloat16") as info:
        gpu.upload(q, dtype="int32")
    assert info.value.kind == "Dequantize"  # the CPU's error, on every path


def test_the_inspect_command_dumps_a_quantised_tensors_values(model):
    path, _, reader = model
    done = subprocess.run(
        [sys.executable, "-m", "bytelens", "inspect", str(path), "--dump", "--array", "w.q4_k", "--rows", "2"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    t = next(t for t in reader.tensors if t.name == "w.q4_k")
    want = gguf_dequantize(t.data, t.tensor_type).reshape(-1)
    title = next(i for i, line in enumerate(lines) if line.startswith("w.q4_k: Q4_K (3, 512) at "))
    assert lines[title].endswith("6 blocks of 256 values in 144 bytes")
    rows = lines[title + 1 :]
    assert len(rows) == 2 and rows[1].split()[:3] == [str(t.data_offset + 144), "block", "1:"]
    shown = [float(v) for v in rows[0].split()[3:-1]]
    assert len(shown) == 16 and np.allclose(shown, want[:16], rtol=1e-5)
    assert rows[0].endswith(" ...")
