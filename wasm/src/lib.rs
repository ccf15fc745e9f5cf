//! bytelens for JavaScript: bytes in WebAssembly memory, read and written
//! through layouts the core checks, with `DataView` semantics for every
//! dtype and byte order.
//!
//! ```js
//! import init, { Buffer, Plan } from "./pkg/bytelens_wasm.js";
//! await init();
//! const buf = new Buffer(16);
//! buf.write("<i4", {}, [0x11223344]);
//! buf.read("<i2", { shape: [2] });          // [0x3344, 0x1122]
//! buf.typed("<i4");                         // Int32Array over wasm memory, fresh on every call
//! ```
//!
//! Typed arrays over wasm memory are detached (length 0) when the memory
//! grows, so `typed()` makes a new one on every call and the package keeps
//! none; `read`, `write`, `bytes` and `offsets` copy.
//!
//! Every bad layout or value throws a `RangeError` with the core's message.

use bytelens_core::{
    ByteOrder, DType, Descr, Error, FieldSpec, Layout, Plan as CorePlan, PlanSpec, Scalar,
};
use std::cell::Cell;
use std::sync::Mutex;

use js_sys::{Array, BigInt, JsString, Number, Object, RangeError, Reflect, TypeError, Uint8Array};
use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &str = r#"
/** Where a view's elements lie. Without a shape: one axis, as many elements as
 *  fit from `offset` (for `write`: as many as there are values). */
export interface LayoutOptions {
  /** Byte offset of element [0, ..., 0]. */
  offset?: number;
  shape?: number[];
  /** In bytes; negative and zero allowed. Default: C order. */
  strides?: number[];
  /** Refuse writes (as `Layout.broadcastTo` results are). */
  readonly?: boolean;
  /** Allow offsets and strides that are not multiples of the alignment. */
  unaligned?: boolean;
}
/** An element value: bigint for int64/uint64, boolean for bool, else number. */
export type Value = number | bigint | boolean;
/** A plan field: a dtype (a single element) or [dtype, shape]. */
export type FieldSpec = string | [string, number | number[]];
export interface PlanField {
  name: string;
  dtype: string;
  shape: number[];
  offset: number;
  nbytes: number;
  alternative: number;
}
"#;

#[wasm_bindgen]
extern "C" {
    /// `LayoutOptions | undefined` on the JS side.
    #[wasm_bindgen(typescript_type = "LayoutOptions | undefined")]
    pub type LayoutOptions;
    /// `LayoutOptions`, where one is required.
    #[wasm_bindgen(typescript_type = "LayoutOptions")]
    pub type LayoutSpec;
    /// `Value[]`.
    #[wasm_bindgen(typescript_type = "Value[]")]
    pub type Values;
    /// `Record<string, FieldSpec>`.
    #[wasm_bindgen(typescript_type = "Record<string, FieldSpec>")]
    pub type FieldSpecs;
    /// `PlanField[]`.
    #[wasm_bindgen(typescript_type = "PlanField[]")]
    pub type PlanFields;
    /// `Array<[number, number]>`.
    #[wasm_bindgen(typescript_type = "Array<[number, number]>")]
    pub type Ranges;
    /// `number[]`.
    #[wasm_bindgen(typescript_type = "number[]")]
    pub type Numbers;
    /// Bytes to copy in: `Uint8Array | number[]`.
    #[wasm_bindgen(typescript_type = "Uint8Array | number[]")]
    pub type ByteSource;
    /// The typed array for a dtype.
    #[wasm_bindgen(
        typescript_type = "Int8Array | Uint8Array | Int16Array | Uint16Array | Int32Array | Uint32Array | BigInt64Array | BigUint64Array | Float32Array | Float64Array"
    )]
    pub type TypedArray;
}

/// A `RangeError` with `message`.
fn range_error(message: impl core::fmt::Display) -> JsValue {
    RangeError::new(&message.to_string()).into()
}

/// The JS error for a core error: a `RangeError` with its message, and its
/// kind (`"Misaligned"`, `"OutOfBounds"`, ...) as the `kind` property.
fn core_err(err: Error) -> JsValue {
    let error = range_error(err);
    // Setting a property on a fresh error object cannot fail; without it the
    // error is still the right one.
    let _ = Reflect::set(
        &error,
        &JsValue::from_str("kind"),
        &JsValue::from_str(err.kind()),
    );
    error
}

/// A `TypeError` with `message`: an argument of the wrong kind.
fn type_error(message: impl core::fmt::Display) -> JsValue {
    TypeError::new(&message.to_string()).into()
}

