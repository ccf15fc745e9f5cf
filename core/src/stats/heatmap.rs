use alloc::vec::Vec;

use super::{Reduce, for_each_value, whole_elements};
use crate::{Descr, Error};

/// A 2-D array of `rows × cols` elements (C order) downsampled to an
/// `out_h × out_w` picture as its rows stream in: pixel `(i, j)` is
/// the mean (or the maximum) of the finite elements of rows
/// `i * rows / out_h .. (i + 1) * rows / out_h` and columns
/// `j * cols / out_w .. (j + 1) * cols / out_w` (integer division),
/// NaN where none is finite.
///
/// The array may be larger than memory (`rows × cols` up to 2^64 - 1
/// elements, positions are `u64`s): only the picture is kept, and one row
/// of its sums.
///
/// # Examples
/// ```
/// use bytelens_core::{Descr, Heatmap, Reduce};
/// let d: Descr = "|u1".parse()?;
/// let mut map = Heatmap::new(3, 4, 2, 2, Reduce::Mean).unwrap();
/// map.push(d, &[1, 2, 3, 4, 5, 6])?; // any cut on whole elements
/// map.push(d, &[7, 8, 9, 10, 11, 12])?;
/// // Row 0 alone, then rows 1 and 2; columns 0..2 and 2..4.
/// assert_eq!(map.values(), [1.5, 3.5, 7.5, 9.5]);
/// assert_eq!(map.range(), Some((1.5, 9.5)));
/// assert!(map.is_done());
/// # Ok::<(), bytelens_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Heatmap {
    rows: u64,
    cols: u64,
    out_h: usize,
    out_w: usize,
    reduce: Reduce,
    /// The next element's row and column.
    row: u64,
    col: u64,
    /// The output row being gathered, and its columns' sums (or
    /// maxima) and counts of finite values.
    out_row: usize,
    acc: Vec<f64>,
    finite: Vec<u64>,
    /// The first input column of each output column.
    /// INVARIANT: `col_start[j] = j * cols / out_w`, with
    /// `col_start[out_w] = cols`.
    col_start: Vec<u64>,
    values: Vec<f32>,
}

impl Heatmap {
    /// An empty picture. `None` unless `1 <= out_h <= rows` and `1 <=
    /// out_w <= cols`, with `rows * cols` within `u64`, and the picture's
    /// memory allocated (`4 × out_h × out_w` bytes, and 24 a column for
    /// its row being gathered): a picture that does not fit is `None`,
    /// never an abort.
    pub fn new(
        rows: u64,
        cols: u64,
        out_h: usize,
        out_w: usize,
        reduce: Reduce,
    ) -> Option<Heatmap> {
        if out_h == 0 || out_w == 0 || out_h as u64 > rows || out_w as u64 > cols {
            return None;
        }
        rows.checked_mul(cols)?;
        let pixels = out_h.checked_mul(out_w)?;
        let col_start =
            (0..=out_w as u64).map(|j| (u128::from(j) * u128::from(cols) / out_w as u128) as u64);
        Some(Heatmap {
            rows,
            cols,
            out_h,
            out_w,
            reduce,
            row: 0,
            col: 0,
            out_row: 0,
            acc: filled(out_w, 0.0)?,
            finite: filled(out_w, 0)?,
            col_start: collected(out_w.checked_add(1)?, col_start)?,
            values: filled(pixels, f32::NAN)?,
        })
    }

    /// The first input row of output row `i`.
    fn row_start(&self, i: usize) -> u64 {
        (i as u128 * u128::from(self.rows) / self.out_h as u128) as u64
    }

    /// The elements still to come.
    pub fn left(&self) -> u64 {
        self.rows * self.cols - (self.row * self.cols + self.col)
    }

