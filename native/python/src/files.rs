//! The core's file rules for `bytelens._files` (`bl.load`, `bl.save`,
//! `bl.inspect`) and the inspect command, so that the Python code keeps no
//! dtype rule of its own:
//!
//! - `read_header`: the core's `.npy` and safetensors header readers, each
//!   array with how it can be handed out (a view, a copy and why, or not at
//!   all and why);
//! - `file_dtype`: what the file formats need of a dtype (its safetensors
//!   code, whether an `.npy` header can name it, whether it is a float);
//! - `read_elements`: elements read from bytes by the core's `Scalar`, for
//!   the inspect command's hexdump;
//!
//! `bl.save` is `files_save`'s, reports and raw files `files_report`'s,
//! `bl.load` `files_load`'s.
//!
//! A `bytelens::files::Error` becomes its Python exception here
//! ([`IntoPyErr`]), the class its `python_exception()` names.

use std::fmt;
use std::sync::Mutex;

use pyo3::exceptions::{PyIndexError, PyMemoryError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyTuple};

use super::dtype::to_descr;
use super::error::{FormatError, IntoPyErr};
use bytelens::files::{
    Access, FileArray, FileHeader, GgufValue, OsDetail, ValueType, read_header as read,
};
use bytelens::{Escaped, Scalar};

/// The header of an `.npy`, safetensors or GGUF file of `length` bytes,
/// from `head`, its first bytes: a dict with `format`, `version`,
/// `data_start`, `metadata` (a dict, in the header's order) and `arrays`, a sequence
/// (`len`, indexing, iteration) of dicts with `name`, `dtype` (as the file
/// spells it), `descr` (bytelens's type string, or None where bytelens has
/// none), `shape`, `fortran`, `offset`, `nbytes`, `strides` (None without
/// a `descr`), `access` (`"view"`, `"copy"`, `"blocks"` or `"none"`: how a
/// mapping of the file that starts at a page boundary can hand it out,
/// where the header lies at byte `base` of the file), `why` (the reason
/// for a copy or for none, with the numbers; None otherwise) and `ggml`.
/// Where `head` ends inside the header, `{"need": n}`: read `n` bytes and
/// call again. Anything wrong with the header raises `FormatError`.
///
/// Memory stays in proportion to the header: the arrays are kept as the
/// core read them (about 200 bytes each, a few times the smallest entry a
/// header can hold) and each dict is made when it is asked for, its
/// strings shared with the other arrays' (a header of millions of empty
/// tensors held a dict of eleven fresh objects for each, about 50 times
/// the header's size); the metadata dict is made straight from the core's
/// entries, which are dropped before this returns. Every Python object is made by a
/// call that reports failure, so that running out of memory is a
/// `MemoryError` (or the core's `FormatError`), never a panic or an abort.
#[pyfunction]
#[pyo3(signature = (head, length, base = 0))]
pub(crate) fn read_header<'py>(
    py: Python<'py>,
    head: &[u8],
    length: u64,
    base: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let out = new::dict(py)?;
    let header = match read(head, length) {
        Ok(header) => header,
        Err(err) => match err.more_needed(head.len()) {
            Some(need) => {
                out.set_item(new::str(py, "need")?, new::u64(py, need)?)?;
                return Ok(out);
            }
            None => return Err(FormatError::new_err(err.to_string())),
        },
    };
    let version = new::pair(
        py,
        new::u64(py, header.version.0.into())?,
        new::u64(py, header.version.1.into())?,
    )?;
    out.set_item(new::str(py, "format")?, new::str(py, header.format.name())?)?;
    out.set_item(new::str(py, "version")?, version)?;
    out.set_item(
        new::str(py, "data_start")?,
        new::u64(py, header.data_start)?,
    )?;
    let metadata = if header.gguf.is_empty() {
        let pairs = new::dict(py)?;
        for (key, value) in header.metadata.iter() {
            pairs.set_item(new::str(py, key)?, new::str(py, value)?)?;
        }
        pairs
    } else {
        gguf_metadata(py, &header, head)?
    };
    out.set_item(new::str(py, "metadata")?, metadata)?;
    // The core's metadata is all in the dict now: only the arrays are kept.
    let arrays = HeaderArrays::new(py, header.arrays, base)?;
    out.set_item(new::str(py, "arrays")?, Bound::new(py, arrays)?)?;
    Ok(out)
}

