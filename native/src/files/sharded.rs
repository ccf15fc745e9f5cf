//! Sharded checkpoints: Hugging Face's index (`model.safetensors.index.json`:
//! `{"metadata": {...}, "weight_map": {tensor: shard file name}}`) beside
//! its shards, found from a path ([`index_path`]) and checked against the
//! shards' headers ([`read_index`]), with the Python package's checks and
//! messages word for word.
//!
//! The index is JSON read as Python's `json` reads it: objects keep their
//! keys' order, and a key given twice anywhere is refused (Python's
//! `object_pairs_hook`), where `serde_json`'s own maps would sort or keep
//! the last. Values are named in messages as Python names them (`int 1`,
//! `NoneType None`, `list ['a']`).

use std::collections::HashMap;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::MAX_HEADER;
use super::error::Error;
use super::load::{Backing, LoadOptions, Loaded};
use super::report::{ArrayInfo, MetaValue, Report};
use super::text::{json_string, printable, py_float, quoted, quoted64, repr, short};

/// The longest sharded checkpoint's index [`load`](super::load) reads
/// (Hugging Face's are a few MB for the largest models): the header limit
/// again.
pub const MAX_INDEX: u64 = MAX_HEADER as u64;

/// What a `*.json` file is read as, unless it starts as a file of arrays does.
const AS_INDEX: &str = "read as a sharded checkpoint's index (its name ends in .json)";

/// The index `path` names: itself where its name ends in `.json` and it
/// does not start as a file of arrays does, or the one
/// `*.safetensors.index.json` in the folder it names (None for a folder
/// without one, which opening then refuses as a folder, and for every
/// other path).
pub(crate) fn index_path(path: &Path) -> Result<Option<PathBuf>, Error> {
    let shown = path.display().to_string();
    if shown.ends_with(".json") {
        return Ok(if holds_arrays(path) {
            None
        } else {
            Some(path.to_path_buf())
        });
    }
    if !path.is_dir() {
        return Ok(None);
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return Ok(None); // opening it says why
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".safetensors.index.json"))
        .collect();
    names.sort();
    if names.len() > 1 {
        let listed: Vec<String> = names.iter().take(5).map(|n| quoted(n, 60)).collect();
        return Err(Error::format(format!(
            "{shown}: the folder holds {} sharded checkpoints' indexes ({}): load one of them",
            names.len(),
            listed.join(", ")
        )));
    }
    Ok(names.first().map(|n| path.join(n)))
}

/// Whether the file at `path` (named `*.json`) starts as a file of arrays
/// does (`\x93NUMPY`, a zip's `PK`, or a safetensors file's 8-byte header
/// length and then `{`). False where it cannot be read: reading it as an
/// index then says why.
fn holds_arrays(path: &Path) -> bool {
    let Ok((f, _)) = super::open::open(path, "") else {
        return false;
    };
    let mut start = Vec::new();
    if f.take(9).read_to_end(&mut start).is_err() {
        return false;
    }
    start.starts_with(b"\x93NUMPY")
        || start.starts_with(super::npz::ZIP_MAGIC)
        || start.starts_with(super::npz::EMPTY_ZIP_MAGIC)
        || start.get(8) == Some(&b'{')
}

