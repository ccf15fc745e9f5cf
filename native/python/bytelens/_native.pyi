"""Type stubs for the extension module built from native/python/src/ (the bytelens-python crate)."""

import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, ClassVar, Literal, final

import numpy.typing as npt
from typing_extensions import Self, TypedDict

__version__: str
# In the order the extension registers them. The gpu names exist only in a
# build with the `gpu` feature, as every wheel is (pyproject.toml), so the
# stubs list them unconditionally.
__all__ = [
    "__version__",
    "LayoutError",
    "AlignmentError",
    "BoundsError",
    "CastError",
    "FormatError",
    "RingClosedError",
    "GpuError",
    "Buffer",
    "Layout",
    "Plan",
    "Quantized",
    "ascontiguous",
    "dtypes",
    "error_kinds",
    "quoted",
    "read_header",
    "file_dtype",
    "read_elements",
    "read_index",
    "load_file",
    "describe_file",
    "_Inflating",
    "save_arrays",
    "save_file",
    "inspect_file",
    "report_text",
    "inspect_raw",
    "elements",
    "dequantize",
    "ggml_type",
]
if sys.platform != "win32":
    __all__ += ["SharedBuffer", "SharedLock"]
__all__ += ["Ring", "RingSlot", "RingBatch"]
__all__ += ["GpuBuffer", "GpuTexture", "gpu_upload", "gpu_upload_texture", "gpu_upload_all", "gpu_adapter_info"]

_Dims = int | Sequence[int]
# What SharedBuffer.create(lock=...) takes and .lock_kind says (the kinds
# an OS lacks are a ValueError at run time).
_LockKind = Literal["robust-mutex", "file", "named-mutex"]

class LayoutError(ValueError):
    """A view that does not fit its buffer, or an invalid layout operation."""

    kind: str

class AlignmentError(LayoutError):
    """An offset, stride or address that is not a multiple of the dtype's alignment."""

class BoundsError(LayoutError):
    """A view that would touch bytes outside its buffer."""

class CastError(TypeError):
    """A dtype conversion that numpy's same_kind casting refuses (float to int, int to bool, signed to unsigned)."""

class FormatError(ValueError):
    """A file whose header is not a valid .npy, .npz or safetensors header, with what is wrong."""

class RingClosedError(RuntimeError):
    """A ring that is closed: producers can no longer publish, and consumers have taken everything published."""

@final
class Buffer:
    """Bytes that typed numpy views share, zero-copy."""

    def __new__(cls, nbytes: int, align: int = 64) -> Self: ...
    @classmethod
    def from_bytes(cls, data: Any) -> Buffer: ...
    @classmethod
    def wrap(cls, obj: Any, *, readonly: bool = False) -> Buffer: ...
    @classmethod
    def from_dlpack(cls, obj: Any) -> Buffer: ...
    @classmethod
    def map(cls, path: str | os.PathLike[str], mode: str = "r") -> Buffer: ...
    @classmethod
    def _from_pickle(cls, data: Any, align: int, readonly: bool) -> Buffer: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def address(self) -> int: ...
    @property
    def readonly(self) -> bool: ...
    @property
    def align(self) -> int: ...
    @property
    def exports(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    def view(
        self,
        dtype: npt.DTypeLike | Layout,
        offset: int = 0,
        shape: _Dims | None = None,
        strides: _Dims | None = None,
    ) -> npt.NDArray[Any]: ...
    def arrays(self, plan: Plan) -> dict[str, npt.NDArray[Any]]: ...
    def copy(self) -> Buffer: ...
    def close(self) -> None: ...
    def __sizeof__(self) -> int: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        *_args: type[BaseException] | BaseException | TracebackType | None,
    ) -> bool: ...
    def __len__(self) -> int: ...
    if sys.version_info >= (3, 12):
        def __buffer__(self, flags: int, /) -> memoryview: ...
        def __release_buffer__(self, buffer: memoryview, /) -> None: ...
    @property
    def __array_interface__(self) -> dict[str, Any]: ...
    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any: ...
    def __dlpack_device__(self) -> tuple[int, int]: ...
    def _dlpack_view(
        self,
        layout: Layout,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
        legacy_read_only: bool = False,
    ) -> Any: ...
    def __reduce_ex__(self, protocol: int) -> tuple[Any, ...]: ...  # type: ignore[override]

