//! `bytelens.gpu`: upload numpy arrays and bytelens views to the GPU and
//! download them back as numpy arrays over a bytelens `Buffer`.
//!
//! One [`GpuContext`] per interpreter, made on first use with the default
//! options (wgpu's primary backends, the adapter's own limits). Uploads
//! read the array's memory where it is, in whatever strides it has;
//! downloads write into a fresh buffer nobody else can see yet. Both
//! release the GIL while the bytes move. An upload holds a reference to the
//! array, and through it to the memory's owner, so the bytes cannot be
//! freed or resized meanwhile (numpy, bytearray, mmap and bytelens all
//! refuse that while an array over them exists). As with any numpy
//! operation, an array written by another thread during an upload is read
//! in whatever state it is in: callers must not write to an array while it
//! is being uploaded.

use std::sync::OnceLock;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use super::buffer::PyBuf;
use super::dtype::{numpy_descr, to_descr};
use super::error::{GpuError as PyGpuError, IntoPyErr, PyErrResult};
use super::memory::Memory;
use super::source::Source;
use bytelens::files::GgmlType;
use bytelens::gpu::{
    Dequantize, GpuBuffer, GpuContext, GpuError, GpuTexture, HostView, texture_format, wgpu,
};
use bytelens::{DType, Layout};

/// The interpreter's context, made once; a failure (no adapter) is kept
/// and raised again on every call.
fn context(py: Python<'_>) -> PyResult<&'static GpuContext> {
    static CONTEXT: OnceLock<Result<GpuContext, GpuError>> = OnceLock::new();
    // Finding an adapter can take a while: let other threads run.
    let made = py.detach(|| CONTEXT.get_or_init(GpuContext::new));
    made.as_ref().map_err(|err| err.clone().into_py_err(py))
}

/// Data held on the GPU, in C order: what `bytelens.gpu.upload` returns.
#[pyclass(name = "GpuBuffer", module = "bytelens._native", frozen)]
pub struct PyGpuBuffer {
    inner: GpuBuffer,
}

#[pymethods]
impl PyGpuBuffer {
    /// Bytes of data (the uploaded array's nbytes).
    #[getter]
    fn nbytes(&self) -> usize {
        self.inner.nbytes()
    }

    /// Bytes on the GPU: nbytes rounded up to a multiple of 4 (4 when empty).
    #[getter]
    fn padded_size(&self) -> u64 {
        self.inner.padded_size()
    }

    /// The numpy dtype of the data.
    #[getter]
    fn dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(numpy_descr(py, self.inner.layout().descr())?
            .clone()
            .into_any())
    }

    /// The shape of the data.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.layout().shape())
    }

    /// The ggml type (``"q4_k"``) of quantised blocks uploaded as they are
    /// (``gpu.load`` of a GGUF file without ``dtype``), for a shader to
    /// dequantise: the buffer's dtype is then uint8, its shape the blocks'
    /// bytes, and ``values_shape`` the shape of the values they hold. None
    /// for every other buffer.
    #[getter]
    fn qtype(&self) -> Option<String> {
        self.inner
            .quantized()
            .map(|(ggml, _)| ggml.name().to_lowercase())
    }

    /// The shape of the values quantised blocks hold (see ``qtype``); None
    /// for every other buffer.
    #[getter]
    fn values_shape<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.inner
            .quantized()
            .map(|(_, shape)| PyTuple::new(py, shape))
            .transpose()
    }

    /// The values quantised blocks hold (see ``qtype``), dequantised on the
    /// GPU by bytelens' WGSL shaders into a new buffer of ``dtype``
    /// (float32, float16 or bfloat16), the shape of ``values_shape``: the
    /// CPU's values bit for bit wherever a block's scale is finite; values
    /// past the device's ``max_buffer_size`` fill several segments. Raises
    /// ``GpuError`` for a buffer of anything but blocks, and the CPU's
    /// ``ValueError`` (kind ``"Dequantize"``) for another dtype.
    fn dequantize(&self, py: Python<'_>, dtype: &Bound<'_, PyAny>) -> PyResult<PyGpuBuffer> {
        let to = to_descr(dtype)?;
        // The byte order too: a shader writes the machine's.
        bytelens::check_dequantize_to(to).py_err(py)?;
        let gpu = context(py)?;
        let inner = py
            .detach(|| gpu.dequantize(&self.inner, to.dtype))
            .py_err(py)?;
        Ok(PyGpuBuffer { inner })
    }

    /// How many wgpu buffers hold the data (more than one only past the
    /// device's max_buffer_size).
    #[getter]
    fn segments(&self) -> usize {
        self.inner.buffers().len()
    }

    /// Reads the data back: a new C-contiguous numpy array with the
    /// uploaded dtype and shape, over a fresh 64-byte aligned bytelens Buffer.
    fn download<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let layout = self.inner.layout();
        download_with(py, &layout, |bytes| self.inner.download_into(bytes))
    }

    fn __repr__(&self) -> String {
        let layout = self.inner.layout();
        format!(
            "GpuBuffer(dtype={}, shape={:?}, nbytes={}, segments={})",
            layout.descr(),
            layout.shape(),
            self.inner.nbytes(),
            self.inner.buffers().len()
        )
    }
}

