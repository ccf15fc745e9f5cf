//! `bytelens.Buffer`: memory that numpy, memoryview, DLPack and pickle
//! share without copying, and that is never freed while any of them can
//! still reach it.
//!
//! The memory, who owns it and the [`Export`] that keeps it alive and
//! counts its exports are in [`super::memory`]; this module is the Python
//! class over them and its numpy, buffer-protocol, DLPack and pickle bridges.

use std::ffi::c_int;
use std::ptr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use numpy::npyffi::{self, NPY_ARRAY_WRITEABLE, NpyTypes, PY_ARRAY_API, npy_intp};
use numpy::{PyArrayDescr, PyArrayDescrMethods};
use pyo3::buffer::PyUntypedBuffer;
use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyMemoryView, PyTuple, PyType};

use super::dlpack;
use super::dtype::numpy_descr;
use super::error::{IntoPyErr, PyErrResult, error_of_kind};
use super::layout::{Int, PyLayout, PyPlan, resolve_view};
use super::memory::{Export, Memory, Storage, fill_buffer, span};
use bytelens::{ErrorKind, Layout, LayoutError, MAX_NDIM};

/// Bytes that typed numpy views share without copying.
///
/// Buffer(nbytes, align=64) allocates zeroed memory at an address that is a
/// multiple of align; Buffer.wrap, Buffer.from_dlpack and Buffer.from_bytes
/// start from other memory. buf.view(dtype, offset, shape, strides) gives
/// numpy arrays over it, checked to stay in bounds and aligned.
// Every numpy view has the buffer's one `Export` as its base object, so making
// a view allocates nothing but the array, and the number of live exports is
// that object's reference count less the buffer's own.
#[pyclass(name = "Buffer", module = "bytelens._native", frozen, weakref)]
pub struct PyBuf {
    mem: Arc<Memory>,
    views: Py<Export>,
    /// Set once the buffer protocol has handed out the address: a consumer
    /// may keep it with only a reference to this object (`np.frombuffer`),
    /// so `close()` then leaves the freeing to this object's end.
    handed_out: AtomicBool,
}

impl PyBuf {
    pub(crate) fn new(py: Python<'_>, memory: Memory) -> PyResult<PyBuf> {
        let mem = Arc::new(memory);
        let views = Py::new(py, Export::new(Arc::clone(&mem)))?;
        Ok(PyBuf {
            mem,
            views,
            handed_out: AtomicBool::new(false),
        })
    }

    /// The memory's address (valid while an export is held).
    pub(crate) fn address(&self) -> *mut u8 {
        self.mem.address()
    }

    pub(crate) fn len(&self) -> usize {
        self.mem.len()
    }

    pub(crate) fn is_readonly(&self) -> bool {
        self.mem.is_readonly()
    }

    /// A new reference to the object that keeps the memory alive and counted.
    pub(crate) fn export<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, Export>> {
        self.check_open()?;
        Ok(self.views.bind(py).clone())
    }

    fn check_open(&self) -> PyResult<()> {
        self.mem.check_open()
    }