/// The core's out-of-bounds error, with positions that may not fit a 32-bit `isize`.
fn out_of_bounds(start: usize, end: u64, len: usize) -> JsValue {
    let error = range_error(format!(
        "the view reaches bytes {start}..{end} but the buffer holds {len} bytes"
    ));
    let _ = Reflect::set(
        &error,
        &JsValue::from_str("kind"),
        &JsValue::from_str("OutOfBounds"),
    );
    error
}

/// A dtype argument: a string such as `"<i4"`, parsed by the core.
fn dtype_arg(dtype: &JsString) -> Result<Descr, JsValue> {
    let text = dtype.as_string().ok_or_else(|| {
        type_error(format!(
            "a dtype is a string such as \"<i4\", not {}",
            describe(dtype)
        ))
    })?;
    text.parse().map_err(core_err)
}

/// `error` with `prefix` put before its message (a JS Error object, or unchanged).
fn prefix_message(error: &JsValue, prefix: &str) -> JsValue {
    let key = JsValue::from_str("message");
    if let Some(message) = Reflect::get(error, &key).ok().and_then(|m| m.as_string()) {
        let _ = Reflect::set(
            error,
            &key,
            &JsValue::from_str(&format!("{prefix}{message}")),
        );
    }
    error.clone()
}

/// A whole number from 0 to `usize::MAX`.
fn whole(value: f64, what: &str) -> Result<usize, JsValue> {
    if value >= 0.0 && value.fract() == 0.0 && value <= usize::MAX as f64 {
        Ok(value as usize)
    } else {
        Err(range_error(format!(
            "{what} must be a whole number from 0 to {}, not {}",
            usize::MAX,
            describe(&value.into())
        )))
    }
}

/// An integer; beyond `isize` it saturates (as slice bounds clamp anyway).
fn integer(value: f64, what: &str) -> Result<isize, JsValue> {
    if value.fract() == 0.0 && !value.is_nan() {
        Ok(value.clamp(isize::MIN as f64, isize::MAX as f64) as isize)
    } else {
        Err(range_error(format!(
            "{what} must be an integer, not {}",
            describe(&value.into())
        )))
    }
}

/// An axis argument; a negative one counts from the end, as in numpy.
fn axis(value: f64, ndim: usize) -> Result<usize, JsValue> {
    let axis = integer(value, "axis")?;
    let axis = if axis < 0 {
        axis.saturating_add(ndim as isize)
    } else {
        axis
    };
    // Out of range either way: an axis the core refuses with its own message.
    Ok(usize::try_from(axis).unwrap_or(usize::MAX))
}

/// The elements of a JS array, read without letting a throwing getter or
/// proxy unwind through Rust (each read catches).
fn items(value: &JsValue, what: &str) -> Result<Vec<JsValue>, JsValue> {
    if !Array::is_array(value) {
        return Err(type_error(format!(
            "{what} must be an array, not {}",
            describe(value)
        )));
    }
    let length = Reflect::get(value, &JsValue::from_str("length"))?;
    let length = whole(length.as_f64().unwrap_or(f64::NAN), "an array's length")?;
    (0..length)
        .map(|i| Reflect::get_u32(value, i as u32))
        .collect()
}

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

/// Largest buffer: what a wasm32 `ArrayBuffer` can address, less headroom.
const MAX_NBYTES: usize = 1 << 31;

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
    fn as_bytes(&self) -> &[u8] {
        // u64 to u8 always casts; `try_` keeps the panic path (and its Debug
        // formatting) out of the .wasm.
        &bytemuck::try_cast_slice(&self.words).unwrap_or_default()[..self.len]
    }

    fn as_bytes_mut(&mut self) -> &mut [u8] {
        let len = self.len;
        let bytes: &mut [u8] = bytemuck::try_cast_slice_mut(&mut self.words).unwrap_or_default();
        &mut bytes[..len]
    }

    /// The checked layout `dtype` + `options` describes over this buffer.
    /// Without a shape: one axis of `count` elements if given, else of every
    /// element that fits from the offset.
    fn layout(
        &self,
        dtype: &JsString,
        options: &JsValue,
        count: Option<usize>,
    ) -> Result<(Descr, Layout), JsValue> {
        let descr = dtype_arg(dtype)?;
        let shape = match (get(options, "shape")?, count) {
            (Some(_), _) => None,
            (None, Some(n)) => Some(n),
            (None, None) => {
                let offset = offset_option(options)?;
                let rest = self
                    .len
                    .checked_sub(offset)
                    .ok_or_else(|| out_of_bounds(offset, offset as u64, self.len))?;
                Some(elements_in(descr.dtype, rest)?)
            }
        };
        let layout = layout_from_options(descr, options, shape)?;
        layout.check(self.len).map_err(core_err)?;
        Ok((descr, layout))
    }
}

