"""Issue 40, the Python side of the file layer: dequantised arrays under
``mode="r+"`` that lost their writes, ``bl.save`` dequantising a GGUF
tensor without a word, ``Quantized.from_blocks`` taking any shape over any
bytes, ``dequantize(out=)`` into a second mapping of the blocks' own bytes,
and a message that did not say what was wrong (the GPU's side:
test_hostile_round5_gpu.py)."""

from __future__ import annotations

import pickle
import struct
import sys

import numpy as np
import pytest

import bytelens as bl
from bytelens import _native

Q8_0 = 8  # ggml's type codes
F32 = 0


def _text(value: str) -> bytes:
    """A GGUF string: its length, then UTF-8."""
    return struct.pack("<Q", len(value)) + value.encode()


def q8_0_blocks(rng: np.random.Generator, n: int) -> bytes:
    """``n`` Q8_0 blocks: a float16 scale, then 32 int8s."""
    out = b""
    for _ in range(n):
        out += np.float16(rng.uniform(0.5, 2)).tobytes() + rng.integers(-128, 128, 32, dtype=np.int8).tobytes()
    return out


def write_gguf(path, tensors: list[tuple[str, int, tuple[int, ...], bytes]]) -> dict[str, int]:
    """A GGUF file of ``tensors`` (name, ggml type, numpy shape, bytes),
    back to back from the data's start (each a multiple of 32 bytes
    long, or last); returns each tensor's offset in the file."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), 0)
    at = 0
    starts = []
    for name, code, shape, data in tensors:
        dims = shape[::-1]  # GGUF stores them innermost first
        head += _text(name) + struct.pack(f"<I{len(dims)}QIQ", len(dims), *dims, code, at)
        starts.append(at)
        at += len(data) + (-len(data) % 32)
    head += bytes(-len(head) % 32)
    body = b"".join(data + bytes(-len(data) % 32) for _, _, _, data in tensors)
    with open(path, "wb") as f:
        f.write(head + body)
    return {name: len(head) + start for (name, *_), start in zip(tensors, starts)}


@pytest.fixture
def model(tmp_path):
    """A GGUF file of a Q8_0 tensor of 4 blocks (4, 32) and a float32 one
    after it; its path, offsets and the Q8_0 tensor's values."""
    blocks = q8_0_blocks(np.random.default_rng(40), 4)
    path = tmp_path / "m.gguf"
    offsets = write_gguf(
        path, [("w", Q8_0, (4, 32), blocks), ("after", F32, (128,), np.arange(128, dtype="<f4").tobytes())]
    )
    values = bl.load(path)["w"].dequantize()
    return path, offsets, values


# -- 1. nothing written is lost ----------------------------------------------


def test_a_dequantised_array_under_r_plus_is_read_only_not_a_copy_that_loses_writes(model):
    path, _, values = model
    before = path.read_bytes()
    w = bl.load(path, mode="r+", dequantize="float32")["w"]
    assert w.tolist() == values.tolist()
    with pytest.raises(ValueError, match="read-only"):
        w[0, 0] = 123  # was accepted, and the file never changed
    assert path.read_bytes() == before
    # Read-only under "r" as the file's views are; a writable copy by intent under "c".
    assert not bl.load(path, dequantize="float16")["w"].flags.writeable
    copy = bl.load(path, mode="c", dequantize="float32")["w"]
    copy[0, 0] = 123
    assert path.read_bytes() == before
    # The blocks themselves still write through under "r+".
    assert bl.load(path, mode="r+")["w"].blocks.flags.writeable


def test_torch_is_refused_a_dequantised_tensor_under_r_plus(model):
    torch = pytest.importorskip("torch")
    path, _, values = model
    arrays = bl.load(path, mode="r+", framework="torch", dequantize="float32")
    assert "dequantised from its q8_0 blocks" in arrays.unavailable["w"]
    with pytest.raises(bl.FormatError, match=r"'w': not handed to torch under mode=\"r\+\": it is dequantised"):
        arrays["w"]
    assert torch.equal(arrays["after"], torch.arange(128, dtype=torch.float32))  # the others load
    # Under "r" (mapped copy-on-write for torch) and "c" it is handed out, writable.
    for mode in ("r", "c"):
        w = bl.load(path, mode=mode, framework="torch", dequantize="float32")["w"]
        w[0, 0] = 5
        assert w[1].tolist() == values[1].tolist()


@pytest.mark.parametrize("name", ["out.safetensors", "out.npy"])
def test_save_refuses_a_quantised_tensor_instead_of_writing_float32(model, tmp_path, name):
    path, _, _ = model
    arrays = bl.load(path)
    target = tmp_path / name
    chosen = dict(arrays) if name.endswith(".safetensors") else arrays["w"]
    with pytest.raises(TypeError, match=r"quantised q8_0 tensor of shape \(4, 32\).*q\.dequantize"):
        bl.save(target, chosen)
    assert not target.exists()
    bl.save(target, {"w": arrays["w"].dequantize("float16")})  # by intent: saved
    assert bl.load(target)["w" if name.endswith(".safetensors") else "array"].dtype == np.float16


# -- 5. Quantized checks its shape against its blocks -------------------------