    /// A numpy array over `layout`, checked against this buffer, whose base
    /// object keeps the memory alive and counted.
    pub(crate) fn array<'py>(
        slf: &Bound<'py, PyBuf>,
        layout: &Layout,
    ) -> PyResult<Bound<'py, PyAny>> {
        layout.check(slf.get().len()).py_err(slf.py())?;
        PyBuf::array_in_bounds(slf, layout)
    }

    /// [`array`](PyBuf::array) for a layout already checked against this
    /// buffer's length (by [`ViewArgs::resolve`](bytelens::ViewArgs::resolve)).
    #[inline(always)]
    fn array_in_bounds<'py>(
        slf: &Bound<'py, PyBuf>,
        layout: &Layout,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let this = slf.get();
        let descr = numpy_descr(py, layout.descr())?;
        let align = layout.dtype().align();
        if layout.requires_alignment()
            && layout.size() > 0
            && !(this.address() as usize).is_multiple_of(align)
        {
            return Err(LayoutError::MisalignedBuffer {
                address: this.address() as usize,
                align,
                dtype: layout.dtype(),
            }
            .into_py_err(py));
        }
        let writable = !this.is_readonly() && !layout.is_read_only();
        new_array(
            py,
            descr,
            layout,
            writable,
            this.address(),
            this.export(py)?,
        )
    }

    /// The elements of `layout` (checked against this buffer) copied into a
    /// new buffer in C order and native byte order, and the layout of the copy.
    fn contiguous_copy(&self, py: Python<'_>, layout: &Layout) -> PyResult<(PyBuf, Layout)> {
        let contiguous = Layout::contiguous(layout.dtype(), layout.shape()).py_err(py)?;
        let nbytes = contiguous.nbytes();
        let memory = Memory::for_result(py, nbytes, self.address() as usize)?;
        let copied = PyBuf::new(py, memory)?;
        if nbytes > 0 {
            // SAFETY: the buffer is open (checked by the caller) and cannot close
            // while this call holds the GIL, so its `len` bytes are readable; the
            // copy's `nbytes` bytes were allocated above and nothing else has
            // seen them yet (no view, no export), so this is their one reference.
            let (bytes, dst) = unsafe {
                (
                    std::slice::from_raw_parts(self.address(), self.len()),
                    std::slice::from_raw_parts_mut(copied.address(), nbytes),
                )
            };
            let to = contiguous.descr();
            py.detach(|| bytelens::copy_into(bytes, layout, dst, to))
                .py_err(py)?;
        }
        Ok((copied, contiguous))
    }

    /// Live exports: references to the [`Export`] other than the buffer's own
    /// (one per numpy array made over the buffer, memoryview and DLPack capsule).
    pub(crate) fn live_exports(&self, _py: Python<'_>) -> usize {
        // SAFETY: `views` is a live object (we hold a reference), and reading a
        // reference count is allowed while attached to the interpreter (`_py`).
        let refs = unsafe { ffi::Py_REFCNT(self.views.as_ptr()) };
        usize::try_from(refs).unwrap_or(1).saturating_sub(1)
    }
}

/// A numpy array over `layout` at `base`, whose numpy base object is `guard`.
fn new_array<'py>(
    py: Python<'py>,
    descr: &Bound<'py, PyArrayDescr>,
    layout: &Layout,
    writable: bool,
    base: *mut u8,
    guard: Bound<'py, Export>,
) -> PyResult<Bound<'py, PyAny>> {
    let ndim = layout.ndim();
    let mut shape = [0 as npy_intp; MAX_NDIM];
    let mut strides = [0 as npy_intp; MAX_NDIM];
    for (axis, (&n, &s)) in layout.shape().iter().zip(layout.strides()).enumerate() {
        // A checked layout's lengths fit in isize (the core's size rule).
        shape[axis] = n as npy_intp;
        strides[axis] = s;
    }
    let flags = if writable { NPY_ARRAY_WRITEABLE } else { 0 };
    // The first element; `check` proved it lies within the buffer (or at its end when empty).
    let data = base.wrapping_offset(layout.offset());
    // SAFETY: `PyArray_NewFromDescr` steals the new reference made by `clone`,
    // and reads `ndim` entries of `shape`/`strides` (at most MAX_NDIM, the arrays'
    // length). `layout.check` proved every element lies within the `len` bytes at
    // `base`. Once `guard` (the buffer's `Export`) is the array's base, the memory
    // outlives the array: the `Export` holds an `Arc` of it, and `close()` refuses
    // while the `Export` has references other than the buffer's own.
    // `PyArray_SetBaseObject` steals `guard`'s reference, on failure too.
    unsafe {
        let array_type = npyffi::get_type_object(py, NpyTypes::PyArray_Type);
        let raw = PY_ARRAY_API.PyArray_NewFromDescr(
            py,
            array_type,
            descr.clone().into_dtype_ptr(),
            ndim as c_int,
            shape.as_mut_ptr(),
            strides.as_mut_ptr(),
            data.cast(),
            flags,
            ptr::null_mut(),
        );
        let array = Bound::from_owned_ptr_or_err(py, raw)?;
        if PY_ARRAY_API.PyArray_SetBaseObject(
            py,
            raw.cast::<npyffi::PyArrayObject>(),
            guard.into_ptr(),
        ) < 0
        {
            return Err(PyErr::fetch(py));
        }
        Ok(array)
    }
}

