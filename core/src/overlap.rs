//! Exact "do these two views share a byte?", like `np.shares_memory`.
#![forbid(unsafe_code)]

use crate::{Error, Layout, MAX_NDIM};

/// The answer of [`Layout::overlaps`].
///
/// # Examples
/// ```
/// use bytelens_core::{DType, Layout, Overlap};
/// let a = Layout::contiguous(DType::U8, &[4])?;
/// assert_eq!(a.overlaps(&a.with_offset(4)?, 10)?, Overlap::No);
/// # Ok::<(), bytelens_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overlap {
    /// No byte is touched by both layouts.
    No,
    /// At least one byte is touched by both.
    Yes,
    /// The work bound ran out before the question was settled.
    Unknown,
}

/// One term `coef * x` with `0 <= x <= max`.
#[derive(Clone, Copy, Default)]
struct Term {
    coef: i128,
    max: i128,
}

impl Layout {
    /// Whether `self` and `other`, over the same buffer, touch a common byte.
    ///
    /// Exact, like `np.shares_memory(a, b, max_work)`: the question is a
    /// bounded linear Diophantine problem (NP-hard in general), solved by a
    /// pruned search that gives up with [`Overlap::Unknown`] after `max_work`
    /// steps. Disjoint byte spans, equal strides and interleavings that a
    /// gcd rules out are answered in O(ndim). Fails only with `Overflow`.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout, Overlap};
    /// let all = Layout::contiguous(DType::U32, &[8])?;
    /// let evens = all.slice(0, None, None, 2)?;
    /// let odds = all.slice(0, Some(1), None, 2)?;
    /// assert_eq!(evens.overlaps(&odds, 1000)?, Overlap::No);
    /// assert_eq!(evens.overlaps(&all, 1000)?, Overlap::Yes);
    /// // The uint16 halves of element 1 share bytes with the odds, not the evens.
    /// let halves = all.slice(0, Some(1), Some(2), 1)?.reinterpret(DType::U16)?;
    /// assert_eq!(halves.overlaps(&odds, 1000)?, Overlap::Yes);
    /// assert_eq!(halves.overlaps(&evens, 1000)?, Overlap::No);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn overlaps(&self, other: &Layout, max_work: usize) -> Result<Overlap, Error> {
        let (a, b) = (self.byte_span()?, other.byte_span()?);
        if self.size() == 0 || other.size() == 0 || a.end <= b.start || b.end <= a.start {
            return Ok(Overlap::No);
        }
        // Element x of `self` at byte p and element y of `other` at byte q
        // share a byte iff  p < q + size_b  and  q < p + size_a,
        // that is  -(size_a - 1) <= p - q <= size_b - 1.
        // Write p - q = base + sum(coef * x) with every coef > 0 by flipping
        // axes with the "wrong" sign (x -> max - x).
        let mut terms = [Term::default(); 2 * MAX_NDIM];
        let mut n = 0;
        let mut base = self.offset() as i128 - other.offset() as i128;
        for (layout, sign) in [(self, 1i128), (other, -1i128)] {
            for (&len, &stride) in layout.shape().iter().zip(layout.strides()) {
                let coef = sign * stride as i128;
                let max = len as i128 - 1;
                if coef == 0 || max == 0 {
                    continue;
                }
                if coef < 0 {
                    base += coef * max;
                }
                terms[n] = Term {
                    coef: coef.abs(),
                    max,
                };
                n += 1;
            }
        }
        let lo = -(self.dtype().size() as i128 - 1) - base;
        let hi = other.dtype().size() as i128 - 1 - base;
        let terms = merge_equal_coefs(&mut terms[..n]);
        let mut work = max_work;
        Ok(match Search::new(terms).solve(0, lo, hi, &mut work) {
            Some(true) => Overlap::Yes,
            Some(false) => Overlap::No,
            None => Overlap::Unknown,
        })
    }
}

