use super::{for_each_value, whole_elements};
use crate::{DType, Descr, Error, Scalar};

/// The most bins a [`Histogram`] has.
pub const MAX_BINS: usize = 1024;

/// The arithmetic numpy's `histogram` does in one of its steps: that of
/// `np.result_type` of its operands, each operation rounded to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Arithmetic {
    /// float64.
    F64,
    /// float32.
    F32,
    /// float16 or bfloat16: each operation rounded to it, as numpy and
    /// ml_dtypes compute them (in float32, rounded once to the type).
    Narrow(DType),
}

impl Arithmetic {
    /// The arithmetic of an array of `dtype` with ends of its own type
    /// (the range numpy finds, `a.min()` and `a.max()`): the array's,
    /// float64 for integers, bool and float64 (and the float8s, see
    /// [`Histogram::for_range`]).
    fn of(dtype: DType) -> Arithmetic {
        match dtype {
            DType::F32 => Arithmetic::F32,
            DType::F16 | DType::BF16 => Arithmetic::Narrow(dtype),
            _ => Arithmetic::F64,
        }
    }

    /// The arithmetic of an array of `dtype` with ends given as Python
    /// floats (`range=(lo, hi)`), which numpy 2 takes as weak scalars:
    /// the array's for float32 and float16, float32 for ml_dtypes' types
    /// (bfloat16 and the float8s, whose `result_type` with a Python float
    /// is float32), float64 for the others.
    fn given(dtype: DType) -> Arithmetic {
        match dtype {
            DType::F32 | DType::BF16 | DType::F8E4M3FN | DType::F8E5M2 | DType::F8E8M0FNU => {
                Arithmetic::F32
            }
            DType::F16 => Arithmetic::Narrow(dtype),
            _ => Arithmetic::F64,
        }
    }

    /// `x` rounded to the type (exact `f64` operations on its values
    /// rounded once: the same as the type's own operation).
    #[inline(always)]
    fn round(self, x: f64) -> f64 {
        match self {
            Arithmetic::F64 => x,
            Arithmetic::F32 => f64::from(x as f32),
            Arithmetic::Narrow(dtype) => Scalar::float(dtype, x).map_or(x, Scalar::to_f64),
        }
    }
}

/// Calls `$body` with `$r` a closure rounding to `$h`'s arithmetic and
/// `$q` one rounding to its quotient's: one copy of `$body` for each pair
/// there is, each with both inlined.
macro_rules! with_rounding {
    ($h:expr, |$r:ident, $q:ident| $body:expr) => {{
        let exact = |x: f64| x;
        let single = |x: f64| f64::from(x as f32);
        match ($h.arithmetic, $h.quotient) {
            (Arithmetic::F64, _) => {
                let ($r, $q) = (exact, exact);
                $body
            }
            (Arithmetic::F32, Arithmetic::F32) => {
                let ($r, $q) = (single, single);
                $body
            }
            (Arithmetic::F32, _) => {
                let ($r, $q) = (single, exact);
                $body
            }
            (a @ Arithmetic::Narrow(_), Arithmetic::Narrow(_)) => {
                let $r = move |x: f64| a.round(x);
                let $q = $r;
                $body
            }
            (a @ Arithmetic::Narrow(_), _) => {
                let ($r, $q) = (move |x: f64| a.round(x), exact);
                $body
            }
        }
    }};
}

/// The numbers numpy's histogram bins a value with.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Ends {
    /// The range's ends as numpy compares the array's values with them
    /// (in the array's type): values outside are not counted.
    lo: f64,
    hi: f64,
    /// The first edge, which the guess subtracts (in the arithmetic).
    start: f64,
    /// What the guess divides by: `hi - lo` in the quotient's arithmetic.
    width: f64,
}

/// numpy's first guess of the bin of `x` (`r` rounding to the array's
/// arithmetic, `q` to that of the quotient): `(x - start) / width * bins`
/// truncated (a float to int cast saturates, NaN to 0), the last bin for
/// the range's end.
#[inline(always)]
fn guess(
    x: f64,
    ends: &Ends,
    bins: usize,
    r: &impl Fn(f64) -> f64,
    q: &impl Fn(f64) -> f64,
) -> usize {
    let f = q(q(r(x - ends.start) / ends.width) * bins as f64);
    (f as usize).min(bins - 1)
}

