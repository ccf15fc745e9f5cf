//! Property tests: every layout operation agrees with a plain reference model
//! that enumerates each element's byte offset by brute force.

use std::collections::BTreeSet;

use bytelens_core::{DType, Error, Layout, Overlap};
use proptest::prelude::*;
use proptest::test_runner::Config;

/// The reference model: every element's multi-index and byte offset, in C
/// order, computed with wide arithmetic straight from the definition
/// `offset + sum(index[k] * strides[k])`.
#[derive(Debug)]
struct Model {
    itemsize: i128,
    align: i128,
    offsets: Vec<i128>,
}

fn indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let mut all = vec![vec![]];
    for &n in shape {
        all = all
            .into_iter()
            .flat_map(|prefix| {
                (0..n).map(move |i| {
                    let mut next = prefix.clone();
                    next.push(i);
                    next
                })
            })
            .collect();
    }
    all
}

fn offset_of(layout: &Layout, index: &[usize]) -> i128 {
    let mut at = layout.offset() as i128;
    for (k, &i) in index.iter().enumerate() {
        at += i as i128 * layout.strides()[k] as i128;
    }
    at
}

impl Model {
    fn of(layout: &Layout) -> Model {
        let offsets = indices(layout.shape())
            .iter()
            .map(|ix| offset_of(layout, ix))
            .collect();
        Model {
            itemsize: layout.dtype().size() as i128,
            align: layout.dtype().align() as i128,
            offsets,
        }
    }

    /// What `check(len)` must say: `None` for success, else the error kind.
    fn check(&self, offset: i128, len: usize) -> Option<&'static str> {
        let len = len as i128;
        if self.offsets.is_empty() {
            return (offset > len).then_some("OutOfBounds");
        }
        let lo = *self.offsets.iter().min().unwrap();
        let hi = *self.offsets.iter().max().unwrap() + self.itemsize;
        if lo < 0 || hi > len {
            return Some("OutOfBounds");
        }
        if self.offsets.iter().any(|o| o % self.align != 0) {
            return Some("Misaligned");
        }
        None
    }

    fn bytes(&self) -> BTreeSet<i128> {
        self.offsets
            .iter()
            .flat_map(|&o| o..o + self.itemsize)
            .collect()
    }

    /// The bytes of every element, element after element, in C order.
    fn byte_stream(&self) -> Vec<i128> {
        self.offsets
            .iter()
            .flat_map(|&o| o..o + self.itemsize)
            .collect()
    }

    fn is_packed(&self, c_order_offsets: &[i128]) -> bool {
        c_order_offsets
            .iter()
            .enumerate()
            .all(|(k, &o)| o == c_order_offsets[0] + k as i128 * self.itemsize)
    }
}

fn dtype() -> impl Strategy<Value = DType> {
    prop::sample::select(DType::ALL.to_vec())
}

/// Small layouts, in bounds or not, aligned or not, over buffers of up to
/// 160 bytes.
fn layout() -> impl Strategy<Value = Layout> {
    (dtype(), 0usize..=4)
        .prop_flat_map(|(dtype, ndim)| {
            let size = dtype.size() as isize;
            let stride = prop_oneof![
                3 => (-4isize..=4).prop_map(move |k| k * size),
                1 => -24isize..=24,
            ];
            (
                Just(dtype),
                0usize..=48,
                prop::collection::vec(0usize..=4, ndim),
                prop::collection::vec(stride, ndim),
                any::<bool>(),
            )
        })
        .prop_map(|(dtype, offset, shape, strides, contiguous)| {
            if contiguous {
                Layout::contiguous(dtype, &shape)
                    .unwrap()
                    .with_offset(offset)
                    .unwrap()
            } else {
                Layout::new(dtype, offset, &shape, &strides).unwrap()
            }
        })
}

fn config() -> Config {
    Config {
        cases: if cfg!(miri) { 8 } else { 10_000 },
        failure_persistence: None,
        ..Config::default()
    }
}

/// Python's `range(*slice(start, stop, step).indices(n))`, by walking.
fn python_slice(n: usize, start: Option<isize>, stop: Option<isize>, step: isize) -> Vec<usize> {
    let n = n as isize;
    let norm = |i: isize| if i < 0 { i + n } else { i };
    let mut out = vec![];
    if step > 0 {
        let mut i = start.map_or(0, |s| norm(s).clamp(0, n));
        let stop = stop.map_or(n, |s| norm(s).clamp(0, n));
        while i < stop {
            out.push(i as usize);
            i += step;
        }
    } else {
        let mut i = start.map_or(n - 1, |s| norm(s).clamp(-1, n - 1));
        let stop = stop.map_or(-1, |s| norm(s).clamp(-1, n - 1));
        while i > stop {
            out.push(i as usize);
            i += step;
        }
    }
    out
}

fn prime_factors(mut n: usize) -> Vec<usize> {
    let mut factors = vec![];
    let mut p = 2;
    while n > 1 {
        while n.is_multiple_of(p) {
            factors.push(p);
            n /= p;
        }
        p += 1;
    }
    factors
}

