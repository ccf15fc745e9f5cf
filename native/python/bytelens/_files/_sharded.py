"""Sharded checkpoints: Hugging Face's index (``model.safetensors.index.json``:
``{"metadata": {...}, "weight_map": {tensor: shard file name}}``) beside
its shards, found from a path (:func:`_index_path`) and read and checked
against the shards' headers by the Rust file layer (:func:`_read_index`)."""

from __future__ import annotations

import os

from .. import _native
from .._native import FormatError
from ._headers import MAX_HEADER, _read_up_to
from ._npz import _EMPTY_ZIP_MAGIC, _ZIP_MAGIC
from ._opening import _open
from ._report import ArrayInfo, FileReport, _short

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


def _read_index(index: str) -> tuple[FileReport, dict[str, str], list[str]]:
    """A sharded checkpoint's index, checked against its shards' headers by
    the Rust file layer (``bytelens::files::read_index``): the whole
    checkpoint's report (every tensor, in the index's order, with its
    shard), each tensor's shard, and the shards in order of first use.
    Everything wrong is a ``FormatError`` naming the index and the tensor
    or shard: JSON that is not an index (or not UTF-8, or a key given
    twice), a shard name that is a path, a missing shard, a tensor the
    index names that its shard lacks, a tensor a shard holds that the index
    does not put there, a tensor in two shards."""
    read = _native.read_index(index, MAX_INDEX)
    arrays = [ArrayInfo(**a) for a in read["arrays"]]
    weight_map = {a.name: a.shard or "" for a in arrays}
    shards = list(dict.fromkeys(weight_map.values()))
    return FileReport(index, read["format"], read["size"], arrays, read["metadata"]), weight_map, shards
