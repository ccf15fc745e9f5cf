//! The memory behind a `bytelens.Buffer`, who owns it, and the one object
//! that keeps it alive for every export: the leaf the Python modules share
//! (`buffer`, `dlpack`, `shared` and `gpu` build on it; it builds on none).
//!
//! The memory ([`Memory`]) is shared through an `Arc` by the `Buffer` object
//! and by its one [`Export`]. Everything that can reach the memory holds a
//! reference to that `Export`: it is the numpy base object of every view,
//! the `obj` of every buffer-protocol export (so memoryviews, and numpy
//! arrays made with `np.ndarray(buffer=buf)`, hold it too), and it is held
//! by every DLPack capsule. So the memory outlives the `Buffer` object when
//! it must, and the number of live exports is the `Export`'s reference
//! count less the buffer's own. `close()` frees the memory only when that
//! number is 0, and marks the memory closed so no new export can start.
//!
//! One kind of consumer escapes the count: numpy's `np.frombuffer(buf)` and
//! `np.ndarray(buffer=buf)` release their buffer-protocol export at once and
//! keep the address with a reference to the `Buffer` object itself. So once
//! the `Buffer` has handed its address out through the buffer protocol,
//! `close()` only marks it closed, and the memory goes with the `Buffer`
//! object (which those arrays keep alive).
//!
//! The counting relies on the GIL: nothing can take a reference while
//! `close` runs. The module does not declare itself free-threading safe, so
//! a free-threaded interpreter turns the GIL back on when importing it.

use std::ffi::{c_int, c_void};
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use pyo3::buffer::PyUntypedBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;

use super::error::{IntoPyErr, PyErrResult};
use bytelens::LayoutError;

/// Alignment reported for wrapped memory, at most a page.
const MAX_REPORTED_ALIGN: usize = 4096;

