//! Elements between the buffer and JavaScript in bulk: `read` gathers a
//! view's elements into one typed array, `write` takes a typed array or a
//! plain array in one engine call (`js/arrays.js`), so no call crosses the
//! JS/wasm boundary per element.
//!
//! Between the two sides elements travel *packed*: back to back in C order,
//! little-endian (wasm's order, and JS typed arrays'). [`gather`] packs a
//! checked layout's elements, swapping bytes for big-endian dtypes;
//! [`scatter`] does the reverse. A contiguous little-endian view needs
//! neither: its bytes are copied to or from JS as they are.
//!
//! What JS gets from `read` is the class the core's dtype table names for
//! the dtype ([`DTypeInfo::js_array`](bytelens_core::DTypeInfo)): the
//! natural one for each integer and for float32/float64 (`BigInt64Array`
//! and `BigUint64Array` for 64-bit integers), `Uint8Array` of 0 and 1 for
//! bool, and `Float32Array` for the narrower floats (float16, bfloat16, the
//! float8s), which hold every such value exactly (`Float16Array` is not in
//! every engine yet). Whether a dtype's elements are its class's as they
//! are, or converted, follows from the table too (the class's width against
//! the dtype's), so no dtype has a rule of its own here.
#![forbid(unsafe_code)]

use bytelens_core::{ByteOrder, DType, Error, JsArray, Layout};
use js_sys::{Array, BigInt};
use wasm_bindgen::prelude::*;

use crate::BindingError;
use crate::convert::items;
use crate::js::{copy_into, fill_from, to_float64, typed_copy, typed_from_float64, typed_kind};
use crate::value::{from_js, from_number, from_wide, put_bits};

/// Kinds of typed array, as `js/arrays.js` numbers its classes: the order
/// of the core's [`JsArray`] (Uint8Array, Int8Array, …, Float64Array).
const U64: u32 = JsArray::BigUint64Array as u32;
const I64: u32 = JsArray::BigInt64Array as u32;
const F32: u32 = JsArray::Float32Array as u32;
const F64: u32 = JsArray::Float64Array as u32;

/// Bytes per element of each kind of typed array.
const KIND_SIZE: [u8; 10] = [1, 1, 2, 2, 4, 4, 8, 8, 4, 8];

/// The typed array class `read` returns for `dtype`, by kind: the table's.
pub(crate) fn kind_of(dtype: DType) -> u32 {
    dtype.info().js_array as u32
}

/// Whether an element of `dtype` has the bits of one of its class's
/// elements: the same width (not float16, bfloat16 or a float8, whose
/// class is the wider Float32Array). bool's bytes are its Uint8Array's too.
pub(crate) fn same_width(dtype: DType) -> bool {
    KIND_SIZE.get(kind_of(dtype) as usize).copied() == Some(dtype.size() as u8)
}

/// Whether `layout`'s bytes are its elements as JS typed arrays hold them:
/// packed in C order, little-endian, and read as they are (see [`unchecked`]).
fn as_is(layout: &Layout) -> bool {
    let dtype = layout.dtype();
    (layout.byte_order() == ByteOrder::Little || dtype.size() == 1)
        && unchecked(dtype)
        && layout.is_c_contiguous()
}

/// The start and end of a checked contiguous layout's bytes.
pub(crate) fn byte_range(layout: &Layout) -> core::ops::Range<usize> {
    // Checked against the buffer: the offset is in 0..=len.
    let start = layout.offset() as usize;
    start..start + layout.nbytes()
}

/// Calls `run(start, stride, count)` for each run of the innermost axis of
/// `layout`, checked against `len` bytes, in C order.
fn runs(
    layout: &Layout,
    len: usize,
    run: &mut dyn FnMut(usize, isize, usize),
) -> Result<(), Error> {
    layout.check(len)?;
    let Some(last) = layout.ndim().checked_sub(1) else {
        run(layout.offset() as usize, 0, 1);
        return Ok(());
    };
    let (count, stride) = (layout.shape()[last], layout.strides()[last]);
    if layout.size() == 0 {
        return Ok(());
    }
    for start in layout.index(last, 0)?.offsets(len)? {
        run(start, stride, count);
    }
    Ok(())
}

