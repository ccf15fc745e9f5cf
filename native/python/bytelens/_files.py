"""Real files: ``.npy``, ``.npz`` and safetensors as checked views over one
mapped file (:func:`load`), written with aligned tensors (:func:`save`),
and described without reading their data (:func:`inspect`).

The headers are read by the core (``_native.read_header``): every length,
shape and byte range is checked against the file before any view exists,
and each view is made by ``Buffer.view``, so it is checked again for bounds
and alignment. Only a file's first bytes are read to describe it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import stat
import struct
import threading
import unicodedata
import zipfile
import zlib
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass, field, replace
from typing import Any, BinaryIO, Mapping, Protocol

import numpy as np

from . import _native, _raw
from ._native import AlignmentError, Buffer, FormatError, Layout, LayoutError, Plan, read_header

#: Bytes read first; a longer header is read again at the length it gives.
HEAD = 1 << 16
#: The longest header :func:`load` reads, and so the longest :func:`save`
#: writes: the core's ``MAX_HEADER`` (core/src/files/mod.rs), mirrored here
#: since the extension does not export it.
MAX_HEADER = 100_000_000
#: Bytes hashed or decompressed at a time.
_CHUNK = 1 << 20
#: Where ``save`` starts the data (and every tensor it can) unless given ``align``.
ALIGN = 64
#: The largest ``align`` :func:`save` takes: a page.
MAX_ALIGN = 4096
#: What an array copied into aligned memory is under ``mode="r+"``, after
#: why it is copied (:attr:`ArrayInfo.copy`).
_READ_ONLY_UNDER_R_PLUS = "; read-only under r+"
#: Why a compressed ``.npz`` member is copied.
COMPRESSED = "the member is compressed"

_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")  # a zip member's local header
_ZIP_MAGIC = b"PK\x03\x04"
#: How a zip without members starts: its end-of-directory record
#: (``np.savez(path)`` with no arrays writes one).
_EMPTY_ZIP_MAGIC = b"PK\x05\x06"

#: A path ending so is a sharded checkpoint's index (Hugging Face's
#: ``model.safetensors.index.json``), not a file of arrays.
_INDEX_SUFFIX = ".json"
#: The longest sharded checkpoint's index :func:`load` reads (Hugging Face's
#: are a few MB for the largest models): the header limit again.
MAX_INDEX = MAX_HEADER

# The core's file rules (native/src/python/files.rs), typed here: the
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


@dataclass(frozen=True)
class ArrayInfo:
    """One array of a file, as :func:`inspect` reports it."""

    name: str
    #: The dtype as the file spells it (``"<f4"``, ``"BF16"``).
    dtype: str
    #: bytelens's type string, or None where bytelens has no such dtype.
    descr: str | None
    shape: tuple[int, ...]
    #: Byte strides of the view; None without a ``descr``.
    strides: tuple[int, ...] | None
    #: Byte offset of the first element in the file (in the decompressed
    #: member, for a compressed ``.npz`` member).
    offset: int
    nbytes: int
    #: Why :func:`load` copies it instead of viewing the mapped file; None
    #: for a zero-copy view.
    copy: str | None = None
    #: The ``.npz`` member (file name in the zip) it is stored in.
    member: str | None = None
    #: The bytes its elements lie in, ``(start, end)``, as the core's
    #: ``Layout.byte_span`` gives them; None for ``(offset, offset + nbytes)``,
    #: which is what a file's arrays (C or Fortran order) cover. A raw view
    #: with a negative stride starts below its offset, and one with a zero
    #: stride covers fewer than ``nbytes`` bytes.
    span: tuple[int, int] | None = None
    #: Why :func:`load` cannot hand it out at all (a dtype bytelens lacks,
    #: ``"bytelens has no dtype C64"``); None for every array it loads.
    #: ``load`` loads the file's other arrays, and raises
    #: :class:`FormatError` with this reason for this one when it is asked
    #: for (``strict=True`` refuses the whole file).
    unavailable: str | None = None
    #: The shard (file name beside the index) of a sharded checkpoint that
    #: holds it; ``offset`` is in that file. None for a file of its own.
    shard: str | None = None

    @property
    def alignment(self) -> int:
        """The largest power of two the offset is a multiple of (the file is
        mapped at a page boundary, so this is the address's alignment too)."""
        return self.offset & -self.offset if self.offset else 1 << 63

    @property
    def start(self) -> int:
        """The first byte any element covers."""
        return self.offset if self.span is None else self.span[0]

    @property
    def end(self) -> int:
        """The byte after the last one any element covers."""
        return self.offset + self.nbytes if self.span is None else self.span[1]


@dataclass(frozen=True)
class FileReport:
    """What :func:`inspect` found: the format and every array."""

    path: str
    format: str
    size: int
    arrays: list[ArrayInfo]
    metadata: dict[str, str] = field(default_factory=dict)
    version: tuple[int, int] | None = None

    def __getitem__(self, name: str) -> ArrayInfo:
        for array in self.arrays:
            if array.name == name:
                return array
        raise KeyError(name)

    def __str__(self) -> str:
        version = f" {self.version[0]}.{self.version[1]}" if self.version else ""
        count = f"{len(self.arrays)} array" + ("" if len(self.arrays) == 1 else "s")
        lines = [f"{_printable(self.path)}: {self.format}{version}, {self.size:,} bytes, {count}"]
        for key, value in self.metadata.items():
            lines.append(f"  metadata {_short(key, 40)}: {_short(value)}")
        if not self.arrays:
            return "\n".join(lines)
        sharded = any(a.shard is not None for a in self.arrays)
        rows = [("name", "dtype", "shape") + (("shard",) if sharded else ()) + ("bytes", "align", "load")]
        for a in self.arrays:
            align = "any" if a.offset == 0 else str(min(a.alignment, 1 << 20))
            span = f"{a.start}..{a.end}"
            if a.copy == COMPRESSED:  # the range is in the decompressed member
                span, align = f"{span} of {_short(a.member or '', 40)}", "-"
            if a.unavailable is not None:
                how = f"none: {_printable(a.unavailable)}"
            else:
                how = "view" if a.copy is None else f"copy: {_printable(a.copy)}"
            rows.append(
                (
                    _short(a.name, 40),
                    _short(a.dtype, 24),
                    "(" + ", ".join(map(str, a.shape)) + ("," if len(a.shape) == 1 else "") + ")",
                )
                + ((_short(a.shard or "", 40),) if sharded else ())
                + (span, align, how)
            )
        last = len(rows[0]) - 1
        widths = [max(len(row[i]) for row in rows) for i in range(last)]
        for row in rows:
            cells = [cell.ljust(width) for cell, width in zip(row, widths)]
            lines.append("  " + "  ".join(cells + [row[last]]).rstrip())
        return "\n".join(lines)


def _short(text: str, keep: int = 64) -> str:
    """``text`` on one line of at most ``keep`` characters (then ``...``):
    every control and non-ASCII character escaped (``\\x1b``, ``\\n``),
    so that text from a file cannot move a terminal's cursor, set its
    title or forge a line."""
    text = text.encode("unicode_escape", "backslashreplace").decode("ascii")
    return text if len(text) <= keep else text[:keep] + "..."


def _printable(text: str) -> str:
    """``text`` (a path: the user's own, or a file name a folder holds)
    with its control characters escaped and the rest kept as it is, so
    that a name of ESC sequences or newlines cannot drive the terminal."""
    return "".join(
        char.encode("unicode_escape", "backslashreplace").decode("ascii")
        if unicodedata.category(char) in _UNPRINTABLE
        else char
        for char in text
    )


#: The Unicode categories :func:`_printable` escapes: controls (C0, DEL,
#: C1), format characters (bidirectional overrides), surrogates, line and
#: paragraph separators, unassigned code points.
_UNPRINTABLE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


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


# What each kind of file that is not a regular file is called in errors.
_NOT_REGULAR = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _not_regular(path: str, mode: int) -> OSError:
    what = next((name for test, name in _NOT_REGULAR if test(mode)), "not a file")
    error = IsADirectoryError if stat.S_ISDIR(mode) else OSError
    return error(f"{path}: not a regular file ({what})")


def _open(path: str, what: str = "") -> tuple[BinaryIO, os.stat_result]:
    """``path`` opened for reading, and its ``fstat``; anything but a
    regular file (through symlinks too) is refused before a byte is read.
    ``what`` goes before the path in messages (``"plan file "``)."""
    # Non-blocking: `open` of a FIFO with no writer (or of a device that
    # waits) would block forever before the check below could refuse it.
    # The flag changes nothing for a regular file, the only kind read.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        # Windows opens no folder with os.open ("permission denied"), where
        # POSIX opens it for the fstat below to refuse: the same error here.
        if os.name == "nt" and isinstance(err, PermissionError) and os.path.isdir(path):
            raise _not_regular(f"{what}{path}", stat.S_IFDIR) from None
        raise type(err)(f"{what}{path}: {_reason(err)}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _not_regular(f"{what}{path}", info.st_mode)
        return os.fdopen(fd, "rb"), info
    except BaseException:
        os.close(fd)
        raise


def _reason(err: OSError) -> str:
    """What went wrong, lowercase and without the errno: ``"no such file
    or directory"``."""
    text = err.strerror or str(err)
    return text[:1].lower() + text[1:]


def _fspath(path: str | bytes | os.PathLike[str] | os.PathLike[bytes]) -> str:
    """``path`` as a str; a bytes path is decoded as ``os`` decodes it
    (``os.fsdecode``), so that it names the same file."""
    return os.fsdecode(os.fspath(path))


def _arrays(
    header: dict[str, Any], base: int, name: str | None = None, member: str | None = None
) -> list[ArrayInfo]:
    """The arrays of a header read at byte ``base``; ``name`` names the one
    array of an ``.npz`` ``member``. How each is handed out, and why, is
    the core's to say (``access`` and ``why``)."""
    out = []
    for a in header["arrays"]:
        copy = unavailable = None
        if a["access"] == "copy":
            copy = a["why"] + _READ_ONLY_UNDER_R_PLUS
        elif a["access"] != "view":
            unavailable = a["why"]
        strides = tuple(a["strides"]) if a["strides"] is not None else None
        out.append(
            ArrayInfo(
                name or a["name"],
                a["dtype"],
                a["descr"],
                tuple(a["shape"]),
                strides,
                base + a["offset"],
                a["nbytes"],
                copy,
                member,
                unavailable=unavailable,
            )
        )
    return out


def _itemsize(descr: str | None) -> int:
    """The itemsize of ``descr`` (bytelens's type string), from the core's
    dtype table; 0 for None."""
    if descr is None:
        return 0
    size: int = _file_dtype(descr)["size"]
    return size


def inspect(
    path: str | bytes | os.PathLike[str] | os.PathLike[bytes],
    *,
    dtype: Any = None,
    offset: int = 0,
    shape: Any = None,
    strides: Any = None,
    plan: Plan | str | None = None,
) -> FileReport:
    """Describes ``path``: its format (``.npy``, ``.npz`` or safetensors,
    found by its first bytes) and each array's name, dtype, shape, byte
    range and alignment, and what :func:`load` would copy and why. Reads
    only the headers (a few KiB of a file of any size), and only from a
    regular file: a FIFO, device or folder is refused before it is read.
    An ``.npz`` member read whole (one of up to 64 KiB, stored or
    decompressed) has its CRC-32 checked, and every member's name in the
    zip's directory must match its local header.

    A raw file is described through ``dtype`` (with ``offset``, ``shape``
    and ``strides``, as ``Buffer.view`` takes them) or a ``plan`` (a
    ``Plan`` or its text); either is checked against the file's size.

    >>> import bytelens as bl, numpy as np, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "w.safetensors")
    >>> bl.save(path, {"w": np.arange(6, dtype="<f4").reshape(2, 3)})
    >>> report = bl.inspect(path)
    >>> report.format, report["w"].shape, report["w"].offset % 64, report["w"].copy
    ('safetensors', (2, 3), 0, None)
    """
    path = _fspath(path)
    if dtype is None and plan is None:
        index = _index_path(path)
        if index is not None:
            return _read_index(index)[0]
    f, info = _open(path)
    with f:
        if dtype is None and plan is None:
            return _describe(path, f, info.st_size)[0]
    return _raw._inspect_raw(path, info.st_size, dtype, offset, shape, strides, plan)


# Sharded checkpoints: Hugging Face's index (``model.safetensors.index.json``:
# ``{"metadata": {...}, "weight_map": {tensor: shard file name}}``) beside
# its shards.


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


@dataclass(frozen=True)
class _Member:
    """An ``.npz`` member: its zip entry, and the byte its data (compressed
    or not) starts at in the file."""

    info: zipfile.ZipInfo
    start: int


def _describe(path: str, f: BinaryIO, size: int) -> tuple[FileReport, list[_Member]]:
    """What :func:`inspect` reports of the open file ``f``, and its
    ``.npz`` members (none for other formats)."""
    if _read_up_to(f, 4) in (_ZIP_MAGIC, _EMPTY_ZIP_MAGIC):
        return _inspect_npz(path, size, f)
    header = _header(f, path, size)
    report = FileReport(
        path,
        header["format"],
        size,
        _arrays(header, 0),
        dict(header["metadata"]),
        tuple(header["version"]) if header["format"] == "npy" else None,
    )
    return report, []


# Deflate's greatest expansion: 258 bytes from each 2-bit code, 1032 to 1.
_DEFLATE_RATIO = 1032

# What zipfile raises for a member it cannot read.
_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, ValueError, OSError)


def _inspect_npz(path: str, size: int, f: BinaryIO) -> tuple[FileReport, list[_Member]]:
    arrays: list[ArrayInfo] = []
    members: list[_Member] = []
    try:
        archive = zipfile.ZipFile(f)
        infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as err:
        raise FormatError(f"{path}: not a readable .npz (zip) file: {err}") from None
    names: set[str] = set()
    for info in infos:
        name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
        what = f", member {_short(info.filename)!r}"
        if name in names:
            raise FormatError(f"{path}{what}: a second member holds an array named {_short(name)!r}")
        names.add(name)
        if info.flag_bits & 1:
            raise FormatError(f"{path}{what}: the member is encrypted")
        start = _data_start(f, info, path, what, size)
        members.append(_Member(info, start))
        if info.compress_type == zipfile.ZIP_DEFLATED and info.file_size > _DEFLATE_RATIO * info.compress_size + HEAD:
            # Refused before load sets aside memory for what cannot be there.
            raise FormatError(
                f"{path}{what}: its zip entry says {info.file_size} bytes from {info.compress_size} deflated, "
                f"more than deflate can hold (at most {_DEFLATE_RATIO} times as many)"
            )
        if info.compress_type != zipfile.ZIP_STORED:
            # Decompressed by `load` on first access: here the header is
            # all that is wanted, from the start of the decompressed member.
            header = _header(_Decompressed(archive, info, path + what), path, info.file_size, what)
            arrays.extend(replace(a, copy=COMPRESSED) for a in _arrays(header, 0, name, info.filename))
            continue
        if info.compress_size != info.file_size:
            raise FormatError(
                f"{path}{what}: a stored member of {info.compress_size} bytes cannot hold {info.file_size} bytes"
            )
        window = _Window(f, start, info.file_size)
        header = _header(window, path, info.file_size, what, start)
        if info.file_size <= HEAD:  # read whole already: its CRC-32 costs nothing more
            window.seek(0)
            _check_crc(zlib.crc32(_read_up_to(window, info.file_size)), info, path + what)
        arrays.extend(_arrays(header, start, name, info.filename))
    return FileReport(path, "npz", size, arrays), members


def _data_start(f: BinaryIO, info: zipfile.ZipInfo, path: str, what: str, size: int) -> int:
    """Where ``info``'s data starts, after its local header, which must
    name the member as the zip's directory does (zip readers go by either)."""
    f.seek(info.header_offset)
    local = _read_up_to(f, _LOCAL_HEADER.size)
    if len(local) < _LOCAL_HEADER.size or local[:4] != _ZIP_MAGIC:
        raise FormatError(f"{path}{what}: no local header at byte {info.header_offset}")
    fields = _LOCAL_HEADER.unpack(local)
    flags, name_len, extra_len = fields[2], fields[-2], fields[-1]
    name = _read_up_to(f, name_len).decode("utf-8" if flags & 0x800 else "cp437", errors="replace")
    if name != info.orig_filename:
        raise FormatError(
            f"{path}{what}: its local header names it {_short(name)!r}, "
            f"the zip's directory {_short(info.orig_filename)!r}"
        )
    start = int(info.header_offset) + _LOCAL_HEADER.size + name_len + extra_len
    if start + info.compress_size > size:
        raise FormatError(
            f"{path}{what}: its {info.compress_size} bytes from byte {start} run past the end of the file "
            f"({size} bytes)"
        )
    return start


def _zip_error(where: str, err: Exception) -> FormatError:
    """What ``zipfile`` raised reading a member, as a ``FormatError``."""
    if str(err).startswith("Bad CRC-32"):
        return FormatError(f"{where}: its bytes do not have the CRC-32 the zip records (the member is damaged)")
    return FormatError(f"{where}: {err}")


def _check_crc(crc: int, info: zipfile.ZipInfo, where: str) -> None:
    if crc != info.CRC:
        raise FormatError(
            f"{where}: its bytes have the CRC-32 {crc:#010x}, not the {info.CRC:#010x} the zip records "
            "(the member is damaged)"
        )


class _Decompressed:
    """A compressed zip member, read like a file (from its start)."""

    def __init__(self, archive: zipfile.ZipFile, info: zipfile.ZipInfo, where: str) -> None:
        self.archive, self.info, self.where, self.at = archive, info, where, 0

    def seek(self, at: int) -> None:
        self.at = at

    def read(self, n: int) -> bytes:
        try:
            with self.archive.open(self.info) as member:
                member.read(self.at)
                data = member.read(n)
        except _ZIP_ERRORS as err:
            raise _zip_error(self.where, err) from None
        self.at += len(data)
        return data


class _Window:
    """``length`` bytes of ``f`` from ``start``, read like a file."""

    def __init__(self, f: BinaryIO, start: int, length: int) -> None:
        self.f, self.start, self.length, self.at = f, start, length, 0

    def seek(self, at: int) -> None:
        self.at = at

    def read(self, n: int) -> bytes:
        n = max(0, min(n, self.length - self.at))
        self.f.seek(self.start + self.at)
        data = self.f.read(n)
        self.at += len(data)
        return data


def load(
    path: str | bytes | os.PathLike[str] | os.PathLike[bytes],
    mode: str = "r",
    strict: bool = False,
    verify: bool = False,
    *,
    framework: str = "numpy",
) -> FileArrays:
    """The arrays of an ``.npy``, ``.npz`` or safetensors file, or of a
    sharded safetensors checkpoint, name to numpy array (or torch or JAX
    tensor: ``framework``), as views over the mapped file: read-only for
    ``mode="r"``, writable through to the file for ``"r+"`` (not for an
    ``.npz``, whose members' CRC-32s writes would break), copy-on-write for
    ``"c"``. They equal what ``np.load`` and
    ``safetensors.numpy.load_file`` return (an ``.npy`` file's one array is
    called ``"array"``). Only a regular file is read: a FIFO, device or
    folder is refused before anything can wait on it.

    A sharded checkpoint is loaded from its index (a path ending in
    ``.json``: Hugging Face's ``model.safetensors.index.json``, whose
    ``"weight_map"`` gives each tensor's shard) or from a folder holding
    exactly one ``*.safetensors.index.json``: every tensor of every shard,
    in the index's order, each shard mapped once. The index is checked as
    strictly as a header: a shard named by a path (a separator, ``..``, a
    drive or an absolute path) rather than a file beside the index, a
    missing shard, a tensor the index names that its shard lacks, a tensor
    a shard holds that the index does not put in it, a tensor in two
    shards, a repeated key, JSON that is not an index or not UTF-8: each a
    :class:`FormatError` naming the index and the tensor or shard.

    ``framework`` is ``"numpy"`` (``"np"``), ``"torch"`` (``"pt"``) or
    ``"jax"``: each array is handed out as that framework's tensor over the
    same memory (``bytelens._frameworks.to_framework`` says which dtypes
    arrive zero-copy; JAX may copy where XLA needs it). torch has no
    read-only tensors, and a write through one into a read-only mapping
    would kill the process: with ``framework="torch"``, ``mode="r"`` maps
    the file copy-on-write (as ``"c"``), so that writes to a tensor change
    only this process's pages and never reach the file; ``"r+"`` writes
    through to it. An array ``load`` has to copy (misaligned, or not in
    this machine's byte order) would reach torch as a writable copy whose
    writes never reach the file, so under ``"r+"`` it is not handed to
    torch: asking for it raises :class:`FormatError` saying why (numpy
    gets a read-only copy there, for the same reason; JAX's arrays are
    immutable, so they load), and :attr:`FileArrays.unavailable` lists it.

    What it returns is a :class:`FileArrays`, a mapping that acts as a
    dict, in the file's order. A compressed ``.npz`` member is not
    decompressed by ``load`` but on first access (as ``np.load`` does),
    once, straight into aligned memory of its size; its CRC-32 and size
    are checked as it is. Stored members are views of the mapped file,
    and their CRC-32s are not checked unless ``verify=True`` (which reads
    every byte of them once, and decompresses every compressed member now):
    a damaged member then raises :class:`FormatError` from ``load``. Without
    ``verify``, only the members read whole anyway are checked (stored
    ones up to 64 KiB). Other formats have no checksums to verify.

    An array whose offset is not a multiple of its dtype's alignment is
    copied into aligned memory, as is a compressed ``.npz`` member;
    :func:`inspect` lists both. Under ``"r+"`` such a copy is read-only:
    its writes could not reach the file, so a write raises instead of
    being lost, while the file's other arrays stay writable views. With
    ``strict=True`` a misaligned array raises :class:`AlignmentError`
    instead.

    An array of a dtype bytelens does not have (safetensors' ``C64``,
    ``F8_E4M3FNUZ``, ``F4``; an ``.npy`` of complex numbers or strings, or
    the raw ``|V1`` bytes ``np.save`` writes for ml_dtypes' types) does not
    stop the others: its name stays in the mapping (so that nothing is
    dropped silently, by ``bl.save(other, bl.load(path))`` say), and
    asking for it raises :class:`FormatError` naming the file, the array
    and its dtype; :attr:`FileArrays.unavailable` lists them with the
    reason, as :func:`inspect` does. ``strict=True`` refuses such a file
    whole, with a ``FormatError`` naming the array. Any header that is not
    valid is a ``FormatError`` too; every error names the file.

    The views read the mapped file itself: if another program truncates
    it while they live, touching the lost bytes kills the process with
    ``SIGBUS`` (as with any memory map, numpy's included; Windows refuses
    to truncate a mapped file). :func:`save` never does this to a loaded
    file: it writes a new file and renames it over the old one, whose
    views keep reading the old bytes (Windows refuses that rename while
    they live, and ``save`` says so).

    >>> import bytelens as bl, numpy as np, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "a.npy")
    >>> np.save(path, np.arange(4, dtype=">i4"))
    >>> a = bl.load(path, framework="np")["array"]
    >>> a.tolist(), a.dtype.str, a.flags.writeable
    ([0, 1, 2, 3], '>i4', False)
    """
    if mode not in ("r", "r+", "c"):
        raise ValueError(f'mode must be "r", "r+" or "c", not {_short(str(mode))!r}')
    convert = _converter(framework)
    if convert is not None and convert.framework == "torch" and mode == "r":
        mode = "c"  # torch writes to any tensor: never into a read-only mapping
    path = _fspath(path)
    index = _index_path(path)
    if index is not None:
        return _load_sharded(index, mode, strict, verify, convert)
    out = FileArrays(path)
    _load_file(out, path, mode, strict, verify, convert)
    return out


class _Converter:
    """Hands an array out as a ``framework`` tensor (``_frameworks``)."""

    def __init__(self, framework: str, to_framework: Callable[[np.ndarray, str], Any]) -> None:
        self.framework, self._to = framework, to_framework

    def __call__(self, array: np.ndarray) -> Any:
        return self._to(array, self.framework)

    def loses_writes(self, array: np.ndarray) -> str | None:
        """Why a tensor of ``array`` would be a writable copy, whose writes
        under ``mode="r+"`` could never reach the file (None where it
        shares the file's memory, or cannot be written at all). JAX's
        arrays are immutable, so only torch's copies can lose a write."""
        if self.framework != "torch":
            return None
        from . import _frameworks

        return _frameworks.torch_copies(array)


def _converter(framework: object) -> _Converter | None:
    """None for numpy's arrays as they are; else the converter to the
    framework ``framework`` names (safetensors' ``"pt"`` and ``"np"`` too).
    ``_frameworks`` (and torch or JAX) is imported only when asked for."""
    if framework == "numpy":
        return None
    if not isinstance(framework, str):
        raise TypeError(f'framework is a str ("numpy", "torch", "jax"), not {type(framework).__name__}')
    from . import _frameworks

    name = _frameworks.framework_name(framework)
    return None if name == "numpy" else _Converter(name, _frameworks.to_framework)


def _load_file(
    out: FileArrays,
    path: str,
    mode: str,
    strict: bool,
    verify: bool,
    convert: _Converter | None,
    expect: Callable[[FileReport], None] | None = None,
) -> None:
    """Maps the file at ``path`` and puts its arrays into ``out``;
    ``expect`` checks its report first (a shard's against its index)."""
    f, info = _open(path)
    with f:
        report, members = _describe(path, f, info.st_size)
        if expect is not None:
            expect(report)
        if report.format == "npz" and mode == "r+":
            raise ValueError(
                f"{path}: an .npz member written in place would no longer match its CRC-32, and zip "
                'readers (np.load among them) would refuse it: load it with mode "r" or "c"'
            )
        for a in report.arrays:
            if a.unavailable is not None and strict:
                raise FormatError(
                    f"{path}: array {_short(a.name)!r} has the dtype {_short(a.dtype)}, which bytelens cannot view "
                    f"({a.unavailable}); strict=True refuses the file (without it the other arrays load)"
                )
        buf = Buffer.map(path, mode)
        now = os.stat(path)
        if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino) or buf.nbytes != info.st_size:
            raise FormatError(
                f"{path}: the file changed while it was loaded ({info.st_size} bytes, then {buf.nbytes}): "
                "load it again"
            )
    archive = _Archive(path, buf) if any(a.copy == COMPRESSED for a in report.arrays) else None
    by_name = {m.info.filename: m for m in members}
    for a in report.arrays:
        if a.unavailable is not None:
            out._items[a.name] = _Unavailable(f"{path}: array {_short(a.name)!r}", a)
            continue
        if a.copy == COMPRESSED:
            assert archive is not None and a.member is not None
            out._items[a.name] = _Compressed(archive, by_name[a.member], a, mode, convert)
            continue
        assert a.descr is not None  # available
        try:
            try:
                array = buf.view(a.descr, offset=a.offset, shape=a.shape, strides=a.strides)
            except AlignmentError as err:
                if strict:
                    raise _naming(err, "", " (strict=True refuses the copy that would align it)") from None
                array = _aligned_copy(buf, a, mode)
        except LayoutError as err:
            raise _naming(err, f"{path}: array {_short(a.name)!r}: ") from None
        if convert is not None and mode == "r+":
            why = convert.loses_writes(array)
            if why is not None:
                if a.copy is not None:  # read-only because it is a copy
                    why = f"it is a copy ({a.copy.removesuffix(_READ_ONLY_UNDER_R_PLUS)})"
                out._items[a.name] = _Refused(f"{path}: array {_short(a.name)!r}", why, convert.framework)
                continue
        out._items[a.name] = array if convert is None else convert(array)
    if verify:
        data = buf.view("|u1", shape=(buf.nbytes,))
        for m in members:
            if m.info.compress_type == zipfile.ZIP_STORED:
                crc = 0
                for at in range(m.start, m.start + m.info.file_size, 64 * _CHUNK):
                    crc = zlib.crc32(data[at : min(at + 64 * _CHUNK, m.start + m.info.file_size)].data, crc)
                _check_crc(crc, m.info, f"{path}, member {_short(m.info.filename)!r}")
        for a in report.arrays:
            if a.copy == COMPRESSED and a.unavailable is None:
                out[a.name]  # decompresses (and checks) a compressed member now


