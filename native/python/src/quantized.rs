//! `bytelens.Quantized`: a GGUF tensor of a quantised ggml type, its
//! blocks a zero-copy structured array over the mapped file, dequantised
//! by [`dequant::dequantize`] (gguf-py's values bit for bit, at memory
//! speed). Its shape is checked against its blocks as a GGUF file's
//! tensor must be: rows (the last axis) of whole blocks, every value of
//! every block in the shape.

use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyString, PyTuple, PyType};

use super::dequant;
use bytelens::files::GgmlType;
use bytelens::{QuoteStyle, Quoted};

/// A quantised GGUF tensor (``Q4_K``, ``Q8_0``, ...), as :func:`load`
/// hands it out: nothing is dequantised until asked for.
///
/// - :attr:`qtype`: ggml's type name in lower case (``"q4_k"``);
/// - :attr:`shape`: the tensor's shape in numpy's order (GGUF stores it
///   innermost first); :attr:`nbytes`: the bytes its blocks take;
/// - :attr:`blocks`: a numpy structured array over the mapped file, one
///   record per block, fields named as ggml names them (``d``, ``dmin``,
///   ``scales``, ``qs``, ...): zero-copy, writable under ``mode="r+"``;
/// - :meth:`dequantize` (and ``np.asarray``): the values as float32,
///   float16 or bfloat16, equal bit for bit to
///   ``gguf.quants.dequantize`` (float16 and bfloat16: those rounded once).
///
/// ``Quantized(raw, qtype, shape)`` takes the blocks as a 1-D C-contiguous
/// uint8 array (:meth:`from_blocks` takes any contiguous buffer).
///
/// >>> import bytelens as bl, numpy as np
/// >>> q = bl.Quantized.from_blocks("q8_0", np.frombuffer(bytes(2) + bytes(range(32)), np.uint8), (32,))
/// >>> q, q.blocks["qs"][0][:3].tolist(), q.dequantize().tolist()[:3]
/// (<bytelens.Quantized q8_0 (32,), 1 block>, [0, 1, 2], [0.0, 0.0, 0.0])
#[pyclass(name = "Quantized", module = "bytelens._native", frozen)]
pub(crate) struct PyQuantized {
    /// The blocks: a 1-D C-contiguous uint8 numpy array.
    raw: Py<PyAny>,
    ggml: GgmlType,
    /// `ggml`'s name in lower case.
    qtype: String,
    shape: Vec<usize>,
    /// The blocks as structured records, made on first use.
    blocks: PyOnceLock<Py<PyAny>>,
}

#[pymethods]
impl PyQuantized {
    #[new]
    fn new(
        raw: &Bound<'_, PyAny>,
        qtype: &Bound<'_, PyAny>,
        shape: &Bound<'_, PyAny>,
    ) -> PyResult<PyQuantized> {
        let ggml = qtype
            .cast::<PyString>()
            .ok()
            .and_then(|name| GgmlType::from_name(name.to_str().ok()?))
            .filter(|t| t.is_quantized())
            .ok_or_else(|| {
                let text = qtype.repr().map(|r| r.to_string()).unwrap_or_default();
                PyValueError::new_err(format!(
                    "{} is not a quantised ggml type",
                    Quoted::new(&text, 40, QuoteStyle::PyShort)
                ))
            })?;
        let name = ggml.name().to_lowercase();
        let array = raw.cast::<PyUntypedArray>().ok();
        let fits = array.is_some_and(|a| {
            a.ndim() == 1
                && a.is_c_contiguous()
                && a.dtype().is_equiv_to(&numpy::dtype::<u8>(raw.py()))
        });
        if !fits {
            let what = match array {
                Some(a) => format!(
                    "{} array of shape {}",
                    a.getattr("dtype")?.str()?,
                    a.getattr("shape")?.repr()?
                ),
                None => raw.get_type().name()?.to_string(),
            };
            return Err(PyValueError::new_err(format!(
                "a {name} tensor's blocks are a 1-D C-contiguous uint8 array, not a {what}"
            )));
        }
        let nbytes: u64 = raw.getattr("nbytes")?.extract()?;
        let shape = checked_shape(shape, &name, ggml, nbytes)?;
        Ok(PyQuantized {
            raw: raw.clone().unbind(),
            ggml,
            qtype: name,
            shape,
            blocks: PyOnceLock::new(),
        })
    }