/// How many `dtype` elements `nbytes` bytes hold, by the core's rule for a
/// whole buffer ([`Layout::from_bytes`]: they must divide exactly).
fn elements_in(dtype: DType, nbytes: usize) -> Result<usize, JsValue> {
    Ok(Layout::from_bytes(dtype, nbytes).map_err(core_err)?.size())
}

/// The byte offset an options object gives (default 0).
fn offset_option(options: &JsValue) -> Result<usize, JsValue> {
    match get(options, "offset")? {
        Some(v) => to_index(&v, "offset"),
        None => Ok(0),
    }
}

/// The layout `options` describe for `descr`, one axis of `length` elements
/// when they give no shape.
fn layout_from_options(
    descr: Descr,
    options: &JsValue,
    length: Option<usize>,
) -> Result<Layout, JsValue> {
    let offset = offset_option(options)?;
    let shape = match get(options, "shape")? {
        Some(v) => to_list::<usize>(&v, "shape")?,
        None => vec![length.ok_or_else(|| range_error("a Layout needs a shape"))?],
    };
    let strides = get(options, "strides")?
        .map(|v| to_list::<isize>(&v, "strides"))
        .transpose()?;
    let mut layout = match strides {
        Some(strides) => Layout::new(descr.dtype, offset, &shape, &strides),
        None => Layout::contiguous(descr.dtype, &shape).and_then(|l| l.with_offset(offset)),
    }
    .map_err(core_err)?
    .with_byte_order(descr.order);
    if flag(options, "readonly")? {
        layout = layout.read_only();
    }
    if flag(options, "unaligned")? {
        layout = layout.unaligned();
    }
    Ok(layout)
}

/// A boolean option, false when absent.
fn flag(options: &JsValue, key: &str) -> Result<bool, JsValue> {
    match get(options, key)? {
        None => Ok(false),
        Some(v) => v
            .as_bool()
            .ok_or_else(|| range_error(format!("{key} must be true or false"))),
    }
}

