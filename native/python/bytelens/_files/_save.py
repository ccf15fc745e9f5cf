""":func:`save`: ``.npy`` and safetensors files written so that every
array maps zero-copy, laid out and checked by the core
(``bytelens::files::plan_save``, as :func:`load` will read them), and
written atomically (:func:`_write_atomically`)."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable
from typing import BinaryIO, Mapping

import numpy as np

from .._native import save_plan
from ._opening import _fspath, _not_regular, _reason
from ._report import _printable

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
    path = _fspath(path)
    # The arguments are the extension's to check, in the order and words
    # above, and to lay out (bytelens::files::plan_save): the header, then
    # each array whose bytes (in memory order) are the file's, as given
    # (no copy) or converted.
    head, parts = save_plan(path, arrays, metadata, align)

    def write(f: BinaryIO) -> None:
        f.write(head)
        for array in parts:
            if array.nbytes:
                f.write(array.ravel(order="K").view(np.uint8).data)

    _write_atomically(path, write)


# Why Windows refuses to rename over a file (Win32 error codes): access
# denied, a sharing violation, or a mapped view of it still open.
_IN_USE_WINERRORS = (5, 32, 1224)


def _write_atomically(path: str, write: Callable[[BinaryIO], None]) -> None:
    """Calls ``write`` on a new file beside ``path``, flushes it to disk
    and renames it over ``path``: readers see the old file whole or the new
    one whole, and the old file's bytes live on for whatever maps them.
    On any error the new file is removed and the old one is untouched.

    On Windows the rename is refused while the old file is mapped (by
    ``bl.load``'s arrays, in this process or another) or open without
    delete sharing, and over a read-only file: a ``PermissionError`` that
    says so, the old file untouched."""
    target = os.path.realpath(path)  # through a symlink: replace its target
    folder, name = os.path.split(target)
    try:
        old: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        old = None
    if old is not None and not stat.S_ISREG(old.st_mode):
        raise _not_regular(path, old.st_mode)
    if os.name == "nt" and old is not None and not old.st_mode & stat.S_IWRITE:
        # POSIX renames over a read-only file in a writable folder; Windows
        # does not. Refused before the new file exists, which would copy
        # the old one's read-only bit and then be impossible to remove.
        read_only = PermissionError(
            f"{path}: the file is read-only, and Windows replaces no read-only file: "
            "clear its read-only attribute first (os.chmod(path, stat.S_IWRITE))"
        )
        read_only.errno = errno.EACCES
        raise read_only
    temp = os.path.join(folder, f".{_name_start(name, 180)}.{secrets.token_hex(6)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        # 0o666 less the umask, as open(path, "wb") gives a new file.
        fd = os.open(temp, flags, 0o666)
    except OSError as err:
        reason = (err.strerror or str(err)).lower()
        refused = type(err)(f"{path}: cannot create {temp}, the new file bl.save renames over it: {reason}")
        refused.errno = err.errno
        raise refused from None
    try:
        with os.fdopen(fd, "wb") as f:
            if old is not None:  # the file replaced keeps its permission bits
                os.chmod(temp, stat.S_IMODE(old.st_mode) & 0o777)
            try:
                write(f)
                f.flush()
                os.fsync(f.fileno())
            except OSError as err:  # EFBIG, ENOSPC, EIO: named, with the path
                failed = type(err)(
                    err.errno, f"{_printable(path)}: writing the new file failed ({_reason(err)}); the old file is kept"
                )
                failed.filename = path
                raise failed from None
        try:
            os.replace(temp, target)
        except OSError as err:
            if os.name == "nt" and old is not None and getattr(err, "winerror", None) in _IN_USE_WINERRORS:
                raise _in_use(path, err) from None
            raise
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    # The rename itself, to disk: POSIX syncs it through the folder. Windows
    # cannot open a folder with os.open, so there the rename reaches the
    # disk when the system next writes the volume's metadata (the new
    # file's bytes were synced above either way).
    if os.name == "posix":
        with contextlib.suppress(OSError):  # some file systems cannot sync a folder
            folder_fd = os.open(folder, os.O_RDONLY)
            try:
                os.fsync(folder_fd)
            finally:
                os.close(folder_fd)


def _in_use(path: str, err: OSError) -> PermissionError:
    """Why Windows would not rename over ``path`` (``err``), and what to do."""
    refused = PermissionError(
        f"{path}: Windows cannot replace the file while it is mapped or open "
        f"({_reason(err).rstrip('.')}): arrays bl.load returned for it, here or in another process, "
        "map it until they are gone (del them, or copy what you need first), or save to another path"
    )
    refused.errno = errno.EACCES
    refused.winerror = getattr(err, "winerror", None)  # type: ignore[attr-defined]
    return refused


def _name_start(name: str, limit: int) -> str:
    """The longest start of ``name`` that is at most ``limit`` bytes as
    the OS encodes file names, cut between characters: bytes cut inside
    one are no name on macOS (whose file systems take only valid UTF-8)
    nor on Windows (whose names are UTF-16: ``os.fsdecode`` refuses the
    broken UTF-8)."""
    used = 0
    for i, char in enumerate(name):
        used += len(os.fsencode(char))
        if used > limit:
            return name[:i]
    return name
