//! DLPack in both directions: `Buffer.__dlpack__` exports the buffer as a
//! one-dimensional uint8 tensor, `bytelens.View.__dlpack__` a view as a
//! tensor of its dtype, shape and strides (one export path, [`export`], for
//! both); `Buffer.from_dlpack` wraps any CPU tensor.
//!
//! The structs follow `dlpack.h` (v1.0: `DLManagedTensorVersioned`, and the
//! legacy `DLManagedTensor`). A capsule named `dltensor[_versioned]` owns
//! its tensor until a consumer renames it `used_dltensor[_versioned]`; from
//! then on the consumer calls the deleter, exactly once.

use std::ffi::{CStr, c_void};
use std::ptr;

use pyo3::exceptions::{PyBufferError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::memory::{Export, Foreign, Memory, Storage, span};
use bytelens::{ByteOrder, DType, Layout, MAX_NDIM};

/// `kDLCPU`.
pub(crate) const DEVICE_CPU: i32 = 1;
const FLAG_READ_ONLY: u64 = 1 << 0;
const FLAG_IS_COPIED: u64 = 1 << 1;

const VERSIONED: &CStr = c"dltensor_versioned";
const USED_VERSIONED: &CStr = c"used_dltensor_versioned";
const LEGACY: &CStr = c"dltensor";
const USED_LEGACY: &CStr = c"used_dltensor";

#[repr(C)]
#[derive(Clone, Copy)]
struct Device {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct Tensor {
    data: *mut c_void,
    device: Device,
    ndim: i32,
    dtype: DataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct Version {
    major: u32,
    minor: u32,
}

#[repr(C)]
struct ManagedVersioned {
    version: Version,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut ManagedVersioned)>,
    flags: u64,
    dl_tensor: Tensor,
}

#[repr(C)]
struct ManagedLegacy {
    dl_tensor: Tensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut ManagedLegacy)>,
}

/// An exported tensor and all it owns, in one allocation: a reference to
/// the buffer's `Export` (dropped by the deleter), then, right after the
/// struct, its `ndim` shape entries and `ndim` strides (so a view of any
/// rank costs one small allocation, as a one-dimensional Buffer does).
#[repr(C)]
struct Exported<M> {
    /// First, so that a pointer to `Exported<M>` is a pointer to `M`.
    managed: M,
    /// Keeps the memory alive and counted.
    export: Py<Export>,
}

/// The two managed-tensor structs, as far as exporting needs them.
trait Managed {
    fn tensor(&mut self) -> &mut Tensor;
    fn set_context(&mut self, context: *mut c_void);
}

impl Managed for ManagedVersioned {
    fn tensor(&mut self) -> &mut Tensor {
        &mut self.dl_tensor
    }
    fn set_context(&mut self, context: *mut c_void) {
        self.manager_ctx = context;
    }
}

impl Managed for ManagedLegacy {
    fn tensor(&mut self) -> &mut Tensor {
        &mut self.dl_tensor
    }
    fn set_context(&mut self, context: *mut c_void) {
        self.manager_ctx = context;
    }
}

/// Moves `exported` and `parts`' shape and strides to the interpreter's heap
/// (pymalloc: a DLPack export lives briefly, and glibc's malloc and free
/// cost more than the rest of the export), points its tensor at them, and
/// returns the managed tensor's address. Called holding the GIL, as
/// `PyMem_Malloc` must be.
fn leak<M: Managed>(py: Python<'_>, exported: Exported<M>, parts: &Parts) -> PyResult<*mut c_void> {
    // pymalloc's blocks are aligned to 16 bytes on 64-bit systems, 8 on
    // 32-bit ones; `Exported` and the i64s after it need the alignment of
    // an i64 or a pointer, and start at a multiple of it (the struct's size).
    const { assert!(align_of::<Exported<M>>() <= 8 && align_of::<i64>() <= 8) };
    const { assert!(size_of::<Exported<M>>().is_multiple_of(align_of::<i64>())) };
    let ndim = parts.ndim;
    let size = size_of::<Exported<M>>() + 2 * ndim * size_of::<i64>();
    // SAFETY: the GIL is held (`py`); the size is that of a non-empty struct
    // and at most 2 * MAX_NDIM i64s more.
    let raw = unsafe { ffi::PyMem_Malloc(size) }.cast::<Exported<M>>();
    if raw.is_null() {
        drop(exported); // its reference, dropped holding the GIL
        return Err(PyErr::fetch(py));
    }
    // SAFETY: `raw` is a fresh allocation of `size` bytes, aligned for an
    // `Exported<M>` (checked above), uniquely owned here: the struct fills
    // its first `size_of::<Exported<M>>()` bytes and `2 * ndim` i64s the rest
    // (aligned: the struct's size is a multiple of 8). The pointers stored
    // into it stay valid until `free` releases the whole allocation at once.
    unsafe {
        raw.write(exported);
        let dims = raw.cast::<u8>().add(size_of::<Exported<M>>()).cast::<i64>();
        ptr::copy_nonoverlapping(parts.shape.as_ptr(), dims, ndim);
        ptr::copy_nonoverlapping(parts.strides.as_ptr(), dims.add(ndim), ndim);
        let exported = &mut *raw;
        exported.managed.set_context(raw.cast());
        let tensor = exported.managed.tensor();
        tensor.shape = dims;
        tensor.strides = dims.add(ndim);
    }
    Ok(raw.cast())
}

/// What one export describes: the address of its first element, its dtype,
/// and its shape and strides in elements, as DLPack counts them.
pub(crate) struct Parts {
    data: *mut u8,
    dtype: DType,
    ndim: usize,
    shape: [i64; MAX_NDIM],
    strides: [i64; MAX_NDIM],
    readonly: bool,
}

impl Parts {
    /// `len` bytes at `data` as one-dimensional uint8: how a Buffer exports.
    pub(crate) fn bytes(data: *mut u8, len: usize, readonly: bool) -> Parts {
        let mut parts = Parts {
            data,
            dtype: DType::U8,
            ndim: 1,
            shape: [0; MAX_NDIM],
            strides: [0; MAX_NDIM],
            readonly,
        };
        // A buffer's length fits in isize (every allocation's does).
        parts.shape[0] = len as i64;
        parts.strides[0] = 1;
        parts
    }

    /// The elements of `layout` (checked against the memory at `base`)
    /// as DLPack describes them, or a `BufferError` saying why DLPack cannot
    /// describe them without a copy: the view is in the non-native byte
    /// order (DLPack has no byte order), a byte stride is not a multiple of
    /// the itemsize (DLPack counts strides in elements), or the first element
    /// is not aligned for the dtype (consumers read elements in place).
    pub(crate) fn view(layout: &Layout, base: *mut u8, readonly: bool) -> PyResult<Parts> {
        let dtype = layout.dtype();
        let size = dtype.size();
        let refuse = |why: String| {
            Err(PyBufferError::new_err(format!(
                "DLPack cannot describe this {dtype} view without a copy: {why}; \
                 pass copy=True for a C-contiguous copy in native byte order"
            )))
        };
        if size > 1 && layout.byte_order() != ByteOrder::NATIVE {
            return refuse(format!(
                "it is {} and DLPack has no byte order (its tensors are in the machine's, {})",
                order_name(layout.byte_order()),
                order_name(ByteOrder::NATIVE)
            ));
        }
        let mut parts = Parts {
            data: base.wrapping_offset(layout.offset()),
            dtype,
            ndim: layout.ndim(),
            shape: [0; MAX_NDIM],
            strides: [0; MAX_NDIM],
            readonly: readonly || layout.is_read_only(),
        };
        if layout.size() > 0 && !(parts.data as usize).is_multiple_of(size) {
            return refuse(format!(
                "its first element, at address {:#x}, is not a multiple of {size}, the \
                 alignment of {dtype}",
                parts.data as usize
            ));
        }
        for (axis, (&n, &stride)) in layout.shape().iter().zip(layout.strides()).enumerate() {
            if stride % size as isize != 0 {
                return refuse(format!(
                    "its stride {stride} on axis {axis} is not a multiple of {size}, the size \
                     of {dtype}, and DLPack counts strides in elements"
                ));
            }
            // A checked layout's lengths and strides fit in isize.
            parts.shape[axis] = n as i64;
            parts.strides[axis] = (stride / size as isize) as i64;
        }
        Ok(parts)
    }
}

/// A byte order as a person names it.
pub(crate) fn order_name(order: ByteOrder) -> &'static str {
    match order {
        ByteOrder::Little => "little-endian",
        ByteOrder::Big => "big-endian",
    }
}

