//! The `layout` target: a layout from parts (any dtype, offset, shape and
//! strides, a buffer of any length) or from a `tests/vectors` case, then a
//! chain of operations. After each step, the layout is checked against the
//! [`Model`]: `check` says a layout fits exactly when every element lies in
//! the buffer (and is aligned), the offsets it yields are the model's, and
//! typed views read and write exactly those bytes. Each operation's result
//! is checked against what the operation means (a slice takes numpy's
//! indices, a reshape keeps the order of the elements, ...).

use arbitrary::Arbitrary;
use bytelens_core::{
    ByteOrder, DType, Descr, Element, Error, Layout, MAX_NDIM, Overlap, View, ViewMut, bf16, f16,
};
use serde_json::Value;

use crate::model::{Fit, LIMIT, Model, slice_indices};
use crate::vectors::{isizes, layout_cases, pick, usizes};
use crate::{DescrIn, Int, Uint, check_error};

/// Buffers up to this length are allocated, and views made over them.
const MAX_BUFFER: usize = 1 << 16;
/// Operations after the first this many are ignored.
const MAX_OPS: usize = 24;

#[derive(Arbitrary, Debug)]
pub struct Input {
    start: Start,
    ops: Vec<Op>,
}

#[derive(Arbitrary, Debug)]
pub enum Start {
    /// A case of the vectors, by number (its operations applied too).
    Vector(u8),
    Parts(Parts),
}

#[derive(Arbitrary, Debug)]
pub struct Parts {
    descr: DescrIn,
    offset: Uint,
    shape: Vec<Uint>,
    /// C order when absent.
    strides: Option<Vec<Int>>,
    /// The buffer's length.
    len: Uint,
    unaligned: bool,
    read_only: bool,
}

#[derive(Arbitrary, Debug)]
pub enum Op {
    Reinterpret(DescrIn),
    Slice {
        axis: Uint,
        start: Option<Int>,
        stop: Option<Int>,
        step: Int,
    },
    Index {
        axis: Uint,
        index: Int,
    },
    Permute(Vec<Uint>),
    Transpose,
    Reshape(Vec<Uint>),
    BroadcastTo(Vec<Uint>),
    WithOffset(Uint),
    ByteOrder(bool),
    Unaligned,
    ReadOnly,
    /// Whether the current layout overlaps an earlier one of the chain.
    Overlaps {
        earlier: u8,
        max_work: u16,
    },
    /// Views start this many bytes into their (aligned) storage.
    Shift(u8),
}

/// An operation with its arguments resolved, from an [`Op`] or a vector.
#[derive(Debug)]
enum Step {
    Reinterpret(Descr),
    Slice(usize, Option<isize>, Option<isize>, isize),
    Index(usize, isize),
    Permute(Vec<usize>),
    Transpose,
    Reshape(Vec<usize>),
    BroadcastTo(Vec<usize>),
    WithOffset(usize),
    ByteOrder(ByteOrder),
    Unaligned,
    ReadOnly,
    Overlaps(usize, usize),
    Shift(usize),
}

impl Op {
    fn step(&self) -> Step {
        let uints = |v: &[Uint]| v.iter().map(|u| u.get()).collect();
        match self {
            Op::Reinterpret(d) => Step::Reinterpret(d.get()),
            Op::Slice {
                axis,
                start,
                stop,
                step,
            } => Step::Slice(
                axis.get(),
                start.map(Int::get),
                stop.map(Int::get),
                step.get(),
            ),
            Op::Index { axis, index } => Step::Index(axis.get(), index.get()),
            Op::Permute(axes) => Step::Permute(uints(axes)),
            Op::Transpose => Step::Transpose,
            Op::Reshape(shape) => Step::Reshape(uints(shape)),
            Op::BroadcastTo(shape) => Step::BroadcastTo(uints(shape)),
            Op::WithOffset(o) => Step::WithOffset(o.get()),
            Op::ByteOrder(big) => Step::ByteOrder(if *big {
                ByteOrder::Big
            } else {
                ByteOrder::Little
            }),
            Op::Unaligned => Step::Unaligned,
            Op::ReadOnly => Step::ReadOnly,
            Op::Overlaps { earlier, max_work } => {
                Step::Overlaps(usize::from(*earlier), usize::from(*max_work))
            }
            Op::Shift(by) => Step::Shift(usize::from(*by % 8)),
        }
    }
}