    /// A tensor of ``shape`` from ``blocks``: bytes of whole ``qtype``
    /// blocks (a C-contiguous array of any dtype, or any contiguous
    /// buffer), not copied, so that writes to :attr:`blocks` reach them.
    ///
    /// ``shape`` must be what the blocks hold, as in a GGUF file: every
    /// row (its last axis) whole blocks, and as many values as the blocks
    /// hold; anything else is a ``ValueError`` with the numbers. A source
    /// that is not C-contiguous is refused rather than copied (pass
    /// ``np.ascontiguousarray(blocks)`` to copy it).
    #[classmethod]
    fn from_blocks(
        _cls: &Bound<'_, PyType>,
        qtype: &Bound<'_, PyAny>,
        blocks: &Bound<'_, PyAny>,
        shape: &Bound<'_, PyAny>,
    ) -> PyResult<PyQuantized> {
        let py = blocks.py();
        let np = py.import("numpy")?;
        let uint8 = np.getattr("uint8")?;
        let raw = if blocks.cast::<PyUntypedArray>().is_ok() {
            blocks.clone()
        } else {
            np.call_method1("frombuffer", (blocks, &uint8))?
        };
        if !raw.getattr("flags")?.getattr("c_contiguous")?.is_truthy()? {
            return Err(PyValueError::new_err(format!(
                "the blocks are not C-contiguous (shape {}, strides {}): they would be copied, and writes \
                 to .blocks would not reach them; pass np.ascontiguousarray(blocks) to copy them",
                raw.getattr("shape")?.repr()?,
                raw.getattr("strides")?.repr()?
            )));
        }
        let flat = raw
            .call_method1("reshape", (-1,))?
            .call_method1("view", (uint8,))?;
        PyQuantized::new(&flat, qtype, shape)
    }

    /// ggml's type name, lower case (``"q4_k"``).
    #[getter]
    fn qtype(&self) -> &str {
        &self.qtype
    }

    /// The shape, in numpy's order.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.shape)
    }

    /// Values each block holds (32 or 256).
    #[getter]
    fn values_per_block(&self) -> u32 {
        self.ggml.info().block
    }

    /// The bytes its blocks take in the file.
    #[getter]
    fn nbytes(&self, py: Python<'_>) -> PyResult<u64> {
        self.raw.bind(py).getattr("nbytes")?.extract()
    }

    /// The number of axes.
    #[getter]
    fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// The number of values it holds.
    #[getter]
    fn size(&self) -> u128 {
        self.shape.iter().map(|&n| n as u128).product()
    }

    /// The blocks as a 1-D uint8 array (what :func:`bytelens.gpu.upload` sends).
    #[getter(_raw)]
    fn raw_blocks(&self, py: Python<'_>) -> Py<PyAny> {
        self.raw.clone_ref(py)
    }

    /// The blocks, one structured record each, over the file's bytes.
    #[getter]
    fn blocks<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let blocks = self.blocks.get_or_try_init(py, || {
            let dtype = block_dtype(py, self.ggml)?;
            PyResult::Ok(self.raw.bind(py).call_method1("view", (dtype,))?.unbind())
        })?;
        Ok(blocks.bind(py).clone())
    }

    /// The values as a new array of ``dtype`` (``"float32"``,
    /// ``"float16"`` or ``"bfloat16"``) and :attr:`shape`, 64-byte aligned;
    /// or written into ``out`` (C-contiguous, writable, that shape and
    /// dtype), which is returned. Runs without the GIL, on several threads
    /// for outputs of 8 MiB or more.
    ///
    /// ``out`` may share bytes with the blocks: they are then read first
    /// (as numpy's assignment reads a source that overlaps its target),
    /// also where ``out`` is another shared mapping of the blocks' bytes in
    /// the same file (``np.memmap``, or a second ``bl.load(path,
    /// mode="r+")``), which Linux tells through ``/proc/self/maps``. Other
    /// systems do not say which file a mapping holds: there, do not
    /// dequantise into a second mapping of the blocks' own bytes.
    #[pyo3(signature = (dtype = None, out = None), text_signature = "($self, dtype='float32', out=None)")]
    fn dequantize<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<&Bound<'py, PyAny>>,
        out: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        dequant::dequantize(
            py,
            self.raw.bind(py),
            &self.qtype,
            self.shape.clone(),
            dtype,
            out,
        )
    }

    #[pyo3(signature = (dtype = None, copy = None))]
    fn __array__<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if copy == Some(false) {
            return Err(PyValueError::new_err(
                "a quantised tensor cannot be viewed as an array without dequantising it",
            ));
        }
        let values = self.dequantize(py, None, None)?;
        match dtype {
            None => Ok(values),
            Some(dtype) => {
                let kwargs = PyDict::new(py);
                kwargs.set_item("copy", false)?;
                values.call_method("astype", (dtype,), Some(&kwargs))
            }
        }
    }

    // The blocks travel as a numpy array (a copy, as any pickled array);
    // the cached structured view is made again.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let me = slf.get();
        let args = (me.raw.clone_ref(py), me.qtype.clone(), me.shape(py)?);
        PyTuple::new(
            py,
            [
                slf.get_type().into_any(),
                args.into_pyobject(py)?.into_any(),
            ],
        )
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let n = self.nbytes(py)? / u64::from(self.ggml.info().bytes);
        let plural = if n == 1 { "" } else { "s" };
        Ok(format!(
            "<bytelens.Quantized {} {}, {n} block{plural}>",
            self.qtype,
            self.shape(py)?.repr()?
        ))
    }
}

