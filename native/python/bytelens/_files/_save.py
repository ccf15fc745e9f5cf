""":func:`save`: ``.npy`` and safetensors files written so that every
array maps zero-copy, laid out and checked by the core
(``bytelens::files::plan_save``, as :func:`load` will read them), and
written atomically by the Rust file layer's one writer
(``bytelens::files::write_atomically``)."""

from __future__ import annotations

import os
from typing import Mapping

import numpy as np

from .._native import save_arrays
from ._opening import _fspath

#: Where ``save`` starts the data (and every tensor it can) unless given ``align``.
ALIGN = 64
#: The largest ``align`` :func:`save` takes: a page.
MAX_ALIGN = 4096


def save(
    path: str | bytes | os.PathLike[str] | os.PathLike[bytes],
    arrays: np.ndarray | Mapping[str, np.ndarray],
    metadata: Mapping[str, str] | None = None,
    *,
    align: int = ALIGN,
) -> None:
    """Writes ``arrays`` so that :func:`load` maps every one zero-copy:
    ``.npy`` (one array, or a mapping of one) or ``.safetensors`` (a mapping
    of names to arrays, optional str ``metadata``, little-endian), each
    readable by numpy's and the safetensors package's own loaders. The data
    starts at a multiple of ``align`` (64; cuBLAS and others want 256; a
    power of two from the widest itemsize up to 4096), and every tensor is
    aligned: those whose sizes are multiples of ``align`` first, then the
    rest from the widest dtype down (safetensors forbids gaps).

    Whatever :func:`load` would refuse is refused before a byte is
    written, by the Rust file layer's checks: names, keys and values that
    are not ``str`` (a ``TypeError``), lone surrogates, ``__metadata__`` as
    a tensor name, a header past :data:`MAX_HEADER` bytes, an ``.npy`` of a
    dtype bytelens cannot map or of ml_dtypes' types (use safetensors), a
    :class:`~bytelens.Quantized` tensor (pass ``q.dequantize(dtype)``).

    The save is atomic: a new file beside ``path`` (a symlink's target),
    flushed to disk and renamed over it, keeping the old one's permission
    bits. ``path`` is always the old file whole or the new one whole, and
    arrays loaded from the old file keep its bytes, so
    ``bl.save(path, bl.load(path))`` is safe. Windows renames over no
    mapped or read-only file: ``save`` raises ``PermissionError`` saying
    so, the old file kept.

    >>> import bytelens as bl, numpy as np, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "m.safetensors")
    >>> bl.save(path, {"w": np.ones(4, "<f4")})
    >>> weights = bl.load(path)
    >>> bl.save(path, {"w": weights["w"] * 2})   # over the file it maps
    >>> weights["w"].tolist(), bl.load(path)["w"].tolist()
    ([1.0, 1.0, 1.0, 1.0], [2.0, 2.0, 2.0, 2.0])
    """
    # The extension checks the arguments, in the order and words above,
    # lays the file out (bytelens::files::plan_save) and writes it
    # (bytelens::files::write_atomically), the GIL released as it writes.
    save_arrays(_fspath(path), arrays, metadata, align)