/// Packs the `N`-byte elements of one run (`stride` apart from `start`)
/// into `out`. Fixed-size copies, which compile to a load and a store.
fn take<const N: usize>(buffer: &[u8], out: &mut [u8], start: usize, stride: isize) {
    if stride == N as isize {
        out.copy_from_slice(&buffer[start..start + out.len()]);
        return;
    }
    let mut at = start as isize;
    for element in out.chunks_exact_mut(N) {
        // Checked layouts keep `at` inside the buffer.
        let from = buffer.get(at as usize..).and_then(<[u8]>::first_chunk::<N>);
        if let (Some(element), Some(from)) = (element.first_chunk_mut::<N>(), from) {
            *element = *from;
        }
        at += stride;
    }
}

/// Puts the packed `N`-byte elements of `run` in their places, `stride`
/// apart from `start`.
fn put<const N: usize>(buffer: &mut [u8], run: &[u8], start: usize, stride: isize) {
    if stride == N as isize {
        buffer[start..start + run.len()].copy_from_slice(run);
        return;
    }
    let mut at = start as isize;
    for element in run.chunks_exact(N) {
        let place = buffer
            .get_mut(at as usize..)
            .and_then(<[u8]>::first_chunk_mut::<N>);
        if let (Some(place), Some(element)) = (place, element.first_chunk::<N>()) {
            *place = *element;
        }
        at += stride;
    }
}

/// Turns packed elements of `size` bytes between little-endian and big-endian.
fn swap(packed: &mut [u8], size: usize) {
    if size > 1 {
        packed.chunks_exact_mut(size).for_each(<[u8]>::reverse);
    }
}

/// The elements `layout` places in `buffer`, packed little-endian; fails
/// unless `layout` fits `buffer`.
pub(crate) fn gather(buffer: &[u8], layout: &Layout) -> Result<Vec<u8>, Error> {
    let size = layout.dtype().size();
    let mut packed = vec![0; layout.size() * size];
    let mut done = 0;
    runs(layout, buffer.len(), &mut |start, stride, count| {
        let out = &mut packed[done..done + count * size];
        done += count * size;
        match size {
            1 => take::<1>(buffer, out, start, stride),
            2 => take::<2>(buffer, out, start, stride),
            4 => take::<4>(buffer, out, start, stride),
            _ => take::<8>(buffer, out, start, stride),
        }
    })?;
    if layout.byte_order() != ByteOrder::Little {
        swap(&mut packed, size);
    }
    Ok(packed)
}

/// Puts `packed` elements (little-endian, C order) where `layout` places
/// them in `buffer`; fails, writing nothing, unless `layout` fits `buffer`.
fn scatter(buffer: &mut [u8], layout: &Layout, packed: &mut [u8]) -> Result<(), Error> {
    let size = layout.dtype().size();
    if layout.byte_order() != ByteOrder::Little {
        swap(packed, size);
    }
    let mut done = 0;
    runs(layout, buffer.len(), &mut |start, stride, count| {
        let run = &packed[done..done + count * size];
        done += count * size;
        match size {
            1 => put::<1>(buffer, run, start, stride),
            2 => put::<2>(buffer, run, start, stride),
            4 => put::<4>(buffer, run, start, stride),
            _ => put::<8>(buffer, run, start, stride),
        }
    })
}

