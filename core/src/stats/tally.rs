use alloc::boxed::Box;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use half::{bf16, f16};

use super::histogram::Span;
use super::{Histogram, each, whole_elements};
use crate::{DType, Descr, Error, Scalar};

/// The keys a [`Tally`] counts by: an element's leading 16 bits.
const KEYS: usize = 1 << 16;

/// An array's elements counted by their leading 16 bits, in the pass that
/// finds its range, so that numpy's histogram over that range needs to
/// read again only the elements near its edges.
///
/// The key of an element is its first 16 bits as a number (all of them for
/// types of one or two bytes): a float32's sign, exponent and seven
/// leading fraction bits, a float64's sign, exponent and four, an int32's
/// top half. The elements of one key lie between two values, its ends;
/// [`Tally::count`] counts every key whose ends fall in one bin there at
/// once, and leaves the others to a second pass over the bytes
/// ([`Rest::push`]), which counts only their elements. For float16,
/// bfloat16, the float8s and the 8- and 16-bit integers every key is one
/// value and nothing is left; for float32 values spread over the 64 bins,
/// a few percent of them.
///
/// The counts are numpy's exactly: [`Histogram::push`] counts an element in
/// steps that each rise with its value, so when both ends of a key land in
/// the same bin by the same steps, so does every element between them.
///
/// # Examples
/// ```
/// use bytelens_core::{Descr, Histogram, Stats, Tally};
/// let d: Descr = "<f4".parse()?;
/// let values = [0.1f32, 0.25, 0.5, 0.7, 1.0, f32::NAN, 0.3];
/// let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
/// // The first pass: the range, and the tally.
/// let (mut stats, mut tally) = (Stats::new(), Tally::new(d));
/// stats.push(d, &bytes)?;
/// tally.push(&bytes)?;
/// let hist = Histogram::for_range(stats.min().unwrap(), stats.max().unwrap(), 4, d.dtype).unwrap();
/// let mut rest = tally.count(hist);
/// // The keys of 0.1 and 1.0, the ends, reach past the range: read again.
/// assert_eq!(rest.left(), 2);
/// rest.push(&bytes)?;
/// assert_eq!(rest.histogram().counts(), [3, 1, 1, 1]); // np.histogram's
/// # Ok::<(), bytelens_core::Error>(())
/// ```
#[derive(Clone)]
pub struct Tally {
    descr: Descr,
    counts: Box<[u64; KEYS]>,
    /// [`Tally::push_keyed`]'s counts of one chunk, then where each key's
    /// elements go; all zeros between calls.
    scratch: Option<Box<[u32; KEYS]>>,
}

impl PartialEq for Tally {
    fn eq(&self, other: &Tally) -> bool {
        self.descr == other.descr && self.counts == other.counts
    }
}

impl fmt::Debug for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys = self.counts.iter().filter(|&&n| n > 0).count();
        let elements: u64 = self.counts.iter().sum();
        f.debug_struct("Tally")
            .field("descr", &self.descr)
            .field("elements", &elements)
            .field("keys", &keys)
            .finish()
    }
}

/// How far an element's bits are shifted for its key.
fn shift(dtype: DType) -> u32 {
    (dtype.size() as u32 * 8).saturating_sub(16)
}

fn key(bits: u64, shift: u32) -> usize {
    (bits >> shift) as usize & (KEYS - 1)
}

/// The bytes of an element below its key, which a keyed chunk keeps.
fn low_bytes(dtype: DType) -> usize {
    dtype.size().saturating_sub(2)
}

/// The elements of one record of a keyed chunk at most (its counts are
/// `u32`s).
const RECORD: usize = 1 << 30;

fn zeros<T: Clone + Default, const N: usize>() -> Box<[T; N]> {
    let v = vec![T::default(); N].into_boxed_slice();
    v.try_into().ok().expect("N elements")
}

/// Like [`zeros`], but `None` where the memory cannot be had.
fn try_zeros<T: Clone + Default, const N: usize>() -> Option<Box<[T; N]>> {
    let mut v = Vec::new();
    v.try_reserve_exact(N).ok()?;
    v.resize(N, T::default());
    v.into_boxed_slice().try_into().ok()
}

impl Tally {
    /// No elements yet, of `descr` (any dtype, either byte order); `None`
    /// where the memory of its counts (512 KiB) cannot be had.
    pub fn try_new(descr: Descr) -> Option<Tally> {
        Some(Tally {
            descr,
            counts: try_zeros()?,
            scratch: None,
        })
    }

