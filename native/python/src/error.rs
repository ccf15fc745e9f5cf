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
    PyBufferError, PyFileExistsError, PyFileNotFoundError, PyInterruptedError, PyIsADirectoryError,
    PyOSError, PyPermissionError, PyRuntimeError, PyTimeoutError,
};
use pyo3::exceptions::{PyKeyError, PyMemoryError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyType};

use bytelens::{Error, ErrorKind, LayoutError as CoreError, QuoteStyle, Quoted};

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
create_exception!(
    bytelens,
    RingClosedError,
    PyRuntimeError,
    "A ring that is closed: producers can no longer publish, and consumers have taken everything published."
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
    m.add("RingClosedError", py.get_type::<RingClosedError>())?;
    #[cfg(feature = "gpu")]
    m.add("GpuError", py.get_type::<GpuError>())?;
    Ok(())
}

/// `text` as a message quotes it ([`QuoteStyle::Argument`]): in double
/// quotes, control characters, quotes and backslashes escaped, and cut
/// after 64 characters (saying how long it was), so that no argument can
/// make a message long or break its line.
pub(crate) fn excerpt(text: &str) -> String {
    Quoted::new(text, 64, QuoteStyle::Argument).to_string()
}

/// The exception class the core's one table names for `kind`
/// ([`ErrorKind::python_class`]): one of this module's, or a built-in.
/// (`GpuError`'s kinds, which only the `gpu` feature raises, are its
/// base `RuntimeError` without it.)
fn class_of(py: Python<'_>, kind: ErrorKind) -> Bound<'_, PyType> {
    match kind.python_class() {
        "AlignmentError" => py.get_type::<AlignmentError>(),
        "BoundsError" => py.get_type::<BoundsError>(),
        "LayoutError" => py.get_type::<LayoutError>(),
        "CastError" => py.get_type::<CastError>(),
        "FormatError" => py.get_type::<FormatError>(),
        "RingClosedError" => py.get_type::<RingClosedError>(),
        #[cfg(feature = "gpu")]
        "GpuError" => py.get_type::<GpuError>(),
        "MemoryError" => py.get_type::<PyMemoryError>(),
        "ValueError" => py.get_type::<PyValueError>(),
        "TypeError" => py.get_type::<PyTypeError>(),
        "KeyError" => py.get_type::<PyKeyError>(),
        "FileNotFoundError" => py.get_type::<PyFileNotFoundError>(),
        "FileExistsError" => py.get_type::<PyFileExistsError>(),
        "IsADirectoryError" => py.get_type::<PyIsADirectoryError>(),
        "PermissionError" => py.get_type::<PyPermissionError>(),
        "TimeoutError" => py.get_type::<PyTimeoutError>(),
        "OSError" => py.get_type::<PyOSError>(),
        "InterruptedError" => py.get_type::<PyInterruptedError>(),
        "BufferError" => py.get_type::<PyBufferError>(),
        // RuntimeError, GpuError without the `gpu` feature, and any class
        // a later row names before this match learns it (the Python test
        // of kinds fails then: the class is not the table's).
        _ => py.get_type::<PyRuntimeError>(),
    }
}

/// The exception of `kind`'s class (see [`class_of`]) with `message`, and
/// `kind`'s name as its `kind` attribute.
pub(crate) fn error_of_kind(py: Python<'_>, kind: ErrorKind, message: String) -> PyErr {
    with_kind(py, PyErr::from_type(class_of(py, kind), message), kind)
}

/// `err` with its `kind` attribute set. Setting an attribute on a fresh
/// exception instance cannot fail in practice; if it did, the exception
/// without `kind` is still the right one to raise.
fn with_kind(py: Python<'_>, err: PyErr, kind: ErrorKind) -> PyErr {
    let _ = err.value(py).setattr("kind", kind.name());
    err
}

/// `error_kinds()`: the core's table of kinds as the extension raises
/// them, one `(kind, class name, class)` a kind, `class` the exception an
/// error of that kind raises.
#[pyfunction]
pub(crate) fn error_kinds(py: Python<'_>) -> Vec<(&'static str, &'static str, Bound<'_, PyType>)> {
    ErrorKind::ALL
        .iter()
        .map(|&kind| (kind.name(), kind.python_class(), class_of(py, kind)))
        .collect()
}

/// `quoted(text, keep, style)`: `text` as the core's one quoting helper
/// ([`Quoted`]) writes it in `style`, a [`QuoteStyle::name`] (`"name"`,
/// `"header"`, `"argument"`, `"py_short"`, `"py_short_repr"`,
/// `"py_quote"`, `"py_printable"`, `"py_repr"`), keeping about `keep`
/// characters. A `str` with surrogates (a file name `os.fsdecode` read)
/// is quoted code point by code point, as Python escapes it.
#[pyfunction]
pub(crate) fn quoted(text: &Bound<'_, PyString>, keep: usize, style: &str) -> PyResult<String> {
    let Some(style) = QuoteStyle::from_name(style) else {
        let names: Vec<&str> = QuoteStyle::ALL.iter().map(|s| s.name()).collect();
        return Err(PyValueError::new_err(format!(
            "no quoting style {}; the styles are {}",
            excerpt(style),
            names.join(", ")
        )));
    };
    quote(text, keep, style)
}

/// `text` quoted in `style` (see [`quoted`]), surrogates and all.
pub(crate) fn quote(
    text: &Bound<'_, PyString>,
    keep: usize,
    style: QuoteStyle,
) -> PyResult<String> {
    if let Ok(text) = text.to_str() {
        return Ok(Quoted::new(text, keep, style).to_string());
    }
    // Surrogates: UTF-8 with them written as three bytes each, which
    // `Quoted::from_bytes` reads back as the same code points.
    let bytes = text.call_method1("encode", ("utf-8", "surrogatepass"))?;
    let bytes = bytes.cast::<PyBytes>()?;
    Ok(Quoted::from_bytes(bytes.as_bytes(), keep, style).to_string())
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

/// The exception of the error's kind, with the error's message and the
/// kind's name as its `kind` attribute: `AlignmentError`, `BoundsError` or
/// `LayoutError` for the core's (`"Misaligned"`, `"OutOfBounds"`,
/// `"NeedsCopy"`, ...).
impl IntoPyErr for CoreError {
    fn into_py_err(self, py: Python<'_>) -> PyErr {
        error_of_kind(py, self.kind(), self.to_string())
    }
}

/// Layout errors as the core's; `MemoryError` when allocation fails;
/// `CastError` (a `TypeError`) for a conversion `same_kind` refuses;
/// `ValueError` for a bad alignment or size: its kind's class.
impl IntoPyErr for Error {
    fn into_py_err(self, py: Python<'_>) -> PyErr {
        error_of_kind(py, self.kind(), self.to_string())
    }
}

/// The built-in exception for each shared-memory error's kind
/// (`FileNotFoundError`, `FileExistsError`, `TimeoutError`, ...); a bad
/// stored plan as the core's, with the core's message.
impl IntoPyErr for bytelens::SharedError {
    fn into_py_err(self, py: Python<'_>) -> PyErr {
        match self {
            bytelens::SharedError::BadPlan(err) => err.into_py_err(py),
            other => error_of_kind(py, other.kind(), other.to_string()),
        }
    }
}

/// A ring's errors by kind: `RingClosedError`, `TimeoutError`,
/// `RuntimeError`, or the shared-memory error's class.
impl IntoPyErr for bytelens::RingError {
    fn into_py_err(self, py: Python<'_>) -> PyErr {
        match self {
            bytelens::RingError::Shared(err) => err.into_py_err(py),
            other => error_of_kind(py, other.kind(), other.to_string()),
        }
    }
}

/// `GpuError` for the GPU's own kinds; layout errors keep their classes
/// (`BoundsError`, ...), a refused conversion is `CastError` and memory
/// that could not be allocated `MemoryError`, as everywhere else.
#[cfg(feature = "gpu")]
impl IntoPyErr for bytelens::gpu::GpuError {
    fn into_py_err(self, py: Python<'_>) -> PyErr {
        error_of_kind(py, self.kind(), self.to_string())
    }
}