/// The arrays of a header ([`read_header`]'s `arrays`): a sequence that
/// makes each array's dict when it is asked for.
#[pyclass(name = "_HeaderArrays", module = "bytelens._native", frozen, sequence)]
pub(crate) struct HeaderArrays {
    arrays: Vec<FileArray>,
    base: u64,
    /// The dicts' keys, made once.
    keys: [Py<PyAny>; 11],
    /// Strings many arrays share (dtypes, descrs, ggml types, accesses),
    /// each made once: a name of at most 16 bytes and its string.
    shared: Mutex<Vec<(ShortName, Py<PyAny>)>>,
}

/// A short text (a dtype's or a block type's name) as a key of the shared
/// strings; longer ones are not shared.
type ShortName = ([u8; 16], u8);

const KEYS: [&str; 11] = [
    "name", "dtype", "descr", "shape", "fortran", "offset", "nbytes", "strides", "access", "why",
    "ggml",
];

impl HeaderArrays {
    fn new(py: Python<'_>, arrays: Vec<FileArray>, base: u64) -> PyResult<HeaderArrays> {
        let mut keys = Vec::with_capacity(KEYS.len());
        for key in KEYS {
            keys.push(new::str(py, key)?.unbind());
        }
        let keys = keys
            .try_into()
            .map_err(|_| PyValueError::new_err("eleven keys"))?;
        Ok(HeaderArrays {
            arrays,
            base,
            keys,
            shared: Mutex::new(Vec::new()),
        })
    }

    /// `text` as a Python string, the same object for every array where it
    /// is short (a dtype's name).
    fn shared<'py>(&self, py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
        let Some(key) = short_name(text) else {
            return new::str(py, text);
        };
        let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, s)) = shared.iter().find(|(k, _)| *k == key) {
            return Ok(s.bind(py).clone());
        }
        let s = new::str(py, text)?;
        // A few dozen dtypes at most: the list stays short.
        if shared.len() < 64 {
            shared
                .try_reserve(1)
                .map_err(|_| PyMemoryError::new_err(()))?;
            shared.push((key, s.clone().unbind()));
        }
        Ok(s)
    }
}

fn short_name(text: &str) -> Option<ShortName> {
    let mut key = [0u8; 16];
    key.get_mut(..text.len())?.copy_from_slice(text.as_bytes());
    Some((key, text.len() as u8))
}

#[pymethods]
impl HeaderArrays {
    fn __len__(&self) -> usize {
        self.arrays.len()
    }