def _load_sharded(index: str, mode: str, strict: bool, verify: bool, convert: _Converter | None) -> FileArrays:
    """Every tensor of the sharded checkpoint ``index`` describes, each
    shard mapped once, in the index's order."""
    report, weight_map, shards = _read_index(index)
    shown = _printable(index)
    loaded = FileArrays(index)
    folder = os.path.dirname(index)
    by_shard: dict[str, list[ArrayInfo]] = {shard: [] for shard in shards}
    for a in report.arrays:  # one pass: a scan per shard was quadratic
        by_shard[a.shard or ""].append(a)
    for shard in shards:
        wanted = by_shard[shard]

        def same_as_indexed(now: FileReport, shard: str = shard, wanted: list[ArrayInfo] = wanted) -> None:
            # The shard read again to be mapped: it must still hold what the
            # index was checked against.
            if sorted((a.name, a.offset, a.nbytes) for a in now.arrays) != sorted(
                (a.name, a.offset, a.nbytes) for a in wanted
            ):
                raise FormatError(f"{shown}: shard {_short(shard)!r} changed while it was loaded: load it again")

        _load_file(loaded, os.path.join(folder, shard), mode, strict, verify, convert, same_as_indexed)
    out = FileArrays(index)
    for tensor in weight_map:  # the index's order
        out._items[tensor] = loaded._items[tensor]
    return out


