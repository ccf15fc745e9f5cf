//! dtypes across the boundary: what users pass (a numpy dtype, a type, a
//! type string or a name) to the core's [`Descr`], and back to numpy dtypes.

use numpy::{PyArrayDescr, PyArrayDescrMethods};
use pyo3::exceptions::PyModuleNotFoundError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyString;

use super::error::{IntoPyErr, layout_error};
use crate::{ByteOrder, DType, Descr, LayoutError, ShortStr};

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

/// The numpy dtype for `descr`; bfloat16 is `ml_dtypes.bfloat16`, in
/// little-endian order only (big-endian bfloat16 is a `LayoutError`: see
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
    if descr.dtype != DType::BF16 {
        return Ok(PyArrayDescr::new(py, descr.to_string().as_str())?.unbind());
    }
    let ml_dtypes = py.import("ml_dtypes").map_err(|_| {
        PyModuleNotFoundError::new_err(
            "bfloat16 views are numpy arrays of ml_dtypes.bfloat16: install it with \
             `pip install ml-dtypes` (or `pip install bytelens[bf16]`)",
        )
    })?;
    if descr.order == ByteOrder::Big {
        return Err(layout_error(
            py,
            "BadDType",
            "a numpy array cannot be big-endian bfloat16: ml_dtypes' bfloat16 reads and \
             writes single elements (tolist, indexing, printing) in native byte order whatever \
             the dtype says, so such an array would show wrong values. View the bytes as '>u2' \
             and swap them into a native copy: \
             buf.view('>u2').astype('<u2').view(ml_dtypes.bfloat16)"
                .to_owned(),
        ));
    }
    Ok(PyArrayDescr::new(py, ml_dtypes.getattr("bfloat16")?)?.unbind())
}

/// Reads a dtype argument: a type string or name (`"<i4"`, `"int16"`,
/// `"bf16"`), a numpy dtype, or anything `numpy.dtype()` accepts.
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
            for dtype in DType::ALL {
                // bfloat16 needs ml_dtypes, which may be missing; numpy.dtype() finds it then.
                if dtype != DType::BF16 {
                    let descr = Descr::native(dtype);
                    types.push((numpy_descr(py, descr)?.typeobj().into_any().unbind(), descr));
                }
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
fn from_numpy_descr(descr: &Bound<'_, PyArrayDescr>) -> Option<Descr> {
    if descr.has_fields() || descr.has_subarray() {
        return None;
    }
    // The core's dtype table: numpy's kind character and itemsize name one
    // dtype, except that kind 'V' (raw) of size 2 is bfloat16 only for ml_dtypes'.
    let (kind, itemsize) = (descr.kind(), descr.itemsize());
    let dtype = DType::ALL
        .into_iter()
        .find(|d| d.kind() as u32 == u32::from(kind) && d.size() == itemsize)?;
    if dtype == DType::BF16 && descr.typeobj().name().ok()? != "bfloat16" {
        return None;
    }
    let order = match descr.byteorder() {
        b'<' => ByteOrder::Little,
        b'>' => ByteOrder::Big,
        _ => ByteOrder::NATIVE,
    };
    Some(Descr::new(dtype, order))
}

fn bad_dtype(obj: &Bound<'_, PyAny>) -> PyErr {
    let text = obj
        .str()
        .map(|s| s.to_string())
        .unwrap_or_else(|_| String::from("?"));
    LayoutError::BadDType {
        text: ShortStr::new(&text),
    }
    .into_py_err(obj.py())
}