#[wasm_bindgen]
impl Buffer {
    /// `nbytes` zeroed bytes.
    #[wasm_bindgen(constructor)]
    pub fn new(nbytes: f64) -> Result<Buffer, JsValue> {
        let nbytes = whole(nbytes, "nbytes")?;
        if nbytes > MAX_NBYTES {
            return Err(range_error(format!(
                "{nbytes} bytes is more than the {MAX_NBYTES} a Buffer can hold"
            )));
        }
        let mut words = Vec::new();
        words
            .try_reserve_exact(nbytes.div_ceil(8))
            .map_err(|_| range_error(format!("could not allocate {nbytes} bytes")))?;
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

    /// Copies `bytes` (a `Uint8Array`, or an array of integers 0 to 255) in at `offset`.
    #[wasm_bindgen(js_name = setBytes)]
    pub fn set_bytes(&mut self, offset: f64, bytes: ByteSource) -> Result<(), JsValue> {
        let bytes: JsValue = bytes.into();
        let bytes: Vec<u8> = match bytes.dyn_ref::<Uint8Array>() {
            Some(array) => array.to_vec(),
            None => items(&bytes, "bytes")?
                .iter()
                .map(|b| match b.as_f64() {
                    Some(x) if (0.0..=255.0).contains(&x) && x.fract() == 0.0 => Ok(x as u8),
                    _ => Err(range_error(format!(
                        "a byte is a whole number from 0 to 255, not {}",
                        describe(b)
                    ))),
                })
                .collect::<Result<_, _>>()?,
        };
        let len = self.len;
        let start = whole(offset, "offset")?;
        let end = start.checked_add(bytes.len()).filter(|&end| end <= len);
        let Some(end) = end else {
            return Err(out_of_bounds(start, start as u64 + bytes.len() as u64, len));
        };
        self.as_bytes_mut()[start..end].copy_from_slice(&bytes);
        Ok(())
    }

    /// A copy of every byte, as a `Uint8Array`.
    pub fn bytes(&self) -> Vec<u8> {
        self.as_bytes().to_vec()
    }

    /// A typed array over the buffer's memory (no copy), from `offset`
    /// (default 0) for `length` elements (default: all that fit). Made anew on
    /// every call, and good until the next allocation: growing wasm memory
    /// detaches it. After `free()` the buffer's bytes are not reused until that
    /// growth, so a forgotten view never reaches another buffer. Little-endian
    /// dtypes with a JS typed array only; `read` handles the rest.
    pub fn typed(
        &self,
        dtype: &JsString,
        offset: Option<f64>,
        length: Option<f64>,
    ) -> Result<TypedArray, JsValue> {
        let descr = dtype_arg(dtype)?;
        let size = descr.dtype.size();
        if size > 1 && descr.order != ByteOrder::Little {
            return Err(range_error(format!(
                "JS typed arrays read little-endian; use read() for {descr}"
            )));
        }
        let offset = whole(offset.unwrap_or(0.0), "offset")?;
        if offset > self.len {
            return Err(out_of_bounds(offset, offset as u64, self.len));
        }
        let length = match length {
            Some(n) => whole(n, "length")?,
            None => elements_in(descr.dtype, self.len - offset)?,
        };
        let layout = Layout::contiguous(descr.dtype, &[length])
            .and_then(|l| l.with_offset(offset))
            .map_err(core_err)?;
        layout.check(self.len).map_err(core_err)?;
        let bytes = &self.as_bytes()[offset..offset + length * size];
        self.typed_at.set(memory_pages());
        typed_view(descr.dtype, bytes)
    }

    /// The elements of a view, in C order: numbers, bigints for 64-bit
    /// integers, booleans for bool.
    pub fn read(&self, dtype: &JsString, layout: Option<LayoutOptions>) -> Result<Values, JsValue> {
        let options: JsValue = layout.map(Into::into).unwrap_or(JsValue::UNDEFINED);
        let (descr, layout) = self.layout(dtype, &options, None)?;
        let size = descr.dtype.size();
        let bytes = self.as_bytes();
        let out = Array::new();
        for offset in layout.offsets(self.len).map_err(core_err)? {
            let value = Scalar::read(descr, &bytes[offset..offset + size]).map_err(core_err)?;
            out.push(&to_js(value));
        }
        Ok(out.unchecked_into())
    }

    /// Writes `values` (in C order) through a view. Without a shape, the view
    /// is one axis of `values.length` elements from the offset. Nothing is
    /// written unless every value fits its dtype.
    pub fn write(
        &mut self,
        dtype: &JsString,
        layout: Option<LayoutOptions>,
        values: Values,
    ) -> Result<(), JsValue> {
        let values = items(&values, "values")?;
        let options: JsValue = layout.map(Into::into).unwrap_or(JsValue::UNDEFINED);
        let count = values.len();
        let (descr, layout) = self.layout(dtype, &options, Some(count))?;
        if layout.is_read_only() {
            return Err(core_err(Error::ReadOnly));
        }
        if layout.size() != count {
            return Err(range_error(format!(
                "{count} values for a view of {} elements",
                layout.size()
            )));
        }
        let scalars = values
            .iter()
            .map(|v| from_js(v, descr.dtype))
            .collect::<Result<Vec<Scalar>, JsValue>>()?;
        let size = descr.dtype.size();
        let offsets = layout.offsets(self.len).map_err(core_err)?;
        let bytes = self.as_bytes_mut();
        for (offset, scalar) in offsets.zip(scalars) {
            scalar
                .write(descr.order, &mut bytes[offset..offset + size])
                .map_err(core_err)?;
        }
        Ok(())
    }

    /// The byte offset of each element of a view, in C order (the order of `read`).
    pub fn offsets(
        &self,
        dtype: &JsString,
        layout: Option<LayoutOptions>,
    ) -> Result<Numbers, JsValue> {
        let options: JsValue = layout.map(Into::into).unwrap_or(JsValue::UNDEFINED);
        let (_, layout) = self.layout(dtype, &options, None)?;
        let out = Array::new();
        for offset in layout.offsets(self.len).map_err(core_err)? {
            out.push(&JsValue::from(offset as f64));
        }
        Ok(out.unchecked_into())
    }
}

/// A JS typed array over `bytes`, which start aligned for `dtype`.
fn typed_view(dtype: DType, bytes: &[u8]) -> Result<TypedArray, JsValue> {
    macro_rules! view {
        ($t:ty, $array:ident) => {{
            let elements: &[$t] = bytemuck::try_cast_slice(bytes)
                .map_err(|_| range_error("a typed view needs an aligned start"))?;
            // SAFETY: the typed array views `elements` in wasm memory. It is
            // handed straight to JS; wasm memory is never unmapped, and when it
            // grows JS detaches the array rather than leaving it dangling. Until
            // then it aliases the buffer as JS typed arrays alias an ArrayBuffer.
            let array = unsafe { js_sys::$array::view(elements) };
            array.unchecked_into::<TypedArray>()
        }};
    }
    Ok(match dtype {
        DType::Bool | DType::U8 => view!(u8, Uint8Array),
        DType::I8 => view!(i8, Int8Array),
        DType::U16 => view!(u16, Uint16Array),
        DType::I16 => view!(i16, Int16Array),
        DType::U32 => view!(u32, Uint32Array),
        DType::I32 => view!(i32, Int32Array),
        DType::U64 => view!(u64, BigUint64Array),
        DType::I64 => view!(i64, BigInt64Array),
        DType::F32 => view!(f32, Float32Array),
        DType::F64 => view!(f64, Float64Array),
        DType::F16 | DType::BF16 => {
            return Err(range_error(format!(
                "JS has no typed array for {dtype} here; use read() and write()"
            )));
        }
    })
}

/// A scalar as JS sees it.
#[inline(never)] // as `from_js`
fn to_js(value: Scalar) -> JsValue {
    match value {
        Scalar::Bool(b) => JsValue::from_bool(b),
        Scalar::I64(v) => BigInt::from(v).into(),
        Scalar::U64(v) => BigInt::from(v).into(),
        other => JsValue::from_f64(other.to_f64()),
    }
}

/// A JS value as an element of `dtype`: integers must be whole and in range
/// (numbers or bigints), bools booleans or 0/1.
#[inline(never)] // one copy, not one per caller: the .wasm has a size budget
fn from_js(value: &JsValue, dtype: DType) -> Result<Scalar, JsValue> {
    let bad = || range_error(format!("{} is not a value of {dtype}", describe(value)));
    if dtype.is_float() {
        let x = value.as_f64().ok_or_else(bad)?;
        return Scalar::float(dtype, x).ok_or_else(bad);
    }
    if dtype == DType::Bool {
        return match (value.as_bool(), value.as_f64()) {
            (Some(b), _) => Ok(Scalar::Bool(b)),
            (None, Some(x)) if x == 0.0 || x == 1.0 => Ok(Scalar::Bool(x == 1.0)),
            _ => Err(bad()),
        };
    }
    let out_of_range = || range_error(format!("{} is out of range for {dtype}", describe(value)));
    let wide: i128 = if value.is_bigint() {
        // Exact conversions only: a bigint beyond 64 bits fits no dtype here.
        match (i64::try_from(value.clone()), u64::try_from(value.clone())) {
            (Ok(v), _) => i128::from(v),
            (_, Ok(v)) => i128::from(v),
            _ => return Err(out_of_range()),
        }
    } else {
        let x = value.as_f64().ok_or_else(bad)?;
        if !x.is_finite() || x.fract() != 0.0 || x.abs() > 2f64.powi(64) {
            return Err(bad());
        }
        x as i128
    };
    Ok(match dtype {
        DType::U8 => Scalar::U8(wide.try_into().map_err(|_| out_of_range())?),
        DType::I8 => Scalar::I8(wide.try_into().map_err(|_| out_of_range())?),
        DType::U16 => Scalar::U16(wide.try_into().map_err(|_| out_of_range())?),
        DType::I16 => Scalar::I16(wide.try_into().map_err(|_| out_of_range())?),
        DType::U32 => Scalar::U32(wide.try_into().map_err(|_| out_of_range())?),
        DType::I32 => Scalar::I32(wide.try_into().map_err(|_| out_of_range())?),
        DType::U64 => Scalar::U64(wide.try_into().map_err(|_| out_of_range())?),
        _ => Scalar::I64(wide.try_into().map_err(|_| out_of_range())?),
    })
}

/// A JS value as a person would write it, for error messages.
fn describe(value: &JsValue) -> String {
    if value.is_undefined() {
        return "undefined".to_owned();
    }
    if let Some(text) = value.as_string() {
        return format!("\"{text}\"");
    }
    if let Some(x) = value.as_f64() {
        return Number::from(x)
            .to_string_with_radix(10)
            .map(String::from)
            .unwrap_or_else(|_| "a number".to_owned());
    }
    if value.is_bigint() {
        let text = BigInt::unchecked_from_js_ref(value)
            .to_string(10)
            .map(String::from);
        return text
            .map(|t| format!("{t}n"))
            .unwrap_or_else(|_| "a bigint".to_owned());
    }
    match js_sys::JSON::stringify(value) {
        Ok(text) => String::from(text),
        Err(_) => format!(
            "a value of type {}",
            value.js_typeof().as_string().unwrap_or_default()
        ),
    }
}

/// `options[key]`, or `None` when `options` or the property is undefined or null.
fn get(options: &JsValue, key: &str) -> Result<Option<JsValue>, JsValue> {
    if options.is_undefined() || options.is_null() {
        return Ok(None);
    }
    if !options.is_object() {
        return Err(range_error(
            "a layout is an object: { offset, shape, strides }",
        ));
    }
    let value = Reflect::get(options, &JsValue::from_str(key))?;
    Ok((!value.is_undefined() && !value.is_null()).then_some(value))
}

/// A non-negative whole number.
fn to_index(value: &JsValue, what: &str) -> Result<usize, JsValue> {
    match value.as_f64() {
        Some(x) => whole(x, what),
        None => Err(range_error(format!(
            "{what} must be a whole number >= 0, not {}",
            describe(value)
        ))),
    }
}

/// A number or an array of whole numbers, as `T`s.
fn to_list<T: TryFrom<i64>>(value: &JsValue, what: &str) -> Result<Vec<T>, JsValue> {
    let bad = |v: &JsValue| {
        range_error(format!(
            "{what} must be whole numbers in range, not {}",
            describe(v)
        ))
    };
    let one = |v: &JsValue| -> Result<T, JsValue> {
        match v.as_f64() {
            Some(x) if x.fract() == 0.0 && x.abs() < 2f64.powi(53) => {
                T::try_from(x as i64).map_err(|_| bad(v))
            }
            _ => Err(bad(v)),
        }
    };
    if value.as_f64().is_some() {
        return Ok(vec![one(value)?]);
    }
    items(value, what)?.iter().map(one).collect()
}

/// Where the elements of a view lie, without memory: the core's checked
/// arithmetic (numpy's slicing, indexing, `view(dtype)`, `.T`, `reshape`,
/// `broadcast_to`). `options()` gives what `Buffer.read`/`write` take.
#[wasm_bindgen(js_name = Layout)]
pub struct JsLayout {
    inner: Layout,
}

fn wrap_layout(layout: Result<Layout, Error>) -> Result<JsLayout, JsValue> {
    Ok(JsLayout {
        inner: layout.map_err(core_err)?,
    })
}

fn numbers<T: Copy + Into<f64>>(values: impl IntoIterator<Item = T>) -> Numbers {
    values
        .into_iter()
        .map(|v| JsValue::from_f64(v.into()))
        .collect::<Array>()
        .unchecked_into()
}

#[wasm_bindgen(js_class = Layout)]
impl JsLayout {
    /// A layout of `dtype` with `options.shape` (required), strides (default
    /// C order) and offset (default 0).
    #[wasm_bindgen(constructor)]
    pub fn new(dtype: &JsString, options: LayoutSpec) -> Result<JsLayout, JsValue> {
        let descr = dtype_arg(dtype)?;
        Ok(JsLayout {
            inner: layout_from_options(descr, &options.into(), None)?,
        })
    }

