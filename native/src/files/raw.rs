//! Raw files for [`inspect_raw`](super::inspect_raw): a file of no format,
//! described as one view (a [`ViewArgs`], what `Buffer.view` takes) and/or
//! a plan's fields, each placed and checked by the core against the file's
//! size; and [`elements`], the elements of a view that start in a range of
//! bytes, in the view's order (the inspect command's hexdump).
//!
//! The byte range of a view is the core's ([`Layout::byte_span`]), never
//! C order's: a negative stride reaches below the offset, a zero stride
//! repeats an element, and a Fortran-order array is walked by its strides.

use std::ops::Range;

use super::error::Error;
use super::report::{ArrayInfo, Report};
use super::text::quote;
use crate::{Layout, LayoutError, OwnedPlan, ViewArgs};

/// The most steps [`elements`] takes over one range of bytes: a view whose
/// elements overlap (strides shorter than its elements) can put more
/// elements in a few bytes than are worth listing.
pub const BUDGET: usize = 1 << 16;

/// The report of a raw file at `path` of `size` bytes, already opened (the
/// file itself is not read): `plan`'s fields, each at its offset in the
/// plan, then `view`, resolved against the size as `Buffer.view` resolves
/// its arguments (without a shape, every element from the offset to the
/// end, which must be a whole number of them). Each is checked against the
/// size; an error is the core's, its message after the file's path and,
/// for a field, `field 'name'`. [`inspect_raw`](super::inspect_raw) opens
/// the file and calls this.
///
/// # Examples
/// ```
/// use bytelens::{ByteOrder, DType, Descr, ViewArgs, files};
/// let view = ViewArgs { offset: 12, shape: Some(&[4]), strides: Some(&[-4]), ..ViewArgs::new(Descr::new(DType::I32, ByteOrder::Little)) };
/// let report = files::describe_raw("r.bin", 16, Some(view), None)?;
/// let a = &report.arrays[0];
/// assert_eq!((a.name.as_str(), a.offset, a.span), ("view", 12, Some((0, 16))));
/// assert!(report.to_string().ends_with("view  <i4    (4,)   0..16  4      view"), "{report}");
/// let err = files::describe_raw("r.bin", 14, Some(view), None).unwrap_err();
/// assert_eq!(err.to_string(), "r.bin: the view reaches bytes 0..16 but the buffer holds 14 bytes");
/// # Ok::<(), files::Error>(())
/// ```
pub fn describe_raw(
    path: &str,
    size: u64,
    view: Option<ViewArgs<'_>>,
    plan: Option<&OwnedPlan>,
) -> Result<Report, Error> {
    let len = usize::try_from(size).unwrap_or(usize::MAX);
    let mut arrays = Vec::new();
    for field in plan.iter().flat_map(|p| p.fields()) {
        let named = |source: LayoutError| Error::Layout {
            message: format!("{path}: field {}: {source}", quote(&field.name, 40)),
            source,
        };
        // As `Layout(descr, shape, offset=at)` makes it: no buffer yet.
        let args = ViewArgs {
            offset: isize::try_from(field.offset).unwrap_or(isize::MAX),
            shape: Some(&field.shape),
            ..ViewArgs::new(field.descr)
        };
        let layout = args.resolve(None).map_err(named)?;
        layout.check(len).map_err(named)?;
        arrays.push(raw_info(&field.name, &layout).map_err(named)?);
    }
    if let Some(args) = view {
        let named = |source: LayoutError| Error::Layout {
            message: format!("{path}: {source}"),
            source,
        };
        // `resolve` checks the layout against the length it is given.
        let layout = args.resolve(Some(len)).map_err(named)?;
        arrays.push(raw_info("view", &layout).map_err(named)?);
    }
    Ok(Report {
        path: path.to_owned(),
        format: "raw",
        size,
        arrays,
        metadata: Vec::new(),
        version: None,
    })
}

