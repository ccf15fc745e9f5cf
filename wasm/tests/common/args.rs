//! How a view's arguments (dtype, offset?, shape?, strides?) resolve, asked
//! of the JS API (`Buffer.offsets` and `read` with options objects): the
//! shared vectors (`tests/vectors/args.json`), and random arguments checked
//! against a reference model of the rule written out again here.
//!
//! Element offsets and error kinds are compared, not strides: on wasm32 a
//! stride past `isize` (args.json's 2^40 on an empty axis) is held saturated.

use std::collections::BTreeMap;

use bytelens_wasm::{Buffer, LayoutOptions, dtypes};
use js_sys::{Array, Object, Reflect};
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};

use super::{Rng, element_offsets, ints, js, kind};

const ARGS: &str = include_str!("../../../tests/vectors/args.json");

/// A view's arguments as JS passes them; `None` is a property not given.
struct Args {
    offset: Option<f64>,
    shape: Option<Vec<f64>>,
    strides: Option<Vec<f64>>,
}

impl Args {
    /// `{ offset?, shape?, strides? }`.
    fn options(&self) -> LayoutOptions {
        let object = Object::new();
        let set = |key: &str, value: JsValue| {
            Reflect::set(&object, &key.into(), &value).unwrap();
        };
        let list = |values: &[f64]| -> JsValue {
            values
                .iter()
                .map(|&v| JsValue::from_f64(v))
                .collect::<Array>()
                .into()
        };
        if let Some(offset) = self.offset {
            set("offset", offset.into());
        }
        if let Some(shape) = &self.shape {
            set("shape", list(shape));
        }
        if let Some(strides) = &self.strides {
            set("strides", list(strides));
        }
        object.unchecked_into()
    }
}

/// What the JS API makes of `args` over `nbytes` zeroed bytes: the element
/// offsets, or the kind of the error thrown. `read` must agree with `offsets`.
fn resolve(dtype: &str, nbytes: usize, args: &Args) -> Result<Vec<f64>, String> {
    let buf = Buffer::new(&(nbytes as f64).into()).unwrap();
    let offsets = buf.offsets(&js(dtype), Some(args.options()));
    let values = buf.read(&js(dtype), Some(args.options()));
    match (offsets, values) {
        (Ok(offsets), Ok(values)) => {
            let offsets: Vec<f64> = Array::from(&offsets)
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect();
            let read = Array::from(&values).length() as usize;
            assert_eq!(read, offsets.len(), "{dtype}: read and offsets disagree");
            Ok(offsets)
        }
        (Err(a), Err(b)) => {
            let (a, b) = (kind(&a.into()), kind(&b.into()));
            assert_eq!(a, b, "{dtype}: read and offsets throw different errors");
            Err(a)
        }
        _ => panic!("{dtype}: only one of read and offsets threw"),
    }
}

fn floats(value: &Value) -> Vec<f64> {
    ints(value).into_iter().map(|n| n as f64).collect()
}

/// Every case of args.json through the JS API; returns how many ran.
pub fn vectors() -> usize {
    let json: Value = serde_json::from_str(ARGS).unwrap();
    let cases = json["cases"].as_array().unwrap();
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let given = &case["args"];
        let args = Args {
            offset: given.get("offset").map(|v| v.as_f64().unwrap()),
            shape: given.get("shape").map(floats),
            strides: given.get("strides").map(floats),
        };
        let nbytes = case["nbytes"].as_u64().unwrap() as usize;
        let got = resolve(given["dtype"].as_str().unwrap(), nbytes, &args);
        let expect = &case["expect"];
        let expected = match expect.get("error") {
            Some(kind) => Err(kind.as_str().unwrap().to_owned()),
            None => Ok(floats(&expect["offsets"])),
        };
        assert_eq!(got, expected, "args.json: {name}");
    }
    cases.len()
}

