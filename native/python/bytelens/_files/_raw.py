"""Raw files for :func:`bytelens.inspect` and ``bytelens inspect``: one view
(``dtype``, ``offset``, ``shape``, ``strides``, as ``Buffer.view`` takes
them) or a plan's fields, placed and checked by the core, and the elements
of a view that start in a range of bytes, in the view's order.

The byte range of a view comes from the core (``Layout.byte_span``), never
from C order: a negative stride reaches below the offset, a zero stride
repeats an element, and a Fortran-order array is walked by its strides.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Iterator

from .._native import Layout, LayoutError, Plan
from ._headers import view_layout
from . import _report
from ._report import ArrayInfo, FileReport

#: The most steps :func:`elements` takes over one range of bytes: a view
#: whose elements overlap (strides shorter than its elements) can put more
#: elements in a few bytes than are worth listing.
BUDGET = 1 << 16


def _inspect_raw(
    path: str, size: int, dtype: Any, offset: int, shape: Any, strides: Any, plan: Plan | str | None
) -> FileReport:
    """A raw file of ``size`` bytes described as a ``plan``'s fields and/or
    one view of ``dtype``, each placed by the core and checked against the
    size; an error names the file (and the field)."""
    arrays = []
    if plan is not None:
        if isinstance(plan, str):
            with _naming(path, "its plan"):
                plan = Plan.from_text(plan)
        for name, descr, field_shape, at, _alternative in plan.fields:
            with _naming(path, f"field {_quote(name)}"):
                layout = Layout(descr, field_shape, offset=at)
                layout.check(size)
            arrays.append(_info(name, layout))
    if dtype is not None:
        with _naming(path):
            layout = _view(size, dtype, offset, shape, strides)
            layout.check(size)
        arrays.append(_info("view", layout))
    return FileReport(path, "raw", size, arrays)


def _view(size: int, dtype: Any, offset: int, shape: Any, strides: Any) -> Layout:
    """The layout ``Buffer.view(dtype, offset, shape, strides)`` of the
    file would have, without mapping it: the core's own rule
    (``_headers.view_layout``), so that what ``inspect`` takes ``Buffer.view``
    takes (without a shape, every element from ``offset`` to the end,
    which must be a whole number of them; strides need a shape)."""
    return view_layout(size, dtype, offset, shape, strides)


def _info(name: str, layout: Layout) -> ArrayInfo:
    return ArrayInfo(
        name,
        layout.dtype,
        layout.dtype,
        layout.shape,
        layout.strides,
        layout.offset,
        layout.nbytes,
        span=layout.byte_span,
    )


@contextlib.contextmanager
def _naming(path: str, what: str = "") -> Iterator[None]:
    """Raises a ``LayoutError`` (of its own class and ``kind``),
    ``ValueError`` or ``TypeError`` from the block prefixed by the file and
    ``what`` (a field; nothing for the one view)."""
    where = f"{path}: {what}: " if what else f"{path}: "
    try:
        yield
    except LayoutError as err:
        raise _report._naming(err, where) from None
    except (ValueError, TypeError) as err:
        if type(err) not in (ValueError, TypeError):
            raise  # a subclass whose constructor takes other arguments
        raise type(err)(f"{where}{err}") from None


def _quote(text: str, keep: int = 40) -> str:
    """``text`` in single quotes for a message, on one line and short:
    control and non-ASCII characters (and quotes) escaped, cut after
    ``keep`` characters."""
    text = text.encode("unicode_escape", "backslashreplace").decode("ascii").replace("'", "\\'")
    return "'" + (text if len(text) <= keep else text[:keep] + "...") + "'"


def elements(
    offset: int, shape: tuple[int, ...], strides: tuple[int, ...], lo: int, hi: int, limit: int
) -> tuple[list[tuple[tuple[int, ...], int]], bool]:
    """The elements of a view (its ``offset``, ``shape`` and byte
    ``strides``) whose first byte lies in ``lo..hi``, in the view's order
    (C order of its indices, whatever the strides): ``(index, byte)``
    pairs, at most ``limit``, and whether some were left out.

    Takes time for the elements found, not for the view's size: the axes
    that move (nonzero stride, length over 1) are searched widest stride
    first, each index range cut to what can still reach ``lo..hi``; the
    axes that do not move repeat what was found. A view of overlapping
    elements stops after :data:`BUDGET` steps (and says some were left out).

    >>> from bytelens._files._raw import elements
    >>> elements(12, (4,), (-4,), 0, 16, 16)  # four int32, backwards
    ([((0,), 12), ((1,), 8), ((2,), 4), ((3,), 0)], False)
    >>> elements(0, (2, 3), (4, 8), 8, 20, 16)  # Fortran order, bytes 8..20
    ([((0, 1), 8), ((0, 2), 16), ((1, 1), 12)], False)
    >>> elements(4, (1000,), (0,), 0, 16, 3)  # one element, broadcast
    ([((0,), 4), ((1,), 4), ((2,), 4)], True)
    """
    if 0 in shape or lo >= hi:
        return [], False
    moving = [a for a in range(len(shape)) if shape[a] > 1 and strides[a]]
    moving.sort(key=lambda a: -abs(strides[a]))
    found, complete = _search(offset, [(shape[a], strides[a]) for a in moving], lo, hi)
    if not found:
        return [], not complete
    # `found` holds (byte, index on each moving axis, widest first); put
    # the indices in the view's axis order and the elements in its order.
    rank = {axis: k for k, axis in enumerate(moving)}
    in_order = sorted(moving)
    entries = sorted((tuple(idx[rank[a]] for a in in_order), byte) for byte, idx in found)
    out: list[tuple[tuple[int, ...], int]] = []
    more = _expand(shape, set(moving), entries, 0, 0, (), out, limit)
    return out, more or not complete


def _search(
    offset: int, moving: list[tuple[int, int]], lo: int, hi: int
) -> tuple[list[tuple[int, tuple[int, ...]]], bool]:
    """``(byte, index)`` of every element of the ``moving`` axes
    (``(length, stride)`` each) that starts in ``lo..hi``, and False where
    :data:`BUDGET` ran out first."""
    # What the axes after each one can add to a byte offset, at least and at most.
    least, most = [0] * (len(moving) + 1), [0] * (len(moving) + 1)
    for k in range(len(moving) - 1, -1, -1):
        n, s = moving[k]
        least[k] = least[k + 1] + min(0, s * (n - 1))
        most[k] = most[k + 1] + max(0, s * (n - 1))
    found: list[tuple[int, tuple[int, ...]]] = []
    steps = 0

    def visit(k: int, base: int, index: tuple[int, ...]) -> bool:
        nonlocal steps
        if k == len(moving):
            if lo <= base < hi:  # always, but where no axis moves
                found.append((base, index))
            return True
        n, s = moving[k]
        # i * s must lie in a..b for the later axes to reach lo..hi.
        a, b = lo - most[k + 1] - base, hi - 1 - least[k + 1] - base
        first, last = (-(-a // s), b // s) if s > 0 else (-(-b // s), a // s)
        for i in range(max(first, 0), min(last, n - 1) + 1):
            steps += 1
            if steps > BUDGET or not visit(k + 1, base + i * s, index + (i,)):
                return False
        return True

    complete = visit(0, offset, ())
    return found, complete


def _expand(
    shape: tuple[int, ...],
    moving: set[int],
    entries: list[tuple[tuple[int, ...], int]],
    axis: int,
    k: int,
    prefix: tuple[int, ...],
    out: list[tuple[tuple[int, ...], int]],
    limit: int,
) -> bool:
    """Appends to ``out``, in view order from ``axis`` on, the elements
    whose moving indices (from the ``k``-th) are one of ``entries``
    (sorted), every index of an axis that does not move; True where
    ``limit`` left some out."""
    if axis == len(shape):
        if len(out) == limit:
            return True
        out.append((prefix, entries[0][1]))
        return False
    if axis not in moving:  # stride 0 or length 1: the same bytes at each index
        for i in range(shape[axis]):
            if _expand(shape, moving, entries, axis + 1, k, prefix + (i,), out, limit):
                return True
        return False
    start = 0
    while start < len(entries):
        i = entries[start][0][k]
        stop = start
        while stop < len(entries) and entries[stop][0][k] == i:
            stop += 1
        if _expand(shape, moving, entries[start:stop], axis + 1, k + 1, prefix + (i,), out, limit):
            return True
        start = stop
    return False
