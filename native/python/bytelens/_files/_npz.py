"""``.npz`` files: the zip's directory and each member's ``.npy`` header,
checked (:func:`_inspect_npz`), and the compressed members :func:`load`
decompresses on first access (:class:`_Compressed`)."""

from __future__ import annotations

import struct
import zipfile
import zlib
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np

from .._native import Buffer, FormatError, LayoutError
from ._headers import HEAD, _header, _read_up_to
from ._report import COMPRESSED, ArrayInfo, FileReport, _arrays, _naming, _short

if TYPE_CHECKING:
    from .._frameworks import _Converter

#: Bytes hashed or decompressed at a time.
_CHUNK = 1 << 20

_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")  # a zip member's local header
_ZIP_MAGIC = b"PK\x03\x04"
#: How a zip without members starts: its end-of-directory record
#: (``np.savez(path)`` with no arrays writes one).
_EMPTY_ZIP_MAGIC = b"PK\x05\x06"


@dataclass(frozen=True)
class _Member:
    """An ``.npz`` member: its zip entry, and the byte its data (compressed
    or not) starts at in the file."""

    info: zipfile.ZipInfo
    start: int


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