/// Some shape with `size` elements: the prime factors shuffled, grouped and
/// sprinkled with ones.
fn shape_of_size(size: usize) -> impl Strategy<Value = Vec<usize>> {
    let factors = if size == 0 {
        vec![0]
    } else {
        prime_factors(size)
    };
    let count = factors.len();
    (
        Just(factors).prop_shuffle(),
        prop::collection::vec(0usize..=2, count + 1),
    )
        .prop_map(move |(factors, cuts)| {
            let mut shape = vec![];
            let mut group = 1;
            for (k, f) in factors.iter().enumerate() {
                group *= f;
                if cuts[k] > 0 {
                    shape.push(group);
                    group = 1;
                }
                if cuts[k] == 2 {
                    shape.push(1);
                }
            }
            if group != 1 || shape.is_empty() && size != 1 {
                shape.push(group);
            }
            if cuts[count] == 2 {
                shape.insert(0, 1);
            }
            shape
        })
}

/// Is there any strided layout of `shape` whose C-order offsets are `offsets`?
fn exists_strided(shape: &[usize], offsets: &[i128]) -> bool {
    if offsets.is_empty() {
        return true;
    }
    let all = indices(shape);
    let mut strides = vec![0i128; shape.len()];
    for k in 0..shape.len() {
        if shape[k] > 1 {
            let unit = all
                .iter()
                .position(|ix| {
                    ix.iter()
                        .enumerate()
                        .all(|(j, &i)| i == usize::from(j == k))
                })
                .unwrap();
            strides[k] = offsets[unit] - offsets[0];
        }
    }
    all.iter().zip(offsets).all(|(ix, &o)| {
        o == offsets[0]
            + ix.iter()
                .zip(&strides)
                .map(|(&i, &s)| i as i128 * s)
                .sum::<i128>()
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn check_agrees_with_the_model(layout in layout(), len in 0usize..=160) {
        let model = Model::of(&layout);
        let got = layout.check(len);
        prop_assert_eq!(got.err().map(|e| e.kind().name()), model.check(layout.offset() as i128, len));
        let unaligned = layout.unaligned().check(len).err().map(|e| e.kind().name());
        let expected = model.check(layout.offset() as i128, len).filter(|&k| k != "Misaligned");
        prop_assert_eq!(unaligned, expected);
        if got.is_ok() {
            let walk: Vec<i128> = layout.offsets(len).unwrap().map(|o| o as i128).collect();
            prop_assert_eq!(&walk, &model.offsets);
        }
        // Contiguity: packed in C order (or F order, via the transpose's C order).
        prop_assert_eq!(layout.is_c_contiguous(), model.is_packed(&model.offsets));
        let f_walk = Model::of(&layout.transpose()).offsets;
        prop_assert_eq!(layout.is_f_contiguous(), model.is_packed(&f_walk));
        // byte_span covers exactly the touched bytes' hull.
        let span = layout.byte_span().unwrap();
        if let (Some(&lo), Some(&hi)) = (model.bytes().first(), model.bytes().last()) {
            prop_assert_eq!((span.start as i128, span.end as i128), (lo, hi + 1));
        } else {
            prop_assert!(span.is_empty());
        }
    }

    #[test]
    fn reinterpret_keeps_the_byte_stream(layout in layout(), to in dtype()) {
        let model = Model::of(&layout);
        let ndim = layout.ndim();
        let (old, new) = (layout.dtype().size(), to.size());
        let expected_ok = old == new || (ndim > 0 && {
            let n = layout.shape()[ndim - 1];
            (n == 1 || layout.size() == 0 || layout.strides()[ndim - 1] == old as isize)
                && (n * old) % new == 0
        });
        match layout.reinterpret(to) {
            Ok(view) => {
                prop_assert!(expected_ok);
                prop_assert_eq!(view.dtype(), to);
                prop_assert_eq!(Model::of(&view).byte_stream(), model.byte_stream());
                if ndim > 0 {
                    prop_assert_eq!(&view.shape()[..ndim - 1], &layout.shape()[..ndim - 1]);
                }
            }
            Err(err) => {
                prop_assert!(!expected_ok, "unexpected {}", err);
                let expected_kind = matches!(err, Error::ItemsizeMismatch { .. } | Error::ScalarItemsize { .. } | Error::NotContiguous { .. });
                prop_assert!(expected_kind, "unexpected {}", err);
            }
        }
    }

    #[test]
    fn slice_and_index_select_the_models_elements(
        layout in layout().prop_filter("needs an axis", |l| l.ndim() > 0),
        axis_seed in any::<usize>(),
        start in prop::option::of(-6isize..=6),
        stop in prop::option::of(-6isize..=6),
        step in prop_oneof![-3isize..=-1, 1isize..=3],
        i in -5isize..=5,
    ) {
        let axis = axis_seed % layout.ndim();
        let picked = python_slice(layout.shape()[axis], start, stop, step);
        let sliced = layout.slice(axis, start, stop, step).unwrap();
        prop_assert_eq!(sliced.shape()[axis], picked.len());
        let expected: Vec<i128> = indices(sliced.shape())
            .iter()
            .map(|ix| {
                let mut old = ix.clone();
                old[axis] = picked[ix[axis]];
                offset_of(&layout, &old)
            })
            .collect();
        prop_assert_eq!(Model::of(&sliced).offsets, expected);

        let n = layout.shape()[axis] as isize;
        match layout.index(axis, i) {
            Ok(fixed) => {
                let j = if i < 0 { i + n } else { i } as usize;
                let expected: Vec<i128> = indices(fixed.shape())
                    .iter()
                    .map(|ix| {
                        let mut old = ix.clone();
                        old.insert(axis, j);
                        offset_of(&layout, &old)
                    })
                    .collect();
                prop_assert_eq!(Model::of(&fixed).offsets, expected);
            }
            Err(err) => {
                prop_assert!(i >= n || i < -n);
                prop_assert_eq!(err.kind(), "IndexOutOfRange");
            }
        }
    }

    #[test]
    fn permute_moves_indices(layout in layout(), seed in any::<u64>()) {
        let ndim = layout.ndim();
        let mut axes: Vec<usize> = (0..ndim).collect();
        // A seeded Fisher-Yates shuffle.
        let mut s = seed;
        for k in (1..ndim).rev() {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            axes.swap(k, (s >> 33) as usize % (k + 1));
        }
        let permuted = layout.permute(&axes).unwrap();
        let expected: Vec<i128> = indices(permuted.shape())
            .iter()
            .map(|ix| {
                let mut old = vec![0; ndim];
                for (k, &axis) in axes.iter().enumerate() {
                    old[axis] = ix[k];
                }
                offset_of(&layout, &old)
            })
            .collect();
        prop_assert_eq!(Model::of(&permuted).offsets, expected);
    }

    #[test]
    fn reshape_is_a_view_exactly_when_one_exists(
        (layout, shape) in layout().prop_flat_map(|l| (Just(l), shape_of_size(l.size()))),
        wrong in any::<bool>(),
    ) {
        let model = Model::of(&layout);
        let mut shape = shape;
        if wrong {
            shape.push(2);
            match layout.reshape(&shape) {
                Err(Error::SizeMismatch { .. }) => prop_assert!(layout.size() != 0),
                Ok(view) => prop_assert_eq!(view.size(), 0),
                Err(other) => prop_assert!(false, "unexpected {}", other),
            }
            return Ok(());
        }
        prop_assert_eq!(shape.iter().product::<usize>(), layout.size());
        match layout.reshape(&shape) {
            Ok(view) => {
                prop_assert_eq!(view.shape(), &shape[..]);
                prop_assert_eq!(Model::of(&view).offsets, model.offsets);
            }
            Err(Error::NeedsCopy { .. }) => {
                prop_assert!(!exists_strided(&shape, &model.offsets), "a view exists for {:?}", shape);
            }
            Err(other) => prop_assert!(false, "unexpected {}", other),
        }
    }

    #[test]
    fn broadcast_repeats_elements(
        layout in layout(),
        lead in prop::collection::vec(0usize..=3, 0..=2),
        stretch in prop::collection::vec(0usize..=3, 4),
        spoil in prop::option::of(0usize..4),
    ) {
        let ndim = layout.ndim();
        let mut shape = lead.clone();
        for (k, &n) in layout.shape().iter().enumerate() {
            shape.push(if n == 1 { stretch[k] } else { n });
        }
        let mut spoiled = false;
        if let Some(k) = spoil.filter(|&k| k < ndim && layout.shape()[k] != 1) {
            shape[lead.len() + k] += 1;
            spoiled = true;
        }
        match layout.broadcast_to(&shape) {
            Ok(view) => {
                prop_assert!(!spoiled);
                prop_assert!(view.is_read_only());
                let expected: Vec<i128> = indices(&shape)
                    .iter()
                    .map(|ix| {
                        let old: Vec<usize> = ix[lead.len()..]
                            .iter()
                            .zip(layout.shape())
                            .map(|(&i, &n)| if n == 1 { 0 } else { i })
                            .collect();
                        offset_of(&layout, &old)
                    })
                    .collect();
                prop_assert_eq!(Model::of(&view).offsets, expected);
            }
            Err(err) => {
                prop_assert!(spoiled, "unexpected {}", err);
                prop_assert_eq!(err.kind(), "NotBroadcastable");
            }
        }
    }

    #[test]
    fn overlaps_agrees_with_byte_sets(a in layout(), b in layout()) {
        let shared = Model::of(&a).bytes().intersection(&Model::of(&b).bytes()).next().is_some();
        let got = a.overlaps(&b, 1_000_000).unwrap();
        prop_assert_eq!(got, if shared { Overlap::Yes } else { Overlap::No });
        prop_assert_eq!(b.overlaps(&a, 1_000_000).unwrap(), got);
    }
}

#[test]
fn reshape_shapes_cover_the_size() {
    // The generator itself: every produced shape has the requested size.
    let mut runner = proptest::test_runner::TestRunner::new(config());
    for size in [0usize, 1, 2, 12, 64, 81] {
        runner
            .run(&shape_of_size(size), |shape| {
                prop_assert_eq!(shape.iter().product::<usize>(), size);
                Ok(())
            })
            .unwrap();
    }
}