def _naming(err: LayoutError, first: str, then: str = "") -> LayoutError:
    """``err`` (of its own class, with its ``kind``) between ``first`` and ``then``."""
    named = type(err)(f"{first}{err}{then}")
    if hasattr(err, "kind"):
        named.kind = err.kind
    return named


class FileArrays(MutableMapping[str, Any]):
    """What :func:`load` returns: a file's arrays by name, in the file's
    order (numpy arrays, or the tensors of the ``framework`` asked for). It
    acts as a dict of arrays, but for two things: a compressed ``.npz``
    member is decompressed on its first access, exactly once (not by
    ``load``, and not by ``in``, ``len`` or iterating the names); and an
    array of a dtype bytelens lacks keeps its name but raises
    :class:`FormatError` when asked for (:attr:`unavailable` lists them).

    >>> import bytelens as bl, numpy as np, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "z.npz")
    >>> np.savez_compressed(path, a=np.arange(3), b=np.ones(2))
    >>> arrays = bl.load(path)
    >>> list(arrays), "a" in arrays, arrays["a"].tolist(), arrays.unavailable
    (['a', 'b'], True, [0, 1, 2], {})
    """

    def __init__(self, path: str) -> None:
        #: The file the arrays were loaded from (a sharded checkpoint's index).
        self.path = path
        self._items: dict[str, Any] = {}
        self._lock = threading.Lock()

    @property
    def unavailable(self) -> dict[str, str]:
        """The arrays of the file that bytelens cannot hand out, name to
        why (``"bytelens has no dtype C64"``); asking for one raises
        :class:`FormatError` (as ``items()`` and ``values()`` do when they
        reach one). ``{k: arrays[k] for k in arrays if k not in
        arrays.unavailable}`` holds the rest."""
        return {name: value.reason for name, value in self._items.items() if isinstance(value, _Unavailable)}

    def __getitem__(self, name: str) -> Any:
        value = self._items[name]
        if isinstance(value, _Unavailable):
            raise value.error()
        if isinstance(value, _Compressed):
            with self._lock:  # one decompression, however many threads ask
                value = self._items[name]
                if isinstance(value, _Compressed):
                    value = self._items[name] = value.read()
        return value

    def __setitem__(self, name: str, array: Any) -> None:
        self._items[name] = array

    def __delitem__(self, name: str) -> None:
        del self._items[name]

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        def note(value: Any) -> str:
            if isinstance(value, _Compressed):
                return " (compressed, not read yet)"
            if isinstance(value, _Unavailable):
                return f" (unavailable: {value.reason})"
            return ""

        names = [_short(name, 40) + note(value) for name, value in list(self._items.items())[:20]]
        more = f", and {len(self._items) - 20} more" if len(self._items) > 20 else ""
        return f"<bytelens arrays of {_short(self.path)!r}: {', '.join(names)}{more}>"

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self.items()),))


