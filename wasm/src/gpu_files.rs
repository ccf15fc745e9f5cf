//! Model files into WebGPU buffers (feature `files`, the demo's build):
//! `loadToGpu`, and the core's WGSL dequantisers for a page's own use,
//! `dequantShader` and `dequantPasses`. The header is read here, by the
//! core; the streaming and the WebGPU calls are `js/gpu.js`'s, so that no
//! byte of a tensor enters wasm memory and a file of any size loads.
#![forbid(unsafe_code)]

use bytelens_core::DType;
use bytelens_core::files::{FileHeader, Format, GgmlType, read_header, wgsl};
use js_sys::{Array, JsString, Promise, Uint8Array};
use wasm_bindgen::prelude::*;

use crate::BindingError;
use crate::convert::{bytes_arg, count_arg, dtype_arg, number, object, whole};
use crate::files::arrays_value;
use crate::stats::qtype_arg;

#[wasm_bindgen(module = "/js/gpu.js")]
extern "C" {
    /// js/gpu.js's `loadModel`: the load itself, with `api` for the core's part.
    #[wasm_bindgen(js_name = loadModel)]
    fn load_model(
        device: &JsValue,
        source: &JsValue,
        options: &JsValue,
        api: GpuFileApi,
    ) -> Promise;
}

/// What js/gpu.js calls back for: the header reader and the shaders. Not
/// for pages (`readHeader`, `dequantShader` and `dequantPasses` are the
/// package's own functions).
#[wasm_bindgen]
pub struct GpuFileApi {}

#[wasm_bindgen]
impl GpuFileApi {
    /// `readHeader`.
    #[wasm_bindgen(js_name = readHeader)]
    pub fn read_header(&self, head: &JsValue, length: &JsValue) -> Result<JsValue, BindingError> {
        crate::files::read_header(head, length)
    }

    /// The header of a file of `length` bytes from `head`, its first
    /// bytes, read once and kept: `{ need }` as `readHeader` gives it,
    /// or a [`GpuHeader`] whose arrays loadToGpu takes a slice at a time,
    /// so that no task on the page's thread makes all of a long header's.
    #[wasm_bindgen(js_name = openHeader)]
    pub fn open_header(&self, head: &JsValue, length: &JsValue) -> Result<JsValue, BindingError> {
        let bytes = bytes_arg(head, "head")?;
        let length = count_arg(length, "length")?;
        match read_header(&bytes, length) {
            Ok(header) => Ok(GpuHeader { header }.into()),
            Err(err) => match err.more_needed(bytes.len()) {
                Some(need) => Ok(object(&[("need", JsValue::from(need as f64))])?.into()),
                None => Err(BindingError::Format(err)),
            },
        }
    }

    /// bytelens's name of the dtype type string `descr` names (`"<f2"`:
    /// `"float16"`), as `describeDtype` gives it.
    #[wasm_bindgen(js_name = dtypeName)]
    pub fn dtype_name(&self, descr: &JsString) -> Result<String, BindingError> {
        Ok(dtype_arg(descr)?.dtype.name().to_owned())
    }

    /// `dequantShader`.
    #[wasm_bindgen(js_name = dequantShader)]
    pub fn dequant_shader(&self, qtype: &JsValue, dtype: &JsValue) -> Result<String, BindingError> {
        dequant_shader(qtype, dtype)
    }

    /// `dequantPasses`.
    #[wasm_bindgen(js_name = dequantPasses)]
    pub fn dequant_passes(
        &self,
        qtype: &JsValue,
        blocks: &JsValue,
        dtype: &JsValue,
        max_binding: &JsValue,
    ) -> Result<Array, BindingError> {
        dequant_passes(qtype, blocks, dtype, max_binding)
    }
}

/// A file's header as the core read it, for loadToGpu: its arrays a
/// slice at a time, as `readHeader` gives them.
#[wasm_bindgen]
pub struct GpuHeader {
    header: FileHeader,
}

#[wasm_bindgen]
impl GpuHeader {
    /// `"npy"`, `"safetensors"` or `"gguf"`.
    #[wasm_bindgen(getter)]
    pub fn format(&self) -> String {
        self.header.format.name().to_owned()
    }

    /// How many arrays the header lists.
    #[wasm_bindgen(getter)]
    pub fn count(&self) -> usize {
        self.header.arrays.len()
    }

    /// `{ arrays }`: arrays `from..to` (clamped to the count), each as
    /// `readHeader`'s arrays are.
    pub fn arrays(&self, from: usize, to: usize) -> Result<JsValue, BindingError> {
        let arrays = &self.header.arrays;
        let to = to.min(arrays.len());
        let gguf = self.header.format == Format::Gguf;
        arrays_value(&arrays[from.min(to)..to], gguf)
    }
}

