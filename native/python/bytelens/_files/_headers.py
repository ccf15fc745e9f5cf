"""The header limit and the core's file rules the other modules use,
typed (the extension's stubs do not list them). Headers themselves are
read by the Rust file layer (``bytelens::files``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import _native

#: The longest header :func:`load` reads, and so the longest :func:`save`
#: writes: the core's ``MAX_HEADER`` (core/src/files/mod.rs).
MAX_HEADER = 100_000_000
#: What the file formats need of a dtype: ``name``, ``descr``, ``size``,
#: ``safetensors`` (its code), ``npy`` (whether an .npy header names it), ``float``.
_file_dtype: Callable[[Any], dict[str, Any]] = getattr(_native, "file_dtype")
#: ``read_header(head, length, base=0)``: the header's dict, the core's
#: reader alone (``bl.load`` and ``bl.inspect`` read through Rust).
_read_header: Callable[..., dict[str, Any]] = getattr(_native, "read_header")
#: ``read_elements(dtype, data, offsets)``: the elements at those byte
#: offsets of ``data``, read by the core (None where ``data`` ends inside one).
read_elements: Callable[[Any, bytes, list[int]], list[bool | int | float | None]] = getattr(_native, "read_elements")