class _Unavailable:
    """An array :func:`load` cannot hand out (a dtype bytelens lacks)."""

    def __init__(self, where: str, array: ArrayInfo) -> None:
        self.where, self.dtype = where, array.dtype
        self.reason = array.unavailable or f"bytelens has no dtype {array.dtype}"

    def error(self) -> FormatError:
        return FormatError(
            f"{self.where} has the dtype {_short(self.dtype)}, which bytelens cannot view "
            f"({self.reason}); the file's other arrays loaded, and bl.inspect describes this one"
        )


class _Refused(_Unavailable):
    """An array :func:`load` will not hand to torch under ``mode="r+"``:
    torch would get a writable copy, and writes to it would be lost."""

    def __init__(self, where: str, why: str, framework: str) -> None:
        self.where, self.framework, self.why = where, framework, why
        self.reason = f'{framework} would get a copy under mode="r+": {why}'

    def error(self) -> FormatError:
        return FormatError(
            f'{self.where}: not handed to {self.framework} under mode="r+": {self.why}, '
            f"so {self.framework} would get a writable copy whose writes never reach the file. "
            f'Load with mode="c" (a writable copy, by intent) or framework="numpy" (a read-only array: '
            "a write raises); the file's other arrays loaded"
        )


class _MappedFile:
    """The bytes of a mapped file, read like a file by ``zipfile``: each
    read copies only what it asks for."""

    def __init__(self, data: np.ndarray) -> None:
        self.data, self.at = data, 0

    def seekable(self) -> bool:
        return True

    def seek(self, at: int, whence: int = 0) -> int:
        self.at = max(0, at + (0, self.at, len(self.data))[whence])
        return self.at

    def tell(self) -> int:
        return self.at

    def read(self, n: int = -1) -> bytes:
        end = len(self.data) if n < 0 else min(self.at + n, len(self.data))
        data = self.data[self.at : end].tobytes() if end > self.at else b""
        self.at += len(data)
        return data


