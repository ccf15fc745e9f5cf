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
//! - `save_arrays`: `bl.save` itself: its arguments checked, laid out
//!   (`bytelens::files::plan_save`) and written by the Rust file layer's
//!   one writer (`bytelens::files::write_atomically`);
//! - `save_file` and `inspect_file`: `bytelens::files::save` and
//!   `bytelens::files::inspect` themselves, the Rust file layer the package
//!   is checked against (the same bytes as `bl.save`, the same report and
//!   errors as `bl.inspect`).
//! - `inspect_raw` and `elements`: `bytelens::files::describe_raw` (a raw
//!   file as a view and/or a plan's fields, for `bl.inspect(dtype=...,
//!   plan=...)`) and `bytelens::files::elements` (the inspect command's
//!   `--dump`), the report as [`report_dict`] gives it.
//! - `report_text`: `str(FileReport)`, a `FileReport` (one built by hand
//!   too) read back into a `bytelens::files::Report`, whose `Display` it is.
//!
//! A `bytelens::files::Error` becomes its Python exception here
//! ([`IntoPyErr`]), the class its `python_exception()` names.

use std::fmt;
use std::sync::Mutex;

use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyIndexError, PyMemoryError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyMapping, PyString, PyTuple};

use super::dtype::to_descr;
use super::error::{FormatError, IntoPyErr, PyErrResult, quote};
use super::layout::Int;
use super::quantized::PyQuantized;
use super::source::Source;
use bytelens::files::{
    Access, FileArray, FileHeader, GgufValue, MetaValue, OsDetail, Report, ValueType,
    read_header as read,
};
use bytelens::{Escaped, QuoteStyle, Quoted, Scalar};

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
            } => {
                let strings = new::list(py)?;
                for s in value.strings() {
                    strings.append(new::str(py, s)?)?;
                }
                strings.into_any()
            }
            GgufValue::Array { kind, bytes, .. } => {
                let dtype = match kind {
                    ValueType::Bool => "?".to_owned(),
                    other => format!("<{}{}", &other.name()[..1], other.size().unwrap_or(1)),
                };
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
        match self {
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

/// `bytelens::files::save(path, arrays, metadata, align)` itself: each
/// `(name, array)` read where it is (any array numpy reads, in any layout),
/// the metadata's `(key, value)` strings in order. The format is the
/// path's extension, as for `bl.save`. A test writes the same arrays with
/// `bl.save` and compares the bytes.
#[pyfunction]
#[pyo3(signature = (path, arrays, metadata = Vec::new(), align = 64))]
pub(crate) fn save_file(
    py: Python<'_>,
    path: std::path::PathBuf,
    arrays: Vec<(String, Bound<'_, PyAny>)>,
    metadata: Vec<(String, String)>,
    align: usize,
) -> PyResult<()> {
    let sources = arrays
        .iter()
        .map(|(name, array)| Ok((name.as_str(), Source::read(array, "save")?)))
        .collect::<PyResult<Vec<_>>>()?;
    let refs = sources
        .iter()
        .map(|(name, source)| {
            let array = bytelens::files::ArrayRef::new(source.bytes(), *source.layout());
            Ok((*name, array.py_err(py)?))
        })
        .collect::<PyResult<Vec<_>>>()?;
    let metadata: Vec<(&str, &str)> = metadata
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    bytelens::files::save(&path, &refs, &metadata, align).py_err(py)
}

/// `bl.save(path, arrays, metadata, align=align)`: its arguments checked,
/// in `bl.save`'s order and words, laid out by
/// `bytelens::files::plan_save`, and written atomically by
/// `bytelens::files::write_atomically` (the GIL released while it
/// writes): the header's bytes, then each array's, the user's array where
/// its bytes are written as they lie (contiguous in the file's order and
/// byte order: no copy), or a new C-ordered one numpy converted (gathered,
/// or swapped to little-endian). A failed write raises what `bl.save`
/// always raised ([`IntoPyErr`] for `bytelens::files::Error`).
///
/// `path` is the path as a str (`os.fsdecode`d); `arrays` what `bl.save`
/// was given: one array-like or a mapping of one for `.npy`, a mapping of
/// names to array-likes for safetensors, each made an array by
/// `numpy.asarray`. A dtype bytelens lacks (datetimes, strings, complex,
/// records, raw bytes), which only numpy can name, is refused here as
/// `bl.save` words it, and so is a `bytelens.Quantized` (neither format
/// has its type, and `numpy.asarray` would dequantise it to float32
/// without a word).
#[pyfunction]
pub(crate) fn save_arrays<'py>(
    py: Python<'py>,
    path: &Bound<'py, PyString>,
    arrays: &Bound<'py, PyAny>,
    metadata: &Bound<'py, PyAny>,
    align: &Bound<'py, PyAny>,
) -> PyResult<()> {
    use bytelens::ByteOrder;
    use bytelens::files::{ArrayRef, SavePart, plan_save};
    let align = save_align(align)?;
    // Only the suffix matters here: a surrogate (a byte os.fsdecode could
    // not decode) is never part of it.
    let suffix = path.to_string_lossy();
    let npy = suffix.ends_with(".npy");
    let asarray = py.import("numpy")?.getattr("asarray")?;
    let mut named: Vec<(String, Bound<'py, PyAny>)> = Vec::new();
    let mut pairs: Vec<(String, String)> = Vec::new();
    if npy {
        if metadata.is_truthy()? {
            let message = path.add(": an .npy file has no metadata; safetensors files do")?;
            return Err(PyValueError::new_err(message.unbind()));
        }
        let values: Vec<Bound<'py, PyAny>> = match arrays.cast::<PyMapping>() {
            Ok(mapping) => mapping.values()?.iter().collect(),
            Err(_) => vec![arrays.clone()],
        };
        if let [value] = values.as_slice() {
            refuse_quantized(path, "array", value)?;
        }
        for value in values {
            named.push(("array".to_owned(), asarray.call1((value,))?));
        }
    } else if suffix.ends_with(".safetensors") {
        let Ok(arrays) = arrays.cast::<PyMapping>() else {
            return Err(PyTypeError::new_err(
                "a safetensors file holds named arrays: pass a dict of name -> array",
            ));
        };
        if !metadata.is_none() && metadata.cast::<PyMapping>().is_err() {
            return Err(PyTypeError::new_err(format!(
                "metadata is a dict of str -> str, not {}",
                type_name(metadata)?
            )));
        }
        for item in arrays.call_method0("items")?.try_iter()? {
            let (name, array): (Bound<'py, PyAny>, Bound<'py, PyAny>) = item?.extract()?;
            let name = save_text(&name, "a tensor name")?;
            let what = format!("tensor {}", Quoted::new(&name, 64, QuoteStyle::PyShortRepr));
            refuse_quantized(path, &what, &array)?;
            named.push((name, asarray.call1((array,))?));
        }
        if metadata.is_truthy()? {
            for item in metadata.call_method0("items")?.try_iter()? {
                let (key, value): (Bound<'py, PyAny>, Bound<'py, PyAny>) = item?.extract()?;
                let key_text = save_text(&key, "a metadata key")?;
                let what = format!(
                    "metadata {}",
                    quote(&key.str()?, 64, QuoteStyle::PyShortRepr)?
                );
                pairs.push((key_text, save_text(&value, &what)?));
            }
        }
    }
    // Raises UnicodeEncodeError for a surrogate, as `bl.save` always has.
    let path = path.to_str()?;
    if !npy && !path.ends_with(".safetensors") {
        // Neither format: the plan's own error, before any array's.
        plan_save(path, &[], &[], align).py_err(py)?;
    }
    let mut sources = Vec::with_capacity(named.len());
    for (name, array) in &named {
        if let Ok(array) = array.cast::<PyUntypedArray>() {
            refuse_foreign(path, npy, name, array, align)?;
        }
        sources.push((name.as_str(), Source::read(array, "save")?));
    }
    let refs = sources
        .iter()
        .map(|(name, source)| {
            Ok((
                *name,
                ArrayRef::new(source.bytes(), *source.layout()).py_err(py)?,
            ))
        })
        .collect::<PyResult<Vec<_>>>()?;
    let metadata: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let plan = plan_save(path, &refs, &metadata, align).py_err(py)?;
    let mut converted = Vec::new();
    for part in &plan.parts {
        if part.as_it_lies(&refs).is_some() {
            continue;
        }
        // Converted by numpy, into C order and the byte order the plan
        // asks for: its byte swap and gather ran 25% and 10% faster than
        // the core's `copy_into` (64 MiB of float32, 2 cores), and bl.save
        // must not get slower. What is converted is the plan's to say.
        let (_, array) = &named[part.array()];
        let mut dtype = array.getattr("dtype")?;
        if let SavePart::Converted(_, to) = part {
            if to.order == ByteOrder::Little {
                dtype = dtype.call_method1("newbyteorder", ("<",))?;
            }
        }
        let kwargs = PyDict::new(py);
        kwargs.set_item("dtype", dtype)?;
        kwargs.set_item("order", "C")?;
        converted.push(Source::read(
            &asarray.call((array,), Some(&kwargs))?,
            "save",
        )?);
    }
    // Each converted array is C-contiguous: its span is its bytes.
    let mut converted = converted.iter();
    let mut bytes: Vec<&[u8]> = vec![&plan.head];
    for part in &plan.parts {
        bytes.push(match part.as_it_lies(&refs) {
            Some(lying) => lying,
            None => converted.next().map_or(&[][..], Source::bytes),
        });
    }
    let target = std::path::Path::new(path);
    py.detach(|| bytelens::files::write_atomically(target, &bytes))
        .py_err(py)
}

/// `bl.save`'s `align`: an int (not a bool), a power of two from 1 to
/// [`MAX_ALIGN`](bytelens::files::MAX_ALIGN) (the core checks it against
/// the widest itemsize).
fn save_align(align: &Bound<'_, PyAny>) -> PyResult<usize> {
    use bytelens::files::MAX_ALIGN;
    if align.is_instance_of::<PyBool>() || !align.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!(
            "align is an int, a power of two up to {MAX_ALIGN}, not {}",
            type_name(align)?
        )));
    }
    match align.extract::<usize>() {
        Ok(n) if n <= MAX_ALIGN && n.is_power_of_two() => Ok(n),
        _ => Err(PyValueError::new_err(format!(
            "align={}: a power of two from the widest dtype's itemsize up to {MAX_ALIGN}",
            align.str()?
        ))),
    }
}