#[pymethods]
impl PyBuf {
    /// `Buffer(nbytes, align=64)`: `nbytes` zeroed bytes at an address that is
    /// a multiple of `align` (a power of two).
    #[new]
    #[pyo3(signature = (nbytes, align = 64))]
    fn py_new(py: Python<'_>, nbytes: usize, align: usize) -> PyResult<PyBuf> {
        PyBuf::new(py, Memory::owned(py, nbytes, align)?)
    }

    /// The file at `path` mapped into memory: mode "r" (read-only views),
    /// "r+" (writes go to the file) or "c" (copy-on-write, private). As with
    /// numpy.memmap, no process may shrink the file while it is mapped:
    /// touching the missing pages would crash the process (SIGBUS; Windows
    /// refuses to shrink a mapped file at all).
    #[classmethod]
    #[pyo3(signature = (path, mode = "r"))]
    fn map(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        path: std::path::PathBuf,
        mode: &str,
    ) -> PyResult<PyBuf> {
        let how = match mode {
            "r" => bytelens::MapMode::Read,
            "r+" => bytelens::MapMode::ReadWrite,
            "c" => bytelens::MapMode::Copy,
            other => {
                return Err(PyValueError::new_err(format!(
                    "mode must be \"r\", \"r+\" or \"c\", not {}",
                    super::error::excerpt(other)
                )));
            }
        };
        // Opened without the GIL: a slow or hung file system must not stop
        // every other thread.
        // SAFETY: shrinking a mapped file under the mapping is the one thing the
        // caller must not do; the docstring says so (as numpy.memmap's does).
        // On Windows no process can: the system refuses while it is mapped.
        let file = py.detach(|| unsafe { bytelens::MappedFile::open(&path, how) });
        let mut file = file.py_err(py)?;
        let (address, len) = (file.as_ptr(), file.as_bytes().len());
        PyBuf::new(
            py,
            Memory::new(
                Storage::Mapped(file),
                address,
                len,
                how == bytelens::MapMode::Read,
            ),
        )
    }

    /// A 64-byte aligned copy of any bytes-like object.
    #[classmethod]
    fn from_bytes(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
    ) -> PyResult<PyBuf> {
        let view = get_buffer(data)?;
        if !view.is_c_contiguous() {
            return Err(PyValueError::new_err("from_bytes needs C-contiguous data"));
        }
        // SAFETY: the export `view` keeps `len_bytes` bytes at `buf_ptr` alive and readable.
        let memory = unsafe { Memory::copied(py, view.buf_ptr().cast(), view.len_bytes(), 64)? };
        PyBuf::new(py, memory)
    }

    /// Zero-copy over any buffer-protocol object, which is kept alive. The
    /// Buffer covers every byte `obj`'s buffer spans and is read-only when
    /// `obj` is or when `readonly=True`.
    #[classmethod]
    #[pyo3(signature = (obj, *, readonly = false))]
    fn wrap(_cls: &Bound<'_, PyType>, obj: &Bound<'_, PyAny>, readonly: bool) -> PyResult<PyBuf> {
        PyBuf::new(obj.py(), wrap(obj, readonly)?)
    }

    /// Zero-copy from any DLPack producer (`__dlpack__`), which is kept alive.
    #[classmethod]
    fn from_dlpack(_cls: &Bound<'_, PyType>, obj: &Bound<'_, PyAny>) -> PyResult<PyBuf> {
        PyBuf::new(obj.py(), dlpack::import(obj)?)
    }