/// The most passes [`dequant_passes`] lists: 65,536 passes of even a
/// 128 MiB binding are 8 TiB of values, past any GPU buffer.
const MAX_PASSES: u64 = 1 << 16;

const OUTPUTS: &str = "\"f32\", \"f16\" or \"bf16\" (or \"float32\", \"float16\", \"bfloat16\")";

/// The ggml type `qtype` names and the output dtype `dtype` names, both
/// checked.
fn shader_args(qtype: &JsValue, dtype: &JsValue) -> Result<(GgmlType, DType), BindingError> {
    let ggml = qtype_arg(qtype)?;
    let to = match dtype.as_string().as_deref() {
        Some("f32" | "float32") => DType::F32,
        Some("f16" | "float16") => DType::F16,
        Some("bf16" | "bfloat16") => DType::BF16,
        _ => {
            return Err(BindingError::Argument {
                what: "dtype",
                expected: OUTPUTS,
                got: dtype.clone(),
                type_error: dtype.as_string().is_none(),
            });
        }
    };
    Ok((ggml, to))
}

/// The WGSL compute shader that dequantises `qtype` blocks (ggml's name,
/// any case) into `dtype` (`"f32"`, `"f16"` or `"bf16"`): the core's, the
/// same natively. Bindings: 0 the blocks (`array<u32>`), 1 the values
/// (`array<u32>`, read-write), 2 a 16-byte uniform (a pass's `params`);
/// entry point `main`, 64 invocations a workgroup. It needs no
/// `shader-f16`. Values are the CPU's (`dequantize`) bit for bit wherever
/// a block's float16 scale is finite.
#[wasm_bindgen(js_name = dequantShader)]
pub fn dequant_shader(
    #[wasm_bindgen(unchecked_param_type = "string")] qtype: &JsValue,
    #[wasm_bindgen(unchecked_param_type = "string")] dtype: &JsValue,
) -> Result<String, BindingError> {
    let (ggml, to) = shader_args(qtype, dtype)?;
    // shader_args checked that there is one.
    Ok(wgsl::shader(ggml, to).unwrap_or_default())
}

/// The dispatches of `dequantShader(qtype, dtype)` over `blocks` blocks,
/// each binding at most `maxBinding` bytes (the device's
/// `maxStorageBufferBindingSize`): `[{ srcOffset, srcSize, dstOffset,
/// dstSize, words, groups: [x, y], params }]`, `params` the 16 bytes of the
/// pass's uniform. A `RangeError` where `maxBinding` is too small for one
/// pass (a few KiB), or where `blocks` would need more than 65,536 passes.
#[wasm_bindgen(js_name = dequantPasses)]
pub fn dequant_passes(
    #[wasm_bindgen(unchecked_param_type = "string")] qtype: &JsValue,
    #[wasm_bindgen(unchecked_param_type = "number | bigint")] blocks: &JsValue,
    #[wasm_bindgen(unchecked_param_type = "string")] dtype: &JsValue,
    #[wasm_bindgen(unchecked_param_type = "number")] max_binding: &JsValue,
) -> Result<Array, BindingError> {
    let (ggml, to) = shader_args(qtype, dtype)?;
    let blocks = count_arg(blocks, "blocks")?;
    let limit = whole(number(max_binding, "maxBinding")?, "maxBinding")? as u64;
    // Each pass binds at most `limit` bytes of blocks and of values: a count
    // that needs more passes than MAX_PASSES is refused before the core
    // lists them (2^40 blocks would fill wasm memory with passes, then trap).
    let info = ggml.info();
    let per_block = u64::from(info.bytes).max(u64::from(info.block) * to.size() as u64);
    if blocks.saturating_mul(per_block) / limit.max(1) > MAX_PASSES {
        return Err(BindingError::Argument {
            what: "blocks",
            expected: "few enough for 65536 passes of maxBinding bytes (more values than a GPU buffer holds)",
            got: JsValue::from(blocks as f64),
            type_error: false,
        });
    }
    let passes = wgsl::passes(ggml, blocks, to, limit).ok_or_else(|| BindingError::Argument {
        what: "maxBinding",
        expected: "large enough for one pass of whole blocks at aligned offsets",
        got: max_binding.clone(),
        type_error: false,
    })?;
    let out = Array::new();
    for pass in passes {
        let n = |v: u64| JsValue::from(v as f64);
        let groups = Array::of2(&pass.groups[0].into(), &pass.groups[1].into());
        out.push(
            &object(&[
                ("srcOffset", n(pass.src_offset)),
                ("srcSize", n(pass.src_size)),
                ("dstOffset", n(pass.dst_offset)),
                ("dstSize", n(pass.dst_size)),
                ("words", pass.words.into()),
                ("groups", groups.into()),
                ("params", Uint8Array::from(&pass.params()[..]).into()),
            ])?
            .into(),
        );
    }
    Ok(out)
}