@final
class Layout:
    """Where the elements of a view lie, checked by the core."""

    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(
        cls,
        dtype: npt.DTypeLike,
        shape: _Dims,
        strides: _Dims | None = None,
        offset: int = 0,
    ) -> Self: ...
    @property
    def dtype(self) -> str: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def strides(self) -> tuple[int, ...]: ...
    @property
    def offset(self) -> int: ...
    @property
    def ndim(self) -> int: ...
    @property
    def itemsize(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def byte_span(self) -> tuple[int, int]: ...
    @property
    def readonly(self) -> bool: ...
    @property
    def c_contiguous(self) -> bool: ...
    @property
    def f_contiguous(self) -> bool: ...
    def check(self, nbytes: int) -> None: ...
    def slice(
        self, axis: int, start: int | None = None, stop: int | None = None, step: int = 1
    ) -> Layout: ...
    def index(self, axis: int, i: int) -> Layout: ...
    def reinterpret(self, dtype: npt.DTypeLike) -> Layout: ...
    def transpose(self) -> Layout: ...
    def permute(self, axes: Sequence[int]) -> Layout: ...
    def reshape(self, shape: _Dims) -> Layout: ...
    def broadcast_to(self, shape: _Dims) -> Layout: ...
    @staticmethod
    def _from_state(
        descr: npt.DTypeLike,
        shape: _Dims,
        strides: _Dims,
        offset: int,
        read_only: bool,
        unaligned: bool,
    ) -> Layout: ...
    def __reduce__(self) -> tuple[Any, ...]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...

_FieldSpec = npt.DTypeLike | tuple[npt.DTypeLike, _Dims] | tuple[npt.DTypeLike, _Dims, int]

@final
class Plan:
    """Named arrays in one buffer: struct fields and union alternatives."""

    def __new__(cls, name: str = "Plan") -> Self: ...
    def struct(self, **fields: _FieldSpec) -> Plan: ...
    def union(self, **fields: _FieldSpec) -> Plan: ...
    @property
    def name(self) -> str: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def align(self) -> int: ...
    @property
    def alternatives(self) -> int: ...
    @property
    def offsets(self) -> dict[str, int]: ...
    @property
    def fields(self) -> list[tuple[str, str, tuple[int, ...], int, int]]: ...
    def padding(self, alternative: int = 0) -> list[tuple[int, int]]: ...
    def to_text(self) -> str: ...
    @classmethod
    def from_text(cls, text: str) -> Plan: ...
    def __reduce__(self) -> tuple[Any, ...]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def wgsl(self) -> str: ...

@final
class SharedLock:
    """The lock of a SharedBuffer, as a context manager."""

    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        *_args: type[BaseException] | BaseException | TracebackType | None,
    ) -> bool: ...
    @property
    def owner_died(self) -> bool: ...

@final
class SharedBuffer:
    """Named shared memory that other processes attach to by name."""

    @classmethod
    def create(
        cls,
        name: str,
        nbytes: int,
        plan: Plan | None = None,
        *,
        lock: _LockKind | None = None,
    ) -> SharedBuffer: ...
    @classmethod
    def attach(cls, name: str) -> SharedBuffer: ...
    def unlink(self) -> None: ...
    @property
    def name(self) -> str: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def buffer(self) -> Buffer: ...
    @property
    def plan(self) -> Plan | None: ...
    @property
    def lock_kind(self) -> _LockKind: ...
    def view(self, *args: Any, **kwargs: Any) -> npt.NDArray[Any]: ...
    def arrays(self, plan: Plan | None = None) -> dict[str, npt.NDArray[Any]]: ...
    def lock(self, timeout: float | None = None) -> SharedLock: ...
    @property
    def exports(self) -> int: ...
    def close(self) -> None: ...
    def __len__(self) -> int: ...
    def __reduce__(self) -> tuple[Any, ...]: ...

class _RingStats(TypedDict):
    published: int
    consumed: int
    redelivered: int
    abandoned: int
    recovered: int
    producer_waits: int
    consumer_waits: int

