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
use pyo3::types::{PyDict, PyList};

use super::buffer::PyBuf;
use super::error::PyErrResult;
use super::files::new;
use super::files_report::report_dict;
use super::memory::{Memory, Storage};
use bytelens::files::{Deflated, LoadOptions, Part};
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
    // SAFETY: the hazard of every file mapping, numpy.memmap's included:
    // `bl.load` documents that a file must not shrink while its arrays live
    // (docs/guide/files.md), as numpy documents it for memmap.
    let loaded = py
        .detach(|| unsafe { bytelens::files::load_with(&path, options) })
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