/// Uploads an array (or anything numpy.asarray accepts without copying:
/// a bytelens view, a Buffer, a memoryview) to the GPU, in C order,
/// converted to `dtype` on the way when one is given. Strided,
/// transposed, reversed and converted arrays are copied straight into
/// the GPU's mapped memory: one pass on the host.
#[pyfunction]
#[pyo3(signature = (array, dtype=None))]
pub(crate) fn gpu_upload(
    py: Python<'_>,
    array: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyGpuBuffer> {
    let gpu = context(py)?;
    let source = Source::read(array, "upload")?;
    let (bytes, layout) = (source.bytes(), source.layout());
    let to = dtype.map(to_descr).transpose()?;
    // `source` holds the array until the upload returns (see the module docs).
    let inner = py
        .detach(|| gpu.upload((bytes, layout)).to(to).buffer())
        .py_err(py)?;
    Ok(PyGpuBuffer { inner })
}

/// An image or volume on the GPU: what `bytelens.gpu.upload_texture` returns.
#[pyclass(name = "GpuTexture", module = "bytelens._native", frozen)]
pub struct PyGpuTexture {
    inner: GpuTexture,
}

#[pymethods]
impl PyGpuTexture {
    /// The texture format, as WebGPU names it ("rgba8unorm").
    #[getter]
    fn format(&self) -> &'static str {
        self.inner.format_name()
    }

    /// (width, height, depth or array layers).
    #[getter]
    fn size(&self) -> (u32, u32, u32) {
        let size = self.inner.size();
        (size.width, size.height, size.depth_or_array_layers)
    }

    /// "2d" or "3d".
    #[getter]
    fn dimension(&self) -> &'static str {
        match self.inner.texture().dimension() {
            wgpu::TextureDimension::D3 => "3d",
            _ => "2d",
        }
    }

    /// The uploaded array's shape (what download gives back).
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.layout().shape())
    }

    /// The numpy dtype of the channels (little-endian).
    #[getter]
    fn dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(numpy_descr(py, self.inner.layout().descr())?
            .clone()
            .into_any())
    }

    /// Reads the texture back: a new array of the uploaded shape (RGB
    /// stays RGB: the alpha added on upload is dropped), over a fresh
    /// 64-byte aligned bytelens Buffer.
    fn download<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let layout = self.inner.layout();
        download_with(py, &layout, |bytes| self.inner.download_into(bytes))
    }

    fn __repr__(&self) -> String {
        let (w, h, d) = self.size();
        format!(
            "GpuTexture(format={}, size=({w}, {h}, {d}), dimension={}, shape={:?})",
            self.format(),
            self.dimension(),
            self.inner.layout().shape()
        )
    }
}