/// A vector's operation, as `core/tests/vectors.rs` reads it.
fn json_step(op: &Value) -> Option<Step> {
    let uint = |key: &str| op[key].as_u64().and_then(|x| usize::try_from(x).ok());
    let int = |key: &str| op[key].as_i64().and_then(|x| isize::try_from(x).ok());
    Some(match op["op"].as_str()? {
        "reinterpret" => Step::Reinterpret(op["dtype"].as_str()?.parse().ok()?),
        "slice" => Step::Slice(uint("axis")?, int("start"), int("stop"), int("step")?),
        "index" => Step::Index(uint("axis")?, int("index")?),
        "transpose" => Step::Transpose,
        "permute" => Step::Permute(usizes(&op["axes"])?),
        "reshape" => Step::Reshape(usizes(&op["shape"])?),
        "broadcast_to" => Step::BroadcastTo(usizes(&op["shape"])?),
        _ => return None,
    })
}

/// The chain so far.
struct Chain {
    len: usize,
    shift: usize,
    layouts: Vec<Layout>,
}

impl Chain {
    fn current(&self) -> Layout {
        self.layouts[self.layouts.len() - 1]
    }

    /// Applies `step` to the current layout, checks the result and, if
    /// there is one, makes it current.
    fn apply(&mut self, step: &Step) {
        let before = self.current();
        let result = match step {
            Step::Shift(by) => {
                self.shift = *by;
                check_layout(&before, self.len, self.shift);
                return;
            }
            Step::Overlaps(earlier, max_work) => {
                let other = self.layouts[self.layouts.len() - 1 - earlier % self.layouts.len()];
                check_overlap(&before, &other, *max_work);
                return;
            }
            _ => run_step(&before, step),
        };
        match result {
            Ok(after) => {
                check_layout(&after, self.len, self.shift);
                self.layouts.push(after);
            }
            Err(err) => check_error(&err),
        }
    }
}

pub fn run(input: &Input) {
    let Some(mut chain) = start(&input.start) else {
        return;
    };
    check_layout(&chain.current(), chain.len, 0);
    if let Start::Vector(i) = input.start {
        let case = pick(layout_cases(), i).expect("vectors");
        for op in case["ops"].as_array().into_iter().flatten() {
            chain.apply(&json_step(op).expect("a vector's operation reads"));
        }
    }
    for op in input.ops.iter().take(MAX_OPS) {
        chain.apply(&op.step());
    }
}

fn start(start: &Start) -> Option<Chain> {
    let (layout, len) = match start {
        Start::Vector(i) => {
            let case = pick(layout_cases(), *i)?;
            let len = case["bytes"].as_str()?.len() / 2;
            let spec = &case["layout"];
            let descr: Descr = spec["dtype"].as_str()?.parse().ok()?;
            let offset = spec["offset"].as_u64().unwrap_or(0) as usize;
            let layout = match (spec.get("shape"), spec.get("strides")) {
                (None, _) => Layout::from_bytes(descr.dtype, len),
                (Some(shape), None) => Layout::contiguous(descr.dtype, &usizes(shape)?)
                    .and_then(|l| l.with_offset(offset)),
                (Some(shape), Some(strides)) => {
                    Layout::new(descr.dtype, offset, &usizes(shape)?, &isizes(strides)?)
                }
            };
            let mut layout = layout.ok()?.with_byte_order(descr.order);
            if case["unaligned"].as_bool() == Some(true) {
                layout = layout.unaligned();
            }
            (layout, len)
        }
        Start::Parts(p) => {
            let descr = p.descr.get();
            let shape: Vec<usize> = p.shape.iter().map(|u| u.get()).collect();
            let offset = p.offset.get();
            let built = match &p.strides {
                None => Layout::contiguous(descr.dtype, &shape).and_then(|l| l.with_offset(offset)),
                Some(strides) => {
                    let strides: Vec<isize> = strides.iter().map(|i| i.get()).collect();
                    Layout::new(descr.dtype, offset, &shape, &strides)
                }
            };
            let mut layout = match built {
                Ok(layout) => layout.with_byte_order(descr.order),
                Err(err) => {
                    check_error(&err);
                    check_refused_parts(&shape, p.strides.as_ref().map(Vec::len), offset, descr);
                    return None;
                }
            };
            if p.unaligned {
                layout = layout.unaligned();
            }
            if p.read_only {
                layout = layout.read_only();
            }
            (layout, p.len.get())
        }
    };
    Some(Chain {
        len,
        shift: 0,
        layouts: vec![layout],
    })
}