/// `read`'s result: a new typed array (see the [module docs](self)) of the
/// elements `layout` places in `buffer`, in C order, copied out once.
pub(crate) fn read(buffer: &[u8], layout: &Layout) -> Result<JsValue, BindingError> {
    let dtype = layout.dtype();
    if as_is(layout) {
        layout.check(buffer.len())?;
        return Ok(typed_copy(kind_of(dtype), &buffer[byte_range(layout)]));
    }
    let mut packed = gather(buffer, layout)?;
    if !same_width(dtype) {
        return Ok(widen(dtype, &packed));
    }
    if dtype == DType::Bool {
        packed.iter_mut().for_each(|b| *b = u8::from(*b != 0));
    }
    Ok(typed_copy(kind_of(dtype), &packed))
}

/// `read`'s typed array of packed elements of a float dtype narrower than
/// its class (Float32Array, which holds each value exactly): each decoded
/// by the dtype's [`FloatFormat`](bytelens_core::FloatFormat), the table's,
/// and made the class's in JS. Every NaN reads as the quiet NaN with its sign.
fn widen(dtype: DType, packed: &[u8]) -> JsValue {
    let format = dtype.float_format();
    let decode = |element: &[u8]| {
        // Little-endian bits, assembled without a copy call per element.
        let bits = element.iter().rfold(0, |bits, &b| bits << 8 | u64::from(b));
        format.map_or(0.0, |f| f.decode(bits))
    };
    let mut values = Vec::with_capacity(packed.len() / dtype.size());
    for element in packed.chunks_exact(dtype.size()) {
        values.push(decode(element));
    }
    // f64 to u8 always casts; `try_` keeps the panic path out of the .wasm.
    let bytes = bytemuck::try_cast_slice(&values).unwrap_or_default();
    typed_from_float64(kind_of(dtype), bytes)
}

/// What `write` takes, read once: its kind and length, and nothing else
/// until it is packed, so that a view that cannot take it is refused
/// before any work.
pub(crate) enum Source {
    /// A typed array of `len` elements, of `kind` (see `js/arrays.js`).
    Typed {
        array: JsValue,
        kind: u32,
        len: usize,
    },
    /// A plain array of `len` elements.
    Plain { array: JsValue, len: usize },
}

/// Whether elements of `dtype` are read into and written from typed array
/// class `kind_of(dtype)` as they are, unchecked: of its width, and not
/// bool (whose bytes `read` makes 0 or 1 and `write` checks).
fn unchecked(dtype: DType) -> bool {
    dtype != DType::Bool && same_width(dtype)
}

impl Source {
    /// `values`, a typed array or a plain array, to be written.
    pub(crate) fn read(values: &JsValue) -> Result<Source, BindingError> {
        let kind = typed_kind(values);
        if kind < 0 && !Array::is_array(values) {
            return Err(BindingError::wrong_type(
                "values",
                "an array or a typed array",
                values,
            ));
        }
        let len = js_sys::Reflect::get(values, &"length".into())?;
        let (array, len) = (values.clone(), len.as_f64().unwrap_or(0.0) as usize);
        Ok(match kind {
            0.. => Source::Typed {
                array,
                kind: kind as u32,
                len,
            },
            _ => Source::Plain { array, len },
        })
    }

    /// How many values there are.
    pub(crate) fn len(&self) -> usize {
        match self {
            Source::Typed { len, .. } | Source::Plain { len, .. } => *len,
        }
    }

