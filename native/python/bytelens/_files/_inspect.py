""":func:`inspect`: what a file holds, from its headers alone."""

from __future__ import annotations

import os
from typing import Any

from .._native import Plan, describe_file
from . import _raw, _sharded
from ._opening import _fspath, _open
from ._report import ArrayInfo, FileReport


def inspect(
    path: str | bytes | os.PathLike[str] | os.PathLike[bytes],
    *,
    dtype: Any = None,
    offset: int = 0,
    shape: Any = None,
    strides: Any = None,
    plan: Plan | str | None = None,
) -> FileReport:
    """Describes ``path``: its format (``.npy``, ``.npz``, safetensors, GGUF
    or a sharded checkpoint, found by its first bytes) and each array's
    name, dtype, shape, byte range and alignment, and what :func:`load`
    would copy and why, from the headers alone (a few KiB of a file of any
    size; an ``.npz`` member read whole has its CRC-32 checked). Only a
    regular file is read. A raw file is described through ``dtype`` (with
    ``offset``, ``shape`` and ``strides``, as ``Buffer.view`` takes them) or
    a ``plan`` (a ``Plan`` or its text), checked against the file's size.

    >>> import bytelens as bl, numpy as np, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "w.safetensors")
    >>> bl.save(path, {"w": np.arange(6, dtype="<f4").reshape(2, 3)})
    >>> report = bl.inspect(path)
    >>> report.format, report["w"].shape, report["w"].offset % 64, report["w"].copy
    ('safetensors', (2, 3), 0, None)
    """
    path = _fspath(path)
    if dtype is None and plan is None:  # read by the Rust file layer (bytelens::files::inspect)
        return FileReport(**describe_file(path, _sharded.MAX_INDEX, ArrayInfo))
    f, info = _open(path)
    f.close()
    return _raw._inspect_raw(path, info.st_size, dtype, offset, shape, strides, plan)
