"""Helpers shared by the bytelens tests: numpy-side oracles, DLPack capsule
inspection through ctypes, and resident-memory measurement.

Nothing here imports bytelens when imported (gpu_or_skip does when called),
so the helpers can be checked with numpy alone.
"""

import ctypes
import math
import os
import signal
import struct
import subprocess
import sys
import textwrap
import threading
import time

import ml_dtypes
import numpy as np

NUMPY2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"

BF16 = np.dtype(ml_dtypes.bfloat16)
BF16_BE = BF16.newbyteorder(">")


def gpu_or_skip():
    """bytelens.gpu, where there is an adapter (lavapipe in CI, where its
    absence fails, as in test_gpu.py); imported here only when called."""
    import pytest
    from bytelens import gpu

    try:
        gpu.adapter_info()
    except gpu.GpuError as err:
        if os.environ.get("CI") or os.environ.get("BYTELENS_REQUIRE_GPU"):
            raise
        pytest.skip(f"no GPU adapter: {err}")
    return gpu


def frameworks_required():
    """Whether this venv was made to hold torch and JAX (and gguf-py), so
    that their tests must fail rather than skip without them: the xtask writes what it
    installed into ``.bytelens-requirements``, and venv-np2 is the one it
    installs them into."""
    marker = os.path.join(sys.prefix, ".bytelens-requirements")
    try:
        with open(marker) as f:
            installed = f.read().split()
    except OSError:
        installed = []
    return any(p.startswith("torch==") for p in installed) or os.path.basename(sys.prefix) == "venv-np2"


def run_child(code, *args, timeout=60):
    """Runs `code` in a fresh interpreter with `args` in sys.argv; returns
    (returncode, output). A child still running at `timeout` fails the test
    (subprocess.TimeoutExpired), so a hang cannot hang the suite."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return done.returncode, done.stdout + done.stderr


def process_alive(pid):
    """Whether process `pid` runs; a zombie (dead, not yet reaped) does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def run_script(body, leftovers, timeout=60):
    """Runs `body` in a new interpreter whose path has the tests' folder
    first (so it can import their helpers) and its own session; a hang is a
    failure after `timeout` seconds, its processes killed. `leftovers(pid)`
    lists what the child may leave in /dev/shm: removed, then it must be
    empty. Returns (returncode, stdout, stderr)."""
    import pytest

    script = "import sys\nsys.path.insert(0, %r)\n" % os.path.dirname(__file__) + textwrap.dedent(body)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=env, start_new_session=True,
    )
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        out, err = child.communicate()
        pytest.fail(f"hung for {timeout} s:\n{out}\n{err}")
    finally:
        left = leftovers(child.pid)
        for path in left:
            os.unlink(path)
    assert left == [], "segments left behind"
    return child.returncode, out, err


def other_thread_runs_during(call, tries=1):
    """Calls `call()` up to `tries` times while another thread counts ticks;
    returns the last result, and asserts that the other thread ran in the
    middle half of some call (so the GIL was released, not only around it)."""
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(time.perf_counter())

    t = threading.Thread(target=tick)
    t.start()
    try:
        time.sleep(0.01)
        for _ in range(tries):
            start = time.perf_counter()
            result = call()
            end = time.perf_counter()
            quarter = (end - start) / 4
            if any(start + quarter < x < end - quarter for x in ticks):
                return result
    finally:
        stop.set()
        t.join()
    raise AssertionError(f"no other thread ran during {tries} calls, the last {end - start:.3f} s")


def unsupported_arrays():
    """Arrays of dtypes bytelens does not move: objects, structs, complex, strings."""
    return [
        np.array(["a", "b"], dtype=object),
        np.zeros(3, dtype=[("x", "<i4"), ("y", "<f4")]),
        np.zeros(3, dtype=np.complex64),
        np.array(["ab"]),
    ]


# --- layouts -----------------------------------------------------------------


def c_strides(shape, itemsize):
    """C-order byte strides, as numpy and generate.py compute them (a zero length counts as one)."""
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.insert(0, step)
        step *= max(n, 1)
    return tuple(strides)


def size_of(shape):
    return math.prod(shape)


def byte_span(offset, shape, strides, itemsize):
    """(first byte, one past the last byte) the layout touches; (offset, offset) when empty."""
    if size_of(shape) == 0:
        return offset, offset
    lo = hi = offset
    for n, s in zip(shape, strides):
        extent = s * (n - 1)
        if extent < 0:
            lo += extent
        else:
            hi += extent
    return lo, hi + itemsize