/// `layout` (checked against the file) as the report's array `name`: its
/// dtype as the type string, and the bytes its elements lie in.
fn raw_info(name: &str, layout: &Layout) -> Result<ArrayInfo, LayoutError> {
    let span = layout.byte_span()?;
    // A checked layout lies inside the file: no number here is negative.
    let whole = |n: isize| n.max(0) as u64;
    Ok(ArrayInfo {
        name: name.to_owned(),
        dtype: layout.descr().to_string(),
        descr: Some(layout.descr()),
        shape: layout.shape().iter().map(|&n| n as u64).collect(),
        strides: Some(layout.strides().iter().map(|&s| s as i64).collect()),
        offset: whole(layout.offset()),
        nbytes: layout.nbytes() as u64,
        copy: None,
        member: None,
        unavailable: None,
        shard: None,
        ggml: None,
        span: Some((whole(span.start), whole(span.end))),
    })
}

/// A raw file's plan from its text (`OwnedPlan::to_text`'s), an error
/// naming the file: `"{path}: its plan: {err}"`.
///
/// # Examples
/// ```
/// let plan = bytelens::files::read_plan("r.bin", "H\na <u2 2\n")?;
/// assert_eq!(plan.get("a").map(|f| f.nbytes), Some(4));
/// let err = bytelens::files::read_plan("r.bin", "H\na <u2 zz\n").unwrap_err();
/// assert!(err.to_string().starts_with("r.bin: its plan: "), "{err}");
/// # Ok::<(), bytelens::files::Error>(())
/// ```
pub fn read_plan(path: &str, text: &str) -> Result<OwnedPlan, Error> {
    OwnedPlan::from_text(text).map_err(|source| Error::Layout {
        message: format!("{path}: its plan: {source}"),
        source,
    })
}

/// The elements of a view (its byte `offset`, `shape` and byte `strides`)
/// whose first byte lies in `bytes`, in the view's order (C order of its
/// indices, whatever the strides): `(index, byte)` pairs, at most `limit`,
/// and whether some were left out.
///
/// Takes time for the elements found, not for the view's size: the axes
/// that move (nonzero stride, length over 1) are searched widest stride
/// first, each index range cut to what can still reach `bytes`; the axes
/// that do not move repeat what was found. A view of overlapping elements
/// stops after [`BUDGET`] steps (and says some were left out).
///
/// # Examples
/// ```
/// use bytelens::files::elements;
/// // Four int32, backwards.
/// assert_eq!(elements(12, &[4], &[-4], 0..16, 16), (vec![(vec![0], 12), (vec![1], 8), (vec![2], 4), (vec![3], 0)], false));
/// // Fortran order, bytes 8..20.
/// assert_eq!(elements(0, &[2, 3], &[4, 8], 8..20, 16), (vec![(vec![0, 1], 8), (vec![0, 2], 16), (vec![1, 1], 12)], false));
/// // One element, broadcast.
/// assert_eq!(elements(4, &[1000], &[0], 0..16, 3), (vec![(vec![0], 4), (vec![1], 4), (vec![2], 4)], true));
/// ```
pub fn elements(
    offset: i64,
    shape: &[u64],
    strides: &[i64],
    bytes: Range<i64>,
    limit: usize,
) -> (Vec<(Vec<u64>, i64)>, bool) {
    if shape.contains(&0) || bytes.start >= bytes.end || shape.len() != strides.len() {
        return (Vec::new(), false);
    }
    let mut moving: Vec<usize> = (0..shape.len())
        .filter(|&a| shape[a] > 1 && strides[a] != 0)
        .collect();
    moving.sort_by_key(|&a| std::cmp::Reverse(strides[a].unsigned_abs())); // stable
    let axes: Vec<(i128, i128)> = moving
        .iter()
        .map(|&a| (i128::from(shape[a]), i128::from(strides[a])))
        .collect();
    let range = i128::from(bytes.start)..i128::from(bytes.end);
    let (found, complete) = search(i128::from(offset), &axes, range);
    if found.is_empty() {
        return (Vec::new(), !complete);
    }
    // `found` holds (byte, index on each moving axis, widest first): put
    // the indices in the view's axis order and the elements in its order.
    let mut in_order = moving.clone();
    in_order.sort_unstable();
    let mut entries: Vec<(Vec<u64>, i64)> = found
        .into_iter()
        .map(|(byte, index)| {
            let ordered = in_order
                .iter()
                .map(|a| index[moving.iter().position(|m| m == a).unwrap_or(0)])
                .collect();
            (ordered, byte as i64)
        })
        .collect();
    entries.sort_unstable();
    let mut is_moving = vec![false; shape.len()];
    for &a in &moving {
        is_moving[a] = true;
    }
    let mut walk = Expand {
        shape,
        moving: &is_moving,
        prefix: Vec::with_capacity(shape.len()),
        out: Vec::new(),
        limit,
    };
    let more = walk.expand(&entries, 0, 0);
    (walk.out, more || !complete)
}