/// Sorts by falling coefficient and merges equal ones: `c*x + c*y` with
/// `x <= m`, `y <= k` reaches exactly the values of `c*z` with `z <= m + k`.
fn merge_equal_coefs(terms: &mut [Term]) -> &[Term] {
    terms.sort_unstable_by_key(|t| core::cmp::Reverse(t.coef));
    let mut kept = 0;
    for i in 0..terms.len() {
        if kept > 0 && terms[kept - 1].coef == terms[i].coef {
            terms[kept - 1].max += terms[i].max;
        } else {
            terms[kept] = terms[i];
            kept += 1;
        }
    }
    &terms[..kept]
}

fn gcd(mut a: i128, mut b: i128) -> i128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Floor and ceiling division for a positive divisor.
fn div_floor(a: i128, d: i128) -> i128 {
    a.div_euclid(d)
}

fn div_ceil(a: i128, d: i128) -> i128 {
    -(-a).div_euclid(d)
}

/// Is there `x` with `0 <= x_i <= max_i` and `lo <= sum(coef_i * x_i) <= hi`?
struct Search<'t> {
    terms: &'t [Term],
    /// `reach[i]`: the largest sum of terms `i..`.
    reach: [i128; 2 * MAX_NDIM + 1],
    /// `gcds[i]`: the gcd of the coefficients of terms `i..` (0 for none).
    gcds: [i128; 2 * MAX_NDIM + 1],
}

impl<'t> Search<'t> {
    fn new(terms: &'t [Term]) -> Search<'t> {
        let mut reach = [0; 2 * MAX_NDIM + 1];
        let mut gcds = [0; 2 * MAX_NDIM + 1];
        for i in (0..terms.len()).rev() {
            reach[i] = reach[i + 1] + terms[i].coef * terms[i].max;
            gcds[i] = gcd(terms[i].coef, gcds[i + 1]);
        }
        Search { terms, reach, gcds }
    }

    /// `Some(answer)`, or `None` when `work` ran out.
    fn solve(&self, i: usize, lo: i128, hi: i128, work: &mut usize) -> Option<bool> {
        let (lo, hi) = (lo.max(0), hi.min(self.reach[i]));
        if lo > hi {
            return Some(false);
        }
        let Some(term) = self.terms.get(i) else {
            return Some(true); // lo <= 0 <= hi
        };
        let g = self.gcds[i];
        if div_ceil(lo, g) * g > hi {
            return Some(false);
        }
        if i + 1 == self.terms.len() {
            // hi <= coef * max, so the smallest fitting x is within range.
            return Some(div_ceil(lo, term.coef) * term.coef <= hi);
        }
        let first = div_ceil(lo - self.reach[i + 1], term.coef).max(0);
        let last = div_floor(hi, term.coef).min(term.max);
        let mut x = first;
        while x <= last {
            *work = work.checked_sub(1)?;
            let used = term.coef * x;
            if self.solve(i + 1, lo - used, hi - used, work)? {
                return Some(true);
            }
            x += 1;
        }
        Some(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;

    #[test]
    fn work_bound_gives_unknown() {
        // Strides 7, 5 and 3 (gcd 1): no shortcut applies, the search must
        // step, and a bound of zero steps gives up.
        let a = Layout::new(DType::U8, 0, &[50, 50], &[7, 5]).unwrap();
        let b = Layout::new(DType::U8, 1, &[50], &[3]).unwrap();
        assert_eq!(a.overlaps(&b, 0).unwrap(), Overlap::Unknown);
        assert_eq!(a.overlaps(&b, 100).unwrap(), Overlap::Yes);
        // Multiples of 100 against offsets 1 + 300k: the gcd settles it at once.
        let a = Layout::new(DType::U8, 0, &[50, 50], &[700, 500]).unwrap();
        let b = Layout::new(DType::U8, 1, &[50], &[300]).unwrap();
        assert_eq!(a.overlaps(&b, 0).unwrap(), Overlap::No);
    }

    #[test]
    fn broadcast_and_empty() {
        let row = Layout::contiguous(DType::F32, &[4]).unwrap();
        let grid = row.broadcast_to(&[3, 4]).unwrap();
        assert_eq!(grid.overlaps(&row, 10).unwrap(), Overlap::Yes);
        let empty = row.slice(0, Some(2), Some(2), 1).unwrap();
        assert_eq!(empty.overlaps(&row, 10).unwrap(), Overlap::No);
    }
}
