//! `bytelens._native.read_header`: the core's `.npy` and safetensors
//! header readers for `bytelens._files` (`bl.load`, `bl.inspect`), which
//! reads the file's first bytes and lays views over the mapped file.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::error::FormatError;
use crate::files::read_header as read;

/// The header of an `.npy` or safetensors file of `length` bytes, from
/// `head`, its first bytes: a dict with `format`, `version`, `data_start`,
/// `metadata` (a list of pairs) and `arrays`, a list of dicts with `name`,
/// `dtype` (as the file spells it), `descr` (bytelens's type string, or
/// None where bytelens has none), `shape`, `fortran`, `offset`, `nbytes` and `strides` (None without a `descr`). Where
/// `head` ends inside the header, `{"need": n}`: read `n` bytes and call
/// again. Anything wrong with the header raises `FormatError`.
#[pyfunction]
pub(crate) fn read_header<'py>(
    py: Python<'py>,
    head: &[u8],
    length: u64,
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
    out.set_item("metadata", PyList::new(py, header.metadata.iter())?)?;
    let arrays = PyList::empty(py);
    for array in header.arrays {
        let item = PyDict::new(py);
        // None without a descr; on a 64-bit host every header the core
        // reads has a layout (its shapes are held to the 64-bit rule).
        let strides = array.layout().ok().map(|l| l.strides().to_vec());
        item.set_item("name", array.name)?;
        item.set_item("dtype", array.dtype)?;
        item.set_item("descr", array.descr.map(|d| d.to_string()))?;
        item.set_item("shape", array.shape)?;
        item.set_item("fortran", array.fortran)?;
        item.set_item("offset", array.offset)?;
        item.set_item("nbytes", array.nbytes)?;
        item.set_item("strides", strides)?;
        arrays.append(item)?;
    }
    out.set_item("arrays", arrays)?;
    Ok(out)
}