    /// Rebuilds a pickled Buffer. Out-of-band memory (pickle protocol 5:
    /// Ray's object store, Dask frames, a `PickleBuffer`) is wrapped without
    /// copying when it is aligned for `align`, and kept alive; it is
    /// read-only when the memory is (Ray's store) or the buffer was. In-band
    /// `bytes` (older protocols) and misaligned memory are copied into a new
    /// aligned buffer, writable unless the buffer was read-only.
    #[classmethod]
    fn _from_pickle(
        _cls: &Bound<'_, PyType>,
        data: &Bound<'_, PyAny>,
        align: usize,
        readonly: bool,
    ) -> PyResult<PyBuf> {
        let py = data.py();
        if !align.is_power_of_two() {
            return Err(bytelens::Error::BadAlign { align }.into_py_err(py));
        }
        let view = get_buffer(data)?;
        if !view.is_c_contiguous() {
            return Err(PyValueError::new_err(
                "a pickled Buffer's data must be contiguous",
            ));
        }
        let address = view.buf_ptr() as usize;
        // In-band bytes are this unpickling's own copy, and read-only only
        // because `bytes` are: copying keeps the buffer as writable as it was.
        let in_band = data.is_exact_instance_of::<PyBytes>();
        if (readonly || !in_band) && address.is_multiple_of(align) {
            // The address is a multiple of `align`, which may exceed what `wrap` reports.
            let memory = wrap_view(py, view, readonly)?.aligned_to(align);
            return PyBuf::new(py, memory);
        }
        // SAFETY: the export `view` keeps its bytes alive and readable during the copy.
        let copy = unsafe { Memory::copied(py, view.buf_ptr().cast(), view.len_bytes(), align)? };
        PyBuf::new(py, copy.with_readonly(readonly))
    }

    /// A new writable Buffer with the same bytes and alignment: how to get a
    /// buffer you may write from a read-only one (as Ray returns).
    fn copy(&self, py: Python<'_>) -> PyResult<PyBuf> {
        self.check_open()?;
        // SAFETY: the buffer is open, and cannot close while this call holds the GIL.
        let copied = unsafe { Memory::copied(py, self.address(), self.len(), self.mem.align())? };
        PyBuf::new(py, copied)
    }

    /// The object's size with the bytes it owns (what `sys.getsizeof` and
    /// Dask's `sizeof` count): memory bytelens allocated counts, memory it
    /// only wraps or maps does not (as for numpy views).
    fn __sizeof__(&self) -> usize {
        let own = std::mem::size_of::<PyBuf>() + std::mem::size_of::<Memory>();
        if self.mem.is_owned() && !self.mem.is_closed() {
            own + self.len()
        } else {
            own
        }
    }

    /// Bytes in the buffer.
    #[getter]
    fn nbytes(&self) -> usize {
        self.len()
    }

    /// The address of the first byte, for C code and ctypes.
    #[getter(address)]
    fn py_address(&self) -> PyResult<usize> {
        self.check_open()?;
        Ok(self.address() as usize)
    }

    /// Whether views of this buffer are read-only.
    #[getter]
    fn readonly(&self) -> bool {
        self.mem.is_readonly()
    }

    /// The alignment of the first byte: as asked for owned buffers, the
    /// largest power of two dividing the address (at most 4096) for wrapped ones.
    #[getter]
    fn align(&self) -> usize {
        self.mem.align()
    }

    /// Live exports: numpy arrays over the buffer's memory, memoryviews and
    /// DLPack capsules (numpy views of those arrays count through them).
    #[getter]
    fn exports(&self, py: Python<'_>) -> usize {
        self.live_exports(py)
    }

    /// Whether `close()` has run (the memory is freed then, or with the
    /// buffer object if the buffer protocol handed its address out).
    #[getter]
    fn closed(&self) -> bool {
        self.mem.is_closed()
    }