    /// The numpy type string, e.g. `"<i4"`.
    #[wasm_bindgen(getter)]
    pub fn dtype(&self) -> String {
        self.inner.descr().to_string()
    }

    #[wasm_bindgen(getter)]
    pub fn shape(&self) -> Numbers {
        numbers(self.inner.shape().iter().map(|&n| n as f64))
    }

    /// Strides in bytes.
    #[wasm_bindgen(getter)]
    pub fn strides(&self) -> Numbers {
        numbers(self.inner.strides().iter().map(|&n| n as f64))
    }

    /// Byte offset of element [0, ..., 0].
    #[wasm_bindgen(getter)]
    pub fn offset(&self) -> f64 {
        self.inner.offset() as f64
    }

    #[wasm_bindgen(getter)]
    pub fn readonly(&self) -> bool {
        self.inner.is_read_only()
    }

    /// What `Buffer.read`, `write` and `offsets` take: `{ offset, shape, strides, readonly, unaligned }`.
    pub fn options(&self) -> Result<LayoutSpec, JsValue> {
        let object = Object::new();
        let set =
            |key: &str, value: JsValue| Reflect::set(&object, &JsValue::from_str(key), &value);
        set("offset", JsValue::from_f64(self.inner.offset() as f64))?;
        set("shape", self.shape().into())?;
        set("strides", self.strides().into())?;
        set("readonly", self.inner.is_read_only().into())?;
        set(
            "unaligned",
            (!self.inner.requires_alignment() && self.inner.size() > 0).into(),
        )?;
        Ok(object.unchecked_into())
    }

