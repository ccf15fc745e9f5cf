"""``bl.save``'s arguments, bad and good: which exception each bad call
raises, with which message (and which wins where two things are wrong),
and the bytes each good call writes. ``bl.save`` checks its arguments in
the extension (``_native.save_arrays``), so these pin what it says to the
letter. Run as a script, this prints every case's outcome as JSON, to
compare two builds case by case."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import types

import numpy as np
import pytest

import bytelens as bl

Q = bl.Quantized.from_blocks("q8_0", np.frombuffer(bytes(2) + bytes(range(32)), np.uint8), (32,))
Q2 = bl.Quantized.from_blocks("q8_0", np.frombuffer((bytes(2) + bytes(range(32))) * 4, np.uint8), (4, 32))
A = np.arange(6, dtype="<f4")


class Int(int):
    def __repr__(self):
        return "Int!"


class Broken:
    def __array__(self, dtype=None, copy=None):
        raise RuntimeError("no array here")


class Shouting(str):
    def __str__(self):
        return "LOUD"


def _cases():
    long = "x" * 100
    st, npy = "m.safetensors", "m.npy"
    return {
        # align: a TypeError for a non-int (bool included), then a ValueError.
        "align str": (st, {"a": A}, None, "64"),
        "align float": (st, {"a": A}, None, 64.0),
        "align True": (st, {"a": A}, None, True),
        "align False": (npy, A, None, False),
        "align None": (st, {"a": A}, None, None),
        "align numpy int": (st, {"a": A}, None, np.int64(64)),
        "align 0": (st, {"a": A}, None, 0),
        "align -1": (npy, A, None, -1),
        "align 3": (st, {"a": A}, None, 3),
        "align 100": (st, {"a": A}, None, 100),
        "align 8192": (st, {"a": A}, None, 8192),
        "align huge": (st, {"a": A}, None, 2**100),
        "align -huge": (st, {"a": A}, None, -(2**100)),
        "align Int 3": (st, {"a": A}, None, Int(3)),
        "align 2 below itemsize": (st, {"a": A}, None, 2),
        "align 2 npy": (npy, A, None, 2),
        "align bad wins over format": ("m.bin", {"a": A}, None, 3),
        "align bad wins over npy metadata": (npy, A, {"k": "v"}, "x"),
        "align bad wins over quantized": (st, {"a": Q}, None, 5),
        # Neither format.
        "neither format": ("m.bin", {"a": A}, None, 64),
        "neither format, arrays junk": ("m.txt", object(), {"k": 1}, 64),
        # A path with a surrogate (a file name os.fsdecode read).
        "surrogate path npy metadata": ("\udcff.npy", A, {"k": "v"}, 64),
        "surrogate path neither": ("\udcff.bin", A, None, 64),
        "surrogate path quantized": ("\udcff.safetensors", {"q": Q}, None, 64),
        "surrogate path good": ("\udcff.safetensors", {"a": A}, None, 64),
        # .npy
        "npy metadata": (npy, A, {"k": "v"}, 64),
        "npy metadata truthy str": (npy, A, "meta", 64),
        "npy metadata wins over quantized": (npy, Q, {"k": "v"}, 64),
        "npy two arrays": (npy, {"a": A, "b": A}, None, 64),
        "npy no array": (npy, {}, None, 64),
        "npy quantized": (npy, Q, None, 64),
        "npy quantized in dict": (npy, {"q": Q2}, None, 64),
        "npy two with quantized": (npy, {"q": Q, "b": A}, None, 64),
        "npy object": (npy, np.array([1, "a"], dtype=object), None, 64),
        "npy complex": (npy, np.zeros(3, "c8"), None, 64),
        "npy datetime": (npy, np.zeros(3, "M8[s]"), None, 64),
        "npy strings": (npy, np.array(["ab", "c"]), None, 64),
        "npy raw bytes": (npy, np.zeros(3, "V4"), None, 64),
        "npy records": (npy, np.zeros(3, "i4,f4"), None, 64),
        "npy ragged list": (npy, [[1, 2], [3]], None, 64),
        "npy broken array": (npy, Broken(), None, 64),
        # safetensors: arrays and metadata.
        "st arrays ndarray": (st, A, None, 64),
        "st arrays list": (st, [("a", A)], None, 64),
        "st arrays wins over metadata": (st, A, [("k", "v")], 64),
        "st metadata list": (st, {"a": A}, [("k", "v")], 64),
        "st metadata str": (st, {"a": A}, "k", 64),
        "st metadata type wins over name": (st, {1: A}, 5, 64),
        # tensor names
        "st name int": (st, {1: A}, None, 64),
        "st name bytes": (st, {b"a": A}, None, 64),
        "st name None": (st, {None: A}, None, 64),
        "st name long tuple": (st, {(long,): A}, None, 64),
        "st name surrogate": (st, {"a\udc80": A}, None, 64),
        "st name surrogate late": (st, {"abc" + long + "\ud800": A}, None, 64),
        "st name Int": (st, {Int(3): A}, None, 64),
        "st name wins over quantized": (st, {2: Q}, None, 64),
        "st name __metadata__": (st, {"__metadata__": A}, None, 64),
        "st name empty": (st, {"": A}, None, 64),
        # values
        "st quantized": (st, {"w": Q}, None, 64),
        "st quantized 2-d": (st, {"a": A, "blk.0\n\x1b": Q2}, None, 64),
        "st quantized long name": (st, {"é" * 80: Q}, None, 64),
        "st object": (st, {"o": np.array([None])}, None, 64),
        "st complex": (st, {"c": np.zeros(2, "c16")}, None, 64),
        "st datetime": (st, {"t\n": np.zeros(2, "M8[s]")}, None, 64),
        "st plain object": (st, {"o": object()}, None, 64),
        "st broken array": (st, {"b": Broken()}, None, 64),
        "st array wins over metadata": (st, {"b": Broken()}, {1: "v"}, 64),
        # metadata keys and values
        "st metadata key int": (st, {"a": A}, {3: "v"}, 64),
        "st metadata value int": (st, {"a": A}, {"k": 3}, 64),
        "st metadata value None": (st, {"a": A}, {"k": None}, 64),
        "st metadata value long list": (st, {"a": A}, {"k": [long]}, 64),
        "st metadata long key value int": (st, {"a": A}, {long + "\n": 1}, 64),
        "st metadata key surrogate": (st, {"a": A}, {"k\ud800": "v"}, 64),
        "st metadata value surrogate": (st, {"a": A}, {"k": "v\udfff"}, 64),
        "st metadata Shouting key": (st, {"a": A}, {Shouting("k"): 1}, 64),
        "st metadata key name __metadata__ ok": (st, {"a": A}, {"__metadata__": "v"}, 64),
        "st name wins over metadata": (st, {1: A}, {2: "v"}, 64),
        "st metadata falsy mapping": (st, {"a": A}, {}, 64),
        # good ones
        "good npy": (npy, np.arange(12, dtype="<f4").reshape(3, 4), None, 64),
        "good npy dict": (npy, {"x": np.arange(12, dtype=">i4").reshape(3, 4).T}, None, 256),
        "good npy list": (npy, [[1.5, 2.5], [3.5, 4.5]], None, 64),
        "good npy strided": (npy, np.arange(24, dtype=">f8")[::3], None, 4096),
        "good npy scalar": (npy, 7, {}, 64),
        "good st": (
            st,
            {
                "w": np.arange(15, dtype=">f4").reshape(3, 5),
                "h": np.arange(7, dtype="<f2"),
                "t": np.arange(24, dtype="<f8").reshape(4, 6).T,
                "m": np.array([True, False]),
                "s": np.array(2.5),
                "e": np.zeros((0, 3), "u1"),
                "l": [1, 2, 3],
                "é\n": np.arange(5, dtype="<i8")[::2],
            },
            {"format": "pt", "note": 'ü "q"\n'},
            256,
        ),
        "good st mappingproxy": (st, types.MappingProxyType({"a": A}), types.MappingProxyType({"k": "v"}), Int(8)),
        "good st Shouting": (st, {Shouting("n"): A}, {Shouting("k"): Shouting("v")}, 64),
        "good st empty": (st, {}, None, 1),
    }


CASES = _cases()


def outcome(name):
    """What ``bl.save`` does with case ``name``, in the current folder: the
    error's class and message, or the file's length and SHA-256. (A path
    relative to the folder keeps the messages the same wherever it is.)"""
    file, arrays, metadata, align = CASES[name]
    path = name.replace(" ", "_") + "." + file
    try:
        bl.save(path, arrays, metadata, align=align)
    except Exception as err:  # noqa: BLE001 - every class is the point
        assert not os.path.exists(path), name
        assert not [f for f in os.listdir(".") if f.endswith(".tmp")], name
        return [type(err).__name__, str(err)]
    with open(path, "rb") as f:
        data = f.read()
    return ["ok", len(data), hashlib.sha256(data).hexdigest()]


# What bl.save said, case by case, to the letter, when its arguments were
# checked in Python (before they moved into the extension). Left out: a
# ragged list, whose message is numpy's own words.
EXPECTED = {
    'align str': ['TypeError', 'align is an int, a power of two up to 4096, not str'],
    'align float': ['TypeError', 'align is an int, a power of two up to 4096, not float'],
    'align True': ['TypeError', 'align is an int, a power of two up to 4096, not bool'],
    'align False': ['TypeError', 'align is an int, a power of two up to 4096, not bool'],
    'align None': ['TypeError', 'align is an int, a power of two up to 4096, not NoneType'],
    'align numpy int': ['TypeError', 'align is an int, a power of two up to 4096, not int64'],
    'align 0': ['ValueError', "align=0: a power of two from the widest dtype's itemsize up to 4096"],
    'align -1': ['ValueError', "align=-1: a power of two from the widest dtype's itemsize up to 4096"],
    'align 3': ['ValueError', "align=3: a power of two from the widest dtype's itemsize up to 4096"],
    'align 100': ['ValueError', "align=100: a power of two from the widest dtype's itemsize up to 4096"],
    'align 8192': ['ValueError', "align=8192: a power of two from the widest dtype's itemsize up to 4096"],
    'align huge': ['ValueError', "align=1267650600228229401496703205376: a power of two from the widest dtype's itemsize up to 4096"],
    'align -huge': ['ValueError', "align=-1267650600228229401496703205376: a power of two from the widest dtype's itemsize up to 4096"],
    'align Int 3': ['ValueError', "align=Int!: a power of two from the widest dtype's itemsize up to 4096"],
    'align 2 below itemsize': ['ValueError', "align=2 is below the itemsize of float32 (tensor 'a') (4 bytes): it could not keep it aligned"],
    'align 2 npy': ['ValueError', 'align=2 is below the itemsize of float32 (4 bytes): it could not keep it aligned'],
    'align bad wins over format': ['ValueError', "align=3: a power of two from the widest dtype's itemsize up to 4096"],
    'align bad wins over npy metadata': ['TypeError', 'align is an int, a power of two up to 4096, not str'],
    'align bad wins over quantized': ['ValueError', "align=5: a power of two from the widest dtype's itemsize up to 4096"],
    'neither format': ['ValueError', "save writes .npy or .safetensors files, not 'neither_format.m.bin'"],
    'neither format, arrays junk': ['ValueError', "save writes .npy or .safetensors files, not 'neither_format,_arrays_junk.m.txt'"],
    'surrogate path npy metadata': ['ValueError', 'surrogate_path_npy_metadata.\udcff.npy: an .npy file has no metadata; safetensors files do'],
    'surrogate path neither': ['UnicodeEncodeError', "'utf-8' codec can't encode character '\\udcff' in position 23: surrogates not allowed"],
    'surrogate path quantized': ['TypeError', 'surrogate_path_quantized.\udcff.safetensors: tensor \'q\' is a quantised q8_0 tensor of shape (32,), which neither .npy nor safetensors can hold: pass its values, q.dequantize(dtype) (float32, float16 or bfloat16), or load the file with dequantize="float32"'],
    'surrogate path good': ['UnicodeEncodeError', "'utf-8' codec can't encode character '\\udcff' in position 20: surrogates not allowed"],
    'npy metadata': ['ValueError', 'npy_metadata.m.npy: an .npy file has no metadata; safetensors files do'],
    'npy metadata truthy str': ['ValueError', 'npy_metadata_truthy_str.m.npy: an .npy file has no metadata; safetensors files do'],
    'npy metadata wins over quantized': ['ValueError', 'npy_metadata_wins_over_quantized.m.npy: an .npy file has no metadata; safetensors files do'],
    'npy two arrays': ['ValueError', 'an .npy file holds one array, not 2'],
    'npy no array': ['ValueError', 'an .npy file holds one array, not 0'],
    'npy quantized': ['TypeError', 'npy_quantized.m.npy: array is a quantised q8_0 tensor of shape (32,), which neither .npy nor safetensors can hold: pass its values, q.dequantize(dtype) (float32, float16 or bfloat16), or load the file with dequantize="float32"'],
    'npy quantized in dict': ['TypeError', 'npy_quantized_in_dict.m.npy: array is a quantised q8_0 tensor of shape (4, 32), which neither .npy nor safetensors can hold: pass its values, q.dequantize(dtype) (float32, float16 or bfloat16), or load the file with dequantize="float32"'],
    'npy two with quantized': ['ValueError', 'an .npy file holds one array, not 2'],
    'npy object': ['TypeError', 'save writes arrays of numbers, not object'],
    'npy complex': ['TypeError', "npy_complex.m.npy: bl.load could not map an .npy of dtype complex64 ('<c8'): bytelens has no such dtype, and bl.save writes only what bl.load maps (np.save writes it)"],
    'npy datetime': ['TypeError', "npy_datetime.m.npy: bl.load could not map an .npy of dtype datetime64[s] ('<M8[s]'): bytelens has no such dtype, and bl.save writes only what bl.load maps (np.save writes it)"],
    'npy strings': ['TypeError', "npy_strings.m.npy: bl.load could not map an .npy of dtype <U2 ('<U2'): bytelens has no such dtype, and bl.save writes only what bl.load maps (np.save writes it)"],
    'npy raw bytes': ['TypeError', 'save writes arrays of numbers, not raw bytes (|V4)'],
    'npy records': ['TypeError', "save writes arrays of numbers, not [('f0', '<i4'), ('f1', '<f4')]"],
    'npy broken array': ['RuntimeError', 'no array here'],
    'st arrays ndarray': ['TypeError', 'a safetensors file holds named arrays: pass a dict of name -> array'],
    'st arrays list': ['TypeError', 'a safetensors file holds named arrays: pass a dict of name -> array'],
    'st arrays wins over metadata': ['TypeError', 'a safetensors file holds named arrays: pass a dict of name -> array'],
    'st metadata list': ['TypeError', 'metadata is a dict of str -> str, not list'],
    'st metadata str': ['TypeError', 'metadata is a dict of str -> str, not str'],
    'st metadata type wins over name': ['TypeError', 'metadata is a dict of str -> str, not int'],
    'st name int': ['TypeError', 'a tensor name must be a str, not int (1)'],
    'st name bytes': ['TypeError', "a tensor name must be a str, not bytes (b'a')"],
    'st name None': ['TypeError', 'a tensor name must be a str, not NoneType (None)'],
    'st name long tuple': ['TypeError', "a tensor name must be a str, not tuple (('xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...)"],
    'st name surrogate': ['ValueError', "a tensor name 'a\\\\udc80' is not valid Unicode (surrogates not allowed at index 1), so it cannot be written as UTF-8"],
    'st name surrogate late': ['ValueError', "a tensor name 'abcxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...' is not valid Unicode (surrogates not allowed at index 103), so it cannot be written as UTF-8"],
    'st name Int': ['TypeError', 'a tensor name must be a str, not Int (Int!)'],
    'st name wins over quantized': ['TypeError', 'a tensor name must be a str, not int (2)'],
    'st name __metadata__': ['ValueError', "no tensor can be named '__metadata__': safetensors keeps the file's metadata there"],
    'st name empty': ['ok', 88, '3be9afd6450fa73ff515702c506d3f0283eb9720a5268560d6be9fe90fc83ab2'],
    'st quantized': ['TypeError', 'st_quantized.m.safetensors: tensor \'w\' is a quantised q8_0 tensor of shape (32,), which neither .npy nor safetensors can hold: pass its values, q.dequantize(dtype) (float32, float16 or bfloat16), or load the file with dequantize="float32"'],
    'st quantized 2-d': ['TypeError', 'st_quantized_2-d.m.safetensors: tensor \'blk.0\\\\n\\\\x1b\' is a quantised q8_0 tensor of shape (4, 32), which neither .npy nor safetensors can hold: pass its values, q.dequantize(dtype) (float32, float16 or bfloat16), or load the file with dequantize="float32"'],
    'st quantized long name': ['TypeError', 'st_quantized_long_name.m.safetensors: tensor \'\\\\xe9\\\\xe9\\\\xe9\\\\xe9\\\\xe9\\\\xe9\\\\xe9\\\\xe9\\\\xe9\\\\xe9\\\\xe9\\\\xe9\\\\xe9\\\\xe9\\\\xe9\\\\xe9...\' is a quantised q8_0 tensor of shape (32,), which neither .npy nor safetensors can hold: pass its values, q.dequantize(dtype) (float32, float16 or bfloat16), or load the file with dequantize="float32"'],
    'st object': ['TypeError', "safetensors has no dtype for object (tensor 'o') that bytelens has: bl.save writes the dtypes bytelens views, each under its safetensors code"],
    'st complex': ['TypeError', "safetensors has no dtype for complex128 (tensor 'c') that bytelens has: bl.save writes the dtypes bytelens views, each under its safetensors code"],
    'st datetime': ['TypeError', "safetensors has no dtype for datetime64[s] (tensor 't\\\\n') that bytelens has: bl.save writes the dtypes bytelens views, each under its safetensors code"],
    'st plain object': ['TypeError', "safetensors has no dtype for object (tensor 'o') that bytelens has: bl.save writes the dtypes bytelens views, each under its safetensors code"],
    'st broken array': ['RuntimeError', 'no array here'],
    'st array wins over metadata': ['RuntimeError', 'no array here'],
    'st metadata key int': ['TypeError', 'a metadata key must be a str, not int (3)'],
    'st metadata value int': ['TypeError', "metadata 'k' must be a str, not int (3)"],
    'st metadata value None': ['TypeError', "metadata 'k' must be a str, not NoneType (None)"],
    'st metadata value long list': ['TypeError', "metadata 'k' must be a str, not list (['xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...)"],
    'st metadata long key value int': ['TypeError', "metadata 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...' must be a str, not int (1)"],
    'st metadata key surrogate': ['ValueError', "a metadata key 'k\\\\ud800' is not valid Unicode (surrogates not allowed at index 1), so it cannot be written as UTF-8"],
    'st metadata value surrogate': ['ValueError', "metadata 'k' 'v\\\\udfff' is not valid Unicode (surrogates not allowed at index 1), so it cannot be written as UTF-8"],
    'st metadata Shouting key': ['TypeError', "metadata 'LOUD' must be a str, not int (1)"],
    'st metadata key name __metadata__ ok': ['ok', 152, '2d44498e6e0b1cba5c23edd4eb8222466c697097d8373fb9a30e90c41284f49f'],
    'st name wins over metadata': ['TypeError', 'a tensor name must be a str, not int (1)'],
    'st metadata falsy mapping': ['ok', 88, '9a28828ce79085ec2844af9b95ff68a2ce62e4dead9ae5ab0f8eaba05c886abb'],
    'good npy': ['ok', 176, '3cd658baf64d8c2244704f010ea137c078218939cdf12629f1bfbaee336627f9'],
    'good npy dict': ['ok', 304, '7147226fc33692a6718262fbedcd7a1b7d3d33789ae5f20d2220eecc0bf0767b'],
    'good npy list': ['ok', 160, '44a57e3cb6da203e9693808d435f5ae17138ebb4813ec8694aba583942c3cc5b'],
    'good npy strided': ['ok', 4160, '2dbd03213c856fc8addf4ec50daa605497cf6dda058b0b6a92ebd10ee876b817'],
    'good npy scalar': ['ok', 72, '58c16989bc3a3ffa86911ce1592077d240c44a3c9860e8221364e1dd1011821c'],
    'good st': ['ok', 1092, '7afe53ea91474bbdb770775de037e089a401dd448f495501c742d33e158f5778'],
    'good st mappingproxy': ['ok', 112, '8d493c2312a1027d3500fac158e6104194e4debcc8d62e225d61cdfb506fd8fe'],
    'good st Shouting': ['ok', 152, '85e1ac7f15d3a402eb2aafd7620f89141cacee03db0de67251ebe1fded54e17d'],
    'good st empty': ['ok', 10, '411a485216e432ece6b9af94fa32154cf79a2a56d4f81266baa50063f45092bd'],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_save_says_what_it_said(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    assert outcome(name) == EXPECTED[name]


def test_a_list_numpy_cannot_make_an_array_is_numpys_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    kind, message = outcome("npy ragged list")
    assert kind == "ValueError"
    assert "inhomogeneous" in message


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        os.chdir(folder)
        json.dump({name: outcome(name) for name in CASES}, sys.stdout, indent=1, ensure_ascii=True)
        os.chdir(os.path.dirname(folder))
