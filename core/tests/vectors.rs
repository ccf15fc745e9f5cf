//! Runs every case of `tests/vectors/*.json` (the cross-language conformance
//! vectors, with numpy's answers) through the core: layouts, operations,
//! typed and dynamic reads, typed writes, and error kinds.

use std::fs;
use std::path::PathBuf;

use bytelens_core::{
    DType, Descr, Element, Error, Layout, Scalar, View, ViewArgs, ViewMut, bf16, f16,
};
use serde_json::Value;

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors")
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes in 8-byte-aligned storage, as every real buffer is.
struct Aligned {
    words: Vec<u64>,
    len: usize,
}

impl Aligned {
    fn new(bytes: &[u8]) -> Aligned {
        let mut words = vec![0u64; bytes.len().div_ceil(8)];
        bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..bytes.len()].copy_from_slice(bytes);
        Aligned {
            words,
            len: bytes.len(),
        }
    }
    fn bytes(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.words)[..self.len]
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut bytemuck::cast_slice_mut(&mut self.words)[..self.len]
    }
}

fn usizes(v: &Value) -> Vec<usize> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as usize)
        .collect()
}

fn isizes(v: &Value) -> Vec<isize> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap() as isize)
        .collect()
}

fn opt_isize(v: &Value) -> Option<isize> {
    v.as_i64().map(|x| x as isize)
}

fn build_layout(spec: &Value, len: usize) -> Result<Layout, Error> {
    let descr: Descr = spec["dtype"].as_str().unwrap().parse()?;
    let offset = spec.get("offset").and_then(Value::as_u64).unwrap_or(0) as usize;
    let layout = match (spec.get("shape"), spec.get("strides")) {
        (None, _) => Layout::from_bytes(descr.dtype, len)?,
        (Some(shape), None) => {
            Layout::contiguous(descr.dtype, &usizes(shape))?.with_offset(offset)?
        }
        (Some(shape), Some(strides)) => {
            Layout::new(descr.dtype, offset, &usizes(shape), &isizes(strides))?
        }
    };
    Ok(layout.with_byte_order(descr.order))
}

fn apply(layout: Layout, op: &Value) -> Result<Layout, Error> {
    match op["op"].as_str().unwrap() {
        "reinterpret" => {
            let descr: Descr = op["dtype"].as_str().unwrap().parse()?;
            Ok(layout
                .reinterpret(descr.dtype)?
                .with_byte_order(descr.order))
        }
        "slice" => layout.slice(
            op["axis"].as_u64().unwrap() as usize,
            opt_isize(&op["start"]),
            opt_isize(&op["stop"]),
            op["step"].as_i64().unwrap() as isize,
        ),
        "index" => layout.index(
            op["axis"].as_u64().unwrap() as usize,
            op["index"].as_i64().unwrap() as isize,
        ),
        "transpose" => Ok(layout.transpose()),
        "permute" => layout.permute(&usizes(&op["axes"])),
        "reshape" => layout.reshape(&usizes(&op["shape"])),
        "broadcast_to" => layout.broadcast_to(&usizes(&op["shape"])),
        other => panic!("unknown op {other}"),
    }
}

/// Does a read value equal the vector's expected value (bit-exact for floats, NaN == NaN)?
fn same(got: Scalar, expected: &Value) -> bool {
    match (got, expected) {
        (Scalar::Bool(b), Value::Bool(e)) => b == *e,
        (s, Value::String(text)) if s.to_i128().is_some() => {
            text.parse::<i128>().ok() == s.to_i128()
        }
        (s, Value::Number(n)) if s.to_i128().is_some() => n.as_i64().map(i128::from) == s.to_i128(),
        (s, Value::String(text)) => {
            let f = s.to_f64();
            match text.as_str() {
                "nan" => f.is_nan(),
                "inf" => f == f64::INFINITY,
                "-inf" => f == f64::NEG_INFINITY,
                _ => false,
            }
        }
        (s, Value::Number(n)) => s.to_f64().to_bits() == n.as_f64().unwrap().to_bits(),
        _ => false,
    }
}

/// A JSON value as element type `T` (integers exactly, floats rounded to `T`).
trait FromJson: Element {
    fn from_json(v: &Value) -> Self;
}

macro_rules! from_json_int {
    ($($t:ty),*) => {$(
        impl FromJson for $t {
            fn from_json(v: &Value) -> $t {
                let wide: i128 = match v {
                    Value::String(s) => s.parse().unwrap(),
                    Value::Bool(b) => i128::from(*b),
                    other => other.as_i64().map(i128::from).or(other.as_u64().map(i128::from)).unwrap(),
                };
                <$t>::try_from(wide).unwrap()
            }
        }
    )*};
}
from_json_int!(u8, i8, u16, i16, u32, i32, u64, i64);

fn json_f64(v: &Value) -> f64 {
    match v.as_str() {
        Some("nan") => f64::NAN,
        Some("inf") => f64::INFINITY,
        Some("-inf") => f64::NEG_INFINITY,
        _ => v.as_f64().unwrap(),
    }
}