    /// Like [`Tally::try_new`], but panics.
    ///
    /// # Panics
    /// Where the memory of its counts (512 KiB) cannot be had.
    pub fn new(descr: Descr) -> Tally {
        Tally::try_new(descr).expect("512 KiB for a tally's counts")
    }

    /// The elements' type.
    pub fn descr(&self) -> Descr {
        self.descr
    }

    /// Whether each key is one value (dtypes of one or two bytes): then
    /// [`Tally::count`] leaves nothing for a second pass.
    pub fn is_exact(&self) -> bool {
        shift(self.descr.dtype) == 0
    }

    /// Counts the elements in `bytes`, whole elements only: fails with
    /// `ItemsizeMismatch`, counting nothing, when its length is not a
    /// multiple of the itemsize.
    pub fn push(&mut self, bytes: &[u8]) -> Result<(), Error> {
        whole_elements(self.descr, bytes)?;
        let (s, counts) = (shift(self.descr.dtype), &mut *self.counts);
        for_each_bits(self.descr, bytes, |bits| counts[key(bits, s)] += 1);
        Ok(())
    }

    /// Counts the elements in `bytes` as [`Tally::push`] does, and appends
    /// them to `out` keyed, for [`Rest::push_keyed`]: sorted by key and
    /// kept as their bytes below it (two of a float32's four, six of a
    /// float64's eight, none of a one- or two-byte element), so that a
    /// second pass reads half of a float32 array's bytes or less, and
    /// touches only the keys it wants. Its layout, in little-endian
    /// `u32`s: the number of keys `K`, then `K` pairs of a key and its
    /// count, then each key's elements' low bytes in that order (a record;
    /// a chunk of more than 2^30 elements is several).
    /// [`Tally::keyed_len`] bounds its length.
    pub fn push_keyed(&mut self, bytes: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
        whole_elements(self.descr, bytes)?;
        let size = self.descr.dtype.size();
        // Saturating: a buffer that wide holds fewer elements than a record.
        for part in bytes.chunks(RECORD.saturating_mul(size)) {
            self.keyed_record(part, out);
        }
        Ok(())
    }

    /// The most bytes [`Tally::push_keyed`] appends for `nbytes` bytes of
    /// elements (whole ones) pushed in one call.
    pub fn keyed_len(&self, nbytes: usize) -> usize {
        let size = self.descr.dtype.size();
        let n = nbytes / size;
        let records = n.div_ceil(RECORD).max(1);
        let keys = n.min(KEYS * records);
        (records * 4)
            .saturating_add(keys.saturating_mul(8))
            .saturating_add(n.saturating_mul(low_bytes(self.descr.dtype)))
    }

    fn keyed_record(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
        let (descr, s) = (self.descr, shift(self.descr.dtype));
        let low = low_bytes(descr.dtype);
        let at = self.scratch.get_or_insert_with(zeros);
        for_each_bits(descr, bytes, |bits| at[key(bits, s)] += 1);
        // The table, and each key's first place among the lows.
        let start = out.len();
        out.extend_from_slice(&[0; 4]);
        let (mut keys, mut next) = (0u32, 0u32);
        for (k, slot) in at.iter_mut().enumerate() {
            let n = *slot;
            if n == 0 {
                continue;
            }
            self.counts[k] += u64::from(n);
            out.extend_from_slice(&(k as u32).to_le_bytes());
            out.extend_from_slice(&n.to_le_bytes());
            keys += 1;
            *slot = next;
            next += n;
        }
        out[start..start + 4].copy_from_slice(&keys.to_le_bytes());
        let base = out.len();
        out.resize(base + next as usize * low, 0);
        let lows = &mut out[base..];
        match low {
            0 => {}
            2 => scatter::<2>(descr, bytes, s, at, lows),
            _ => scatter::<6>(descr, bytes, s, at, lows),
        }
        at.fill(0);
    }

    /// Adds the counts of `other`, a tally of another part of the array:
    /// `false`, adding nothing, when its dtype differs.
    pub fn merge(&mut self, other: &Tally) -> bool {
        if self.descr.dtype != other.descr.dtype {
            return false;
        }
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
        true
    }

