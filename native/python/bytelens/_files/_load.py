""":func:`load`: a file's arrays as checked views over the mapped file
(:class:`FileArrays`), each handed out as numpy's array or another
framework's tensor (:class:`_Converter`), or held back with the reason
(:class:`_Unavailable`, :class:`_Refused`)."""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

from .._frameworks import _Converter, converter
from .._native import FormatError, Quantized, load_file
from . import _sharded
from ._opening import _fspath
from ._report import COMPRESSED, _READ_ONLY_UNDER_R_PLUS, ArrayInfo, _short


def load(
    path: str | bytes | os.PathLike[str] | os.PathLike[bytes],
    mode: str = "r",
    strict: bool = False,
    verify: bool = False,
    *,
    framework: str = "numpy",
    dequantize: str | None = None,
) -> FileArrays:
    """The arrays of an ``.npy``, ``.npz``, safetensors or GGUF file, or of a
    sharded safetensors checkpoint (its index, or the folder holding one),
    name to numpy array, or torch or JAX tensor (``framework``: ``"numpy"``,
    ``"torch"``, ``"jax"``, or safetensors' ``"np"``, ``"pt"``), as views over
    the mapped file: read-only for ``mode="r"``, writable through to the
    file for ``"r+"`` (not an ``.npz``), copy-on-write for ``"c"`` (and for
    ``"r"`` with torch, which has no read-only tensors). They equal what
    ``np.load`` and ``safetensors.numpy.load_file`` return (an ``.npy``
    file's one array is ``"array"``).

    Every header is read and checked by the Rust file layer before any view
    exists; anything wrong is a :class:`FormatError` naming the file (and
    the array, shard or index entry). An array at an offset its dtype
    cannot be viewed at is copied into aligned memory, read-only under
    ``"r+"`` (``strict=True``: :class:`AlignmentError`); a compressed
    ``.npz`` member is inflated on first access, once (``verify=True``:
    every member's CRC-32 checked now). An array of a dtype bytelens lacks
    keeps its name, raises :class:`FormatError` when asked for and is
    listed in :attr:`FileArrays.unavailable` (``strict=True``: the file is
    refused); under ``"r+"`` so is any copy torch would get. A quantised
    GGUF tensor is a :class:`~bytelens.Quantized`, or with ``dequantize=``
    (``"float32"``, ``"float16"``, ``"bfloat16"``) an array dequantised on
    first access. The views read the mapped file itself: if another
    program truncates it while they live, touching the lost bytes kills the
    process with ``SIGBUS``, as with any memory map (:func:`save` renames a
    new file over the old one instead). The guide's chapters "Files" and
    "GGUF" say more.

    >>> import bytelens as bl, numpy as np, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "a.npy")
    >>> np.save(path, np.arange(4, dtype=">i4"))
    >>> a = bl.load(path, framework="np")["array"]
    >>> a.tolist(), a.dtype.str, a.flags.writeable
    ([0, 1, 2, 3], '>i4', False)
    """
    if mode not in ("r", "r+", "c"):
        raise ValueError(f'mode must be "r", "r+" or "c", not {_short(str(mode))!r}')
    if dequantize not in (None, "float32", "float16", "bfloat16"):
        raise ValueError(f'dequantize must be "float32", "float16", "bfloat16" or None, not {_short(str(dequantize))!r}')
    convert = converter(framework)
    if convert is not None and convert.framework == "torch" and mode == "r":
        mode = "c"  # torch writes to any tensor: never into a read-only mapping
    # Read, checked and mapped by the Rust file layer (bytelens::files::load_with).
    report, entries = load_file(_fspath(path), mode, strict, verify, _sharded.MAX_INDEX, ArrayInfo)
    out = FileArrays(report["path"])
    out.metadata = report["metadata"]

    def where(a: ArrayInfo) -> str:  # the file that holds it: a shard, for a checkpoint
        file = out.path if a.shard is None else os.path.join(os.path.dirname(out.path), a.shard)
        return f"{file}: array {_short(a.name)!r}"

    for a, entry in zip(report["arrays"], entries):
        if a.unavailable is not None:
            out._items[a.name] = _Unavailable(where(a), a)
        elif a.ggml is not None:
            quantized = Quantized(entry, a.ggml, a.shape)
            if dequantize is None:
                out._items[a.name] = quantized
            elif convert is not None and mode == "r+" and convert.framework == "torch":
                copied = f"it is dequantised from its {quantized.qtype} blocks into a new array"
                out._items[a.name] = _Refused(where(a), copied, convert.framework)
            else:
                read = functools.partial(_dequantized, quantized, dequantize, mode == "c")
                out._items[a.name] = _Later(read, f"{quantized.qtype}, not dequantised yet", convert)
        elif a.copy == COMPRESSED:
            out._items[a.name] = _Later(entry.read, "compressed, not read yet", convert)
        elif convert is not None and mode == "r+" and (why := convert.loses_writes(entry)) is not None:
            if a.copy is not None:  # read-only because it is a copy
                why = f"it is a copy ({a.copy.removesuffix(_READ_ONLY_UNDER_R_PLUS)})"
            out._items[a.name] = _Refused(where(a), why, convert.framework)
        else:
            out._items[a.name] = entry if convert is None else convert(entry)
    if verify:  # the Rust layer inflated (and checked) every compressed member
        for name in [name for name, value in out._items.items() if isinstance(value, _Later)]:
            out[name]
    return out


