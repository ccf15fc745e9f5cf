//! The `args` target: a view's arguments as JavaScript passes them to the
//! wasm package (`{ offset, shape, strides, readonly, unaligned }`, numbers
//! as doubles, a dtype string), converted to `ViewArgs` by the wasm
//! package's rules and resolved natively by the core's
//! `ViewArgs::resolve`, the one contract every binding shares; and the
//! `args.json` cases, whose answers numpy gave.

use arbitrary::Arbitrary;
use bytelens_core::{ByteOrder, DType, Descr, Layout, ViewArgs};
use serde_json::Value;

use crate::model::LIMIT;
use crate::vectors::{args_cases, isizes, pick, usizes};
use crate::{Int, Uint, check_error};

#[derive(Arbitrary, Debug)]
pub enum Input {
    /// A case of `args.json`, by number.
    Vector(u8),
    Js(JsArgs),
}

#[derive(Arbitrary, Debug)]
pub struct JsArgs {
    dtype: DtypeText,
    offset: Option<JsNumber>,
    shape: Option<JsList>,
    strides: Option<JsList>,
    /// The length of a shapeless view, when the caller knows it (`write`'s values).
    count: Option<Uint>,
    readonly: bool,
    unaligned: bool,
    /// The buffer's length; none resolves without checking against one.
    len: Option<Uint>,
}

#[derive(Arbitrary, Debug)]
enum DtypeText {
    /// One of the spellings the core knows, after one of the prefixes.
    Known {
        dtype: u8,
        spelling: u8,
        prefix: u8,
    },
    Any(String),
}

impl DtypeText {
    fn get(&self) -> String {
        match self {
            DtypeText::Known {
                dtype,
                spelling,
                prefix,
            } => {
                let dtype = DType::ALL[usize::from(*dtype) % DType::ALL.len()];
                let spellings = dtype.spellings();
                let prefixes = ["", "<", ">", "=", "|", "!"];
                format!(
                    "{}{}",
                    prefixes[usize::from(*prefix) % prefixes.len()],
                    spellings[usize::from(*spelling) % spellings.len()]
                )
            }
            DtypeText::Any(text) => text.clone(),
        }
    }
}

/// A JS number.
#[derive(Arbitrary, Clone, Copy, Debug)]
enum JsNumber {
    Int(Int),
    Whole(Uint),
    Special(u8),
    Any(f64),
}

const SPECIAL: [f64; 14] = [
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    -0.0,
    0.5,
    -0.5,
    9007199254740992.0,     // 2^53
    9223372036854775808.0,  // 2^63: one past isize
    -9223372036854775808.0, // -2^63: isize::MIN
    18446744073709551616.0, // 2^64
    1e300,
    -1e300,
    2147483648.0, // 2^31
    4294967296.0, // 2^32
];

impl JsNumber {
    fn get(self) -> f64 {
        match self {
            JsNumber::Int(i) => i.get() as f64,
            JsNumber::Whole(u) => u.get() as f64,
            JsNumber::Special(i) => SPECIAL[usize::from(i) % SPECIAL.len()],
            JsNumber::Any(x) => x,
        }
    }
}

/// A number, or an array of numbers (`shape: 4` or `shape: [2, 2]`).
#[derive(Arbitrary, Debug)]
enum JsList {
    One(JsNumber),
    Many(Vec<JsNumber>),
}

impl JsList {
    fn numbers(&self) -> Vec<f64> {
        match self {
            JsList::One(x) => vec![x.get()],
            JsList::Many(xs) => xs.iter().map(|x| x.get()).collect(),
        }
    }
}

// The wasm package's conversions (wasm/src/convert.rs), restated: each
// returns `None` where the package throws before the core is asked.

/// `integer`: a whole double, saturating at the ends of `isize`.
fn integer(value: f64) -> Option<isize> {
    (value.fract() == 0.0).then(|| value.clamp(isize::MIN as f64, isize::MAX as f64) as isize)
}

/// `offset`: an integer that `isize` holds.
fn offset(value: f64) -> Option<isize> {
    let offset = integer(value)?;
    let limit = -(isize::MIN as f64);
    (value < limit && value >= -limit).then_some(offset)
}

/// `length`: a whole double, 0 or more, saturating at `usize::MAX`.
fn length(value: f64) -> Option<usize> {
    (value >= 0.0 && value.fract() == 0.0).then(|| value.min(usize::MAX as f64) as usize)
}

pub fn run(input: &Input) {
    match input {
        Input::Vector(i) => run_vector(pick(args_cases(), *i).expect("vectors")),
        Input::Js(js) => {
            let text = js.dtype.get();
            let descr = match text.parse::<Descr>() {
                Ok(descr) => {
                    check_descr_text(&text, descr);
                    descr
                }
                Err(err) => {
                    check_error(&err);
                    assert_eq!(err.kind(), "BadDType");
                    return;
                }
            };
            let Some(offset) = js.offset.map_or(Some(0), |x| offset(x.get())) else {
                return;
            };
            let shape: Option<Vec<usize>> = match &js.shape {
                None => None,
                Some(list) => match list.numbers().into_iter().map(length).collect() {
                    Some(shape) => Some(shape),
                    None => return,
                },
            };
            let strides: Option<Vec<isize>> = match &js.strides {
                None => None,
                Some(list) => match list.numbers().into_iter().map(integer).collect() {
                    Some(strides) => Some(strides),
                    None => return,
                },
            };
            let args = ViewArgs {
                offset,
                shape: shape.as_deref(),
                strides: strides.as_deref(),
                count: js.count.map(Uint::get),
                read_only: js.readonly,
                unaligned: js.unaligned,
                ..ViewArgs::new(descr)
            };
            check_resolve(&args, js.len.map(Uint::get));
        }
    }
}