/// Checks the arguments of a `__dlpack__` call on a CPU `what` (`"Buffer"`,
/// `"View"`), and says whether the consumer takes versioned capsules.
pub(crate) fn versioned(
    what: &str,
    stream: Option<&Bound<'_, PyAny>>,
    max_version: Option<(u32, u32)>,
    dl_device: Option<(i32, i32)>,
) -> PyResult<bool> {
    if stream.is_some_and(|s| !s.is_none()) {
        return Err(PyBufferError::new_err(format!(
            "a CPU {what} takes stream=None"
        )));
    }
    if let Some(device) = dl_device
        && device != (DEVICE_CPU, 0)
    {
        return Err(PyBufferError::new_err(format!(
            "a {what} lives in CPU memory (device (1, 0)), not on device {device:?}"
        )));
    }
    Ok(max_version.is_some_and(|(major, _)| major >= 1))
}

/// As numpy does: a legacy capsule cannot say "read-only", and its consumer
/// might write, so read-only memory goes only in versioned ones.
pub(crate) fn refuse_read_only_legacy(what: &str) -> PyErr {
    PyBufferError::new_err(format!(
        "a read-only {what} is exported only as a versioned DLPack capsule \
         (pass max_version=(1, 0)), since legacy capsules cannot mark memory read-only"
    ))
}