class FileArrays(MutableMapping[str, Any]):
    """What :func:`load` returns: a file's arrays by name, in the file's
    order. A dict of arrays, except that a compressed ``.npz`` member is
    inflated on its first access (not by ``in``, ``len`` or iterating), and
    an array bytelens cannot hand out raises :class:`FormatError`
    (:attr:`unavailable` lists them).

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
        #: The header's metadata: safetensors' ``__metadata__`` (str to
        #: str), a GGUF file's key/values (``int``, ``float``, ``bool``,
        #: ``str``, a list of ``str``, a numpy array), in the file's order.
        self.metadata: dict[str, Any] = {}
        self._items: dict[str, Any] = {}
        self._lock = threading.Lock()

    @property
    def unavailable(self) -> dict[str, str]:
        """The arrays of the file that bytelens cannot hand out, name to
        why (``"bytelens has no dtype C64"``); asking for one raises
        :class:`FormatError` (as iterating the mapping's items or values
        does when it reaches one). ``{k: arrays[k] for k in arrays if k not in
        arrays.unavailable}`` holds the rest."""
        return {name: value.reason for name, value in self._items.items() if isinstance(value, _Unavailable)}

    def __getitem__(self, name: str) -> Any:
        value = self._items[name]
        if isinstance(value, _Unavailable):
            raise value.error()
        if isinstance(value, _Later):
            with self._lock:  # one decompression, however many threads ask
                value = self._items[name]
                if isinstance(value, _Later):
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
            if isinstance(value, _Later):
                return f" ({value.note})"
            if isinstance(value, _Unavailable):
                return f" (unavailable: {value.reason})"
            return ""

        names = [_short(name, 40) + note(value) for name, value in list(self._items.items())[:20]]
        more = f", and {len(self._items) - 20} more" if len(self._items) > 20 else ""
        return f"<bytelens arrays of {_short(self.path)!r}: {', '.join(names)}{more}>"

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self.items()),))


class _Later:
    """An array :func:`load` hands out on its first access, once: a
    compressed ``.npz`` member inflated by the Rust file layer (size and
    CRC-32 checked) into aligned memory of its size, or a quantised tensor
    dequantised into a new array, writable under ``mode="c"`` only (as an
    aligned copy is: under ``"r+"`` its writes could never reach the file)."""

    def __init__(self, read: Callable[[], Any], note: str, convert: _Converter | None) -> None:
        self._read, self.note, self.convert = read, note, convert

    def read(self) -> Any:
        array = self._read()
        return array if self.convert is None else self.convert(array)


def _dequantized(quantized: Quantized, dtype: str, writable: bool) -> Any:
    array = quantized.dequantize(dtype)
    array.flags.writeable = writable
    return array


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
