"""numpy arrays handed to torch and JAX as their tensors, zero-copy where
the framework allows: what ``bytelens.load(..., framework=...)`` returns.

Every bytelens dtype goes, bfloat16 and the float8 formats included (numpy
holds those as ml_dtypes' types, which numpy's own DLPack export refuses).
What arrives zero-copy, measured with torch 2.15 and JAX 0.10 on the CPU:

======================  =========================  ==================================
array                   torch                      JAX
======================  =========================  ==================================
C order, aligned        zero-copy, every dtype     zero-copy if its first byte is at
                                                   a multiple of 64, else XLA copies
transposed / permuted   zero-copy                  as above
sliced (gaps), strided  zero-copy                  copied in C order first (XLA takes
                                                   only compact tensors)
negative strides        copied first (torch has    copied in C order first
                        none)
non-native byte order   copied to native first     copied to native first
read-only               copied (torch has no       zero-copy (JAX arrays are
                        read-only tensors)         immutable)
int64/uint64/float64    zero-copy                  zero-copy with ``jax_enable_x64``;
                                                   else JAX's own rule: 32-bit copies
======================  =========================  ==================================

>>> import numpy as np, ml_dtypes
>>> from bytelens import _frameworks
>>> a = np.arange(6, dtype=np.float32).astype(ml_dtypes.float8_e4m3fn)
>>> _frameworks.to_framework(a, _frameworks.framework_name("np")) is a
True
>>> t = _frameworks.to_framework(a, "torch")
>>> t.dtype, t.data_ptr() == a.ctypes.data
(torch.float8_e4m3fn, True)
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _native
from ._copy import ascontiguous
from ._view import View

if TYPE_CHECKING:  # the stubs' type of a row; the extension has no such class
    from ._native import _DTypeInfo

#: Each spelling ``framework=`` takes, to the framework it names (numpy's
#: and torch's short names as safetensors spells them, Flax as JAX).
_SPELLINGS = {
    "numpy": "numpy",
    "np": "numpy",
    "torch": "torch",
    "pt": "torch",
    "pytorch": "torch",
    "jax": "jax",
    "flax": "jax",
}

#: The pip package that provides each framework.
_PACKAGES = {"torch": "torch", "jax": "jax"}

#: The dtype table's rows by name (numpy's dtype name, or ml_dtypes' type name).
_ROWS = {row["name"]: row for row in _native.dtypes()}

#: JAX (XLA) imports a DLPack tensor without a copy only when its first byte
#: is at a multiple of this (measured with jaxlib 0.10 on the CPU).
JAX_ALIGN = 64


def framework_name(framework: str) -> str:
    """'numpy'|'np' -> 'numpy', 'torch'|'pt'|'pytorch' -> 'torch',
    'jax'|'flax' -> 'jax'; anything else ValueError naming the accepted spellings.

    >>> framework_name("pt")
    'torch'
    """
    name = _SPELLINGS.get(framework) if isinstance(framework, str) else None
    if name is None:
        accepted = ", ".join(repr(s) for s in _SPELLINGS)
        raise ValueError(f"framework must be one of {accepted}, not {framework!r}")
    return name


def to_framework(array: np.ndarray, framework: str) -> Any:
    """The array as a tensor of `framework` (already normalised), zero-copy
    where the framework allows; numpy returns the array itself. Every
    bytelens dtype (bfloat16, float8 via their ml_dtypes numpy types).
    Raises ModuleNotFoundError naming the pip package when the framework
    is not installed.

    torch: ``torch.from_numpy`` of the array's bytes as unsigned integers of
    its itemsize, viewed as the torch dtype of the same name: 3 µs a tensor,
    of which torch's two calls take 1.7 (DLPack through ``bytelens.View``
    gives the same tensor in 8 µs: wrapping the array in a Buffer and a
    Layout costs more than the export). The
    tensor shares the array's memory, so writes to either show in both.
    torch has no read-only tensors, and a write through a tensor into a
    read-only mapping would kill the process, so a read-only array is copied
    (``bytelens.load`` maps files copy-on-write for torch, so its arrays
    arrive writable and are not). An array with negative strides or in the
    non-native byte order is copied too, into C order and native order.

    JAX: ``jax.dlpack.from_dlpack`` of a ``bytelens.View`` of the array,
    read-only arrays included (JAX never writes its arrays; do not donate
    one made from a read-only mapping to a jitted function). XLA copies
    when the first byte is not at a multiple of 64 (``JAX_ALIGN``);
    an array that is not compact (a slice with gaps, a broadcast, negative
    strides) or not in native byte order is copied into C order first.
    Without ``jax_enable_x64``, JAX makes 32-bit copies of 64-bit dtypes,
    as it does for every array.
    """
    if framework == "numpy":
        return array
    row = _ROWS.get(array.dtype.name) if isinstance(array, np.ndarray) else None
    if row is None:
        what = f"dtype {array.dtype}" if isinstance(array, np.ndarray) else type(array).__name__
        raise TypeError(f"to_framework takes a numpy array of a bytelens dtype, not {what}")
    if framework == "torch":
        return _to_torch(array, row)
    if framework == "jax":
        return _to_jax(array)
    raise ValueError(f'framework must be "numpy", "torch" or "jax" (see framework_name), not {framework!r}')


#: The frameworks imported so far.
_MODULES: dict[str, ModuleType] = {}


def _import(framework: str) -> ModuleType:
    module = _MODULES.get(framework)
    if module is not None:
        return module
    try:
        module = _MODULES[framework] = importlib.import_module(framework)
        return module
    except ModuleNotFoundError as err:
        package = _PACKAGES[framework]
        raise ModuleNotFoundError(
            f"framework={framework!r} needs {framework}: install it with `pip install {package}`",
            name=framework,
        ) from err


#: Each numpy dtype's torch dtype, and the numpy dtype torch.from_numpy
#: takes for its bytes (None: the dtype itself), made once per dtype.
_TORCH_DTYPES: dict[np.dtype[Any], tuple[Any, np.dtype[Any] | None]] = {}


def _torch_dtypes(torch: ModuleType, dtype: np.dtype[Any], row: _DTypeInfo) -> tuple[Any, np.dtype[Any] | None]:
    found = _TORCH_DTYPES.get(dtype)
    if found is None:
        torch_dtype = getattr(torch, row["name"], None)
        if torch_dtype is None:
            raise TypeError(f"torch {torch.__version__} has no {row['name']}: upgrade it with `pip install -U torch`")
        # numpy has no buffer format for ml_dtypes' types, which torch.from_numpy
        # refuses; unsigned integers of the same size are the same bytes.
        raw = np.dtype(f"u{row['size']}") if row["ml_dtypes"] else None
        found = _TORCH_DTYPES[dtype] = (torch_dtype, raw)
    return found


def torch_copies(array: np.ndarray) -> str | None:
    """Why ``to_framework(array, "torch")`` would hand torch a copy rather
    than the array's memory (None where it would not): torch has no
    read-only tensors, no other byte order and no negative strides."""
    if not array.flags.writeable:
        return "it is read-only, and torch has no read-only tensors"
    if not array.dtype.isnative:
        return f"its byte order is not this machine's ({array.dtype.str}), and torch has only native order"
    if array.ndim and min(array.strides) < 0:
        return "it has negative strides, which torch lacks"
    return None


def _to_torch(array: np.ndarray, row: _DTypeInfo) -> Any:
    torch = _import("torch")
    if torch_copies(array) is not None:
        array = ascontiguous(array)
    torch_dtype, raw = _torch_dtypes(torch, array.dtype, row)
    if raw is None:
        return torch.from_numpy(array)
    return torch.from_numpy(array.view(raw)).view(torch_dtype)


class _Immutable:
    """A View for a consumer that never writes to what it imports (JAX,
    whose arrays are immutable, and which takes only legacy capsules): a
    read-only view goes in a legacy capsule, which cannot mark it so."""

    __slots__ = ("view",)

    def __init__(self, view: View) -> None:
        self.view = view

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        return self.view.buffer._dlpack_view(
            self.view.layout,
            stream=stream,
            max_version=max_version,
            dl_device=dl_device,
            copy=copy,
            legacy_read_only=True,
        )

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.view.__dlpack_device__()


def _compact(array: np.ndarray) -> bool:
    """Whether the elements fill their span without gaps or repeats, in
    some order of the axes (what XLA imports: a C-order array, transposed)."""
    axes = sorted((stride, n) for n, stride in zip(array.shape, array.strides) if n != 1)
    step = array.itemsize
    for stride, n in axes:
        if stride != step:
            return False
        step *= n
    return True


def _to_jax(array: np.ndarray) -> Any:
    jax = _import("jax")
    import jax.dlpack

    if not array.dtype.isnative or not _compact(array):
        array = ascontiguous(array)
    return jax.dlpack.from_dlpack(_Immutable(View.of(array)))


class _Converter:
    """Hands an array out as a ``framework`` tensor: what ``bytelens.load``
    (``_files``) calls on each array it returns for torch or JAX."""

    def __init__(self, framework: str) -> None:
        self.framework = framework

    def __call__(self, array: np.ndarray) -> Any:
        return to_framework(array, self.framework)

    def loses_writes(self, array: np.ndarray) -> str | None:
        """Why a tensor of ``array`` would be a writable copy, whose writes
        under ``mode="r+"`` could never reach the file (None where it
        shares the file's memory, or cannot be written at all). JAX's
        arrays are immutable, so only torch's copies can lose a write."""
        if self.framework != "torch":
            return None
        return torch_copies(array)


def converter(framework: object) -> _Converter | None:
    """None for numpy's arrays as they are, else the :class:`_Converter` to
    the framework ``framework`` names (safetensors' ``"pt"`` and ``"np"``
    too): ``bytelens.load``'s ``framework=``. torch and JAX are imported
    only when a tensor is made."""
    if framework == "numpy":
        return None
    if not isinstance(framework, str):
        raise TypeError(f'framework is a str ("numpy", "torch", "jax"), not {type(framework).__name__}')
    name = framework_name(framework)
    return None if name == "numpy" else _Converter(name)