class _Archive:
    """The zip of a loaded ``.npz``, read from its mapped bytes (so from
    the file that was loaded, even if its path now names another), its
    directory parsed on the first decompression."""

    def __init__(self, path: str, buf: Buffer) -> None:
        self.path, self.buf = path, buf
        self._zip: zipfile.ZipFile | None = None

    def zip(self) -> zipfile.ZipFile:
        if self._zip is None:
            data = self.buf.view("|u1", shape=(self.buf.nbytes,))
            try:
                self._zip = zipfile.ZipFile(_MappedFile(data))
            except _ZIP_ERRORS as err:
                raise FormatError(f"{self.path}: not a readable .npz (zip) file: {err}") from None
        return self._zip


class _Compressed:
    """A compressed ``.npz`` member not read yet."""

    def __init__(
        self, archive: _Archive, member: _Member, array: ArrayInfo, mode: str, convert: _Converter | None
    ) -> None:
        self.archive, self.member, self.array, self.mode = archive, member, array, mode
        self.convert = convert

    def read(self) -> Any:
        """The member decompressed in chunks into an aligned Buffer of its
        size (its only copy), its size and CRC-32 checked, viewed as its array."""
        info, a = self.member.info, self.array
        where = f"{self.archive.path}, member {_short(info.filename)!r}"
        size = info.file_size
        out = Buffer(max(size, 1))
        dest = out.view("|u1", shape=(size,))
        got = 0
        try:
            with self.archive.zip().open(info) as member:
                # One byte past the size, so that a longer member shows.
                while chunk := member.read(min(_CHUNK, size - got + 1)):
                    if got + len(chunk) > size:
                        raise FormatError(f"{where}: decompresses to more than the {size} bytes its zip entry says")
                    dest[got : got + len(chunk)] = np.frombuffer(chunk, np.uint8)
                    got += len(chunk)
        except FormatError:
            raise
        except _ZIP_ERRORS as err:
            raise _zip_error(where, err) from None
        if got != size:
            raise FormatError(f"{where}: decompresses to {got} bytes, not the {size} its zip entry says")
        assert a.descr is not None  # load refuses the others
        try:
            array = out.view(a.descr, offset=a.offset, shape=a.shape, strides=a.strides)
        except LayoutError as err:
            raise _naming(err, f"{self.archive.path}: array {_short(a.name)!r}: ") from None
        array.flags.writeable = self.mode != "r"
        return array if self.convert is None else self.convert(array)


