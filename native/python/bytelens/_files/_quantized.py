"""A GGUF tensor of a quantised ggml type (:class:`Quantized`): its blocks
as a zero-copy structured array over the mapped file, and dequantised by
the native kernels (gguf-py's values bit for bit, at memory speed)."""

from __future__ import annotations

import operator
import threading
from typing import Any

import numpy as np

from .._native import dequantize as _dequantize
from .._native import ggml_type as _ggml_type
from ._report import _short


def _block_dtype(qtype: str) -> np.dtype[Any]:
    """One block of ``qtype`` as a numpy structured dtype, from the core's
    table: each field named as ggml names it, at its offset, packed."""
    info = _ggml_type(qtype)
    assert info is not None and info["quantized"]
    names, formats, offsets = [], [], []
    for name, descr, count, offset in info["fields"]:
        names.append(name)
        formats.append(np.dtype(descr) if count == 1 else np.dtype((descr, (count,))))
        offsets.append(offset)
    return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": info["bytes"]})


class Quantized:
    """A quantised GGUF tensor (``Q4_K``, ``Q8_0``, ...), as :func:`load`
    hands it out: nothing is dequantised until asked for.

    - :attr:`qtype`: ggml's type name in lower case (``"q4_k"``);
    - :attr:`shape`: the tensor's shape in numpy's order (GGUF stores it
      innermost first); :attr:`nbytes`: the bytes its blocks take;
    - :attr:`blocks`: a numpy structured array over the mapped file, one
      record per block, fields named as ggml names them (``d``, ``dmin``,
      ``scales``, ``qs``, ...): zero-copy, writable under ``mode="r+"``;
    - :meth:`dequantize` (and ``np.asarray``): the values as float32,
      float16 or bfloat16, equal bit for bit to
      ``gguf.quants.dequantize`` (float16 and bfloat16: those rounded once).

    >>> import bytelens as bl, numpy as np
    >>> q = bl.Quantized.from_blocks("q8_0", np.frombuffer(bytes(2) + bytes(range(32)), np.uint8), (32,))
    >>> q, q.blocks["qs"][0][:3].tolist(), q.dequantize().tolist()[:3]
    (<bytelens.Quantized q8_0 (32,), 1 block>, [0, 1, 2], [0.0, 0.0, 0.0])
    """

    def __init__(self, raw: np.ndarray, qtype: str, shape: tuple[int, ...]) -> None:
        info = _ggml_type(qtype) if isinstance(qtype, str) else None
        if info is None or not info["quantized"]:
            raise ValueError(f"{_short(repr(qtype), 40)} is not a quantised ggml type")
        name = info["name"].lower()
        if not (isinstance(raw, np.ndarray) and raw.dtype == np.uint8 and raw.ndim == 1 and raw.flags.c_contiguous):
            what = f"{raw.dtype} array of shape {raw.shape}" if isinstance(raw, np.ndarray) else type(raw).__name__
            raise ValueError(f"a {name} tensor's blocks are a 1-D C-contiguous uint8 array, not a {what}")
        self._qtype: str = name
        self._shape: tuple[int, ...] = _checked_shape(shape, name, info["block"], info["bytes"], raw.nbytes)
        self._raw = raw
        self._block = info["block"]
        self._lock = threading.Lock()
        self._blocks: np.ndarray | None = None

    @property
    def qtype(self) -> str:
        """ggml's type name, lower case (``"q4_k"``)."""
        return self._qtype

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape, in numpy's order."""
        return self._shape

    @classmethod
    def from_blocks(cls, qtype: str, blocks: Any, shape: tuple[int, ...]) -> Quantized:
        """A tensor of ``shape`` from ``blocks``: bytes of whole ``qtype``
        blocks (a C-contiguous array of any dtype, or any contiguous
        buffer), not copied, so that writes to :attr:`blocks` reach them.

        ``shape`` must be what the blocks hold, as in a GGUF file: every
        row (its last axis) whole blocks, and as many values as the blocks
        hold; anything else is a ``ValueError`` with the numbers. A source
        that is not C-contiguous is refused rather than copied (pass
        ``np.ascontiguousarray(blocks)`` to copy it)."""
        raw = blocks if isinstance(blocks, np.ndarray) else np.frombuffer(blocks, np.uint8)
        if not raw.flags.c_contiguous:
            raise ValueError(
                f"the blocks are not C-contiguous (shape {raw.shape}, strides {raw.strides}): they would be "
                "copied, and writes to .blocks would not reach them; pass np.ascontiguousarray(blocks) to copy them"
            )
        return cls(raw.reshape(-1).view(np.uint8), qtype, shape)

    @property
    def values_per_block(self) -> int:
        """Values each block holds (32 or 256)."""
        return int(self._block)

    @property
    def nbytes(self) -> int:
        """The bytes its blocks take in the file."""
        return int(self._raw.nbytes)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        """The number of values it holds."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def blocks(self) -> np.ndarray:
        """The blocks, one structured record each, over the file's bytes."""
        if self._blocks is None:
            with self._lock:
                if self._blocks is None:
                    self._blocks = self._raw.view(_block_dtype(self.qtype))
        return self._blocks

    def dequantize(self, dtype: Any = "float32", out: np.ndarray | None = None) -> np.ndarray:
        """The values as a new array of ``dtype`` (``"float32"``,
        ``"float16"`` or ``"bfloat16"``) and :attr:`shape`, 64-byte aligned;
        or written into ``out`` (C-contiguous, writable, that shape and
        dtype), which is returned. Runs without the GIL, on several threads
        for outputs of 8 MiB or more.

        ``out`` may share bytes with the blocks: they are then read first
        (as numpy's assignment reads a source that overlaps its target),
        also where ``out`` is another shared mapping of the blocks' bytes in
        the same file (``np.memmap``, or a second ``bl.load(path,
        mode="r+")``), which Linux tells through ``/proc/self/maps``. Other
        systems do not say which file a mapping holds: there, do not
        dequantise into a second mapping of the blocks' own bytes."""
        result: np.ndarray = _dequantize(self._raw, self.qtype, self.shape, dtype, out)
        return result

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if copy is False:
            raise ValueError("a quantised tensor cannot be viewed as an array without dequantising it")
        values = self.dequantize()
        return values if dtype is None else values.astype(dtype, copy=False)

    def __reduce__(self) -> tuple[Any, ...]:
        # The blocks travel as a numpy array (a copy, as any pickled array);
        # the lock and the cached structured view are made again.
        return (Quantized, (self._raw, self.qtype, self.shape))

    def __repr__(self) -> str:
        n = self.nbytes // self.blocks.dtype.itemsize
        return f"<bytelens.Quantized {self.qtype} {self.shape}, {n} block{'' if n == 1 else 's'}>"


