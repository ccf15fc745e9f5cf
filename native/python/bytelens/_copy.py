"""``ascontiguous``: any array copied into C order, converted on the way."""

from typing import Any

import numpy.typing as npt

from . import _native


def ascontiguous(
    a: Any, dtype: npt.DTypeLike | None = None, out: npt.NDArray[Any] | None = None
) -> npt.NDArray[Any]:
    """Copy ``a`` into C order, converted to ``dtype`` on the way.

    ``a`` is any numpy array (a bytelens view or not) in any strides:
    negative, zero (broadcast), transposed, permuted; either byte order.
    Bytes-like objects (bytes, bytearray, mmap, memoryview, a Buffer) are
    read as their memoryview's format (uint8 for bytes); anything else goes
    through ``numpy.asarray``. The values are those of
    ``np.ascontiguousarray(a).astype(dtype)``, bit for bit (bfloat16 and
    the float8 formats as ml_dtypes converts them):

    >>> import numpy as np
    >>> import bytelens as bl
    >>> a = np.arange(6, dtype=">f4").reshape(2, 3)   # big-endian
    >>> b = bl.ascontiguous(a.T)                       # transposed, native order
    >>> b.tolist(), b.dtype.isnative, b.flags.c_contiguous
    ([[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]], True, True)
    >>> bl.ascontiguous(a[:, ::-1], dtype=np.float16).tolist()
    [[2.0, 1.0, 0.0], [5.0, 4.0, 3.0]]
    >>> b.__array_interface__["data"][0] % 64
    0

    ``dtype=None`` keeps ``a``'s dtype in the machine's byte order (unlike
    ``np.ascontiguousarray``, which keeps the byte order); a dtype that
    names a byte order (``">f4"``, ``np.dtype("<i2")``) gets that order.
    The result has ``a``'s shape, 0-d included (``np.ascontiguousarray``
    makes a 0-d array 1-d).
    Conversions follow numpy's ``same_kind`` casting: a float to an
    integer, an integer to bool or a signed integer to an unsigned one
    raises ``CastError`` (a ``TypeError``) naming both dtypes.

    Without ``out`` the result is a new array over a new 64-byte aligned
    ``bytelens.Buffer``. With ``out`` the values are written into it and it
    is returned: ``out`` must be a writable, C-contiguous numpy array with
    exactly the result's shape and dtype (byte order included), else
    ``ValueError`` names the shape and dtype expected and given. ``a`` may
    share memory with ``out``: it is then copied aside first, so the result
    is as if ``a`` had been read before ``out`` was written.

    The GIL is released during the copy; do not write to ``a`` or ``out``
    from another thread meanwhile (as with any numpy operation). A dtype
    bytelens does not handle (object, strings, complex, structured) raises
    ``LayoutError``.
    """
    return _native.ascontiguous(a, dtype, out)