    /// Throws unless the layout fits a buffer of `nbytes` bytes.
    pub fn check(&self, nbytes: f64) -> Result<(), JsValue> {
        self.inner.check(whole(nbytes, "nbytes")?).map_err(core_err)
    }

    /// `a[..., start:stop:step, ...]` on `axis` (Python's rules; omitted = undefined).
    pub fn slice(
        &self,
        axis: f64,
        start: Option<f64>,
        stop: Option<f64>,
        step: Option<f64>,
    ) -> Result<JsLayout, JsValue> {
        let axis = self::axis(axis, self.inner.ndim())?;
        let start = start.map(|v| integer(v, "start")).transpose()?;
        let stop = stop.map(|v| integer(v, "stop")).transpose()?;
        let step = integer(step.unwrap_or(1.0), "step")?;
        wrap_layout(self.inner.slice(axis, start, stop, step))
    }

    /// `a[..., i, ...]` on `axis`, which disappears; negative `i` counts from the end.
    pub fn index(&self, axis: f64, i: f64) -> Result<JsLayout, JsValue> {
        let axis = self::axis(axis, self.inner.ndim())?;
        wrap_layout(self.inner.index(axis, integer(i, "index")?))
    }

    /// numpy's `a.view(dtype)`.
    pub fn reinterpret(&self, dtype: &JsString) -> Result<JsLayout, JsValue> {
        let descr = dtype_arg(dtype)?;
        wrap_layout(
            self.inner
                .reinterpret(descr.dtype)
                .map(|l| l.with_byte_order(descr.order)),
        )
    }

