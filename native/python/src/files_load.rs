//! `bl.load` and `bl.inspect` over `bytelens::files`: the Rust file layer
//! reads, checks and maps the file (without the GIL), and this module only
//! hands Python what it found.
//!
//! - `load_file`: `bytelens::files::load_with`, each array a numpy view
//!   over a `bytelens.Buffer` that owns the file's mapping (or over its
//!   aligned copy), a compressed `.npz` member an [`Inflating`] whose
//!   `read()` inflates it once, a quantised GGUF tensor its raw `|u1`
//!   blocks;
//! - `describe_file`: `bytelens::files::inspect_with`, the report as a
//!   dict of `bytelens.FileReport`'s fields (`read_index` the same for an
//!   index alone).

use std::path::PathBuf;
use std::sync::Mutex;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use super::buffer::PyBuf;
use super::error::PyErrResult;
use super::memory::{Memory, Storage};
use bytelens::files::{Deflated, LoadOptions, MetaValue, Part, Report, ValueType};
use bytelens::{DType, Layout, MapMode};

/// `bytelens::files::load_with(path, mode, strict, verify, max_index)`:
/// `(report, arrays)`, the report as [`describe_file`] gives it (with the
/// path loaded from; each array made by `array_info`) and, in its order, each array: a numpy array (a view
/// of the mapped file, or an aligned copy, read-only unless `mode` is
/// `"c"`), an `_Inflating` for a compressed `.npz` member, the raw `|u1`
/// blocks of a quantised GGUF tensor, or None for one bytelens cannot
/// hand out. Errors are the exceptions `bl.load` raises.
#[pyfunction]
pub(crate) fn load_file<'py>(
    py: Python<'py>,
    path: PathBuf,
    mode: &str,
    strict: bool,
    verify: bool,
    max_index: u64,
    array_info: &Bound<'py, PyAny>,
) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyList>)> {
    let mode = match mode {
        "r" => MapMode::Read,
        "r+" => MapMode::ReadWrite,
        "c" => MapMode::Copy,
        _ => return Err(PyValueError::new_err("mode must be \"r\", \"r+\" or \"c\"")),
    };
    let options = LoadOptions {
        mode,
        strict,
        verify,
        max_index,
    };
    let loaded = py
        .detach(|| bytelens::files::load_with(&path, options))
        .py_err(py)?;
    let shown = loaded.path().to_owned();
    let parts = loaded.into_parts();
    let mut maps = Vec::with_capacity(parts.maps.len());
    for mut file in parts.maps {
        let (address, len) = (file.as_ptr(), file.as_bytes().len());
        let memory = Memory::new(Storage::Mapped(file), address, len, mode == MapMode::Read);
        maps.push(Bound::new(py, PyBuf::new(py, memory)?)?);
    }
    let arrays = PyList::empty(py);
    for part in parts.parts {
        let item = match part {
            Part::Mapped { map, layout } => PyBuf::array(&maps[map], &layout)?,
            Part::Blocks { map, start, end } => {
                let layout = Layout::new(DType::U8, start, &[end - start], &[1]).py_err(py)?;
                PyBuf::array(&maps[map], &layout)?
            }
            Part::Copied {
                buffer,
                layout,
                writable,
            } => owned_array(py, buffer, &layout, writable)?,
            Part::Compressed(member) => {
                let file = maps[member.map()].clone().unbind();
                Bound::new(
                    py,
                    Inflating {
                        file,
                        member: Mutex::new(Some(member)),
                    },
                )?
                .into_any()
            }
            Part::Unavailable => py.None().into_bound(py),
        };
        arrays.append(item)?;
    }
    let mut report = parts.report;
    report.path = shown;
    Ok((report_dict(py, report, Some(array_info))?, arrays))
}

/// A numpy array over `buffer` (memory of its own, kept by a new
/// `bytelens.Buffer`), read-only unless `writable`.
fn owned_array<'py>(
    py: Python<'py>,
    mut buffer: bytelens::Buffer,
    layout: &Layout,
    writable: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let (address, len) = (buffer.as_mut_ptr(), buffer.len());
    let memory = Memory::new(Storage::Owned(buffer), address, len, !writable);
    let buf = Bound::new(py, PyBuf::new(py, memory)?)?;
    PyBuf::array(&buf, layout)
}

/// A compressed `.npz` member `bl.load` has not read yet: `read()`
/// inflates it (its size and CRC-32 checked) into aligned memory of its
/// size, its only copy, and returns the array; once.
#[pyclass(name = "_Inflating", module = "bytelens._native", frozen)]
pub(crate) struct Inflating {
    /// The mapped file whose bytes hold the member.
    file: Py<PyBuf>,
    /// None once read.
    member: Mutex<Option<Deflated>>,
}

