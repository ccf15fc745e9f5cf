//! `Buffer`: bytes in WebAssembly memory, read and written through layouts
//! the core resolves and checks ([`ViewArgs::resolve`]).

use core::cell::Cell;
use std::sync::Mutex;

use bytelens_core::{ByteOrder, DType, Descr, Error, Layout, ViewArgs};
use js_sys::{Array, JsString, Uint8Array};
use wasm_bindgen::prelude::*;

use crate::BindingError;
use crate::convert::{self, ViewOptions, arg, dtype_arg, given, numbers, whole};
use crate::error::at_most;
use crate::js;
use crate::transfer::{self, Source, byte_range};
use crate::types::{ByteSource, LayoutOptions, Numbers, TypedArray, Values};

/// Freed buffers whose memory a typed view handed out earlier may still
/// reach, with the wasm memory size (in pages) when the last view was made.
/// Growing the memory detaches every view made before, so each is freed
/// once the memory has grown past its size; until then its bytes are not
/// reused, and a stale view can only touch memory no one else owns.
static QUARANTINE: Mutex<Vec<(Vec<u64>, usize)>> = Mutex::new(Vec::new());

/// The wasm memory's size in 64 KiB pages (0 off wasm, where no views exist).
fn memory_pages() -> usize {
    #[cfg(target_arch = "wasm32")]
    {
        core::arch::wasm32::memory_size::<0>()
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        0
    }
}

/// Frees the quarantined buffers that no view can reach any more.
fn sweep_quarantine() {
    let pages = memory_pages();
    let mut quarantine = QUARANTINE.lock().unwrap_or_else(|e| e.into_inner());
    quarantine.retain(|&(_, made_at)| made_at >= pages);
}

/// Largest buffer: every offset in it must fit wasm32's `isize`, as the
/// core's layouts hold offsets.
const MAX_NBYTES: usize = i32::MAX as usize;

/// What `typed` takes.
const TYPED: &str = "little-endian, and of a dtype a JS typed array holds as it is: not \
                     float16, bfloat16 or a float8 (read() and write() take every dtype)";

/// What a buffer's size must be (for a size wasm memory cannot find room
/// for, too: a `RangeError`, as `new ArrayBuffer` throws).
const NBYTES: &str = "a whole number from 0 to 2147483647 that memory has room for";

/// Bytes in WebAssembly memory, zeroed and 8-byte aligned.
#[wasm_bindgen]
pub struct Buffer {
    /// 8-byte words, so every dtype's typed array may start at offset 0.
    words: Vec<u64>,
    len: usize,
    /// The memory size when `typed()` last made a view (0: never).
    typed_at: Cell<usize>,
}

impl Drop for Buffer {
    fn drop(&mut self) {
        let typed_at = self.typed_at.get();
        if typed_at > 0 {
            let words = core::mem::take(&mut self.words);
            QUARANTINE
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((words, typed_at));
        }
        sweep_quarantine();
    }
}

impl Buffer {
    pub(crate) fn as_bytes(&self) -> &[u8] {
        // u64 to u8 always casts; `try_` keeps the panic path (and its Debug
        // formatting) out of the .wasm.
        &bytemuck::try_cast_slice(&self.words).unwrap_or_default()[..self.len]
    }

    fn as_bytes_mut(&mut self) -> &mut [u8] {
        let len = self.len;
        let bytes: &mut [u8] = bytemuck::try_cast_slice_mut(&mut self.words).unwrap_or_default();
        &mut bytes[..len]
    }

    /// The checked layout `dtype` and `options` describe over this buffer,
    /// by the core's rule; `count` is the length of a shapeless view when
    /// the caller knows it (`write`'s values).
    fn resolve(
        &self,
        descr: Descr,
        options: Option<LayoutOptions>,
        count: Option<usize>,
    ) -> Result<Layout, BindingError> {
        let options = ViewOptions::read(&options.map(Into::into).unwrap_or(JsValue::UNDEFINED))?;
        let args = ViewArgs {
            count,
            ..options.args(descr)
        };
        Ok(args.resolve(Some(self.len))?)
    }

    /// The `count` contiguous elements of `descr` from `offset`, checked.
    #[inline(never)] // one copy for `typed` and `setBytes`: the .wasm has a budget
    fn run(
        &self,
        descr: Descr,
        offset: isize,
        count: Option<usize>,
    ) -> Result<Layout, BindingError> {
        let args = ViewArgs {
            offset,
            count,
            ..ViewArgs::new(descr)
        };
        Ok(args.resolve(Some(self.len))?)
    }
}

