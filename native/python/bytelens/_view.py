"""``bytelens.View``: a numpy array that travels as its memory plus its layout.

Pickling a non-contiguous numpy array copies it, in band, into C order.
``View.of(array)`` instead pickles the bytes the array spans as a ``Buffer``
(out of band with protocol 5: zero-copy into Ray's object store or Dask's
frames) and its strides, offset and dtype as a ``Layout`` (in band, a few
dozen bytes), and ``view.array()`` on the other side is the same view again
over the memory that arrived: same strides, no copy.

A View is also a DLPack producer of its own dtype, shape and strides, so
frameworks import it without a copy, bfloat16 and float8 included (numpy's
own DLPack export refuses the ml_dtypes types)::

    >>> import numpy as np, ml_dtypes, bytelens as bl
    >>> a = np.arange(6, dtype=np.float32).astype(ml_dtypes.bfloat16).reshape(2, 3)
    >>> v = bl.View.of(a.T)
    >>> v.__dlpack_device__()
    (1, 0)
    >>> import torch
    >>> t = torch.from_dlpack(v)
    >>> t.dtype, t.shape, t.stride(), t.data_ptr() == a.ctypes.data
    (torch.bfloat16, torch.Size([3, 2]), (1, 3), True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._args import naming_arguments
from ._native import Buffer, Layout


class View:
    """A Buffer and a Layout over it, which pickles as the two.

    ``View(buffer, layout)`` checks that the layout fits the buffer;
    ``View.of(array)`` makes one from any numpy array (a bytelens view or
    not) without copying: the Buffer wraps the bytes the array spans.
    ``array()`` (or ``np.asarray(view)``) is the numpy view.
    """

    __slots__ = ("buffer", "layout")

    def __init__(self, buffer: Buffer, layout: Layout) -> None:
        layout.check(buffer.nbytes)
        self.buffer = buffer
        self.layout = layout

    @classmethod
    def of(cls, array: Any) -> View:
        """The view `array` is: its memory wrapped (kept alive, not copied)
        and its layout, relative to the first byte it spans."""
        array = np.asarray(array)
        # The buffer protocol has no format for ml_dtypes' types (bfloat16,
        # float8): the bytes are wrapped through an unsigned view of the
        # same itemsize, which numpy makes for any strides.
        raw = array
        if array.dtype.itemsize in (1, 2, 4, 8) and not array.dtype.hasobject:
            raw = array.view(f"u{array.dtype.itemsize}")
        buffer = Buffer.wrap(raw, readonly=not array.flags.writeable)
        start = array.__array_interface__["data"][0] - buffer.address
        layout = Layout(array.dtype, array.shape, array.strides, start)
        return cls(buffer, layout)

    def array(self) -> np.ndarray:
        """The numpy view of the buffer this describes."""
        return self.buffer.view(self.layout)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if copy:
            return np.array(self.array(), dtype=dtype, copy=True)
        array = self.array()
        return array if dtype is None else array.astype(dtype, copy=False)

    @naming_arguments
    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """The view as a DLPack tensor of its dtype, shape and strides.

        A versioned capsule (DLPack 1.0, ``DLManagedTensorVersioned``) when
        ``max_version >= (1, 0)``, read-only flagged when the view is; a
        legacy ``DLManagedTensor`` otherwise (refused for read-only views,
        which legacy capsules cannot mark). The dtype's DLPack code and
        width come from the dtype table (``bytelens.dtypes()``: bfloat16 is
        ``kDLBfloat``, the float8 formats their own codes, 10, 12 and 14);
        strides are counted in elements.

        Without ``copy=True`` nothing is copied: the capsule holds the
        buffer's export, so the memory stays alive while a consumer holds
        it and ``Buffer.close()`` refuses meanwhile. A view DLPack cannot
        describe in place is a ``BufferError`` naming why: one in the
        non-native byte order (DLPack has none), one whose byte strides are
        not multiples of its itemsize, or whose first element is not aligned
        for its dtype. ``copy=True`` always exports a new C-contiguous copy
        in native byte order (flagged as copied). ``stream`` must be None and
        ``dl_device`` the CPU, ``(1, 0)``.
        """
        return self.buffer._dlpack_view(
            self.layout, stream=stream, max_version=max_version, dl_device=dl_device, copy=copy
        )

    def __dlpack_device__(self) -> tuple[int, int]:
        """DLPack's ``(kDLCPU, 0)``: a View lives in CPU memory."""
        return self.buffer.__dlpack_device__()

    def __reduce__(self) -> tuple[Any, ...]:
        return (View, (self.buffer, self.layout))

    def __sizeof__(self) -> int:
        return object.__sizeof__(self) + self.layout.nbytes

    def __repr__(self) -> str:
        return f"View({self.buffer!r}, {self.layout!r})"
