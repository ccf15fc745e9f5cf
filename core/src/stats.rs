//! What an array's values are, streamed over its bytes in chunks: counts,
//! extremes, mean and standard deviation ([`Stats`]), numpy's histogram
//! ([`Histogram`]), the same histogram from one pass over the bytes and
//! a second over few of its elements ([`Tally`], feature `alloc`) and a
//! 2-D array downsampled to a picture ([`Heatmap`], feature `alloc`).
//!
//! Every dtype of the core's table is read, in either byte order, through
//! the core's own decoding (float16, bfloat16 and the float8s exactly), as
//! `f64`. Chunks are whole elements, of any size: a page streams a file's
//! byte ranges through these in bounded pieces, and the results do not
//! depend on where the chunks were cut (but for the last bits of the mean
//! and standard deviation).
//!
//! # Examples
//! ```
//! use bytelens_core::{Descr, Histogram, Stats};
//! let d: Descr = "<f4".parse()?;
//! let values = [1.0f32, 2.0, f32::NAN, 4.0, f32::INFINITY, 0.0];
//! let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
//! let mut stats = Stats::new();
//! stats.push(d, &bytes[..8])?; // any cut on whole elements
//! stats.push(d, &bytes[8..])?;
//! let counts = stats.counts();
//! assert_eq!((counts.elements, counts.finite, counts.nan, counts.pos_inf, counts.zero), (6, 4, 1, 1, 1));
//! assert_eq!((stats.min(), stats.max(), stats.mean()), (Some(0.0), Some(4.0), Some(1.75)));
//! let mut hist = Histogram::for_range(0.0, 4.0, 4, d.dtype).unwrap();
//! hist.push(d, &bytes)?;
//! assert_eq!(hist.counts(), [1, 1, 1, 1]);
//! assert_eq!(hist.edges(), [0.0, 1.0, 2.0, 3.0, 4.0]);
//! # Ok::<(), bytelens_core::Error>(())
//! ```
#![forbid(unsafe_code)]

use half::{bf16, f16};

use crate::{ByteOrder, DType, Descr, Error, Scalar};

/// Calls `f` with each `N`-byte element of `bytes` in native byte order.
#[inline(always)]
fn each<const N: usize>(bytes: &[u8], order: ByteOrder, mut f: impl FnMut([u8; N])) {
    // Two loops, not a test in one: a loop that calls out (a run counted)
    // is not unswitched, and read its elements a byte at a time.
    if order == ByteOrder::NATIVE {
        for chunk in bytes.chunks_exact(N) {
            f(chunk.try_into().expect("N bytes"));
        }
    } else {
        for chunk in bytes.chunks_exact(N) {
            let mut raw: [u8; N] = chunk.try_into().expect("N bytes");
            raw.reverse();
            f(raw);
        }
    }
}

/// Calls `f` with the value of each whole element of `descr` in `bytes`,
/// in order, as `f64` (exact but for 64-bit integers past 2^53, which
/// round as numpy's `astype(float64)` rounds them). A partial element at
/// the end is left out.
#[inline(always)]
fn for_each_value(descr: Descr, bytes: &[u8], mut f: impl FnMut(f64)) {
    let o = descr.order;
    match descr.dtype {
        DType::Bool => each::<1>(bytes, o, |b| f(f64::from(u8::from(b[0] != 0)))),
        DType::U8 => each::<1>(bytes, o, |b| f(f64::from(b[0]))),
        DType::I8 => each::<1>(bytes, o, |b| f(f64::from(b[0] as i8))),
        DType::U16 => each(bytes, o, |b| f(f64::from(u16::from_ne_bytes(b)))),
        DType::I16 => each(bytes, o, |b| f(f64::from(i16::from_ne_bytes(b)))),
        DType::U32 => each(bytes, o, |b| f(f64::from(u32::from_ne_bytes(b)))),
        DType::I32 => each(bytes, o, |b| f(f64::from(i32::from_ne_bytes(b)))),
        DType::U64 => each(bytes, o, |b| f(u64::from_ne_bytes(b) as f64)),
        DType::I64 => each(bytes, o, |b| f(i64::from_ne_bytes(b) as f64)),
        DType::F16 => each(bytes, o, |b| f(f16::from_ne_bytes(b).to_f64())),
        DType::BF16 => each(bytes, o, |b| f(bf16::from_ne_bytes(b).to_f64())),
        DType::F32 => each(bytes, o, |b| f(f64::from(f32::from_ne_bytes(b)))),
        DType::F64 => each(bytes, o, |b| f(f64::from_ne_bytes(b))),
        DType::F8E4M3FN | DType::F8E5M2 | DType::F8E8M0FNU => {
            // 256 codes: decode each once, by the core's format.
            let table: [f64; 256] = core::array::from_fn(|code| {
                let bits = [code as u8];
                Scalar::read(descr, &bits).map_or(f64::NAN, Scalar::to_f64)
            });
            each::<1>(bytes, o, |b| f(table[usize::from(b[0])]))
        }
    }
}