/// Who owns the memory a `bytelens.Buffer` points into.
pub(crate) enum Storage {
    /// Allocated by bytelens.
    Owned(bytelens::Buffer),
    /// Allocated by bytelens through calloc, for results about to be
    /// overwritten (freed on drop).
    Calloc(#[expect(dead_code, reason = "held only to be freed on drop")] Calloc),
    /// A buffer-protocol export of another Python object (released on drop).
    Wrapped(#[expect(dead_code, reason = "held only to be released on drop")] PyUntypedBuffer),
    /// A DLPack tensor whose deleter runs on drop.
    Tensor(#[expect(dead_code, reason = "held only to be deleted on drop")] Foreign),
    /// A named shared-memory segment (unmapped on drop).
    Shared(
        #[expect(dead_code, reason = "held only to be unmapped on drop")]
        std::sync::Arc<bytelens::SharedBuffer>,
    ),
    /// A memory-mapped file (unmapped on drop).
    Mapped(#[expect(dead_code, reason = "held only to be unmapped on drop")] bytelens::MappedFile),
    /// A producer's slot in a ring (the ring's mapping, kept mapped).
    Ring(#[expect(dead_code, reason = "held only to keep the mapping")] bytelens::Ring),
    /// A consumer's batch in a ring (its slot released on drop).
    RingBatch(#[expect(dead_code, reason = "held only to be released on drop")] bytelens::Batch),
}

/// Memory another library owns, handed back when this is dropped by calling
/// its release function once (a consumed DLPack tensor and its deleter).
pub(crate) struct Foreign {
    context: *mut c_void,
    release: unsafe fn(*mut c_void),
}

impl Foreign {
    /// # Safety
    /// Calling `release(context)` once, from any thread (attached to the
    /// interpreter), must be sound.
    pub(crate) unsafe fn new(context: *mut c_void, release: unsafe fn(*mut c_void)) -> Foreign {
        Foreign { context, release }
    }
}

// SAFETY: the one use of `context` is the call of `release` on drop, which
// `new`'s caller promised may happen on any thread (DLPack producers must
// accept the deleter being called from any thread).
unsafe impl Send for Foreign {}
// SAFETY: shared references to `Foreign` never touch `context`.
unsafe impl Sync for Foreign {}

impl Drop for Foreign {
    fn drop(&mut self) {
        // Releasers (numpy's DLPack deleter among them) may touch Python objects.
        Python::try_attach(|_py| {
            // SAFETY: `new`'s caller promised that this one call is sound; drop
            // runs once.
            unsafe { (self.release)(self.context) }
        });
    }
}

/// Zeroed memory from the C allocator's `calloc`, with room to place a
/// 64-byte aligned address anywhere within a 4 KiB page.
///
/// `bytelens::Buffer` asks for its alignment (64) from the allocator, which
/// then zeroes the block with a full write pass; `calloc` of a large block
/// maps fresh pages from the OS, zero already, so a result about to be
/// overwritten by a copy is written once, not twice.
pub(crate) struct Calloc {
    // INVARIANT: allocated by `alloc_zeroed` with `layout`, freed once on drop.
    ptr: ptr::NonNull<u8>,
    layout: std::alloc::Layout,
}

/// The alignment of every result.
const RESULT_ALIGN: usize = 64;
/// The page size whose offsets [`Calloc::new`] places results at.
const PAGE: usize = 4096;

impl Calloc {
    /// `nbytes` zeroed bytes, and their address: 64-byte aligned, at
    /// `phase` (rounded down to 64) bytes into a 4 KiB page.
    fn new(nbytes: usize, phase: usize) -> Result<(Calloc, *mut u8), bytelens::Error> {
        let failed = bytelens::Error::Alloc {
            nbytes,
            align: RESULT_ALIGN,
        };
        let layout = nbytes
            .checked_add(2 * PAGE)
            .and_then(|size| std::alloc::Layout::from_size_align(size, 16).ok())
            .ok_or_else(|| failed.clone())?;
        // SAFETY: `layout` has a non-zero size (at least 2 * PAGE). An
        // alignment of 16 (malloc's own) lets the allocator use calloc.
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = ptr::NonNull::new(raw).ok_or(failed)?;
        // At most PAGE - 1 bytes to a page boundary and PAGE - 64 more, so
        // `nbytes` bytes follow the address inside the block.
        let phase = phase % PAGE / RESULT_ALIGN * RESULT_ALIGN;
        let address = raw.wrapping_add(raw.align_offset(PAGE) + phase);
        huge_pages(raw, layout.size());
        Ok((Calloc { ptr, layout }, address))
    }
}

/// Asks Linux to back the whole pages of `len` bytes at `start` with huge
/// pages where it can, as numpy does for its large arrays: one page fault per
/// 2 MiB instead of per 4 KiB when the memory is first written. Only a hint.
#[cfg(target_os = "linux")]
fn huge_pages(start: *mut u8, len: usize) {
    let first = start.wrapping_add(start.align_offset(PAGE));
    let whole = (start as usize + len).saturating_sub(first as usize) / PAGE * PAGE;
    if whole > 0 {
        // SAFETY: the range lies inside a block this process owns (from
        // `start` for `len` bytes, rounded inward to whole pages); the
        // advice changes no contents, and a failure is harmless.
        unsafe { libc::madvise(first.cast(), whole, libc::MADV_HUGEPAGE) };
    }
}

#[cfg(not(target_os = "linux"))]
fn huge_pages(_start: *mut u8, _len: usize) {}

/// Has Linux map (and zero) the pages of a fresh [`Calloc`] result ahead of
/// a copy into it, from another thread: a 256 MiB result takes ~20 ms of
/// page faults, which the copying thread then no longer pays. Pages the
/// copy has already written are left as they are (populating only maps
/// what is missing), so the two never write the same bytes. Only a hint:
/// kernels before 5.14 refuse it, and the copy faults the pages itself.
#[cfg(target_os = "linux")]
pub(crate) fn populate(start: usize, len: usize) {
    let first = start.next_multiple_of(PAGE);
    let whole = (start + len).saturating_sub(first) / PAGE * PAGE;
    if whole > 0 {
        // SAFETY: MADV_POPULATE_WRITE only faults pages in as a write would,
        // without writing: a missing anonymous page is mapped zeroed (what
        // reading it would have given), a present page is left as it is. No
        // byte the program can see changes, so it races with no write of
        // the copy, whatever the range; over memory that is not mapped it
        // fails (ENOMEM), and any failure is harmless.
        unsafe { libc::madvise(first as *mut libc::c_void, whole, libc::MADV_POPULATE_WRITE) };
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn populate(_start: usize, _len: usize) {}

impl Drop for Calloc {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout, and freed only here.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

// SAFETY: `Calloc` owns its block alone; the pointer is used only to free it.
unsafe impl Send for Calloc {}
// SAFETY: shared references to `Calloc` never touch the memory.
unsafe impl Sync for Calloc {}

/// The memory's address, fixed for the object's life.
struct Address(*mut u8);

// SAFETY: `Address` is only a number; the memory it points to is owned by
// `Memory::storage` (itself `Send + Sync`), and every dereference happens while
// the buffer is open and a reference to its `Export` keeps it so.
unsafe impl Send for Address {}
// SAFETY: as for `Send`: shared access only reads the pointer value.
unsafe impl Sync for Address {}

/// The bytes and who owns them, shared by a `bytelens.Buffer` and its views' [`Export`].
pub(crate) struct Memory {
    address: Address,
    len: usize,
    readonly: bool,
    align: usize,
    /// Set once `close()` has freed the memory.
    closed: AtomicBool,
    /// `None` once closed.
    storage: Mutex<Option<Storage>>,
}

impl Memory {
    pub(crate) fn new(storage: Storage, address: *mut u8, len: usize, readonly: bool) -> Memory {
        let align = match &storage {
            Storage::Owned(buffer) => buffer.align(),
            _ => address_align(address),
        };
        Memory {
            address: Address(address),
            len,
            readonly,
            align,
            closed: AtomicBool::new(false),
            storage: Mutex::new(Some(storage)),
        }
    }

    pub(crate) fn owned(py: Python<'_>, nbytes: usize, align: usize) -> PyResult<Memory> {
        let mut buffer = bytelens::Buffer::with_align(nbytes, align).py_err(py)?;
        let address = buffer.as_mut_ptr();
        Ok(Memory::new(Storage::Owned(buffer), address, nbytes, false))
    }

    /// `nbytes` owned, zeroed bytes at a 64-byte aligned address, for a
    /// result about to be written over by a copy from `source`: large
    /// blocks come zero from the OS instead of being zeroed here (see
    /// [`Calloc`]), and start as far into a 4 KiB page as `source` does
    /// (rounded down to 64). A copy that wrote a few bytes ahead of where it
    /// reads, modulo 4 KiB, would stall each load on the store before it
    /// (4K aliasing: a contiguous 256 MiB copy ran 2.5x slower).
    pub(crate) fn for_result(py: Python<'_>, nbytes: usize, source: usize) -> PyResult<Memory> {
        const LARGE: usize = 1 << 20;
        if nbytes < LARGE {
            return Memory::owned(py, nbytes, RESULT_ALIGN);
        }
        let (block, address) = Calloc::new(nbytes, source).py_err(py)?;
        Ok(Memory::new(Storage::Calloc(block), address, nbytes, false).aligned_to(RESULT_ALIGN))
    }

    /// An owned, aligned copy of `len` bytes at `src`.
    ///
    /// # Safety
    /// `src..src + len` must be readable for the duration of the call.
    pub(crate) unsafe fn copied(
        py: Python<'_>,
        src: *const u8,
        len: usize,
        align: usize,
    ) -> PyResult<Memory> {
        let memory = Memory::owned(py, len, align)?;
        // SAFETY: the caller guarantees `src` is readable for `len` bytes; the
        // destination is a fresh allocation of `len` bytes, so they cannot overlap.
        unsafe { ptr::copy_nonoverlapping(src, memory.address.0, len) };
        Ok(memory)
    }

    /// This memory, known to start at a multiple of `align` (which may
    /// exceed what [`Memory::new`] found).
    pub(crate) fn aligned_to(mut self, align: usize) -> Memory {
        self.align = self.align.max(align);
        self
    }

    /// This memory, read-only or not as `readonly` says.
    pub(crate) fn with_readonly(mut self, readonly: bool) -> Memory {
        self.readonly = readonly;
        self
    }

    /// The first byte's address (valid while the memory is open).
    pub(crate) fn address(&self) -> *mut u8 {
        self.address.0
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_readonly(&self) -> bool {
        self.readonly
    }

    /// The alignment of the first byte: as asked for owned memory, else the
    /// largest power of two dividing the address (at most a page).
    pub(crate) fn align(&self) -> usize {
        self.align
    }

    /// Whether bytelens allocated the memory (rather than wrapping or mapping it).
    pub(crate) fn is_owned(&self) -> bool {
        matches!(
            *self.storage.lock().unwrap_or_else(|e| e.into_inner()),
            Some(Storage::Owned(_) | Storage::Calloc(_))
        )
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// `ValueError` once closed.
    pub(crate) fn check_open(&self) -> PyResult<()> {
        if self.is_closed() {
            return Err(PyValueError::new_err("operation on a closed Buffer"));
        }
        Ok(())
    }

    /// Marks the memory closed, so no new view or export can start, without
    /// freeing it: that happens when the last `Arc` of it goes, with the
    /// `Buffer` object and its `Export`.
    pub(crate) fn close_later(&self) {
        self.closed.store(true, Ordering::Release);
    }

    /// Marks the memory closed and frees it (the first time; later calls do
    /// nothing). The caller checks that nothing can still reach it.
    pub(crate) fn close(&self) {
        if !self.closed.swap(true, Ordering::AcqRel) {
            let storage = self
                .storage
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            drop(storage);
        }
    }
}

/// What keeps a bytelens Buffer's memory alive: the base object of its numpy
/// views and the owner of its memoryviews and DLPack capsules.
// Its reference count, less the buffer's own, is the number of live exports.
#[pyclass(name = "_Export", module = "bytelens._native", frozen)]
pub(crate) struct Export {
    mem: Arc<Memory>,
}

impl Export {
    pub(crate) fn new(mem: Arc<Memory>) -> Export {
        Export { mem }
    }
}

#[pymethods]
impl Export {
    /// The same bytes as the buffer's own export: consumers that export again
    /// from a memoryview's `obj` (as `pickle.PickleBuffer` does) reach them here.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        let mem = &slf.get().mem;
        mem.check_open()?;
        // SAFETY: `view` is the interpreter's Py_buffer to fill, and `slf` is the
        // `Export` of `mem`.
        unsafe { fill_buffer(view, &slf, mem, flags) }
    }

    fn __repr__(&self) -> String {
        format!(
            "<bytelens export of {} bytes at {:#x}>",
            self.mem.len, self.mem.address.0 as usize
        )
    }
}

/// Fills a buffer-protocol request for `mem`'s bytes, with `export` as the
/// request's `obj`: the reference it takes keeps the memory alive and counted
/// until `PyBuffer_Release` drops it.
///
/// # Safety
/// `view` must be a Py_buffer to fill, and `export` the `Export` of `mem`,
/// which must be open.
pub(crate) unsafe fn fill_buffer(
    view: *mut ffi::Py_buffer,
    export: &Bound<'_, Export>,
    mem: &Memory,
    flags: c_int,
) -> PyResult<()> {
    // SAFETY: `PyBuffer_FillInfo` takes a new reference to `export`, raises
    // BufferError for a writable request on read-only memory, and describes the
    // `len` bytes at `address`, alive while `export` is referenced (the caller's
    // contract).
    let rc = unsafe {
        ffi::PyBuffer_FillInfo(
            view,
            export.as_ptr(),
            mem.address.0.cast(),
            mem.len as ffi::Py_ssize_t,
            c_int::from(mem.readonly),
            flags,
        )
    };
    if rc < 0 {
        return Err(PyErr::fetch(export.py()));
    }
    Ok(())
}

/// The bytes an array touches, relative to its first element: `(start, len)`.
pub(crate) fn span(
    py: Python<'_>,
    shape: &[usize],
    strides: &[isize],
    itemsize: usize,
) -> PyResult<(isize, usize)> {
    if shape.contains(&0) {
        return Ok((0, 0));
    }
    let extent = || -> Option<(isize, usize)> {
        let (mut low, mut high) = (0isize, 0isize);
        for (&n, &stride) in shape.iter().zip(strides) {
            let reach = isize::try_from(n - 1).ok()?.checked_mul(stride)?;
            if reach < 0 {
                low = low.checked_add(reach)?;
            } else {
                high = high.checked_add(reach)?;
            }
        }
        let len = high
            .checked_sub(low)?
            .checked_add(isize::try_from(itemsize).ok()?)?;
        Some((low, len as usize))
    };
    extent().ok_or_else(|| {
        LayoutError::Overflow {
            what: "the array's extent",
        }
        .into_py_err(py)
    })
}

/// The largest power of two dividing `address`, at most a page.
fn address_align(address: *mut u8) -> usize {
    let address = address as usize;
    if address == 0 {
        return MAX_REPORTED_ALIGN;
    }
    (1usize << address.trailing_zeros()).min(MAX_REPORTED_ALIGN)
}