/// numpy's corrections of a guess `i` at the edges: the bin below when `x`
/// is under its lower edge, the one above when it is at or over its upper
/// one (but for the last bin, which holds its upper edge).
#[inline(always)]
fn correct(x: f64, mut i: usize, edges: &[f64]) -> usize {
    let last = edges.len() - 2;
    if x < edges[i] {
        i = i.saturating_sub(1);
    }
    if i != last && x >= edges[i + 1] {
        i += 1;
    }
    i
}

/// The bin numpy's histogram counts `x` in (`r` its arithmetic, `q` its
/// quotient's), or `None` outside the range: [`guess`], then [`correct`].
#[inline(always)]
fn bin(
    x: f64,
    ends: &Ends,
    edges: &[f64],
    r: &impl Fn(f64) -> f64,
    q: &impl Fn(f64) -> f64,
) -> Option<usize> {
    if !(x >= ends.lo && x <= ends.hi) {
        return None;
    }
    let x = r(x); // numpy's astype(bin_edges.dtype)
    Some(correct(x, guess(x, ends, edges.len() - 1, r, q), edges))
}

/// Where a run of values is counted ([`Histogram`]'s `span`).
#[cfg(feature = "alloc")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Span {
    /// Outside the range: in no bin.
    Outside,
    /// All in this bin.
    Bin(usize),
    /// In more than one bin, or partly outside the range.
    Several,
}

/// numpy's `linspace(lo, hi, bins + 1)` computed in `within`, each edge
/// then rounded to `out` (the bins' type); `None` unless the edges are
/// finite and increase (numpy refuses edges that do not increase: "Too
/// many bins for data range").
fn linspace(
    lo: f64,
    hi: f64,
    bins: usize,
    within: Arithmetic,
    out: Arithmetic,
) -> Option<[f64; MAX_BINS + 1]> {
    let r = |x| within.round(x);
    let mut edges = [0.0; MAX_BINS + 1];
    let delta = r(hi - lo);
    let div = bins as f64;
    let step = r(delta / div);
    for (i, edge) in edges[..bins].iter_mut().enumerate() {
        let i = i as f64;
        let y = if step == 0.0 {
            r(r(i / div) * delta)
        } else {
            r(i * step)
        };
        *edge = out.round(r(y + lo));
    }
    edges[bins] = out.round(hi);
    let increasing = edges[..=bins]
        .windows(2)
        .all(|w| w[0] < w[1] && w[0].is_finite() && w[1].is_finite());
    increasing.then_some(edges)
}

/// A histogram with equal bins over `[lo, hi]`, counted exactly as numpy's
/// `np.histogram` counts them (its fast path for equal bins, with its
/// corrections at the edges), with numpy's edges bit for bit. Values
/// outside the range, NaN and infinities are not counted; each bin holds
/// `edges[i] <= x < edges[i + 1]`, the last one its upper edge too.
///
/// numpy's arithmetic depends on where the range comes from: numpy's own
/// (the array's minimum and maximum, [`Histogram::for_range`]) is of the
/// array's type, and numpy computes in it; a range given as Python floats
/// (`range=(lo, hi)`, [`Histogram::new`]) makes the edges float64 numbers
/// rounded once to the bins' type and the guess of a value's bin a
/// float64 quotient. Give the array's dtype to have its bins.
///
/// # Examples
/// ```
/// use bytelens_core::{DType, Descr, Histogram};
/// // np.histogram(np.float32([0.1, 0.2, 0.3, 0.7]), bins=3)
/// let d = Descr::native(DType::F32);
/// let values = [0.1f32, 0.2, 0.3, 0.7];
/// let mut h = Histogram::for_range(0.1, f64::from(0.7f32), 3, DType::F32).unwrap();
/// h.push(d, bytemuck::cast_slice(&values))?;
/// assert_eq!(h.counts(), [2, 1, 1]);
/// // A constant array: numpy's range of one around it.
/// let h = Histogram::for_range(3.0, 3.0, 2, DType::I16).unwrap();
/// assert_eq!(h.edges(), [2.5, 3.0, 3.5]);
/// # Ok::<(), bytelens_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    bins: usize,
    /// The edges' type, in which values are compared with them and the
    /// first edge is subtracted.
    arithmetic: Arithmetic,
    /// The arithmetic of the guess's quotient and product.
    quotient: Arithmetic,
    ends: Ends,
    // INVARIANT: `edges[..=bins]` are numpy's linspace, finite and increasing.
    edges: [f64; MAX_BINS + 1],
    counts: [u64; MAX_BINS],
}