@final
class Ring:
    """A ring of slots in shared memory, for batches between processes."""

    @classmethod
    def create(
        cls, name: str, plan: Plan | int, slots: int = 8, *, nbytes: int | None = None
    ) -> Ring: ...
    @classmethod
    def attach(cls, name: str) -> Ring: ...
    def produce(self, timeout: float | None = None) -> RingSlot: ...
    def consume(self, timeout: float | None = None) -> RingBatch: ...
    def __iter__(self) -> Iterator[RingBatch]: ...
    def __next__(self) -> RingBatch: ...
    def close(self) -> None: ...
    def unlink(self) -> None: ...
    def recover(self) -> int: ...
    def stats(self) -> _RingStats: ...
    @property
    def name(self) -> str: ...
    @property
    def slots(self) -> int: ...
    @property
    def slot_nbytes(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def plan(self) -> Plan | None: ...
    @property
    def closed(self) -> bool: ...
    def __reduce__(self) -> tuple[Any, ...]: ...

@final
class RingSlot:
    """A slot a producer holds, to fill in place."""

    def publish(self) -> int: ...
    def abandon(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        *args: type[BaseException] | BaseException | TracebackType | None,
    ) -> bool: ...
    def __getitem__(self, key: str, /) -> npt.NDArray[Any]: ...
    def keys(self) -> Any: ...
    @property
    def buffer(self) -> Buffer: ...
    @property
    def address(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def index(self) -> int: ...

@final
class RingBatch:
    """A published batch a consumer holds."""

    def release(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        *_args: type[BaseException] | BaseException | TracebackType | None,
    ) -> bool: ...
    def __getitem__(self, key: str, /) -> npt.NDArray[Any]: ...
    def keys(self) -> Any: ...
    def arrays(self) -> dict[str, npt.NDArray[Any]]: ...
    @property
    def buffer(self) -> Buffer: ...
    @property
    def seq(self) -> int: ...
    @property
    def redelivered(self) -> bool: ...
    @property
    def address(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def index(self) -> int: ...

def ascontiguous(
    a: Any, dtype: npt.DTypeLike | None = None, out: npt.NDArray[Any] | None = None
) -> npt.NDArray[Any]: ...

class _FloatFormat(TypedDict):
    signed: bool
    exponent_bits: int
    mantissa_bits: int
    bias: int
    subnormals: bool
    specials: Literal["ieee", "nan_only"]
    rounding: Literal["nearest_even", "nearest_away"]

class _DTypeInfo(TypedDict):
    name: str
    code: str
    spellings: tuple[str, ...]
    size: int
    kind: str
    ml_dtypes: str | None
    safetensors: str
    npy: bool
    dlpack: tuple[int, int]
    js_array: str
    float: _FloatFormat | None

def dtypes() -> list[_DTypeInfo]:
    """The core's dtype table, one dict per dtype in the table's order."""

def error_kinds() -> list[tuple[str, str, type[BaseException]]]:
    """The core's table of error kinds: (kind, class name, class) for each."""

def quoted(text: str, keep: int, style: str) -> str:
    """``text`` as the core's one quoting helper writes it in ``style``
    (``"name"``, ``"header"``, ``"argument"``, ``"py_short"``,
    ``"py_short_repr"``, ``"py_quote"``, ``"py_printable"``, ``"py_repr"``),
    keeping about ``keep`` characters."""

def read_header(head: bytes, length: int, base: int = 0) -> dict[str, Any]: ...

class _FileDType(TypedDict):
    name: str
    descr: str
    size: int
    safetensors: str
    npy: bool
    float: bool

def file_dtype(dtype: npt.DTypeLike) -> _FileDType:
    """What the file formats need of `dtype`, from the core's dtype table."""

def read_elements(dtype: npt.DTypeLike, data: bytes, offsets: Sequence[int]) -> list[bool | int | float | None]:
    """The elements of `dtype` that start at each of `offsets` in `data`."""

def read_index(path: str | os.PathLike[str], max_index: int) -> dict[str, Any]:
    """`bytelens::files::read_index`: a sharded checkpoint's index checked against its shards."""

def load_file(
    path: str | os.PathLike[str], mode: str, strict: bool, verify: bool, max_index: int, array_info: Any
) -> tuple[dict[str, Any], list[Any]]:
    """`bytelens::files::load_with`: the report's fields (each array made by
    `array_info(**fields)`) and, in its order, each array (a numpy view, an
    aligned copy, an `_Inflating`, raw `|u1` blocks, or None)."""

def describe_file(path: str | os.PathLike[str], max_index: int, array_info: Any) -> dict[str, Any]:
    """`bytelens::files::inspect_with`: what `bl.inspect` reports, as `FileReport`'s
    fields (each array made by `array_info(**fields)`)."""

@final
class _Inflating:
    """A compressed `.npz` member not read yet."""
    def read(self) -> npt.NDArray[Any]:
        """The member inflated (size and CRC-32 checked) and viewed as its array; once."""
def save_arrays(
    path: str,
    arrays: npt.ArrayLike | Mapping[str, npt.ArrayLike],
    metadata: Mapping[str, str] | None,
    align: int,
) -> None:
    """`bl.save` itself: its arguments checked, `bytelens::files::plan_save`, then
    `bytelens::files::write_atomically` (the GIL released while it writes)."""

def save_file(
    path: str | os.PathLike[str],
    arrays: Sequence[tuple[str, npt.ArrayLike]],
    metadata: Sequence[tuple[str, str]] = ...,
    align: int = 64,
) -> None:
    """`bytelens::files::save` itself: the Rust file layer's writer."""

def inspect_file(path: str | os.PathLike[str]) -> str:
    """`bytelens::files::inspect` itself: its report as `bytelens inspect` prints it."""

def report_text(report: Any) -> str:
    """`str(report)` of a `FileReport`: its fields read into the Rust layer's
    report, whose text `bytelens inspect` prints. A field of the wrong type is
    a TypeError, a ggml type or dtype bytelens lacks a ValueError, each naming
    the field."""

def inspect_raw(
    path: str,
    size: int,
    dtype: npt.DTypeLike | None = None,
    offset: int | None = None,
    shape: _Dims | None = None,
    strides: _Dims | None = None,
    plan: Plan | str | None = None,
) -> dict[str, Any]:
    """`bytelens::files::describe_raw`: a raw file of `size` bytes as a plan's fields and/or one view."""

def elements(
    offset: int, shape: Sequence[int], strides: Sequence[int], lo: int, hi: int, limit: int
) -> tuple[list[tuple[tuple[int, ...], int]], bool]:
    """`bytelens::files::elements`: a view's elements that start in `lo..hi`, in its order."""

# With the `gpu` feature (see __all__ above).
class GpuError(RuntimeError):
    """No GPU adapter, or an error wgpu reported, with wgpu's message."""

@final
class GpuBuffer:
    """Data held on the GPU, in C order: what bytelens.gpu.upload returns."""
    @property
    def nbytes(self) -> int: ...
    @property
    def padded_size(self) -> int: ...
    @property
    def dtype(self) -> Any: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def segments(self) -> int: ...
    @property
    def qtype(self) -> str | None: ...
    @property
    def values_shape(self) -> tuple[int, ...] | None: ...
    def dequantize(self, dtype: Any) -> GpuBuffer: ...
    def download(self) -> npt.NDArray[Any]: ...

@final
class GpuTexture:
    """An image or volume on the GPU: what bytelens.gpu.upload_texture returns."""
    @property
    def format(self) -> str:
        """The texture format, as WebGPU names it ("rgba8unorm")."""
    @property
    def size(self) -> tuple[int, int, int]:
        """(width, height, depth or array layers)."""
    @property
    def dimension(self) -> Literal["2d", "3d"]:
        """"2d" or "3d"."""
    @property
    def shape(self) -> tuple[int, ...]:
        """The uploaded array's shape (what download gives back)."""
    @property
    def dtype(self) -> Any:
        """The numpy dtype of the channels (little-endian)."""
    def download(self) -> npt.NDArray[Any]: ...

def gpu_upload(array: Any, dtype: Any = None) -> GpuBuffer: ...
def gpu_upload_texture(array: Any, format: str | None = None, dimension: str = "2d") -> GpuTexture: ...
def gpu_upload_all(
    arrays: Sequence[Any],
    dtype: Any = None,
    quantized: Sequence[tuple[str, tuple[int, ...]] | None] | None = None,
    names: Sequence[str] | None = None,
    dequantize: str = "cpu",
) -> list[GpuBuffer]: ...
def gpu_adapter_info() -> dict[str, Any]: ...

@final
class Quantized:
    """A quantised GGUF tensor's blocks (see ``bytelens.Quantized``)."""

    def __new__(cls, raw: npt.NDArray[Any], qtype: str, shape: Sequence[int]) -> Self: ...
    @classmethod
    def from_blocks(cls, qtype: str, blocks: Any, shape: Sequence[int]) -> Quantized: ...
    @property
    def qtype(self) -> str: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def values_per_block(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def ndim(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def _raw(self) -> npt.NDArray[Any]: ...
    @property
    def blocks(self) -> npt.NDArray[Any]: ...
    def dequantize(self, dtype: Any = "float32", out: npt.NDArray[Any] | None = None) -> npt.NDArray[Any]: ...
    def __array__(self, dtype: Any = None, copy: bool | None = None) -> npt.NDArray[Any]: ...
    def __reduce__(self) -> tuple[Any, ...]: ...

def dequantize(
    blocks: Any, qtype: str, shape: Sequence[int], dtype: Any = None, out: Any = None
) -> Any:
    """Whole ggml blocks dequantised (see ``bytelens.Quantized.dequantize``)."""

class _GgmlType(TypedDict):
    name: str
    code: int
    block: int
    bytes: int
    quantized: bool
    dequantizes: bool
    fields: list[tuple[str, str, int, int]]

def ggml_type(name: str) -> _GgmlType | None:
    """A ggml block type from the core's table, by name."""