    /// `hist` with the elements counted that it can count from the keys
    /// alone: each key's elements at once where its two ends land in one
    /// bin, none where they lie outside its range (NaN and infinities
    /// among them). The others are the [`Rest`]'s: push the same bytes
    /// again to count them.
    pub fn count(&self, mut hist: Histogram) -> Rest {
        let dtype = self.descr.dtype;
        let (s, value) = (shift(dtype), decoder(dtype));
        let mask = (1u64 << s) - 1;
        let mut keys = Box::new([0u64; KEYS / 64]);
        let mut left = 0;
        for (k, &n) in self.counts.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let first = (k as u64) << s;
            let (a, b) = (value(first), value(first | mask));
            let (a, b) = if a <= b { (a, b) } else { (b, a) };
            // A key whose ends are NaN holds no finite value (a float's
            // exponent is all in its key): its elements are never counted.
            let span = if a.is_nan() || b.is_nan() {
                Span::Outside
            } else {
                hist.span(a, b)
            };
            match span {
                Span::Outside => {}
                Span::Bin(i) => hist.add(i, n),
                Span::Several => {
                    keys[k / 64] |= 1 << (k % 64);
                    left += n;
                }
            }
        }
        Rest {
            hist,
            descr: self.descr,
            keys,
            left,
        }
    }
}

/// A histogram counted from a [`Tally`], less the elements of the keys
/// that span more than one bin: [`Rest::push`] the array's bytes again
/// (all of them, in any chunks) to count those.
#[derive(Clone, Debug, PartialEq)]
pub struct Rest {
    hist: Histogram,
    descr: Descr,
    /// A bit for each key whose elements the bytes must count.
    keys: Box<[u64; KEYS / 64]>,
    left: u64,
}

impl Rest {
    /// How many elements the second pass counts: 0 when the tally counted
    /// them all (and nothing need be read again).
    pub fn left(&self) -> u64 {
        self.left
    }

    /// Counts the elements in `bytes` that the tally left, whole elements
    /// only (`ItemsizeMismatch` otherwise, counting nothing). Give it the
    /// bytes the tally counted, once each.
    pub fn push(&mut self, bytes: &[u8]) -> Result<(), Error> {
        whole_elements(self.descr, bytes)?;
        if self.left == 0 {
            return Ok(());
        }
        let (s, keys) = (shift(self.descr.dtype), &*self.keys);
        push_kept(&mut self.hist, self.descr, bytes, |bits| {
            is_left(keys, key(bits, s))
        });
        Ok(())
    }

    /// Counts the elements the tally left among those of `keyed`, chunks
    /// that [`Tally::push_keyed`] wrote (one or several, each once, of
    /// the tally's dtype): only the keys left are read. A `keyed` cut
    /// short or not of that layout fails with `LengthMismatch`, its
    /// records before the fault counted.
    pub fn push_keyed(&mut self, keyed: &[u8]) -> Result<(), Error> {
        let dtype = self.descr.dtype;
        let (s, low) = (shift(dtype), low_bytes(dtype));
        let broken = |expected, got| Error::LengthMismatch {
            what: "keyed chunk",
            expected,
            got,
        };
        let word = |b: &[u8], i: usize| -> usize {
            u32::from_le_bytes(b[4 * i..4 * i + 4].try_into().expect("4 bytes")) as usize
        };
        let mut rest = keyed;
        let mut runs = Runs::new();
        while !rest.is_empty() {
            if rest.len() < 4 {
                return Err(broken(4, rest.len()));
            }
            let keys = word(rest, 0);
            let table = keys
                .checked_mul(8)
                .and_then(|t| t.checked_add(4))
                .filter(|&t| t <= rest.len())
                .ok_or(broken(keys.saturating_mul(8).saturating_add(4), rest.len()))?;
            let entries = &rest[4..table];
            let mut total = 0usize;
            for i in 0..keys {
                let (k, n) = (word(entries, 2 * i), word(entries, 2 * i + 1));
                if k >= KEYS {
                    return Err(broken(KEYS, k));
                }
                total = total.saturating_add(n);
            }
            let end = total
                .checked_mul(low)
                .and_then(|b| b.checked_add(table))
                .filter(|&e| e <= rest.len())
                .ok_or(broken(
                    total.saturating_mul(low).saturating_add(table),
                    rest.len(),
                ))?;
            let mut lows = &rest[table..end];
            for i in 0..keys {
                let (k, n) = (word(entries, 2 * i), word(entries, 2 * i + 1));
                let (these, after) = lows.split_at(n * low);
                lows = after;
                if !is_left(&self.keys, k) {
                    continue;
                }
                let high = (k as u64) << s;
                let mut one = |bits: u64| runs.add(&mut self.hist, dtype, bits, true);
                if low == 0 {
                    (0..n).for_each(|_| one(high));
                } else {
                    for b in these.chunks_exact(low) {
                        let mut w = [0u8; 8];
                        w[..low].copy_from_slice(b);
                        one(high | u64::from_le_bytes(w));
                    }
                }
            }
            rest = &rest[end..];
        }
        runs.finish(&mut self.hist, dtype);
        Ok(())
    }

    /// The histogram so far.
    pub fn histogram(&self) -> &Histogram {
        &self.hist
    }