def _checked_shape(shape: Any, qtype: str, block: int, size: int, nbytes: int) -> tuple[int, ...]:
    """``shape`` as a tuple of ints, if it is what ``nbytes`` of ``qtype``
    blocks (``block`` values in ``size`` bytes each) hold, as in a GGUF
    file: rows (the last axis) of whole blocks, every value in a block and
    every block's values in the shape. Else a ValueError with the numbers."""
    try:
        dims = tuple(operator.index(n) for n in shape)
    except TypeError:
        raise TypeError(f"a {qtype} tensor's shape is a tuple of ints, not {_short(repr(shape), 60)}") from None
    if not dims:
        raise ValueError(f"a {qtype} tensor has at least one axis (rows of whole blocks), not shape ()")
    if any(n < 0 for n in dims):
        raise ValueError(f"a {qtype} tensor's shape {dims} has a negative dimension")
    # Each axis, and the values of its nonzero ones, as numpy's sizes (intp)
    # hold them: beside a 0, an axis of 2**64 held no values and passed,
    # then .size and dequantize() raised OverflowError.
    largest = int(np.iinfo(np.intp).max)
    nonzero = 1
    for n in dims:
        nonzero *= max(n, 1)
    if nonzero > largest:
        raise ValueError(
            f"a {qtype} tensor's shape {dims} is past numpy's sizes: its axes, and their product "
            f"without the zeros, are at most {largest}"
        )
    if nbytes % size:
        over = nbytes % size
        raise ValueError(
            f"{nbytes} bytes are not whole {qtype} blocks of {size} bytes ({over} byte{'' if over == 1 else 's'} over)"
        )
    row = dims[-1]
    if row % block:
        raise ValueError(
            f"shape {dims} cuts its rows of {row} values inside {qtype}'s blocks of {block} values "
            "(each row is whole blocks, as in a GGUF file)"
        )
    values = 1
    for n in dims:
        values *= n
    blocks = nbytes // size
    if values != blocks * block:
        raise ValueError(
            f"{blocks} {qtype} block{' holds' if blocks == 1 else 's hold'} {blocks * block} values ({nbytes} bytes), "
            f"not the {values} of shape {dims}"
        )
    return dims