/// `text` (a tensor name, a metadata key or value: `what`) as a `String`:
/// a `TypeError` for anything but a `str` (nothing is converted, so `1`
/// and `"1"` cannot both become `"1"`), a `ValueError` for a `str` that
/// UTF-8 cannot encode (a lone surrogate), with Python's own reason.
fn save_text(text: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    let Ok(string) = text.cast::<PyString>() else {
        return Err(PyTypeError::new_err(format!(
            "{what} must be a str, not {} ({})",
            type_name(text)?,
            quote(&text.repr()?, 64, QuoteStyle::PyShort)?
        )));
    };
    match string.to_str() {
        Ok(utf8) => Ok(utf8.to_owned()),
        Err(err) => {
            let err = err.value(text.py());
            Err(PyValueError::new_err(format!(
                "{what} {} is not valid Unicode ({} at index {}), so it cannot be written as UTF-8",
                quote(string, 64, QuoteStyle::PyShortRepr)?,
                err.getattr("reason")?,
                err.getattr("start")?
            )))
        }
    }
}

/// The `TypeError` `bl.save` raises for a `bytelens.Quantized` (a GGUF
/// tensor's blocks), `what` naming where it was given; nothing otherwise.
fn refuse_quantized(
    path: &Bound<'_, PyString>,
    what: &str,
    array: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let Ok(quantized) = array.cast::<PyQuantized>() else {
        return Ok(());
    };
    let message = path.add(format!(
        ": {what} is a quantised {} tensor of shape {}, which neither .npy nor safetensors can \
         hold: pass its values, q.dequantize(dtype) (float32, float16 or bfloat16), or load the \
         file with dequantize=\"float32\"",
        quantized.getattr("qtype")?,
        quantized.getattr("shape")?
    ))?;
    Err(PyTypeError::new_err(message.unbind()))
}

