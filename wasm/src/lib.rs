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

use bytelens_core::{ByteOrder, DType, Descr, Error, Layout, Plan as CorePlan, Scalar, bf16, f16};
use js_sys::{Array, BigInt, Object, RangeError, Reflect};
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

/// Largest buffer: what a wasm32 `ArrayBuffer` can address, less headroom.
const MAX_NBYTES: usize = 1 << 31;

/// Bytes in WebAssembly memory, zeroed and 8-byte aligned.
#[wasm_bindgen]
pub struct Buffer {
    /// 8-byte words, so every dtype's typed array may start at offset 0.
    words: Vec<u64>,
    len: usize,
}

impl Buffer {
    fn as_bytes(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.words)[..self.len]
    }

    fn as_bytes_mut(&mut self) -> &mut [u8] {
        let len = self.len;
        &mut bytemuck::cast_slice_mut(&mut self.words)[..len]
    }

    /// The checked layout `dtype` + `options` describes over this buffer.
    /// Without a shape: one axis of `count` elements if given, else of every
    /// element that fits from the offset.
    fn layout(
        &self,
        dtype: &str,
        options: &JsValue,
        count: Option<usize>,
    ) -> Result<(Descr, Layout), JsValue> {
        let descr: Descr = dtype.parse().map_err(core_err)?;
        let shape = match (get(options, "shape")?, count) {
            (Some(_), _) => None,
            (None, Some(n)) => Some(n),
            (None, None) => {
                let offset = offset_option(options)?;
                let rest = self.len.checked_sub(offset).ok_or_else(|| {
                    core_err(Error::OutOfBounds {
                        start: offset as isize,
                        end: offset as isize,
                        len: self.len,
                    })
                })?;
                let size = descr.dtype.size();
                if rest % size != 0 {
                    return Err(core_err(Error::ItemsizeMismatch {
                        nbytes: rest,
                        itemsize: size,
                        dtype: descr.dtype,
                    }));
                }
                Some(rest / size)
            }
        };
        let layout = layout_from_options(descr, options, shape)?;
        layout.check(self.len).map_err(core_err)?;
        Ok((descr, layout))
    }
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
    pub fn new(nbytes: usize) -> Result<Buffer, JsValue> {
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
        Ok(Buffer { words, len: nbytes })
    }

    /// The buffer's length in bytes.
    #[wasm_bindgen(getter)]
    pub fn nbytes(&self) -> usize {
        self.len
    }

    /// Copies `bytes` in at `offset`.
    #[wasm_bindgen(js_name = setBytes)]
    pub fn set_bytes(&mut self, offset: usize, bytes: &[u8]) -> Result<(), JsValue> {
        let len = self.len;
        let out_of_bounds = || {
            core_err(Error::OutOfBounds {
                start: offset as isize,
                end: offset.saturating_add(bytes.len()) as isize,
                len,
            })
        };
        let end = offset.checked_add(bytes.len()).ok_or_else(out_of_bounds)?;
        let target = self
            .as_bytes_mut()
            .get_mut(offset..end)
            .ok_or_else(out_of_bounds)?;
        target.copy_from_slice(bytes);
        Ok(())
    }

    /// A copy of every byte, as a `Uint8Array`.
    pub fn bytes(&self) -> Vec<u8> {
        self.as_bytes().to_vec()
    }

    /// A typed array over the buffer's memory (no copy), from `offset`
    /// (default 0) for `length` elements (default: all that fit). Made anew on
    /// every call: wasm memory growth detaches older ones. Little-endian
    /// dtypes with a JS typed array only; `read` handles the rest.
    pub fn typed(
        &self,
        dtype: &str,
        offset: Option<usize>,
        length: Option<usize>,
    ) -> Result<TypedArray, JsValue> {
        let descr: Descr = dtype.parse().map_err(core_err)?;
        let size = descr.dtype.size();
        if size > 1 && descr.order != ByteOrder::Little {
            return Err(range_error(format!(
                "JS typed arrays read little-endian; use read() for {descr}"
            )));
        }
        let offset = offset.unwrap_or(0);
        let length = match length {
            Some(n) => n,
            None => {
                let rest = self.len.saturating_sub(offset);
                if rest % size != 0 {
                    return Err(core_err(Error::ItemsizeMismatch {
                        nbytes: rest,
                        itemsize: size,
                        dtype: descr.dtype,
                    }));
                }
                rest / size
            }
        };
        let layout = Layout::contiguous(descr.dtype, &[length])
            .and_then(|l| l.with_offset(offset))
            .map_err(core_err)?;
        layout.check(self.len).map_err(core_err)?;
        let bytes = &self.as_bytes()[offset..offset + length * size];
        typed_view(descr.dtype, bytes)
    }

    /// The elements of a view, in C order: numbers, bigints for 64-bit
    /// integers, booleans for bool.
    pub fn read(&self, dtype: &str, layout: Option<LayoutOptions>) -> Result<Values, JsValue> {
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
        dtype: &str,
        layout: Option<LayoutOptions>,
        values: Values,
    ) -> Result<(), JsValue> {
        let values: Array = values.unchecked_into();
        let options: JsValue = layout.map(Into::into).unwrap_or(JsValue::UNDEFINED);
        let count = values.length() as usize;
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
            .map(|v| from_js(&v, descr.dtype))
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
    pub fn offsets(&self, dtype: &str, layout: Option<LayoutOptions>) -> Result<Numbers, JsValue> {
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
            let elements: &[$t] =
                bytemuck::try_cast_slice(bytes).map_err(|e| range_error(format!("{e:?}")))?;
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
fn from_js(value: &JsValue, dtype: DType) -> Result<Scalar, JsValue> {
    let bad = || range_error(format!("{} is not a value of {dtype}", describe(value)));
    if dtype.is_float() {
        let x = value.as_f64().ok_or_else(bad)?;
        return Ok(match dtype {
            DType::F16 => Scalar::F16(f16::from_f64(x)),
            DType::BF16 => Scalar::BF16(bf16::from_f64(x)),
            DType::F32 => Scalar::F32(x as f32),
            _ => Scalar::F64(x),
        });
    }
    if dtype == DType::Bool {
        return match (value.as_bool(), value.as_f64()) {
            (Some(b), _) => Ok(Scalar::Bool(b)),
            (None, Some(x)) if x == 0.0 || x == 1.0 => Ok(Scalar::Bool(x == 1.0)),
            _ => Err(bad()),
        };
    }
    let wide: i128 = if value.is_bigint() {
        let text: String = BigInt::unchecked_from_js_ref(value)
            .to_string(10)
            .map_err(|_| bad())?
            .into();
        text.parse().map_err(|_| bad())?
    } else {
        let x = value.as_f64().ok_or_else(bad)?;
        if !x.is_finite() || x.fract() != 0.0 || x.abs() > 2f64.powi(64) {
            return Err(bad());
        }
        x as i128
    };
    let out_of_range = || range_error(format!("{wide} is out of range for {dtype}"));
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
        return format!("{text:?}");
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
        Some(x) if x >= 0.0 && x.fract() == 0.0 && x <= usize::MAX as f64 => Ok(x as usize),
        _ => Err(range_error(format!(
            "{what} must be a whole number >= 0, not {}",
            describe(value)
        ))),
    }
}

/// A number or an array of whole numbers, as `T`s.
fn to_list<T: TryFrom<i64>>(value: &JsValue, what: &str) -> Result<Vec<T>, JsValue> {
    let bad = || {
        range_error(format!(
            "{what} must be whole numbers in range, not {}",
            describe(value)
        ))
    };
    let one = |v: JsValue| -> Result<T, JsValue> {
        match v.as_f64() {
            Some(x) if x.fract() == 0.0 && x.abs() < 2f64.powi(53) => {
                T::try_from(x as i64).map_err(|_| bad())
            }
            _ => Err(bad()),
        }
    };
    if value.as_f64().is_some() {
        return Ok(vec![one(value.clone())?]);
    }
    if !Array::is_array(value) {
        return Err(bad());
    }
    Array::from(value).iter().map(one).collect()
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
    pub fn new(dtype: &str, options: LayoutSpec) -> Result<JsLayout, JsValue> {
        let descr: Descr = dtype.parse().map_err(core_err)?;
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
    pub fn check(&self, nbytes: usize) -> Result<(), JsValue> {
        self.inner.check(nbytes).map_err(core_err)
    }

    /// `a[..., start:stop:step, ...]` on `axis` (Python's rules; omitted = undefined).
    pub fn slice(
        &self,
        axis: usize,
        start: Option<i32>,
        stop: Option<i32>,
        step: Option<i32>,
    ) -> Result<JsLayout, JsValue> {
        let (start, stop) = (start.map(|v| v as isize), stop.map(|v| v as isize));
        wrap_layout(
            self.inner
                .slice(axis, start, stop, step.unwrap_or(1) as isize),
        )
    }

    /// `a[..., i, ...]` on `axis`, which disappears; negative `i` counts from the end.
    pub fn index(&self, axis: usize, i: i32) -> Result<JsLayout, JsValue> {
        wrap_layout(self.inner.index(axis, i as isize))
    }

    /// numpy's `a.view(dtype)`.
    pub fn reinterpret(&self, dtype: &str) -> Result<JsLayout, JsValue> {
        let descr: Descr = dtype.parse().map_err(core_err)?;
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

    /// `a.transpose(axes)`.
    pub fn permute(&self, axes: Vec<usize>) -> Result<JsLayout, JsValue> {
        wrap_layout(self.inner.permute(&axes))
    }

    /// `a.reshape(shape)` without a copy; throws where numpy would copy.
    pub fn reshape(&self, shape: Vec<usize>) -> Result<JsLayout, JsValue> {
        wrap_layout(self.inner.reshape(&shape))
    }

    /// `np.broadcast_to(a, shape)`: read-only, stride 0 on new axes.
    #[wasm_bindgen(js_name = broadcastTo)]
    pub fn broadcast_to(&self, shape: Vec<usize>) -> Result<JsLayout, JsValue> {
        wrap_layout(self.inner.broadcast_to(&shape))
    }
}

/// One field as JS gave it.
#[derive(Clone)]
struct FieldSpec {
    name: String,
    descr: Descr,
    shape: Vec<usize>,
}

/// Named arrays in one buffer, laid out like C structs and unions, and the
/// WGSL that declares them. Immutable: `struct` and `union` return new plans.
#[wasm_bindgen]
#[derive(Clone)]
pub struct Plan {
    name: String,
    alternatives: Vec<Vec<FieldSpec>>,
}

impl Plan {
    /// Runs `f` on the core's plan, built (and so checked) from the fields.
    fn with_plan<R>(
        &self,
        f: impl FnOnce(&CorePlan<'_>) -> Result<R, JsValue>,
    ) -> Result<R, JsValue> {
        let mut plan = CorePlan::named(&self.name).map_err(core_err)?;
        for (i, fields) in self.alternatives.iter().enumerate() {
            if i > 0 {
                plan.union().map_err(core_err)?;
            }
            for field in fields {
                plan.field(&field.name, field.descr, &field.shape)
                    .map_err(core_err)?;
            }
        }
        f(&plan)
    }

    fn extended(&self, fields: FieldSpecs, new_alternative: bool) -> Result<Plan, JsValue> {
        let mut plan = self.clone();
        if new_alternative
            && plan
                .alternatives
                .last()
                .is_some_and(|last| !last.is_empty())
        {
            plan.alternatives.push(Vec::new());
        }
        let fields: JsValue = fields.into();
        if !fields.is_object() {
            return Err(range_error(
                "fields are an object: { name: [dtype, shape], ... }",
            ));
        }
        let current = plan
            .alternatives
            .last_mut()
            .expect("a plan always has an alternative");
        for entry in Object::entries(fields.unchecked_ref()).iter() {
            let entry = Array::from(&entry);
            let name = entry.get(0).as_string().unwrap_or_default();
            let spec = entry.get(1);
            let (dtype, shape) = if Array::is_array(&spec) {
                let pair = Array::from(&spec);
                (pair.get(0), to_list::<usize>(&pair.get(1), "shape")?)
            } else {
                (spec, Vec::new())
            };
            let dtype = dtype
                .as_string()
                .ok_or_else(|| range_error(format!("field {name}: the dtype must be a string")))?;
            let descr = dtype.parse().map_err(core_err)?;
            current.push(FieldSpec { name, descr, shape });
        }
        plan.with_plan(|_| Ok(()))?;
        Ok(plan)
    }
}

#[wasm_bindgen]
impl Plan {
    /// An empty plan; `name` names its WGSL structs (default "Plan").
    #[wasm_bindgen(constructor)]
    pub fn new(name: Option<String>) -> Result<Plan, JsValue> {
        let plan = Plan {
            name: name.unwrap_or_else(|| "Plan".to_owned()),
            alternatives: vec![Vec::new()],
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
    pub fn padding(&self, alternative: usize) -> Result<Ranges, JsValue> {
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