/// One block of `ggml` as a numpy structured dtype, from the core's table:
/// each field named as ggml names it, at its offset, packed.
fn block_dtype(py: Python<'_>, ggml: GgmlType) -> PyResult<Bound<'_, PyAny>> {
    let np = py.import("numpy")?;
    let dtype = np.getattr("dtype")?;
    let info = ggml.info();
    let (names, formats, offsets) = (PyList::empty(py), PyList::empty(py), PyList::empty(py));
    for f in info.fields {
        let descr = bytelens::Descr::new(f.dtype, bytelens::ByteOrder::Little).to_string();
        names.append(f.name)?;
        formats.append(if f.count == 1 {
            dtype.call1((descr,))?
        } else {
            dtype.call1(((descr, (f.count,)),))?
        })?;
        offsets.append(f.offset)?;
    }
    let spec = PyDict::new(py);
    spec.set_item("names", names)?;
    spec.set_item("formats", formats)?;
    spec.set_item("offsets", offsets)?;
    spec.set_item("itemsize", info.bytes)?;
    dtype.call1((spec,))
}

/// `shape` as a list of sizes, if it is what `nbytes` of `ggml`'s blocks
/// hold, as in a GGUF file: rows (the last axis) of whole blocks, every
/// value in a block and every block's values in the shape. Else the
/// `ValueError` (a `TypeError` for a shape that is not ints) with the
/// numbers, the shape written as Python writes the tuple.
fn checked_shape(
    shape: &Bound<'_, PyAny>,
    qtype: &str,
    ggml: GgmlType,
    nbytes: u64,
) -> PyResult<Vec<usize>> {
    let py = shape.py();
    let not_ints = || {
        let text = shape.repr().map(|r| r.to_string()).unwrap_or_default();
        PyTypeError::new_err(format!(
            "a {qtype} tensor's shape is a tuple of ints, not {}",
            Quoted::new(&text, 60, QuoteStyle::PyShort)
        ))
    };
    let index = py.import("operator")?.getattr("index")?;
    let mut dims = Vec::new();
    for n in shape.try_iter().map_err(|_| not_ints())? {
        let n = n.map_err(|_| not_ints())?;
        dims.push(index.call1((n,)).map_err(|e| {
            if e.is_instance_of::<PyTypeError>(py) {
                not_ints()
            } else {
                e
            }
        })?);
    }
    let text = PyTuple::new(py, &dims)?.repr()?.to_string();
    if dims.is_empty() {
        return Err(PyValueError::new_err(format!(
            "a {qtype} tensor has at least one axis (rows of whole blocks), not shape ()"
        )));
    }
    if dims.iter().any(|n| n.lt(0).unwrap_or(false)) {
        return Err(PyValueError::new_err(format!(
            "a {qtype} tensor's shape {text} has a negative dimension"
        )));
    }
    // Each axis, and the values of its nonzero ones, as numpy's sizes
    // (intp) hold them: beside a 0, an axis of 2**64 held no values and
    // passed, then .size and dequantize() raised OverflowError.
    let largest = isize::MAX as u128;
    let sizes: Vec<Option<u128>> = dims
        .iter()
        .map(|n| n.extract::<u64>().ok().map(u128::from))
        .collect();
    let nonzero = sizes
        .iter()
        .try_fold(1u128, |acc, n| acc.checked_mul((*n)?.max(1)));
    if nonzero.is_none_or(|n| n > largest) {
        return Err(PyValueError::new_err(format!(
            "a {qtype} tensor's shape {text} is past numpy's sizes: its axes, and their product \
             without the zeros, are at most {largest}"
        )));
    }
    let dims: Vec<usize> = sizes.iter().map(|n| n.unwrap_or(0) as usize).collect();
    let info = ggml.info();
    let (block, size) = (u64::from(info.block), u64::from(info.bytes));
    if !nbytes.is_multiple_of(size) {
        let over = nbytes % size;
        let s = if over == 1 { "" } else { "s" };
        return Err(PyValueError::new_err(format!(
            "{nbytes} bytes are not whole {qtype} blocks of {size} bytes ({over} byte{s} over)"
        )));
    }
    let row = dims[dims.len() - 1] as u64;
    if !row.is_multiple_of(block) {
        return Err(PyValueError::new_err(format!(
            "shape {text} cuts its rows of {row} values inside {qtype}'s blocks of {block} values \
             (each row is whole blocks, as in a GGUF file)"
        )));
    }
    let values: u128 = dims.iter().map(|&n| n as u128).product();
    let blocks = nbytes / size;
    if values != u128::from(blocks) * u128::from(block) {
        let hold = if blocks == 1 { " holds" } else { "s hold" };
        return Err(PyValueError::new_err(format!(
            "{blocks} {qtype} block{hold} {} values ({nbytes} bytes), not the {values} of shape {text}",
            blocks * block
        )));
    }
    Ok(dims)
}
