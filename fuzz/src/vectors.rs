//! The cases of `tests/vectors/*.json`, compiled into the targets so that an
//! input can start from any of them by number.

use std::sync::OnceLock;

use serde_json::Value;

/// The files with a layout and operations per case, in the order
/// `cargo xtask fuzz` numbers their cases for the layout target's seeds.
const LAYOUT_FILES: [&str; 4] = [
    include_str!("../../tests/vectors/dtypes.json"),
    include_str!("../../tests/vectors/errors.json"),
    include_str!("../../tests/vectors/seeds.json"),
    include_str!("../../tests/vectors/strided.json"),
];

const ARGS_FILE: &str = include_str!("../../tests/vectors/args.json");

fn cases(text: &str) -> Vec<Value> {
    let file: Value = serde_json::from_str(text).expect("a vectors file is JSON");
    file["cases"].as_array().cloned().unwrap_or_default()
}

/// Every case with a layout (`layout`, `ops`, `bytes`, `unaligned`).
pub fn layout_cases() -> &'static [Value] {
    static CASES: OnceLock<Vec<Value>> = OnceLock::new();
    CASES.get_or_init(|| LAYOUT_FILES.iter().flat_map(|f| cases(f)).collect())
}

/// The cases of `args.json` (`nbytes`, `args`, `expect`).
pub fn args_cases() -> &'static [Value] {
    static CASES: OnceLock<Vec<Value>> = OnceLock::new();
    CASES.get_or_init(|| cases(ARGS_FILE))
}

/// Case `i`, counting round when past the end.
pub fn pick(cases: &[Value], i: u8) -> Option<&Value> {
    (!cases.is_empty()).then(|| &cases[usize::from(i) % cases.len()])
}

pub fn usizes(v: &Value) -> Option<Vec<usize>> {
    v.as_array()?
        .iter()
        .map(|x| x.as_u64().and_then(|x| usize::try_from(x).ok()))
        .collect()
}

pub fn isizes(v: &Value) -> Option<Vec<isize>> {
    v.as_array()?
        .iter()
        .map(|x| x.as_i64().and_then(|x| isize::try_from(x).ok()))
        .collect()
}