/// `type(value).__name__`.
fn type_name(value: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(value.get_type().getattr("__name__")?.str()?.to_string())
}

/// The error `bl.save` raises for an array whose numpy dtype bytelens
/// has no dtype for (nothing for one it has, except one that an `.npy`
/// header cannot name, said with numpy's type string for it).
fn refuse_foreign(
    path: &str,
    npy: bool,
    name: &str,
    array: &Bound<'_, PyUntypedArray>,
    align: usize,
) -> PyResult<()> {
    let dtype = array.dtype();
    let shown = dtype.str()?;
    let type_string = dtype.getattr("str")?.repr()?;
    if let Ok(descr) = to_descr(dtype.as_any()) {
        let info = descr.dtype.info();
        if npy && !info.npy {
            // np.save writes ml_dtypes' types as raw bytes ('<V1', '<V2'),
            // which every loader reads back as bytes.
            return Err(PyTypeError::new_err(format!(
                "{path}: an .npy header cannot name {} (np.save writes it as raw bytes {type_string}, \
                 and loaders read bytes back): save it to a .safetensors file, as {}",
                descr.dtype.name(),
                info.safetensors
            )));
        }
        return Ok(());
    }
    if !npy {
        return Err(PyTypeError::new_err(format!(
            "safetensors has no dtype for {shown} (tensor {}) that bytelens has: bl.save writes the \
             dtypes bytelens views, each under its safetensors code",
            bytelens::files::quoted64(name)
        )));
    }
    if dtype.has_object() || dtype.has_fields() {
        return Err(PyTypeError::new_err(format!(
            "save writes arrays of numbers, not {shown}"
        )));
    }
    if dtype.kind() == b'V' {
        return Err(PyTypeError::new_err(format!(
            "save writes arrays of numbers, not raw bytes ({shown})"
        )));
    }
    let itemsize = dtype.itemsize();
    if align < itemsize {
        return Err(PyValueError::new_err(format!(
            "align={align} is below the itemsize of {shown} ({itemsize} bytes): it could not keep it aligned"
        )));
    }
    Err(PyTypeError::new_err(format!(
        "{path}: bl.load could not map an .npy of dtype {shown} ({type_string}): bytelens has no such \
         dtype, and bl.save writes only what bl.load maps (np.save writes it)"
    )))
}