/// Exports `parts`, memory that `export` (a buffer's, taken while it is open)
/// keeps alive, as a DLPack capsule that holds `export`, and so counts as an
/// export of the buffer. The dtype's DLPack code and width are its row of
/// the dtype table.
pub(crate) fn export<'py>(
    export: Bound<'py, Export>,
    parts: &Parts,
    versioned: bool,
    copied: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let py = export.py();
    let export = export.unbind();
    let (code, bits) = parts.dtype.info().dlpack;
    let tensor = Tensor {
        data: parts.data.cast(),
        device: Device {
            device_type: DEVICE_CPU,
            device_id: 0,
        },
        // At most MAX_NDIM (32).
        ndim: parts.ndim as i32,
        dtype: DataType {
            code,
            bits,
            lanes: 1,
        },
        shape: ptr::null_mut(),
        strides: ptr::null_mut(),
        byte_offset: 0,
    };
    let (pointer, name, destructor): (*mut c_void, &CStr, ffi::PyCapsule_Destructor) = if versioned
    {
        let mut flags = if copied { FLAG_IS_COPIED } else { 0 };
        if parts.readonly {
            flags |= FLAG_READ_ONLY;
        }
        let managed = ManagedVersioned {
            version: Version { major: 1, minor: 0 },
            manager_ctx: ptr::null_mut(),
            deleter: Some(delete_versioned),
            flags,
            dl_tensor: tensor,
        };
        let exported = Exported { managed, export };
        (
            leak(py, exported, parts)?,
            VERSIONED,
            destroy_versioned_capsule,
        )
    } else {
        let managed = ManagedLegacy {
            dl_tensor: tensor,
            manager_ctx: ptr::null_mut(),
            deleter: Some(delete_legacy),
        };
        let exported = Exported { managed, export };
        (leak(py, exported, parts)?, LEGACY, destroy_legacy_capsule)
    };
    // SAFETY: `pointer` is a live, leaked managed tensor and `name` a 'static C
    // string. On failure no capsule owns the tensor, so it is freed here.
    unsafe {
        let capsule = ffi::PyCapsule_New(pointer, name.as_ptr(), Some(destructor));
        if capsule.is_null() {
            if versioned {
                delete_versioned(pointer.cast());
            } else {
                delete_legacy(pointer.cast());
            }
            return Err(PyErr::fetch(py));
        }
        Ok(Bound::from_owned_ptr(py, capsule))
    }
}