/// Reads GPU data of `layout` into a new bytelens Buffer with `read`, the
/// GIL released, and returns the numpy array over it.
fn download_with<'py>(
    py: Python<'py>,
    layout: &bytelens::Layout,
    read: impl FnOnce(&mut [u8]) -> Result<(), GpuError> + Send,
) -> PyResult<Bound<'py, PyAny>> {
    let nbytes = layout.nbytes();
    let memory = Memory::owned(py, nbytes, 64)?;
    let buffer = Bound::new(py, PyBuf::new(py, memory)?)?;
    let address = buffer.get().address();
    let bytes: &mut [u8] = if nbytes == 0 {
        &mut []
    } else {
        // SAFETY: `buffer` was allocated above with `nbytes` bytes at
        // `address`; nothing else has seen it yet (no view, no export),
        // so this is the only reference to those bytes until the
        // download returns, and `buffer` outlives it.
        unsafe { std::slice::from_raw_parts_mut(address, nbytes) }
    };
    py.detach(|| read(bytes)).py_err(py)?;
    PyBuf::array(&buffer, layout)
}

/// Uploads an image or volume array to a new GPU texture: see
/// `bytelens.gpu.upload_texture`.
#[pyfunction]
#[pyo3(signature = (array, format=None, dimension="2d"))]
pub(crate) fn gpu_upload_texture(
    py: Python<'_>,
    array: &Bound<'_, PyAny>,
    format: Option<&str>,
    dimension: &str,
) -> PyResult<PyGpuTexture> {
    let gpu = context(py)?;
    let format = match format {
        None => None,
        Some(name) => Some(texture_format(name).ok_or_else(|| {
            let err = GpuError::Texture(format!("unknown format {name:?}"));
            err.into_py_err(py)
        })?),
    };
    let volume = match dimension {
        "2d" => false,
        "3d" => true,
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "dimension must be \"2d\" or \"3d\", not {other:?}"
            )));
        }
    };
    let source = Source::read(array, "upload_texture")?;
    let (bytes, layout) = (source.bytes(), source.layout());
    let inner = py
        .detach(|| {
            let up = gpu.upload((bytes, layout));
            if volume {
                up.volume(format)
            } else {
                up.texture(format)
            }
        })
        .py_err(py)?;
    Ok(PyGpuTexture { inner })
}

/// A GGUF tensor's type name and the shape of its values.
type QuantizedItem = (String, Vec<usize>);