/// A dtype's text, once read, reads back the same from its printed form.
fn check_descr_text(text: &str, descr: Descr) {
    let printed = descr.to_string();
    let again: Descr = printed
        .parse()
        .unwrap_or_else(|e| panic!("{text:?} → {printed}: {e}"));
    assert_eq!(again.dtype, descr.dtype);
    // One-byte types print as `|`, which reads back in native order.
    if descr.dtype.size() > 1 {
        assert_eq!(again.order, descr.order, "{text:?} → {printed}");
    } else {
        assert_eq!(again.order, ByteOrder::NATIVE);
    }
}

fn run_vector(case: &Value) {
    let (nbytes, args, expect) = (&case["nbytes"], &case["args"], &case["expect"]);
    let len = nbytes.as_u64().expect("nbytes") as usize;
    let expected_error = expect["error"].as_str();
    let descr = match args["dtype"].as_str().expect("dtype").parse::<Descr>() {
        Ok(descr) => descr,
        Err(err) => {
            assert_eq!(Some(err.kind().name()), expected_error);
            return;
        }
    };
    let (shape, strides) = (
        args.get("shape").map(usizes),
        args.get("strides").map(isizes),
    );
    let view_args = ViewArgs {
        offset: args["offset"].as_i64().unwrap_or(0) as isize,
        shape: shape.as_ref().map(|s| s.as_deref().expect("a shape")),
        strides: strides.as_ref().map(|s| s.as_deref().expect("strides")),
        ..ViewArgs::new(descr)
    };
    match (view_args.resolve(Some(len)), expected_error) {
        (Ok(layout), None) => {
            assert_eq!(Some(layout.shape().to_vec()), usizes(&expect["shape"]));
            assert_eq!(Some(layout.strides().to_vec()), isizes(&expect["strides"]));
            let offsets: Vec<usize> = layout.offsets(len).expect("checked").collect();
            assert_eq!(Some(offsets), usizes(&expect["offsets"]));
        }
        (Err(err), Some(kind)) => assert_eq!(err.kind(), kind),
        (got, expected) => panic!("{case}: {got:?}, expected {expected:?}"),
    }
    check_resolve(&view_args, Some(len));
}

/// `resolve` with a length is `resolve` without one, then `check`, once the
/// offset is inside the buffer; what it gives fits the buffer and is what
/// the arguments say.
fn check_resolve(args: &ViewArgs<'_>, len: Option<usize>) {
    let unchecked = args.resolve(None);
    let result = args.resolve(len);
    for r in [&unchecked, &result] {
        if let Err(err) = r {
            check_error(err);
        }
    }
    let outside = args.offset < 0 || len.is_some_and(|len| args.offset as usize > len);
    if outside {
        assert_eq!(result.map_err(|e| e.kind().name()), Err("OutOfBounds"));
        return;
    }
    if let Ok(layout) = &unchecked {
        check_says(args, layout, len);
    }
    let Some(len) = len else {
        return;
    };
    if args.shape.is_some() || args.count.is_some() {
        let expected = unchecked.and_then(|l| l.check(len).map(|()| l));
        assert_eq!(result, expected, "{args:?} over {len}");
    } else {
        assert_eq!(unchecked.map_err(|e| e.kind().name()), Err("MissingShape"));
    }
    if let Ok(layout) = result {
        check_says(args, &layout, Some(len));
        let offsets = layout.offsets(len).expect("resolved layouts are checked");
        for o in offsets.take(LIMIT) {
            assert!(o + layout.dtype().size() <= len);
        }
    }
}

/// The layout is what the arguments say.
fn check_says(args: &ViewArgs<'_>, layout: &Layout, len: Option<usize>) {
    assert_eq!(layout.descr(), args.descr);
    assert_eq!(layout.offset(), args.offset);
    assert_eq!(
        (layout.is_read_only(), layout.requires_alignment()),
        (args.read_only, !args.unaligned)
    );
    let itemsize = args.descr.dtype.size();
    let shape = match (args.shape, args.count, len) {
        (Some(shape), _, _) => shape.to_vec(),
        (None, Some(count), _) => vec![count],
        (None, None, Some(len)) => {
            let rest = len - args.offset as usize;
            assert_eq!(rest % itemsize, 0);
            vec![rest / itemsize]
        }
        (None, None, None) => panic!("resolved without a shape: {args:?}"),
    };
    assert_eq!(layout.shape(), shape);
    match args.strides {
        Some(strides) => assert_eq!(layout.strides(), strides),
        None => {
            let c = Layout::contiguous(args.descr.dtype, &shape).expect("it resolved");
            assert_eq!(layout.strides(), c.strides());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_vector_case() {
        for i in 0..args_cases().len() {
            run(&Input::Vector(i as u8));
        }
    }

    #[test]
    fn js_numbers_convert_as_the_wasm_package_converts_them() {
        assert_eq!(offset(-0.0), Some(0));
        assert_eq!(offset(9223372036854775808.0), None);
        assert_eq!(offset(-9223372036854775808.0), Some(isize::MIN));
        assert_eq!(offset(f64::NAN), None);
        assert_eq!(length(-1.0), None);
        assert_eq!(length(1e300), Some(usize::MAX));
        assert_eq!(integer(-1e300), Some(isize::MIN));
        assert_eq!(integer(0.5), None);
    }
}
