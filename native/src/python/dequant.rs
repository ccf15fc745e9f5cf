//! `Quantized.dequantize`: a GGUF tensor's blocks (a uint8 array over the
//! mapped file) dequantised by [`crate::dequantize_into`] into a new
//! 64-byte aligned `Buffer` or into an array the caller gives, with the
//! GIL released.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::copy::write_result;
use super::dtype::to_descr;
use super::error::PyErrResult;
use super::source::Source;
use crate::files::GgmlType;
use crate::{DType, Descr, Layout, dequantize_into};

/// `blocks` (a C-contiguous uint8 array of whole `qtype` blocks)
/// dequantised to `dtype` (float32, float16 or bfloat16; float32 where
/// None) in the array of `shape` they make, into `out` (C-contiguous,
/// writable, of that shape and dtype) or a new array.
#[pyfunction]
#[pyo3(signature = (blocks, qtype, shape, dtype=None, out=None))]
pub(crate) fn dequantize<'py>(
    py: Python<'py>,
    blocks: &Bound<'py, PyAny>,
    qtype: &str,
    shape: Vec<usize>,
    dtype: Option<&Bound<'py, PyAny>>,
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let ggml = GgmlType::from_name(qtype)
        .filter(|t| crate::can_dequantize(*t))
        .ok_or_else(|| PyValueError::new_err(format!("bytelens dequantises no type {qtype:?}")))?;
    let to = match dtype {
        Some(dtype) => to_descr(dtype)?,
        None => Descr::native(DType::F32),
    };
    if !matches!(to.dtype, DType::F32 | DType::F16 | DType::BF16) || to != Descr::native(to.dtype) {
        return Err(PyValueError::new_err(format!(
            "dequantize gives float32, float16 or bfloat16 in the machine's byte order, not {}",
            to.dtype
        )));
    }
    let source = Source::read(blocks, "dequantize")?;
    let layout = source.layout();
    if layout.descr().dtype != DType::U8 || !layout.is_c_contiguous() {
        return Err(PyValueError::new_err(
            "the blocks must be a C-contiguous uint8 array",
        ));
    }
    let result = Layout::contiguous(to.dtype, &shape).py_err(py)?;
    let info = ggml.info();
    let elements = result.size();
    let want = elements / info.block as usize * info.bytes as usize;
    if !elements.is_multiple_of(info.block as usize) || layout.nbytes() != want {
        return Err(PyValueError::new_err(format!(
            "{} bytes of {ggml} blocks do not make {elements} elements ({want} bytes would)",
            layout.nbytes()
        )));
    }
    let parallel = result.nbytes() >= crate::copy::PARALLEL_MIN;
    let fill = |bytes: &[u8], dst: &mut [u8]| dequantize_into(ggml, bytes, dst, to);
    write_result(py, &source, &result, out, parallel, fill)
}