    /// A numpy array sharing this buffer's memory, checked by the core.
    ///
    /// `view(dtype, offset=0, shape=None, strides=None)`: `offset` is the byte
    /// offset of the first element, strides are in bytes (negative allowed).
    /// Without a shape, a 1-D array of every element from `offset` on. Or
    /// `view(layout)` with a `bytelens.Layout`.
    #[pyo3(
        signature = (dtype, offset = Int(0), shape = None, strides = None),
        text_signature = "(self, dtype, offset=0, shape=None, strides=None)"
    )]
    fn view<'py>(
        slf: &Bound<'py, PyBuf>,
        dtype: &Bound<'py, PyAny>,
        offset: Int,
        shape: Option<&Bound<'py, PyAny>>,
        strides: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        if let Ok(layout) = dtype.cast::<PyLayout>() {
            if offset.0 != 0 || shape.is_some() || strides.is_some() {
                return Err(PyValueError::new_err(
                    "view(layout) takes no offset, shape or strides: the Layout has them",
                ));
            }
            return PyBuf::array(slf, &layout.get().inner);
        }
        let nbytes = slf.get().len();
        resolve_view(
            dtype,
            offset,
            shape,
            strides,
            nbytes,
            |resolved| match resolved {
                Ok(layout) => PyBuf::array_in_bounds(slf, layout),
                Err(err) => Err(err.into_py_err(py)),
            },
        )
    }

    /// One numpy view per field of `plan`: `{name: array}`.
    pub(crate) fn arrays<'py>(
        slf: &Bound<'py, PyBuf>,
        plan: &Bound<'py, PyPlan>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let py = slf.py();
        let out = PyDict::new(py);
        for field in plan.get().plan.fields() {
            let layout = field.layout().py_err(py)?;
            out.set_item(&field.name, PyBuf::array(slf, &layout)?)?;
        }
        Ok(out)
    }

    /// Closes the buffer: no new view or export can start. Raises
    /// `BufferError` while any export is alive; closing twice is allowed.
    ///
    /// The memory is freed now, unless the buffer protocol has handed its
    /// address out (`np.frombuffer(buf)`, `np.ndarray(buffer=buf)`,
    /// `memoryview(buf)`, ...): numpy's two calls keep the address with only a
    /// reference to `buf`, which no count sees, so the memory is then freed
    /// with `buf` itself, when the last reference to it goes.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let refuse = |live: usize| {
            let message = format!(
                "cannot close a Buffer with {live} live export{} (numpy arrays, memoryviews \
                 or DLPack capsules over its memory); delete them first",
                if live == 1 { "" } else { "s" }
            );
            Err(error_of_kind(py, ErrorKind::InUse, message))
        };
        // Nothing can take a reference to the Export while this call holds the GIL.
        let live = self.live_exports(py);
        if live > 0 {
            return refuse(live);
        }
        if self.handed_out.load(Ordering::Acquire) {
            self.mem.close_later();
        } else {
            self.mem.close();
        }
        Ok(())
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __len__(&self) -> usize {
        self.len()
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() {
            ", closed"
        } else if self.mem.is_readonly() {
            ", readonly"
        } else {
            ""
        };
        format!(
            "Buffer(nbytes={}, align={}{state})",
            self.len(),
            self.mem.align()
        )
    }

    // The buffer protocol: one-dimensional unsigned bytes (format "B"). The
    // export's `obj` is the `Export`, which keeps the memory alive and counted
    // (so `memoryview(buf).obj` is not `buf`).
    //
    // numpy's `np.frombuffer(buf)` and `np.ndarray(buffer=buf)` are the
    // consumers this cannot count: they release the export at once and keep
    // `buf` itself, as they do with a bytearray (which can then be resized
    // under the array). So the first export here sets `handed_out`, and
    // `close()` then leaves the memory to be freed with `buf`.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        let export = slf.get().export(slf.py())?;
        slf.get().handed_out.store(true, Ordering::Release);
        // SAFETY: `view` is the interpreter's Py_buffer to fill, and `export` is
        // the `Export` of this buffer's memory.
        unsafe { fill_buffer(view, &export, &slf.get().mem, flags) }
    }

    /// numpy's array interface: `data` is a memoryview, so arrays made from
    /// it hold an export like every other view.
    #[getter]
    fn __array_interface__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        let py = slf.py();
        let out = PyDict::new(py);
        out.set_item("version", 3)?;
        out.set_item("shape", (slf.get().len(),))?;
        out.set_item("typestr", "|u1")?;
        // Through the `Export`, which counts the memoryview, and not through
        // `buf`, whose buffer protocol would leave `close()` unable to free now.
        let export = slf.get().export(py)?;
        out.set_item("data", PyMemoryView::from(export.as_any())?)?;
        out.set_item("strides", py.None())?;
        Ok(out)
    }

    /// DLPack export of the whole buffer as one-dimensional uint8: a
    /// versioned capsule when `max_version >= (1, 0)`, a legacy one otherwise
    /// (refused for read-only buffers, which only versioned capsules can mark).
    #[pyo3(signature = (*, stream = None, max_version = None, dl_device = None, copy = None))]
    fn __dlpack__<'py>(
        slf: &Bound<'py, Self>,
        stream: Option<&Bound<'py, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let this = slf.get();
        // Closed first: no other answer may suggest a way in.
        this.check_open()?;
        let versioned = dlpack::versioned("Buffer", stream, max_version, dl_device)?;
        if copy == Some(true) {
            let copied = this.copy(py)?;
            let parts = dlpack::Parts::bytes(copied.address(), copied.len(), false);
            return dlpack::export(copied.export(py)?, &parts, versioned, true);
        }
        if !versioned && this.is_readonly() {
            return Err(dlpack::refuse_read_only_legacy("Buffer"));
        }
        let parts = dlpack::Parts::bytes(this.address(), this.len(), this.is_readonly());
        dlpack::export(this.export(py)?, &parts, versioned, false)
    }

    /// DLPack export of `layout` over this buffer, as a tensor of its dtype
    /// (the dtype table's DLPack code), shape and strides in elements:
    /// `bytelens.View.__dlpack__`, whose docstring says what is refused and
    /// when `copy=True` copies. The capsule holds the buffer's export, so the
    /// memory outlives it and `close()` refuses meanwhile.
    ///
    /// `legacy_read_only=True` lets a read-only view go in a legacy capsule,
    /// which cannot mark it: only for a consumer known never to write, as
    /// `bytelens._frameworks` knows of JAX (its arrays are immutable, and it
    /// takes legacy capsules only).
    #[pyo3(signature = (
        layout, *, stream = None, max_version = None, dl_device = None, copy = None,
        legacy_read_only = false
    ))]
    #[allow(clippy::too_many_arguments)] // DLPack's keywords, and one of ours
    fn _dlpack_view<'py>(
        slf: &Bound<'py, Self>,
        layout: &Bound<'py, PyLayout>,
        stream: Option<&Bound<'py, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
        legacy_read_only: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let this = slf.get();
        this.check_open()?;
        let versioned = dlpack::versioned("View", stream, max_version, dl_device)?;
        let layout = &layout.get().inner;
        layout.check(this.len()).py_err(py)?;
        if copy == Some(true) {
            let (copied, contiguous) = this.contiguous_copy(py, layout)?;
            let parts = dlpack::Parts::view(&contiguous, copied.address(), false)?;
            return dlpack::export(copied.export(py)?, &parts, versioned, true);
        }
        let parts = dlpack::Parts::view(layout, this.address(), this.is_readonly())?;
        if !versioned && !legacy_read_only && (this.is_readonly() || layout.is_read_only()) {
            return Err(dlpack::refuse_read_only_legacy("View"));
        }
        dlpack::export(this.export(py)?, &parts, versioned, false)
    }

    fn __dlpack_device__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        // numpy asks before every import; one cached tuple saves building it each time.
        static CPU: PyOnceLock<Py<PyTuple>> = PyOnceLock::new();
        let cpu = CPU.get_or_try_init(py, || {
            PyTuple::new(py, [dlpack::DEVICE_CPU, 0]).map(Bound::unbind)
        })?;
        Ok(cpu.bind(py).clone())
    }

    /// Pickling: protocol 5 hands the memory out of band (`PickleBuffer`),
    /// older protocols copy the bytes into the stream.
    fn __reduce_ex__<'py>(slf: &Bound<'py, Self>, protocol: i32) -> PyResult<Bound<'py, PyTuple>> {
        static PICKLE_BUFFER: PyOnceLock<Py<PyType>> = PyOnceLock::new();
        let py = slf.py();
        let this = slf.get();
        let rebuild = py.get_type::<PyBuf>().getattr("_from_pickle")?;
        let data = if protocol >= 5 {
            PICKLE_BUFFER
                .import(py, "pickle", "PickleBuffer")?
                .call1((this.export(py)?,))?
        } else {
            this.check_open()?;
            let bytes = PyBytes::new_with(py, this.len(), |out| {
                // SAFETY: the buffer is open and cannot close while this call holds
                // the GIL; `out` is a fresh bytes object of `len` bytes.
                unsafe { ptr::copy_nonoverlapping(this.address(), out.as_mut_ptr(), this.len()) };
                Ok(())
            });
            bytes?.into_any()
        };
        let args =
            (data, this.mem.align(), PyBool::new(py, this.is_readonly())).into_pyobject(py)?;
        PyTuple::new(py, [rebuild, args.into_any()])
    }
}

