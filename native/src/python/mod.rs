//! The Python extension module `bytelens._native` (feature `python`).
//!
//! The pure-Python package in `native/python/bytelens/` re-exports what is
//! defined here; maturin builds the two into one wheel.
//!
//! Three kinds of object are exported: [`buffer::PyBuf`] (`bytelens.Buffer`),
//! the memory itself, with the numpy, buffer-protocol, DLPack and pickle
//! bridges; [`layout::PyLayout`] (`bytelens.Layout`), the core's checked
//! layout arithmetic without memory; and [`layout::PyPlan`] (`bytelens.Plan`).

mod buffer;
mod dlpack;
mod dtype;
#[cfg(feature = "gpu")]
mod gpu;
mod layout;
#[cfg(unix)]
mod shared;

use pyo3::create_exception;
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;

use crate::{Error, LayoutError as CoreError};

create_exception!(
    bytelens,
    LayoutError,
    PyValueError,
    "A view that does not fit its buffer, or an invalid layout operation."
);
create_exception!(
    bytelens,
    AlignmentError,
    LayoutError,
    "An offset, stride or address that is not a multiple of the dtype's alignment."
);
create_exception!(
    bytelens,
    BoundsError,
    LayoutError,
    "A view that would touch bytes outside its buffer."
);

/// The Python exception for a core error: `AlignmentError`, `BoundsError`
/// or `LayoutError`, with the core's message and its `kind` attribute
/// (`"Misaligned"`, `"OutOfBounds"`, `"NeedsCopy"`, ...).
pub(crate) fn layout_error(py: Python<'_>, err: CoreError) -> PyErr {
    let message = err.to_string();
    let py_err = if err.is_alignment() {
        AlignmentError::new_err(message)
    } else if err.is_bounds() {
        BoundsError::new_err(message)
    } else {
        LayoutError::new_err(message)
    };
    // Setting an attribute on a fresh exception instance cannot fail in practice;
    // if it did, the exception without `kind` is still the right one to raise.
    let _ = py_err.value(py).setattr("kind", err.kind());
    py_err
}

/// The Python exception for an error of the native crate.
pub(crate) fn native_error(py: Python<'_>, err: Error) -> PyErr {
    match err {
        Error::Layout(err) => layout_error(py, err),
        Error::Alloc { .. } => PyMemoryError::new_err(err.to_string()),
        Error::BadAlign { .. } | Error::SizeMismatch { .. } => {
            PyValueError::new_err(err.to_string())
        }
    }
}

/// Converts core results at the boundary: `result.map_err(core(py))?`.
pub(crate) fn core(py: Python<'_>) -> impl Fn(CoreError) -> PyErr + '_ {
    move |err| layout_error(py, err)
}

#[pymodule]
#[pyo3(name = "_native")]
fn bytelens_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("LayoutError", py.get_type::<LayoutError>())?;
    m.add("AlignmentError", py.get_type::<AlignmentError>())?;
    m.add("BoundsError", py.get_type::<BoundsError>())?;
    m.add_class::<buffer::PyBuf>()?;
    m.add_class::<layout::PyLayout>()?;
    m.add_class::<layout::PyPlan>()?;
    #[cfg(unix)]
    m.add_class::<shared::PySharedBuffer>()?;
    #[cfg(unix)]
    m.add_class::<shared::PyLock>()?;
    #[cfg(feature = "gpu")]
    gpu::register(m)?;
    Ok(())
}