def _aligned_copy(buf: Buffer, a: ArrayInfo, mode: str) -> np.ndarray:
    """``a``'s bytes copied into 64-byte aligned memory, viewed as ``a``:
    writable only under ``"c"``, since under ``"r+"`` its writes would not
    reach the file."""
    assert a.descr is not None and a.strides is not None
    # File arrays are C or Fortran order: their bytes are a.offset..a.end.
    copy = Buffer(max(a.nbytes, 1))
    copy.view("|u1", shape=(a.nbytes,))[:] = buf.view("|u1", offset=a.offset, shape=(a.nbytes,))
    array = copy.view(a.descr, shape=a.shape, strides=a.strides)
    array.flags.writeable = mode == "c"
    return array


def save(
    path: str | bytes | os.PathLike[str] | os.PathLike[bytes],
    arrays: np.ndarray | Mapping[str, np.ndarray],
    metadata: Mapping[str, str] | None = None,
    *,
    align: int = ALIGN,
) -> None:
    """Writes ``arrays`` so that :func:`load` maps every one zero-copy.

    ``.npy``: one array (or a mapping with one), its data at a multiple of
    ``align`` bytes (and of 64, as the format asks). ``.safetensors``: a
    mapping of names to arrays (and optional string ``metadata``),
    little-endian, the header padded with spaces (as the format allows) so
    that the data starts at a multiple of ``align``. safetensors forbids
    gaps between tensors, so tensors whose sizes are multiples of ``align``
    come first (each at a multiple of ``align``), then the rest from the
    widest dtype down, which keeps every tensor aligned for its dtype. Both
    files read back with numpy's and the safetensors package's own loaders.

    ``align`` (64 by default; cuBLAS and others want 256) is a power of two
    from the widest dtype's itemsize up to 4096 (a page): anything else is
    a ``ValueError``, before a byte is written.

    Whatever :func:`load` would refuse is refused before a byte is
    written: tensor names and metadata keys and values that are not
    ``str`` (a ``TypeError``: nothing is converted silently, so ``1`` and
    ``"1"`` cannot both become ``"1"``), a tensor named ``__metadata__``,
    text that is not valid Unicode (a lone surrogate), a header past
    :data:`MAX_HEADER` bytes, an ``.npy`` of a dtype bytelens cannot map
    (datetime, strings, complex: ``np.save`` writes those), an ``.npy`` of
    ml_dtypes' bfloat16 or float8 (which ``np.save`` writes as raw bytes
    and no loader reads back as what they were: safetensors has codes for
    them, from the core's dtype table), metadata for an ``.npy``.

    The save is atomic: the file is written beside ``path`` under a
    temporary name, flushed to disk, then renamed over ``path`` (a
    symlink's target is replaced, not the link). ``path`` is at every
    moment the old file whole or the new one whole; a save that fails
    leaves the old file as it was and no temporary file behind. Arrays
    loaded from the old file, here or in another process, stay valid and
    keep the old bytes, so ``bl.save(path, bl.load(path))`` is safe.
    (Windows renames over no file that is mapped: there ``save`` raises a
    ``PermissionError`` while such arrays live, and leaves the old file
    as it was; nor over a read-only file.) A new file gets the
    permissions ``open(path, "wb")`` would give it; a replaced one keeps
    its permission bits (on Windows, its read-only bit is all there is),
    but, renamed over, no longer shares its bytes with hard links to the
    old file.

    >>> import bytelens as bl, numpy as np, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "m.safetensors")
    >>> bl.save(path, {"w": np.ones(4, "<f4")})
    >>> weights = bl.load(path)
    >>> bl.save(path, {"w": weights["w"] * 2})   # over the file it maps
    >>> weights["w"].tolist(), bl.load(path)["w"].tolist()
    ([1.0, 1.0, 1.0, 1.0], [2.0, 2.0, 2.0, 2.0])
    """
    path = _fspath(path)
    if isinstance(align, bool) or not isinstance(align, int):
        raise TypeError(f"align is an int, a power of two up to {MAX_ALIGN}, not {type(align).__name__}")
    if align < 1 or align > MAX_ALIGN or align & (align - 1):
        raise ValueError(f"align={align}: a power of two from the widest dtype's itemsize up to {MAX_ALIGN}")
    if path.endswith(".npy"):
        if metadata:
            raise ValueError(f"{path}: an .npy file has no metadata; safetensors files do")
        if isinstance(arrays, Mapping):
            if len(arrays) != 1:
                raise ValueError(f"an .npy file holds one array, not {len(arrays)}")
            [arrays] = arrays.values()
        head, parts = _npy_parts(path, np.asanyarray(arrays), align)
    elif path.endswith(".safetensors"):
        if not isinstance(arrays, Mapping):
            raise TypeError("a safetensors file holds named arrays: pass a dict of name -> array")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise TypeError(f"metadata is a dict of str -> str, not {type(metadata).__name__}")
        head, parts = _safetensors_parts(path, arrays, metadata or {}, align)
    else:
        raise ValueError(f"save writes .npy or .safetensors files, not {_short(path)!r}")

    def write(f: BinaryIO) -> None:
        f.write(head)
        for part in parts:
            if part.nbytes:
                f.write(part)

    _write_atomically(path, write)