/// A layout refused at construction: too many axes, strides of the wrong
/// length, an array too big for `isize`, or an offset past it.
fn check_refused_parts(shape: &[usize], strides: Option<usize>, offset: usize, descr: Descr) {
    let bound = shape.iter().fold(descr.dtype.size() as u128, |n, &k| {
        n.saturating_mul(k.max(1) as u128)
    });
    assert!(
        shape.len() > MAX_NDIM
            || strides.is_some_and(|n| n != shape.len())
            || bound > isize::MAX as u128
            || offset > isize::MAX as usize,
        "refused: {shape:?} {strides:?} {offset} {descr}"
    );
}

fn run_step(before: &Layout, step: &Step) -> Result<Layout, Error> {
    let a = Model::of(before);
    let ndim = before.ndim();
    match step {
        Step::Reinterpret(descr) => {
            let result = before
                .reinterpret(descr.dtype)
                .map(|l| l.with_byte_order(descr.order));
            if let Ok(after) = &result {
                let b = Model::of(after);
                assert_eq!(after.descr(), *descr);
                assert_eq!(flags(after), flags(before));
                if before.dtype().size() == descr.dtype.size() {
                    assert_eq!(
                        (&b.shape, &b.strides, b.offset),
                        (&a.shape, &a.strides, a.offset)
                    );
                } else {
                    assert_eq!(after.ndim(), ndim);
                    assert_eq!(after.shape()[..ndim - 1], before.shape()[..ndim - 1]);
                    // The same bytes, in the same order.
                    if let (Some(x), Some(y)) = (a.bytes(LIMIT), b.bytes(LIMIT)) {
                        assert_eq!(x, y, "{before:?} as {descr}: {after:?}");
                    }
                }
            }
            result
        }
        &Step::Slice(axis, start, stop, step) => {
            let result = before.slice(axis, start, stop, step);
            match &result {
                Ok(after) => {
                    assert!(axis < ndim && step != 0);
                    let taken = slice_indices(before.shape()[axis], start, stop, step, LIMIT);
                    let mut shape = before.shape().to_vec();
                    if let Some(taken) = &taken {
                        shape[axis] = taken.len();
                    }
                    if taken.is_some() {
                        assert_eq!(
                            after.shape(),
                            shape,
                            "{before:?}[{start:?}:{stop:?}:{step}]"
                        );
                    }
                    assert_eq!(flags(after), flags(before));
                    if let (Some(taken), Some(indices)) = (&taken, Model::indices(&shape, LIMIT)) {
                        let b = Model::of(after);
                        for index in indices {
                            let mut from = index.clone();
                            from[axis] = taken[index[axis]];
                            assert_eq!(b.at(&index), a.at(&from), "{before:?} {step:?}");
                        }
                    }
                }
                Err(err) if axis < ndim && step != 0 => assert_eq!(err.kind(), "Overflow"),
                Err(_) => {}
            }
            result
        }
        &Step::Index(axis, i) => {
            let result = before.index(axis, i);
            let resolved = (axis < ndim).then(|| {
                let n = before.shape()[axis] as i128;
                let j = if i < 0 { i as i128 + n } else { i as i128 };
                (0..n).contains(&j).then_some(j as usize)
            });
            match (&result, resolved.flatten()) {
                (Ok(after), Some(j)) => {
                    let b = Model::of(after);
                    assert_eq!(after.ndim(), ndim - 1);
                    for index in Model::indices(after.shape(), LIMIT).into_iter().flatten() {
                        let mut from = index.clone();
                        from.insert(axis, j);
                        assert_eq!(b.at(&index), a.at(&from));
                    }
                }
                (Ok(after), None) => panic!("index {i} on axis {axis} of {before:?}: {after:?}"),
                (Err(err), Some(_)) => assert_eq!(err.kind(), "Overflow"),
                (Err(err), None) => assert_ne!(err.kind(), "Overflow"),
            }
            result
        }
        Step::Permute(axes) => {
            let result = before.permute(axes);
            let mut sorted = axes.clone();
            sorted.sort_unstable();
            let is_permutation = sorted.iter().copied().eq(0..ndim);
            assert_eq!(result.is_ok(), is_permutation, "{axes:?} of {before:?}");
            if let Ok(after) = &result {
                let b = Model::of(after);
                for (k, &axis) in axes.iter().enumerate() {
                    assert_eq!((b.shape[k], b.strides[k]), (a.shape[axis], a.strides[axis]));
                }
                assert_eq!((b.offset, flags(after)), (a.offset, flags(before)));
            }
            result
        }
        Step::Transpose => {
            let after = before.transpose();
            let reversed: Vec<usize> = (0..ndim).rev().collect();
            assert_eq!(before.permute(&reversed), Ok(after));
            Ok(after)
        }
        Step::Reshape(shape) => {
            let result = before.reshape(shape);
            check_reshape(before, shape, &result);
            result
        }
        Step::BroadcastTo(shape) => {
            let result = before.broadcast_to(shape);
            let lead = shape.len().wrapping_sub(ndim);
            let fits = shape.len() >= ndim
                && shape.len() <= MAX_NDIM
                && (0..ndim)
                    .all(|k| before.shape()[k] == 1 || before.shape()[k] == shape[k + lead]);
            match &result {
                Ok(after) => {
                    assert!(fits, "{before:?} to {shape:?}");
                    assert!(after.is_read_only());
                    assert_eq!(after.shape(), &shape[..]);
                    let b = Model::of(after);
                    for index in Model::indices(shape, LIMIT).into_iter().flatten() {
                        let from: Vec<usize> = (0..ndim)
                            .map(|k| if a.shape[k] == 1 { 0 } else { index[k + lead] })
                            .collect();
                        assert_eq!(b.at(&index), a.at(&from));
                    }
                }
                Err(err) if fits => assert_eq!(err.kind(), "Overflow", "{before:?} to {shape:?}"),
                Err(_) => {}
            }
            result
        }
        &Step::WithOffset(offset) => {
            let result = before.with_offset(offset);
            assert_eq!(result.is_ok(), offset <= isize::MAX as usize);
            result
        }
        &Step::ByteOrder(order) => Ok(before.with_byte_order(order)),
        Step::Unaligned => Ok(before.unaligned()),
        Step::ReadOnly => Ok(before.read_only()),
        Step::Overlaps(..) | Step::Shift(_) => unreachable!("handled by the chain"),
    }
}

