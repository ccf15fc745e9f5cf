"""A GGUF tensor of a quantised ggml type (:class:`Quantized`): its blocks
as a zero-copy structured array over the mapped file, and dequantised by
the native kernels (gguf-py's values bit for bit, at memory speed)."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from .._native import dequantize as _dequantize
from .._native import ggml_type as _ggml_type


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
        info = _ggml_type(qtype)
        if info is None or not info["quantized"]:
            raise ValueError(f"{qtype!r} is not a quantised ggml type")
        #: ggml's type name, lower case (``"q4_k"``).
        self.qtype: str = info["name"].lower()
        #: The shape, in numpy's order.
        self.shape: tuple[int, ...] = tuple(shape)
        self._raw = raw
        self._block = info["block"]
        self._lock = threading.Lock()
        self._blocks: np.ndarray | None = None

    @classmethod
    def from_blocks(cls, qtype: str, blocks: Any, shape: tuple[int, ...]) -> Quantized:
        """A tensor of ``shape`` from ``blocks``: bytes of whole ``qtype``
        blocks (a uint8 array, or any buffer), not copied."""
        raw = np.frombuffer(blocks, np.uint8) if not isinstance(blocks, np.ndarray) else blocks
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
        for outputs of 8 MiB or more."""
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
