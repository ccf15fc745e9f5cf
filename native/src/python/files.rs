//! The core's file rules for `bytelens._files` (`bl.load`, `bl.save`,
//! `bl.inspect`) and the inspect command, so that the Python code keeps no
//! dtype rule of its own:
//!
//! - `read_header`: the core's `.npy` and safetensors header readers, each
//!   array with how it can be handed out (a view, a copy and why, or not at
//!   all and why);
//! - `file_dtype`: what the file formats need of a dtype (its safetensors
//!   code, whether an `.npy` header can name it, whether it is a float);
//! - `view_layout`: the layout `Buffer.view` gives over a buffer of some
//!   length, shapeless views included, without the buffer;
//! - `read_elements`: elements read from bytes by the core's `Scalar`, for
//!   the inspect command's hexdump.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString};

use super::dtype::to_descr;
use super::error::{FormatError, IntoPyErr, PyErrResult};
use super::layout::{Int, PyLayout, resolve_view};
use crate::Scalar;
use crate::files::{Access, FileHeader, GgufValue, ValueType, read_header as read};

/// The header of an `.npy` or safetensors file of `length` bytes, from
/// `head`, its first bytes: a dict with `format`, `version`, `data_start`,
/// `metadata` (a list of pairs) and `arrays`, a list of dicts with `name`,
/// `dtype` (as the file spells it), `descr` (bytelens's type string, or
/// None where bytelens has none), `shape`, `fortran`, `offset`, `nbytes`,
/// `strides` (None without a `descr`), `access` (`"view"`, `"copy"` or
/// `"none"`: how a mapping of the file that starts at a page boundary can
/// hand it out, where the header lies at byte `base` of the file) and
/// `why` (the reason for a copy or for none, with the numbers; None for a
/// view). Where `head` ends inside the header, `{"need": n}`: read `n`
/// bytes and call again. Anything wrong with the header raises `FormatError`.
#[pyfunction]
#[pyo3(signature = (head, length, base = 0))]
pub(crate) fn read_header<'py>(
    py: Python<'py>,
    head: &[u8],
    length: u64,
    base: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    let header = match read(head, length) {
        Ok(header) => header,
        Err(err) => match err.more_needed(head.len()) {
            Some(need) => {
                out.set_item("need", need)?;
                return Ok(out);
            }
            None => return Err(FormatError::new_err(err.to_string())),
        },
    };
    out.set_item("format", header.format.name())?;
    out.set_item("version", header.version)?;
    out.set_item("data_start", header.data_start)?;
    if header.gguf.is_empty() {
        out.set_item("metadata", PyList::new(py, header.metadata.iter())?)?;
    } else {
        out.set_item("metadata", gguf_metadata(py, &header, head)?)?;
    }
    let arrays = PyList::empty(py);
    for array in header.arrays {
        let item = PyDict::new(py);
        // None without a descr; on a 64-bit host every header the core
        // reads has a layout (its shapes are held to the 64-bit rule).
        let strides = array.layout().ok().map(|l| l.strides().to_vec());
        let access = array.access(base);
        let (how, why) = match &access {
            Access::View => ("view", None),
            Access::Misaligned { .. } => ("copy", Some(access.to_string())),
            Access::Blocks { .. } => ("blocks", None),
            _ => ("none", Some(access.to_string())),
        };
        item.set_item("name", array.name)?;
        item.set_item("dtype", array.dtype)?;
        item.set_item("descr", array.descr.map(|d| d.to_string()))?;
        item.set_item("shape", array.shape)?;
        item.set_item("fortran", array.fortran)?;
        item.set_item("offset", array.offset)?;
        item.set_item("nbytes", array.nbytes)?;
        item.set_item("strides", strides)?;
        item.set_item("access", how)?;
        item.set_item("why", why)?;
        item.set_item("ggml", array.ggml.map(|t| t.name()))?;
        arrays.append(item)?;
    }
    out.set_item("arrays", arrays)?;
    Ok(out)
}

/// A GGUF header's metadata as `(key, value)` pairs in file order, each
/// value a Python `int`, `float`, `bool` or `str`, an array of strings a
/// `list` of `str`, any other array a read-only numpy array (little-endian,
/// one copy of its bytes): a 128k-token vocabulary costs milliseconds.
fn gguf_metadata<'py>(
    py: Python<'py>,
    header: &FileHeader,
    head: &[u8],
) -> PyResult<Bound<'py, PyList>> {
    let frombuffer = py.import("numpy")?.getattr("frombuffer")?;
    let out = PyList::empty(py);
    for entry in header.gguf.iter() {
        let Some(value) = entry.value(head) else {
            return Err(FormatError::new_err(format!(
                "the value of {:?} lies past the header",
                entry.key
            )));
        };
        let value = match value {
            GgufValue::UInt(n) => n.into_pyobject(py)?.into_any(),
            GgufValue::Int(n) => n.into_pyobject(py)?.into_any(),
            GgufValue::Float(x) => PyFloat::new(py, x).into_any(),
            GgufValue::Bool(b) => PyBool::new(py, b).to_owned().into_any(),
            GgufValue::Str(text) => PyString::new(py, text).into_any(),
            GgufValue::Array {
                kind: ValueType::String,
                ..
            } => PyList::new(py, value.strings())?.into_any(),
            GgufValue::Array { kind, bytes, .. } => {
                let dtype = match kind {
                    ValueType::Bool => "?".to_owned(),
                    other => format!("<{}{}", &other.name()[..1], other.size().unwrap_or(1)),
                };
                frombuffer.call1((PyBytes::new(py, bytes), dtype))?
            }
        };
        out.append((entry.key, value))?;
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
    let Some(ggml) = crate::files::GgmlType::from_name(name) else {
        return Ok(None);
    };
    let info = ggml.info();
    let out = PyDict::new(py);
    out.set_item("name", info.name)?;
    out.set_item("code", info.code)?;
    out.set_item("block", info.block)?;
    out.set_item("bytes", info.bytes)?;
    out.set_item("quantized", ggml.is_quantized())?;
    out.set_item("dequantizes", crate::can_dequantize(ggml))?;
    let fields = PyList::empty(py);
    for f in info.fields {
        let descr = crate::Descr::new(f.dtype, crate::ByteOrder::Little).to_string();
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

/// The layout `Buffer(nbytes).view(dtype, offset, shape, strides)` would
/// have, by the same rule (the core's `ViewArgs::resolve`): without a
/// shape, one axis of every element from `offset` to the end, which must
/// be a whole number of elements. Errors are those `Buffer.view` raises;
/// whether the layout lies inside the `nbytes` is `Layout.check`'s to say.
#[pyfunction]
#[pyo3(
    signature = (nbytes, dtype, offset = Int(0), shape = None, strides = None),
    text_signature = "(nbytes, dtype, offset=0, shape=None, strides=None)"
)]
pub(crate) fn view_layout(
    py: Python<'_>,
    nbytes: usize,
    dtype: &Bound<'_, PyAny>,
    offset: Int,
    shape: Option<&Bound<'_, PyAny>>,
    strides: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyLayout> {
    resolve_view(dtype, offset, shape, strides, nbytes, |resolved| {
        let inner = (*resolved).py_err(py)?;
        Ok(PyLayout { inner })
    })
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
