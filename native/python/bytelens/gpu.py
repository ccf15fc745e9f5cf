"""GPU upload and download through wgpu (Vulkan; Mesa's lavapipe without a GPU).

``upload`` sends an array to the GPU in C order, gathering strided,
transposed or reversed arrays straight into reused staging memory (one copy
on the host, no ``np.ascontiguousarray`` first); ``GpuBuffer.download``
reads it back as a new numpy array over a bytelens Buffer::

    >>> import numpy as np
    >>> from bytelens import gpu
    >>> a = np.arange(12, dtype=np.float32).reshape(3, 4)
    >>> on_gpu = gpu.upload(a.T)          # transposed: gathered while staging
    >>> back = on_gpu.download()
    >>> back.shape, bool((back == a.T).all())
    ((4, 3), True)

The first call picks the adapter (a real GPU when there is one) and keeps it
for the interpreter's life; without one, every call raises ``GpuError``.
"""

from typing import Any

from ._native import GpuBuffer, GpuError, gpu_adapter_info, gpu_upload

__all__ = ["GpuBuffer", "GpuError", "adapter_info", "upload"]


def upload(array: Any) -> GpuBuffer:
    """Upload a numpy array or bytelens view (any strides) to a new GPU buffer.

    Bytes-like objects (bytes, bytearray, mmap, memoryview, a Buffer) upload
    as their memoryview's format (uint8 for bytes); anything else goes
    through ``numpy.asarray``. The data is laid out in C order and
    zero-padded to a multiple of 4 bytes; ``GpuBuffer.download()`` gives it
    back with the same dtype and shape. The GIL is released while the bytes
    move; do not write to the array from another thread meanwhile (as with
    any numpy operation, the upload would read a mix). Raises ``GpuError``
    without an adapter or on a wgpu error, ``LayoutError`` for a dtype
    bytelens does not move (complex, object, strings, structured).
    """
    return gpu_upload(array)


def adapter_info() -> dict[str, Any]:
    """The adapter uploads go to: name, vendor, device, device_type, driver,
    driver_info, backend, max_buffer_size, max_storage_buffer_binding_size."""
    return gpu_adapter_info()
