//! What an array's values are, for the web demo's tensor panel (feature
//! `files`, the demo's build: the published package's budget has no room
//! for them): `Stats`, `Histogram` and `Heatmap` are the core's, over
//! chunks of an array's bytes streamed in from JS; `dequantize` is the
//! core's reference dequantiser of GGUF's quantised blocks. The page draws
//! what these return and computes nothing of its own.
//!
//! Every `push` takes whole elements of its dtype (bytes whose length is
//! a multiple of the itemsize, else a `RangeError` of kind
//! `"ItemsizeMismatch"`): a page streaming a file's byte ranges cuts them
//! on element boundaries. Bytes are a `Uint8Array`, or any other typed
//! array, `DataView` or `ArrayBuffer` by the bytes it holds
//! ([`bytes_arg`]); anything else is a `TypeError`.
#![forbid(unsafe_code)]

use core::cell::Cell;

use bytelens_core::files::{GgmlType, dequant};
use bytelens_core::{DType, Descr, Heatmap, Histogram, MAX_BINS, Reduce, Rest, Stats, Tally};
use js_sys::JsString;
use wasm_bindgen::prelude::*;

use crate::BindingError;
use crate::convert::{arg, bytes_arg, count_arg, dtype_arg, given, number, object, whole};
use crate::error::{MAX_ELEMENTS, at_most};

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &str = r#"
/** What `Stats.result()` gives: counts of every element pushed, and the
 *  minimum, maximum, mean and population standard deviation (numpy's
 *  `nanmin`, `nanmax`, `nanmean`, `nanstd` of the finite values as
 *  float64), null when no value is finite. */
export interface StatsResult {
  count: number;
  finite: number;
  nan: number;
  posinf: number;
  neginf: number;
  zero: number;
  /** Non-zero floats below the dtype's smallest normal (never integers). */
  subnormal: number;
  min: number | null;
  max: number | null;
  mean: number | null;
  std: number | null;
}
"#;

#[wasm_bindgen]
extern "C" {
    /// `StatsResult`.
    #[wasm_bindgen(typescript_type = "StatsResult")]
    pub type StatsResult;
    /// `[number, number] | null`.
    #[wasm_bindgen(typescript_type = "[number, number] | null")]
    pub type Range;
}

/// An optional dtype argument: `None` when undefined or null.
fn optional_dtype(dtype: &JsValue) -> Result<Option<Descr>, BindingError> {
    given(dtype)
        .map(|d| dtype_arg(d.unchecked_ref::<JsString>()))
        .transpose()
}

/// Statistics of an array's values, streamed: `push` chunks of its bytes
/// (whole elements), then `result()`. The core's `Stats`: the mean and
/// standard deviation of the finite values equal numpy's within float64
/// rounding, whatever the chunks.
#[wasm_bindgen(js_name = Stats)]
pub struct JsStats {
    descr: Descr,
    /// A cell, so that `merge` borrows both sides shared and can tell
    /// `stats.merge(stats)` itself (two borrows of one object, one of
    /// them mutable, would be wasm-bindgen's plain `Error`).
    inner: Cell<Stats>,
}

#[wasm_bindgen(js_class = Stats)]
impl JsStats {
    /// Statistics of elements of `dtype` (a type string: `"<f4"`,
    /// `">i2"`, `"bfloat16"`, `"float8_e4m3fn"`).
    #[wasm_bindgen(constructor)]
    pub fn new(dtype: &JsString) -> Result<JsStats, BindingError> {
        Ok(JsStats {
            descr: dtype_arg(dtype)?,
            inner: Cell::new(Stats::new()),
        })
    }

