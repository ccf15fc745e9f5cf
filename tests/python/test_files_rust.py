"""The Python file layer against the Rust one (``bytelens::files``), called
straight through ``_native.save_file`` and ``_native.inspect_file``: two
call paths, one file format. ``bl.save`` and ``bytelens::files::save``
write the same bytes; ``bl.inspect`` and ``bytelens::files::inspect`` print
the same report and raise the same exception with the same message,
sharded checkpoints included."""

from __future__ import annotations

import json

import numpy as np
import pytest

import bytelens as bl
from bytelens import _native

ml_dtypes = pytest.importorskip("ml_dtypes")

RNG = np.random.default_rng(41)


def tensors():
    return {
        "w": RNG.standard_normal((3, 5)).astype("<f4"),
        "h": RNG.standard_normal(7).astype("<f2"),
        "bf": RNG.standard_normal((2, 2)).astype(ml_dtypes.bfloat16),
        "i8": RNG.integers(-100, 100, (4, 3)).astype("i1"),
        "t": RNG.standard_normal((4, 6)).T,  # not contiguous
        "scalar": np.array(2.5, "<f8"),
        "empty": np.zeros((0, 4), "u1"),
        "mask": np.array([True, False, True]),
        "é": np.arange(5, dtype="<i8")[::2],  # strided
    }


@pytest.mark.parametrize("align", [8, 64, 256, 4096])
def test_safetensors_bytes_are_the_same(tmp_path, align):
    arrays = tensors()
    metadata = {"format": "pt", "note": "ü \"quoted\"\n"}
    python, rust = tmp_path / "p.safetensors", tmp_path / "r.safetensors"
    bl.save(python, arrays, metadata, align=align)
    _native.save_file(rust, list(arrays.items()), list(metadata.items()), align)
    assert rust.read_bytes() == python.read_bytes()
    assert python.stat().st_size > sum(a.nbytes for a in arrays.values())


@pytest.mark.parametrize(
    "array",
    [
        np.arange(12, dtype="<f4").reshape(3, 4),
        np.arange(12, dtype=">i4").reshape(3, 4),
        np.arange(12, dtype="<u2").reshape(3, 4).T,  # Fortran-ordered
        np.arange(24, dtype="<f8").reshape(2, 3, 4)[:, ::2, 1:],
        np.array(7, "i1"),
        np.zeros((0,), "<f4"),
        np.array([1.5, -2.0], "<f2"),
    ],
    ids=lambda a: f"{a.dtype.str}{a.shape}",
)
@pytest.mark.parametrize("align", [64, 4096])
def test_npy_bytes_are_the_same(tmp_path, array, align):
    python, rust = tmp_path / "p.npy", tmp_path / "r.npy"
    bl.save(python, array, align=align)
    _native.save_file(rust, [("array", array)], [], align)
    assert rust.read_bytes() == python.read_bytes()
    assert np.array_equal(np.load(rust), array)


def test_refusals_are_the_same(tmp_path):
    cases = [
        ("a.safetensors", {"a": np.zeros(3, "<f4")}, 3),  # not a power of two
        ("a.safetensors", {"__metadata__": np.zeros(3, "<f4")}, 64),
        ("a.npy", {"a": np.zeros(3, "<f4"), "b": np.zeros(3, "<f4")}, 64),
        ("a.txt", {"a": np.zeros(3, "<f4")}, 64),
        ("a.npy", {"a": np.zeros(3, ml_dtypes.bfloat16)}, 64),
    ]
    for name, arrays, align in cases:
        with pytest.raises(Exception) as python:
            bl.save(tmp_path / name, arrays, align=align)
        with pytest.raises(Exception) as rust:
            _native.save_file(tmp_path / name, list(arrays.items()), [], align)
        assert (type(rust.value), str(rust.value)) == (type(python.value), str(python.value))
    assert list(tmp_path.iterdir()) == []


INDEX = "model.safetensors.index.json"