def in_bounds(offset, shape, strides, itemsize, nbytes):
    lo, hi = byte_span(offset, shape, strides, itemsize)
    return 0 <= lo and hi <= nbytes


def aligned(offset, shape, strides, align):
    """bytelens' (and generate.py's) rule: an empty view is always aligned; otherwise
    the offset and the stride of every axis longer than 1 must divide by the alignment."""
    if size_of(shape) == 0:
        return True
    return offset % align == 0 and all(s % align == 0 for n, s in zip(shape, strides) if n > 1)


def broadcasting(shape, strides):
    """True when some axis of length > 1 has stride 0 (elements share bytes)."""
    return any(n > 1 and s == 0 for n, s in zip(shape, strides))


# --- values ------------------------------------------------------------------


def raw(arr):
    """The array's elements as unsigned integers of the same size: a bitwise view
    (so NaN payloads, -0.0 and bool bytes other than 0/1 compare exactly)."""
    return arr.view(np.dtype(f"u{arr.dtype.itemsize}"))


def bitwise_equal(a, b):
    return a.shape == b.shape and np.array_equal(raw(a), raw(b))


def float_bits(x):
    return struct.unpack("<Q", struct.pack("<d", float(x)))[0]


# --- memory ------------------------------------------------------------------


def rss_bytes():
    """Resident set size of this process, from /proc/self/statm."""
    with open("/proc/self/statm") as f:
        resident_pages = int(f.read().split()[1])
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


def address_of(arr):
    return arr.__array_interface__["data"][0]


# --- DLPack capsules -----------------------------------------------------------

_api = ctypes.pythonapi
_api.PyCapsule_GetName.restype = ctypes.c_char_p
_api.PyCapsule_GetName.argtypes = [ctypes.py_object]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_void_p]

# PyCapsule_SetName keeps the pointer, so the names it is given must live forever.
_NAMES = {n: ctypes.create_string_buffer(n) for n in (b"used_dltensor", b"used_dltensor_versioned")}

DLPACK_FLAG_READ_ONLY = 1 << 0
DLPACK_FLAG_IS_COPIED = 1 << 1
KDL_CPU = 1
KDL_UINT = 1


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    pass


DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))),
]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


DLManagedTensorVersioned._fields_ = [
    ("version", DLPackVersion),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))),
    ("flags", ctypes.c_uint64),
    ("dl_tensor", DLTensor),
]


def capsule_name(cap):
    name = _api.PyCapsule_GetName(cap)
    return None if name is None else name.decode()


def capsule_is_valid(cap, name):
    return bool(_api.PyCapsule_IsValid(cap, name.encode()))


def managed_tensor(cap):
    """The DLManagedTensor(Versioned) struct a live (unconsumed) capsule points to."""
    name = capsule_name(cap)
    ptr = _api.PyCapsule_GetPointer(cap, name.encode())
    assert ptr, f"capsule {name!r} holds a null pointer"
    kind = DLManagedTensorVersioned if name == "dltensor_versioned" else DLManagedTensor
    return ctypes.cast(ptr, ctypes.POINTER(kind)).contents, ptr


def consume(cap):
    """Does what a DLPack consumer does: renames the capsule to used_* (so the
    capsule's own destructor must leave the tensor alone) and, standing in for
    the consumer finishing with the data, calls the tensor's deleter once."""
    name = capsule_name(cap)
    mt, ptr = managed_tensor(cap)
    used = _NAMES[b"used_" + name.encode()]
    assert _api.PyCapsule_SetName(cap, ctypes.addressof(used)) == 0
    assert capsule_name(cap) == "used_" + name
    assert mt.deleter, "the producer must provide a deleter"
    mt.deleter(ctypes.cast(ptr, ctypes.POINTER(type(mt))))


def tensor_shape(t):
    return tuple(t.shape[i] for i in range(t.ndim))


def tensor_strides(t):
    return None if not t.strides else tuple(t.strides[i] for i in range(t.ndim))


class DLPackProducer:
    """Hands a ready-made capsule to np.from_dlpack (any keyword arguments are recorded)."""

    def __init__(self, capsule, device=(KDL_CPU, 0)):
        self.capsule = capsule
        self.device = device
        self.kwargs = None

    def __dlpack__(self, **kwargs):
        self.kwargs = kwargs
        return self.capsule

    def __dlpack_device__(self):
        return self.device


class ArrayInterface:
    """An object with only an __array_interface__, so numpy must use it."""

    def __init__(self, interface):
        self.__array_interface__ = interface
