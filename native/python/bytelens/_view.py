"""``bytelens.View``: a numpy array that travels as its memory plus its layout.

Pickling a non-contiguous numpy array copies it, in band, into C order.
``View.of(array)`` instead pickles the bytes the array spans as a ``Buffer``
(out of band with protocol 5: zero-copy into Ray's object store or Dask's
frames) and its strides, offset and dtype as a ``Layout`` (in band, a few
dozen bytes), and ``view.array()`` on the other side is the same view again
over the memory that arrived: same strides, no copy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

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
        buffer = Buffer.wrap(array, readonly=not array.flags.writeable)
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

    def __reduce__(self) -> tuple[Any, ...]:
        return (View, (self.buffer, self.layout))

    def __sizeof__(self) -> int:
        return object.__sizeof__(self) + self.layout.nbytes

    def __repr__(self) -> str:
        return f"View({self.buffer!r}, {self.layout!r})"
