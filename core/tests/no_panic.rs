//! No public function panics, on any input: layouts built from extreme
//! lengths, strides and offsets go through every operation, in a debug build
//! (where arithmetic overflow would panic). Errors are fine; panics fail.

use bytelens_core::{DType, Descr, Layout, Plan, Scalar, View};
use proptest::prelude::*;
use proptest::test_runner::Config;

const LENS: [usize; 9] = [
    0,
    1,
    2,
    3,
    7,
    1 << 31,
    1 << 62,
    isize::MAX as usize,
    usize::MAX,
];
const STRIDES: [isize; 12] = [
    0,
    1,
    -1,
    2,
    -8,
    24,
    1 << 40,
    -(1 << 40),
    isize::MAX / 2 + 1,
    isize::MAX,
    isize::MIN + 1,
    isize::MIN,
];
const INDICES: [isize; 8] = [0, 1, -1, 5, isize::MAX, isize::MIN, 1 << 62, -(1 << 62)];

fn extreme<T: Copy + std::fmt::Debug + 'static>(values: &'static [T]) -> impl Strategy<Value = T> {
    prop::sample::select(values)
}

fn dtype() -> impl Strategy<Value = DType> {
    prop::sample::select(DType::ALL.to_vec())
}

fn config() -> Config {
    Config {
        cases: if cfg!(miri) { 4 } else { 20_000 },
        failure_persistence: None,
        ..Config::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn layouts_never_panic(
        dtype in dtype(),
        other in dtype(),
        shape in prop::collection::vec(extreme(&LENS), 0..=5),
        strides in prop::collection::vec(extreme(&STRIDES), 5),
        offset in extreme(&LENS),
        len in extreme(&LENS),
        a in extreme(&INDICES),
        b in extreme(&INDICES),
        step in extreme(&INDICES),
        new_shape in prop::collection::vec(extreme(&LENS), 0..=6),
    ) {
        let attempts = [
            Layout::new(dtype, offset, &shape, &strides[..shape.len()]),
            Layout::contiguous(dtype, &shape).and_then(|l| l.with_offset(offset)),
            Layout::from_bytes(dtype, len),
        ];
        for layout in attempts.into_iter().flatten() {
            let _ = layout.check(len);
            let _ = layout.byte_span();
            if let Ok(offsets) = layout.offsets(len) {
                let _ = offsets.take(3).count();
            }
            let zeros = vec![0; layout.ndim()];
            let _ = layout.element_offset(&zeros);
            let lasts: Vec<usize> = layout.shape().iter().map(|n| n.saturating_sub(1)).collect();
            let _ = layout.element_offset(&lasts);
            let _ = (layout.size(), layout.nbytes(), layout.is_c_contiguous(), layout.is_f_contiguous());
            let _ = layout.reinterpret(other);
            for axis in [0, layout.ndim().saturating_sub(1), 40] {
                let _ = layout.slice(axis, Some(a), Some(b), step);
                let _ = layout.slice(axis, None, Some(b), step);
                let _ = layout.slice(axis, Some(a), None, step);
                let _ = layout.index(axis, a);
            }
            let reversed: Vec<usize> = (0..layout.ndim()).rev().collect();
            let _ = layout.permute(&reversed);
            let t = layout.transpose();
            let _ = layout.reshape(&new_shape);
            let _ = layout.reshape(&[layout.size()]);
            let _ = layout.broadcast_to(&new_shape);
            let _ = layout.overlaps(&t, 1000);
            let _ = layout.overlaps(&Layout::from_bytes(DType::U8, len.min(1 << 20)).unwrap(), 1000);
            // Debug output is bounded even for huge views.
            let text = format!("{layout:?}");
            prop_assert!(text.len() < 10_000);
            // Typed views over a real (small) buffer.
            let words = [0u64; 8];
            let bytes: &[u8] = bytemuck::cast_slice(&words);
            if let Ok(view) = View::<u8>::new(bytes, layout.reinterpret(DType::U8).unwrap_or(layout)) {
                let _ = view.iter().take(100).count();
                let text = format!("{view:?}");
                prop_assert!(text.len() < 10_000);
            }
            let _ = Scalar::read(layout.descr(), bytes);
        }
    }

    #[test]
    fn plans_never_panic(
        fields in prop::collection::vec((dtype(), prop::collection::vec(extreme(&LENS), 0..=5), any::<bool>()), 0..=12),
        name in "[a-zA-Z_][a-zA-Z0-9_]{0,6}|[^a-z]{0,4}",
    ) {
        let names: Vec<String> = (0..fields.len()).map(|i| format!("f{i}")).collect();
        let mut plan = Plan::named(&name).unwrap_or_default();
        for ((dtype, shape, union), field_name) in fields.iter().zip(&names) {
            if *union {
                let _ = plan.union();
            }
            let _ = plan.field(field_name, Descr::native(*dtype), shape);
        }
        let _ = (plan.nbytes(), plan.align(), plan.alternatives());
        for alternative in 0..=plan.alternatives() {
            let _ = plan.padding(alternative).take(100).count();
        }
        for field in plan.fields() {
            let _ = (field.layout(), field.byte_range(), field.nbytes());
        }
        if let Ok(wgsl) = plan.wgsl() {
            let _ = wgsl.to_string();
        }
    }
}