@pytest.mark.parametrize(
    "nbytes, shape, says",
    [
        (34, (2, 16), r"shape \(2, 16\) cuts its rows of 16 values inside q8_0's blocks of 32"),
        (34, (64,), r"1 q8_0 block holds 32 values \(34 bytes\), not the 64 of shape \(64,\)"),
        (68, (32,), r"2 q8_0 blocks hold 64 values \(68 bytes\), not the 32"),
        (34, (-32,), r"shape \(-32,\) has a negative dimension"),
        (35, (32,), r"35 bytes are not whole q8_0 blocks of 34 bytes \(1 byte over\)"),
        (34, (), r"at least one axis"),
        # Beside a 0 an axis past numpy's sizes held no values and passed.
        (0, (2**64, 0, 32), r"shape \(18446744073709551616, 0, 32\) is past numpy's sizes"),
        (0, (2**40, 2**40, 0, 32), r"is past numpy's sizes: its axes, and their product without the zeros"),
    ],
)
def test_from_blocks_refuses_a_shape_its_blocks_do_not_hold(nbytes, shape, says):
    with pytest.raises(ValueError, match=says):
        bl.Quantized.from_blocks("q8_0", np.zeros(nbytes, np.uint8), shape)


def test_from_blocks_refuses_a_source_it_would_copy():
    rows = np.zeros((2, 68), np.uint8)
    with pytest.raises(ValueError, match=r"not C-contiguous .* writes to \.blocks would not reach them"):
        bl.Quantized.from_blocks("q8_0", rows[:, :34], (64,))
    # A C-contiguous source of any dtype is viewed, not copied: writes reach it.
    words = np.zeros(34, np.uint16)  # 68 bytes, 2 blocks
    q = bl.Quantized.from_blocks("q8_0", words, (2, 32))
    q.blocks["qs"][1, 0] = 7
    assert words.view(np.uint8)[36] == 7
    assert repr(q) == "<bytelens.Quantized q8_0 (2, 32), 2 blocks>"


class _Forged:
    """Pickles as a Quantized of one Q8_0 block said to hold 64 values."""

    def __reduce__(self):
        return (bl.Quantized, (np.zeros(34, np.uint8), "q8_0", (64,)))


def test_a_quantized_is_checked_when_unpickled_and_its_shape_cannot_change():
    q = bl.Quantized.from_blocks("q8_0", np.zeros(34, np.uint8), (32,))
    with pytest.raises(AttributeError):
        q.shape = (1_000_000,)
    with pytest.raises(ValueError, match="holds 32 values .*, not the 64"):
        pickle.loads(pickle.dumps(_Forged()))
    back = pickle.loads(pickle.dumps(q))
    assert (back.qtype, back.shape, back.nbytes) == ("q8_0", (32,), 34)


def test_dequantize_refuses_rows_cut_inside_a_block_from_any_caller():
    with pytest.raises(ValueError, match=r"shape \(2, 16\) cuts its rows of 16 values inside Q8_0's blocks of 32"):
        _native.dequantize(np.zeros(34, np.uint8), "q8_0", (2, 16))


# -- 6. dequantize(out=) into another mapping of the blocks' bytes -----------


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="only Linux says which file a mapping holds")
@pytest.mark.parametrize("kind", ["np.memmap", "Buffer.map"])
def test_dequantize_into_a_second_mapping_of_its_blocks_gives_the_right_values(model, kind):
    path, offsets, values = model
    q = bl.load(path, mode="r")["w"]
    # out's 512 bytes start at the blocks' own 136 in the file (a second,
    # shared and writable mapping of them), then cover "after".
    if kind == "np.memmap":
        out = np.memmap(path, mode="r+", dtype="<f4", offset=offsets["w"], shape=(4, 32))
    else:
        out = bl.Buffer.map(path, "r+").view("<f4", offset=offsets["w"], shape=(4, 32))
    assert out.ctypes.data != q.blocks.ctypes.data  # another address: the old check saw no overlap
    got = q.dequantize(out=out)
    assert got is out
    assert out.tolist() == values.tolist()  # were silently wrong from the second block on
    with pytest.raises(ValueError, match=r"out must have shape \(4, 32\) and dtype float16"):
        q.dequantize("float16", out=out)
    assert out.tolist() == values.tolist()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="only Linux says which file a mapping holds")
def test_dequantize_into_a_mapping_of_other_bytes_of_the_file_or_a_private_one(model):
    path, offsets, values = model
    q = bl.load(path)["w"]
    out = np.memmap(path, mode="r+", dtype="<f4", offset=offsets["after"], shape=(4, 32))
    assert q.dequantize(out=out) is out
    assert out.tolist() == values.tolist() and q.dequantize().tolist() == values.tolist()
    # A copy-on-write mapping of the blocks' bytes: its writes never reach them.
    private = np.memmap(path, mode="c", dtype="<f4", offset=offsets["w"], shape=(4, 32))
    q.dequantize(out=private)
    assert private.tolist() == values.tolist() and q.dequantize().tolist() == values.tolist()


# -- 10. messages ---------------------------------------------------------------


def test_dequantize_to_the_other_byte_order_says_so():
    q = bl.Quantized.from_blocks("q8_0", np.zeros(34, np.uint8), (32,))
    with pytest.raises(ValueError, match=r"float32 in this machine's byte order \(little-endian\), not big-endian \('>f4'\)"):
        q.dequantize(">f4")
    with pytest.raises(ValueError, match="float32, float16 or bfloat16, not float64"):
        q.dequantize("float64")