    /// `a.T`.
    pub fn transpose(&self) -> JsLayout {
        JsLayout {
            inner: self.inner.transpose(),
        }
    }

    /// `a.transpose(axes)`; negative axes count from the end.
    pub fn permute(&self, axes: Numbers) -> Result<JsLayout, JsValue> {
        let ndim = self.inner.ndim();
        let axes = to_list::<i64>(&axes, "axes")?
            .into_iter()
            .map(|a| self::axis(a as f64, ndim))
            .collect::<Result<Vec<usize>, JsValue>>()?;
        wrap_layout(self.inner.permute(&axes))
    }

    /// `a.reshape(shape)` without a copy; throws where numpy would copy.
    pub fn reshape(&self, shape: Numbers) -> Result<JsLayout, JsValue> {
        wrap_layout(self.inner.reshape(&to_list::<usize>(&shape, "shape")?))
    }

    /// `np.broadcast_to(a, shape)`: read-only, stride 0 on new axes.
    #[wasm_bindgen(js_name = broadcastTo)]
    pub fn broadcast_to(&self, shape: Numbers) -> Result<JsLayout, JsValue> {
        wrap_layout(self.inner.broadcast_to(&to_list::<usize>(&shape, "shape")?))
    }
}

/// Named arrays in one buffer, laid out like C structs and unions, and the
/// WGSL that declares them. Immutable: `struct` and `union` return new plans.
#[wasm_bindgen]
#[derive(Clone)]
pub struct Plan {
    spec: PlanSpec,
}

impl Plan {
    /// Runs `f` on the core's plan, built (and so checked) from the fields.
    fn with_plan<R>(
        &self,
        f: impl FnOnce(&CorePlan<'_>) -> Result<R, JsValue>,
    ) -> Result<R, JsValue> {
        f(&self.spec.build().map_err(core_err)?)
    }

    fn extended(&self, fields: FieldSpecs, new_alternative: bool) -> Result<Plan, JsValue> {
        let mut spec = self.spec.clone();
        if new_alternative {
            spec.start_alternative();
        }
        let fields: JsValue = fields.into();
        if !fields.is_object() {
            return Err(type_error(
                "fields are an object: { name: [dtype, shape], ... }",
            ));
        }
        // Reflect's calls catch: a throwing getter or proxy becomes the error.
        let keys = Reflect::own_keys(fields.unchecked_ref())?;
        for key in items(&keys, "keys")? {
            let Some(name) = key.as_string() else {
                continue; // symbols name no field
            };
            let field = Reflect::get(&fields, &key)?;
            let (dtype, shape) = if Array::is_array(&field) {
                let pair = items(&field, "a field")?;
                let dtype = pair.first().cloned().unwrap_or(JsValue::UNDEFINED);
                let shape = match pair.get(1) {
                    Some(shape) => to_list::<usize>(shape, "shape")?,
                    None => Vec::new(),
                };
                (dtype, shape)
            } else {
                (field, Vec::new())
            };
            let descr = dtype_arg(dtype.unchecked_ref())
                .map_err(|e| prefix_message(&e, &format!("field {name}: ")))?;
            spec.push(FieldSpec { name, descr, shape });
        }
        let plan = Plan { spec };
        plan.with_plan(|_| Ok(()))?;
        Ok(plan)
    }
}

#[wasm_bindgen]
impl Plan {
    /// An empty plan; `name` names its WGSL structs (default "Plan").
    #[wasm_bindgen(constructor)]
    pub fn new(name: Option<JsString>) -> Result<Plan, JsValue> {
        let name = match name {
            None => "Plan".to_owned(),
            Some(name) => name.as_string().ok_or_else(|| {
                type_error(format!(
                    "a plan's name is a string, not {}",
                    describe(&name)
                ))
            })?,
        };
        let plan = Plan {
            spec: PlanSpec::new(&name),
        };
        plan.with_plan(|_| Ok(()))?;
        Ok(plan)
    }

