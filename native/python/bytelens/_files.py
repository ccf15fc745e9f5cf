"""Real files: ``.npy``, ``.npz`` and safetensors as checked views over one
mapped file (:func:`load`), written with aligned tensors (:func:`save`),
and described without reading their data (:func:`inspect`).

The headers are read by the core (``_native.read_header``): every length,
shape and byte range is checked against the file before any view exists,
and each view is made by ``Buffer.view``, so it is checked again for bounds
and alignment. Only a file's first bytes are read to describe it.
"""

from __future__ import annotations

import json
import os
import struct
import zipfile
from dataclasses import dataclass, field, replace
from typing import Any, BinaryIO, Mapping, Protocol

import numpy as np

from ._native import AlignmentError, Buffer, FormatError, Layout, Plan, read_header

#: Bytes read first; a longer header is read again at the length it gives.
HEAD = 1 << 16
#: Where ``save`` starts the data (and every tensor it can).
ALIGN = 64
#: Why a compressed ``.npz`` member is copied.
COMPRESSED = "the member is compressed"

_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")  # a zip member's local header
_ZIP_MAGIC = b"PK\x03\x04"

# numpy dtype name -> safetensors dtype, for ``save``.
_SAFETENSORS = {
    "bool": "BOOL",
    "uint8": "U8",
    "int8": "I8",
    "int16": "I16",
    "uint16": "U16",
    "float16": "F16",
    "bfloat16": "BF16",
    "int32": "I32",
    "uint32": "U32",
    "float32": "F32",
    "float64": "F64",
    "int64": "I64",
    "uint64": "U64",
}


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

    @property
    def alignment(self) -> int:
        """The largest power of two the offset is a multiple of (the file is
        mapped at a page boundary, so this is the address's alignment too)."""
        return self.offset & -self.offset if self.offset else 1 << 63

    @property
    def end(self) -> int:
        return self.offset + self.nbytes


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
        lines = [f"{self.path}: {self.format}{version}, {self.size:,} bytes, {count}"]
        for key, value in self.metadata.items():
            lines.append(f"  metadata {key}: {_short(value)}")
        rows = [("name", "dtype", "shape", "bytes", "align", "load")]
        for a in self.arrays:
            align = "any" if a.offset == 0 else str(min(a.alignment, 1 << 20))
            span = f"{a.offset}..{a.end}"
            if a.copy == COMPRESSED:  # the range is in the decompressed member
                span, align = f"{span} of {a.member}", "-"
            rows.append(
                (
                    _short(a.name, 40),
                    a.dtype,
                    "(" + ", ".join(map(str, a.shape)) + ("," if len(a.shape) == 1 else "") + ")",
                    span,
                    align,
                    "view" if a.copy is None else f"copy: {a.copy}",
                )
            )
        widths = [max(len(row[i]) for row in rows) for i in range(5)]
        for row in rows:
            cells = [cell.ljust(width) for cell, width in zip(row, widths)]
            lines.append("  " + "  ".join(cells + [row[5]]).rstrip())
        return "\n".join(lines)


def _short(text: str, keep: int = 64) -> str:
    text = text.encode("unicode_escape").decode("ascii")
    return text if len(text) <= keep else text[:keep] + "..."


class _Readable(Protocol):
    """What ``_header`` reads from: a file, or a part of one."""

    def seek(self, at: int, /) -> Any: ...
    def read(self, n: int, /) -> bytes: ...


def _header(f: _Readable, path: str, length: int, what: str = "") -> dict[str, Any]:
    """The header at the start of ``f`` (a file or member of ``length``
    bytes), read by the core from as few bytes as it needs."""
    want = min(HEAD, length)
    while True:
        f.seek(0)
        head = f.read(want)
        try:
            header = read_header(head, length)
        except FormatError as err:
            raise FormatError(f"{path}{what}: {err}") from None
        if "need" not in header:
            return header
        want = header["need"]


