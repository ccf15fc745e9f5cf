//! Errors reach Python here and nowhere else: the exception classes, and
//! [`IntoPyErr`], the one conversion from each error type of the crate to
//! the Python exception it raises.
//!
//! Call sites read the same whatever the error: `result.py_err(py)?` for a
//! `Result`, `err.into_py_err(py)` for an error in hand. (Not `From<_> for
//! PyErr`, which `?` would use: the core's error is foreign to this crate,
//! and the `kind` attribute needs the interpreter.)

use pyo3::create_exception;
use pyo3::exceptions::{
    PyFileExistsError, PyFileNotFoundError, PyIsADirectoryError, PyOSError, PyPermissionError,
    PyRuntimeError, PyTimeoutError,
};
use pyo3::exceptions::{PyMemoryError, PyTypeError, PyValueError};
use pyo3::prelude::*;

use bytelens::{Error, LayoutError as CoreError};

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
create_exception!(
    bytelens,
    CastError,
    PyTypeError,
    "A dtype conversion that numpy's same_kind casting refuses (float to int, int to bool, signed to unsigned)."
);
create_exception!(
    bytelens,
    FormatError,
    PyValueError,
    "A file whose header is not a valid .npy, .npz or safetensors header, with what is wrong."
);
#[cfg(feature = "gpu")]
create_exception!(
    bytelens,
    GpuError,
    pyo3::exceptions::PyRuntimeError,
    "No GPU adapter, or an error wgpu reported, with wgpu's message."
);

/// Adds the exception classes to the extension module (`GpuError` only
/// with the `gpu` feature).
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("LayoutError", py.get_type::<LayoutError>())?;
    m.add("AlignmentError", py.get_type::<AlignmentError>())?;
    m.add("BoundsError", py.get_type::<BoundsError>())?;
    m.add("CastError", py.get_type::<CastError>())?;
    m.add("FormatError", py.get_type::<FormatError>())?;
    #[cfg(feature = "gpu")]
    m.add("GpuError", py.get_type::<GpuError>())?;
    Ok(())
}

/// `text` as a message quotes it: in double quotes, control characters,
/// quotes and backslashes escaped, and cut after 64 characters (saying how
/// long it was), so that no argument can make a message long or break its line.
pub(crate) fn excerpt(text: &str) -> String {
    const KEEP: usize = 64;
    let mut out = String::with_capacity(KEEP + 24);
    out.push('"');
    let end = text.char_indices().nth(KEEP).map_or(text.len(), |(i, _)| i);
    out.push_str(&bytelens::Escaped(&text[..end]).to_string());
    out.push('"');
    let chars = text.chars().count();
    if chars > KEEP {
        out.push_str(&format!("... ({chars} characters)"));
    }
    out
}

/// A `LayoutError` with `kind` (one of the core's [`CoreError::kind`]
/// names), for what the bindings refuse before reaching the core.
pub(crate) fn layout_error(py: Python<'_>, kind: &'static str, message: String) -> PyErr {
    with_kind(py, LayoutError::new_err(message), kind)
}

/// `err` with its `kind` attribute set. Setting an attribute on a fresh
/// exception instance cannot fail in practice; if it did, the exception
/// without `kind` is still the right one to raise.
fn with_kind(py: Python<'_>, err: PyErr, kind: &'static str) -> PyErr {
    let _ = err.value(py).setattr("kind", kind);
    err
}

/// An error of this crate (or of the core) as the Python exception it raises.
pub(crate) trait IntoPyErr {
    /// The exception, with the error's message.
    fn into_py_err(self, py: Python<'_>) -> PyErr;
}

/// [`IntoPyErr`] for results: `result.py_err(py)?`.
pub(crate) trait PyErrResult<T> {
    /// The result, its error converted by [`IntoPyErr`].
    fn py_err(self, py: Python<'_>) -> PyResult<T>;
}

impl<T, E: IntoPyErr> PyErrResult<T> for Result<T, E> {
    #[inline]
    fn py_err(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|err| err.into_py_err(py))
    }
}

/// `AlignmentError`, `BoundsError` or `LayoutError`, with the core's message
/// and its `kind` attribute (`"Misaligned"`, `"OutOfBounds"`, `"NeedsCopy"`, ...).
impl IntoPyErr for CoreError {
    fn into_py_err(self, py: Python<'_>) -> PyErr {
        let message = self.to_string();
        let py_err = if self.is_alignment() {
            AlignmentError::new_err(message)
        } else if self.is_bounds() {
            BoundsError::new_err(message)
        } else {
            LayoutError::new_err(message)
        };
        with_kind(py, py_err, self.kind())
    }
}

/// Layout errors as the core's; `MemoryError` when allocation fails;
/// `CastError` (a `TypeError`) for a conversion `same_kind` refuses;
/// `ValueError` for a bad alignment or size.
impl IntoPyErr for Error {
    fn into_py_err(self, py: Python<'_>) -> PyErr {
        match self {
            Error::Layout(err) => err.into_py_err(py),
            Error::Alloc { .. } => PyMemoryError::new_err(self.to_string()),
            Error::Cast { .. } => CastError::new_err(self.to_string()),
            // BadAlign, SizeMismatch, Dequantize (and any later variant: the
            // enum is non-exhaustive outside its crate).
            _ => PyValueError::new_err(self.to_string()),
        }
    }
}

/// The built-in exception for each shared-memory error (`FileNotFoundError`,
/// `FileExistsError`, `TimeoutError`, ...); a bad stored plan as the core's.
impl IntoPyErr for bytelens::SharedError {
    fn into_py_err(self, py: Python<'_>) -> PyErr {
        use bytelens::SharedError;
        let message = self.to_string();
        match self {
            SharedError::Missing { .. } => PyFileNotFoundError::new_err(message),
            SharedError::Exists { .. } => PyFileExistsError::new_err(message),
            SharedError::Timeout { .. } => PyTimeoutError::new_err(message),
            SharedError::AlreadyHeld | SharedError::NotHeld => PyRuntimeError::new_err(message),
            SharedError::Os { err, .. } => match err.kind() {
                std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(message),
                std::io::ErrorKind::PermissionDenied => PyPermissionError::new_err(message),
                std::io::ErrorKind::IsADirectory => PyIsADirectoryError::new_err(message),
                _ => PyOSError::new_err(message),
            },
            SharedError::BadPlan(err) => err.into_py_err(py),
            _ => PyValueError::new_err(message),
        }
    }
}

/// Layout errors keep their own classes (`BoundsError`, ...) and a refused
/// conversion is `CastError`; the rest are `GpuError`.
#[cfg(feature = "gpu")]
impl IntoPyErr for bytelens::gpu::GpuError {
    fn into_py_err(self, py: Python<'_>) -> PyErr {
        match self {
            bytelens::gpu::GpuError::Layout(err) => err.into_py_err(py),
            bytelens::gpu::GpuError::Host(err @ Error::Cast { .. }) => err.into_py_err(py),
            other => GpuError::new_err(other.to_string()),
        }
    }
}
