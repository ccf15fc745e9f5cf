"""Sharded safetensors checkpoints (issue 22, item 5): bl.load and
bl.inspect of Hugging Face's ``model.safetensors.index.json`` (or of the
folder holding it), with shards written by ``safetensors.numpy.save_file``
and an index written as transformers writes one; every hostile index a
FormatError naming the index and the tensor or shard."""

import json
import os
import sys

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

import bytelens as bl
from bytelens import _files

INDEX = "model.safetensors.index.json"


def checkpoint(folder, shards, metadata=None):
    """Shards ``{file name: {tensor: array}}`` by safetensors' own writer,
    and their index as transformers writes it: ``total_size`` in the
    metadata, the weight map sorted by tensor name."""
    weight_map, total = {}, 0
    for shard, tensors in shards.items():
        save_file(tensors, str(folder / shard), metadata=metadata)
        for name, array in tensors.items():
            weight_map[name] = shard
            total += array.nbytes
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    (folder / INDEX).write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
    return folder / INDEX


def two_shards():
    rng = np.random.default_rng(7)
    return {
        "model-00001-of-00002.safetensors": {
            "embed.weight": rng.standard_normal((8, 4)).astype("<f4"),
            "layers.0.bias": np.arange(4, dtype="<i8"),
        },
        "model-00002-of-00002.safetensors": {
            "layers.1.weight": rng.standard_normal((4, 4)).astype("<f2"),
            "lm_head.weight": rng.integers(0, 255, (3, 5)).astype("u1"),
        },
    }


def mappings_of(path):
    """How many regions of this process's memory map the file ``path``."""
    with open("/proc/self/maps") as maps:
        return sum(1 for line in maps if line.rstrip().endswith(os.path.realpath(path)))


def test_every_tensor_of_every_shard_in_the_index_order(tmp_path):
    shards = two_shards()
    index = checkpoint(tmp_path, shards)
    for path in (index, tmp_path, str(index), os.fsencode(index)):
        loaded = bl.load(path)
        assert list(loaded) == ["embed.weight", "layers.0.bias", "layers.1.weight", "lm_head.weight"]
        for shard, tensors in shards.items():
            theirs = load_file(str(tmp_path / shard))
            for name, array in tensors.items():
                assert loaded[name].dtype == array.dtype and loaded[name].shape == array.shape
                np.testing.assert_array_equal(loaded[name], theirs[name])
                assert not loaded[name].flags.writeable
        assert loaded.path == str(index) and loaded.unavailable == {}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts mappings in /proc/self/maps")
def test_each_shard_is_mapped_once(tmp_path):
    index = checkpoint(tmp_path, two_shards())
    before = [mappings_of(tmp_path / shard) for shard in two_shards()]
    loaded = bl.load(index)
    assert before == [0, 0]
    assert [mappings_of(tmp_path / shard) for shard in two_shards()] == [1, 1]
    del loaded


def test_inspect_shows_the_whole_checkpoint(tmp_path):
    shards = two_shards()
    index = checkpoint(tmp_path, shards)
    report = bl.inspect(index)
    assert report.format == "safetensors index" and report.path == str(index)
    assert [(a.name, a.shard) for a in report.arrays] == [
        ("embed.weight", "model-00001-of-00002.safetensors"),
        ("layers.0.bias", "model-00001-of-00002.safetensors"),
        ("layers.1.weight", "model-00002-of-00002.safetensors"),
        ("lm_head.weight", "model-00002-of-00002.safetensors"),
    ]
    assert report.metadata == {"total_size": str(sum(a.nbytes for t in shards.values() for a in t.values()))}
    per_shard = bl.inspect(tmp_path / "model-00002-of-00002.safetensors")
    assert report["lm_head.weight"].offset == per_shard["lm_head.weight"].offset
    text = str(report)
    assert "safetensors index" in text and "shard" in text.splitlines()[2]
    assert all(shard in text for shard in shards)
    assert str(bl.inspect(tmp_path)) == text


def test_modes_and_frameworks_reach_every_shard(tmp_path):
    index = checkpoint(tmp_path, two_shards())
    shard2 = tmp_path / "model-00002-of-00002.safetensors"
    before = shard2.read_bytes()
    copied = bl.load(index, mode="c", framework="np")
    copied["lm_head.weight"][:] = 0
    assert shard2.read_bytes() == before  # copy-on-write
    written = bl.load(index, mode="r+")
    written["lm_head.weight"][0, 0] = 200
    del written
    assert load_file(str(shard2))["lm_head.weight"][0, 0] == 200