/// A JSON value as Python's `json.loads` gives it, objects in their order.
#[derive(Debug)]
enum Json {
    Null,
    Bool(bool),
    UInt(u64),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    /// Python's name for the value's type.
    fn type_name(&self) -> &'static str {
        match self {
            Json::Null => "NoneType",
            Json::Bool(_) => "bool",
            Json::UInt(_) | Json::Int(_) => "int",
            Json::Float(_) => "float",
            Json::Str(_) => "str",
            Json::List(_) => "list",
            Json::Object(_) => "dict",
        }
    }

    /// Python's `repr` of the value.
    fn repr(&self) -> String {
        match self {
            Json::Null => "None".to_owned(),
            Json::Bool(b) => if *b { "True" } else { "False" }.to_owned(),
            Json::UInt(n) => n.to_string(),
            Json::Int(n) => n.to_string(),
            Json::Float(x) => py_float(&format!("{x:e}")),
            Json::Str(s) => repr(s),
            Json::List(items) => {
                let items: Vec<String> = items.iter().map(Json::repr).collect();
                format!("[{}]", items.join(", "))
            }
            Json::Object(pairs) => {
                let pairs: Vec<String> = pairs
                    .iter()
                    .map(|(k, v)| format!("{}: {}", repr(k), v.repr()))
                    .collect();
                format!("{{{}}}", pairs.join(", "))
            }
        }
    }

    /// Python's `json.dumps` of the value (`ensure_ascii`, `", "` and `": "`).
    fn dumps(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Str(s) => json_string(s, out),
            Json::List(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    item.dumps(out);
                }
                out.push(']');
            }
            Json::Object(pairs) => {
                out.push('{');
                for (i, (key, value)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    json_string(key, out);
                    out.push_str(": ");
                    value.dumps(out);
                }
                out.push('}');
            }
            number => out.push_str(&number.repr()),
        }
    }

    /// The object's value for `key`.
    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(pairs) => pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// Reads a [`Json`], recording the first key given twice in `repeated`.
struct Reader<'r> {
    repeated: &'r mut Option<String>,
}

impl<'de> DeserializeSeed<'de> for Reader<'_> {
    type Value = Json;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Json, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Reader<'_> {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Json, E> {
        Ok(Json::Bool(b))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Json, E> {
        Ok(Json::UInt(n))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Json, E> {
        Ok(Json::Int(n))
    }

    fn visit_f64<E: de::Error>(self, x: f64) -> Result<Json, E> {
        Ok(Json::Float(x))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Json, E> {
        Ok(Json::Str(s.to_owned()))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Json, E> {
        Ok(Json::Str(s))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Reader {
            repeated: &mut *self.repeated,
        })? {
            items.push(item);
        }
        Ok(Json::List(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut pairs: Vec<(String, Json)> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                *self.repeated = Some(key);
                return Err(de::Error::custom("a repeated key"));
            }
            let value = map.next_value_seed(Reader {
                repeated: &mut *self.repeated,
            })?;
            pairs.push((key, value));
        }
        Ok(Json::Object(pairs))
    }
}

/// `text` parsed as Python's `json.loads(text, object_pairs_hook=...)`
/// would, or the `FormatError` the Python package raises.
fn parse(shown: &str, text: &str) -> Result<Json, Error> {
    let mut repeated = None;
    let mut json = serde_json::Deserializer::from_str(text);
    let parsed = Reader {
        repeated: &mut repeated,
    }
    .deserialize(&mut json)
    .and_then(|value| json.end().map(|()| value));
    match parsed {
        Ok(value) => Ok(value),
        Err(_) if repeated.is_some() => Err(Error::format(format!(
            "{shown}: the key {} is given twice",
            quoted64(repeated.as_deref().unwrap_or(""))
        ))),
        Err(err) if err.to_string().starts_with("recursion limit exceeded") => Err(Error::format(
            format!("{shown}: JSON nested too deeply to be a sharded checkpoint's index"),
        )),
        Err(err) => Err(Error::format(format!(
            "{shown}: {AS_INDEX}, but it is not JSON: {}",
            short(&err.to_string(), 200)
        ))),
    }
}

/// `shard`, the file the index puts `tensor` in, if it names a file
/// beside the index: a plain file name, never a path (no separator, no
/// `..`, no drive), so that no index reaches outside its folder.
fn shard_name<'j>(shown: &str, tensor: &str, shard: &'j Json) -> Result<&'j str, Error> {
    let at = format!("{shown}: tensor {}", quoted64(tensor));
    let Json::Str(name) = shard else {
        return Err(Error::format(format!(
            "{at}: its shard is {} {}, not a file name",
            shard.type_name(),
            short(&shard.repr(), 64)
        )));
    };
    let bad = if matches!(name.as_str(), "" | "." | "..") {
        "is not a file name"
    } else if name.contains(['/', '\\', std::path::MAIN_SEPARATOR]) {
        "has a path separator: a shard is a file beside the index"
    } else if Path::new(name).is_absolute() || name.contains(':') {
        "is an absolute path or names a drive: a shard is a file beside the index"
    } else if name.contains('\0') {
        "holds a NUL character"
    } else {
        return Ok(name);
    };
    Err(Error::format(format!(
        "{at}: the shard name {} {bad}",
        quoted64(name)
    )))
}