    /// The histogram, once the bytes have been pushed again.
    pub fn into_histogram(self) -> Histogram {
        self.hist
    }
}

/// Whether the tally left key `k` (its bit in `keys` set).
fn is_left(keys: &[u64; KEYS / 64], k: usize) -> bool {
    keys[k / 64] >> (k % 64) & 1 != 0
}

/// Elements a second pass gathers before it counts them.
const RUN: usize = 256;

/// The elements a second pass keeps, gathered by their bits and counted a
/// run at a time.
struct Runs {
    run: [u64; RUN],
    len: usize,
}

impl Runs {
    fn new() -> Runs {
        Runs {
            run: [0; RUN],
            len: 0,
        }
    }

    /// Gathers `bits` where `keep` (without a branch), counting a full run
    /// into `hist`.
    #[inline(always)]
    fn add(&mut self, hist: &mut Histogram, dtype: DType, bits: u64, keep: bool) {
        // `len` is below RUN here; the mask says so to the compiler.
        self.run[self.len % RUN] = bits;
        self.len += usize::from(keep);
        if self.len == RUN {
            hist.count_bits(&self.run, decoder(dtype));
            self.len = 0;
        }
    }

    /// Counts what is gathered.
    fn finish(self, hist: &mut Histogram, dtype: DType) {
        hist.count_bits(&self.run[..self.len], decoder(dtype));
    }
}

/// Counts the elements of `descr` in `bytes` whose bits `keep` keeps into
/// `hist`, as [`Histogram::push`] counts them. The few kept are gathered
/// in runs (without a branch) and counted a run at a time, so that the
/// loop over the many others stays a load, a shift and a test.
fn push_kept(hist: &mut Histogram, descr: Descr, bytes: &[u8], keep: impl Fn(u64) -> bool) {
    let mut runs = Runs::new();
    for_each_bits(descr, bytes, |bits| {
        runs.add(hist, descr.dtype, bits, keep(bits))
    });
    runs.finish(hist, descr.dtype);
}

/// Writes each element's low `L` bytes (little-endian) at its key's next
/// place in `lows`, `at` holding each key's first.
fn scatter<const L: usize>(
    descr: Descr,
    bytes: &[u8],
    s: u32,
    at: &mut [u32; KEYS],
    lows: &mut [u8],
) {
    for_each_bits(descr, bytes, |bits| {
        let k = key(bits, s);
        let p = at[k] as usize * L;
        at[k] += 1;
        lows[p..p + L].copy_from_slice(&bits.to_le_bytes()[..L]);
    });
}

/// Calls `f` with the bits of each element of `descr` in `bytes` (a
/// number of its size, in native byte order).
#[inline(always)]
fn for_each_bits(descr: Descr, bytes: &[u8], mut f: impl FnMut(u64)) {
    let o = descr.order;
    match descr.dtype.size() {
        1 => each::<1>(bytes, o, |b| f(u64::from(b[0]))),
        2 => each(bytes, o, |b| f(u64::from(u16::from_ne_bytes(b)))),
        4 => each(bytes, o, |b| f(u64::from(u32::from_ne_bytes(b)))),
        _ => each(bytes, o, |b| f(u64::from_ne_bytes(b))),
    }
}

/// An element's value from its bits, as `for_each_value` reads it.
fn decoder(dtype: DType) -> fn(u64) -> f64 {
    fn float8(dtype: DType, bits: u64) -> f64 {
        Scalar::read(Descr::native(dtype), &[bits as u8]).map_or(f64::NAN, Scalar::to_f64)
    }
    match dtype {
        DType::Bool => |b| f64::from(u8::from(b != 0)),
        DType::U8 => |b| f64::from(b as u8),
        DType::I8 => |b| f64::from(b as u8 as i8),
        DType::U16 => |b| f64::from(b as u16),
        DType::I16 => |b| f64::from(b as u16 as i16),
        DType::U32 => |b| f64::from(b as u32),
        DType::I32 => |b| f64::from(b as u32 as i32),
        DType::U64 => |b| b as f64,
        DType::I64 => |b| b as i64 as f64,
        DType::F16 => |b| f16::from_bits(b as u16).to_f64(),
        DType::BF16 => |b| bf16::from_bits(b as u16).to_f64(),
        DType::F32 => |b| f64::from(f32::from_bits(b as u32)),
        DType::F64 => f64::from_bits,
        DType::F8E4M3FN => |b| float8(DType::F8E4M3FN, b),
        DType::F8E5M2 => |b| float8(DType::F8E5M2, b),
        DType::F8E8M0FNU => |b| float8(DType::F8E8M0FNU, b),
    }
}
