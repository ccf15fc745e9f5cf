//! `bytelens.ascontiguous`: any array copied out in C order, converted to
//! another dtype or byte order on the way, into a new 64-byte aligned
//! `Buffer` or into an array the caller gives.
//!
//! The copy is [`bytelens::copy_into`], run with the GIL released; the source
//! array is held meanwhile (see [`super::source`]).

use numpy::npyffi::NPY_ARRAY_WRITEABLE;
use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use super::buffer::PyBuf;
use super::dtype::{numpy_descr, to_descr};
use super::error::{IntoPyErr, PyErrResult};
use super::memory::{Memory, populate};
use super::source::Source;
use bytelens::{Descr, Error, Layout, can_cast, copy_into};
use bytelens::{converted_layout, is_copy, is_parallel};

/// The copy `bytelens.ascontiguous` makes: see its docstring in
/// `native/python/bytelens/_copy.py`.
#[pyfunction]
#[pyo3(signature = (a, dtype=None, out=None))]
pub(crate) fn ascontiguous<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    dtype: Option<&Bound<'py, PyAny>>,
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let source = Source::read(a, "copy")?;
    let from = source.layout().descr();
    // No dtype: the same one, in the machine's byte order.
    let to = match dtype {
        Some(dtype) => to_descr(dtype)?,
        None => Descr::native(from.dtype),
    };
    if !can_cast(from.dtype, to.dtype) {
        return Err(Error::Cast { from, to }.into_py_err(py));
    }
    let result = converted_layout(source.layout(), to).py_err(py)?;
    let layout = source.layout();
    // A copy split between threads has the CPUs busy already; a thread
    // populating the result's pages would only contend with it.
    let parallel = is_parallel(source.bytes(), layout, to);
    let fill = |bytes: &[u8], dst: &mut [u8]| copy_into(bytes, layout, dst, to);
    write_result(py, &source, &result, out, parallel, fill)
}

/// The result of reading `source` with `fill` (its bytes, the result's
/// bytes), into `out` or a new buffer: see [`into_new_buffer`] and
/// [`into_out`]. `parallel`: `fill` runs threads of its own.
pub(crate) fn write_result<'py>(
    py: Python<'py>,
    source: &Source<'py>,
    result: &Layout,
    out: Option<&Bound<'py, PyAny>>,
    parallel: bool,
    fill: impl Fn(&[u8], &mut [u8]) -> Result<(), Error> + Sync,
) -> PyResult<Bound<'py, PyAny>> {
    match out {
        None => into_new_buffer(py, source, result, parallel, fill),
        Some(out) => into_out(py, source, result, out, fill),
    }
}

/// Results this large have their pages mapped by a second thread while
/// a copy on one thread runs (see [`populate`]): a new 256 MiB result
/// spends ~20 ms in page faults, against a thread's start of ~50 µs. A
/// byteswap of 256 MiB into a new result measured 43–47 ms with it and
/// 51–52 without; a transposing copy, which has threads of its own,
/// 63–68 ms without it and 71–74 with it, so it goes without.
const POPULATE_MIN: usize = 8 << 20;

/// Copies into a fresh buffer and returns a numpy array over it.
fn into_new_buffer<'py>(
    py: Python<'py>,
    source: &Source<'py>,
    result: &Layout,
    parallel: bool,
    fill: impl Fn(&[u8], &mut [u8]) -> Result<(), Error> + Sync,
) -> PyResult<Bound<'py, PyAny>> {
    let nbytes = result.nbytes();
    let memory = Memory::for_result(py, nbytes, source.addresses().start)?;
    let buffer = Bound::new(py, PyBuf::new(py, memory)?)?;
    let dst: &mut [u8] = if nbytes == 0 {
        &mut []
    } else {
        // SAFETY: `buffer` was allocated above with `nbytes` bytes at this
        // address; nothing else has seen it yet (no view, no export), so this
        // is the only reference to those bytes until the copy returns, and
        // `buffer` outlives it.
        unsafe { std::slice::from_raw_parts_mut(buffer.get().address(), nbytes) }
    };
    let bytes = source.bytes();
    let start = dst.as_ptr() as usize;
    py.detach(|| {
        if nbytes < POPULATE_MIN || parallel {
            return fill(bytes, dst);
        }
        // A second thread maps the fresh pages ahead of the copy.
        std::thread::scope(|scope| {
            scope.spawn(|| populate(start, nbytes));
            fill(bytes, dst)
        })
    })
    .py_err(py)?;
    PyBuf::array(&buffer, result)
}