impl FromJson for f16 {
    fn from_json(v: &Value) -> f16 {
        f16::from_f64(json_f64(v))
    }
}
impl FromJson for bf16 {
    fn from_json(v: &Value) -> bf16 {
        bf16::from_f64(json_f64(v))
    }
}
impl FromJson for f32 {
    fn from_json(v: &Value) -> f32 {
        json_f64(v) as f32
    }
}
impl FromJson for f64 {
    fn from_json(v: &Value) -> f64 {
        json_f64(v)
    }
}
macro_rules! from_json_float8 {
    ($($t:ident),*) => {$(
        impl FromJson for bytelens_core::$t {
            fn from_json(v: &Value) -> bytelens_core::$t {
                bytelens_core::$t::from_f64(json_f64(v))
            }
        }
    )*};
}
from_json_float8!(F8E4M3FN, F8E5M2, F8E8M0FNU);

/// Writes through a typed `ViewMut<T>`.
fn write_typed<T: FromJson>(
    bytes: &mut [u8],
    layout: Layout,
    values: &[Value],
) -> Result<(), Error> {
    let values: Vec<T> = values.iter().map(T::from_json).collect();
    ViewMut::<T>::new(bytes, layout)?.copy_from(&values)
}

/// Reads through a typed `View<T>`, as scalars for comparison.
fn read_typed<T: Element>(
    bytes: &[u8],
    layout: Layout,
    wrap: fn(T) -> Scalar,
) -> Result<Vec<Scalar>, Error> {
    Ok(View::<T>::new(bytes, layout)?.iter().map(wrap).collect())
}

macro_rules! dispatch {
    ($dtype:expr, $bool_case:expr, |$t:ident, $wrap:ident| $body:expr) => {
        match $dtype {
            DType::Bool => $bool_case,
            DType::U8 => {
                type $t = u8;
                let $wrap = Scalar::U8;
                $body
            }
            DType::I8 => {
                type $t = i8;
                let $wrap = Scalar::I8;
                $body
            }
            DType::U16 => {
                type $t = u16;
                let $wrap = Scalar::U16;
                $body
            }
            DType::I16 => {
                type $t = i16;
                let $wrap = Scalar::I16;
                $body
            }
            DType::U32 => {
                type $t = u32;
                let $wrap = Scalar::U32;
                $body
            }
            DType::I32 => {
                type $t = i32;
                let $wrap = Scalar::I32;
                $body
            }
            DType::U64 => {
                type $t = u64;
                let $wrap = Scalar::U64;
                $body
            }
            DType::I64 => {
                type $t = i64;
                let $wrap = Scalar::I64;
                $body
            }
            DType::F16 => {
                type $t = f16;
                let $wrap = Scalar::F16;
                $body
            }
            DType::BF16 => {
                type $t = bf16;
                let $wrap = Scalar::BF16;
                $body
            }
            DType::F32 => {
                type $t = f32;
                let $wrap = Scalar::F32;
                $body
            }
            DType::F64 => {
                type $t = f64;
                let $wrap = Scalar::F64;
                $body
            }
            DType::F8E4M3FN => {
                type $t = bytelens_core::F8E4M3FN;
                let $wrap = Scalar::F8E4M3FN;
                $body
            }
            DType::F8E5M2 => {
                type $t = bytelens_core::F8E5M2;
                let $wrap = Scalar::F8E5M2;
                $body
            }
            DType::F8E8M0FNU => {
                type $t = bytelens_core::F8E8M0FNU;
                let $wrap = Scalar::F8E8M0FNU;
                $body
            }
        }
    };
}

struct Outcome {
    layout: Layout,
    values: Vec<Scalar>,
    bytes: Vec<u8>,
}

fn run(case: &Value) -> Result<Outcome, Error> {
    let mut buffer = Aligned::new(&hex(case["bytes"].as_str().unwrap()));
    let len = buffer.len;
    let mut layout = build_layout(&case["layout"], len)?;
    if case.get("unaligned").and_then(Value::as_bool) == Some(true) {
        layout = layout.unaligned();
    }
    for op in case
        .get("ops")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        layout = apply(layout, op)?;
    }
    if let Some(values) = case.get("write").and_then(Value::as_array) {
        let bytes = buffer.bytes_mut();
        dispatch!(
            layout.dtype(),
            write_typed::<u8>(bytes, layout, values),
            |T, _w| write_typed::<T>(bytes, layout, values)
        )?;
    }
    let bytes = buffer.bytes();
    // Dynamic reads through `Scalar`...
    let values: Vec<Scalar> = layout
        .offsets(len)?
        .map(|o| Scalar::read(layout.descr(), &bytes[o..]))
        .collect::<Result<_, _>>()?;
    // ...must agree with typed reads through `View<T>`.
    let typed = dispatch!(
        layout.dtype(),
        Ok(values.clone()),
        |T, wrap| read_typed::<T>(bytes, layout, wrap)
    )?;
    assert_eq!(typed.len(), values.len());
    for (t, v) in typed.iter().zip(&values) {
        assert!(
            t == v || t.to_f64().is_nan() && v.to_f64().is_nan(),
            "typed {t} vs dynamic {v}"
        );
    }
    Ok(Outcome {
        layout,
        values,
        bytes: bytes.to_vec(),
    })
}

