//! `uploadView`: a view's elements into a new WebGPU buffer, in C order,
//! little-endian (strided and byte-swapped views packed on the way, as
//! native `gpu.upload` does). The WebGPU calls are `js/gpu.js`'s; this side
//! packs the elements, at most [`CHUNK`] bytes of them in wasm memory at a
//! time, so a view of any size goes up with bounded memory. A contiguous
//! little-endian view goes up from wasm memory as it is, with no copy here
//! (`writeBuffer` copies it into the GPU's).
#![forbid(unsafe_code)]

use bytelens_core::{ByteOrder, Layout};
use wasm_bindgen::prelude::*;

use crate::transfer::{byte_range, gather};
use crate::{BindingError, Buffer, JsLayout};

/// The most bytes of packed elements held in wasm memory at once.
const CHUNK: usize = 8 << 20;

#[wasm_bindgen(module = "/js/gpu.js")]
extern "C" {
    /// A new `GPUBuffer` of `nbytes` (rounded up to 4) with `options`'
    /// usage and `COPY_DST`; throws a `RangeError` past the device's
    /// `maxBufferSize`.
    #[wasm_bindgen(js_name = gpuCreate, catch)]
    fn gpu_create(device: &JsValue, nbytes: f64, options: &JsValue) -> Result<JsValue, JsValue>;
    /// `device.queue.writeBuffer(buffer, offset, bytes)`, `bytes` padded to 4.
    #[wasm_bindgen(js_name = gpuWrite, catch)]
    fn gpu_write(
        device: &JsValue,
        buffer: &JsValue,
        offset: f64,
        bytes: &[u8],
    ) -> Result<(), JsValue>;
}

/// `layout`'s elements packed into `target` from byte `at`, in pieces of at
/// most [`CHUNK`] bytes: a view larger than that is cut along its first
/// axis (or, where one index of it is larger, into that index's view).
fn write_packed(
    device: &JsValue,
    target: &JsValue,
    bytes: &[u8],
    layout: &Layout,
    at: usize,
) -> Result<(), BindingError> {
    let nbytes = layout.nbytes();
    if nbytes <= CHUNK || layout.ndim() == 0 {
        return Ok(gpu_write(
            device,
            target,
            at as f64,
            &gather(bytes, layout)?,
        )?);
    }
    let rows = layout.shape()[0];
    let row = nbytes / rows.max(1);
    if rows == 1 {
        return write_packed(device, target, bytes, &layout.index(0, 0)?, at);
    }
    let step = (CHUNK / row.max(1)).max(1);
    let mut first = 0;
    while first < rows {
        let last = rows.min(first + step);
        let slab = layout.slice(0, Some(first as isize), Some(last as isize), 1)?;
        write_packed(device, target, bytes, &slab, at + first * row)?;
        first = last;
    }
    Ok(())
}

/// Uploads the view `layout` of `buffer` into a new `GPUBuffer` of `device`
/// (a WebGPU `GPUDevice`): its elements in C order, little-endian, as a
/// shader reads them (`array<f32>` for float32), `nbytes` rounded up to 4.
/// `options.usage` (default `STORAGE | COPY_SRC`) gets `COPY_DST` added;
/// `options.label` names the buffer; a `usage` that is not a number is a
/// `TypeError`. A view that does not fit `buffer` is the core's
/// `RangeError`; one of the device's `maxBufferSize` or more, a
/// `RangeError` naming both sizes (a buffer of exactly the limit is out of
/// memory on some adapters, SwiftShader among them, which this synchronous
/// call could not report).
///
/// ```js
/// const buf = new Buffer(64 * 48 * 4);
/// const t = new Layout("<f4", { shape: [64, 48] }).transpose();  // strided
/// const gpuBuffer = uploadView(device, buf, t, { usage: GPUBufferUsage.STORAGE });
/// ```
#[wasm_bindgen(js_name = uploadView)]
pub fn upload_view(
    #[wasm_bindgen(unchecked_param_type = "GPUDevice")] device: &JsValue,
    buffer: &Buffer,
    layout: &JsLayout,
    #[wasm_bindgen(unchecked_param_type = "{ usage?: number, label?: string }")] options: &JsValue,
) -> Result<JsValue, BindingError> {
    let (bytes, layout) = (buffer.as_bytes(), layout.layout());
    layout.check(bytes.len())?;
    let target = gpu_create(device, layout.nbytes() as f64, options)?;
    let as_is = layout.is_c_contiguous()
        && (layout.byte_order() == ByteOrder::Little || layout.dtype().size() == 1);
    if as_is {
        gpu_write(device, &target, 0.0, &bytes[byte_range(layout)])?;
    } else {
        write_packed(device, &target, bytes, layout, 0)?;
    }
    Ok(target)
}
