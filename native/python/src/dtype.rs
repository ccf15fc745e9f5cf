//! dtypes across the boundary: what users pass (a numpy dtype, a type, a
//! type string or a name) to the core's [`Descr`], and back to numpy dtypes.

use numpy::{PyArrayDescr, PyArrayDescrMethods};
use pyo3::exceptions::PyModuleNotFoundError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyString, PyTuple, PyType};

use super::error::{IntoPyErr, error_of_kind};
use bytelens::{
    ByteOrder, DType, Descr, ErrorKind, FloatFormat, LayoutError, Rounding, ShortStr, Specials,
};

/// Every dtype in both byte orders: index `2 * dtype + (order == Big)`.
/// Sized from [`DType::ALL`], not from one variant, so a dtype added after
/// it cannot index past the cache; the check below proves that `ALL` lists
/// the variants in their order, so every `dtype as usize` is below it.
const CACHE_LEN: usize = 2 * DType::ALL.len();

const _: () = {
    let mut i = 0;
    while i < DType::ALL.len() {
        assert!(
            DType::ALL[i] as usize == i,
            "DType::ALL is in the enum's order"
        );
        i += 1;
    }
};

/// numpy dtypes made once per interpreter and handed out by reference.
static NUMPY_DESCRS: [PyOnceLock<Py<PyArrayDescr>>; CACHE_LEN] =
    [const { PyOnceLock::new() }; CACHE_LEN];

fn cache_index(descr: Descr) -> usize {
    2 * descr.dtype as usize + usize::from(descr.order == ByteOrder::Big)
}

/// The numpy dtype for `descr`. A dtype numpy lacks is the ml_dtypes type
/// its row of the dtype table names (`ml_dtypes.bfloat16`,
/// `ml_dtypes.float8_e4m3fn`, ...), in native byte order only: a
/// big-endian one of more than one byte is a `LayoutError` (see
/// [`make_numpy_descr`]). Arrays of it can still be read as a source
/// ([`to_descr`] accepts the dtype), since the core converts them itself.
pub(crate) fn numpy_descr<'py>(
    py: Python<'py>,
    descr: Descr,
) -> PyResult<&'py Bound<'py, PyArrayDescr>> {
    let cell = &NUMPY_DESCRS[cache_index(descr)];
    let descr = cell.get_or_try_init(py, || make_numpy_descr(py, descr))?;
    Ok(descr.bind(py))
}

fn make_numpy_descr(py: Python<'_>, descr: Descr) -> PyResult<Py<PyArrayDescr>> {
    let info = descr.dtype.info();
    let Some(name) = info.ml_dtypes else {
        return Ok(PyArrayDescr::new(py, descr.to_string().as_str())?.unbind());
    };
    if descr.order == ByteOrder::Big && info.size > 1 {
        let size = info.size;
        return Err(error_of_kind(
            py,
            ErrorKind::BadDType,
            format!(
                "a numpy array cannot be big-endian {name}: ml_dtypes' {name} reads and \
                 writes single elements (tolist, indexing, printing) in native byte order \
                 whatever the dtype says, so such an array would show wrong values. View the \
                 bytes as '>u{size}' and swap them into a native copy: \
                 buf.view('>u{size}').astype('<u{size}').view(ml_dtypes.{name})"
            ),
        ));
    }
    let ty = ml_dtypes(py)?.getattr(name).map_err(|_| {
        PyModuleNotFoundError::new_err(format!(
            "this ml_dtypes has no {name}: upgrade it with `pip install -U ml-dtypes`"
        ))
    })?;
    Ok(PyArrayDescr::new(py, ty)?.unbind())
}

/// The `ml_dtypes` module, whose types are the numpy dtypes of bfloat16 and
/// the float8 formats, or a `ModuleNotFoundError` saying how to install it.
fn ml_dtypes(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    py.import("ml_dtypes").map_err(|_| {
        let names: Vec<&str> = DType::ALL
            .iter()
            .filter_map(|d| d.info().ml_dtypes)
            .collect();
        PyModuleNotFoundError::new_err(format!(
            "views of {} are numpy arrays of ml_dtypes' types: install it with \
             `pip install ml-dtypes` (or `pip install bytelens[bf16]`)",
            names.join(", ")
        ))
    })
}