/// A sharded checkpoint's index, checked against its shards' headers.
pub(crate) struct Index {
    /// The whole checkpoint's report: every tensor in the index's order,
    /// each with its shard.
    pub(crate) report: Report,
    /// The shards, in order of first use.
    pub(crate) shards: Vec<String>,
}

/// The index at `index`, read up to `max` bytes, checked against its
/// shards' headers. Everything wrong is a `FormatError` naming the index
/// and the tensor or shard: JSON that is not an index, a shard name that
/// is a path, a missing shard, a tensor the index names that its shard
/// lacks, a tensor a shard holds that the index does not put there, a
/// tensor in two shards.
pub(crate) fn read_index_shards(index: &Path, max: u64) -> Result<Index, Error> {
    // In messages: a name a folder listed may hold anything.
    let shown = printable(&index.display().to_string());
    let (mut f, info) = super::open::open(index, "index ")?;
    let mut data = Vec::new();
    // One byte past the size it had, to see it grew past `max` since.
    let wanted = info.len().saturating_add(1).min(max.saturating_add(1));
    super::open::read_more(&mut f, wanted, &mut data, &shown)?;
    if data.len() as u64 > max {
        return Err(Error::format(format!(
            "{shown}: an index of more than {} bytes (a sharded checkpoint's is a few MB)",
            super::text::thousands(max)
        )));
    }
    let text = std::str::from_utf8(&data).map_err(|err| {
        let at = err.valid_up_to();
        Error::format(format!(
            "{shown}: {AS_INDEX}, but it is not UTF-8 text (byte {at} is 0x{:02x})",
            data[at]
        ))
    })?;
    let parsed = parse(&shown, text)?;
    let Some(Json::Object(weight_map)) = parsed.get("weight_map") else {
        return Err(Error::format(format!(
            "{shown}: not a sharded checkpoint's index, a JSON object with a \"weight_map\" \
             object of tensor name -> shard file name"
        )));
    };
    let metadata = match parsed.get("metadata") {
        None => Vec::new(),
        Some(Json::Object(pairs)) => pairs
            .iter()
            .map(|(key, value)| {
                let text = match value {
                    Json::Str(s) => s.clone(),
                    other => {
                        let mut out = String::new();
                        other.dumps(&mut out);
                        out
                    }
                };
                (key.clone(), MetaValue::Str(text))
            })
            .collect(),
        Some(other) => {
            return Err(Error::format(format!(
                "{shown}: its \"metadata\" is {}, not an object",
                other.type_name()
            )));
        }
    };
    let folder = index.parent().unwrap_or(Path::new(""));
    let mut shard_of: HashMap<&str, &str> = HashMap::with_capacity(weight_map.len());
    let mut shards: Vec<String> = Vec::new(); // in order of first use
    for (tensor, shard) in weight_map {
        let shard = shard_name(&shown, tensor, shard)?;
        shard_of.insert(tensor, shard);
    }
    let mut seen = std::collections::HashSet::new();
    for (_, shard) in weight_map {
        if let Json::Str(name) = shard {
            if seen.insert(name.as_str()) {
                shards.push(name.clone());
            }
        }
    }
    let mut found: HashMap<String, ArrayInfo> = HashMap::new();
    let mut size = info.len();
    for shard in &shards {
        let shard_path = folder.join(shard);
        let shown_path = shard_path.display().to_string();
        let (mut g, shard_info) = match super::open::open(&shard_path, "") {
            Err(Error::Io(err)) if err.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::format(format!(
                    "{shown}: its shard {} is missing ({})",
                    quoted64(shard),
                    printable(&shown_path)
                )));
            }
            other => other?,
        };
        let report = match super::open::describe(&shown_path, &mut g, shard_info.len()) {
            Ok((report, _)) => report,
            Err(err @ Error::Format { .. }) => {
                return Err(Error::format(format!(
                    "{shown}: its shard {} is no safetensors file: {}",
                    quoted64(shard),
                    printable(&err.to_string())
                )));
            }
            Err(err) => return Err(err),
        };
        if report.format != "safetensors" {
            return Err(Error::format(format!(
                "{shown}: its shard {} is {}, not safetensors",
                quoted64(shard),
                report.format
            )));
        }
        size += shard_info.len();
        for mut a in report.arrays {
            if let Some(other) = found.get(&a.name) {
                return Err(Error::format(format!(
                    "{shown}: tensor {} is in two shards, {} and {}",
                    quoted64(&a.name),
                    quoted64(other.shard.as_deref().unwrap_or("")),
                    quoted64(shard)
                )));
            }
            match shard_of.get(a.name.as_str()) {
                None => {
                    return Err(Error::format(format!(
                        "{shown}: shard {} holds tensor {}, which the index does not name",
                        quoted64(shard),
                        quoted64(&a.name)
                    )));
                }
                Some(&put) if put != shard => {
                    return Err(Error::format(format!(
                        "{shown}: shard {} holds tensor {}, which the index puts in {}",
                        quoted64(shard),
                        quoted64(&a.name),
                        quoted64(put)
                    )));
                }
                Some(_) => {}
            }
            a.shard = Some(shard.clone());
            found.insert(a.name.clone(), a);
        }
    }
    let mut arrays = Vec::with_capacity(weight_map.len());
    for (tensor, _) in weight_map {
        match found.remove(tensor) {
            Some(a) => arrays.push(a),
            None => {
                return Err(Error::format(format!(
                    "{shown}: tensor {} is not in its shard {}",
                    quoted64(tensor),
                    quoted64(shard_of[tensor.as_str()])
                )));
            }
        }
    }
    let report = Report {
        path: index.display().to_string(),
        format: "safetensors index",
        size,
        arrays,
        metadata,
        version: None,
    };
    Ok(Index { report, shards })
}