fn flags(layout: &Layout) -> (bool, bool) {
    (layout.is_read_only(), layout.requires_alignment())
}

/// A reshape keeps the elements in C order; one refused as needing a copy
/// really has no strides that would do.
fn check_reshape(before: &Layout, shape: &[usize], result: &Result<Layout, Error>) {
    let a = Model::of(before);
    let to = shape
        .iter()
        .try_fold(1u128, |n, &k| n.checked_mul(k as u128));
    let same_size = to == Some(a.size());
    match result {
        Ok(after) => {
            assert!(same_size, "{before:?} to {shape:?}");
            assert_eq!(after.shape(), shape);
            assert_eq!(flags(after), flags(before));
            let b = Model::of(after);
            if let (Some(x), Some(y)) = (a.offsets(LIMIT), b.offsets(LIMIT)) {
                assert_eq!(x, y, "{before:?} to {shape:?}: {after:?}");
            }
        }
        Err(err) if err.kind() == "NeedsCopy" => {
            assert!(same_size);
            // The strides a no-copy reshape would need are the steps from the
            // first element to the neighbours along each new axis.
            if let Some(offsets) = a.offsets(LIMIT).filter(|o| !o.is_empty()) {
                let indices = Model::indices(shape, LIMIT).expect("same size");
                let mut strides = vec![0i128; shape.len()];
                for (k, stride) in strides.iter_mut().enumerate() {
                    if shape[k] > 1 {
                        let mut next = vec![0; shape.len()];
                        next[k] = 1;
                        let at = indices.iter().position(|i| *i == next).expect("in shape");
                        *stride = offsets[at] - offsets[0];
                    }
                }
                let possible = indices.iter().zip(&offsets).all(|(index, &o)| {
                    index
                        .iter()
                        .zip(&strides)
                        .fold(offsets[0], |s, (&i, &st)| s + i as i128 * st)
                        == o
                });
                assert!(
                    !possible,
                    "{before:?} to {shape:?}: refused, but strides {strides:?} would do"
                );
            }
        }
        Err(err) if err.kind() == "SizeMismatch" => assert!(!same_size),
        Err(err) => assert!(
            ["Overflow", "TooManyDims"].contains(&err.kind().name()),
            "{before:?} to {shape:?}: {err}"
        ),
    }
}