def test_a_shard_with_a_dtype_bytelens_lacks_loads_the_rest(tmp_path):
    index = checkpoint(tmp_path, {"a.safetensors": {"x": np.ones(2, "<f4")}, "b.safetensors": {"z": np.zeros(2, "<c8")}})
    loaded = bl.load(index)
    assert loaded["x"].tolist() == [1.0, 1.0] and loaded.unavailable == {"z": "bytelens has no dtype C64"}
    with pytest.raises(bl.FormatError, match=r"b\.safetensors: array 'z' has the dtype C64"):
        loaded["z"]
    with pytest.raises(bl.FormatError, match=r"array 'z' has the dtype C64.*strict=True refuses the file"):
        bl.load(index, strict=True)
    assert bl.inspect(index)["z"].unavailable == "bytelens has no dtype C64"


def edited(tmp_path, change):
    """A two-shard checkpoint whose index ``change`` (a function of the
    parsed index) has edited."""
    index = checkpoint(tmp_path, two_shards())
    parsed = json.loads(index.read_text())
    change(parsed)
    index.write_text(json.dumps(parsed))
    return index


def shard_of(name):
    def change(index):
        index["weight_map"]["embed.weight"] = name

    return change


@pytest.mark.parametrize(
    "name, says",
    [
        ("../model-00001-of-00002.safetensors", "has a path separator"),
        ("sub/model.safetensors", "has a path separator"),
        ("sub\\model.safetensors", "has a path separator"),
        ("/etc/passwd", "has a path separator"),
        ("..", "is not a file name"),
        (".", "is not a file name"),
        ("", "is not a file name"),
        ("C:model.safetensors", "names a drive"),
        ("model\0.safetensors", "NUL"),
    ],
)
def test_shard_names_that_are_paths_are_refused(tmp_path, name, says):
    index = edited(tmp_path, shard_of(name))
    for call in (bl.load, bl.inspect):
        with pytest.raises(bl.FormatError, match=r"index\.json: tensor 'embed\.weight': the shard name .*" + says):
            call(index)


@pytest.mark.parametrize(
    "change, says",
    [
        (shard_of("model-00003-of-00003.safetensors"), r"its shard 'model-00003-of-00003\.safetensors' is missing"),
        (shard_of(1), r"tensor 'embed\.weight': its shard is int 1, not a file name"),
        (shard_of(None), r"tensor 'embed\.weight': its shard is NoneType None"),
        (shard_of(["a"]), r"its shard is list \['a'\]"),
        # The index names a tensor its shard lacks.
        (lambda i: i["weight_map"].update({"ghost": "model-00001-of-00002.safetensors"}), r"tensor 'ghost' is not in its shard"),
        # A shard holds a tensor the index does not name.
        (lambda i: i["weight_map"].pop("layers.0.bias"), r"holds tensor 'layers\.0\.bias', which the index does not name"),
        # The index puts a tensor in another shard than the one holding it.
        (
            shard_of("model-00002-of-00002.safetensors"),
            r"shard 'model-00001-of-00002\.safetensors' holds tensor 'embed\.weight', which the index puts in "
            r"'model-00002-of-00002\.safetensors'",
        ),
        (lambda i: i.pop("weight_map"), "not a sharded checkpoint's index"),
        (lambda i: i.update({"weight_map": ["embed.weight"]}), "not a sharded checkpoint's index"),
        (lambda i: i.update({"metadata": "big"}), r"its \"metadata\" is str, not an object"),
    ],
)
def test_indexes_that_do_not_match_their_shards_are_refused(tmp_path, change, says):
    index = edited(tmp_path, change)
    for call in (bl.load, bl.inspect):
        with pytest.raises(bl.FormatError, match=says) as err:
            call(index)
        assert str(index) in str(err.value)


def test_a_tensor_in_two_shards_is_refused(tmp_path):
    shards = two_shards()
    shards["model-00002-of-00002.safetensors"]["embed.weight"] = np.zeros(2, "<f4")
    index = checkpoint(tmp_path, shards)  # the weight map keeps one of the two
    with pytest.raises(bl.FormatError, match=r"tensor 'embed\.weight' is in two shards") as err:
        bl.load(index)
    assert str(index) in str(err.value)


