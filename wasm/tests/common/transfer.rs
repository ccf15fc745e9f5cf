//! `read` and `write` in bulk, against the element-by-element path they
//! replace: the core's `Scalar` read at each offset `Buffer.offsets` gives,
//! for every dtype in both byte orders, over contiguous, strided, reversed,
//! broadcast and transposed views.

use bytelens_core::{DType, Descr, Scalar};
use bytelens_wasm::{Buffer, LayoutOptions, Values};
use js_sys::{Array, BigInt, Object, Reflect};
use wasm_bindgen::{JsCast, JsValue};

use super::{Rng, byte_source, js, numbers, same};

/// The typed array class `read` returns for each dtype.
pub fn class_of(dtype: DType) -> &'static str {
    match dtype {
        DType::Bool | DType::U8 => "Uint8Array",
        DType::I8 => "Int8Array",
        DType::U16 => "Uint16Array",
        DType::I16 => "Int16Array",
        DType::U32 => "Uint32Array",
        DType::I32 => "Int32Array",
        DType::U64 => "BigUint64Array",
        DType::I64 => "BigInt64Array",
        DType::F16 | DType::BF16 | DType::F32 => "Float32Array",
        DType::F8E4M3FN | DType::F8E5M2 | DType::F8E8M0FNU => "Float32Array",
        DType::F64 => "Float64Array",
    }
}

/// The name of a value's constructor.
pub fn class_name(value: &JsValue) -> String {
    let constructor = Reflect::get(value, &"constructor".into()).unwrap();
    Reflect::get(&constructor, &"name".into())
        .unwrap()
        .as_string()
        .unwrap()
}

/// What the element-by-element `read` gave for one element (a boolean is 0
/// or 1 now): numbers, and bigints for 64-bit integers.
fn element(scalar: Scalar) -> JsValue {
    match scalar {
        Scalar::I64(v) => BigInt::from(v).into(),
        Scalar::U64(v) => BigInt::from(v).into(),
        other => other.to_f64().into(),
    }
}

/// Every dtype in both byte orders, as type strings.
pub fn every_descr() -> Vec<Descr> {
    let orders = [
        bytelens_core::ByteOrder::Little,
        bytelens_core::ByteOrder::Big,
    ];
    DType::ALL
        .into_iter()
        .flat_map(|d| orders.map(|o| Descr::new(d, o)))
        .collect()
}

fn options(offset: i64, shape: &[i64], strides: &[i64]) -> LayoutOptions {
    let object = Object::new();
    Reflect::set(&object, &"offset".into(), &(offset as f64).into()).unwrap();
    Reflect::set(&object, &"shape".into(), &numbers(shape)).unwrap();
    Reflect::set(&object, &"strides".into(), &numbers(strides)).unwrap();
    object.unchecked_into()
}

/// Views over 96 bytes in units of the itemsize: (offset, shape, strides).
fn views(size: i64) -> Vec<(i64, Vec<i64>, Vec<i64>)> {
    vec![
        (0, vec![96 / size], vec![size]),                       // all of it
        (size, vec![5], vec![size]),                            // contiguous, offset
        (0, vec![6], vec![2 * size]),                           // every other
        (90 - 90 % size, vec![7], vec![-size]),                 // reversed
        (2 * size, vec![3, 4], vec![0, size]),                  // broadcast rows
        (0, vec![3, 4], vec![size, 3 * size]),                  // transposed
        (3 * size, vec![2, 2, 3], vec![-size, 6 * size, size]), // mixed
        (0, vec![0], vec![size]),                               // empty
        (0, vec![], vec![]),                                    // a single element
    ]
}

/// `read` of every view of every dtype agrees with the core's `Scalar` at
/// `offsets`, and returns the dtype's class; returns how many views ran.
pub fn read_agrees_with_the_element_path() -> usize {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let bytes: Vec<u8> = (0..96).map(|_| rng.next() as u8).collect();
    let mut buf = Buffer::new(&96.0.into()).unwrap();
    buf.set_bytes(&0.0.into(), byte_source(&bytes)).unwrap();
    let mut count = 0;
    for descr in every_descr() {
        let text = js(&descr.to_string());
        let size = descr.dtype.size() as i64;
        for (offset, shape, strides) in views(size) {
            let label = format!("{descr} offset {offset} shape {shape:?} strides {strides:?}");
            let layout = || Some(options(offset, &shape, &strides));
            let read: JsValue = buf.read(&text, layout()).unwrap().into();
            assert_eq!(class_name(&read), class_of(descr.dtype), "{label}");
            let read = Array::from(&read);
            let offsets = Array::from(&buf.offsets(&text, layout()).unwrap());
            assert_eq!(read.length(), offsets.length(), "{label}");
            for (i, at) in offsets.iter().enumerate() {
                let at = at.as_f64().unwrap() as usize;
                let expected = element(Scalar::read(descr, &bytes[at..]).unwrap());
                let got = read.get(i as u32);
                assert!(
                    same(&got, &expected),
                    "{label}[{i}]: {got:?} vs {expected:?}"
                );
            }
            count += 1;
        }
    }
    count
}

/// The sources `write` takes for the values `read` gave: the typed array
/// itself, a plain array of its elements, and (for numbers) a Float64Array.
fn sources(read: &JsValue) -> Vec<(&'static str, JsValue)> {
    let plain: JsValue = Array::from(read).into();
    let mut out = vec![("typed array", read.clone()), ("Array", plain)];
    if !class_name(read).starts_with("Big") {
        let wide = js_sys::Float64Array::new(read);
        out.push(("Float64Array", wide.into()));
    }
    out
}

/// What `write` puts through each view from each source, `read` gives
/// back; returns how many writes ran.
pub fn writes_from_every_source_round_trip() -> usize {
    let mut rng = Rng(0x6a09_e667_f3bc_c909);
    let bytes: Vec<u8> = (0..96).map(|_| rng.next() as u8).collect();
    let mut from = Buffer::new(&96.0.into()).unwrap();
    from.set_bytes(&0.0.into(), byte_source(&bytes)).unwrap();
    let mut count = 0;
    for descr in every_descr() {
        let text = js(&descr.to_string());
        let size = descr.dtype.size() as i64;
        for (offset, shape, strides) in views(size) {
            let layout = || Some(options(offset, &shape, &strides));
            let read: JsValue = from.read(&text, layout()).unwrap().into();
            if strides.contains(&0) {
                continue; // a broadcast view is read-only
            }
            for (source, values) in sources(&read) {
                let label = format!("{descr} from {source}, offset {offset} shape {shape:?}");
                let mut to = Buffer::new(&96.0.into()).unwrap();
                let values: Values = values.unchecked_into();
                to.write(&text, layout(), values)
                    .unwrap_or_else(|e| panic!("{label}: {:?}", JsValue::from(e)));
                let back = Array::from(&to.read(&text, layout()).unwrap().into());
                let read = Array::from(&read);
                assert_eq!(back.length(), read.length(), "{label}");
                for i in 0..read.length() {
                    let (a, b) = (back.get(i), read.get(i));
                    assert!(same(&a, &b), "{label}[{i}]: wrote {b:?}, read {a:?}");
                }
                count += 1;
            }
        }
    }
    count
}
