//! Sharded checkpoints (Hugging Face's `model.safetensors.index.json`):
//! found from a path as Python's `_index_path` finds them. Reading the
//! index and its shards is not ported to Rust yet: such a path is refused
//! with a `FormatError` that says so, rather than read as something else.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::error::Error;
use super::load::{LoadOptions, Loaded};
use super::report::Report;

/// The index `path` names: itself where its name ends in `.json` and it
/// does not start as a file of arrays does, or the one
/// `*.safetensors.index.json` in the folder it names.
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
        return Ok(None);
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".safetensors.index.json"))
        .collect();
    names.sort();
    if names.len() > 1 {
        let listed: Vec<String> = names
            .iter()
            .take(5)
            .map(|n| super::text::quoted(n, 60))
            .collect();
        return Err(Error::format(format!(
            "{shown}: the folder holds {} sharded checkpoints' indexes ({}): load one of them",
            names.len(),
            listed.join(", ")
        )));
    }
    Ok(names.first().map(|n| path.join(n)))
}

/// Whether the file at `path` starts as a file of arrays does.
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

/// The refusal of a sharded checkpoint's index, which only the Python
/// package reads for now.
fn not_ported(index: &Path) -> Error {
    Error::format(format!(
        "{}: a sharded checkpoint's index: bytelens's Rust API does not read sharded \
         checkpoints yet (load each shard, or use the Python package)",
        super::text::printable(&index.display().to_string())
    ))
}

/// [`load`](super::load) of a sharded checkpoint: refused for now.
pub(crate) fn load(index: &Path, _options: LoadOptions) -> Result<Loaded, Error> {
    Err(not_ported(index))
}

/// [`inspect`](super::inspect) of a sharded checkpoint: refused for now.
pub(crate) fn inspect(index: &Path) -> Result<Report, Error> {
    Err(not_ported(index))
}