/// The rule of core/src/args.rs, written out again: the element offsets of
/// a view of `size`-byte elements needing `align` over `len` bytes, or the
/// kind of error.
fn model(
    (size, align, len): (i64, i64, i64),
    offset: i64,
    shape: Option<&[i64]>,
    strides: Option<&[i64]>,
) -> Result<Vec<i64>, &'static str> {
    if offset < 0 || offset > len {
        return Err("OutOfBounds");
    }
    let (shape, strides) = match (shape, strides) {
        (None, Some(_)) => return Err("MissingShape"),
        (None, None) if (len - offset) % size != 0 => return Err("ItemsizeMismatch"),
        (None, None) => (vec![(len - offset) / size], vec![size]),
        (Some(shape), None) => {
            // C order: an axis steps over everything after it.
            let mut strides = vec![0; shape.len()];
            let mut step = size;
            for axis in (0..shape.len()).rev() {
                strides[axis] = step;
                step *= shape[axis].max(1);
            }
            (shape.to_vec(), strides)
        }
        (Some(shape), Some(strides)) if strides.len() != shape.len() => {
            return Err("LengthMismatch");
        }
        (Some(shape), Some(strides)) => (shape.to_vec(), strides.to_vec()),
    };
    let offsets = element_offsets(offset, &shape, &strides);
    if offsets.iter().any(|&at| at < 0 || at + size > len) {
        return Err("OutOfBounds");
    }
    // Only axes that step matter; an empty view touches nothing.
    let mut steps = shape.iter().zip(&strides).filter(|&(&n, _)| n > 1);
    if !offsets.is_empty() && (offset % align != 0 || steps.any(|(_, s)| s % align != 0)) {
        return Err("Misaligned");
    }
    Ok(offsets)
}

/// Random arguments (every dtype of `dtypes()` in both byte orders, offsets
/// negative, inside and past the end, shapes and strides present or not,
/// strides of the wrong length, empty buffers) through the JS API, compared
/// with [`model`]. Returns how often each outcome came up.
pub fn random(cases: usize) -> BTreeMap<String, usize> {
    let table = Array::from(&dtypes());
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut seen = BTreeMap::new();
    for case in 0..cases {
        let row = table.get(rng.below(u64::from(table.length())) as u32);
        let get = |key: &str| Reflect::get(&row, &key.into()).unwrap();
        let (size, align) = (
            get("size").as_f64().unwrap(),
            get("align").as_f64().unwrap(),
        );
        let (size, align) = (size as i64, align as i64);
        let order = if rng.below(2) == 0 { "little" } else { "big" };
        let dtype = Reflect::get(&get("typeStrings"), &order.into())
            .unwrap()
            .as_string()
            .unwrap();
        let len = if rng.below(6) == 0 {
            0
        } else {
            rng.below(40) as i64
        };
        let offset = match rng.below(10) {
            0 => None,
            1 => Some(-1 - rng.below(9) as i64),
            2 => Some(len + 1 + rng.below(8) as i64),
            3..=5 => Some(rng.below(len as u64 + 1) as i64),
            _ => Some(rng.below((len / size) as u64 + 1) as i64 * size),
        };
        let shape: Option<Vec<i64>> = if rng.below(3) == 0 {
            None
        } else {
            let ndim = rng.below(4);
            Some((0..ndim).map(|_| rng.below(4) as i64).collect())
        };
        let strides: Option<Vec<i64>> = if rng.below(3) == 0 {
            None
        } else {
            let ndim = shape.as_ref().map_or(1 + rng.below(2) as usize, Vec::len);
            let ndim = match rng.below(8) {
                0 => ndim + 1,
                1 => ndim.saturating_sub(1),
                _ => ndim,
            };
            let mut stride = || {
                let s = (rng.below(7) as i64 - 3) * size;
                if rng.below(8) == 0 { s + 1 } else { s }
            };
            Some((0..ndim).map(|_| stride()).collect())
        };
        let expected = model(
            (size, align, len),
            offset.unwrap_or(0),
            shape.as_deref(),
            strides.as_deref(),
        );
        let as_floats = |v: &Vec<i64>| v.iter().map(|&n| n as f64).collect::<Vec<f64>>();
        let args = Args {
            offset: offset.map(|o| o as f64),
            shape: shape.as_ref().map(as_floats),
            strides: strides.as_ref().map(as_floats),
        };
        let got = resolve(&dtype, len as usize, &args);
        assert_eq!(
            got,
            expected.as_ref().map(as_floats).map_err(|k| k.to_string()),
            "case {case}: {dtype} over {len} bytes, offset {offset:?}, shape {shape:?}, strides {strides:?}"
        );
        let outcome = expected.map_or_else(str::to_owned, |_| "ok".to_owned());
        *seen.entry(outcome).or_default() += 1;
    }
    seen
}

/// Asserts that `random` met every outcome at least `times` times, so that
/// the comparison could have failed in each way.
pub fn assert_every_outcome(seen: &BTreeMap<String, usize>, times: usize) {
    for outcome in [
        "ok",
        "OutOfBounds",
        "Misaligned",
        "MissingShape",
        "ItemsizeMismatch",
        "LengthMismatch",
    ] {
        let count = seen.get(outcome).copied().unwrap_or(0);
        assert!(count >= times, "{outcome} came up {count} times: {seen:?}");
    }
}