/// Copies into `out`, which must be C-contiguous, writable and of the
/// result's shape and dtype, and returns it. A source that shares bytes
/// with `out` is copied aside first, as numpy's assignment does.
fn into_out<'py>(
    py: Python<'py>,
    source: &Source<'py>,
    result: &Layout,
    out: &Bound<'py, PyAny>,
    fill: impl Fn(&[u8], &mut [u8]) -> Result<(), Error> + Sync,
) -> PyResult<Bound<'py, PyAny>> {
    let Ok(array) = out.cast::<PyUntypedArray>() else {
        return Err(PyTypeError::new_err(format!(
            "out must be a numpy array, not {}",
            out.get_type().name()?
        )));
    };
    let descr = to_descr(array.dtype().as_any()).ok();
    let want = result.descr();
    let same_descr = descr.is_some_and(|d| is_copy(d, want));
    if !same_descr || array.shape() != result.shape() {
        return Err(PyValueError::new_err(format!(
            "out must have shape {} and dtype {} (the result's), but has shape {} and dtype {}",
            shape_text(result.shape()),
            numpy_descr(py, result.descr())?.str()?,
            shape_text(array.shape()),
            array.dtype().str()?,
        )));
    }
    if !array.is_c_contiguous() {
        return Err(PyValueError::new_err("out must be C-contiguous"));
    }
    // SAFETY: reading the flags of a live array object we hold.
    if unsafe { (*array.as_array_ptr()).fields.flags } & NPY_ARRAY_WRITEABLE == 0 {
        return Err(PyValueError::new_err("out is read-only"));
    }
    let nbytes = result.nbytes();
    if nbytes == 0 {
        return Ok(out.clone());
    }
    // SAFETY: reading the data pointer of a live array object we hold.
    let data = unsafe { (*array.as_array_ptr()).fields.data }.cast::<u8>();
    let target = data as usize..data as usize + nbytes;
    let sources = source.addresses();
    // Shared bytes are read from a copy made before `out` is written (and
    // before a mutable slice of them exists).
    let aside = if sources.start < target.end && target.start < sources.end {
        let bytes = source.bytes();
        Some(
            py.detach(|| bytelens::Buffer::from_bytes(bytes))
                .py_err(py)?,
        )
    } else {
        None
    };
    let bytes = aside.as_ref().map_or(source.bytes(), |a| a.as_bytes());
    // SAFETY: `out` is a writable, C-contiguous array of the result's shape
    // and dtype, so its `nbytes` bytes from `data` are its elements, which
    // numpy keeps writable while the array lives; we hold it until the copy
    // returns. `bytes` does not overlap them (a shared source was copied
    // aside above). Another thread writing `out` meanwhile would race, as it
    // would with any numpy operation (see the module docs of `source`).
    let dst = unsafe { std::slice::from_raw_parts_mut(data, nbytes) };
    py.detach(|| fill(bytes, dst)).py_err(py)?;
    Ok(out.clone())
}

/// A shape as Python prints a tuple: `(3,)`, `(2, 3)`, `()`.
pub(crate) fn shape_text(shape: &[usize]) -> String {
    match shape {
        [n] => format!("({n},)"),
        _ => {
            let parts: Vec<String> = shape.iter().map(|n| n.to_string()).collect();
            format!("({})", parts.join(", "))
        }
    }
}