/// What `bytelens::files::inspect(path)` reports, as `bytelens inspect
/// FILE` prints it (`str(bl.inspect(path))`), or its error as the Python
/// exception `bl.inspect` raises.
#[pyfunction]
pub(crate) fn inspect_file(py: Python<'_>, path: std::path::PathBuf) -> PyResult<String> {
    let report = py.detach(|| bytelens::files::inspect(&path));
    Ok(report.py_err(py)?.to_string())
}

/// `bytelens::files::describe_raw`: the report of a raw file at `path` of
/// `size` bytes (opened by the caller; it is not read), described as
/// `plan`'s fields (a `Plan` or its text) and then one view of `dtype`
/// (with `offset`, `shape` and `strides` as `Buffer.view` takes them; no
/// view without a dtype), as [`report_dict`] gives it. Every error names
/// the file (and the field), in the order the package checks them: the
/// plan's text, its fields, the view. A `LayoutError` keeps its subclass
/// and `kind`; the `ValueError` or `TypeError` of a view argument (an
/// unknown dtype) keeps its class.
#[pyfunction]
#[pyo3(signature = (path, size, dtype = None, offset = None, shape = None, strides = None, plan = None))]
#[allow(clippy::too_many_arguments)] // `Buffer.view`'s arguments and a plan
pub(crate) fn inspect_raw<'py>(
    py: Python<'py>,
    path: &Bound<'py, pyo3::types::PyString>,
    size: u64,
    dtype: Option<&Bound<'py, PyAny>>,
    offset: Option<&Bound<'py, PyAny>>,
    shape: Option<&Bound<'py, PyAny>>,
    strides: Option<&Bound<'py, PyAny>>,
    plan: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    use bytelens::files::{describe_raw, read_plan};
    use bytelens::{OwnedPlan, ViewArgs};
    // A path Rust's text cannot hold (a lone surrogate) is shown replaced.
    let shown = path.to_string_lossy();
    let from_text: OwnedPlan;
    let plan = match plan {
        None => None,
        Some(p) => match p.cast::<super::layout::PyPlan>() {
            Ok(p) => Some(&p.get().plan),
            Err(_) => {
                let Ok(text) = p.extract::<String>() else {
                    return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                        "plan must be a Plan or its text, not {}",
                        p.get_type().name()?
                    )));
                };
                from_text = read_plan(&shown, &text).py_err(py)?;
                Some(&from_text)
            }
        },
    };
    let Some(dtype) = dtype else {
        let report = describe_raw(&shown, size, None, plan).py_err(py)?;
        return report_dict(py, report, None);
    };
    // The view's arguments, read as `Buffer.view` reads them.
    let read = || -> PyResult<_> {
        let Int(offset) = match offset {
            Some(o) => o.extract()?,
            None => Int(0),
        };
        let descr = to_descr(dtype)?;
        let shape = shape.map(super::layout::dims::<usize>).transpose()?;
        let strides = strides.map(super::layout::dims::<isize>).transpose()?;
        Ok((descr, offset, shape, strides))
    };
    let (descr, offset, shape, strides) = match read() {
        Ok(args) => args,
        Err(err) => {
            // The plan's fields are checked first, and their error is the one raised.
            describe_raw(&shown, size, None, plan).py_err(py)?;
            return Err(naming(py, err, &format!("{shown}: ")));
        }
    };
    let view = ViewArgs {
        offset,
        shape: shape.as_deref(),
        strides: strides.as_deref(),
        ..ViewArgs::new(descr)
    };
    let report = describe_raw(&shown, size, Some(view), plan).py_err(py)?;
    report_dict(py, report, None)
}