/// `overlaps` against the bytes each layout touches, when both are small.
fn check_overlap(x: &Layout, y: &Layout, max_work: usize) {
    let answer = match x.overlaps(y, max_work) {
        Ok(answer) => answer,
        Err(err) => {
            assert_eq!(err.kind(), "Overflow");
            return;
        }
    };
    if let Ok(again) = y.overlaps(x, max_work)
        && answer != Overlap::Unknown
        && again != Overlap::Unknown
    {
        assert_eq!(answer, again, "{x:?} and {y:?} disagree with each other");
    }
    let (Some(a), Some(b)) = (Model::of(x).bytes(LIMIT), Model::of(y).bytes(LIMIT)) else {
        return;
    };
    let b: std::collections::HashSet<i128> = b.into_iter().collect();
    let shared = a.iter().any(|byte| b.contains(byte));
    match answer {
        Overlap::Yes => assert!(shared, "{x:?} and {y:?}: no byte in common"),
        Overlap::No => assert!(!shared, "{x:?} and {y:?}: a byte in common"),
        Overlap::Unknown => {}
    }
}

/// Whether the lengths (0 counted as 1) times the itemsize pass `isize::MAX`:
/// numpy's rule for an array's size, which the core checks when it builds a
/// layout so that no length or extent computed later overflows.
fn breaks_size_rule(layout: &Layout) -> bool {
    let bound = layout
        .shape()
        .iter()
        .fold(layout.dtype().size() as u128, |n, &k| {
            n.saturating_mul(k.max(1) as u128)
        });
    bound > isize::MAX as u128
}

/// Everything a layout promises, checked against the model and, when the
/// buffer is small enough to allocate, through views.
fn check_layout(layout: &Layout, len: usize, shift: usize) {
    let m = Model::of(layout);
    let ndim = layout.ndim();
    assert!(ndim <= MAX_NDIM);
    assert_eq!((layout.shape().len(), layout.strides().len()), (ndim, ndim));
    assert!(!breaks_size_rule(layout), "{layout:?}");
    assert_eq!(layout.size() as u128, m.size());
    assert_eq!(layout.nbytes() as i128, m.size() as i128 * m.itemsize);

    let span = m.span();
    match layout.byte_span() {
        Ok(got) => match span {
            None => assert_eq!(got, layout.offset()..layout.offset()),
            Some((start, end)) => assert_eq!((got.start as i128, got.end as i128), (start, end)),
        },
        Err(err) => {
            assert_eq!(err.kind(), "Overflow");
            let (start, end) = span.expect("an empty layout's span is its offset");
            let range = isize::MIN as i128..=isize::MAX as i128;
            let extent_overflows = m
                .shape
                .iter()
                .zip(&m.strides)
                .any(|(&n, &s)| !range.contains(&(s * (n as i128 - 1))));
            assert!(
                !range.contains(&start) || !range.contains(&end) || extent_overflows,
                "{layout:?}: {err}"
            );
        }
    }

    let checked = layout.check(len);
    if let Err(err) = &checked {
        check_error(err);
    }
    if len > isize::MAX as usize {
        assert_eq!(checked.map_err(|e| e.kind().name()), Err("Overflow"));
    } else {
        match (m.fit(len), &checked) {
            (Fit::Fits, Ok(())) => {}
            (Fit::OutOfBounds, Err(err))
                if ["OutOfBounds", "Overflow"].contains(&err.kind().name()) => {}
            (Fit::Misaligned, Err(err)) if err.kind() == "Misaligned" => {}
            (fit, got) => panic!("{layout:?} over {len} bytes: {fit:?}, but check says {got:?}"),
        }
    }

    // Contiguity, from the order of the offsets when they can be listed.
    match m.offsets(LIMIT) {
        Some(offsets) => {
            let packed = |offsets: &[i128]| {
                offsets
                    .iter()
                    .enumerate()
                    .all(|(k, &o)| o == offsets[0] + k as i128 * m.itemsize)
            };
            assert_eq!(layout.is_c_contiguous(), packed(&offsets), "{layout:?}");
            let reversed: Vec<usize> = layout.shape().iter().rev().copied().collect();
            let f_order: Vec<i128> = Model::indices(&reversed, LIMIT)
                .expect("as many")
                .iter()
                .map(|i| m.at(&i.iter().rev().copied().collect::<Vec<_>>()))
                .collect();
            assert_eq!(layout.is_f_contiguous(), packed(&f_order), "{layout:?}");
        }
        None => {
            assert_eq!(layout.is_c_contiguous(), m.packed((0..ndim).rev()));
            assert_eq!(layout.is_f_contiguous(), m.packed(0..ndim));
        }
    }

    // Element offsets at the corners, and just past them.
    if let Some((low, high)) = m.corners() {
        for corner in [&low, &high] {
            if let Ok(offset) = layout.element_offset(corner) {
                assert_eq!(offset as i128, m.at(corner));
            }
        }
        if ndim > 0 {
            // Out of range on the first axis, which is looked at first.
            let mut past = high.clone();
            past[0] = layout.shape()[0];
            assert_eq!(
                layout.element_offset(&past).map_err(|e| e.kind().name()),
                Err("IndexOutOfRange")
            );
        }
    }
    assert_eq!(
        layout
            .element_offset(&vec![0; ndim + 1])
            .map_err(|e| e.kind().name()),
        Err("LengthMismatch")
    );

    if checked.is_ok() {
        check_offsets(layout, &m, len);
        if len <= MAX_BUFFER {
            check_views(layout, &m, len, shift);
        }
    }
}