    fn __getitem__<'py>(&self, py: Python<'py>, index: isize) -> PyResult<Bound<'py, PyDict>> {
        let n = self.arrays.len();
        let at = if index < 0 { index + n as isize } else { index };
        let Some(array) = usize::try_from(at).ok().and_then(|i| self.arrays.get(i)) else {
            return Err(PyIndexError::new_err(format!(
                "array {index} of a header of {n} arrays"
            )));
        };
        // None without a descr; on a 64-bit host every header the core
        // reads has a layout (its shapes are held to the 64-bit rule).
        let strides = match array.layout() {
            Ok(layout) => new::tuple_of(py, layout.strides().iter(), |&s| new::i64(py, s as i64))?,
            Err(_) => py.None().into_bound(py),
        };
        let access = array.access(self.base);
        let (how, why) = match &access {
            Access::View => ("view", None),
            Access::Misaligned { .. } => ("copy", Some(access.to_string())),
            Access::Blocks { .. } => ("blocks", None),
            _ => ("none", Some(access.to_string())),
        };
        let none = || py.None().into_bound(py);
        let descr = match array.descr {
            Some(d) => {
                // A type string is a few bytes: written on the stack, so
                // that no allocation here can fail out of Python's sight.
                let mut text = bytelens::ShortStr::default();
                match fmt::write(&mut text, format_args!("{d}")) {
                    Ok(()) => self.shared(py, text.as_str())?,
                    Err(_) => new::str(py, &d.to_string())?,
                }
            }
            None => none(),
        };
        let why = match why {
            Some(why) => new::str(py, &why)?,
            None => none(),
        };
        let ggml = match array.ggml {
            Some(t) => self.shared(py, t.name())?,
            None => none(),
        };
        let values = [
            new::str(py, &array.name)?,
            self.shared(py, &array.dtype)?,
            descr,
            new::tuple_of(py, array.shape.iter(), |&n| new::u64(py, n))?,
            PyBool::new(py, array.fortran).to_owned().into_any(),
            new::u64(py, array.offset)?,
            new::u64(py, array.nbytes)?,
            strides,
            self.shared(py, how)?,
            why,
            ggml,
        ];
        let item = new::dict(py)?;
        for (key, value) in self.keys.iter().zip(values) {
            item.set_item(key.bind(py), value)?;
        }
        Ok(item)
    }
}

/// Python objects made by calls that report failure: each C-API
/// constructor's NULL (for want of memory, a `MemoryError`) is returned as
/// the error Python set, where pyo3's infallible constructors panic.
pub(crate) mod new {
    use pyo3::ffi;
    use pyo3::prelude::*;

    /// The new reference a C-API constructor returned, or the error it set.
    fn owned(py: Python<'_>, ptr: *mut ffi::PyObject) -> PyResult<Bound<'_, PyAny>> {
        // SAFETY: `ptr` is what a C-API constructor returned: a new (owned)
        // reference, or NULL with an exception set, which this returns.
        unsafe { Bound::from_owned_ptr_or_err(py, ptr) }
    }

    pub(crate) fn str<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
        // A str's length fits in isize (no allocation is larger).
        // SAFETY: `text` is valid UTF-8 of `text.len()` bytes, which
        // PyUnicode_FromStringAndSize copies.
        owned(py, unsafe {
            ffi::PyUnicode_FromStringAndSize(text.as_ptr().cast(), text.len() as ffi::Py_ssize_t)
        })
    }

    pub(crate) fn bytes<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyAny>> {
        // SAFETY: `data` is `data.len()` readable bytes, which
        // PyBytes_FromStringAndSize copies.
        owned(py, unsafe {
            ffi::PyBytes_FromStringAndSize(data.as_ptr().cast(), data.len() as ffi::Py_ssize_t)
        })
    }