/// `err` with `prefix` before its message: a `LayoutError` of its own
/// class with its `kind`, a plain `ValueError` or `TypeError` as it is;
/// any other exception (a subclass whose constructor takes other
/// arguments) unchanged.
fn naming(py: Python<'_>, err: PyErr, prefix: &str) -> PyErr {
    use pyo3::exceptions::PyTypeError;
    let class = err.get_type(py);
    let message = format!("{prefix}{}", err.value(py));
    if err.is_instance_of::<super::error::LayoutError>(py) {
        let named = PyErr::from_type(class, message);
        if let Ok(kind) = err.value(py).getattr("kind") {
            let _ = named.value(py).setattr("kind", kind);
        }
        named
    } else if class.is(py.get_type::<PyValueError>()) || class.is(py.get_type::<PyTypeError>()) {
        PyErr::from_type(class, message)
    } else {
        err
    }
}

/// [`elements`]' pairs: each element's index and first byte.
type Found<'py> = Vec<(Bound<'py, PyTuple>, i64)>;

/// `bytelens::files::elements`: the elements of a view (its byte `offset`,
/// `shape` and byte `strides`) whose first byte lies in `lo..hi`, in the
/// view's order: `(index, byte)` pairs, at most `limit`, and whether some
/// were left out (the limit, or the search's budget, reached).
#[pyfunction]
pub(crate) fn elements<'py>(
    py: Python<'py>,
    offset: i64,
    shape: Vec<u64>,
    strides: Vec<i64>,
    lo: i64,
    hi: i64,
    limit: usize,
) -> PyResult<(Found<'py>, bool)> {
    if shape.len() != strides.len() {
        return Err(PyValueError::new_err(format!(
            "a shape of {} axes and strides of {}",
            shape.len(),
            strides.len()
        )));
    }
    let (found, more) = bytelens::files::elements(offset, &shape, &strides, lo..hi, limit);
    let items = found
        .into_iter()
        .map(|(index, byte)| Ok((PyTuple::new(py, index)?, byte)))
        .collect::<PyResult<Vec<_>>>()?;
    Ok((items, more))
}