/// Frees what [`leak`] leaked, releasing the buffer's export count.
///
/// # Safety
/// `raw` must come from [`leak`] and be freed once.
unsafe fn free<M>(raw: *mut Exported<M>) {
    // Consumers (numpy) call the deleter holding the GIL, when their array
    // goes: then `try_attach` finds it held and the reference is dropped and
    // the memory freed here and now. Dropping a reference and freeing
    // pymalloc's memory need the interpreter; at interpreter exit there may
    // be none to attach to (`try_attach` returns None, where `attach` would
    // panic inside this `extern "C"` caller and abort), and then both are
    // leaked on purpose. Attaching (PyGILState_Ensure and Release, and
    // pyo3's bookkeeping) costs about 10 ns of the ~100 of `buf.__dlpack__()`
    // and its capsule's end: the stable ABI has no `PyGILState_Check` to
    // skip it with.
    Python::try_attach(|_py| {
        // SAFETY: attached, so the GIL is held; `raw` is the live allocation
        // `leak` made, read out and freed once, and its reference (the one
        // strong reference it owned) dropped holding the GIL.
        unsafe {
            let exported = raw.read();
            ffi::PyMem_Free(raw.cast());
            drop(exported);
        }
    });
}

unsafe extern "C" fn delete_versioned(managed: *mut ManagedVersioned) {
    // SAFETY: DLPack calls the deleter once, with the tensor `export` leaked,
    // which is the first field of an `Exported` (repr(C)).
    unsafe { free(managed.cast::<Exported<ManagedVersioned>>()) }
}

unsafe extern "C" fn delete_legacy(managed: *mut ManagedLegacy) {
    // SAFETY: as in `delete_versioned`.
    unsafe { free(managed.cast::<Exported<ManagedLegacy>>()) }
}

/// A capsule that no consumer renamed still owns its tensor.
unsafe extern "C" fn destroy_versioned_capsule(capsule: *mut ffi::PyObject) {
    // SAFETY: called by the interpreter on a capsule we created. A consumer that
    // took the tensor renamed the capsule, so the name check skips it; otherwise the
    // pointer is our managed tensor, deleted once here.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, VERSIONED.as_ptr()) == 1 {
            let managed = ffi::PyCapsule_GetPointer(capsule, VERSIONED.as_ptr());
            delete_versioned(managed.cast());
        }
    }
}

unsafe extern "C" fn destroy_legacy_capsule(capsule: *mut ffi::PyObject) {
    // SAFETY: as in `destroy_versioned_capsule`.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, LEGACY.as_ptr()) == 1 {
            let managed = ffi::PyCapsule_GetPointer(capsule, LEGACY.as_ptr());
            delete_legacy(managed.cast());
        }
    }
}

/// Runs a consumed versioned tensor's deleter: the release function of its
/// [`Foreign`].
///
/// # Safety
/// `managed` must be a `ManagedVersioned` that `import` consumed, deleted
/// only here (once).
unsafe fn release_versioned(managed: *mut c_void) {
    let managed = managed.cast::<ManagedVersioned>();
    // SAFETY: the caller passes a live consumed tensor, once.
    unsafe {
        if let Some(deleter) = (*managed).deleter {
            deleter(managed);
        }
    }
}

/// As [`release_versioned`], for a legacy tensor.
///
/// # Safety
/// As for [`release_versioned`], with a `ManagedLegacy`.
unsafe fn release_legacy(managed: *mut c_void) {
    let managed = managed.cast::<ManagedLegacy>();
    // SAFETY: as in `release_versioned`.
    unsafe {
        if let Some(deleter) = (*managed).deleter {
            deleter(managed);
        }
    }
}

