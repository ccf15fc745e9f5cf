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

``upload_texture`` sends an image (``(H, W)``, ``(H, W, C)``), image
layers (``(L, H, W, C)``) or a volume (``dimension="3d"``) to a texture,
rows padded to 256 bytes and RGB widened to RGBA in the same pass::

    >>> rgb = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)
    >>> tex = gpu.upload_texture(rgb[::-1, 1:5])   # flipped and cropped
    >>> tex.format, tex.size
    ('rgba8unorm', (4, 4, 1))
    >>> bool((tex.download() == rgb[::-1, 1:5]).all())
    True

The first call picks the adapter (a real GPU when there is one) and keeps it
for the interpreter's life; without one, every call raises ``GpuError``.
"""

import os
from typing import Any

from ._args import naming_arguments
from ._native import (
    GpuBuffer,
    GpuError,
    GpuTexture,
    gpu_adapter_info,
    gpu_upload,
    gpu_upload_all,
    gpu_upload_texture,
)

__all__ = ["GpuBuffer", "GpuError", "GpuTexture", "adapter_info", "load", "upload", "upload_texture"]


@naming_arguments
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

    A :class:`bytelens.Quantized` (a GGUF tensor) goes up as its blocks
    without ``dtype`` (a buffer whose ``qtype`` and ``values_shape`` say
    what they hold, for a shader to dequantise), and dequantised on the
    way with ``dtype`` float32, float16 or bfloat16 (no dequantised copy on
    the host); either way its blocks must hold its shape (``GpuError``
    otherwise, before anything is uploaded).
    """
    from ._files import Quantized

    if isinstance(array, Quantized):
        return gpu_upload_all([array._raw], dtype, [(array.qtype, array.shape)])[0]
    return gpu_upload(array, dtype)


@naming_arguments
def upload_texture(array: Any, format: str | None = None, dimension: str = "2d") -> GpuTexture:
    """Upload an image or volume array (any strides) to a new GPU texture.

    The axes are ``(H, W)``, ``(H, W, C)`` or ``(L, H, W, C)`` (``L`` array
    layers) for ``dimension="2d"``; ``(D, H, W)`` or ``(D, H, W, C)`` for
    ``"3d"``. Without ``format``, it follows the dtype and channel count:
    uint8 to ``r8unorm``, ``rg8unorm``, ``rgba8unorm``; int8 to ``r8snorm``…;
    uint16 and uint32 to ``r16uint``/``r32uint``…; int16 and int32 to
    ``r16sint``/``r32sint``…; float16 to ``r16float``…``rgba16float``;
    float32 to ``r32float``…``rgba32float``. A ``format`` by its WebGPU name
    (``"rgba8unorm-srgb"``, ``"bgra8unorm"``, ``"r8uint"``…) is checked
    against the array's dtype and channels. Three channels are widened to
    four, alpha at the format's one (opaque); rows are padded to 256 bytes
    and the other byte order is swapped, all in the one pass that gathers
    the array. ``GpuTexture.download()`` gives the array back in its shape
    (RGB again).

    Raises ``GpuError`` for what no texture holds (64-bit, bool, bfloat16
    or float8 elements, more than 4 channels, an empty array), a format
    that does not fit the array, or sizes past the adapter's limits (named:
    ``max_texture_dimension_2d``, ``max_texture_array_layers``,
    ``max_texture_dimension_3d``; ``adapter_info()`` has them).
    """
    return gpu_upload_texture(array, format, dimension)


@naming_arguments
def load(
    path: str | bytes | os.PathLike[str] | os.PathLike[bytes],
    dtype: Any = None,
    dequantize: str = "cpu",
) -> dict[str, GpuBuffer]:
    """Every array of an ``.npy``, ``.npz``, safetensors or GGUF file, or of a
    sharded safetensors checkpoint, as GPU buffers: name to
    :class:`GpuBuffer`, in the file's order (an ``.npy`` file's one array is
    called ``"array"``), each converted to ``dtype`` on the way when one is
    given (as :func:`upload` converts).

    The file is mapped and read as :func:`bytelens.load` reads it (the same
    checks, names and errors), and each array goes from the mapped file
    straight into GPU memory, with no copy on the host: while one is
    copied, a second thread brings the pages of the next ones into memory
    (``MADV_POPULATE_READ`` on Linux, ``MADV_WILLNEED`` on other Unix
    systems; 16 MiB at a time, at most 256 MiB ahead), instead of the copy
    faulting them in one by one. Misaligned arrays and compressed ``.npz``
    members are copied into aligned memory first, as ``bytelens.load``
    does. An array of a dtype bytelens does not have raises ``FormatError``
    naming it, before anything is uploaded. A GGUF file's quantised
    tensors go up as :func:`upload` sends a :class:`bytelens.Quantized`:
    their blocks without ``dtype``, dequantised on the way with it: on the
    CPU, in the copy (``dequantize="cpu"``), or with ``dequantize="gpu"``
    uploaded as their blocks (a fraction of the values' bytes) and
    dequantised there by bytelens' WGSL shaders (``GpuBuffer.dequantize``),
    the same shaders the browser package runs: the same values bit for bit
    wherever a block's scale is finite.

    >>> import numpy as np, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "w.npz")
    >>> np.savez(path, w=np.ones((2, 3), np.float64), b=np.arange(3, dtype=">i2"))
    >>> on_gpu = load(path, dtype=np.float32)
    >>> list(on_gpu), on_gpu["w"].dtype, on_gpu["b"].download().tolist()
    (['w', 'b'], dtype('float32'), [0.0, 1.0, 2.0])
    """
    from ._files import Quantized, _short
    from ._files import load as load_file
    from ._native import FormatError

    arrays = load_file(path)
    unavailable = arrays.unavailable
    if unavailable:
        name, why = next(iter(unavailable.items()))
        others = f" (and {len(unavailable) - 1} more)" if len(unavailable) > 1 else ""
        raise FormatError(
            f"{arrays.path}: gpu.load refuses the file, and uploaded nothing: array {_short(name)!r}{others} "
            f"cannot be viewed ({why}); bl.load(path) hands out the other arrays, and gpu.upload takes each"
        )
    names = list(arrays)
    if not names:
        return {}  # an empty .npz: nothing to upload, so no adapter needed
    items = [arrays[name] for name in names]
    views = [item._raw if isinstance(item, Quantized) else item for item in items]
    quantized = [(item.qtype, item.shape) if isinstance(item, Quantized) else None for item in items]
    return dict(zip(names, gpu_upload_all(views, dtype, quantized, names, dequantize)))


@naming_arguments
def adapter_info() -> dict[str, Any]:
    """The adapter uploads go to: name, vendor, device, device_type, driver,
    driver_info, backend, max_buffer_size, max_storage_buffer_binding_size,
    and the texture limits max_texture_dimension_1d, max_texture_dimension_2d,
    max_texture_dimension_3d and max_texture_array_layers."""
    return gpu_adapter_info()