/// `report` as a dict of `bytelens.FileReport`'s fields, each array made
/// by `array_info` (called with `ArrayInfo`'s fields by name), or a dict of
/// them without it. The report's arrays are dropped as they are made: a
/// header of millions of tensors is not held twice. Every Python object is
/// made by a call that reports failure ([`new`]): running out of memory is
/// a `MemoryError`, never a panic.
pub(crate) fn report_dict<'py>(
    py: Python<'py>,
    mut report: Report,
    array_info: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let out = new::dict(py)?;
    out.set_item(new::str(py, "path")?, new::str(py, &report.path)?)?;
    out.set_item(new::str(py, "format")?, new::str(py, report.format)?)?;
    out.set_item(new::str(py, "size")?, new::u64(py, report.size)?)?;
    let frombuffer = if report
        .metadata
        .iter()
        .any(|(_, v)| matches!(v, MetaValue::Array { .. }))
    {
        Some(py.import("numpy")?.getattr("frombuffer")?)
    } else {
        None
    };
    let metadata = new::dict(py)?;
    for (key, value) in std::mem::take(&mut report.metadata) {
        metadata.set_item(
            new::str(py, &key)?,
            meta_value(py, value, frombuffer.as_ref())?,
        )?;
    }
    out.set_item(new::str(py, "metadata")?, metadata)?;
    let version = match report.version {
        Some((major, minor)) => {
            new::pair(py, new::u64(py, major.into())?, new::u64(py, minor.into())?)?
        }
        None => py.None().into_bound(py),
    };
    out.set_item(new::str(py, "version")?, version)?;
    let mut keys = Vec::with_capacity(REPORT_KEYS.len());
    for key in REPORT_KEYS {
        keys.push(new::str(py, key)?);
    }
    let text = |text: Option<&str>| match text {
        Some(text) => new::str(py, text),
        None => Ok(py.None().into_bound(py)),
    };
    let arrays = new::list(py)?;
    // Taken from the end, the list reversed after: the report's memory is
    // given back as its arrays become Python objects.
    let mut taken = std::mem::take(&mut report.arrays);
    while let Some(a) = taken.pop() {
        if taken.len() < taken.capacity() / 2 {
            taken.shrink_to_fit();
        }
        let strides = match &a.strides {
            Some(s) => new::tuple_of(py, s.iter(), |&n| new::i64(py, n))?,
            None => py.None().into_bound(py),
        };
        let values = [
            new::str(py, &a.name)?,
            new::str(py, &a.dtype)?,
            text(a.descr.map(|d| d.to_string()).as_deref())?,
            new::tuple_of(py, a.shape.iter(), |&n| new::u64(py, n))?,
            strides,
            new::u64(py, a.offset)?,
            new::u64(py, a.nbytes)?,
            text(a.copy.as_deref())?,
            text(a.member.as_deref())?,
            match a.span {
                Some((start, end)) => new::pair(py, new::u64(py, start)?, new::u64(py, end)?)?,
                None => py.None().into_bound(py),
            },
            text(a.unavailable.as_deref())?,
            text(a.shard.as_deref())?,
            text(a.ggml.map(|t| t.name()))?,
        ];
        let item = new::dict(py)?;
        for (key, value) in keys.iter().zip(values) {
            item.set_item(key, value)?;
        }
        match array_info {
            Some(make) => arrays.append(make.call((), Some(&item))?)?,
            None => arrays.append(item)?,
        }
    }
    arrays.reverse()?;
    out.set_item(new::str(py, "arrays")?, arrays)?;
    Ok(out)
}

/// The fields of `bytelens.ArrayInfo` a report gives, in [`report_dict`]'s order.
const REPORT_KEYS: [&str; 13] = [
    "name",
    "dtype",
    "descr",
    "shape",
    "strides",
    "offset",
    "nbytes",
    "copy",
    "member",
    "span",
    "unavailable",
    "shard",
    "ggml",
];

/// A metadata value as `bl.load` and `bl.inspect` give it: an `int`,
/// `float`, `bool` or `str`, a `list` of `str`, or a read-only numpy
/// array (little-endian) of GGUF's numbers or bools.
fn meta_value<'py>(
    py: Python<'py>,
    value: MetaValue,
    frombuffer: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        MetaValue::Str(text) => new::str(py, &text)?,
        MetaValue::UInt(n) => new::u64(py, n)?,
        MetaValue::Int(n) => new::i64(py, n)?,
        MetaValue::Float(x) => new::f64(py, x)?,
        MetaValue::Bool(b) => PyBool::new(py, b).to_owned().into_any(),
        MetaValue::Strings(items) => {
            let list = new::list(py)?;
            for item in items.iter() {
                list.append(new::str(py, item)?)?;
            }
            list.into_any()
        }
        MetaValue::Array { kind, bytes, .. } => {
            let dtype = match kind {
                ValueType::Bool => "?".to_owned(),
                other => format!("<{}{}", &other.name()[..1], other.size().unwrap_or(1)),
            };
            let frombuffer = frombuffer.ok_or_else(|| PyValueError::new_err("numpy"))?;
            let args = new::pair(py, new::bytes(py, &bytes)?, new::str(py, &dtype)?)?;
            frombuffer.call1(args.cast_into::<PyTuple>()?)?
        }
    })
}