def _check_align(align: int, itemsize: int, what: str) -> None:
    """Refuses an ``align`` below the itemsize of ``what``."""
    if align < itemsize:
        raise ValueError(
            f"align={align} is below the itemsize of {what} ({itemsize} bytes): it could not keep it aligned"
        )


def _npy_parts(path: str, array: np.ndarray, align: int) -> tuple[bytes, list[memoryview]]:
    """The header of ``array``'s ``.npy`` file and its data, at a multiple
    of ``align`` (and of 64, as the format asks)."""
    if array.dtype.hasobject or array.dtype.names is not None:
        raise TypeError(f"save writes arrays of numbers, not {array.dtype}")
    known = _known_dtype(array.dtype)
    if known is not None and not known["npy"]:
        # np.save writes ml_dtypes' types as raw bytes ('|V1', '<V2'), which
        # every loader reads back as bytes, not as what they were.
        raise TypeError(
            f"{path}: an .npy header cannot name {known['name']} (np.save writes it as raw bytes "
            f"{array.dtype.str!r}, and loaders read bytes back): save it to a .safetensors file, "
            f"as {known['safetensors']}"
        )
    if array.dtype.kind == "V":
        raise TypeError(f"save writes arrays of numbers, not raw bytes ({array.dtype})")
    _check_align(align, array.dtype.itemsize, str(array.dtype))
    align = max(align, ALIGN)
    fortran = array.flags.f_contiguous and not array.flags.c_contiguous
    # np.asarray(order=...), not np.ascontiguousarray, which makes a 0-d array 1-d.
    data = np.asarray(array, order="F" if fortran else "C")
    dict_text = repr({"descr": array.dtype.str, "fortran_order": fortran, "shape": array.shape})
    # Version 1.0 has a 2-byte header length; 2.0 a 4-byte one.
    version, lead = (1, 10) if len(dict_text) + align + 10 < 65536 else (2, 12)
    total = -(-(lead + len(dict_text) + 1) // align) * align
    header = dict_text.ljust(total - lead - 1) + "\n"
    head = (
        b"\x93NUMPY"
        + bytes([version, 0])
        + struct.pack("<H" if version == 1 else "<I", len(header))
        + header.encode("latin1")
    )
    # What load will make of it, asked of the core that will read it.
    [parsed] = _loadable(path, head, len(head) + data.nbytes)["arrays"]
    if parsed["descr"] is None:
        raise TypeError(
            f"{path}: bl.load could not map an .npy of dtype {array.dtype} ({array.dtype.str!r}): bytelens has "
            "no such dtype, and bl.save writes only what bl.load maps (np.save writes it)"
        )
    return head, [_raw_bytes(data.T if fortran else data)]


def _known_dtype(dtype: np.dtype[Any]) -> dict[str, Any] | None:
    """The core's table row (``_file_dtype``) of a numpy dtype bytelens
    has; None for one it lacks (complex, strings, datetimes)."""
    try:
        return _file_dtype(dtype)
    except (TypeError, ValueError):  # LayoutError (BadDType) is a ValueError
        return None


def _loadable(path: str, head: bytes, length: int) -> dict[str, Any]:
    """The header ``head`` of a file of ``length`` bytes, as :func:`load`
    will read it; a ``ValueError`` if it would refuse it."""
    try:
        header = read_header(head, length)
    except FormatError as err:
        raise ValueError(f"{path}: bl.load would refuse the header bl.save was to write: {err}") from None
    assert "need" not in header, "the whole header was given"
    return header


def _raw_bytes(array: np.ndarray) -> memoryview:
    """The bytes of a C-contiguous array, whatever its dtype."""
    return array.reshape(-1).view(np.uint8).data


def _text(text: object, what: str) -> str:
    """``text``, a str that UTF-8 can encode, or a TypeError or ValueError
    naming ``what`` it is."""
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a str, not {type(text).__name__} ({_short(repr(text))})")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ValueError(
            f"{what} {_short(text)!r} is not valid Unicode ({err.reason} at index {err.start}), "
            "so it cannot be written as UTF-8"
        ) from None
    return text