    /// Adds the elements in `bytes`: whole elements only (a partial one is
    /// a `RangeError` of kind `"ItemsizeMismatch"`, and nothing is added).
    pub fn push(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "ArrayBufferView | ArrayBuffer")] bytes: &JsValue,
    ) -> Result<(), BindingError> {
        let bytes = bytes_arg(bytes, "bytes")?;
        Ok(self.inner.get_mut().push(self.descr, &bytes)?)
    }

    /// Adds the statistics of another part of the array (`other` is left
    /// as it is; its dtype may differ). `other` must be another `Stats`:
    /// this one itself is a `TypeError`.
    pub fn merge(&self, other: &JsStats) -> Result<(), BindingError> {
        if core::ptr::eq(self, other) {
            return Err(BindingError::Argument {
                what: "other",
                expected: "another Stats (merging one with itself would count its elements twice)",
                got: JsValue::from_str("this Stats"),
                type_error: true,
            });
        }
        let mut merged = self.inner.get();
        merged.merge(&other.inner.get());
        self.inner.set(merged);
        Ok(())
    }

    /// `{ count, finite, nan, posinf, neginf, zero, subnormal, min, max,
    /// mean, std }`; the last four null when no value is finite.
    pub fn result(&self) -> Result<StatsResult, BindingError> {
        let s = &self.inner.get();
        let c = s.counts();
        let n = |v: u64| JsValue::from_f64(v as f64);
        let f = |v: Option<f64>| v.map_or(JsValue::NULL, JsValue::from_f64);
        let result = object(&[
            ("count", n(c.elements)),
            ("finite", n(c.finite)),
            ("nan", n(c.nan)),
            ("posinf", n(c.pos_inf)),
            ("neginf", n(c.neg_inf)),
            ("zero", n(c.zero)),
            ("subnormal", n(c.subnormal)),
            ("min", f(s.min())),
            ("max", f(s.max())),
            ("mean", f(s.mean())),
            ("std", f(s.std())),
        ])?;
        Ok(result.unchecked_into())
    }
}

/// A histogram with numpy's equal bins, edges bit for bit and counts
/// exactly, for an array of `dtype`: `np.histogram(a, bins, range=(lo,
/// hi))` (the constructor; the core's `Histogram::new`) or numpy's own
/// range (`forRange`; the core's `Histogram::for_range`), whose
/// arithmetic differs. NaN, infinities and values outside the range are
/// not counted.
#[wasm_bindgen(js_name = Histogram)]
pub struct JsHistogram {
    inner: Counted,
}

/// A histogram's counts: pushed value by value, or from a tally.
enum Counted {
    Values(Histogram),
    /// From `addTally`, with the elements it left for `pushRest`.
    Tallied(Rest),
}

impl Counted {
    fn histogram(&self) -> &Histogram {
        match self {
            Counted::Values(h) => h,
            Counted::Tallied(rest) => rest.histogram(),
        }
    }

    /// What a tally left, for `call` (`pushRest`, `pushKeyed`) to count.
    fn rest(&mut self, call: &'static str) -> Result<&mut Rest, BindingError> {
        match self {
            Counted::Tallied(rest) => Ok(rest),
            Counted::Values(_) => Err(BindingError::Order {
                call,
                why: "it counts what a tally left: addTally first",
            }),
        }
    }
}

/// A histogram that has taken a tally is counted by `pushRest` only (a
/// `push` would count its elements twice), and takes no second tally.
fn tallied(call: &'static str) -> BindingError {
    BindingError::Order {
        call,
        why: "this histogram was counted from a tally (addTally): pushRest the bytes again",
    }
}

/// An empty vector with room for `n` items of `size` bytes, or a
/// `RangeError` of kind `"OutOfMemory"` for `what` where wasm memory
/// cannot hold them (the allocator's failure would abort the instance).
fn room<T>(n: usize, size: u64, what: &'static str) -> Result<Vec<T>, BindingError> {
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|_| BindingError::OutOfMemory {
            what,
            bytes: n as u64 * size,
        })?;
    Ok(v)
}

/// `bins` (default 64) as a count of bins.
fn bins_arg(bins: &JsValue) -> Result<usize, BindingError> {
    let Some(bins) = given(bins) else {
        return Ok(64);
    };
    let n = arg(bins, "bins", whole)?;
    if n == 0 || n > MAX_BINS {
        return Err(BindingError::bad_value(
            "bins",
            "a whole number from 1 to 1024",
            n as f64,
        ));
    }
    Ok(n)
}