/// `(byte, index)` of every element of the moving axes (`(length,
/// stride)` each) that starts in `range`, and false where [`BUDGET`] ran
/// out first.
fn search(
    offset: i128,
    axes: &[(i128, i128)],
    range: Range<i128>,
) -> (Vec<(i128, Vec<u64>)>, bool) {
    // What the axes after each one can add to a byte offset, at least and at most.
    let (mut least, mut most) = (vec![0i128; axes.len() + 1], vec![0i128; axes.len() + 1]);
    for k in (0..axes.len()).rev() {
        let (n, s) = axes[k];
        least[k] = least[k + 1] + (s * (n - 1)).min(0);
        most[k] = most[k + 1] + (s * (n - 1)).max(0);
    }
    let mut search = Search {
        axes,
        least,
        most,
        range,
        found: Vec::new(),
        index: Vec::with_capacity(axes.len()),
        steps: 0,
    };
    let complete = search.visit(0, offset);
    (search.found, complete)
}

/// The state of [`search`]'s walk over the moving axes.
struct Search<'a> {
    axes: &'a [(i128, i128)],
    least: Vec<i128>,
    most: Vec<i128>,
    range: Range<i128>,
    found: Vec<(i128, Vec<u64>)>,
    index: Vec<u64>,
    steps: usize,
}

impl Search<'_> {
    /// Visits axis `k` on from byte `base`; false where the budget ran out.
    fn visit(&mut self, k: usize, base: i128) -> bool {
        let Some(&(n, s)) = self.axes.get(k) else {
            if self.range.contains(&base) {
                // Always, but where no axis moves.
                self.found.push((base, self.index.clone()));
            }
            return true;
        };
        // i * s must lie in a..=b for the later axes to reach the range.
        let a = self.range.start - self.most[k + 1] - base;
        let b = self.range.end - 1 - self.least[k + 1] - base;
        let (first, last) = if s > 0 {
            (ceil_div(a, s), floor_div(b, s))
        } else {
            (ceil_div(b, s), floor_div(a, s))
        };
        for i in first.max(0)..=last.min(n - 1) {
            self.steps += 1;
            if self.steps > BUDGET {
                return false;
            }
            self.index.push(i as u64);
            let complete = self.visit(k + 1, base + i * s);
            self.index.pop();
            if !complete {
                return false;
            }
        }
        true
    }
}

/// The state of [`elements`]'s expansion of what [`search`] found into
/// every index of the view.
struct Expand<'a> {
    shape: &'a [u64],
    moving: &'a [bool],
    prefix: Vec<u64>,
    out: Vec<(Vec<u64>, i64)>,
    limit: usize,
}

impl Expand<'_> {
    /// Appends, in view order from `axis` on, the elements whose moving
    /// indices (from the `k`-th) are one of `entries` (sorted), every index
    /// of an axis that does not move; true where the limit left some out.
    fn expand(&mut self, entries: &[(Vec<u64>, i64)], axis: usize, k: usize) -> bool {
        let Some(&n) = self.shape.get(axis) else {
            if self.out.len() == self.limit {
                return true;
            }
            self.out.push((self.prefix.clone(), entries[0].1));
            return false;
        };
        if !self.moving[axis] {
            // Stride 0 or length 1: the same bytes at each index.
            for i in 0..n {
                self.prefix.push(i);
                let more = self.expand(entries, axis + 1, k);
                self.prefix.pop();
                if more {
                    return true;
                }
            }
            return false;
        }
        let mut start = 0;
        while start < entries.len() {
            let i = entries[start].0[k];
            let stop = start + entries[start..].iter().take_while(|e| e.0[k] == i).count();
            self.prefix.push(i);
            let more = self.expand(&entries[start..stop], axis + 1, k + 1);
            self.prefix.pop();
            if more {
                return true;
            }
            start = stop;
        }
        false
    }
}