/// [`load`](super::load) of a sharded checkpoint: every tensor of every
/// shard, in the index's order, each shard mapped once.
pub(crate) fn load(index: &Path, options: LoadOptions, backing: Backing) -> Result<Loaded, Error> {
    let Index { report, shards } = read_index_shards(index, options.max_index)?;
    let shown = printable(&index.display().to_string());
    let folder = index.parent().unwrap_or(Path::new(""));
    let mut by_shard: HashMap<&str, Vec<(&str, u64, u64)>> = HashMap::new();
    for a in &report.arrays {
        let shard = a.shard.as_deref().unwrap_or("");
        by_shard
            .entry(shard)
            .or_default()
            .push((a.name.as_str(), a.offset, a.nbytes));
    }
    let mut loaded = Loaded::empty(&index.display().to_string(), options.mode, backing);
    for shard in &shards {
        let mut wanted = by_shard.remove(shard.as_str()).unwrap_or_default();
        wanted.sort_unstable();
        // The shard read again to be mapped: it must still hold what the
        // index was checked against.
        let same_as_indexed = |now: &Report| {
            let mut held: Vec<(&str, u64, u64)> = now
                .arrays
                .iter()
                .map(|a| (a.name.as_str(), a.offset, a.nbytes))
                .collect();
            held.sort_unstable();
            if held == wanted {
                Ok(())
            } else {
                Err(Error::format(format!(
                    "{shown}: shard {} changed while it was loaded: load it again",
                    quoted64(shard)
                )))
            }
        };
        loaded.add_file_checked(&folder.join(shard), options, Some(&same_as_indexed))?;
    }
    loaded.reorder(report);
    Ok(loaded)
}

