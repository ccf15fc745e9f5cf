"""bytelens: typed, aligned, reinterpretable views over one byte buffer.

The same bytes seen as int32, int16, float32, ... as zero-copy numpy arrays,
with numpy's ``view(dtype)`` semantics, checked so that no view reads out of
bounds or misaligned::

    >>> import bytelens as bl
    >>> buf = bl.Buffer(16)
    >>> i32, i16 = buf.view("<i4"), buf.view("<i2")
    >>> i32[0] = 0x11223344
    >>> hex(i16[0]), hex(i16[1])
    ('0x3344', '0x1122')
"""

from ._copy import ascontiguous
from ._dataloader import DataLoader, WorkerInfo, get_worker_info
from ._files import FileArrays, FileReport, Quantized, inspect, load, save
from ._loader import Loader, LoaderWorkerError
from ._view import View
from ._native import (
    AlignmentError,
    BoundsError,
    Buffer,
    CastError,
    FormatError,
    Layout,
    LayoutError,
    Plan,
    Ring,
    RingBatch,
    RingClosedError,
    RingSlot,
    SharedBuffer,
    SharedLock,
    __version__,
    dtypes,
)

__all__ = [
    "AlignmentError",
    "BoundsError",
    "Buffer",
    "CastError",
    "DataLoader",
    "FileArrays",
    "FileReport",
    "FormatError",
    "Layout",
    "LayoutError",
    "Loader",
    "LoaderWorkerError",
    "Plan",
    "Quantized",
    "Ring",
    "RingBatch",
    "RingClosedError",
    "RingSlot",
    "SharedBuffer",
    "SharedLock",
    "View",
    "WorkerInfo",
    "__version__",
    "ascontiguous",
    "dtypes",
    "get_worker_info",
    "inspect",
    "load",
    "save",
]

try:  # only in a build with the `gpu` feature (every wheel has it)
    from ._native import GpuError
except ImportError:  # pragma: no cover
    pass
else:
    __all__ += ["GpuError"]