/// `Buffer.from_dlpack(obj)`: the bytes `obj`'s tensor spans, zero-copy.
///
/// Legacy capsules cannot say whether the memory may be written, so like
/// numpy 2 bytelens treats them as read-only.
pub(crate) fn import(obj: &Bound<'_, PyAny>) -> PyResult<Memory> {
    let py = obj.py();
    let kwargs = PyDict::new(py);
    kwargs.set_item("max_version", (1, 0))?;
    let capsule = match obj.call_method("__dlpack__", (), Some(&kwargs)) {
        Ok(capsule) => capsule,
        Err(err) if err.is_instance_of::<PyTypeError>(py) => obj.call_method0("__dlpack__")?,
        Err(err) => return Err(err),
    };
    let raw = capsule.as_ptr();
    // SAFETY: `raw` is a live object; the capsule checks never raise. A valid
    // capsule's pointer is a managed tensor that stays alive until its deleter
    // runs, which after the rename below only the `Foreign`'s release does. DLPack
    // producers must accept the deleter being called from any thread.
    unsafe {
        let (managed, versioned, tensor, readonly) =
            if ffi::PyCapsule_IsValid(raw, VERSIONED.as_ptr()) == 1 {
                let managed =
                    ffi::PyCapsule_GetPointer(raw, VERSIONED.as_ptr()).cast::<ManagedVersioned>();
                if (*managed).version.major != 1 {
                    return Err(PyBufferError::new_err(format!(
                        "DLPack version {}.{} is not supported (bytelens reads 1.x)",
                        (*managed).version.major,
                        (*managed).version.minor
                    )));
                }
                let readonly = (*managed).flags & FLAG_READ_ONLY != 0;
                (
                    managed.cast::<c_void>(),
                    true,
                    &(*managed).dl_tensor,
                    readonly,
                )
            } else if ffi::PyCapsule_IsValid(raw, LEGACY.as_ptr()) == 1 {
                let managed =
                    ffi::PyCapsule_GetPointer(raw, LEGACY.as_ptr()).cast::<ManagedLegacy>();
                (managed.cast::<c_void>(), false, &(*managed).dl_tensor, true)
            } else {
                return Err(PyTypeError::new_err(
                    "__dlpack__ returned something that is not an unused DLPack capsule",
                ));
            };
        let (address, len) = tensor_span(py, tensor)?;
        let used = if versioned {
            USED_VERSIONED
        } else {
            USED_LEGACY
        };
        if ffi::PyCapsule_SetName(raw, used.as_ptr()) < 0 {
            return Err(PyErr::fetch(py));
        }
        let release = if versioned {
            release_versioned
        } else {
            release_legacy
        };
        let storage = Storage::Tensor(Foreign::new(managed, release));
        Ok(Memory::new(storage, address, len, readonly))
    }
}

/// The bytes a CPU tensor spans: `(address of the lowest byte, length)`.
///
/// # Safety
/// `tensor` must be a live DLPack tensor whose shape and strides hold `ndim` entries.
unsafe fn tensor_span(py: Python<'_>, tensor: &Tensor) -> PyResult<(*mut u8, usize)> {
    if tensor.device.device_type != DEVICE_CPU {
        return Err(PyBufferError::new_err(format!(
            "the tensor is on DLPack device type {}; only CPU memory (type 1) can be wrapped",
            tensor.device.device_type
        )));
    }
    let DataType { bits, lanes, .. } = tensor.dtype;
    let itemsize_bits = usize::from(bits) * usize::from(lanes);
    if itemsize_bits == 0 || itemsize_bits % 8 != 0 {
        return Err(PyBufferError::new_err(format!(
            "elements of {bits} bits x {lanes} lanes are not whole bytes"
        )));
    }
    let itemsize = itemsize_bits / 8;
    let ndim = usize::try_from(tensor.ndim).unwrap_or(0);
    let shape: &[i64] = if ndim == 0 {
        &[]
    } else {
        // SAFETY: the caller guarantees `ndim` entries behind `shape` (and behind
        // `strides` when it is not null, as DLPack allows for compact tensors).
        unsafe { std::slice::from_raw_parts(tensor.shape, ndim) }
    };
    let shape: Vec<usize> = shape
        .iter()
        .map(|&n| usize::try_from(n).unwrap_or(usize::MAX))
        .collect();
    let strides: Vec<isize> = if tensor.strides.is_null() {
        let mut strides = vec![0isize; ndim];
        let mut step = itemsize as isize;
        for axis in (0..ndim).rev() {
            strides[axis] = step;
            step = step.saturating_mul(shape[axis].max(1) as isize);
        }
        strides
    } else {
        // SAFETY: as above.
        let strides = unsafe { std::slice::from_raw_parts(tensor.strides, ndim) };
        strides
            .iter()
            .map(|&s| (s as isize).saturating_mul(itemsize as isize))
            .collect()
    };
    let (start, len) = span(py, &shape, &strides, itemsize)?;
    let first = tensor
        .data
        .cast::<u8>()
        .wrapping_add(tensor.byte_offset as usize);
    Ok((first.wrapping_offset(start), len))
}