/// Reads a dtype argument: a type string or name (`"<i4"`, `"int16"`,
/// `"bf16"`, `"float8_e4m3fn"`), a numpy dtype, or anything `numpy.dtype()`
/// accepts (`ml_dtypes.float8_e5m2` too).
#[inline]
pub(crate) fn to_descr(obj: &Bound<'_, PyAny>) -> PyResult<Descr> {
    let py = obj.py();
    if obj.is_none() {
        // numpy's default dtype, as np.dtype(None) gives.
        return Ok(Descr::native(DType::F64));
    }
    if let Ok(text) = obj.cast::<PyString>() {
        let text = text.to_cow()?;
        if let Ok(descr) = text.parse::<Descr>() {
            return Ok(descr);
        }
    }
    if let Some(descr) = scalar_type_descr(obj) {
        return Ok(descr);
    }
    let np_descr = match obj.cast::<PyArrayDescr>() {
        Ok(descr) => descr.clone(),
        Err(_) => PyArrayDescr::new(py, obj).map_err(|_| bad_dtype(obj))?,
    };
    from_numpy_descr(&np_descr).ok_or_else(|| bad_dtype(obj))
}

/// The numpy scalar types (`np.int32`, `np.float16`, ...) of the native-order
/// dtypes, found by identity: `buf.view(np.int32)` need not ask numpy.
fn scalar_type_descr(obj: &Bound<'_, PyAny>) -> Option<Descr> {
    static TYPES: PyOnceLock<Vec<(Py<PyAny>, Descr)>> = PyOnceLock::new();
    let py = obj.py();
    let types = TYPES
        .get_or_try_init(py, || -> PyResult<_> {
            let mut types = Vec::new();
            // ml_dtypes' types are left out: ml_dtypes may be missing, and
            // numpy.dtype() finds them when it is not.
            for dtype in DType::ALL
                .into_iter()
                .filter(|d| d.info().ml_dtypes.is_none())
            {
                let descr = Descr::native(dtype);
                types.push((numpy_descr(py, descr)?.typeobj().into_any().unbind(), descr));
            }
            Ok(types)
        })
        .ok()?;
    types
        .iter()
        .find(|(ty, _)| ty.is(obj))
        .map(|&(_, descr)| descr)
}

/// The core's view of a numpy dtype, if it is one bytelens handles.
///
/// An ml_dtypes type is known by its type's name (the table's `ml_dtypes`
/// column), never by numpy's kind and size: float8_e4m3fn and
/// float8_e8m0fnu are both kind `V` of one byte, like any raw `V1`, and
/// float8_e5m2 is kind `f` of one byte. numpy's own dtypes are known by kind
/// and size among the rows that have no ml_dtypes type.
fn from_numpy_descr(descr: &Bound<'_, PyArrayDescr>) -> Option<Descr> {
    if descr.has_fields() || descr.has_subarray() {
        return None;
    }
    let (kind, itemsize) = (descr.kind(), descr.itemsize());
    let named = descr
        .typeobj()
        .name()
        .ok()
        .and_then(|name| DType::from_ml_dtypes(name.to_str().ok()?));
    let dtype = match named {
        Some(dtype) => (dtype.size() == itemsize).then_some(dtype)?,
        None => DType::ALL.into_iter().find(|d| {
            let info = d.info();
            info.ml_dtypes.is_none() && info.kind as u32 == u32::from(kind) && info.size == itemsize
        })?,
    };
    let order = match descr.byteorder() {
        b'<' => ByteOrder::Little,
        b'>' => ByteOrder::Big,
        _ => ByteOrder::NATIVE,
    };
    Some(Descr::new(dtype, order))
}