/// `a / b` rounded down (Python's `//`).
fn floor_div(a: i128, b: i128) -> i128 {
    let q = a / b;
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

/// `a / b` rounded up (Python's `-(-a // b)`).
fn ceil_div(a: i128, b: i128) -> i128 {
    -floor_div(-a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every element of the view by walking every index: the reference.
    fn walk(
        offset: i64,
        shape: &[u64],
        strides: &[i64],
        bytes: Range<i64>,
    ) -> Vec<(Vec<u64>, i64)> {
        let mut out = Vec::new();
        let total: u64 = shape.iter().product();
        for flat in 0..total {
            let mut index = vec![0u64; shape.len()];
            let mut rest = flat;
            for a in (0..shape.len()).rev() {
                index[a] = rest % shape[a];
                rest /= shape[a];
            }
            let byte = offset
                + index
                    .iter()
                    .zip(strides)
                    .map(|(&i, &s)| i as i64 * s)
                    .sum::<i64>();
            if bytes.contains(&byte) {
                out.push((index, byte));
            }
        }
        out
    }

    #[test]
    fn elements_match_a_walk_of_every_index() {
        // A small pseudo-random sweep (xorshift), as the Python property test.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        // Miri checks the same code on fewer cases (it interprets each step).
        for _ in 0..if cfg!(miri) { 60 } else { 3000 } {
            let ndim = next(5) as usize;
            let shape: Vec<u64> = (0..ndim).map(|_| next(6)).collect();
            let strides: Vec<i64> = (0..ndim).map(|_| next(49) as i64 - 24).collect();
            let offset = next(201) as i64;
            let lo = next(241) as i64 - 20;
            let hi = lo + next(41) as i64;
            let limit = 1 + next(20) as usize;
            let inside = walk(offset, &shape, &strides, lo..hi);
            let (found, more) = elements(offset, &shape, &strides, lo..hi, limit);
            let want = &inside[..inside.len().min(limit)];
            assert_eq!(
                found, want,
                "{offset} {shape:?} {strides:?} {lo}..{hi} {limit}"
            );
            assert_eq!(
                more,
                inside.len() > limit,
                "{offset} {shape:?} {strides:?} {lo}..{hi} {limit}"
            );
        }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a 65,536-step budget: minutes under Miri; the walk is the same"
    )]
    fn a_huge_view_takes_time_for_what_is_shown() {
        // 10^5 x 10^5 float32 in Fortran order (40 GB): a row in the middle.
        let lo = 4 * 12_345 + 400_000 * 54_321;
        let (found, more) = elements(0, &[100_000, 100_000], &[4, 400_000], lo..lo + 16, 16);
        let want: Vec<(Vec<u64>, i64)> = (0..4)
            .map(|i| (vec![12_345 + i as u64, 54_321], lo + 4 * i))
            .collect();
        assert_eq!((found, more), (want, false));
        // Overlapping elements: the budget runs out, and says so.
        let (found, more) = elements(0, &[1_000_000_000; 2], &[1, 1], 1_000_000..1_000_016, 16);
        assert_eq!(found.len(), 16);
        assert!(more);
    }

    #[test]
    fn empty_views_and_ranges_have_no_elements() {
        assert_eq!(elements(0, &[0, 4], &[16, 4], 0..64, 8), (vec![], false));
        assert_eq!(elements(0, &[4], &[4], 8..8, 8), (vec![], false));
        // A 0-d view: its one element, where it lies in the range.
        assert_eq!(elements(8, &[], &[], 0..16, 8), (vec![(vec![], 8)], false));
        assert_eq!(elements(8, &[], &[], 9..16, 8), (vec![], false));
    }

    #[test]
    fn floor_and_ceil_division_round_as_python_does() {
        assert_eq!(
            (
                floor_div(7, 2),
                floor_div(-7, 2),
                floor_div(7, -2),
                floor_div(-7, -2)
            ),
            (3, -4, -4, 3)
        );
        assert_eq!(
            (
                ceil_div(7, 2),
                ceil_div(-7, 2),
                ceil_div(7, -2),
                ceil_div(-7, -2)
            ),
            (4, -3, -3, 4)
        );
    }

    fn plan(text: &str) -> OwnedPlan {
        OwnedPlan::from_text(text).expect("a plan")
    }

    #[test]
    fn a_field_past_the_end_names_the_file_and_the_field() {
        let err = describe_raw(
            "r.bin",
            16,
            None,
            Some(&plan("H\nearly <u2 2 @0\nlate <u2 1 @16\n")),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "r.bin: field 'late': the view reaches bytes 16..18 but the buffer holds 16 bytes"
        );
        assert_eq!(err.python_exception(), "BoundsError");
        let long = format!("H\n{} <u2 9\n", "w".repeat(50));
        let named = describe_raw("r.bin", 16, None, Some(&plan(&long))).unwrap_err();
        let field = format!(
            "r.bin: field '{}...': the view reaches bytes 0..18",
            "w".repeat(40)
        );
        assert!(named.to_string().starts_with(&field), "{named}");
        // Quotes and controls escaped as Python's `_quote` escapes them.
        assert_eq!(quote("it's\\\n\u{e9}", 40), "'it\\'s\\\\\\n\\xe9'");
    }

    #[test]
    fn fields_then_the_view_each_with_its_span() {
        use crate::{ByteOrder, DType, Descr};
        let shape = [3usize, 4];
        let strides = [0isize, 2];
        let view = ViewArgs {
            offset: 4,
            shape: Some(&shape),
            strides: Some(&strides),
            ..ViewArgs::new(Descr::new(DType::U16, ByteOrder::Little))
        };
        let report = describe_raw(
            "u.bin",
            80,
            Some(view),
            Some(&plan("H\na <u2 2\nb <f4 1\n")),
        )
        .unwrap();
        let rows: Vec<_> = report
            .arrays
            .iter()
            .map(|a| {
                (
                    a.name.as_str(),
                    a.dtype.as_str(),
                    a.offset,
                    a.nbytes,
                    a.span,
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("a", "<u2", 0, 4, Some((0, 4))),
                ("b", "<f4", 4, 4, Some((4, 8))),
                ("view", "<u2", 4, 24, Some((4, 12)))
            ]
        );
        assert_eq!(report.arrays[2].strides, Some(vec![0, 2]));
        assert_eq!((report.format, report.size), ("raw", 80));
        let text = report.to_string();
        assert!(
            text.starts_with("u.bin: raw, 80 bytes, 3 arrays\n"),
            "{text}"
        );
        assert!(
            text.contains("\n  view  <u2    (3, 4)  4..12  4      view"),
            "{text}"
        );
    }

    #[test]
    fn a_view_resolves_as_buffer_view_does() {
        use crate::{ByteOrder, DType, Descr};
        let f4 = ViewArgs::new(Descr::new(DType::F32, ByteOrder::Little));
        // Without a shape: every element from the offset, a whole number of them.
        let report = describe_raw("w.bin", 12, Some(ViewArgs { offset: 4, ..f4 }), None).unwrap();
        assert_eq!(report.arrays[0].shape, [2]);
        let err = describe_raw("odd.bin", 10, Some(f4), None).unwrap_err();
        assert!(
            err.to_string().starts_with("odd.bin: ") && matches!(err, Error::Layout { .. }),
            "{err}"
        );
        let err = describe_raw("r.bin", 16, Some(ViewArgs { offset: -4, ..f4 }), None).unwrap_err();
        assert!(
            err.to_string()
                .contains("offset -4 is outside the buffer of 16 bytes"),
            "{err}"
        );
        let strides = [4isize];
        let err = describe_raw(
            "r.bin",
            16,
            Some(ViewArgs {
                strides: Some(&strides),
                ..f4
            }),
            None,
        )
        .unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::MissingShape);
    }
}
