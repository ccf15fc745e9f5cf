//! The Python extension module `bytelens._native`, built by maturin from this crate (`bytelens-python`) over the `bytelens` crate.
//!
//! The pure-Python package in `native/python/bytelens/` re-exports what is
//! defined here; maturin builds the two into one wheel.
//!
//! Three kinds of object are exported: [`buffer::PyBuf`] (`bytelens.Buffer`),
//! the memory itself, with the numpy, buffer-protocol, DLPack and pickle
//! bridges; [`layout::PyLayout`] (`bytelens.Layout`), the core's checked
//! layout arithmetic without memory; and [`layout::PyPlan`] (`bytelens.Plan`).
//!
//! The modules are layered: each uses only modules listed above it, so
//! there is no import cycle (this file only declares them and registers
//! their classes). Every Rust error becomes a Python exception through
//! [`error::IntoPyErr`] (`result.py_err(py)?`), and nowhere else.
//!
//! ```text
//! module  uses                               holds
//! error   -                                  exception classes, IntoPyErr
//! memory  error                              Memory, Storage, Export, span
//! dtype   error                              dtype arguments <-> numpy dtypes
//! dlpack  memory                             DLPack capsules, both directions
//! source  memory dtype error                 any array as bytes + a checked Layout
//! layout  dtype error                        bytelens.Layout, bytelens.Plan
//! buffer  memory dlpack layout dtype error   bytelens.Buffer
//! copy    buffer source memory dtype error   bytelens.ascontiguous
//! dequant source copy dlpack dtype error     Quantized.dequantize
//! quantized dequant                          bytelens.Quantized
//! files   dtype error                        headers, file dtypes, elements; files::Error
//! files_report files dtype layout error     report dicts and text, inspect, raw files
//! files_save dtype source quantized error   bl.save: arguments, plan, the one writer
//! files_load files files_report buffer memory error  bl.load, bl.inspect, read_index
//! shared  buffer memory layout error         bytelens.SharedBuffer, timeout arguments
//! ring    shared buffer memory layout error  bytelens.Ring, its slots and batches
//! gpu     buffer source memory dtype error   bytelens.gpu (feature gpu)
//! ```

mod buffer;
mod copy;
mod dequant;
mod dlpack;
mod dtype;
mod error;
mod files;
mod files_load;
mod files_report;
mod files_save;
#[cfg(feature = "gpu")]
mod gpu;
mod layout;
mod memory;
mod quantized;
mod ring;
mod shared;
mod source;

use pyo3::prelude::*;

#[pymodule]
#[pyo3(name = "_native")]
fn bytelens_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    error::register(m)?;
    m.add_class::<buffer::PyBuf>()?;
    m.add_class::<layout::PyLayout>()?;
    m.add_class::<layout::PyPlan>()?;
    m.add_class::<quantized::PyQuantized>()?;
    m.add_function(wrap_pyfunction!(copy::ascontiguous, m)?)?;
    m.add_function(wrap_pyfunction!(dequant::dequantize, m)?)?;
    m.add_function(wrap_pyfunction!(dtype::dtypes, m)?)?;
    m.add_function(wrap_pyfunction!(error::error_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(error::quoted, m)?)?;
    m.add_function(wrap_pyfunction!(files::read_header, m)?)?;
    m.add_function(wrap_pyfunction!(files::file_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(files::ggml_type, m)?)?;
    m.add_function(wrap_pyfunction!(files::read_elements, m)?)?;
    m.add_function(wrap_pyfunction!(files_load::read_index, m)?)?;
    m.add_function(wrap_pyfunction!(files_load::load_file, m)?)?;
    m.add_function(wrap_pyfunction!(files_load::describe_file, m)?)?;
    m.add_class::<files_load::Inflating>()?;
    m.add_function(wrap_pyfunction!(files_save::save_arrays, m)?)?;
    m.add_function(wrap_pyfunction!(files_save::save_file, m)?)?;
    m.add_function(wrap_pyfunction!(files_report::inspect_file, m)?)?;
    m.add_function(wrap_pyfunction!(files_report::report_text, m)?)?;
    m.add_function(wrap_pyfunction!(files_report::inspect_raw, m)?)?;
    m.add_function(wrap_pyfunction!(files_report::elements, m)?)?;
    m.add_class::<shared::PySharedBuffer>()?;
    m.add_class::<shared::PyLock>()?;
    m.add_class::<ring::PyRing>()?;
    m.add_class::<ring::PySlot>()?;
    m.add_class::<ring::PyBatch>()?;
    #[cfg(feature = "gpu")]
    gpu::register(m)?;
    Ok(())
}