/// Refuses bytes that are not whole elements of `descr`.
fn whole_elements(descr: Descr, bytes: &[u8]) -> Result<usize, Error> {
    let itemsize = descr.dtype.size();
    if !bytes.len().is_multiple_of(itemsize) {
        return Err(Error::ItemsizeMismatch {
            nbytes: bytes.len(),
            itemsize,
            dtype: descr.dtype,
        });
    }
    Ok(bytes.len() / itemsize)
}

/// The smallest normal magnitude of a float dtype with subnormals (0 for
/// the others: nothing is subnormal there).
fn smallest_normal(dtype: DType) -> f64 {
    match dtype.float_format() {
        Some(format) if format.subnormals => {
            // 2^(1 - bias), for biases up to 1023.
            f64::from_bits(((1 - format.bias + 1023) as u64) << 52)
        }
        _ => 0.0,
    }
}

/// The counts [`Stats`] keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Every element pushed.
    pub elements: u64,
    /// The finite ones (every integer and bool).
    pub finite: u64,
    /// NaN (any payload, either sign).
    pub nan: u64,
    /// Positive infinity.
    pub pos_inf: u64,
    /// Negative infinity.
    pub neg_inf: u64,
    /// Zero, either sign.
    pub zero: u64,
    /// Subnormal floats: non-zero, smaller in magnitude than the dtype's
    /// smallest normal number (never an integer, nor a float8_e8m0fnu,
    /// which has none).
    pub subnormal: u64,
}

/// Statistics of an array's values, streamed over chunks of its bytes:
/// [`Counts`], and the minimum, maximum, mean and population standard
/// deviation of the finite values, as numpy's `nanmin`, `nanmax`,
/// `nanmean` and `nanstd` give them for the finite values as float64
/// (`a = a[np.isfinite(a)].astype(np.float64)`), the last two within
/// float64 rounding.
///
/// The moments are accumulated in `f64`: each run of up to 256 finite
/// values two-pass (its mean, then its squared deviations from it), the
/// runs merged by Chan's formula, so that the result is as accurate as a
/// two-pass computation over the whole array and [`Stats::merge`] joins
/// the statistics of two parts, in order or not.
///
/// # Examples
/// ```
/// use bytelens_core::{Descr, Stats};
/// let d: Descr = ">i2".parse()?;
/// let (mut a, mut b) = (Stats::new(), Stats::new());
/// a.push(d, &[0, 1, 0, 2])?; // 1, 2
/// b.push(d, &[0, 3, 0, 0])?; // 3, 0
/// a.merge(&b);
/// assert_eq!(a.mean(), Some(1.5));
/// assert_eq!(a.std(), Some(1.25f64.sqrt()));
/// assert_eq!(a.counts().zero, 1);
/// assert!(a.push(d, &[1, 2, 3]).is_err()); // not whole elements
/// # Ok::<(), bytelens_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    counts: Counts,
    min: f64,
    max: f64,
    /// The mean of the finite values so far.
    mean: f64,
    /// The sum of their squared deviations from `mean`.
    m2: f64,
}

impl Default for Stats {
    fn default() -> Stats {
        Stats::new()
    }
}

/// Finite values gathered before their moments join the totals.
const RUN: usize = 256;

impl Stats {
    /// No elements yet.
    pub const fn new() -> Stats {
        Stats {
            counts: Counts {
                elements: 0,
                finite: 0,
                nan: 0,
                pos_inf: 0,
                neg_inf: 0,
                zero: 0,
                subnormal: 0,
            },
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            mean: 0.0,
            m2: 0.0,
        }
    }

