"""What :func:`inspect` reports (:class:`ArrayInfo`, :class:`FileReport`),
made by the Rust file layer (``_native.describe_file``) and written by it
(``_native.report_text``), and how text from a file appears in reports
and messages (:func:`_short`, :func:`_printable`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import _native
from .._native import ggml_type as _ggml_type
from ._headers import _file_dtype

#: What an array copied into aligned memory is under ``mode="r+"``, after
#: why it is copied (:attr:`ArrayInfo.copy`).
_READ_ONLY_UNDER_R_PLUS = "; read-only under r+"
#: Why a compressed ``.npz`` member is copied.
COMPRESSED = "the member is compressed"


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
    #: A GGUF tensor's ggml type where it is quantised (``"Q4_K"``): its
    #: bytes are blocks, which :func:`load` hands out as a
    #: :class:`~bytelens.Quantized`. None for every other array.
    ggml: str | None = None

    @property
    def blocks(self) -> int:
        """The number of blocks of a quantised tensor (0 for other arrays)."""
        if self.ggml is None:
            return 0
        info = _ggml_type(self.ggml)
        return self.nbytes // info["bytes"] if info else 0

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
    #: safetensors' ``__metadata__`` (str to str), or a GGUF header's
    #: key/values (``int``, ``float``, ``bool``, ``str``, a list of ``str``
    #: or a numpy array).
    metadata: dict[str, Any] = field(default_factory=dict)
    version: tuple[int, int] | None = None

    def __getitem__(self, name: str) -> ArrayInfo:
        for array in self.arrays:
            if array.name == name:
                return array
        raise KeyError(name)

    def __str__(self) -> str:
        """The report as ``bytelens inspect FILE`` prints it: the Rust
        report's text (``_native.report_text``)."""
        return _native.report_text(self)


def _from_rust(report: dict[str, Any], path: str | None = None) -> FileReport:
    """The :class:`FileReport` of a report of the Rust file layer, as the
    extension hands it over (``report_dict`` in native/python/src/files.rs:
    the report's fields, each array a dict of :class:`ArrayInfo`'s), with
    ``path`` (the caller's own text of it) in place of the report's."""
    arrays = [ArrayInfo(**a) for a in report["arrays"]]
    shown = report["path"] if path is None else path
    return FileReport(shown, report["format"], report["size"], arrays, report["metadata"], report["version"])


def _short(text: str, keep: int = 64) -> str:
    """``text`` on one line of at most ``keep`` characters (then ``...``):
    every control and non-ASCII character escaped (``\\x1b``, ``\\n``),
    so that text from a file cannot move a terminal's cursor, set its
    title or forge a line (the core's ``Quoted``, style ``py_short``)."""
    return _native.quoted(text, keep, "py_short")


def _printable(text: str) -> str:
    """``text`` (a path: the user's own, or a file name a folder holds)
    with its control, format, separator and private characters escaped and
    the rest kept, so that a name of ESC sequences or newlines cannot drive
    the terminal (the core's ``Quoted``, style ``py_printable``)."""
    return _native.quoted(text, 0, "py_printable")


def _itemsize(descr: str | None) -> int:
    """The itemsize of ``descr`` (bytelens's type string), from the core's
    dtype table; 0 for None."""
    if descr is None:
        return 0
    size: int = _file_dtype(descr)["size"]
    return size