    /// The values as packed little-endian elements of `dtype`, every one
    /// checked first; the error names the first that is not one.
    fn pack(self, dtype: DType) -> Result<Vec<u8>, BindingError> {
        let size = dtype.size();
        let (mut raw, kind, len) = match self {
            Source::Plain { array, len } => {
                // Converted by the engine to the typed array class `kind`
                // in `raw` (little-endian, back to back) in one call.
                let (numbers, bigints) = match dtype {
                    _ if kind_of(dtype) == F32 && unchecked(dtype) => (F32, 0),
                    _ if dtype.is_float() || dtype == DType::Bool => (F64, 0),
                    _ if dtype.kind() == 'i' => (F64, I64),
                    _ => (F64, U64),
                };
                let width = if numbers == F32 { 4 } else { 8 };
                let mut raw = vec![0; width * len];
                let kind = fill_from(&mut raw, &array, numbers, dtype == DType::Bool, bigints)?;
                if kind >= 0 {
                    (raw, kind as u32, len)
                } else {
                    // Mixed or wrong JS types: each value converted by
                    // `from_js`, whose error names the value.
                    let values = items(&array, "values")?;
                    if values.len() != len {
                        // Changed by a getter since it was measured.
                        let got = values.len();
                        return Err(Error::CountMismatch { expected: len, got }.into());
                    }
                    let mut packed = vec![0; len * size];
                    for (value, out) in values.iter().zip(packed.chunks_exact_mut(size)) {
                        put_bits(from_js(value, dtype)?, out);
                    }
                    return Ok(packed);
                }
            }
            Source::Typed { array, kind, len } => {
                let as_is = kind == kind_of(dtype) && unchecked(dtype);
                let (array, kind) = if as_is || kind == U64 || kind == I64 || kind == F64 {
                    (array, kind)
                } else {
                    // Every other typed array's numbers convert exactly.
                    (to_float64(&array), F64)
                };
                let mut raw = vec![0; len * if as_is { size } else { 8 }];
                copy(&mut raw, &array)?;
                (raw, kind, len)
            }
        };
        if kind == kind_of(dtype) && unchecked(dtype) {
            raw.truncate(len * size);
            return Ok(raw);
        }
        // Numbers (float64) or bigints (64-bit integers), checked one by one.
        let bigints = kind != F64;
        let mut packed = vec![0; len * size];
        let out = packed.chunks_exact_mut(size);
        for (element, out) in raw.chunks_exact(8).zip(out) {
            let bits = element.first_chunk().map_or(0, |b| u64::from_le_bytes(*b));
            let wide = if kind == I64 {
                i128::from(bits as i64)
            } else {
                i128::from(bits)
            };
            let element = if bigints {
                from_wide(wide, dtype)
            } else {
                from_number(f64::from_bits(bits), dtype)
            };
            // The JS value, made only for the error: no call per element.
            let element = element.ok_or_else(|| BindingError::Element {
                dtype,
                got: match (bigints, kind == I64) {
                    (false, _) => f64::from_bits(bits).into(),
                    (true, true) => BigInt::from(bits as i64).into(),
                    (true, false) => BigInt::from(bits).into(),
                },
                // Numbers are values of every dtype's JS type; bigints of integers only.
                type_error: bigints && (dtype.is_float() || dtype == DType::Bool),
            })?;
            put_bits(element, out);
        }
        Ok(packed)
    }
}

/// Copies the bytes of `array`, a typed array, into `out` in one call.
fn copy(out: &mut [u8], array: &JsValue) -> Result<(), BindingError> {
    if copy_into(out, array) {
        return Ok(());
    }
    // Its length changed since it was read: a view over wasm memory that
    // an allocation since has detached.
    Err(BindingError::wrong_type(
        "values",
        "a typed array whose memory is still attached (growing wasm memory detaches views over it)",
        array,
    ))
}

/// Writes `source` through `layout`, checked over `buffer` and holding as
/// many elements as `source`: nothing unless every value is an element of
/// its dtype. A typed array of the dtype's class goes straight into a
/// contiguous little-endian view.
pub(crate) fn write(
    buffer: &mut [u8],
    layout: &Layout,
    source: Source,
) -> Result<(), BindingError> {
    let dtype = layout.dtype();
    if let Source::Typed { array, kind, .. } = &source {
        if *kind == kind_of(dtype) && as_is(layout) {
            layout.check(buffer.len())?;
            return copy(&mut buffer[byte_range(layout)], array);
        }
    }
    let mut packed = source.pack(dtype)?;
    Ok(scatter(buffer, layout, &mut packed)?)
}
