"""Raw files for :func:`bytelens.inspect` and ``bytelens inspect``: one view
(``dtype``, ``offset``, ``shape``, ``strides``, as ``Buffer.view`` takes
them) or a plan's fields, placed and checked by the Rust file layer
(``bytelens::files::describe_raw``), and the elements of a view that start
in a range of bytes, in the view's order (``bytelens::files::elements``).
"""

from __future__ import annotations

from typing import Any

from .. import _native
from .._native import Plan
from ._report import FileReport, _from_rust


def _inspect_raw(
    path: str, size: int, dtype: Any, offset: int, shape: Any, strides: Any, plan: Plan | str | None
) -> FileReport:
    """A raw file of ``size`` bytes described as a ``plan``'s fields and/or
    one view of ``dtype``, each placed by the core and checked against the
    size; an error names the file (and the field)."""
    return _from_rust(_native.inspect_raw(path, size, dtype, offset, shape, strides, plan), path)


def _quote(text: str, keep: int = 40) -> str:
    """``text`` in single quotes for a message, on one line and short:
    control and non-ASCII characters (and quotes) escaped, cut after
    ``keep`` characters (the core's ``Quoted``, style ``py_quote``)."""
    return _native.quoted(text, keep, "py_quote")


def elements(
    offset: int, shape: tuple[int, ...], strides: tuple[int, ...], lo: int, hi: int, limit: int
) -> tuple[list[tuple[tuple[int, ...], int]], bool]:
    """The elements of a view (its ``offset``, ``shape`` and byte
    ``strides``) whose first byte lies in ``lo..hi``, in the view's order
    (C order of its indices, whatever the strides): ``(index, byte)``
    pairs, at most ``limit``, and whether some were left out.

    Takes time for the elements found, not for the view's size; a view of
    overlapping elements stops after the core's budget of 65,536 steps
    (and says some were left out).

    >>> from bytelens._files._raw import elements
    >>> elements(12, (4,), (-4,), 0, 16, 16)  # four int32, backwards
    ([((0,), 12), ((1,), 8), ((2,), 4), ((3,), 0)], False)
    >>> elements(0, (2, 3), (4, 8), 8, 20, 16)  # Fortran order, bytes 8..20
    ([((0, 1), 8), ((0, 2), 16), ((1, 1), 12)], False)
    >>> elements(4, (1000,), (0,), 0, 16, 3)  # one element, broadcast
    ([((0,), 4), ((1,), 4), ((2,), 4)], True)
    """
    return _native.elements(offset, shape, strides, lo, hi, limit)