/// The offsets `Layout::offsets` yields: the model's, in C order.
fn check_offsets(layout: &Layout, m: &Model, len: usize) {
    let offsets = layout.offsets(len).expect("checked");
    assert_eq!(offsets.len() as u128, m.size());
    let expected = m.offsets(LIMIT);
    let first: Vec<usize> = offsets.take(LIMIT).collect();
    for &o in &first {
        assert!(o + layout.dtype().size() <= len, "offset {o} of {layout:?}");
    }
    if let Some(expected) = expected {
        let expected: Vec<usize> = expected.iter().map(|&o| o as usize).collect();
        assert_eq!(first, expected, "{layout:?}");
    }
}

/// Storage for views: 8-byte aligned, filled with a pattern in which every
/// byte differs from its neighbours.
fn storage(len: usize) -> Vec<u64> {
    let mut words = vec![0u64; len.div_ceil(8) + 1];
    for (i, b) in bytemuck::cast_slice_mut::<u64, u8>(&mut words)
        .iter_mut()
        .enumerate()
    {
        *b = (i as u8).wrapping_mul(37).wrapping_add(11);
    }
    words
}

fn check_views(layout: &Layout, m: &Model, len: usize, shift: usize) {
    match layout.dtype() {
        // bool is not an Element: its bytes, as uint8.
        DType::Bool => {
            let bytes = layout.reinterpret(DType::U8).expect("same itemsize");
            check_view::<u8>(&bytes, m, len, shift);
        }
        DType::U8 => check_view::<u8>(layout, m, len, shift),
        DType::I8 => check_view::<i8>(layout, m, len, shift),
        DType::U16 => check_view::<u16>(layout, m, len, shift),
        DType::I16 => check_view::<i16>(layout, m, len, shift),
        DType::U32 => check_view::<u32>(layout, m, len, shift),
        DType::I32 => check_view::<i32>(layout, m, len, shift),
        DType::U64 => check_view::<u64>(layout, m, len, shift),
        DType::I64 => check_view::<i64>(layout, m, len, shift),
        DType::F16 => check_view::<f16>(layout, m, len, shift),
        DType::BF16 => check_view::<bf16>(layout, m, len, shift),
        DType::F32 => check_view::<f32>(layout, m, len, shift),
        DType::F64 => check_view::<f64>(layout, m, len, shift),
        DType::F8E4M3FN => check_view::<bytelens_core::F8E4M3FN>(layout, m, len, shift),
        DType::F8E5M2 => check_view::<bytelens_core::F8E5M2>(layout, m, len, shift),
        DType::F8E8M0FNU => check_view::<bytelens_core::F8E8M0FNU>(layout, m, len, shift),
    }
}

/// The element at `offset` of `bytes`, in `order`, read without the core.
fn decode<T: Element>(bytes: &[u8], offset: i128, order: ByteOrder) -> Vec<u8> {
    let size = size_of::<T>();
    let mut out = bytes[offset as usize..offset as usize + size].to_vec();
    if order != ByteOrder::NATIVE {
        out.reverse();
    }
    out
}