fn histogram(
    lo: &JsValue,
    hi: &JsValue,
    bins: &JsValue,
    dtype: &JsValue,
    make: fn(f64, f64, usize, DType) -> Option<Histogram>,
) -> Result<JsHistogram, BindingError> {
    let (lo_n, hi_n) = (number(lo, "lo")?, number(hi, "hi")?);
    let bins_n = bins_arg(bins)?;
    let dtype = optional_dtype(dtype)?.map_or(DType::F64, |d| d.dtype);
    if !lo_n.is_finite() || !hi_n.is_finite() || lo_n > hi_n {
        let (what, got) = if lo_n.is_finite() {
            ("hi", hi)
        } else {
            ("lo", lo)
        };
        return Err(BindingError::Argument {
            what,
            expected: "finite, with lo <= hi",
            got: got.clone(),
            type_error: false,
        });
    }
    let hist = make(lo_n, hi_n, bins_n, dtype).ok_or_else(|| {
        BindingError::bad_value(
            "bins",
            "fewer: numpy refuses edges that do not increase in the array's type",
            bins_n as f64,
        )
    })?;
    Ok(JsHistogram {
        inner: Counted::Values(hist),
    })
}

#[wasm_bindgen(js_class = Histogram)]
impl JsHistogram {
    /// `np.histogram(a, bins, range=(lo, hi))` for an array `a` of
    /// `dtype` (default float64), `lo` and `hi` as Python floats: `bins`
    /// (default 64, at most 1024) equal bins, `lo == hi` widened to `lo -
    /// 0.5` to `hi + 0.5`, the edges float64 numbers rounded once to the
    /// bins' type.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "number")] lo: &JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] hi: &JsValue,
        #[wasm_bindgen(unchecked_param_type = "number | undefined")] bins: &JsValue,
        #[wasm_bindgen(unchecked_param_type = "string | undefined")] dtype: &JsValue,
    ) -> Result<JsHistogram, BindingError> {
        histogram(lo, hi, bins, dtype, Histogram::new)
    }

    /// The bins `np.histogram` chooses for finite values from `min` to
    /// `max` (`Stats.result()`'s): that range, or `min - 0.5` to `max +
    /// 0.5` when they are equal.
    #[wasm_bindgen(js_name = forRange)]
    pub fn for_range(
        #[wasm_bindgen(unchecked_param_type = "number")] min: &JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] max: &JsValue,
        #[wasm_bindgen(unchecked_param_type = "number | undefined")] bins: &JsValue,
        #[wasm_bindgen(unchecked_param_type = "string | undefined")] dtype: &JsValue,
    ) -> Result<JsHistogram, BindingError> {
        histogram(min, max, bins, dtype, Histogram::for_range)
    }

    /// Counts the elements of `dtype` in `bytes` (whole elements).
    pub fn push(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "ArrayBufferView | ArrayBuffer")] bytes: &JsValue,
        dtype: &JsString,
    ) -> Result<(), BindingError> {
        let bytes = bytes_arg(bytes, "bytes")?;
        match &mut self.inner {
            Counted::Values(h) => Ok(h.push(dtype_arg(dtype)?, &bytes)?),
            Counted::Tallied(_) => Err(tallied("push")),
        }
    }

    /// Counts the elements of a `Tally` of the array (taken in the pass
    /// that found its range) that it can from their keys alone, and
    /// returns how many it left: `pushRest` the same bytes again to count
    /// those (nothing need be read again when it is 0). After it, the
    /// histogram is counted by `pushRest` only.
    #[wasm_bindgen(js_name = addTally)]
    pub fn add_tally(&mut self, tally: &JsTally) -> Result<f64, BindingError> {
        let Counted::Values(h) = &self.inner else {
            return Err(tallied("addTally"));
        };
        let rest = tally.inner.count(h.clone());
        let left = rest.left() as f64;
        self.inner = Counted::Tallied(rest);
        Ok(left)
    }

    /// Counts the elements in `bytes` (whole elements of the tally's
    /// dtype, the bytes it counted, each once) that `addTally` left.
    #[wasm_bindgen(js_name = pushRest)]
    pub fn push_rest(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "ArrayBufferView | ArrayBuffer")] bytes: &JsValue,
    ) -> Result<(), BindingError> {
        let bytes = bytes_arg(bytes, "bytes")?;
        Ok(self.inner.rest("pushRest")?.push(&bytes)?)
    }

    /// Counts the elements that `addTally` left among keyed chunks
    /// (`Tally.pushKeyed`'s, each once; several may be joined), reading
    /// only the keys left. A chunk cut short is a `RangeError` of kind
    /// `"LengthMismatch"`.
    #[wasm_bindgen(js_name = pushKeyed)]
    pub fn push_keyed(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "ArrayBufferView | ArrayBuffer")] keyed: &JsValue,
    ) -> Result<(), BindingError> {
        let keyed = bytes_arg(keyed, "keyed")?;
        Ok(self.inner.rest("pushKeyed")?.push_keyed(&keyed)?)
    }

    /// The count of each bin (exact: integers below 2^53).
    pub fn counts(&self) -> Vec<f64> {
        let h = self.inner.histogram();
        h.counts().iter().map(|&c| c as f64).collect()
    }

    /// The `bins + 1` edges, numpy's.
    pub fn edges(&self) -> Vec<f64> {
        self.inner.histogram().edges().to_vec()
    }
}