    pub(crate) fn u64(py: Python<'_>, n: u64) -> PyResult<Bound<'_, PyAny>> {
        // SAFETY: a plain constructor.
        owned(py, unsafe { ffi::PyLong_FromUnsignedLongLong(n) })
    }

    pub(crate) fn i64(py: Python<'_>, n: i64) -> PyResult<Bound<'_, PyAny>> {
        // SAFETY: a plain constructor.
        owned(py, unsafe { ffi::PyLong_FromLongLong(n) })
    }

    pub(crate) fn f64(py: Python<'_>, x: f64) -> PyResult<Bound<'_, PyAny>> {
        // SAFETY: a plain constructor.
        owned(py, unsafe { ffi::PyFloat_FromDouble(x) })
    }

    pub(crate) fn dict(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
        // SAFETY: a plain constructor; the object it returns is a dict.
        Ok(unsafe { owned(py, ffi::PyDict_New())?.cast_into_unchecked() })
    }

    pub(crate) fn list(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyList>> {
        // SAFETY: a plain constructor; the object it returns is a list.
        Ok(unsafe { owned(py, ffi::PyList_New(0))?.cast_into_unchecked() })
    }

    /// A list of `items` as Python strings (GGUF's token lists).
    pub(crate) fn str_list<'py, 'a>(
        py: Python<'py>,
        items: impl Iterator<Item = &'a str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let out = list(py)?;
        for item in items {
            out.append(str(py, item)?)?;
        }
        Ok(out.into_any())
    }

    /// numpy's dtype string of a GGUF array of `kind` (little-endian).
    pub(crate) fn gguf_dtype(kind: bytelens::files::ValueType) -> String {
        match kind {
            bytelens::files::ValueType::Bool => "?".to_owned(),
            other => format!("<{}{}", &other.name()[..1], other.size().unwrap_or(1)),
        }
    }

    /// A tuple of the objects `f` makes of `items`.
    pub(crate) fn tuple_of<'py, T>(
        py: Python<'py>,
        items: impl ExactSizeIterator<Item = T>,
        mut f: impl FnMut(T) -> PyResult<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let n = items.len();
        // SAFETY: a plain constructor (n is a shape's length, at most 32).
        let tuple = owned(py, unsafe { ffi::PyTuple_New(n as ffi::Py_ssize_t) })?;
        for (i, item) in items.take(n).enumerate() {
            let item = f(item)?;
            // SAFETY: `tuple` is a new tuple of `n` slots, seen by no other
            // code yet, and `i < n`; PyTuple_SetItem takes the reference
            // `into_ptr` gives up. A slot left empty by an error above is
            // NULL, which a tuple's deallocation skips.
            unsafe { ffi::PyTuple_SetItem(tuple.as_ptr(), i as ffi::Py_ssize_t, item.into_ptr()) };
        }
        Ok(tuple)
    }

    pub(crate) fn pair<'py>(
        py: Python<'py>,
        a: Bound<'py, PyAny>,
        b: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        tuple_of(py, [a, b].into_iter(), Ok)
    }
}

/// A GGUF header's metadata as a dict in file order, each
/// value a Python `int`, `float`, `bool` or `str`, an array of strings a
/// `list` of `str`, any other array a read-only numpy array (little-endian,
/// one copy of its bytes): a 128k-token vocabulary costs milliseconds.
fn gguf_metadata<'py>(
    py: Python<'py>,
    header: &FileHeader,
    head: &[u8],
) -> PyResult<Bound<'py, PyDict>> {
    let frombuffer = py.import("numpy")?.getattr("frombuffer")?;
    let out = new::dict(py)?;
    for entry in header.gguf.iter() {
        let Some(value) = entry.value(head) else {
            return Err(FormatError::new_err(format!(
                "the value of {} lies past the header",
                Escaped(entry.key)
            )));
        };
        let value = match value {
            GgufValue::UInt(n) => new::u64(py, n)?,
            GgufValue::Int(n) => new::i64(py, n)?,
            GgufValue::Float(x) => new::f64(py, x)?,
            GgufValue::Bool(b) => PyBool::new(py, b).to_owned().into_any(),
            GgufValue::Str(text) => new::str(py, text)?,
            GgufValue::Array {
                kind: ValueType::String,
                ..
            } => new::str_list(py, value.strings())?,
            GgufValue::Array { kind, bytes, .. } => {
                let dtype = new::gguf_dtype(kind);
                let args = new::pair(py, new::bytes(py, bytes)?, new::str(py, &dtype)?)?;
                frombuffer.call1(args.cast_into::<PyTuple>()?)?
            }
        };
        out.set_item(new::str(py, entry.key)?, value)?;
    }
    Ok(out)
}

