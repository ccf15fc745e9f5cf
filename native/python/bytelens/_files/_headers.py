"""A file's header, read by the core (``_native.read_header``) from as few
bytes as it needs, and the core's file rules the other modules use, typed
(the extension's stubs do not list them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from .. import _native
from .._native import FormatError, Layout

#: Bytes read first; a longer header is read again at the length it gives.
HEAD = 1 << 16
#: The longest header :func:`load` reads, and so the longest :func:`save`
#: writes: the core's ``MAX_HEADER`` (core/src/files/mod.rs), mirrored here
#: since the extension does not export it.
MAX_HEADER = 100_000_000

# The core's file rules (native/python/src/files.rs), typed here: the
# extension's stubs (_native.pyi) are the lead's to extend.
#: What the file formats need of a dtype: ``name``, ``descr``, ``size``,
#: ``safetensors`` (its code), ``npy`` (whether an .npy header names it), ``float``.
_file_dtype: Callable[[Any], dict[str, Any]] = getattr(_native, "file_dtype")
#: ``view_layout(nbytes, dtype, offset=0, shape=None, strides=None)``: the
#: Layout ``Buffer(nbytes).view(...)`` would have, by the core's rule.
view_layout: Callable[..., Layout] = getattr(_native, "view_layout")
#: ``read_header(head, length, base=0)``: the header's dict (see files.rs);
#: ``base``, the byte of the file the header starts at, is newer than the stubs.
_read_header: Callable[..., dict[str, Any]] = getattr(_native, "read_header")
#: ``read_elements(dtype, data, offsets)``: the elements at those byte
#: offsets of ``data``, read by the core (None where ``data`` ends inside one).
read_elements: Callable[[Any, bytes, list[int]], list[bool | int | float | None]] = getattr(_native, "read_elements")


class _Readable(Protocol):
    """What ``_header`` reads from: a file, or a part of one."""

    def seek(self, at: int, /) -> Any: ...
    def read(self, n: int, /) -> bytes: ...


def _header(f: _Readable, path: str, length: int, what: str = "", base: int = 0) -> dict[str, Any]:
    """The header at the start of ``f`` (a file or member of ``length``
    bytes, at byte ``base`` of the file, which the core's reasons for a
    copy count from), read by the core from as few bytes as it needs.

    A read that ends early (a file that shrank after its size was taken, a
    member that decompresses to less than its zip entry says) is a
    ``FormatError`` naming the byte it ended at, never a retry: each pass
    asks for more bytes than the last, or stops."""
    want = min(HEAD, length)
    while True:
        f.seek(0)
        head = _read_up_to(f, want)
        try:
            header = _read_header(head, length, base)
        except FormatError as err:
            raise FormatError(f"{path}{what}: {err}") from None
        if len(head) < want:
            ends = f"{path}{what}: ends at byte {len(head)}"
            if "need" in header:
                raise FormatError(f"{ends}, inside the header; the header needs {header['need']} bytes")
            raise FormatError(f"{ends}, though its size says {length} bytes")
        if "need" not in header:
            return header
        if header["need"] <= want:  # the core asked for no more than it had
            raise FormatError(f"{path}{what}: the header needs {header['need']} bytes and {want} did not hold it")
        want = header["need"]


def _read_up_to(f: _Readable, n: int) -> bytes:
    """``n`` bytes from ``f``, or fewer where it ends."""
    parts: list[bytes] = []
    got = 0
    while got < n:
        part = f.read(n - got)
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)