#[test]
fn every_vector_passes() {
    let mut files: Vec<PathBuf> = fs::read_dir(vectors_dir())
        .expect("tests/vectors")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .filter(|p| !p.ends_with("args.json")) // a format of its own, below
        .filter(|p| !p.ends_with("stats.json")) // another, in tests/stats.rs
        .collect();
    files.sort();
    let mut total = 0;
    let mut failures = vec![];
    for file in &files {
        let doc: Value = serde_json::from_str(&fs::read_to_string(file).unwrap()).unwrap();
        for case in doc["cases"].as_array().unwrap() {
            total += 1;
            let name = format!(
                "{}: {}",
                file.file_name().unwrap().to_string_lossy(),
                case["name"]
            );
            let expect = &case["expect"];
            match (run(case), expect.get("error").and_then(Value::as_str)) {
                (Err(err), Some(kind)) if err.kind() == kind => {}
                (Err(err), kind) => failures.push(format!(
                    "{name}: got error {err:?} ({err}), expected {kind:?}"
                )),
                (Ok(_), Some(kind)) => failures.push(format!("{name}: succeeded, expected {kind}")),
                (Ok(out), None) => {
                    let shape: Vec<usize> = usizes(&expect["shape"]);
                    let strides: Vec<isize> = isizes(&expect["strides"]);
                    if out.layout.shape() != shape || out.layout.strides() != strides {
                        failures.push(format!(
                            "{name}: layout {:?}, expected {shape:?} {strides:?}",
                            out.layout
                        ));
                    }
                    if out.layout.size() > 0
                        && out.layout.offset() != expect["offset"].as_i64().unwrap() as isize
                    {
                        failures.push(format!(
                            "{name}: offset {}, expected {}",
                            out.layout.offset(),
                            expect["offset"]
                        ));
                    }
                    let want = expect["values"].as_array().unwrap();
                    if want.len() != out.values.len()
                        || !out.values.iter().zip(want).all(|(g, w)| same(*g, w))
                    {
                        let got: Vec<String> = out.values.iter().map(ToString::to_string).collect();
                        failures.push(format!("{name}: values {got:?}, expected {want:?}"));
                    }
                    if let Some(bytes) = expect.get("bytes").and_then(Value::as_str) {
                        if to_hex(&out.bytes) != bytes {
                            failures.push(format!(
                                "{name}: bytes {}, expected {bytes}",
                                to_hex(&out.bytes)
                            ));
                        }
                    }
                }
            }
        }
    }
    assert!(
        total >= 40,
        "only {total} vectors found in {}",
        vectors_dir().display()
    );
    assert!(
        failures.is_empty(),
        "{} of {total} vectors failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!("{total} vectors passed");
}

/// `args.json`: every binding resolves a view's arguments with [`ViewArgs`];
/// here the core itself must give each case's element offsets or error kind.
#[test]
fn every_argument_vector_resolves() {
    let text = fs::read_to_string(vectors_dir().join("args.json")).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    let cases = doc["cases"].as_array().unwrap();
    assert!(cases.len() >= 30, "args.json has {} cases", cases.len());
    let mut failures = vec![];
    for case in cases {
        let (args, expect) = (&case["args"], &case["expect"]);
        let len = case["nbytes"].as_u64().unwrap() as usize;
        let shape = args.get("shape").map(usizes);
        let strides = args.get("strides").map(isizes);
        let resolved = args["dtype"].as_str().unwrap().parse().and_then(|descr| {
            let args = ViewArgs {
                offset: args
                    .get("offset")
                    .map_or(0, |o| o.as_i64().unwrap() as isize),
                shape: shape.as_deref(),
                strides: strides.as_deref(),
                ..ViewArgs::new(descr)
            };
            let layout = args.resolve(Some(len))?;
            Ok((layout, layout.offsets(len)?.collect::<Vec<_>>()))
        });
        let name = &case["name"];
        match (resolved, expect.get("error").and_then(Value::as_str)) {
            (Err(err), Some(kind)) if err.kind() == kind => {}
            (Err(err), kind) => {
                failures.push(format!("{name}: got {err:?} ({err}), expected {kind:?}"))
            }
            (Ok((layout, _)), Some(kind)) => {
                failures.push(format!("{name}: got {layout:?}, expected {kind}"))
            }
            (Ok((layout, offsets)), None) => {
                let want = (
                    usizes(&expect["shape"]),
                    isizes(&expect["strides"]),
                    usizes(&expect["offsets"]),
                );
                if (layout.shape(), layout.strides(), offsets.as_slice())
                    != (&want.0[..], &want.1[..], &want.2[..])
                {
                    failures.push(format!(
                        "{name}: got {layout:?} at {offsets:?}, expected {want:?}"
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