/// A ggml block type from the core's table, by name (any case): a dict
/// with `name` (ggml's, `"Q4_K"`), `code`, `block` (elements per block),
/// `bytes` (per block), `quantized`, `dequantizes` (whether bytelens has a
/// kernel for it) and `fields`, a list of `(name, type string, count,
/// offset)` (`("d", "<f2", 1, 0)`). None for a name the table lacks.
#[pyfunction]
pub(crate) fn ggml_type<'py>(py: Python<'py>, name: &str) -> PyResult<Option<Bound<'py, PyDict>>> {
    let Some(ggml) = bytelens::files::GgmlType::from_name(name) else {
        return Ok(None);
    };
    let info = ggml.info();
    let out = PyDict::new(py);
    out.set_item("name", info.name)?;
    out.set_item("code", info.code)?;
    out.set_item("block", info.block)?;
    out.set_item("bytes", info.bytes)?;
    out.set_item("quantized", ggml.is_quantized())?;
    out.set_item("dequantizes", bytelens::can_dequantize(ggml))?;
    let fields = PyList::empty(py);
    for f in info.fields {
        let descr = bytelens::Descr::new(f.dtype, bytelens::ByteOrder::Little).to_string();
        fields.append((f.name, descr, f.count, f.offset))?;
    }
    out.set_item("fields", fields)?;
    Ok(Some(out))
}

/// What the file formats need of `dtype` (anything `Buffer.view` takes),
/// from the core's dtype table: a dict with `name` (`"float8_e4m3fn"`),
/// `descr` (bytelens's type string, in the dtype's byte order), `size`,
/// `safetensors` (its code, `"F8_E4M3"`), `npy` (whether an `.npy` header
/// can name it: numpy's own dtypes, not ml_dtypes') and `float`.
#[pyfunction]
pub(crate) fn file_dtype<'py>(dtype: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    let descr = to_descr(dtype)?;
    let info = descr.dtype.info();
    let out = PyDict::new(dtype.py());
    out.set_item("name", descr.dtype.name())?;
    out.set_item("descr", descr.to_string())?;
    out.set_item("size", info.size)?;
    out.set_item("safetensors", info.safetensors)?;
    out.set_item("npy", info.npy)?;
    out.set_item("float", info.float.is_some())?;
    Ok(out)
}

/// The elements of `dtype` that start at each of `offsets` in `data`, read
/// by the core (its `Scalar`, which decodes every float format, bfloat16
/// and float8 included): `bool`, `int` or `float` each, and None for one
/// that `data` ends inside.
#[pyfunction]
pub(crate) fn read_elements<'py>(
    dtype: &Bound<'py, PyAny>,
    data: &[u8],
    offsets: Vec<usize>,
) -> PyResult<Bound<'py, PyList>> {
    let py = dtype.py();
    let descr = to_descr(dtype)?;
    let size = descr.dtype.size();
    let out = PyList::empty(py);
    for at in offsets {
        let Some(bytes) = at.checked_add(size).and_then(|end| data.get(at..end)) else {
            out.append(py.None())?;
            continue;
        };
        let value = Scalar::read(descr, bytes).map_err(|err| err.into_py_err(py))?;
        let item = match value {
            Scalar::Bool(b) => PyBool::new(py, b).to_owned().into_any(),
            other if other.dtype().is_float() => PyFloat::new(py, other.to_f64()).into_any(),
            other => match other.to_i128() {
                Some(n) => PyInt::new(py, n).into_any(),
                None => {
                    return Err(PyValueError::new_err(format!(
                        "{} is neither a float nor an integer dtype",
                        descr.dtype
                    )));
                }
            },
        };
        out.append(item)?;
    }
    Ok(out)
}