#[pymethods]
impl Inflating {
    /// The member's array, inflated now; a second call is a `ValueError`.
    fn read<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let taken = self.member.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(mut member) = taken else {
            return Err(PyValueError::new_err("the member was read already"));
        };
        let file = self.file.bind(py);
        // Held while the bytes are read: the memory stays open and mapped.
        let _export = file.get().export(py)?;
        let (address, len) = (file.get().address() as usize, file.get().len());
        let buffer = py
            .detach(|| {
                // SAFETY: the mapping of `len` bytes at `address` lives as
                // long as `_export`, held until this returns; it is only read.
                let bytes = unsafe { std::slice::from_raw_parts(address as *const u8, len) };
                member.inflate(bytes)
            })
            .py_err(py)?;
        owned_array(py, buffer, &member.layout(), member.writable())
    }
}

/// `bytelens::files::inspect_with(path, max_index)`: what `bl.inspect(path)`
/// reports, as a dict of `bytelens.FileReport`'s fields (`path`,
/// `format`, `size`, `metadata`, `version`, `arrays`: a list of what
/// `array_info`, called with each array's `bytelens.ArrayInfo` fields by
/// name, returns), or its error as the exception
/// `bl.inspect` raises. A sharded checkpoint's index (or a folder of one)
/// is checked against its shards.
#[pyfunction]
pub(crate) fn describe_file<'py>(
    py: Python<'py>,
    path: PathBuf,
    max_index: u64,
    array_info: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyDict>> {
    let report = py
        .detach(|| bytelens::files::inspect_with(&path, max_index))
        .py_err(py)?;
    report_dict(py, report, Some(array_info))
}

/// `bytelens::files::read_index(path, max_index)`: a sharded checkpoint's
/// index checked against its shards' headers, as [`describe_file`]'s dict
/// (each array a dict of its fields, with its `shard`), or the `FormatError` (or `OSError`)
/// `bl.load` raises.
#[pyfunction]
pub(crate) fn read_index(
    py: Python<'_>,
    path: PathBuf,
    max_index: u64,
) -> PyResult<Bound<'_, PyDict>> {
    let report = py
        .detach(|| bytelens::files::read_index(&path, max_index))
        .py_err(py)?;
    report_dict(py, report, None)
}

/// `report` as a dict of `bytelens.FileReport`'s fields, each array made
/// by `array_info` (called with `ArrayInfo`'s fields by name), or a dict of
/// them without it. The report's arrays are dropped as they are made: a
/// header of millions of tensors is not held twice.
fn report_dict<'py>(
    py: Python<'py>,
    mut report: Report,
    array_info: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("path", &report.path)?;
    out.set_item("format", report.format)?;
    out.set_item("size", report.size)?;
    let frombuffer = if report
        .metadata
        .iter()
        .any(|(_, v)| matches!(v, MetaValue::Array { .. }))
    {
        Some(py.import("numpy")?.getattr("frombuffer")?)
    } else {
        None
    };
    let metadata = PyDict::new(py);
    for (key, value) in &report.metadata {
        metadata.set_item(key, meta_value(py, value, frombuffer.as_ref())?)?;
    }
    out.set_item("metadata", metadata)?;
    out.set_item("version", report.version)?;
    let arrays = PyList::empty(py);
    for a in std::mem::take(&mut report.arrays) {
        let item = PyDict::new(py);
        item.set_item("name", &a.name)?;
        item.set_item("dtype", &a.dtype)?;
        item.set_item("descr", a.descr.map(|d| d.to_string()))?;
        item.set_item("shape", PyTuple::new(py, &a.shape)?)?;
        let strides = match &a.strides {
            Some(s) => Some(PyTuple::new(py, s)?),
            None => None,
        };
        item.set_item("strides", strides)?;
        item.set_item("offset", a.offset)?;
        item.set_item("nbytes", a.nbytes)?;
        item.set_item("copy", a.copy.as_deref())?;
        item.set_item("member", a.member.as_deref())?;
        item.set_item("unavailable", a.unavailable.as_deref())?;
        item.set_item("shard", a.shard.as_deref())?;
        item.set_item("ggml", a.ggml.map(|t| t.name()))?;
        match array_info {
            Some(make) => arrays.append(make.call((), Some(&item))?)?,
            None => arrays.append(item)?,
        }
    }
    out.set_item("arrays", arrays)?;
    Ok(out)
}

/// A metadata value as `bl.load` and `bl.inspect` give it: an `int`,
/// `float`, `bool` or `str`, a `list` of `str`, or a read-only numpy
/// array (little-endian) of GGUF's numbers or bools.
fn meta_value<'py>(
    py: Python<'py>,
    value: &MetaValue,
    frombuffer: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        MetaValue::Str(text) => text.into_pyobject(py)?.into_any(),
        MetaValue::UInt(n) => n.into_pyobject(py)?.into_any(),
        MetaValue::Int(n) => n.into_pyobject(py)?.into_any(),
        MetaValue::Float(x) => x.into_pyobject(py)?.into_any(),
        MetaValue::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        MetaValue::Strings(items) => PyList::new(py, items)?.into_any(),
        MetaValue::Array { kind, bytes, .. } => {
            let dtype = match kind {
                ValueType::Bool => "?".to_owned(),
                other => format!("<{}{}", &other.name()[..1], other.size().unwrap_or(1)),
            };
            let frombuffer = frombuffer.ok_or_else(|| PyValueError::new_err("numpy"))?;
            frombuffer.call1((PyBytes::new(py, bytes), dtype))?
        }
    })
}
