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
use pyo3::types::{PyBool, PyDict, PyList, PyTuple};

use super::buffer::PyBuf;
use super::error::PyErrResult;
use super::files::new;
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
    let mut parts = loaded.into_parts();
    let mut maps = Vec::with_capacity(parts.maps.len());
    for mut file in std::mem::take(&mut parts.maps) {
        let (address, len) = (file.as_ptr(), file.as_bytes().len());
        let memory = Memory::new(Storage::Mapped(file), address, len, mode == MapMode::Read);
        maps.push(Bound::new(py, PyBuf::new(py, memory)?)?);
    }
    let arrays = new::list(py)?;
    for (i, part) in std::mem::take(&mut parts.parts).into_iter().enumerate() {
        let layout = parts.layout(i);
        let item = match (part, layout) {
            (Part::Mapped { map }, Some(layout)) => PyBuf::array(&maps[map], &layout)?,
            (Part::Blocks { map, start, end }, _) => {
                let layout = Layout::new(DType::U8, start, &[end - start], &[1]).py_err(py)?;
                PyBuf::array(&maps[map], &layout)?
            }
            (Part::Copied { buffer, writable }, Some(layout)) => {
                owned_array(py, buffer, &layout, writable)?
            }
            (Part::Compressed(member), Some(layout)) => {
                let file = maps[member.map()].clone().unbind();
                Bound::new(
                    py,
                    Inflating {
                        file,
                        layout,
                        member: Mutex::new(Some(member)),
                    },
                )?
                .into_any()
            }
            _ => py.None().into_bound(py),
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
    /// The array's layout over the inflated member.
    layout: Layout,
    /// None once read.
    member: Mutex<Option<Box<Deflated>>>,
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
        owned_array(py, buffer, &self.layout, member.writable())
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
/// header of millions of tensors is not held twice. Every Python object is
/// made by a call that reports failure ([`new`]): running out of memory is
/// a `MemoryError`, never a panic.
fn report_dict<'py>(
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
    let mut keys = Vec::with_capacity(KEYS.len());
    for key in KEYS {
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
const KEYS: [&str; 12] = [
    "name",
    "dtype",
    "descr",
    "shape",
    "strides",
    "offset",
    "nbytes",
    "copy",
    "member",
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
            for item in items {
                list.append(new::str(py, &item)?)?;
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