    /// Adds the next elements of the array (C order), from where the
    /// last call stopped; any number of whole elements. Fails, adding
    /// nothing, with `ItemsizeMismatch` for a partial element and with
    /// `CountMismatch` for more elements than the array has left.
    pub fn push(&mut self, descr: Descr, bytes: &[u8]) -> Result<(), Error> {
        let n = whole_elements(descr, bytes)?;
        let left = self.left();
        if n as u64 > left {
            let total = self.rows * self.cols;
            let (expected, got) = match (usize::try_from(total), usize::try_from(total - left)) {
                (Ok(total), Ok(pushed)) if pushed.checked_add(n).is_some() => (total, pushed + n),
                // A total past a 32-bit usize: the elements left (fewer
                // than n), and those given.
                _ => (left as usize, n),
            };
            return Err(Error::CountMismatch { expected, got });
        }
        let mut j = self.output_column(self.col);
        let mut next_col = self.col_start[j + 1];
        let mut next_row = self.row_start(self.out_row + 1);
        let reduce = self.reduce;
        for_each_value(descr, bytes, |x| {
            if self.col == next_col {
                j += 1;
                next_col = self.col_start[j + 1];
            }
            if x.is_finite() {
                let acc = &mut self.acc[j];
                *acc = match (reduce, self.finite[j]) {
                    (Reduce::Mean, _) => *acc + x,
                    (Reduce::Max, 0) => x,
                    (Reduce::Max, _) => acc.max(x),
                };
                self.finite[j] += 1;
            }
            self.col += 1;
            if self.col == self.cols {
                (self.col, j, next_col) = (0, 0, self.col_start[1]);
                self.row += 1;
                if self.row == next_row {
                    self.finish_row();
                    next_row = self.row_start(self.out_row + 1);
                }
            }
        });
        Ok(())
    }

    /// The output column of input column `col`.
    fn output_column(&self, col: u64) -> usize {
        // The last j with col_start[j] <= col.
        self.col_start.partition_point(|&start| start <= col) - 1
    }

    /// Writes the output row being gathered and starts the next.
    fn finish_row(&mut self) {
        let at = self.out_row * self.out_w;
        for (j, value) in self.values[at..at + self.out_w].iter_mut().enumerate() {
            let n = self.finite[j];
            *value = match (n, self.reduce) {
                (0, _) => f32::NAN,
                (_, Reduce::Mean) => (self.acc[j] / n as f64) as f32,
                (_, Reduce::Max) => self.acc[j] as f32,
            };
        }
        self.acc.fill(0.0);
        self.finite.fill(0);
        self.out_row += 1;
    }

    /// Whether every element has been pushed.
    pub fn is_done(&self) -> bool {
        self.row == self.rows
    }

    /// Writes the output row still being gathered, from the elements
    /// pushed so far (for a stream cut short: its pixels then cover
    /// fewer rows); nothing when the rows are all in or none of it
    /// has come. Pushing more afterwards is refused as past the end.
    pub fn finish(&mut self) {
        if !self.is_done() && (self.row > self.row_start(self.out_row) || self.col > 0) {
            self.finish_row();
        }
        self.row = self.rows;
        self.col = 0;
    }

    /// The picture, `out_h × out_w` in C order (NaN where no finite
    /// element is, or none has come yet).
    pub fn values(&self) -> &[f32] {
        &self.values
    }

    /// The smallest and largest finite pixel, for a colour scale;
    /// `None` when no pixel is finite.
    pub fn range(&self) -> Option<(f32, f32)> {
        self.values
            .iter()
            .filter(|v| v.is_finite())
            .fold(None, |range, &v| match range {
                None => Some((v, v)),
                Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
            })
    }
}

/// `n` copies of `value`, or `None` when memory for them cannot be had.
fn filled<T: Clone>(n: usize, value: T) -> Option<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).ok()?;
    v.resize(n, value);
    Some(v)
}

/// The `n` items of `items`, or `None` when memory for them cannot be had.
fn collected<T>(n: usize, items: impl Iterator<Item = T>) -> Option<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).ok()?;
    v.extend(items);
    Some(v)
}