/// The exception `bytelens.load`, `save` and `inspect` raise for each
/// error of the Rust file layer: the class its `python_exception()` names,
/// with its message (a layout error's subclass and `kind` from its source).
impl IntoPyErr for bytelens::files::Error {
    fn into_py_err(self, py: Python<'_>) -> PyErr {
        use bytelens::files::Error;
        use pyo3::exceptions::{
            PyFileExistsError, PyFileNotFoundError, PyIsADirectoryError, PyKeyError, PyOSError,
            PyPermissionError,
        };
        let message = self.to_string();
        let kind = self.kind();
        match self {
            // The core ran out of memory reading the header: MemoryError,
            // with its kind, as every failed allocation of bytelens'.
            Error::Format { .. } if kind == bytelens::ErrorKind::OutOfMemory => {
                super::error::error_of_kind(py, kind, message)
            }
            Error::Layout { message, source } => {
                let core = source.into_py_err(py);
                let err = PyErr::from_type(core.get_type(py), message);
                if let Ok(kind) = core.value(py).getattr("kind") {
                    let _ = err.value(py).setattr("kind", kind);
                }
                err
            }
            Error::NotFound { name } => PyKeyError::new_err(name),
            Error::Format { .. } => FormatError::new_err(message),
            Error::Value { .. } => PyValueError::new_err(message),
            Error::Type { .. } => PyTypeError::new_err(message),
            Error::Io(err) => match err.get_ref().and_then(|e| e.downcast_ref::<OsDetail>()) {
                Some(detail) => os_error(py, detail, err.kind()),
                None => match err.kind() {
                    std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(message),
                    std::io::ErrorKind::IsADirectory => PyIsADirectoryError::new_err(message),
                    std::io::ErrorKind::PermissionDenied => PyPermissionError::new_err(message),
                    std::io::ErrorKind::AlreadyExists => PyFileExistsError::new_err(message),
                    // A header's bytes that could not be had: MemoryError,
                    // with its kind, as the other allocations' failures.
                    std::io::ErrorKind::OutOfMemory => {
                        super::error::error_of_kind(py, bytelens::ErrorKind::OutOfMemory, message)
                    }
                    _ => PyOSError::new_err(message),
                },
            },
            _ => PyValueError::new_err(message),
        }
    }
}

/// The `OSError` Python's `bl.save` raised for what `detail` says: the
/// class and `errno` Python gives the system's code (`PermissionError`
/// and `EACCES` where Windows would not replace the file, its code as
/// `winerror`), `[Errno N] message: 'filename'` where a file name is set,
/// else the message alone with `errno` set.
fn os_error(py: Python<'_>, detail: &OsDetail, kind: std::io::ErrorKind) -> PyErr {
    use pyo3::exceptions::{PyOSError, PyPermissionError};
    /// `EACCES`, the same number on every system Python runs on.
    const EACCES: i32 = 13;
    let made = || -> PyResult<PyErr> {
        let os_error = py.get_type::<PyOSError>();
        let (class, errno) = match detail.code {
            _ if detail.windows_refused => (py.get_type::<PyPermissionError>(), Some(EACCES)),
            // Python's own mapping of the code to a class and an errno.
            Some(code) => {
                let probe = if cfg!(windows) {
                    os_error.call1((0, "", py.None(), code))?
                } else {
                    os_error.call1((code, ""))?
                };
                (probe.get_type(), probe.getattr("errno")?.extract()?)
            }
            None => {
                let err = bytelens::files::Error::Io(std::io::Error::from(kind));
                (err.into_py_err(py).get_type(py), None)
            }
        };
        let value = match (&detail.filename, errno) {
            (Some(filename), Some(errno)) => class.call1((
                errno,
                &detail.message,
                filename.as_os_str(),
                py.None(),
                detail.filename2.as_deref().map(std::path::Path::as_os_str),
            ))?,
            _ => {
                let value = class.call1((&detail.message,))?;
                value.setattr("errno", errno)?;
                if let Some(filename) = &detail.filename {
                    value.setattr("filename", filename.as_os_str())?;
                }
                value
            }
        };
        if detail.windows_refused {
            if let Some(code) = detail.code {
                value.setattr("winerror", code)?;
            }
        }
        Ok(PyErr::from_value(value))
    };
    made().unwrap_or_else(|err| err)
}