impl Histogram {
    /// No values yet: `np.histogram(a, bins, range=(lo, hi))` for an array
    /// `a` of `dtype`, `lo` and `hi` Python floats. As numpy, a range of
    /// one number (`lo == hi`) is widened to `lo - 0.5` to `hi + 0.5`; the
    /// edges are float64 numbers rounded once to the bins' type (float32
    /// for float32, bfloat16 and the float8s, float16 for float16,
    /// float64 for the others); a value is in the range when it is within
    /// `lo` and `hi` rounded to its own type.
    ///
    /// `None` when `bins` is 0 or more than [`MAX_BINS`], `lo` and `hi`
    /// are not finite with `lo <= hi`, or the edges do not increase or
    /// are not finite in the bins' type (a range too narrow for the type,
    /// or too wide: numpy refuses the first, "Too many bins for data
    /// range", and fails on the second; fewer bins may do for the first).
    ///
    /// Where numpy fails while counting (a bfloat16 or float8 value below
    /// the first edge that `lo` rounds to in the array's type, or a value
    /// past the last that `hi` rounds to: "must have no negative
    /// elements", an index out of bounds), the value is counted in the
    /// nearest bin.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Descr, Histogram};
    /// let d = Descr::native(DType::F16);
    /// let values = [2.6484375f32, 0.1, 5.2].map(half::f16::from_f32);
    /// // np.histogram(np.float16([2.6484375, 0.1, 5.2]), 2, range=(0.1, 5.2))
    /// let mut h = Histogram::new(0.1, 5.2, 2, DType::F16).unwrap();
    /// h.push(d, bytemuck::cast_slice(&values))?;
    /// assert_eq!(h.counts(), [2, 1]);
    /// assert_eq!(h.edges(), [0.0999755859375, 2.650390625, 5.19921875]);
    /// // One number: a range of one around it.
    /// let h = Histogram::new(3.0, 3.0, 2, DType::F32).unwrap();
    /// assert_eq!(h.edges(), [2.5, 3.0, 3.5]);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    /// Use [`Histogram::for_range`] for the range numpy chooses.
    pub fn new(lo: f64, hi: f64, bins: usize, dtype: DType) -> Option<Histogram> {
        if bins == 0 || bins > MAX_BINS || !(lo.is_finite() && hi.is_finite() && lo <= hi) {
            return None;
        }
        let (lo, hi) = if lo == hi {
            (lo - 0.5, hi + 0.5)
        } else {
            (lo, hi)
        };
        let arithmetic = Arithmetic::given(dtype);
        let edges = linspace(lo, hi, bins, Arithmetic::F64, arithmetic)?;
        // numpy compares the array with the ends in the array's type.
        let own = |x: f64| Scalar::float(dtype, x).map_or(x, Scalar::to_f64);
        Some(Histogram {
            bins,
            arithmetic,
            quotient: Arithmetic::F64,
            ends: Ends {
                lo: own(lo),
                hi: own(hi),
                start: arithmetic.round(lo),
                width: hi - lo,
            },
            edges,
            counts: [0; MAX_BINS],
        })
    }

    /// Like [`Histogram::new`] over the range numpy's `histogram` chooses
    /// for finite values from `min` to `max` (values of the array's type,
    /// its minimum and maximum): those, or `min - 0.5` to `max + 0.5` when
    /// they are equal, numpy computing in the array's type throughout:
    /// float64 for integer, bool and float64 arrays, float32 for float32
    /// ones, float16 or bfloat16 (ml_dtypes) arithmetic for those. The
    /// float8s are counted in float64 (numpy's own float8 edges round to
    /// a few values, or are NaN for float8_e8m0fnu).
    pub fn for_range(min: f64, max: f64, bins: usize, dtype: DType) -> Option<Histogram> {
        if bins == 0 || bins > MAX_BINS || !(min.is_finite() && max.is_finite() && min <= max) {
            return None;
        }
        let arithmetic = Arithmetic::of(dtype);
        let r = |x| arithmetic.round(x);
        let (lo, hi) = if min == max {
            (r(min - 0.5), r(max + 0.5))
        } else {
            (r(min), r(max))
        };
        let edges = linspace(lo, hi, bins, arithmetic, arithmetic)?;
        Some(Histogram {
            bins,
            arithmetic,
            quotient: arithmetic,
            ends: Ends {
                lo,
                hi,
                start: lo,
                width: r(hi - lo),
            },
            edges,
            counts: [0; MAX_BINS],
        })
    }