def checkpoint(folder):
    shards = {
        "model-00001-of-00002.safetensors": {"embed": np.ones((4, 2), "<f4"), "bias": np.arange(3, dtype="<i8")},
        "model-00002-of-00002.safetensors": {"head": np.zeros((2, 5), "<f2")},
    }
    weight_map = {}
    for shard, arrays in shards.items():
        bl.save(folder / shard, arrays)
        weight_map.update(dict.fromkeys(arrays, shard))
    index = {"metadata": {"total_size": 98, "nested": {"a": [1, 2.5, None, "é"]}}, "weight_map": weight_map}
    (folder / INDEX).write_text(json.dumps(index))
    return folder / INDEX


def same_inspect(path):
    """bl.inspect and bytelens::files::inspect agree on `path`: the same
    text, or the same exception class and message. (Where JSON does not
    parse, the message ends with the decoder's own words: Python's json
    and serde_json say it differently.)"""
    try:
        python = str(bl.inspect(path))
    except Exception as err:  # compared below
        with pytest.raises(type(err)) as rust:
            _native.inspect_file(path)
        said, cut = str(rust.value), "but it is not JSON: "
        if cut in str(err):
            said, err_said = said.partition(cut)[:2], str(err).partition(cut)[:2]
            assert said == err_said
            return str(err)
        assert (type(rust.value), said) == (type(err), str(err))
        return str(err)
    assert _native.inspect_file(path) == python
    return python


def test_reports_are_the_same(tmp_path):
    bl.save(tmp_path / "m.safetensors", tensors(), {"format": "np"})
    bl.save(tmp_path / "a.npy", np.arange(6, dtype=">i2").reshape(2, 3))
    np.savez(tmp_path / "s.npz", a=np.arange(4), b=np.ones((2, 2)))
    np.savez_compressed(tmp_path / "z.npz", a=np.arange(400))
    for name in ["m.safetensors", "a.npy", "s.npz", "z.npz", "missing.npy"]:
        same_inspect(tmp_path / name)
    index = checkpoint(tmp_path)
    text = same_inspect(index)
    assert "safetensors index" in text and "model-00002-of-00002.safetensors" in text
    assert 'metadata nested: {"a": [1, 2.5, null, "\\\\u00e9"]}' in text  # json.dumps, then escaped
    assert same_inspect(tmp_path) == text  # the folder: its one index


@pytest.mark.parametrize(
    "text",
    [
        b"\xff\xfe{}",
        b'{"weight_map": {',
        b"",
        b"[" * 10_000 + b"]" * 10_000,
        b'{"weight_map": {"a": "x.safetensors", "a": "y.safetensors"}}',
        b'{"weight_map": {}, "metadata": {"n": {"k": 1, "k": 2}}}',
        b"[1, 2]",
        b'{"weight_map": {}, "metadata": []}',
        b'{"weight_map": {"embed": "../model-00001-of-00002.safetensors"}}',
        b'{"weight_map": {"embed": "C:model.safetensors"}}',
        b'{"weight_map": {"embed": ""}}',
        b'{"weight_map": {"embed": [1, true, null, {"x": 1.5e300}]}}',
        b'{"weight_map": {"embed": "model-00003-of-00003.safetensors"}}',
        b'{"weight_map": {"embed": "model-00002-of-00002.safetensors"}}',
        b'{"weight_map": {"embed": "model-00001-of-00002.safetensors"}}',
        b'{"weight_map": {"embed": "model-00001-of-00002.safetensors", "bias": "model-00001-of-00002.safetensors",'
        b' "head": "model-00002-of-00002.safetensors", "ghost": "model-00002-of-00002.safetensors"}}',
        b'{"weight_map": {"embed": "model.safetensors.index.json"}}',
    ],
)
def test_index_errors_are_the_same(tmp_path, text):
    index = checkpoint(tmp_path)
    index.write_bytes(text)
    said = same_inspect(index)
    assert said.startswith(str(index))
