"""bytelens on Dask: ``sizeof`` for bytelens objects, and a serializer that
lets a ``Buffer`` arrive aligned without a copy.

Both are registered through the ``dask.sizeof`` entry point
(pyproject.toml), which Dask runs when ``dask.sizeof`` is first imported:
``sizeof`` there and then, so that the scheduler counts a Buffer by its
bytes, not by the few dozen bytes of the Python object; the serializer as
soon as ``distributed.protocol.serialize`` has run (the entry point usually
runs while Dask's distributed is itself still importing ``dask``).

Why a serializer: Dask's TCP comm reads a message's first out-of-band frame
into the same block as the message's header (``_add_frames_header``: "first
uncompressed buffer ... IFF the pickle bytes are negligible"), all its 64
MiB shards together, at whatever offset the header's length leaves it. So a
pickled Buffer's bytes arrive misaligned, and were copied into a new
aligned Buffer on every arrival: 1.5x a numpy array's time at 128 MiB,
mostly the new memory's page faults. (A frame of its own would be read into
a block of its own, but each shard into another, merged again by a copy.)

So the bytes are sent as the pickle protocol hands them out (not copied),
followed by ``align - 1`` spare bytes, which Dask reads into the same block
right after them. On arrival the bytes are moved up to the next multiple of
``align`` inside that block, which the spare bytes leave room for (one
memmove over memory the arrival has just written: 6 ms for 128 MiB where a
new Buffer took 87), and the Buffer wraps them there. Bytes that are
aligned already (in one process: the sender's own memory) are wrapped as
they are and never moved; bytes Dask read elsewhere (a read-only or
decompressed frame, the spare bytes apart from them) are copied into an
aligned Buffer, as pickles are.
"""

from __future__ import annotations

import ctypes
import importlib.abc
import importlib.machinery
import sys
from typing import Any

_SERIALIZE = "distributed.protocol.serialize"


def register(dispatch: object = None) -> None:
    """The ``dask.sizeof`` entry point (Dask passes its ``sizeof``
    dispatcher, which is imported here either way): sizeof now, the
    serializer once Dask's distributed has defined its serializer
    registries."""
    from dask.sizeof import sizeof

    from ._native import Buffer
    from ._view import View

    @sizeof.register(Buffer)
    def sizeof_buffer(buf: Buffer) -> int:
        # Wrapped or mapped memory counts too: a worker holding it holds the bytes.
        return 0 if buf.closed else buf.nbytes

    @sizeof.register(View)
    def sizeof_view(view: View) -> int:
        return sizeof_buffer(view.buffer)

    module = sys.modules.get(_SERIALIZE)
    if module is not None and hasattr(module, "dask_deserialize"):
        register_serializers(module)
    elif not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport())


def register_serializers(module: Any = None) -> None:
    """Registers the Buffer serializer with ``distributed.protocol.serialize``
    (``module``; imported if not given). Registering again replaces it."""
    if module is None:
        import distributed.protocol.serialize as module
    from ._native import Buffer

    module.dask_serialize.register(Buffer)(serialize_buffer)
    module.dask_deserialize.register(Buffer)(deserialize_buffer)


def serialize_buffer(buf: Any) -> tuple[dict[str, Any], list[Any]]:
    """A Buffer as Dask's header and frames: its bytes (not copied), then
    ``align - 1`` spare bytes."""
    # The pickle protocol's own export: counted, as a view is, while Dask holds it.
    _rebuild, (data, align, readonly) = buf.__reduce_ex__(5)
    header = {"align": align, "readonly": readonly}
    return header, [data.raw(), bytes(align - 1)]


def deserialize_buffer(header: dict[str, Any], frames: list[Any]) -> Any:
    """The Buffer again: over its frame, moved up to an aligned address
    inside the block Dask read it into when it is not aligned there (see
    the module's docs), or copied when there is no room to move it."""
    from ._native import Buffer

    data, spare = (memoryview(f).cast("B") for f in frames)
    align, readonly = header["align"], header["readonly"]
    aligned = _aligned_in_place(header, data, spare, align)
    return Buffer._from_pickle(aligned if aligned is not None else data, align, readonly)


def _address(view: memoryview) -> int:
    """The address of a non-empty byte memoryview's first byte."""
    import numpy as np

    return int(np.frombuffer(view, np.uint8).ctypes.data)


def _aligned_in_place(
    header: dict[str, Any], data: memoryview, spare: memoryview, align: int
) -> memoryview | None:
    """`data`'s bytes at the next multiple of `align`, moved there through
    the spare bytes that follow them in the same writable block; None where
    they are aligned already or cannot be moved so. A header whose frames
    were moved says by how much (``"moved"``), so that deserializing them
    again finds the bytes where they went instead of moving them twice."""
    n = data.nbytes
    if n == 0 or data.readonly or spare.nbytes == 0:
        return None
    start = _address(data)
    moved = header.get("moved")
    pad = (-start) % align if moved is None else moved
    if pad == 0 or pad > spare.nbytes or _address(spare) != start + n:
        return None
    if data.obj is None or spare.obj is not data.obj:
        return None
    block = memoryview(data.obj).cast("B")
    offset = start - _address(block)
    if offset < 0 or offset + n + pad > block.nbytes:
        return None
    if moved is None:
        # Both ranges lie inside `block`, which this arrival owns and which
        # is writable (checked above); memmove allows their overlap.
        ctypes.memmove(start + pad, start, n)
        header["moved"] = pad
    return block[offset + pad : offset + pad + n]


class _AfterImport(importlib.abc.MetaPathFinder):
    """Registers the serializer once ``distributed.protocol.serialize`` has
    run: the entry point runs while Dask's distributed is importing
    ``dask``, when that module cannot be imported yet."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != _SERIALIZE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec  # imported some other way; a Buffer is then pickled
        run = loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            register_serializers(module)

        loader.exec_module = exec_module
        return spec