fn check_view<T: Element>(layout: &Layout, m: &Model, len: usize, shift: usize) {
    let mut words = storage(len + shift);
    let all: &[u8] = bytemuck::cast_slice(&words);
    let bytes = &all[shift..shift + len];
    let small = m.size() <= LIMIT as u128;
    let misaligned_buffer =
        layout.requires_alignment() && m.size() > 0 && !shift.is_multiple_of(T::DTYPE.align());
    let view = match View::<T>::new(bytes, *layout) {
        Ok(view) => {
            assert!(!misaligned_buffer, "{layout:?} at +{shift}");
            view
        }
        Err(err) => {
            assert!(misaligned_buffer, "{layout:?} at +{shift}: {err}");
            assert_eq!(err.kind(), "Misaligned");
            check_error(&err);
            return;
        }
    };
    assert_eq!(view.len() as u128, m.size());
    if let Some((low, high)) = m.corners() {
        for corner in [low, high] {
            let value = view.get(&corner).expect("a corner is an element");
            assert_eq!(
                bytemuck::bytes_of(&value),
                decode::<T>(bytes, m.at(&corner), m.order)
            );
        }
    }
    if small {
        let offsets = m.offsets(LIMIT).expect("small");
        let values: Vec<T> = view.iter().collect();
        assert_eq!(values.len(), offsets.len());
        for (value, &o) in values.iter().zip(&offsets) {
            assert_eq!(bytemuck::bytes_of(value), decode::<T>(bytes, o, m.order));
        }
        if let Some(slice) = view.as_slice() {
            assert!(layout.is_c_contiguous() && m.order == ByteOrder::NATIVE);
            assert_eq!(
                bytemuck::cast_slice::<T, u8>(slice),
                bytemuck::cast_slice::<T, u8>(&values)
            );
        }
    }

    // Writing: every element takes the value, every other byte keeps its own.
    let before = all.to_vec();
    let bytes = &mut bytemuck::cast_slice_mut::<u64, u8>(&mut words)[shift..shift + len];
    match ViewMut::<T>::new(bytes, *layout) {
        Err(err) => assert!(layout.is_read_only() && err.kind() == "ReadOnly", "{err}"),
        Ok(mut view) => {
            assert!(!layout.is_read_only());
            if !small {
                return;
            }
            let value: T =
                bytemuck::pod_read_unaligned(&[1, 2, 3, 4, 5, 6, 7, 8][..size_of::<T>()]);
            view.fill(value);
            let mut stored = bytemuck::bytes_of(&value).to_vec();
            if m.order != ByteOrder::NATIVE {
                stored.reverse();
            }
            let mut expected = before[shift..shift + len].to_vec();
            for &o in &m.offsets(LIMIT).expect("small") {
                expected[o as usize..o as usize + stored.len()].copy_from_slice(&stored);
            }
            let after: &[u8] = bytemuck::cast_slice(&words);
            assert_eq!(&after[shift..shift + len], &expected[..], "{layout:?}");
            assert_eq!(after[..shift], before[..shift]);
            assert_eq!(after[shift + len..], before[shift + len..]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_vector_case_starts_a_chain() {
        for i in 0..layout_cases().len() {
            run(&Input {
                start: Start::Vector(i as u8),
                ops: vec![
                    Op::Transpose,
                    Op::Shift(1),
                    Op::Reinterpret(DescrIn::default()),
                ],
            });
        }
    }

    /// The core finding the chain stops at (see `Chain::apply`): an empty
    /// uint8 array as uint64 breaks the size rule; transposed and seen as
    /// uint8 again, its length would pass `usize::MAX`.
    #[test]
    fn a_wider_dtype_over_an_empty_last_axis_stops_the_chain() {
        run(&Input {
            start: Start::Parts(Parts {
                descr: DescrIn {
                    dtype: 1,
                    big: false,
                },
                offset: Uint::Small(0),
                shape: vec![Uint::Any(9_000_000_000_000_000_000), Uint::Small(0)],
                strides: None,
                len: Uint::Small(0),
                unaligned: false,
                read_only: false,
            }),
            ops: vec![
                Op::Reinterpret(DescrIn {
                    dtype: 8,
                    big: false,
                }),
                Op::Transpose,
                Op::Reinterpret(DescrIn {
                    dtype: 1,
                    big: false,
                }),
            ],
        });
    }

    #[test]
    fn four_zero_bytes_and_a_number_are_that_vector() {
        crate::replay(&[0, 0, 0, 0, 3], |input: &Input| {
            assert!(matches!(input.start, Start::Vector(3)) && input.ops.is_empty());
        });
    }
}
