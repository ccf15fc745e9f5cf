""":func:`load`: a file's arrays as checked views over the mapped file
(:class:`FileArrays`), each handed out as numpy's array or another
framework's tensor (:class:`_Converter`), or held back with the reason
(:class:`_Unavailable`, :class:`_Refused`)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, MutableMapping
from typing import TYPE_CHECKING, Any

from .._native import FormatError, _Inflating, load_file
from . import _sharded
from ._opening import _fspath
from ._quantized import Quantized
from ._report import COMPRESSED, _READ_ONLY_UNDER_R_PLUS, ArrayInfo, _short

if TYPE_CHECKING:
    from .._frameworks import _Converter


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

    A GGUF file's (llama.cpp's models) unquantised tensors are views like
    any other (bfloat16 through ml_dtypes), in numpy's order of axes; a
    quantised one (``Q4_K``, ``Q8_0``, ...) is a :class:`~bytelens.Quantized`:
    its blocks as a structured array over the mapped file, dequantised when
    asked (bit for bit ``gguf.quants.dequantize``). With ``dequantize=``
    ``"float32"``, ``"float16"`` or ``"bfloat16"`` each is handed out as a
    plain array of that dtype instead (or the framework's tensor),
    dequantised on its first access, once. That array is new memory, not
    the file's: writable under ``"c"`` only, as an aligned copy is, so that
    under ``"r+"`` a write raises instead of being lost; torch, which would
    get a writable copy there, is refused it (a :class:`FormatError` when
    asked for, listed in :attr:`FileArrays.unavailable`), while
    :attr:`~bytelens.Quantized.blocks` of the same tensor loaded without
    ``dequantize=`` write through to the file. :attr:`FileArrays.metadata` holds
    the header's key/values, decoded in milliseconds for a 128k-token
    vocabulary; a tensor of a ggml type bytelens lacks (``IQ2_XXS``) is
    unavailable as a dtype bytelens lacks is.

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
    if dequantize not in (None, "float32", "float16", "bfloat16"):
        raise ValueError(f'dequantize must be "float32", "float16", "bfloat16" or None, not {_short(str(dequantize))!r}')
    convert = _converter(framework)
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
                out._items[a.name] = _Dequantized(quantized, dequantize, mode, convert)
        elif a.copy == COMPRESSED:
            out._items[a.name] = _Compressed(entry, convert)
        elif convert is not None and mode == "r+" and (why := convert.loses_writes(entry)) is not None:
            if a.copy is not None:  # read-only because it is a copy
                why = f"it is a copy ({a.copy.removesuffix(_READ_ONLY_UNDER_R_PLUS)})"
            out._items[a.name] = _Refused(where(a), why, convert.framework)
        else:
            out._items[a.name] = entry if convert is None else convert(entry)
    if verify:  # the Rust layer inflated (and checked) every compressed member
        for name in [name for name, value in out._items.items() if isinstance(value, _Compressed)]:
            out[name]
    return out


def _converter(framework: object) -> _Converter | None:
    """None for numpy's arrays as they are; else the converter to the
    framework ``framework`` names (safetensors' ``"pt"`` and ``"np"`` too).
    ``_frameworks`` (and torch or JAX) is imported only when asked for."""
    if framework == "numpy":
        return None
    if not isinstance(framework, str):
        raise TypeError(f'framework is a str ("numpy", "torch", "jax"), not {type(framework).__name__}')
    from .. import _frameworks

    name = _frameworks.framework_name(framework)
    return None if name == "numpy" else _frameworks._Converter(name)


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
        if isinstance(value, (_Compressed, _Dequantized)):
            with self._lock:  # one decompression, however many threads ask
                value = self._items[name]
                if isinstance(value, (_Compressed, _Dequantized)):
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
            if isinstance(value, _Dequantized):
                return f" ({value.quantized.qtype}, not dequantised yet)"
            if isinstance(value, _Unavailable):
                return f" (unavailable: {value.reason})"
            return ""

        names = [_short(name, 40) + note(value) for name, value in list(self._items.items())[:20]]
        more = f", and {len(self._items) - 20} more" if len(self._items) > 20 else ""
        return f"<bytelens arrays of {_short(self.path)!r}: {', '.join(names)}{more}>"

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self.items()),))


class _Compressed:
    """A compressed ``.npz`` member :func:`load` hands out on its first
    access: inflated by the Rust file layer (size and CRC-32 checked) into
    aligned memory of its size, its only copy."""

    def __init__(self, member: _Inflating, convert: _Converter | None) -> None:
        self.member, self.convert = member, convert

    def read(self) -> Any:
        array = self.member.read()
        return array if self.convert is None else self.convert(array)


class _Dequantized:
    """A quantised tensor :func:`load` hands out dequantised, on its
    first access (``dequantize=``): a new array, so writable only under
    ``mode="c"`` (as an aligned copy is), since under ``"r+"`` its writes
    could never reach the file's blocks."""

    def __init__(self, quantized: Quantized, dtype: str, mode: str, convert: _Converter | None) -> None:
        self.quantized, self.dtype, self.mode, self.convert = quantized, dtype, mode, convert

    def read(self) -> Any:
        array = self.quantized.dequantize(self.dtype)
        array.flags.writeable = self.mode == "c"
        return array if self.convert is None else self.convert(array)


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