    /// A new plan with `fields` ({ name: [dtype, shape] or dtype }) appended
    /// to the current alternative, each at the next offset its alignment allows.
    #[wasm_bindgen(js_name = struct)]
    pub fn struct_(&self, fields: FieldSpecs) -> Result<Plan, JsValue> {
        self.extended(fields, false)
    }

    /// A new plan with another alternative over the same bytes, from offset 0.
    pub fn union(&self, fields: FieldSpecs) -> Result<Plan, JsValue> {
        self.extended(fields, true)
    }

    /// Bytes a buffer needs: the largest alternative, rounded up to `align`.
    #[wasm_bindgen(getter)]
    pub fn nbytes(&self) -> Result<usize, JsValue> {
        self.with_plan(|plan| Ok(plan.nbytes()))
    }

    /// The largest alignment of any field.
    #[wasm_bindgen(getter)]
    pub fn align(&self) -> Result<usize, JsValue> {
        self.with_plan(|plan| Ok(plan.align()))
    }

    /// How many alternatives (union members) the plan has.
    #[wasm_bindgen(getter)]
    pub fn alternatives(&self) -> Result<usize, JsValue> {
        self.with_plan(|plan| Ok(plan.alternatives()))
    }

    /// Every field: `{ name, dtype, shape, offset, nbytes, alternative }`.
    pub fn fields(&self) -> Result<PlanFields, JsValue> {
        self.with_plan(|plan| {
            let out = Array::new();
            for field in plan.fields() {
                let object = Object::new();
                let shape: Array = field
                    .shape()
                    .iter()
                    .map(|&n| JsValue::from(n as f64))
                    .collect();
                let set = |key: &str, value: JsValue| {
                    Reflect::set(&object, &JsValue::from_str(key), &value)
                };
                set("name", field.name().into())?;
                set("dtype", field.descr().to_string().into())?;
                set("shape", shape.into())?;
                set("offset", (field.offset() as f64).into())?;
                set("nbytes", (field.nbytes() as f64).into())?;
                set("alternative", (field.alternative() as f64).into())?;
                out.push(&object);
            }
            Ok(out.unchecked_into())
        })
    }

    /// Byte ranges `[start, end]` of `alternative` that no field covers.
    pub fn padding(&self, alternative: f64) -> Result<Ranges, JsValue> {
        let alternative = whole(alternative, "alternative")?;
        self.with_plan(|plan| {
            if alternative >= plan.alternatives() {
                return Err(range_error(format!(
                    "alternative {alternative} does not exist; the plan has {}",
                    plan.alternatives()
                )));
            }
            let out = Array::new();
            for range in plan.padding(alternative) {
                let pair: Array = [range.start, range.end]
                    .iter()
                    .map(|&n| JsValue::from(n as f64))
                    .collect();
                out.push(&pair);
            }
            Ok(out.unchecked_into())
        })
    }

    /// WGSL struct declarations, one struct per alternative.
    pub fn wgsl(&self) -> Result<String, JsValue> {
        self.with_plan(|plan| Ok(plan.wgsl().map_err(core_err)?.to_string()))
    }
}