/// An array's elements counted by their leading 16 bits (the whole of a
/// 16- or 8-bit element), in the pass that finds the range: a `Histogram`
/// over that range then counts most of them at once (`addTally`), and
/// reads again only the elements near its edges (`pushRest`): none of a
/// float16, bfloat16 or 8-bit array, a few percent of a float32 one whose
/// values spread over the bins. The counts are `push`'s exactly.
#[wasm_bindgen(js_name = Tally)]
pub struct JsTally {
    inner: Tally,
}

#[wasm_bindgen(js_class = Tally)]
impl JsTally {
    /// No elements yet, of `dtype` (a type string, as for `Stats`).
    #[wasm_bindgen(constructor)]
    /// Its counts take 512 KiB of wasm memory until `free()`: where
    /// they cannot be had, a `RangeError` of kind `"OutOfMemory"`.
    pub fn new(dtype: &JsString) -> Result<JsTally, BindingError> {
        let inner = Tally::try_new(dtype_arg(dtype)?).ok_or(BindingError::OutOfMemory {
            what: "a Tally's counts",
            bytes: 8 << 16,
        })?;
        Ok(JsTally { inner })
    }

    /// Counts the elements in `bytes`: whole elements only (a partial one
    /// is a `RangeError` of kind `"ItemsizeMismatch"`, counting nothing).
    pub fn push(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "ArrayBufferView | ArrayBuffer")] bytes: &JsValue,
    ) -> Result<(), BindingError> {
        let bytes = bytes_arg(bytes, "bytes")?;
        Ok(self.inner.push(&bytes)?)
    }

    /// Counts the elements in `bytes` as `push` does, and returns them
    /// keyed for a second pass (`Histogram.pushKeyed`): sorted by key,
    /// each kept as its bytes below the key (two of a float32's four), so
    /// that a page keeping the chunk for that pass keeps half of it or
    /// less, and the pass reads only the keys it wants. At most
    /// `keyedLength(bytes.length)` bytes.
    #[wasm_bindgen(js_name = pushKeyed)]
    pub fn push_keyed(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "ArrayBufferView | ArrayBuffer")] bytes: &JsValue,
    ) -> Result<Vec<u8>, BindingError> {
        let bytes = bytes_arg(bytes, "bytes")?;
        let len = self.inner.keyed_len(bytes.len());
        let mut out = room(len, 1, "pushKeyed()'s keyed chunk")?;
        self.inner.push_keyed(&bytes, &mut out)?;
        Ok(out)
    }

    /// The most bytes `pushKeyed` returns for `nbytes` bytes of elements.
    #[wasm_bindgen(js_name = keyedLength)]
    pub fn keyed_length(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] nbytes: &JsValue,
    ) -> Result<f64, BindingError> {
        let n = arg(nbytes, "nbytes", whole)?;
        Ok(self.inner.keyed_len(n) as f64)
    }

    /// Whether every key is one value (elements of one or two bytes):
    /// then `addTally` leaves nothing to push again.
    #[wasm_bindgen(getter, js_name = isExact)]
    pub fn is_exact(&self) -> bool {
        self.inner.is_exact()
    }
}

