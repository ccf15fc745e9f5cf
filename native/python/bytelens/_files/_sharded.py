"""Sharded checkpoints: Hugging Face's index (``model.safetensors.index.json``:
``{"metadata": {...}, "weight_map": {tensor: shard file name}}``) beside
its shards, found from a path (:func:`_index_path`) and checked against the
shards' headers (:func:`_read_index`)."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from typing import Any

from .._native import FormatError
from ._headers import MAX_HEADER, _read_up_to
from ._npz import _EMPTY_ZIP_MAGIC, _ZIP_MAGIC
from ._opening import _describe, _open
from ._report import ArrayInfo, FileReport, _printable, _short

#: A path ending so is a sharded checkpoint's index (Hugging Face's
#: ``model.safetensors.index.json``), not a file of arrays.
_INDEX_SUFFIX = ".json"
#: The longest sharded checkpoint's index :func:`load` reads (Hugging Face's
#: are a few MB for the largest models): the header limit again.
MAX_INDEX = MAX_HEADER


def _index_path(path: str) -> str | None:
    """The index ``path`` names: itself where its name ends in ``.json``,
    or the one ``*.safetensors.index.json`` in the folder it names (None
    for a folder without one, which :func:`_open` then refuses as a
    folder, and for every other path)."""
    if path.endswith(_INDEX_SUFFIX):
        return None if _holds_arrays(path) else path
    if not os.path.isdir(path):
        return None
    try:
        names = sorted(name for name in os.listdir(path) if name.endswith(".safetensors.index.json"))
    except OSError:
        return None  # _open says why
    if len(names) > 1:
        listed = ", ".join(repr(_short(name, 60)) for name in names[:5])
        raise FormatError(
            f"{path}: the folder holds {len(names)} sharded checkpoints' indexes ({listed}): load one of them"
        )
    return os.path.join(path, names[0]) if names else None


#: What a ``*.json`` file is read as, unless it starts as a file of arrays does.
_AS_INDEX = "read as a sharded checkpoint's index (its name ends in .json)"


def _holds_arrays(path: str) -> bool:
    """Whether the file at ``path`` (named ``*.json``) starts as a file of
    arrays does (``\\x93NUMPY``, a zip's ``PK``, or a safetensors file's
    8-byte header length and then ``{``), and so is read as one by its
    first bytes rather than as an index. False where it cannot be read:
    reading it as an index then says why."""
    try:
        f, _ = _open(path)
    except OSError:
        return False
    with f:
        start = _read_up_to(f, 9)
    return start.startswith((b"\x93NUMPY", _ZIP_MAGIC, _EMPTY_ZIP_MAGIC)) or start[8:9] == b"{"


def _shard_name(index: str, tensor: str, shard: object) -> str:
    """``shard``, the file the index puts ``tensor`` in, if it names a
    file beside the index: a plain file name, never a path (no separator,
    no ``..``, no drive), so that no index reaches outside its folder."""
    where = f"{_printable(index)}: tensor {_short(tensor)!r}"
    if not isinstance(shard, str):
        raise FormatError(f"{where}: its shard is {type(shard).__name__} {_short(repr(shard))}, not a file name")
    bad = None
    if shard in ("", ".", ".."):
        bad = "is not a file name"
    elif "/" in shard or "\\" in shard or os.sep in shard or (os.altsep and os.altsep in shard):
        bad = "has a path separator: a shard is a file beside the index"
    elif os.path.isabs(shard) or os.path.splitdrive(shard)[0] or ":" in shard:
        bad = "is an absolute path or names a drive: a shard is a file beside the index"
    elif "\0" in shard:
        bad = "holds a NUL character"
    if bad is not None:
        raise FormatError(f"{where}: the shard name {_short(shard)!r} {bad}")
    return shard


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's pairs as a dict; a key given twice is refused (the
    json module would keep the last silently)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Repeated(key)
        out[key] = value
    return out


class _Repeated(Exception):
    """A key given twice in the index's JSON."""


def _read_index(index: str) -> tuple[FileReport, dict[str, str], list[str]]:
    """A sharded checkpoint's index, checked against its shards' headers:
    the whole checkpoint's report (every tensor, in the index's order, with
    its shard), each tensor's shard, and the shards in order of first use.
    Everything wrong is a ``FormatError`` naming the index and the tensor
    or shard: JSON that is not an index, a shard name that is a path, a
    missing shard, a tensor the index names that its shard lacks, a tensor
    a shard holds that the index does not put there, a tensor in two shards."""
    shown = _printable(index)  # in messages: a name a folder listed may hold anything
    f, info = _open(index, "index ")
    with f:
        data = f.read(MAX_INDEX + 1)
    if len(data) > MAX_INDEX:
        raise FormatError(f"{shown}: an index of more than {MAX_INDEX:,} bytes (a sharded checkpoint's is a few MB)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise FormatError(
            f"{shown}: {_AS_INDEX}, but it is not UTF-8 text (byte {err.start} is 0x{data[err.start]:02x})"
        ) from None
    try:
        parsed = json.loads(text, object_pairs_hook=_no_repeats)
    except _Repeated as err:
        raise FormatError(f"{shown}: the key {_short(str(err.args[0]))!r} is given twice") from None
    except RecursionError:
        raise FormatError(f"{shown}: JSON nested too deeply to be a sharded checkpoint's index") from None
    except ValueError as err:  # JSONDecodeError, or an integer of too many digits
        raise FormatError(f"{shown}: {_AS_INDEX}, but it is not JSON: {_short(str(err), 200)}") from None
    if not isinstance(parsed, dict) or not isinstance(parsed.get("weight_map"), dict):
        raise FormatError(
            f"{shown}: not a sharded checkpoint's index, a JSON object with a \"weight_map\" object of "
            "tensor name -> shard file name"
        )
    meta = parsed.get("metadata", {})
    if not isinstance(meta, dict):
        raise FormatError(f"{shown}: its \"metadata\" is {type(meta).__name__}, not an object")
    metadata = {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in meta.items()}
    folder = os.path.dirname(index)
    weight_map: dict[str, str] = {}
    for tensor, shard in parsed["weight_map"].items():
        weight_map[tensor] = _shard_name(index, tensor, shard)
    shards = list(dict.fromkeys(weight_map.values()))
    found: dict[str, ArrayInfo] = {}
    size = info.st_size
    for shard in shards:
        shard_path = os.path.join(folder, shard)
        try:
            g, shard_info = _open(shard_path)
        except FileNotFoundError:
            raise FormatError(f"{shown}: its shard {_short(shard)!r} is missing ({_printable(shard_path)})") from None
        with g:
            try:
                report, _ = _describe(shard_path, g, shard_info.st_size)
            except FormatError as err:  # its message names the shard's path
                raise FormatError(f"{shown}: its shard {_short(shard)!r} is no safetensors file: {_printable(str(err))}") from None
        if report.format != "safetensors":
            raise FormatError(f"{shown}: its shard {_short(shard)!r} is {report.format}, not safetensors")
        size += shard_info.st_size
        for a in report.arrays:
            if a.name in found:
                raise FormatError(
                    f"{shown}: tensor {_short(a.name)!r} is in two shards, {_short(found[a.name].shard or '')!r} "
                    f"and {_short(shard)!r}"
                )
            if a.name not in weight_map:
                raise FormatError(
                    f"{shown}: shard {_short(shard)!r} holds tensor {_short(a.name)!r}, which the index does not name"
                )
            if weight_map[a.name] != shard:
                raise FormatError(
                    f"{shown}: shard {_short(shard)!r} holds tensor {_short(a.name)!r}, which the index puts in "
                    f"{_short(weight_map[a.name])!r}"
                )
            found[a.name] = replace(a, shard=shard)
    for tensor, shard in weight_map.items():
        if tensor not in found:
            raise FormatError(f"{shown}: tensor {_short(tensor)!r} is not in its shard {_short(shard)!r}")
    arrays = [found[tensor] for tensor in weight_map]
    return FileReport(index, "safetensors index", size, arrays, metadata), weight_map, shards
