//! Real files: `.npy`, `.npz`, safetensors (sharded checkpoints too) and
//! GGUF, loaded as checked views over one mapped file ([`load`]), written
//! with aligned tensors ([`save`]), and described without reading their
//! data ([`inspect`]).
//!
//! Everything of the core's header readers ([`bytelens_core::files`]:
//! [`read_header`], [`FileHeader`], [`FileError`], GGUF's types) is here
//! too, so `bytelens::files::read_header` still names it. This module is
//! the Python package's file layer (`bl.load`, `bl.save`, `bl.inspect`)
//! in Rust: the same rules and, word for word, the same messages, each
//! failure an [`Error`] variant that says which Python exception it is.
//!
//! | function | what it does |
//! |---|---|
//! | [`load`], [`load_with`] | maps a file (`unsafe`: nothing may shrink it while mapped); each array a [`View`](crate::View) by name ([`Loaded::view`]), or a GGUF tensor's [`Quantized`] blocks |
//! | [`read`], [`read_with`] | the same from a copy in memory: safe whatever other processes do to the file |
//! | [`save`] | writes `.npy` or safetensors, every array aligned, atomically |
//! | [`write_atomically`] | writes bytes to a new file and renames it over the path (`save`'s writer, and `bl.save`'s) |
//! | [`plan_save`] | what [`save`] writes, checked: the header, then each array's bytes ([`SavePlan`]) |
//! | [`inspect`] | a [`Report`] of the arrays, from the headers alone |
//! | [`inspect_raw`] | a [`Report`] of a raw file seen as a view and/or a plan's fields |
//!
//! # Examples
//! ```
//! use bytelens::{MapMode, View, files::{self, ArrayRef}};
//! let dir = std::env::temp_dir().join(format!("bytelens-files-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let path = dir.join("m.safetensors");
//! let w = [0.5f32, 1.5];
//! files::save(&path, &[("w", ArrayRef::from(View::<f32>::from_bytes(bytemuck::cast_slice(&w))?))], &[("format", "np")], 256)?;
//! let report = files::inspect(&path)?;
//! assert_eq!((report.format, report.arrays[0].offset % 256), ("safetensors", 0));
//! let loaded = files::read(&path, MapMode::Read)?; // or mapped: the unsafe files::load
//! assert_eq!(loaded.view::<f32>("w")?.get(&[1])?, 1.5);
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
mod load;
mod npz;
mod open;
mod raw;
mod report;
mod save;
mod sharded;
mod text;

use std::path::Path;

use crate::{OwnedPlan, ViewArgs};

pub use bytelens_core::files::*;
pub use error::{Error, OsDetail};
pub use load::{
    ArrayRef, Deflated, Entry, LoadOptions, Loaded, Part, Parts, Quantized, load, load_with, read,
    read_with,
};
pub use raw::{BUDGET, describe_raw, elements, read_plan};
pub use report::{ArrayInfo, COMPRESSED, MetaValue, Report, Strings};
pub use save::{ALIGN, MAX_ALIGN, SavePart, SavePlan, plan_save, save, write_atomically};
pub use sharded::{MAX_INDEX, read_index};
pub use text::quoted64;

/// Describes the file at `path`: its format (by its first bytes), each
/// array's name, dtype, shape, byte range and alignment, and what
/// [`load`] would copy and why, reading only the headers. Its `Display`
/// is what `bytelens inspect FILE` prints.
///
/// # Examples
/// ```
/// use bytelens::{View, files::{self, ArrayRef}};
/// let dir = std::env::temp_dir().join(format!("bytelens-inspect-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("a.npy");
/// files::save(&path, &[("a", ArrayRef::from(View::<u8>::from_bytes(&[1u8, 2, 3][..])?))], &[], 64)?;
/// let text = files::inspect(&path)?.to_string();
/// assert!(text.ends_with("a.npy: npy 1.0, 131 bytes, 1 array\n  name   dtype  shape  bytes     align  load\n  array  |u1    (3,)   128..131  128    view"), "{text}");
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn inspect(path: impl AsRef<Path>) -> Result<Report, Error> {
    inspect_with(path, MAX_INDEX)
}

/// [`inspect`], reading a sharded checkpoint's index up to `max_index`
/// bytes (as [`read_index`]).
///
/// # Examples
/// ```
/// let dir = std::env::temp_dir().join(format!("bytelens-inspect-with-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let index = dir.join("m.safetensors.index.json");
/// std::fs::write(&index, r#"{"weight_map": {}}"#)?;
/// assert!(bytelens::files::inspect_with(&index, 4).is_err());
/// assert!(bytelens::files::inspect_with(&index, 1024)?.arrays.is_empty());
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn inspect_with(path: impl AsRef<Path>, max_index: u64) -> Result<Report, Error> {
    let path = path.as_ref();
    if let Some(index) = sharded::index_path(path)? {
        return read_index(&index, max_index);
    }
    let shown = path.display().to_string();
    let (mut f, info) = open::open(path, "")?;
    Ok(open::describe(&shown, &mut f, info.len())?.0)
}

/// Describes the raw file at `path` (a file of no format) as `plan`'s
/// fields and/or one `view` (what `Buffer.view` takes), each placed by
/// the core and checked against the file's size, without reading it: the
/// [`Report`] of [`describe_raw`] (format `"raw"`), or why the file cannot
/// be opened (it must be a regular file) or an array does not fit, naming
/// the file and the field.
///
/// # Examples
/// ```
/// use bytelens::{ByteOrder, DType, Descr, ViewArgs, files};
/// let path = std::env::temp_dir().join(format!("bytelens-raw-doc-{}.bin", std::process::id()));
/// std::fs::write(&path, [0u8; 16])?;
/// let plan = files::read_plan("", "Header\nmagic <u4 1\nbody <u2 6\n")?;
/// let view = ViewArgs { offset: 4, ..ViewArgs::new(Descr::new(DType::F32, ByteOrder::Little)) };
/// let report = files::inspect_raw(&path, Some(view), Some(&plan))?;
/// let names: Vec<_> = report.arrays.iter().map(|a| (a.name.as_str(), a.start(), a.end())).collect();
/// assert_eq!(names, [("magic", 0, 4), ("body", 4, 16), ("view", 4, 16)]);
/// let err = files::inspect_raw(&path, Some(ViewArgs { offset: 20, ..view }), None).unwrap_err();
/// assert!(err.to_string().ends_with(".bin: offset 20 is outside the buffer of 16 bytes (offsets go from 0 to 16)"), "{err}");
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn inspect_raw(
    path: impl AsRef<Path>,
    view: Option<ViewArgs<'_>>,
    plan: Option<&OwnedPlan>,
) -> Result<Report, Error> {
    let path = path.as_ref();
    let (_f, info) = open::open(path, "")?;
    describe_raw(&path.display().to_string(), info.len(), view, plan)
}
