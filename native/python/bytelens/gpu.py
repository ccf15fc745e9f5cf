"""GPU upload and download through wgpu (Vulkan, Metal or DX12; Mesa's lavapipe without a GPU).

``upload`` sends an array to the GPU in C order, gathering strided,
transposed or reversed arrays (and converting them, with ``dtype=``)
straight into the GPU's mapped memory: one pass on the host, no
``np.ascontiguousarray`` or ``astype`` first. ``GpuBuffer.download``
reads it back as a new numpy array over a bytelens Buffer::

    >>> import numpy as np
    >>> from bytelens import gpu
    >>> a = np.arange(12, dtype=np.float32).reshape(3, 4)
    >>> on_gpu = gpu.upload(a.T)          # transposed: gathered on the way
    >>> back = on_gpu.download()
    >>> back.shape, bool((back == a.T).all())
    ((4, 3), True)
    >>> big = np.arange(4, dtype=">f8")   # big-endian float64 ...
    >>> gpu.upload(big, dtype=np.float32).download().tolist()  # ... as float32
    [0.0, 1.0, 2.0, 3.0]

The first call picks the adapter (a real GPU when there is one) and keeps it
for the interpreter's life; without one, every call raises ``GpuError``.
"""

from typing import Any

from ._native import GpuBuffer, GpuError, gpu_adapter_info, gpu_upload

__all__ = ["GpuBuffer", "GpuError", "adapter_info", "upload"]


def upload(array: Any, dtype: Any = None) -> GpuBuffer:
    """Upload a numpy array or bytelens view (any strides) to a new GPU buffer.

    With ``dtype``, the values are converted on the way, as
    ``np.ascontiguousarray(array).astype(dtype)`` would convert them (numpy's
    ``same_kind`` casting, native byte order unless the dtype names one;
    ``CastError`` for what it refuses); without, the bytes are uploaded as
    they are, byte order included.

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
    return gpu_upload(array, dtype)


def adapter_info() -> dict[str, Any]:
    """The adapter uploads go to: name, vendor, device, device_type, driver,
    driver_info, backend, max_buffer_size, max_storage_buffer_binding_size."""
    return gpu_adapter_info()