/// A buffer-protocol export of `obj`, the whole of it described. Some
/// exporters (ctypes) leave out shape or strides, which pyo3 requires; their
/// bytes as a one-dimensional memoryview have both.
///
/// Memory that holds object references (struct format `O`, as numpy's
/// object arrays export) is refused: its bytes are `PyObject*` pointers,
/// and writing them as numbers would corrupt the objects (numpy's own
/// `a.view("u8")` refuses too).
fn get_buffer(obj: &Bound<'_, PyAny>) -> PyResult<PyUntypedBuffer> {
    let view = match PyUntypedBuffer::get(obj) {
        Ok(view) => view,
        Err(err) => {
            let memory = PyMemoryView::from(obj).map_err(|_| err.clone_ref(obj.py()))?;
            let format: String = memory.getattr("format")?.extract()?;
            refuse_references(&format)?;
            let bytes = memory.call_method1("cast", ("B",)).map_err(|_| err)?;
            PyUntypedBuffer::get(&bytes)?
        }
    };
    refuse_references(&view.format().to_string_lossy())?;
    Ok(view)
}

/// `BufferError` for a struct format with object references (`O`)
/// anywhere outside the `:name:` of a field.
fn refuse_references(format: &str) -> PyResult<()> {
    let mut in_name = false;
    for c in format.chars() {
        match c {
            ':' => in_name = !in_name,
            'O' if !in_name => {
                return Err(PyBufferError::new_err(format!(
                    "memory of format {} holds Python object references, whose bytes \
                     cannot be viewed or written as numbers",
                    super::error::excerpt(format)
                )));
            }
            _ => {}
        }
    }
    Ok(())
}

/// `Buffer.wrap`: the span of `obj`'s buffer-protocol export.
fn wrap(obj: &Bound<'_, PyAny>, readonly: bool) -> PyResult<Memory> {
    wrap_view(obj.py(), get_buffer(obj)?, readonly)
}

/// The span of an export already taken (by [`get_buffer`]), kept alive by the memory.
fn wrap_view(py: Python<'_>, view: PyUntypedBuffer, readonly: bool) -> PyResult<Memory> {
    if view.suboffsets().is_some_and(|s| s.iter().any(|&o| o >= 0)) {
        return Err(PyBufferError::new_err(
            "indirect (PIL-style, suboffsets) buffers cannot be wrapped",
        ));
    }
    let (start, len) = span(py, view.shape(), view.strides(), view.item_size())?;
    let address = view.buf_ptr().cast::<u8>().wrapping_offset(start);
    let readonly = readonly || view.readonly();
    Ok(Memory::new(Storage::Wrapped(view), address, len, readonly))
}