def _arrays(
    header: dict[str, Any], base: int, name: str | None = None, member: str | None = None
) -> list[ArrayInfo]:
    """The arrays of a header read at byte ``base``; ``name`` names the one
    array of an ``.npz`` ``member``."""
    out = []
    for a in header["arrays"]:
        copy = None if a["descr"] is not None else f"bytelens has no dtype {a['dtype']}"
        strides = tuple(a["strides"]) if a["strides"] is not None else None
        offset = base + a["offset"]
        itemsize = _itemsize(a["descr"])
        # An empty array needs no alignment (as in numpy): it is never copied.
        if copy is None and itemsize and a["nbytes"] and offset % itemsize:
            copy = f"offset {offset} is not a multiple of {itemsize}"
        out.append(
            ArrayInfo(name or a["name"], a["dtype"], a["descr"], tuple(a["shape"]), strides, offset, a["nbytes"], copy, member)
        )
    return out


def _itemsize(descr: str | None) -> int:
    """The alignment bytelens needs for ``descr`` (its itemsize)."""
    if descr is None:
        return 0
    return Layout(descr, ()).itemsize


def inspect(
    path: str | os.PathLike[str],
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
    only the headers (a few KiB of a file of any size).

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
    path = os.fspath(path)
    size = os.stat(path).st_size
    if dtype is not None or plan is not None:
        return _inspect_raw(path, size, dtype, offset, shape, strides, plan)
    with open(path, "rb") as f:
        magic = f.read(4)
        if magic == _ZIP_MAGIC:
            return _inspect_npz(path, size, f)
        header = _header(f, path, size)
    return FileReport(
        path,
        header["format"],
        size,
        _arrays(header, 0),
        dict(header["metadata"]),
        tuple(header["version"]) if header["format"] == "npy" else None,
    )


def _inspect_npz(path: str, size: int, f: BinaryIO) -> FileReport:
    arrays: list[ArrayInfo] = []
    try:
        archive = zipfile.ZipFile(f)
        members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as err:
        raise FormatError(f"{path}: not a readable .npz (zip) file: {err}") from None
    for info in members:
        name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
        what = f", member {_short(info.filename)!r}"
        if info.flag_bits & 1:
            raise FormatError(f"{path}{what}: the member is encrypted")
        if info.compress_type != zipfile.ZIP_STORED:
            # Read (decompressed) into memory only by `load`: here the header
            # is all that is wanted, from the start of the decompressed member.
            header = _header(_Decompressed(archive, info), path, info.file_size, what)
            arrays.extend(replace(a, copy=COMPRESSED) for a in _arrays(header, 0, name, info.filename))
            continue
        f.seek(info.header_offset)
        local = f.read(_LOCAL_HEADER.size)
        if len(local) < _LOCAL_HEADER.size or local[:4] != _ZIP_MAGIC:
            raise FormatError(f"{path}{what}: no local header at byte {info.header_offset}")
        name_len, extra_len = _LOCAL_HEADER.unpack(local)[-2:]
        start = info.header_offset + _LOCAL_HEADER.size + name_len + extra_len
        if start + info.file_size > size:
            raise FormatError(
                f"{path}{what}: its {info.file_size} bytes from byte {start} run past the end of the file ({size} bytes)"
            )
        header = _header(_Window(f, start, info.file_size), path, info.file_size, what)
        arrays.extend(_arrays(header, start, name, info.filename))
    return FileReport(path, "npz", size, arrays)


class _Decompressed:
    """A compressed zip member, read like a file (from its start)."""

    def __init__(self, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> None:
        self.archive, self.info, self.at = archive, info, 0

    def seek(self, at: int) -> None:
        self.at = at

    def read(self, n: int) -> bytes:
        with self.archive.open(self.info) as member:
            member.read(self.at)
            return member.read(n)


class _Window:
    """``length`` bytes of ``f`` from ``start``, read like a file."""

    def __init__(self, f: BinaryIO, start: int, length: int) -> None:
        self.f, self.start, self.length, self.at = f, start, length, 0

    def seek(self, at: int) -> None:
        self.at = at

    def read(self, n: int) -> bytes:
        n = max(0, min(n, self.length - self.at))
        self.f.seek(self.start + self.at)
        return self.f.read(n)


def _inspect_raw(
    path: str, size: int, dtype: Any, offset: int, shape: Any, strides: Any, plan: Plan | str | None
) -> FileReport:
    arrays = []
    if plan is not None:
        if isinstance(plan, str):
            plan = Plan.from_text(plan)
        for name, descr, field_shape, at, alternative in plan.fields:
            layout = Layout(descr, field_shape, offset=at)
            layout.check(size)
            arrays.append(ArrayInfo(name, descr, descr, field_shape, layout.strides, at, layout.nbytes))
    if dtype is not None:
        view_shape = shape
        if view_shape is None:  # every element from `offset` to the end, as Buffer.view does
            itemsize = Layout(dtype, ()).itemsize
            view_shape = (max(size - offset, 0) // itemsize,)
        layout = Layout(dtype, view_shape, strides, offset)
        layout.check(size)
        arrays.append(
            ArrayInfo("view", layout.dtype, layout.dtype, layout.shape, layout.strides, layout.offset, layout.nbytes)
        )
    return FileReport(path, "raw", size, arrays)


def load(path: str | os.PathLike[str], mode: str = "r", strict: bool = False) -> dict[str, np.ndarray]:
    """The arrays of an ``.npy``, ``.npz`` or safetensors file, name to
    numpy array, as views over one mapped :class:`Buffer`: read-only for
    ``mode="r"``, writable through to the file for ``"r+"`` (not for an
    ``.npz``, whose members' CRC-32s writes would break), copy-on-write for
    ``"c"``. They equal what ``np.load`` and
    ``safetensors.numpy.load_file`` return (an ``.npy`` file's one array is
    called ``"array"``).

    An array whose offset is not a multiple of its dtype's alignment is
    copied into aligned memory (so writes to it do not reach the file), as
    is a compressed ``.npz`` member; :func:`inspect` lists both. With
    ``strict=True`` a misaligned array raises :class:`AlignmentError`
    instead. A dtype bytelens does not have (complex, strings, F8) raises
    :class:`FormatError`, as does any header that is not valid.

    >>> import bytelens as bl, numpy as np, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "a.npy")
    >>> np.save(path, np.arange(4, dtype=">i4"))
    >>> a = bl.load(path)["array"]
    >>> a.tolist(), a.dtype.str, a.flags.writeable
    ([0, 1, 2, 3], '>i4', False)
    """
    if mode not in ("r", "r+", "c"):
        raise ValueError(f'mode must be "r", "r+" or "c", not {_short(str(mode))!r}')
    path = os.fspath(path)
    report = inspect(path)
    if report.format == "npz" and mode == "r+":
        raise ValueError(
            f"{path}: an .npz member written in place would no longer match its CRC-32, and zip "
            'readers (np.load among them) would refuse it: load it with mode "r" or "c"'
        )
    for a in report.arrays:
        if a.descr is None:
            raise FormatError(
                f"{path}: array {_short(a.name)!r} has the dtype {a.dtype}, which bytelens cannot view; "
                "bl.inspect describes it"
            )
    buf = Buffer.map(path, mode)
    out: dict[str, np.ndarray] = {}
    compressed: zipfile.ZipFile | None = None
    try:
        for a in report.arrays:
            if a.copy == COMPRESSED:
                if compressed is None:
                    compressed = zipfile.ZipFile(path)
                out[a.name] = _from_compressed(compressed, a, mode)
                continue
            assert a.descr is not None  # refused above
            try:
                out[a.name] = buf.view(a.descr, offset=a.offset, shape=a.shape, strides=a.strides)
            except AlignmentError as err:
                if strict:
                    raise AlignmentError(
                        f"{path}: array {_short(a.name)!r}: {err} (strict=True refuses the copy that "
                        "would align it)"
                    ) from None
                out[a.name] = _aligned_copy(buf, a, mode)
    finally:
        if compressed is not None:
            compressed.close()
    return out


def _aligned_copy(buf: Buffer, a: ArrayInfo, mode: str) -> np.ndarray:
    """``a``'s bytes copied into 64-byte aligned memory, viewed as ``a``."""
    assert a.descr is not None and a.strides is not None
    # File arrays are C or Fortran order: their bytes are a.offset..a.end.
    copy = Buffer(max(a.nbytes, 1))
    copy.view("|u1", shape=(a.nbytes,))[:] = buf.view("|u1", offset=a.offset, shape=(a.nbytes,))
    array = copy.view(a.descr, shape=a.shape, strides=a.strides)
    array.flags.writeable = mode != "r"
    return array


def _from_compressed(archive: zipfile.ZipFile, a: ArrayInfo, mode: str) -> np.ndarray:
    assert a.member is not None
    data = archive.read(a.member)
    [info] = _arrays(read_header(data, len(data)), 0, a.name, a.member)
    assert info.descr is not None  # the same header inspect read
    array = Buffer.from_bytes(data).view(info.descr, offset=info.offset, shape=info.shape, strides=info.strides)
    array.flags.writeable = mode != "r"
    return array


def save(
    path: str | os.PathLike[str],
    arrays: np.ndarray | Mapping[str, np.ndarray],
    metadata: Mapping[str, str] | None = None,
) -> None:
    """Writes ``arrays`` so that :func:`load` maps every one zero-copy.

    ``.npy``: one array (or a mapping with one), its data at a multiple of
    64 bytes. ``.safetensors``: a mapping of names to arrays (and optional
    string ``metadata``), little-endian, the header padded with spaces (as
    the format allows) so that the data starts at a multiple of 64.
    safetensors forbids gaps between tensors, so tensors whose sizes are
    multiples of 64 come first (each at a multiple of 64), then the rest
    from the widest dtype down, which keeps every tensor aligned for its
    dtype. Both files read back with numpy's and the safetensors package's
    own loaders.
    """
    path = os.fspath(path)
    if path.endswith(".npy"):
        if isinstance(arrays, Mapping):
            if len(arrays) != 1:
                raise ValueError(f"an .npy file holds one array, not {len(arrays)}")
            [arrays] = arrays.values()
        _save_npy(path, np.asanyarray(arrays))
    elif path.endswith(".safetensors"):
        if not isinstance(arrays, Mapping):
            raise TypeError("a safetensors file holds named arrays: pass a dict of name -> array")
        _save_safetensors(path, arrays, metadata or {})
    else:
        raise ValueError(f"save writes .npy or .safetensors files, not {_short(path)!r}")


def _save_npy(path: str, array: np.ndarray) -> None:
    if array.dtype.hasobject or array.dtype.names is not None or array.dtype.kind == "V":
        raise TypeError(f"save writes arrays of numbers, not {array.dtype}")
    fortran = array.flags.f_contiguous and not array.flags.c_contiguous
    data = np.asfortranarray(array) if fortran else np.ascontiguousarray(array)
    dict_text = repr({"descr": array.dtype.str, "fortran_order": fortran, "shape": array.shape})
    # Version 1.0 has a 2-byte header length; 2.0 a 4-byte one.
    version, lead = (1, 10) if len(dict_text) + ALIGN + 10 < 65536 else (2, 12)
    total = -(-(lead + len(dict_text) + 1) // ALIGN) * ALIGN
    header = dict_text.ljust(total - lead - 1) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY" + bytes([version, 0]))
        f.write(struct.pack("<H" if version == 1 else "<I", len(header)))
        f.write(header.encode("latin1"))
        f.write(_raw_bytes(data.T if fortran else data))


def _raw_bytes(array: np.ndarray) -> memoryview:
    """The bytes of a C-contiguous array, whatever its dtype."""
    return array.reshape(-1).view(np.uint8).data


def _save_safetensors(path: str, arrays: Mapping[str, np.ndarray], metadata: Mapping[str, str]) -> None:
    tensors = []
    for name, array in arrays.items():
        array = np.asanyarray(array)
        code = _SAFETENSORS.get(array.dtype.name)
        if code is None:
            raise TypeError(
                f"safetensors has no dtype for {array.dtype} (tensor {_short(str(name))!r}); it has "
                + ", ".join(sorted(_SAFETENSORS))
            )
        if array.dtype.byteorder == ">":
            array = array.astype(array.dtype.newbyteorder("<"))
        tensors.append((str(name), code, np.ascontiguousarray(array)))
    # Sizes that keep 64-byte alignment first, then the widest dtypes first.
    tensors.sort(key=lambda t: (t[2].nbytes % ALIGN != 0, -t[2].dtype.itemsize))
    header: dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    at = 0
    for name, code, array in tensors:
        header[name] = {"dtype": code, "shape": list(array.shape), "data_offsets": [at, at + array.nbytes]}
        at += array.nbytes
    encoded = json.dumps(header, separators=(",", ":")).encode()
    # Spaces after the JSON, so that the data starts at a multiple of 64.
    encoded += b" " * (-(8 + len(encoded)) % ALIGN)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)))
        f.write(encoded)
        for _, _, array in tensors:
            if array.nbytes:
                f.write(_raw_bytes(array))