    /// Adds the elements of `descr` in `bytes`, whole elements only: fails
    /// with `ItemsizeMismatch`, adding nothing, when its length is not a
    /// multiple of the itemsize.
    pub fn push(&mut self, descr: Descr, bytes: &[u8]) -> Result<(), Error> {
        let n = whole_elements(descr, bytes)?;
        let tiny = smallest_normal(descr.dtype);
        let mut run = [0f64; RUN];
        let mut len = 0;
        let mut m = Moments {
            n: self.counts.finite,
            mean: self.mean,
            m2: self.m2,
            min: self.min,
            max: self.max,
        };
        let c = &mut self.counts;
        for_each_value(descr, bytes, |x| {
            if x.is_finite() {
                if x == 0.0 {
                    c.zero += 1;
                } else if x.abs() < tiny {
                    c.subnormal += 1;
                }
                run[len] = x;
                len += 1;
                if len == RUN {
                    m.absorb(&run);
                    len = 0;
                }
            } else if x.is_nan() {
                c.nan += 1;
            } else if x > 0.0 {
                c.pos_inf += 1;
            } else {
                c.neg_inf += 1;
            }
        });
        m.absorb(&run[..len]);
        c.finite = m.n;
        c.elements += n as u64;
        (self.min, self.max, self.mean, self.m2) = (m.min, m.max, m.mean, m.m2);
        Ok(())
    }

    /// Adds the statistics of other elements (another part of the array,
    /// before or after these: the result is the same up to rounding).
    pub fn merge(&mut self, other: &Stats) {
        let (a, b) = (&mut self.counts, &other.counts);
        let n = a.finite;
        a.elements += b.elements;
        a.nan += b.nan;
        a.pos_inf += b.pos_inf;
        a.neg_inf += b.neg_inf;
        a.zero += b.zero;
        a.subnormal += b.subnormal;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        let mut finite = n;
        chan(
            &mut finite,
            &mut self.mean,
            &mut self.m2,
            b.finite,
            other.mean,
            other.m2,
        );
        self.counts.finite = finite;
    }

    /// The counts.
    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// The smallest finite value; `None` when there is none.
    pub fn min(&self) -> Option<f64> {
        (self.counts.finite > 0).then_some(self.min)
    }

    /// The largest finite value; `None` when there is none.
    pub fn max(&self) -> Option<f64> {
        (self.counts.finite > 0).then_some(self.max)
    }

    /// The mean of the finite values; `None` when there is none.
    pub fn mean(&self) -> Option<f64> {
        (self.counts.finite > 0).then_some(self.mean)
    }

    /// The population variance (numpy's `ddof=0`) of the finite values;
    /// `None` when there is none.
    pub fn variance(&self) -> Option<f64> {
        (self.counts.finite > 0).then(|| self.m2 / self.counts.finite as f64)
    }

    /// The population standard deviation (numpy's `std`, `ddof=0`) of the
    /// finite values; `None` when there is none.
    pub fn std(&self) -> Option<f64> {
        self.variance().map(sqrt)
    }
}

/// `x.sqrt()` without std: the square root rounded correctly, by Newton's
/// method from the float's halved exponent, finished by a correction of
/// the last bit.
fn sqrt(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 || x.is_infinite() {
        return x;
    }
    // Scaled by an even power of two into a range where the residuals
    // below neither overflow nor lose bits to underflow.
    let pow2 = |k: i32| f64::from_bits(((1023 + k) as u64) << 52);
    let (x, scale) = if x < pow2(-500) {
        (x * pow2(600), pow2(-300))
    } else if x > pow2(500) {
        (x * pow2(-600), pow2(300))
    } else {
        (x, 1.0)
    };
    let mut r = f64::from_bits((x.to_bits() >> 1) + (1023u64 << 51));
    for _ in 0..6 {
        r = 0.5 * (r + x / r);
    }
    // The neighbour whose square is nearest to x, by exact residuals.
    let best = [
        f64::from_bits(r.to_bits() - 1),
        r,
        f64::from_bits(r.to_bits() + 1),
    ]
    .into_iter()
    .min_by(|a, b| {
        let ra = residual(*a, x).abs();
        let rb = residual(*b, x).abs();
        ra.partial_cmp(&rb).unwrap_or(core::cmp::Ordering::Equal)
    })
    .unwrap_or(r);
    best * scale
}

