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
import hashlib
import hmac
import importlib.abc
import importlib.machinery
import secrets
import sys
from typing import Any

from ._files import _short

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
    the module's docs), or copied when there is no room to move it.

    The header and frames come from the network: every field is checked
    before a byte is touched, and anything but what :func:`serialize_buffer`
    sends is a ``ValueError`` naming the field or frame. ``"align"`` is a
    power of two from 1 to :data:`MAX_ALIGN`, ``"readonly"`` a bool. A move
    is confined to the frame and the spare bytes after it, in one writable
    block, and recorded there (not in the header, which can be copied):
    frames deserialized again, under the same header or a copy of it, are
    found where they were moved to instead of being moved twice."""
    from ._native import Buffer

    if not isinstance(header, dict):
        raise ValueError(f"a Buffer's Dask header is a dict, not {type(header).__name__}")
    align = _field(header, "align", int, "a power of two from 1 to 2**30")
    if align < 1 or align > MAX_ALIGN or align & (align - 1):
        raise ValueError(f'the header\'s "align" is {_short(repr(align), 40)}: a power of two from 1 to 2**30 was sent')
    readonly = _field(header, "readonly", bool, "True or False")
    for name in ("moved", "moved_check"):
        if name in header:
            raise ValueError(
                f'the header has "{name}" ({_short(repr(header[name]), 40)}), which no Buffer\'s sender writes '
                "(bytelens records a move in the frames it moved)"
            )
    data, spare = _frames(frames)
    aligned = _aligned_in_place(data, spare, align)
    return Buffer._from_pickle(aligned if aligned is not None else data, align, readonly)


#: The largest ``"align"`` a header may give (a Buffer sends ``align - 1``
#: spare bytes with its data, so no sender uses more than a few pages).
MAX_ALIGN = 1 << 30

#: What the record of a move is checked with; never sent.
_SECRET = secrets.token_bytes(32)

#: Bytes of the record a move leaves in its frames (:func:`_record`).
_RECORD = 16


def _field(header: dict[str, Any], name: str, kind: type, takes: str) -> Any:
    """``header[name]``, of ``kind`` exactly (bool is no int here), or a
    ValueError naming the field and what it takes."""
    if name not in header:
        raise ValueError(f'a Buffer\'s Dask header has no "{name}" ({takes})')
    value = header[name]
    if type(value) is not kind:
        raise ValueError(f'the header\'s "{name}" is {type(value).__name__} {_short(repr(value), 40)}, not {takes}')
    return value


def _frames(frames: Any) -> tuple[memoryview, memoryview]:
    """The two frames (the bytes, then the spare bytes) as byte memoryviews."""
    if not isinstance(frames, (list, tuple)) or len(frames) != 2:
        count = len(frames) if isinstance(frames, (list, tuple)) else type(frames).__name__
        raise ValueError(f"a Buffer arrives as 2 frames (its bytes, then spare bytes), not {count}")
    views = []
    for i, frame in enumerate(frames):
        try:
            views.append(memoryview(frame).cast("B"))
        except TypeError as err:
            raise ValueError(f"frame {i} of a Buffer is no contiguous bytes-like object: {err}") from None
    return views[0], views[1]


def _address(view: memoryview) -> int:
    """The address of a non-empty byte memoryview's first byte."""
    import numpy as np

    return int(np.frombuffer(view, np.uint8).ctypes.data)


def _record(start: int, n: int, pad: int, align: int) -> bytes:
    """The record of a move of the ``n`` bytes at ``start`` up by ``pad``
    (for ``align``): the pad, the align's exponent, and a keyed hash of the
    four, so that only this process can write one and no bytes from the
    network can pass for one."""
    mac = hmac.new(_SECRET, f"{start}:{n}:{pad}:{align}".encode(), hashlib.sha256).digest()
    return pad.to_bytes(4, "little") + bytes([align.bit_length() - 1]) + mac[: _RECORD - 5]


def _aligned_in_place(data: memoryview, spare: memoryview, align: int) -> memoryview | None:
    """``data``'s bytes at the next multiple of ``align``, moved there
    through the spare bytes that follow them in the same writable block;
    None where they are aligned already or cannot be moved so.

    A move leaves its record (:func:`_record`) in bytes the moved data no
    longer covers: the frame's first :data:`_RECORD` bytes where it moved
    by at least that many, else the spare bytes' last ones. Frames that
    hold a record of a move of theirs are found where they went, not
    moved again (which would read bytes already moved over, and change
    the Buffer returned the first time); a record of a move for another
    ``align`` is refused."""
    n = data.nbytes
    if n == 0 or data.readonly or spare.nbytes == 0:
        return None
    start = _address(data)
    block = _block(data, spare, start)
    if block is None:
        return None
    offset = start - _address(block)
    end = offset + n + spare.nbytes  # the frames' end, inside `block`
    # Where a record can be: the frame's start, and the spare bytes' end.
    places = [at for at in (offset, end - _RECORD) if offset <= at and at + _RECORD <= end]
    for at in dict.fromkeys(places):
        found = bytes(block[at : at + _RECORD])
        pad, shift = int.from_bytes(found[:4], "little"), found[4]
        if shift > 30 or not hmac.compare_digest(found, _record(start, n, pad, 1 << shift)):
            continue
        if 1 << shift != align:
            raise ValueError(
                f'these frames were moved by an earlier deserialize for "align" {1 << shift}, '
                f"and the header says {align}: they no longer hold the bytes sent"
            )
        return block[offset + pad : offset + pad + n]
    pad = (-start) % align  # 0 <= pad < align: `align` is a positive power of two
    if pad == 0:
        return None
    if pad + _RECORD <= spare.nbytes:
        at = end - _RECORD  # after the moved bytes, which end at offset + pad + n
    elif pad >= _RECORD and pad <= spare.nbytes:
        at = offset  # before them: they start at offset + pad
    else:
        return None  # no room for the move and its record: copied
    # start..start + n + pad is this frame and `pad` of the spare bytes
    # right after it (pad <= spare.nbytes), and the record's place lies in
    # the frames clear of where the bytes go: all inside `block`, which is
    # writable; memmove allows the move's overlap.
    ctypes.memmove(start + pad, start, n)
    block[at : at + _RECORD] = _record(start, n, pad, align)
    return block[offset + pad : offset + pad + n]


def _block(data: memoryview, spare: memoryview, start: int) -> memoryview | None:
    """The writable block ``data`` and ``spare`` were read into, if
    ``spare`` follows ``data`` there; else None."""
    n = data.nbytes
    if _address(spare) != start + n:
        return None
    if data.obj is None or spare.obj is not data.obj:
        return None
    block = memoryview(data.obj)
    if block.readonly or not block.c_contiguous:
        return None
    block = block.cast("B")
    offset = start - _address(block)
    if offset < 0 or offset + n + spare.nbytes > block.nbytes:
        return None
    return block


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
