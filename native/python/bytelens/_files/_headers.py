"""The header limit and the core's file rules the other modules use,
typed (the extension's stubs do not list them). Headers themselves are
read by the Rust file layer (``bytelens::files``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import _native
from .._native import Layout

#: The longest header :func:`load` reads, and so the longest :func:`save`
#: writes: the core's ``MAX_HEADER`` (core/src/files/mod.rs), mirrored here
#: since the extension does not export it.
MAX_HEADER = 100_000_000

# The core's file rules (native/python/src/files.rs), typed here: the
# extension's stubs (_native.pyi) are the lead's to extend.
#: What the file formats need of a dtype: ``name``, ``descr``, ``size``,
#: ``safetensors`` (its code), ``npy`` (whether an .npy header names it), ``float``.
_file_dtype: Callable[[Any], dict[str, Any]] = getattr(_native, "file_dtype")
#: ``view_layout(nbytes, dtype, offset=0, shape=None, strides=None)``: the
#: Layout ``Buffer(nbytes).view(...)`` would have, by the core's rule.
view_layout: Callable[..., Layout] = getattr(_native, "view_layout")
#: ``read_header(head, length, base=0)``: the header's dict (see files.rs),
#: the core's reader alone (``bl.load`` and ``bl.inspect`` read through Rust).
_read_header: Callable[..., dict[str, Any]] = getattr(_native, "read_header")
#: ``read_elements(dtype, data, offsets)``: the elements at those byte
#: offsets of ``data``, read by the core (None where ``data`` ends inside one).
read_elements: Callable[[Any, bytes, list[int]], list[bool | int | float | None]] = getattr(_native, "read_elements")