def test_a_shard_that_is_not_safetensors_is_refused(tmp_path):
    index = checkpoint(tmp_path, two_shards())
    np.save(tmp_path / "model-00002-of-00002.safetensors", np.zeros(3))
    os.replace(tmp_path / "model-00002-of-00002.safetensors.npy", tmp_path / "model-00002-of-00002.safetensors")
    with pytest.raises(bl.FormatError, match=r"its shard 'model-00002-of-00002\.safetensors' is npy, not safetensors"):
        bl.load(index)


def test_a_shard_that_is_not_a_file_of_arrays_names_the_index(tmp_path):
    index = edited(tmp_path, shard_of(INDEX))  # the index itself
    with pytest.raises(bl.FormatError, match=r"index\.json: its shard 'model\.safetensors\.index\.json' is no safetensors file: .*not an .npy file"):
        bl.load(index)
    index = edited(tmp_path, shard_of("sub"))
    (tmp_path / "sub").mkdir()
    with pytest.raises(IsADirectoryError, match=r"sub: not a regular file"):
        bl.load(index)


@pytest.mark.parametrize(
    "text, says",
    [
        (b"\xff\xfe{}", r"not UTF-8 text \(byte 0 is 0xff\)"),
        (b"{\"weight_map\": {", "not JSON"),
        (b"", "not JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b"{\"weight_map\": {\"a\": \"x.safetensors\", \"a\": \"y.safetensors\"}}", r"the key 'a' is given twice"),
        (b"{\"weight_map\": {}, \"metadata\": {\"n\": " + b"9" * 10_000 + b"}}", "not JSON"),
        (b"[1, 2]", "not a sharded checkpoint's index"),
        (b"\"weight_map\"", "not a sharded checkpoint's index"),
    ],
)
def test_garbage_indexes_are_format_errors(tmp_path, text, says):
    index = tmp_path / INDEX
    index.write_bytes(text)
    with pytest.raises(bl.FormatError, match=says) as err:
        bl.load(index)
    assert str(err.value).startswith(str(index))


def test_an_index_past_the_limit_is_refused_unread(tmp_path, monkeypatch):
    index = checkpoint(tmp_path, two_shards())
    monkeypatch.setattr(_files._sharded, "MAX_INDEX", 64)  # where the index reader reads it
    with pytest.raises(bl.FormatError, match="an index of more than 64 bytes"):
        bl.load(index)


def test_an_empty_weight_map_is_an_empty_checkpoint(tmp_path):
    index = tmp_path / INDEX
    index.write_text('{"metadata": {}, "weight_map": {}}')
    assert len(bl.load(index)) == 0 and bl.inspect(index).arrays == []


def test_folders(tmp_path):
    checkpoint(tmp_path, two_shards())
    (tmp_path / "other.safetensors.index.json").write_text('{"weight_map": {}}')
    with pytest.raises(bl.FormatError, match=r"holds 2 sharded checkpoints' indexes"):
        bl.load(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(IsADirectoryError, match=r"not a regular file \(a directory\)$"):
        bl.load(empty)


def test_loading_thousands_of_shards_is_linear_not_quadratic(tmp_path):
    # _load_sharded once scanned every tensor per shard: 3,000 shards of 10
    # tensors took 24.6 s to load where inspect took ~1 s. Now load is
    # within a small factor of inspect (which reads the same headers).
    import time

    shards, weight_map = 2000, {}
    for i in range(shards):
        name = f"model-{i:05d}.safetensors"
        tensors = {f"l{i}.w{j}": np.full(2, j, np.float32) for j in range(10)}
        bl.save(tmp_path / name, tensors)
        weight_map.update(dict.fromkeys(tensors, name))
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))

    def best(call):
        times = []
        for _ in range(3):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        return min(times)

    inspect_s = best(lambda: bl.inspect(tmp_path))
    load_s = best(lambda: bl.load(tmp_path))
    assert len(bl.load(tmp_path)) == 10 * shards
    assert load_s < 6 * inspect_s + 0.5, f"load {load_s:.2f} s, inspect {inspect_s:.2f} s"