    /// Counts the elements of `descr` in `bytes` that lie in the range,
    /// whole elements only: fails with `ItemsizeMismatch`, counting
    /// nothing, when its length is not a multiple of the itemsize.
    pub fn push(&mut self, descr: Descr, bytes: &[u8]) -> Result<(), Error> {
        whole_elements(descr, bytes)?;
        with_rounding!(self, |r, q| self.count(descr, bytes, r, q));
        Ok(())
    }

    /// numpy's `_histograms_impl` fast path, with `r` rounding each result
    /// to the bins' type and `q` to the quotient's.
    #[inline(always)]
    fn count(
        &mut self,
        descr: Descr,
        bytes: &[u8],
        r: impl Fn(f64) -> f64,
        q: impl Fn(f64) -> f64,
    ) {
        let (ends, bins) = (self.ends, self.bins);
        let edges = &self.edges[..=bins];
        let counts = &mut self.counts[..bins];
        for_each_value(descr, bytes, |x| {
            if let Some(i) = bin(x, &ends, edges, &r, &q) {
                counts[i] += 1;
            }
        });
    }

    /// The count of each bin.
    pub fn counts(&self) -> &[u64] {
        &self.counts[..self.bins]
    }

    /// The `bins + 1` edges, numpy's.
    pub fn edges(&self) -> &[f64] {
        &self.edges[..=self.bins]
    }

    /// Adds the counts of `other`, a histogram with the same bins (of
    /// another part of the array): `false`, adding nothing, when its
    /// edges differ or it bins values otherwise.
    pub fn merge(&mut self, other: &Histogram) -> bool {
        let same = (self.arithmetic, self.quotient, self.ends)
            == (other.arithmetic, other.quotient, other.ends);
        if !same || self.edges() != other.edges() {
            return false;
        }
        for (a, b) in self.counts.iter_mut().zip(other.counts()) {
            *a += b;
        }
        true
    }
}

/// A [`Tally`](super::Tally)'s way in: a key's values binned at once
/// where they share a bin, and the elements it leaves counted by their
/// bits.
#[cfg(feature = "alloc")]
impl Histogram {
    /// Where the values from `a` to `b` (`a <= b`, values of the array's
    /// dtype, every one between them included) are counted: in no bin, all
    /// in one, or in several (or some outside the range).
    pub(super) fn span(&self, a: f64, b: f64) -> Span {
        with_rounding!(self, |r, q| self.span_in(a, b, r, q))
    }

    /// `count`'s steps are each monotonic in the value: the rounding, the
    /// guess (a subtraction, a division and a product by positive numbers,
    /// each rounded, then truncated), and, for one guess, its corrections
    /// (the bin below for values under its lower edge, the one above for
    /// those at or over its upper edge). So when both ends of a run of
    /// values have the same guess and the same bin, every value between
    /// has them too.
    fn span_in(&self, a: f64, b: f64, r: impl Fn(f64) -> f64, q: impl Fn(f64) -> f64) -> Span {
        let (ends, bins) = (&self.ends, self.bins);
        // Not `b < lo || a > hi`: an end that is NaN (a range's end
        // rounded to a float8 that has no such value) keeps nothing.
        if !(b >= ends.lo && a <= ends.hi) {
            return Span::Outside;
        }
        if a < ends.lo || b > ends.hi {
            return Span::Several;
        }
        let (a, b) = (r(a), r(b));
        let (ga, gb) = (guess(a, ends, bins, &r, &q), guess(b, ends, bins, &r, &q));
        let edges = &self.edges[..=bins];
        match (correct(a, ga, edges), correct(b, gb, edges)) {
            (i, j) if ga == gb && i == j => Span::Bin(i),
            _ => Span::Several,
        }
    }

    /// Counts `n` more values in bin `i`.
    pub(super) fn add(&mut self, i: usize, n: u64) {
        self.counts[i] += n;
    }

    /// Counts elements given by their bits, `value` reading each one's
    /// value (a [`Tally`](super::Tally)'s second pass).
    pub(super) fn count_bits(&mut self, run: &[u64], value: fn(u64) -> f64) {
        with_rounding!(self, |r, q| self.count_run(run, value, r, q));
    }

    #[inline(always)]
    fn count_run(
        &mut self,
        run: &[u64],
        value: fn(u64) -> f64,
        r: impl Fn(f64) -> f64,
        q: impl Fn(f64) -> f64,
    ) {
        let (ends, bins) = (self.ends, self.bins);
        let edges = &self.edges[..=bins];
        let counts = &mut self.counts[..bins];
        for &bits in run {
            if let Some(i) = bin(value(bits), &ends, edges, &r, &q) {
                counts[i] += 1;
            }
        }
    }
}