/// Uploads each array of `arrays` (a list) into a new GPU buffer, in
/// order, each converted to `dtype` when one is given, bringing the pages
/// of the arrays still to come into memory while the current one is copied
/// (`GpuContext::upload_all`): what `bytelens.gpu.load` uploads a loaded
/// file's mapped arrays with.
///
/// `quantized`, where given, has one item per array: None, or `(qtype,
/// shape)` for an array that is a GGUF tensor's blocks (a uint8 array):
/// uploaded as they are without `dtype` (a buffer that knows its `qtype`),
/// dequantised on the way with one. Either way the blocks must hold that
/// shape, as a GGUF file's would (whole blocks, rows of whole blocks, as
/// many values as they hold): else a `GpuError` naming the array (by
/// `names[i]`, where given) before anything is uploaded.
#[pyfunction]
#[pyo3(signature = (arrays, dtype=None, quantized=None, names=None, dequantize="cpu"))]
pub(crate) fn gpu_upload_all(
    py: Python<'_>,
    arrays: Vec<Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    quantized: Option<Vec<Option<QuantizedItem>>>,
    names: Option<Vec<String>>,
    dequantize: &str,
) -> PyResult<Vec<PyGpuBuffer>> {
    let dequantize = match dequantize {
        "cpu" => Dequantize::Cpu,
        "gpu" => Dequantize::Gpu,
        other => {
            return Err(PyValueError::new_err(format!(
                "dequantize is {other:?}; it must be \"cpu\" or \"gpu\""
            )));
        }
    };
    let gpu = context(py)?;
    let to = dtype.map(to_descr).transpose()?;
    let sources = arrays
        .iter()
        .map(|array| Source::read(array, "upload"))
        .collect::<PyResult<Vec<_>>>()?;
    let quantized = quantized.unwrap_or_default();
    // Each quantised array's type and the layout of the values it holds.
    let values = sources
        .iter()
        .enumerate()
        .map(|(i, _)| match quantized.get(i) {
            Some(Some((qtype, shape))) => {
                let ggml = GgmlType::from_name(qtype)
                    .ok_or_else(|| PyValueError::new_err(format!("no ggml type {qtype:?}")))?;
                Ok(Some((
                    ggml,
                    Layout::contiguous(DType::F32, shape).py_err(py)?,
                )))
            }
            _ => Ok(None),
        })
        .collect::<PyResult<Vec<_>>>()?;
    let views: Vec<_> = sources
        .iter()
        .zip(&values)
        .map(|(source, values)| match values {
            Some((ggml, values)) => {
                HostView::quantized(source.bytes(), source.layout(), *ggml, values)
            }
            None => HostView::from((source.bytes(), source.layout())),
        })
        .collect();
    for (i, view) in views.iter().enumerate() {
        if let Err(err) = view.check_blocks() {
            let message = match names.as_ref().and_then(|names| names.get(i)) {
                Some(name) => format!("array {name:?}: {err} (uploaded nothing)"),
                None if views.len() == 1 => err.to_string(),
                None => format!("array {i}: {err} (uploaded nothing)"),
            };
            return Err(PyGpuError::new_err(message));
        }
    }
    // `sources` holds every array until the uploads return.
    let names = names.unwrap_or_default();
    let buffers = py
        .detach(|| gpu.upload_all_with(&views, to, dequantize, &names))
        .py_err(py)?;
    Ok(buffers
        .into_iter()
        .map(|inner| PyGpuBuffer { inner })
        .collect())
}

/// The adapter bytelens uploads to: name, vendor, device, device_type,
/// driver, driver_info, backend, and its max_buffer_size,
/// max_storage_buffer_binding_size, max_texture_dimension_1d, _2d and _3d
/// and max_texture_array_layers.
#[pyfunction]
pub(crate) fn gpu_adapter_info(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let gpu = context(py)?;
    let info = gpu.info();
    let limits = gpu.limits();
    let dict = PyDict::new(py);
    dict.set_item("name", &info.name)?;
    dict.set_item("vendor", info.vendor)?;
    dict.set_item("device", info.device)?;
    dict.set_item("device_type", format!("{:?}", info.device_type))?;
    dict.set_item("driver", &info.driver)?;
    dict.set_item("driver_info", &info.driver_info)?;
    dict.set_item("backend", format!("{:?}", info.backend))?;
    dict.set_item("max_buffer_size", limits.max_buffer_size)?;
    dict.set_item(
        "max_storage_buffer_binding_size",
        limits.max_storage_buffer_binding_size,
    )?;
    for (name, value) in [
        ("max_texture_dimension_1d", limits.max_texture_dimension_1d),
        ("max_texture_dimension_2d", limits.max_texture_dimension_2d),
        ("max_texture_dimension_3d", limits.max_texture_dimension_3d),
        ("max_texture_array_layers", limits.max_texture_array_layers),
    ] {
        dict.set_item(name, value)?;
    }
    Ok(dict)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyGpuBuffer>()?;
    m.add_class::<PyGpuTexture>()?;
    m.add_function(wrap_pyfunction!(gpu_upload, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_upload_texture, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_upload_all, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_adapter_info, m)?)?;
    Ok(())
}