/// The sharded checkpoint whose index is the file at `index`, read up to
/// `max_index` bytes and checked against its shards' headers: its
/// [`Report`] (format `"safetensors index"`, every tensor in the index's
/// order with its [`shard`](ArrayInfo::shard)), as [`inspect`](super::inspect)
/// gives it for an index path. Each fault is a `FormatError` naming the
/// index and the tensor or shard.
///
/// # Examples
/// ```
/// use bytelens::{View, files::{self, ArrayRef}};
/// let dir = std::env::temp_dir().join(format!("bytelens-index-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let w = View::<u8>::from_bytes(&[1u8, 2][..])?;
/// files::save(dir.join("s1.safetensors"), &[("w", ArrayRef::from(w))], &[], 64)?;
/// let index = dir.join("m.safetensors.index.json");
/// std::fs::write(&index, r#"{"weight_map": {"w": "s1.safetensors"}}"#)?;
/// let report = files::read_index(&index, files::MAX_INDEX)?;
/// assert_eq!(report.arrays[0].shard.as_deref(), Some("s1.safetensors"));
/// std::fs::write(&index, r#"{"weight_map": {"w": "../s1.safetensors"}}"#)?;
/// let err = files::read_index(&index, files::MAX_INDEX).unwrap_err().to_string();
/// assert!(err.ends_with("the shard name '../s1.safetensors' has a path separator: a shard is a file beside the index"));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read_index(index: impl AsRef<Path>, max_index: u64) -> Result<Report, Error> {
    Ok(read_index_shards(index.as_ref(), max_index)?.report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<Json, String> {
        parse("i.json", text).map_err(|e| e.to_string())
    }

    #[test]
    fn repeated_keys_are_refused_at_any_depth() {
        let err = parsed(r#"{"weight_map": {"a": "x", "a": "y"}}"#).unwrap_err();
        assert_eq!(err, "i.json: the key 'a' is given twice");
        let err =
            parsed(r#"{"metadata": {"k": [{"é": 1, "é": 2}]}, "weight_map": {}}"#).unwrap_err();
        assert_eq!(err, r"i.json: the key '\\xe9' is given twice"); // repr of _short's text
    }

    #[test]
    fn objects_keep_their_order() {
        let json = parsed(r#"{"z": 1, "a": [true, null, 1.5, -2, "q"]}"#).unwrap();
        assert_eq!(json.repr(), "{'z': 1, 'a': [True, None, 1.5, -2, 'q']}");
        let mut out = String::new();
        json.dumps(&mut out);
        assert_eq!(out, r#"{"z": 1, "a": [true, null, 1.5, -2, "q"]}"#);
    }

    #[test]
    fn dumps_escapes_as_python_does() {
        let mut out = String::new();
        Json::Str("é\u{1f600}\"\n".into()).dumps(&mut out);
        assert_eq!(out, r#""\u00e9\ud83d\ude00\"\n""#);
        let mut out = String::new();
        Json::Float(1e20).dumps(&mut out);
        assert_eq!(out, "1e+20");
    }

    #[test]
    fn garbage_is_not_json() {
        for text in ["", "{\"weight_map\": {", "{\"n\": 1e999}"] {
            let err = parsed(text).unwrap_err();
            assert!(
                err.starts_with(&format!("i.json: {AS_INDEX}, but it is not JSON: ")),
                "{err}"
            );
        }
        let deep = "[".repeat(100_000) + &"]".repeat(100_000);
        assert_eq!(
            parsed(&deep).unwrap_err(),
            "i.json: JSON nested too deeply to be a sharded checkpoint's index"
        );
    }

    #[test]
    fn shard_names_are_file_names() {
        let says = |name: Json| match shard_name("i.json", "w", &name) {
            Ok(ok) => ok.to_owned(),
            Err(err) => err.to_string(),
        };
        assert_eq!(says(Json::Str("m.safetensors".into())), "m.safetensors");
        for (name, bad) in [
            ("", "is not a file name"),
            ("..", "is not a file name"),
            (
                "../m",
                "has a path separator: a shard is a file beside the index",
            ),
            (
                "a\\b",
                "has a path separator: a shard is a file beside the index",
            ),
            (
                "C:m",
                "is an absolute path or names a drive: a shard is a file beside the index",
            ),
            ("m\0", "holds a NUL character"),
        ] {
            assert_eq!(
                says(Json::Str(name.into())),
                format!(
                    "i.json: tensor 'w': the shard name {} {bad}",
                    quoted64(name)
                )
            );
        }
        assert_eq!(
            says(Json::UInt(1)),
            "i.json: tensor 'w': its shard is int 1, not a file name"
        );
        assert_eq!(
            says(Json::Null),
            "i.json: tensor 'w': its shard is NoneType None, not a file name"
        );
        assert_eq!(
            says(Json::List(vec![Json::Str("a".into())])),
            "i.json: tensor 'w': its shard is list ['a'], not a file name"
        );
    }
}
