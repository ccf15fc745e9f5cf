//! Any array Python hands over, read where it is: its bytes and a checked
//! [`Layout`] over them, with the array held so the bytes stay put. What
//! `bytelens.gpu.upload` and `bytelens.ascontiguous` read from.
//!
//! The array is held for as long as the [`Source`] lives, and through it
//! the memory's owner, so the bytes cannot be freed or resized meanwhile
//! (numpy, bytearray, mmap and bytelens all refuse that while an array over
//! them exists). As with any numpy operation, an array written by another
//! thread while it is read is read in whatever state it is in: callers must
//! not write to an array while bytelens copies it.

use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyMemoryView;

use super::dtype::{dtype_names, to_descr};
use super::error::{LayoutError, PyErrResult};
use super::memory::span;
use bytelens::Layout;

/// A numpy array's elements as bytes and a layout over them.
pub(crate) struct Source<'py> {
    /// The array (made by `numpy.asarray` when the object was not one).
    #[expect(dead_code, reason = "held only to keep the bytes alive and in place")]
    array: Bound<'py, PyUntypedArray>,
    // INVARIANT: `data..data + len` is the span of `array`'s elements, all of
    // them readable while `array` lives; `layout` is checked against it.
    data: *const u8,
    len: usize,
    layout: Layout,
}

impl<'py> Source<'py> {
    /// Reads `obj`: a numpy array (a bytelens view included), or anything
    /// `numpy.asarray` accepts. Bytes-like objects (bytes, bytearray, mmap,
    /// a Buffer) are read as their memoryview's format, so `bytes` is uint8
    /// rather than numpy's `"S3"`. A dtype bytelens does not handle (object,
    /// strings, records, complex) is a `LayoutError` that says it cannot
    /// `verb` the array.
    pub(crate) fn read(obj: &Bound<'py, PyAny>, verb: &str) -> PyResult<Source<'py>> {
        let py = obj.py();
        let array = match obj.cast::<PyUntypedArray>() {
            Ok(array) => array.clone(),
            Err(_) => {
                let source = match PyMemoryView::from(obj) {
                    Ok(view) => view.into_any(),
                    Err(_) => obj.clone(),
                };
                py.import("numpy")?
                    .call_method1("asarray", (source,))?
                    .cast_into::<PyUntypedArray>()?
            }
        };
        let dtype = array.dtype();
        let descr = to_descr(dtype.as_any()).map_err(|_| {
            LayoutError::new_err(format!(
                "cannot {verb} an array of dtype {}: bytelens moves {} (either byte order)",
                dtype.str().map_or_else(|_| "?".into(), |s| s.to_string()),
                dtype_names()
            ))
        })?;
        let strides = array.strides();
        let (start, len) = span(py, array.shape(), strides, descr.dtype.size())?;
        // SAFETY: reading the data pointer of a live array object we hold.
        let data = unsafe { (*array.as_array_ptr()).fields.data }.cast::<u8>();
        let layout = Layout::new(descr.dtype, start.unsigned_abs(), array.shape(), strides)
            .py_err(py)?
            .with_byte_order(descr.order)
            // Only bytes are copied, so the address need not be aligned.
            .unaligned();
        let source = Source {
            data: data.wrapping_offset(start),
            len,
            layout,
            array,
        };
        layout.check(len).py_err(py)?;
        Ok(source)
    }

    /// The bytes the array's elements span.
    pub(crate) fn bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: numpy keeps every element of the array, from `data` for
        // `len` bytes (its span, from its own shape and strides), readable
        // while the array lives; `self` holds the array for at least as long
        // as the slice is borrowed, and an array pins its memory (its owner
        // refuses to free or resize it while the array exists).
        unsafe { std::slice::from_raw_parts(self.data, self.len) }
    }

    /// The array's elements within [`bytes`](Source::bytes).
    pub(crate) fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The addresses of the bytes the array's elements span.
    pub(crate) fn addresses(&self) -> std::ops::Range<usize> {
        let start = self.data as usize;
        start..start + self.len
    }
}