/// A 2-D array (`rows × cols`, C order) downsampled to an `outH × outW`
/// picture as its bytes stream in: each pixel the mean or the maximum of
/// the finite elements it covers (rows `floor(i * rows / outH)` to
/// `floor((i + 1) * rows / outH)`, columns likewise), NaN where none is.
#[wasm_bindgen(js_name = Heatmap)]
pub struct JsHeatmap {
    descr: Descr,
    inner: Heatmap,
    rows: u64,
    cols: u64,
}

/// A picture's dimension: from 1 to the array's.
fn out_dim(value: &JsValue, what: &'static str, most: u64) -> Result<usize, BindingError> {
    let n = arg(value, what, whole)?;
    if n == 0 || n as u64 > most {
        return Err(BindingError::bad_value(
            what,
            "a whole number from 1 to the array's (rows for outH, cols for outW)",
            n as f64,
        ));
    }
    Ok(n)
}

/// The most pixels a `Heatmap` has: 2^26 (`values()` returns them all at
/// once, as `read` its elements).
const MAX_PIXELS: usize = MAX_ELEMENTS;

#[wasm_bindgen(js_class = Heatmap)]
impl JsHeatmap {
    /// An empty picture of a `rows × cols` array of `dtype`; `mode` is
    /// `"mean"` or `"max"`. `rows` and `cols` are whole numbers (or
    /// BigInts) up to 2^53, and the array may have any number of elements
    /// up to 2^64 - 1 (only the picture is kept); the picture at most 2^26
    /// pixels (`outH × outW`), refused before anything is allocated.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "number | bigint")] rows: &JsValue,
        #[wasm_bindgen(unchecked_param_type = "number | bigint")] cols: &JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] out_h: &JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] out_w: &JsValue,
        dtype: &JsString,
        #[wasm_bindgen(unchecked_param_type = "\"mean\" | \"max\"")] mode: &JsValue,
    ) -> Result<JsHeatmap, BindingError> {
        let (rows_n, cols_n) = (count_arg(rows, "rows")?, count_arg(cols, "cols")?);
        let (h, w) = (
            out_dim(out_h, "outH", rows_n)?,
            out_dim(out_w, "outW", cols_n)?,
        );
        let descr = dtype_arg(dtype)?;
        let reduce = match mode.as_string().as_deref() {
            Some("mean") => Reduce::Mean,
            Some("max") => Reduce::Max,
            _ => {
                return Err(BindingError::Argument {
                    what: "mode",
                    expected: "\"mean\" or \"max\"",
                    got: mode.clone(),
                    type_error: !mode.is_string(),
                });
            }
        };
        if rows_n.checked_mul(cols_n).is_none() {
            return Err(BindingError::bad_value(
                "rows × cols",
                "at most 18446744073709551615 elements",
                rows_n as f64 * cols_n as f64,
            ));
        }
        match h.checked_mul(w) {
            Some(pixels) if pixels <= MAX_PIXELS => {}
            _ => {
                return Err(BindingError::bad_value(
                    "outH × outW",
                    "at most 67108864 pixels (2^26)",
                    h as f64 * w as f64,
                ));
            }
        }
        let inner =
            Heatmap::new(rows_n, cols_n, h, w, reduce).ok_or(BindingError::OutOfMemory {
                what: "a Heatmap's picture",
                bytes: (h as u64 * w as u64 * 4) + w as u64 * 24,
            })?;
        Ok(JsHeatmap {
            descr,
            inner,
            rows: rows_n,
            cols: cols_n,
        })
    }

    /// Adds the next elements (C order), from where the last call
    /// stopped: whole rows or any whole number of elements. More than the
    /// array has left is a `RangeError` of kind `"CountMismatch"`.
    #[wasm_bindgen(js_name = pushRows)]
    pub fn push_rows(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "ArrayBufferView | ArrayBuffer")] bytes: &JsValue,
    ) -> Result<(), BindingError> {
        let bytes = bytes_arg(bytes, "bytes")?;
        let size = self.descr.dtype.size();
        let n = (bytes.len() / size) as u64;
        let left = self.inner.left();
        if bytes.len() % size == 0 && n > left {
            return Err(BindingError::PastTheEnd {
                given: n,
                left,
                rows: self.rows,
                cols: self.cols,
            });
        }
        Ok(self.inner.push(self.descr, &bytes)?)
    }

    /// Ends the stream: a cut-short one's last row of pixels is written
    /// from the elements that came. Nothing more can be pushed.
    pub fn done(&mut self) {
        self.inner.finish();
    }

    /// Whether every element has come (or `done()` was called).
    #[wasm_bindgen(getter, js_name = isDone)]
    pub fn is_done(&self) -> bool {
        self.inner.is_done()
    }

    /// The picture, `outH × outW` in C order (NaN where no finite element
    /// is, or none has come yet).
    pub fn values(&self) -> Result<Vec<f32>, BindingError> {
        let values = self.inner.values();
        let mut out = room(values.len(), 4, "Heatmap values()")?;
        out.extend_from_slice(values);
        Ok(out)
    }

    /// `[min, max]` of the finite pixels, for the colour scale; null when
    /// none is finite.
    pub fn range(&self) -> Range {
        match self.inner.range() {
            Some((lo, hi)) => {
                js_sys::Array::of2(&f64::from(lo).into(), &f64::from(hi).into()).into()
            }
            None => JsValue::NULL,
        }
        .unchecked_into()
    }
}