/// Every tensor of an `.npy`, safetensors or GGUF file into its own
/// `GPUBuffer`s of `device`, in the file's order: a `Promise` of a `Map`
/// from name to `{ name, dtype, shape, nbytes, buffer, buffers, qtype? }`.
/// `source` is a URL (read by HTTP range requests: the header, then one
/// ranged read of each run of tensors less than 1 MiB apart) or a `File`/`Blob` (by `slice`).
///
/// The header is read by the core, with every check `readHeader` makes
/// (past 256 KiB in a worker, where one starts, and the rest of the load
/// done in slices, so that no task holds the page's thread long);
/// the tensors' bytes stream from the response into each tensor's buffers
/// through an 8 MiB staging array, never into wasm memory or one
/// `ArrayBuffer`, so a file larger than wasm's 4 GiB loads. A tensor larger
/// than `maxBufferSize` is split into as few buffers as it allows, of even
/// sizes (`buffers`; `buffer` is then null), each a multiple of 256 bytes
/// but the last. Elements are
/// little-endian (a big-endian `.npy` is swapped on the way); a Fortran-order
/// `.npy` is refused.
///
/// A GGUF file's quantised tensors go up as their blocks (`dtype`
/// `"uint8"`, `qtype` ggml's name); with `options.dtype` (`"f32"`, `"f16"`
/// or `"bf16"`) they are dequantised on the GPU by `dequantShader`'s
/// shaders, the blocks' buffers then freed, and one that would not fit one
/// buffer (`maxBufferSize`) is a `RangeError` naming the tensor and the limit.
///
/// `options.names` (an array of strings) loads only the tensors it names (a
/// name the file lacks is a `RangeError`; a tensor left out cannot refuse
/// the load). `options.onProgress({ loaded, total, tensor })` is called as
/// bytes go up; `options.signal` (an `AbortSignal`) cancels, rejecting at
/// once with its reason, even after the last byte; `options.usage` (default
/// `STORAGE | COPY_SRC`) gets `COPY_DST` added; `options.maxBufferSize`
/// (at least 257: buffers are multiples of 256 bytes below it) caps each
/// buffer below the device's limit (its `maxStorageBufferBindingSize`,
/// say, so that each binds whole); `options.timeout` (ms, default 30,000)
/// is the longest wait for a response or a read's next bytes, past which
/// the load rejects naming the URL that stalled. Every option is checked
/// first: a wrong type is a `TypeError`, a wrong value a `RangeError`,
/// naming the option and the value.
///
/// Loads may run at once on one device: each scopes only its own WebGPU
/// calls, so the page's own errors stay the page's (`uncapturederror`).
/// A GGUF tensor of a type bytelens does not dequantise (IQ2_XXS, ...)
/// goes up as its blocks (`qtype` its name) without `dtype`; with `dtype`
/// it is a `RangeError` naming it, unless `names` leaves it out.
///
/// A server must answer byte ranges with 206 and a `Content-Range` the
/// page can read (cross-origin: `Access-Control-Expose-Headers:
/// Content-Range`); each answer is checked against the range asked, and a
/// server that ignores `Range`, answers another range or more bytes, or
/// fails is refused naming the URL and what came, its body not read. A
/// device lost or destroyed rejects the load. On every way out the load's
/// reads are cancelled and its buffers destroyed.
///
/// ```js
/// const adapter = await navigator.gpu.requestAdapter();
/// const device = await adapter.requestDevice({ requiredLimits: { maxBufferSize: adapter.limits.maxBufferSize } });
/// const tensors = await loadToGpu(device, "/models/tiny.gguf", { dtype: "f16", onProgress: ({ loaded, total }) => bar.value = loaded / total });
/// tensors.get("blk.0.attn_q.weight").buffer;  // a GPUBuffer of float16 values
/// ```
#[wasm_bindgen(js_name = loadToGpu)]
pub fn load_to_gpu(
    #[wasm_bindgen(unchecked_param_type = "GPUDevice")] device: &JsValue,
    #[wasm_bindgen(unchecked_param_type = "string | URL | Blob")] source: &JsValue,
    #[wasm_bindgen(
        unchecked_param_type = "{ dtype?: string, onProgress?: (p: { loaded: number, total: number, tensor: string }) => void, signal?: AbortSignal, usage?: number, maxBufferSize?: number, names?: string[], timeout?: number }"
    )]
    options: &JsValue,
) -> Promise {
    load_model(device, source, options, GpuFileApi {})
}