/// `str(report)` of a `bytelens.FileReport` (what `bytelens inspect FILE`
/// prints): its fields, and each `ArrayInfo`'s, read into a
/// `bytelens::files::Report`, whose `Display` is the text. The path is
/// shown as the caller's `str` holds it, surrogates included (a file name
/// `os.fsdecode` read), and the format as it is. A `FileReport` is a
/// public dataclass one may build by hand: a field of the wrong type
/// raises `TypeError`, and a ggml type or dtype bytelens does not know
/// `ValueError`, each naming the field (`arrays[2].shape`). A metadata
/// value of no kind a report holds ([`meta_from_py`]) is shown as its
/// `str()`; a lone surrogate in any other text as U+FFFD (`\ufffd`),
/// which the Python report showed as itself (`\udcff`).
#[pyfunction]
pub(crate) fn report_text(py: Python<'_>, report: &Bound<'_, PyAny>) -> PyResult<String> {
    let get = |name: &str| report.getattr(name).map_err(|err| wrong(py, name, err));
    let path = get("path")?;
    let path = path
        .cast::<PyString>()
        .map_err(|err| wrong(py, "path", err.into()))?;
    let format: String = get("format")?
        .extract()
        .map_err(|err| wrong(py, "format", err))?;
    let size = get("size")?
        .extract()
        .map_err(|err| wrong(py, "size", err))?;
    let version = get("version")?
        .extract()
        .map_err(|err| wrong(py, "version", err))?;
    let mut metadata = Vec::new();
    let items = get("metadata")?
        .call_method0("items")
        .map_err(|err| wrong(py, "metadata", err))?;
    for item in items.try_iter().map_err(|err| wrong(py, "metadata", err))? {
        let (key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) =
            item?.extract().map_err(|err| wrong(py, "metadata", err))?;
        let key = key
            .cast_into::<PyString>()
            .map_err(|err| wrong(py, "metadata key", err.into()))?;
        metadata.push((lossy(&key)?, meta_from_py(py, &value)?));
    }
    let mut arrays = Vec::new();
    let all = get("arrays")?;
    for (i, array) in all
        .try_iter()
        .map_err(|err| wrong(py, "arrays", err))?
        .enumerate()
    {
        arrays.push(array_from_py(py, &array?, &format!("arrays[{i}]"))?);
    }
    let shown = super::error::quoted(path, 0, "py_printable")?;
    let report = Report {
        path: lossy(path)?,
        // The layer's name for it where it is one; the text shows `format` either way.
        format: FORMATS.into_iter().find(|&f| f == format).unwrap_or(""),
        size,
        arrays,
        metadata,
        version,
    };
    Ok(report.text_with(&shown, &format))
}

/// `text` as Rust's text, each lone surrogate (which a `str` may hold and
/// a `String` cannot) U+FFFD.
fn lossy(text: &Bound<'_, PyString>) -> PyResult<String> {
    if let Ok(text) = text.to_str() {
        return Ok(text.to_owned());
    }
    let units = text.call_method1("encode", ("utf-16-le", "surrogatepass"))?;
    let units = units.cast::<PyBytes>()?.as_bytes();
    let units = units
        .chunks_exact(2)
        .map(|u| u16::from_le_bytes([u[0], u[1]]));
    Ok(char::decode_utf16(units)
        .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect())
}

/// The formats a `bytelens::files::Report` names.
const FORMATS: [&str; 6] = [
    "npy",
    "npz",
    "safetensors",
    "gguf",
    "safetensors index",
    "raw",
];

/// `err`, raised reading the field `name` of a report, as a `TypeError`
/// that names the field.
fn wrong(py: Python<'_>, name: &str, err: PyErr) -> PyErr {
    pyo3::exceptions::PyTypeError::new_err(format!("{name}: {}", err.value(py)))
}