/// The quantised ggml type `qtype` names (ggml's name, any case) that the
/// core dequantises: a `TypeError` for anything but a string, a
/// `RangeError` for another name (`dequantize`, `dequantShader`,
/// `dequantPasses`).
pub(crate) fn qtype_arg(qtype: &JsValue) -> Result<GgmlType, BindingError> {
    const QTYPES: &str = "a quantised ggml type: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, \
                         Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4, TQ1_0 or TQ2_0";
    qtype
        .as_string()
        .and_then(|name| GgmlType::from_name(&name))
        .filter(|&t| dequant::can_dequantize(t))
        .ok_or_else(|| BindingError::Argument {
            what: "qtype",
            expected: QTYPES,
            got: qtype.clone(),
            type_error: qtype.as_string().is_none(),
        })
}

/// GGUF's quantised blocks (`qtype`: ggml's name, any case, `"Q4_K"`,
/// `"q8_0"`) dequantised to float32 by the core's reference (gguf-py's
/// values bit for bit): `blocks` must be whole blocks.
#[wasm_bindgen]
pub fn dequantize(
    qtype: &JsString,
    #[wasm_bindgen(unchecked_param_type = "ArrayBufferView | ArrayBuffer")] blocks: &JsValue,
) -> Result<Vec<f32>, BindingError> {
    let blocks = bytes_arg(blocks, "blocks")?;
    let ggml = qtype_arg(qtype)?;
    let info = ggml.info();
    let (block, bytes) = (info.block as usize, info.bytes as usize);
    if !blocks.len().is_multiple_of(bytes) {
        return Err(BindingError::Argument {
            what: "blocks' length",
            expected: "a whole number of blocks (see the type's block size)",
            got: (blocks.len() as f64).into(),
            type_error: false,
        });
    }
    let count = blocks.len() / bytes * block;
    at_most(count, "dequantize() returns")?;
    let mut out = room(count, 4, "dequantize()'s values")?;
    out.resize(count, 0.0);
    dequant::dequantize_blocks(ggml, &blocks, &mut out);
    Ok(out)
}