def _safetensors_parts(
    path: str, arrays: Mapping[str, np.ndarray], metadata: Mapping[str, str], align: int
) -> tuple[bytes, list[memoryview]]:
    """The header of a safetensors file of ``arrays`` and its data, in order."""
    tensors = []
    names: set[str] = set()
    for name, array in arrays.items():
        name = _text(name, "a tensor name")
        if name == "__metadata__":
            raise ValueError("no tensor can be named '__metadata__': safetensors keeps the file's metadata there")
        if name in names:  # a Mapping that is not a dict can repeat a key
            raise ValueError(f"two tensors are named {_short(name)!r}")
        names.add(name)
        array = np.asanyarray(array)
        known = _known_dtype(array.dtype)
        if known is None:
            raise TypeError(
                f"safetensors has no dtype for {array.dtype} (tensor {_short(name)!r}) that bytelens has: "
                "bl.save writes the dtypes bytelens views, each under its safetensors code"
            )
        code = known["safetensors"]
        if array.dtype.byteorder == ">":
            array = array.astype(array.dtype.newbyteorder("<"))
        _check_align(align, array.dtype.itemsize, f"{array.dtype} (tensor {_short(name)!r})")
        # np.asarray(order="C") keeps a 0-d tensor 0-d (np.ascontiguousarray makes it 1-d).
        tensors.append((name, code, np.asarray(array, order="C")))
    # Sizes that keep `align` first, then the widest dtypes first.
    tensors.sort(key=lambda t: (t[2].nbytes % align != 0, -t[2].dtype.itemsize))
    header: dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = {
            _text(key, "a metadata key"): _text(value, f"metadata {_short(str(key))!r}")
            for key, value in metadata.items()
        }
    at = 0
    for name, code, array in tensors:
        header[name] = {"dtype": code, "shape": list(array.shape), "data_offsets": [at, at + array.nbytes]}
        at += array.nbytes
    encoded = json.dumps(header, separators=(",", ":")).encode()
    # Spaces after the JSON, so that the data starts at a multiple of `align`.
    encoded += b" " * (-(8 + len(encoded)) % align)
    if len(encoded) > MAX_HEADER:
        raise ValueError(
            f"{path}: the header would be {len(encoded)} bytes, more than the {MAX_HEADER} bl.load reads "
            "(most of it metadata?)"
        )
    head = struct.pack("<Q", len(encoded)) + encoded
    _loadable(path, head, len(head) + at)
    return head, [_raw_bytes(array) for _, _, array in tensors]


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