/// An `ArrayInfo` (`array`, the report's field `name`) as the Rust layer's.
fn array_from_py(
    py: Python<'_>,
    array: &Bound<'_, PyAny>,
    name: &str,
) -> PyResult<bytelens::files::ArrayInfo> {
    let get = |field: &str| {
        array
            .getattr(field)
            .map_err(|err| wrong(py, &format!("{name}.{field}"), err))
    };
    macro_rules! read {
        ($field:literal) => {
            get($field)?
                .extract()
                .map_err(|err| wrong(py, &format!("{name}.{}", $field), err))?
        };
    }
    // A text field: a `str` (or None where it may be), surrogates and all.
    let text = |field: &str| -> PyResult<Option<String>> {
        let value = get(field)?;
        if value.is_none() {
            return Ok(None);
        }
        match value.cast::<PyString>() {
            Ok(s) => Ok(Some(lossy(s)?)),
            Err(err) => Err(wrong(py, &format!("{name}.{field}"), err.into())),
        }
    };
    let required = |field: &str| -> PyResult<String> {
        text(field)?.ok_or_else(|| {
            pyo3::exceptions::PyTypeError::new_err(format!("{name}.{field}: None, not a str"))
        })
    };
    let descr = text("descr")?;
    let descr = match descr {
        None => None,
        Some(text) => Some(
            text.parse::<bytelens::Descr>()
                .map_err(|err| PyValueError::new_err(format!("{name}.descr: {}", err)))?,
        ),
    };
    let ggml = text("ggml")?;
    let ggml = match ggml {
        None => None,
        Some(text) => Some(bytelens::files::GgmlType::from_name(&text).ok_or_else(|| {
            PyValueError::new_err(format!(
                "{name}.ggml: no ggml type {}",
                bytelens::Quoted::new(&text, 40, bytelens::QuoteStyle::PyShortRepr)
            ))
        })?),
    };
    let (offset, nbytes): (u64, u64) = (read!("offset"), read!("nbytes"));
    if offset.checked_add(nbytes).is_none() {
        return Err(PyValueError::new_err(format!(
            "{name}.nbytes: {nbytes} bytes at offset {offset} end past 2**64"
        )));
    }
    Ok(bytelens::files::ArrayInfo {
        name: required("name")?,
        dtype: required("dtype")?,
        descr,
        shape: read!("shape"),
        strides: read!("strides"),
        offset,
        nbytes,
        copy: text("copy")?,
        member: text("member")?,
        unavailable: text("unavailable")?,
        shard: text("shard")?,
        ggml,
        span: read!("span"),
    })
}

/// A metadata value as a report holds it, the reverse of [`meta_value`]:
/// a `str`; a `bool`; an `int` (negative ones signed; one past 64 bits is
/// its `str()`); a `float`; a `list` of `str`; a numpy array of one axis
/// of a type GGUF has (any byte order and strides: its elements, read
/// little-endian). Anything else, subclasses of `int` and `float` (numpy's
/// scalars, enums) included, is its `str()`, as the Python report showed
/// it.
fn meta_from_py(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<MetaValue> {
    if let Ok(s) = value.cast::<PyString>() {
        return Ok(MetaValue::Str(lossy(s)?));
    }
    if value.is_exact_instance_of::<PyBool>() {
        return Ok(MetaValue::Bool(value.extract()?));
    }
    if value.is_exact_instance_of::<PyInt>() {
        if let Ok(n) = value.extract::<u64>() {
            return Ok(MetaValue::UInt(n));
        }
        if let Ok(n) = value.extract::<i64>() {
            return Ok(MetaValue::Int(n));
        }
    }
    if value.is_exact_instance_of::<PyFloat>() {
        return Ok(MetaValue::Float(value.extract()?));
    }
    if let Ok(list) = value.cast::<PyList>() {
        let mut items = bytelens::files::Strings::default();
        for item in list.iter() {
            match item.cast::<PyString>() {
                Ok(s) => items.push(&lossy(s)?),
                Err(_) => break,
            }
        }
        if items.len() == list.len() {
            return Ok(MetaValue::Strings(items));
        }
    }
    if let Ok(array) = value.cast::<PyUntypedArray>() {
        let dtype = array.dtype();
        let kind = match (dtype.kind(), dtype.itemsize()) {
            (b'b', 1) => Some(ValueType::Bool),
            (b'u', 1) => Some(ValueType::U8),
            (b'i', 1) => Some(ValueType::I8),
            (b'u', 2) => Some(ValueType::U16),
            (b'i', 2) => Some(ValueType::I16),
            (b'u', 4) => Some(ValueType::U32),
            (b'i', 4) => Some(ValueType::I32),
            (b'f', 4) => Some(ValueType::F32),
            (b'u', 8) => Some(ValueType::U64),
            (b'i', 8) => Some(ValueType::I64),
            (b'f', 8) => Some(ValueType::F64),
            _ => None,
        };
        if let (Some(kind), 1) = (kind, array.ndim()) {
            let little = match kind {
                ValueType::Bool => "?".to_owned(),
                other => format!("<{}{}", &other.name()[..1], other.size().unwrap_or(1)),
            };
            let numpy = py.import("numpy")?;
            let contiguous = numpy.call_method1("ascontiguousarray", (array, little))?;
            let bytes = contiguous.call_method0("tobytes")?;
            return Ok(MetaValue::Array {
                kind,
                count: array.len() as u64,
                bytes: bytes.cast::<PyBytes>()?.as_bytes().to_vec(),
            });
        }
    }
    Ok(MetaValue::Str(lossy(&value.str()?)?))
}