/// `r * r - x`, with the product's rounding error kept (Dekker's split),
/// so that two candidates' residuals compare exactly enough.
fn residual(r: f64, x: f64) -> f64 {
    const SPLIT: f64 = 134_217_729.0; // 2^27 + 1
    let c = SPLIT * r;
    let hi = c - (c - r);
    let lo = r - hi;
    let p = r * r;
    let err = ((hi * hi - p) + 2.0 * hi * lo) + lo * lo;
    (p - x) + err
}

/// Lanes of a run's sums and extremes: independent chains that the CPU
/// (and the compiler's vectors) advance side by side, where a single
/// running sum or minimum would wait on the last value's at every value.
const LANES: usize = 4;

/// The finite values' count, moments and extremes, as [`Stats::push`]
/// gathers them.
struct Moments {
    n: u64,
    mean: f64,
    m2: f64,
    min: f64,
    max: f64,
}

impl Moments {
    /// Joins a run of finite values: its extremes, its own mean and
    /// squared deviations two-pass (each sum in [`LANES`] parts, added
    /// pairwise), then Chan's merge.
    #[inline]
    fn absorb(&mut self, run: &[f64]) {
        if run.is_empty() {
            return;
        }
        let (mut sum, mut lo, mut hi) = (
            [0.0; LANES],
            [f64::INFINITY; LANES],
            [f64::NEG_INFINITY; LANES],
        );
        let lanes = run.chunks_exact(LANES);
        let rest = lanes.remainder();
        for values in lanes {
            for l in 0..LANES {
                sum[l] += values[l];
                lo[l] = lo[l].min(values[l]);
                hi[l] = hi[l].max(values[l]);
            }
        }
        for (l, &x) in rest.iter().enumerate() {
            sum[l] += x;
            lo[l] = lo[l].min(x);
            hi[l] = hi[l].max(x);
        }
        let count = run.len() as f64;
        let run_mean = pairwise(sum) / count;
        let mut dev = [0.0; LANES];
        let lanes = run.chunks_exact(LANES);
        let rest = lanes.remainder();
        for values in lanes {
            for l in 0..LANES {
                let d = values[l] - run_mean;
                dev[l] += d * d;
            }
        }
        for (l, &x) in rest.iter().enumerate() {
            dev[l] += (x - run_mean) * (x - run_mean);
        }
        self.min = lo.iter().fold(self.min, |a, &b| a.min(b));
        self.max = hi.iter().fold(self.max, |a, &b| a.max(b));
        chan(
            &mut self.n,
            &mut self.mean,
            &mut self.m2,
            run.len() as u64,
            run_mean,
            pairwise(dev),
        );
    }
}

/// The lanes' sum, added pairwise.
#[inline(always)]
fn pairwise([a, b, c, d]: [f64; LANES]) -> f64 {
    (a + b) + (c + d)
}

/// Chan et al.'s merge of the moments of two parts.
fn chan(n: &mut u64, mean: &mut f64, m2: &mut f64, nb: u64, mean_b: f64, m2_b: f64) {
    if nb == 0 {
        return;
    }
    if *n == 0 {
        (*n, *mean, *m2) = (nb, mean_b, m2_b);
        return;
    }
    let (na_f, nb_f) = (*n as f64, nb as f64);
    let total = na_f + nb_f;
    let delta = mean_b - *mean;
    *mean += delta * (nb_f / total);
    *m2 += m2_b + delta * delta * (na_f * nb_f / total);
    *n += nb;
}

/// What a [`Heatmap`] pixel is of the elements it covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduce {
    /// The mean of the finite ones.
    Mean,
    /// The largest finite one.
    Max,
}

#[cfg(feature = "alloc")]
pub use heatmap::Heatmap;
pub use histogram::{Histogram, MAX_BINS};
#[cfg(feature = "alloc")]
pub use tally::{Rest, Tally};

#[cfg(test)]
mod tests;

#[cfg(feature = "alloc")]
mod heatmap;
mod histogram;
#[cfg(feature = "alloc")]
mod tally;
