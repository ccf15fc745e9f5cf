"""The core's one table of error kinds, as the extension raises them: each
kind's Python class exists (in bytelens or among the built-ins) and is the
class the extension raises for it, and real errors of several kinds raise
that class with the kind as their `kind` attribute."""

import builtins
import os
import uuid

import numpy as np
import pytest

import bytelens as bl
from bytelens import _native


def kinds():
    return {kind: (name, cls) for kind, name, cls in _native.error_kinds()}


def test_every_kind_names_a_class_the_extension_raises():
    table = kinds()
    assert len(table) == len(_native.error_kinds()), "a kind is listed twice"
    for kind, (name, cls) in table.items():
        expected = getattr(bl, name, None) or getattr(builtins, name, None)
        assert expected is not None, f"{kind}: no class {name} in bytelens or builtins"
        assert cls is expected, f"{kind}: raises {cls.__name__}, the table says {name}"
        assert issubclass(cls, Exception), kind


def test_the_package_s_classes_form_the_guide_s_tree():
    assert issubclass(bl.AlignmentError, bl.LayoutError)
    assert issubclass(bl.BoundsError, bl.LayoutError)
    assert issubclass(bl.LayoutError, ValueError)
    assert issubclass(bl.FormatError, ValueError)
    assert issubclass(bl.CastError, TypeError)
    assert issubclass(bl.RingClosedError, RuntimeError)
    assert issubclass(bl.LoaderWorkerError, RuntimeError)


def test_ring_errors_raise_their_kinds_classes():
    import os

    ring = bl.Ring.create(f"bl-kinds-{os.getpid()}", 8, slots=1)
    try:
        check("Timeout", lambda: ring.consume(timeout=0))
        ring.close()
        check("RingClosed", lambda: ring.produce())
        check("BadSegment", lambda: bl.Ring.create("bl-kinds-zero", 8, slots=0))
        check("AlreadyExists", lambda: bl.Ring.create(ring.name, 8))
    finally:
        ring.unlink()
    check("NotFound", lambda: bl.Ring.attach(ring.name))


def check(kind, call):
    """`call` raises the class the table names for `kind`, with `kind`."""
    name, cls = kinds()[kind]
    with pytest.raises(Exception) as info:
        call()
    assert type(info.value) is cls, (kind, type(info.value), name)
    assert info.value.kind == kind


def test_layout_errors_raise_their_kinds_classes():
    buf = bl.Buffer(16)
    check("Misaligned", lambda: buf.view("<i4", offset=2, shape=(1,)))
    check("OutOfBounds", lambda: buf.view("<i4", shape=(8,)))
    check("ItemsizeMismatch", lambda: bl.Buffer(3).view("<i2"))
    check("BadDType", lambda: buf.view("float33"))
    check("MissingShape", lambda: buf.view("<i4", strides=(4,)))


def test_memory_errors_raise_their_kinds_classes():
    check("BadAlign", lambda: bl.Buffer(8, align=3))
    check("OutOfMemory", lambda: bl.Buffer(1 << 60))
    check("Cast", lambda: bl.ascontiguous(np.arange(3.0), "i4"))


def test_shared_memory_errors_raise_their_kinds_classes():
    name = f"bl-kinds-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    check("NotFound", lambda: bl.SharedBuffer.attach(name))
    sh = bl.SharedBuffer.create(name, 64)
    try:
        check("AlreadyExists", lambda: bl.SharedBuffer.create(name, 64))
    finally:
        sh.unlink()


def test_the_gpu_s_errors_raise_their_kinds_classes():
    from _support import gpu_or_skip

    gpu = gpu_or_skip()
    # memory the host cannot allocate for a download is a MemoryError,
    # like every other allocation failure; the GPU's own errors GpuError.
    assert kinds()["OutOfMemory"][1] is MemoryError
    assert kinds()["Gpu"][1] is gpu.GpuError
    image = np.zeros((2, 2, 3), np.uint8)
    check("Texture", lambda: gpu.upload_texture(image, format="rg8unorm"))