#[wasm_bindgen]
impl Buffer {
    /// `nbytes` zeroed bytes.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "number")] nbytes: &JsValue,
    ) -> Result<Buffer, BindingError> {
        let too_big = || BindingError::Argument {
            what: "nbytes",
            expected: NBYTES,
            got: nbytes.clone(),
            type_error: false,
        };
        let nbytes = arg(nbytes, "nbytes", whole)?;
        if nbytes > MAX_NBYTES {
            return Err(too_big());
        }
        let mut words = Vec::new();
        words
            .try_reserve_exact(nbytes.div_ceil(8))
            .map_err(|_| too_big())?;
        words.resize(nbytes.div_ceil(8), 0);
        // The allocation may have grown wasm memory, detaching old views.
        sweep_quarantine();
        Ok(Buffer {
            words,
            len: nbytes,
            typed_at: Cell::new(0),
        })
    }

    /// The buffer's length in bytes.
    #[wasm_bindgen(getter)]
    pub fn nbytes(&self) -> usize {
        self.len
    }

    /// Copies `bytes` (a `Uint8Array`, or an array of integers 0 to 255) in
    /// at `offset`: as `write` writes `|u1` elements, where they go checked
    /// before one of them is read, and none written unless all are bytes.
    #[wasm_bindgen(js_name = setBytes)]
    pub fn set_bytes(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "number")] offset: &JsValue,
        bytes: ByteSource,
    ) -> Result<(), BindingError> {
        let offset = arg(offset, "offset", convert::offset)?;
        let bytes: JsValue = bytes.into();
        if !bytes.is_instance_of::<Uint8Array>() && !Array::is_array(&bytes) {
            let expected = "a Uint8Array or an array of bytes";
            return Err(BindingError::wrong_type("bytes", expected, &bytes));
        }
        let source = Source::read(&bytes)?;
        let layout = self.run(Descr::native(DType::U8), offset, Some(source.len()))?;
        transfer::write(self.as_bytes_mut(), &layout, source)
    }

    /// A copy of every byte, as a `Uint8Array`.
    pub fn bytes(&self) -> Vec<u8> {
        self.as_bytes().to_vec()
    }

    /// A typed array over the buffer's memory (no copy), from `offset`
    /// (default 0) for `length` elements (default: all from there to the
    /// end). Made anew on every call, and good until the next allocation:
    /// growing wasm memory detaches it. After `free()` the buffer's bytes
    /// are not reused until that growth, so a forgotten view never reaches
    /// another buffer. Little-endian dtypes whose elements a JS typed array
    /// holds as they are only (not float16, bfloat16 or the float8s);
    /// `read` handles the rest.
    pub fn typed(
        &self,
        dtype: &JsString,
        #[wasm_bindgen(unchecked_optional_param_type = "number")] offset: &JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "number")] length: &JsValue,
    ) -> Result<TypedArray, BindingError> {
        let descr = dtype_arg(dtype)?;
        let big = descr.dtype.size() > 1 && descr.order != ByteOrder::Little;
        if big || !transfer::same_width(descr.dtype) {
            return Err(BindingError::Argument {
                what: "a typed array's dtype",
                expected: TYPED,
                got: dtype.into(),
                type_error: false,
            });
        }
        let count = given(length).map(|n| arg(n, "length", whole)).transpose()?;
        let offset = given(offset).map_or(Ok(0), |v| arg(v, "offset", convert::offset))?;
        let layout = self.run(descr, offset, count)?;
        let view = typed_view(self.as_bytes(), &layout)?;
        self.typed_at.set(memory_pages());
        Ok(view)
    }

    /// The elements of a view, in C order, copied into a new typed array
    /// of the dtype's class: `Float32Array` for float32, `BigInt64Array`
    /// for int64, …; `Uint8Array` of 0 and 1 for bool; `Float32Array` for
    /// float16, bfloat16 and the float8s, which it holds exactly (the class
    /// is the core's table's, `jsArray` in `dtypes()`).
    pub fn read(
        &self,
        dtype: &JsString,
        layout: Option<LayoutOptions>,
    ) -> Result<TypedArray, BindingError> {
        let layout = self.resolve(dtype_arg(dtype)?, layout, None)?;
        at_most(layout.size(), "read() returns")?;
        Ok(transfer::read(self.as_bytes(), &layout)?.unchecked_into())
    }

    /// Writes `values` (in C order) through a view: a typed array of any
    /// class whose values are elements of the dtype, or a plain array of
    /// numbers, bigints or (for bool) booleans. Without a shape (and
    /// without strides) the view is one axis of `values.length` elements
    /// from the offset. Nothing is written unless every value fits its dtype.
    pub fn write(
        &mut self,
        dtype: &JsString,
        layout: Option<LayoutOptions>,
        values: Values,
    ) -> Result<(), BindingError> {
        let descr = dtype_arg(dtype)?;
        let source = Source::read(&values)?;
        let layout = self.resolve(descr, layout, Some(source.len()))?;
        if layout.is_read_only() {
            return Err(Error::ReadOnly.into());
        }
        at_most(layout.size(), "write() takes")?;
        if layout.size() != source.len() {
            return Err(Error::CountMismatch {
                expected: layout.size(),
                got: source.len(),
            }
            .into());
        }
        transfer::write(self.as_bytes_mut(), &layout, source)
    }

    /// The byte offset of each element of a view, in C order (the order of `read`).
    pub fn offsets(
        &self,
        dtype: &JsString,
        layout: Option<LayoutOptions>,
    ) -> Result<Numbers, BindingError> {
        let layout = self.resolve(dtype_arg(dtype)?, layout, None)?;
        at_most(layout.size(), "offsets() returns")?;
        let offsets = layout.offsets(self.len)?;
        Ok(numbers(offsets.map(|offset| offset as f64)).unchecked_into())
    }
}

/// A JS typed array over the bytes of `layout`, checked (so aligned and
/// contiguous) over `buffer`; a little-endian dtype of its class's width.
fn typed_view(buffer: &[u8], layout: &Layout) -> Result<TypedArray, BindingError> {
    let (dtype, range) = (layout.dtype(), byte_range(layout));
    let offset = range.start;
    let bytes = &buffer[range];
    // The core checked the offset against the buffer's start, whose words
    // are 8-byte aligned: so is the address, as a typed array needs.
    if !(bytes.as_ptr() as usize).is_multiple_of(dtype.align()) {
        let align = dtype.align();
        return Err(Error::Misaligned {
            offset,
            align,
            dtype,
        }
        .into());
    }
    // A view of wasm memory, made in JS (one call for every class, not one
    // import per class): it aliases the buffer as typed arrays alias an
    // ArrayBuffer, wasm memory is never unmapped, and when the memory grows
    // JS detaches the view rather than leaving it dangling (see `typed` and
    // QUARANTINE for the buffer's bytes after `free()`).
    Ok(js::typed_view(transfer::kind_of(dtype), bytes))
}