/// `bytelens.dtypes()`: the core's dtype table, one dict per dtype in the
/// table's order, for Python code that needs a column of it instead of a
/// table of its own. Each dict: `name` (numpy's, or ml_dtypes' type name),
/// `code` (numpy's type code without byte order; the name where numpy has
/// none), `spellings` (every name `Buffer.view` takes), `size` (bytes),
/// `kind` (numpy's kind character, as ml_dtypes reports it for its types),
/// `ml_dtypes` (the ml_dtypes type's name, or None), `safetensors` (the
/// code), `npy` (whether an .npy header can name it), `dlpack` ((type code,
/// bits)), `js_array` (the wasm package's typed array) and `float` (None,
/// or `signed`, `exponent_bits`, `mantissa_bits`, `bias`, `subnormals`,
/// `specials` "ieee" or "nan_only", `rounding` "nearest_even" or
/// "nearest_away").
///
/// >>> import bytelens as bl
/// >>> [d["name"] for d in bl.dtypes() if d["ml_dtypes"]]
/// ['bfloat16', 'float8_e4m3fn', 'float8_e5m2', 'float8_e8m0fnu']
/// >>> e4m3 = {d["safetensors"]: d for d in bl.dtypes()}["F8_E4M3"]
/// >>> e4m3["name"], e4m3["dlpack"], e4m3["float"]["specials"]
/// ('float8_e4m3fn', (10, 8), 'nan_only')
#[pyfunction]
pub(crate) fn dtypes(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let rows = PyList::empty(py);
    for dtype in DType::ALL {
        let info = dtype.info();
        let row = PyDict::new(py);
        row.set_item("name", dtype.name())?;
        row.set_item("code", dtype.code())?;
        row.set_item("spellings", PyTuple::new(py, info.spellings)?)?;
        row.set_item("size", info.size)?;
        row.set_item("kind", info.kind)?;
        row.set_item("ml_dtypes", info.ml_dtypes)?;
        row.set_item("safetensors", info.safetensors)?;
        row.set_item("npy", info.npy)?;
        row.set_item("dlpack", info.dlpack)?;
        row.set_item("js_array", info.js_array.name())?;
        let float = match info.float {
            None => None,
            Some(format) => Some(float_format(py, format)?),
        };
        row.set_item("float", float)?;
        rows.append(row)?;
    }
    Ok(rows)
}

fn float_format(py: Python<'_>, format: FloatFormat) -> PyResult<Bound<'_, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("signed", format.signed)?;
    out.set_item("exponent_bits", format.exponent_bits)?;
    out.set_item("mantissa_bits", format.mantissa_bits)?;
    out.set_item("bias", format.bias)?;
    out.set_item("subnormals", format.subnormals)?;
    let specials = match format.specials {
        Specials::Ieee => "ieee",
        Specials::NanOnly => "nan_only",
    };
    out.set_item("specials", specials)?;
    let rounding = match format.rounding {
        Rounding::NearestEven => "nearest_even",
        Rounding::NearestAway => "nearest_away",
    };
    out.set_item("rounding", rounding)?;
    Ok(out)
}

/// Every dtype's name, in the table's order: "bool, uint8, ..., float8_e8m0fnu".
pub(crate) fn dtype_names() -> String {
    DType::ALL.map(DType::name).join(", ")
}

/// The dtype `obj` names is not one bytelens has: a `LayoutError` naming it
/// as the user wrote it, a type (`np.complex128`, `np.datetime64`) by its
/// name (`complex128`), not by `str()`'s `<class 'numpy.complex128'>`.
fn bad_dtype(obj: &Bound<'_, PyAny>) -> PyErr {
    let shown = match obj.cast::<PyType>() {
        Ok(ty) => ty.name().map(|name| name.to_string()),
        Err(_) => obj.str().map(|s| s.to_string()),
    };
    let text = shown.unwrap_or_else(|_| String::from("?"));
    LayoutError::BadDType {
        text: ShortStr::new(&text),
    }
    .into_py_err(obj.py())
}
