//! What `bl.inspect` reports, between Rust and Python: `report_dict`
//! (a `bytelens::files::Report` as `FileReport`'s fields, for `bl.load`,
//! `bl.inspect` and raw files), `report_text` (`str(FileReport)`: a report,
//! one built by hand too, read back into Rust, whose `Display` it is),
//! `inspect_file` (`bytelens::files::inspect` itself), and raw files:
//! `inspect_raw` (`bytelens::files::describe_raw`, for `bl.inspect(dtype=...,
//! plan=...)`) and `elements` (the inspect command's `--dump`).

use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use super::dtype::to_descr;
use super::error::PyErrResult;
use super::files::new;
use super::layout::Int;
use bytelens::files::{MetaValue, Report, ValueType};

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
        MetaValue::Strings(items) => new::str_list(py, items.iter())?,
        MetaValue::Array { kind, bytes, .. } => {
            let dtype = new::gguf_dtype(kind);
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
