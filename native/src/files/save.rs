//! [`save`]: `.npy` and safetensors files written byte for byte as the
//! Python package's `bl.save` writes them, so that every array maps
//! zero-copy, each header checked by the core as `load` will read it, and
//! written atomically (a temporary file beside the path, synced, renamed).

use std::fmt::Write as _;
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::error::{Error, OsDetail, reason};
use super::load::ArrayRef;
use super::open::not_regular;
use super::text::{json_string, printable, quoted64};
use super::{MAX_HEADER, read_header};
use crate::{ByteOrder, Descr, copy_into};

/// Where `save` starts the data (and every tensor it can) by default.
pub const ALIGN: usize = 64;
/// The largest `align` [`save`] takes: a page.
pub const MAX_ALIGN: usize = 4096;

/// Writes `arrays` to `path` so that [`load`](super::load) maps every one
/// zero-copy: the bytes Python's `bl.save(path, arrays, metadata,
/// align=align)` writes.
///
/// `.npy`: one array, its data at a multiple of `align` (and of 64);
/// Fortran order where the array is Fortran-contiguous and not C. No
/// metadata. `.safetensors`: named arrays and string `metadata`,
/// little-endian, the JSON header padded with spaces so that the data
/// starts at a multiple of `align`; tensors whose sizes are multiples of
/// `align` first, then the rest from the widest dtype down. `align` is a
/// power of two from the widest itemsize up to [`MAX_ALIGN`].
///
/// The save is atomic: a file beside `path` under a temporary name is
/// written, synced and renamed over `path` (a symlink's target); a save
/// that fails leaves the old file as it was and no temporary file.
///
/// # Examples
/// ```
/// use bytelens::{View, files::{self, ArrayRef}};
/// let dir = std::env::temp_dir().join(format!("bytelens-save-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let x = [1u16, 2, 3];
/// files::save(dir.join("x.npy"), &[("x", ArrayRef::from(View::<u16>::from_bytes(bytemuck::cast_slice(&x))?))], &[], 64)?;
/// let bytes = std::fs::read(dir.join("x.npy"))?;
/// assert_eq!((bytes.len(), &bytes[128..]), (134, &[1u8, 0, 2, 0, 3, 0][..]));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn save(
    path: impl AsRef<Path>,
    arrays: &[(&str, ArrayRef<'_>)],
    metadata: &[(&str, &str)],
    align: usize,
) -> Result<(), Error> {
    let path = path.as_ref();
    let shown = path.display().to_string();
    let plan = plan_save(&shown, arrays, metadata, align)?;
    // Converted before the new file is made: a conversion that fails is
    // the plan's kind of error, and no file is begun.
    let mut converted = Vec::new();
    for part in &plan.parts {
        if part.as_it_lies(arrays).is_none() {
            let mut out = vec![0u8; part.nbytes(arrays)];
            part.convert_into(arrays, &mut out)?;
            converted.push(out);
        }
    }
    let mut converted = converted.iter();
    let mut bytes: Vec<&[u8]> = vec![&plan.head];
    for part in &plan.parts {
        bytes.push(match part.as_it_lies(arrays) {
            Some(lying) => lying,
            None => converted.next().map_or(&[][..], Vec::as_slice),
        });
    }
    write_atomically(path, &bytes)
}

/// What [`save`] writes, in order: the header, then each array's bytes.
///
/// Made by [`plan_save`], which has checked everything [`save`] checks:
/// writing `head` and then every part's bytes gives the file [`save`]
/// writes (a binding writes it itself, atomically, as its language does).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SavePlan {
    /// The file's first bytes: the whole header, padded so that the data
    /// starts at a multiple of the alignment.
    pub head: Vec<u8>,
    /// The data after `head`, in the order written, with no gaps: one part
    /// an array.
    pub parts: Vec<SavePart>,
}

/// One array's data in a [`SavePlan`]: the index of the array in the
/// `arrays` the plan was made of, and whether its bytes are written as
/// they lie or converted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SavePart {
    /// The bytes of `arrays[i]` exactly as they lie (their span, from the
    /// layout's offset): the array is contiguous in the order the file
    /// wants and in its byte order, so nothing is copied.
    AsItLies(usize),
    /// `arrays[i]` converted into C order as `to` (gathered, or swapped to
    /// little-endian for safetensors): see [`SavePart::convert_into`].
    Converted(usize, Descr),
}

impl SavePart {
    /// Which of the plan's arrays this part writes.
    pub fn array(&self) -> usize {
        match *self {
            SavePart::AsItLies(i) | SavePart::Converted(i, _) => i,
        }
    }

    /// How many bytes this part writes, `arrays` being those the plan was
    /// made of.
    ///
    /// # Panics
    /// If `arrays` are fewer than those [`plan_save`] was given.
    pub fn nbytes(&self, arrays: &[(&str, ArrayRef<'_>)]) -> usize {
        arrays[self.array()].1.layout().nbytes()
    }

    /// The bytes this part writes where they are written as they lie;
    /// None where they are converted ([`SavePart::convert_into`]).
    ///
    /// # Panics
    /// If `arrays` are fewer than those [`plan_save`] was given.
    ///
    /// # Examples
    /// ```
    /// use bytelens::{View, files::{self, ArrayRef, SavePart}};
    /// let x = [1u16, 2];
    /// let arrays = [("x", ArrayRef::from(View::<u16>::from_bytes(bytemuck::cast_slice(&x))?))];
    /// let plan = files::plan_save("x.safetensors", &arrays, &[], 64)?;
    /// assert_eq!(plan.parts, [SavePart::AsItLies(0)]);
    /// assert_eq!(plan.parts[0].as_it_lies(&arrays), Some(&[1u8, 0, 2, 0][..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn as_it_lies<'a>(&self, arrays: &[(&str, ArrayRef<'a>)]) -> Option<&'a [u8]> {
        let SavePart::AsItLies(i) = *self else {
            return None;
        };
        let array = &arrays[i].1;
        let layout = array.layout();
        // A checked layout's offset is not negative and its elements lie
        // inside the bytes (`ArrayRef::new`); an empty one may point past.
        let start = usize::try_from(layout.offset()).unwrap_or(0);
        Some(
            array
                .bytes()
                .get(start..start + layout.nbytes())
                .unwrap_or(&[]),
        )
    }

    /// Writes the bytes this part writes into `out`, which must be
    /// [`nbytes`](SavePart::nbytes) long: converted, or copied as they lie.
    /// `out` is the caller's, so that a binding can hand it out as its
    /// language's array without another copy.
    ///
    /// # Panics
    /// If `arrays` are fewer than those [`plan_save`] was given.
    ///
    /// # Examples
    /// ```
    /// use bytelens::{ByteOrder, DType, Layout, files::{self, ArrayRef, SavePart}};
    /// let bytes = [0u8, 1, 0, 2];
    /// let layout = Layout::contiguous(DType::U16, &[2])?.with_byte_order(ByteOrder::Big);
    /// let arrays = [("x", ArrayRef::new(&bytes, layout)?)];
    /// let plan = files::plan_save("x.safetensors", &arrays, &[], 64)?;
    /// let mut out = vec![0u8; plan.parts[0].nbytes(&arrays)];
    /// plan.parts[0].convert_into(&arrays, &mut out)?;
    /// assert_eq!(out, [1, 0, 2, 0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn convert_into(
        &self,
        arrays: &[(&str, ArrayRef<'_>)],
        out: &mut [u8],
    ) -> Result<(), Error> {
        if let Some(bytes) = self.as_it_lies(arrays) {
            if out.len() != bytes.len() {
                return Err(Error::value(format!(
                    "a part of {} bytes cannot be written into {}",
                    bytes.len(),
                    out.len()
                )));
            }
            out.copy_from_slice(bytes);
            return Ok(());
        }
        let (i, to) = match *self {
            SavePart::AsItLies(i) => (i, arrays[i].1.layout().descr()),
            SavePart::Converted(i, to) => (i, to),
        };
        let array = &arrays[i].1;
        copy_into(array.bytes(), &array.layout().unaligned(), out, to).map_err(|err| match err {
            crate::Error::Layout(e) => Error::Layout {
                message: e.to_string(),
                source: e,
            },
            other => Error::value(other.to_string()),
        })
    }
}

/// The file [`save`] would write at `path` (its extension says the
/// format; it is not opened): every check [`save`] makes, made, and the
/// header and the data in the order to write them. See [`save`] for
/// `arrays`, `metadata` and `align`.
///
/// # Examples
/// ```
/// use bytelens::{Layout, DType, files::{self, ArrayRef, SavePart}};
/// let bytes = [1u8, 2, 3, 4, 5, 6];
/// // Every other byte: gathered into a copy.
/// let layout = Layout::new(DType::U8, 0, &[3], &[2])?;
/// let arrays = [("a", ArrayRef::new(&bytes, layout)?)];
/// let plan = files::plan_save("a.npy", &arrays, &[], 64)?;
/// assert_eq!((plan.head.len(), &plan.parts[..]), (128, &[SavePart::Converted(0, layout.descr())][..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn plan_save(
    path: &str,
    arrays: &[(&str, ArrayRef<'_>)],
    metadata: &[(&str, &str)],
    align: usize,
) -> Result<SavePlan, Error> {
    if !(1..=MAX_ALIGN).contains(&align) || !align.is_power_of_two() {
        return Err(Error::value(format!(
            "align={align}: a power of two from the widest dtype's itemsize up to {MAX_ALIGN}"
        )));
    }
    let (head, parts) = if path.ends_with(".npy") {
        if !metadata.is_empty() {
            return Err(Error::value(format!(
                "{path}: an .npy file has no metadata; safetensors files do"
            )));
        }
        let [(_, array)] = arrays else {
            return Err(Error::value(format!(
                "an .npy file holds one array, not {}",
                arrays.len()
            )));
        };
        npy_parts(path, array, align)?
    } else if path.ends_with(".safetensors") {
        safetensors_parts(path, arrays, metadata, align)?
    } else {
        return Err(Error::value(format!(
            "save writes .npy or .safetensors files, not {}",
            quoted64(path)
        )));
    };
    Ok(SavePlan { head, parts })
}

/// Refuses an `align` below the itemsize of `what`.
fn check_align(align: usize, itemsize: usize, what: &str) -> Result<(), Error> {
    if align < itemsize {
        return Err(Error::value(format!(
            "align={align} is below the itemsize of {what} ({itemsize} bytes): it could not keep it aligned"
        )));
    }
    Ok(())
}

/// A shape as Python's tuple `repr`: `()`, `(5,)`, `(2, 3)`.
fn tuple_text(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let comma = if shape.len() == 1 { "," } else { "" };
    format!("({}{comma})", dims.join(", "))
}

/// The header of `array`'s `.npy` file and its data, at a multiple of
/// `align` (and of 64, as the format asks).
fn npy_parts(
    path: &str,
    array: &ArrayRef<'_>,
    align: usize,
) -> Result<(Vec<u8>, Vec<SavePart>), Error> {
    let layout = array.layout();
    let descr = layout.descr();
    let info = descr.dtype.info();
    if !info.npy {
        let raw = if descr.dtype.kind() == 'f' {
            format!(
                "{}f1",
                if descr.dtype.size() == 1 {
                    '|'
                } else {
                    descr.order.prefix()
                }
            )
        } else {
            let order = if descr.dtype.size() == 1 {
                '|'
            } else {
                descr.order.prefix()
            };
            format!("{order}V{}", descr.dtype.size())
        };
        return Err(Error::type_error(format!(
            "{path}: an .npy header cannot name {} (np.save writes it as raw bytes '{raw}', and \
             loaders read bytes back): save it to a .safetensors file, as {}",
            descr.dtype.name(),
            info.safetensors
        )));
    }
    // numpy's name of the dtype: its type string where the byte order is
    // not the machine's.
    let what = if descr.dtype.size() > 1 && descr.order != ByteOrder::NATIVE {
        descr.to_string()
    } else {
        descr.dtype.name().to_owned()
    };
    check_align(align, descr.dtype.size(), &what)?;
    let align = align.max(ALIGN);
    let fortran = layout.is_f_contiguous() && !layout.is_c_contiguous();
    // Fortran order: the array's bytes as they lie. An .npy keeps the
    // array's byte order, so only a C order that is not packed is copied.
    let data = if fortran || layout.is_c_contiguous() {
        SavePart::AsItLies(0)
    } else {
        SavePart::Converted(0, descr)
    };
    let dict = format!(
        "{{'descr': '{descr}', 'fortran_order': {}, 'shape': {}}}",
        if fortran { "True" } else { "False" },
        tuple_text(layout.shape())
    );
    let (version, lead) = if dict.len() + align + 10 < 65536 {
        (1u8, 10)
    } else {
        (2, 12)
    };
    let total = (lead + dict.len() + 1).div_ceil(align) * align;
    let mut header = dict;
    header.extend(std::iter::repeat_n(' ', total - lead - 1 - header.len()));
    header.push('\n');
    let mut head = b"\x93NUMPY".to_vec();
    head.extend([version, 0]);
    if version == 1 {
        head.extend((header.len() as u16).to_le_bytes());
    } else {
        head.extend((header.len() as u32).to_le_bytes());
    }
    head.extend(header.as_bytes());
    loadable(path, &head, (head.len() + layout.nbytes()) as u64)?;
    Ok((head, vec![data]))
}

/// A `FileHeader` check: a `ValueError` where `load` would refuse it.
fn loadable(path: &str, head: &[u8], length: u64) -> Result<(), Error> {
    read_header(head, length).map(|_| ()).map_err(|err| {
        Error::value(format!(
            "{path}: bl.load would refuse the header bl.save was to write: {err}"
        ))
    })
}

/// The header of a safetensors file of `arrays` and its data, in order.
fn safetensors_parts(
    path: &str,
    arrays: &[(&str, ArrayRef<'_>)],
    metadata: &[(&str, &str)],
    align: usize,
) -> Result<(Vec<u8>, Vec<SavePart>), Error> {
    let mut tensors = Vec::with_capacity(arrays.len());
    let mut names = std::collections::HashSet::new();
    for (i, (name, array)) in arrays.iter().enumerate() {
        if *name == "__metadata__" {
            return Err(Error::value(
                "no tensor can be named '__metadata__': safetensors keeps the file's metadata there",
            ));
        }
        if !names.insert(*name) {
            return Err(Error::value(format!(
                "two tensors are named {}",
                quoted64(name)
            )));
        }
        let dtype = array.layout().dtype();
        check_align(
            align,
            dtype.size(),
            &format!("{} (tensor {})", dtype.name(), quoted64(name)),
        )?;
        let layout = array.layout();
        // Little-endian and in C order as they lie, or converted.
        let little = layout.byte_order() == ByteOrder::Little || dtype.size() == 1;
        let data = if little && layout.is_c_contiguous() {
            SavePart::AsItLies(i)
        } else {
            SavePart::Converted(i, Descr::new(dtype, ByteOrder::Little))
        };
        tensors.push((*name, dtype, layout, data));
    }
    // Sizes that keep `align` first, then the widest dtypes first.
    tensors.sort_by_key(|(_, dtype, layout, _)| {
        (
            layout.nbytes() % align != 0,
            std::cmp::Reverse(dtype.size()),
        )
    });
    let mut json = String::from("{");
    let mut first = true;
    if !metadata.is_empty() {
        // As a dict: a repeated key keeps its first place and its last value.
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        for &(key, value) in metadata {
            match pairs.iter_mut().find(|(k, _)| *k == key) {
                Some(pair) => pair.1 = value,
                None => pairs.push((key, value)),
            }
        }
        json.push_str("\"__metadata__\":{");
        for (i, (key, value)) in pairs.iter().enumerate() {
            if i > 0 {
                json.push(',');
            }
            json_string(key, &mut json);
            json.push(':');
            json_string(value, &mut json);
        }
        json.push('}');
        first = false;
    }
    let mut at = 0usize;
    for (name, dtype, layout, _) in &tensors {
        if !first {
            json.push(',');
        }
        first = false;
        json_string(name, &mut json);
        let dims: Vec<String> = layout.shape().iter().map(usize::to_string).collect();
        let _ = write!(
            json,
            ":{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{at},{}]}}",
            dtype.info().safetensors,
            dims.join(","),
            at + layout.nbytes()
        );
        at += layout.nbytes();
    }
    json.push('}');
    let mut encoded = json.into_bytes();
    let pad = (align - (8 + encoded.len()) % align) % align;
    encoded.extend(std::iter::repeat_n(b' ', pad));
    if encoded.len() > MAX_HEADER {
        return Err(Error::value(format!(
            "{path}: the header would be {} bytes, more than the {MAX_HEADER} bl.load reads (most of it metadata?)",
            encoded.len()
        )));
    }
    let mut head = (encoded.len() as u64).to_le_bytes().to_vec();
    head.extend(encoded);
    loadable(path, &head, (head.len() + at) as u64)?;
    Ok((head, tensors.into_iter().map(|t| t.3).collect()))
}

/// The longest start of `name` of at most `limit` bytes, cut between
/// characters.
fn name_start(name: &str, limit: usize) -> &str {
    let mut end = 0;
    for (i, c) in name.char_indices() {
        if i + c.len_utf8() > limit {
            break;
        }
        end = i + c.len_utf8();
    }
    &name[..end]
}

/// Twelve hex digits no other save in this process or another is likely
/// to pick at the same moment.
fn token() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    format!("{:012x}", h.finish() & 0xFFFF_FFFF_FFFF)
}

/// Writes `parts`, one after another, to `path` atomically: a new file
/// beside `path` (a symlink's target) under a temporary name, written,
/// synced to disk and renamed over `path`. Readers see the old file whole
/// or the new one whole, and whatever maps the old file keeps its bytes.
/// On any error the new file is removed and the old one kept. This is
/// [`save`]'s writer and the Python package's: `bl.save` hands the
/// header and the arrays' bytes here.
///
/// A replaced file keeps its permission bits; a new one gets `0o666` less
/// the umask. On Unix the folder is synced too, so that the rename
/// reaches the disk. Windows renames over no read-only file (refused
/// before the new file exists, which would copy the bit and then resist
/// removal) and over no file that is mapped or open without delete
/// sharing: a `PermissionDenied` error that says so.
///
/// Each failure is an [`Error::Io`] whose inner error is an [`OsDetail`]
/// (Python's `errno`, `filename`, `winerror`), worded as `bl.save` words
/// it.
///
/// # Examples
/// ```
/// let dir = std::env::temp_dir().join(format!("bytelens-atomic-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// bytelens::files::write_atomically(dir.join("a.bin"), &[b"head", b"data"])?;
/// assert_eq!(std::fs::read(dir.join("a.bin"))?, b"headdata");
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_atomically(path: impl AsRef<Path>, parts: &[&[u8]]) -> Result<(), Error> {
    write_with(path.as_ref(), |f| {
        parts.iter().try_for_each(|part| f.write_all(part))
    })
}

/// Why Windows refuses to rename over a file (Win32 error codes): access
/// denied, a sharing violation, or a mapped view of it still open.
const IN_USE_WINERRORS: [i32; 3] = [5, 32, 1224];

/// `path` with every symlink resolved, as Python's `os.path.realpath`: a
/// missing file's folder resolved, and a dangling symlink followed to
/// where it points (the file `save` creates).
fn real_path(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    let mut path = path.to_path_buf();
    for _ in 0..40 {
        let Ok(to) = std::fs::read_link(&path) else {
            break;
        };
        path = match path.parent() {
            Some(folder) => folder.join(to),
            None => to,
        };
    }
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match (std::fs::canonicalize(folder), path.file_name()) {
        (Ok(folder), Some(name)) => folder.join(name),
        _ => path,
    }
}

/// The system's error `err` about `path`, as Python raises it: `[Errno
/// N] reason: 'path'` (and `-> 'to'` for a rename).
fn os_error(err: io::Error, path: &Path, to: Option<&Path>) -> Error {
    let mut detail = OsDetail::new(&err, reason_as_is(&err));
    detail.filename = Some(path.to_path_buf());
    detail.filename2 = to.map(Path::to_path_buf);
    detail.into_error(err.kind())
}

/// The system's text for `err` as Python's `strerror`, without the ` (os
/// error N)` std adds.
fn reason_as_is(err: &io::Error) -> String {
    let text = err.to_string();
    match text.rfind(" (os error ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

/// Why Windows would not replace `shown`, which is read-only.
#[cfg(any(windows, test))]
fn read_only(shown: &str) -> Error {
    let mut detail = OsDetail::new(
        &io::Error::from(io::ErrorKind::PermissionDenied),
        format!(
            "{shown}: the file is read-only, and Windows replaces no read-only file: clear its \
             read-only attribute first (os.chmod(path, stat.S_IWRITE))"
        ),
    );
    detail.windows_refused = true;
    detail.into_error(io::ErrorKind::PermissionDenied)
}

/// Why Windows would not rename over `shown` (`err`), and what to do.
fn in_use(shown: &str, err: &io::Error) -> Error {
    let mut detail = OsDetail::new(
        err,
        format!(
            "{shown}: Windows cannot replace the file while it is mapped or open ({}): arrays \
             bl.load returned for it, here or in another process, map it until they are gone (del \
             them, or copy what you need first), or save to another path",
            reason(err).trim_end_matches('.')
        ),
    );
    detail.windows_refused = true;
    detail.into_error(io::ErrorKind::PermissionDenied)
}

/// A write, flush or sync of the new file that failed (`EFBIG`, `ENOSPC`,
/// `EIO`): named, with the path as Python's `filename`.
fn write_failed(path: &Path, shown: &str, err: &io::Error) -> Error {
    let mut detail = OsDetail::new(
        err,
        format!(
            "{}: writing the new file failed ({}); the old file is kept",
            printable(shown),
            reason(err)
        ),
    );
    detail.filename = Some(path.to_path_buf());
    detail.into_error(err.kind())
}

/// [`write_atomically`], the new file written by `write`.
fn write_with(
    path: &Path,
    write: impl FnOnce(&mut std::fs::File) -> io::Result<()>,
) -> Result<(), Error> {
    let shown = path.display().to_string();
    let target = real_path(path);
    let folder = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let old = match std::fs::metadata(&target) {
        Ok(info) => Some(info),
        Err(err) if err.kind() == io::ErrorKind::NotFound => None,
        Err(err) => return Err(os_error(err, &target, None)),
    };
    if let Some(info) = &old {
        if !info.is_file() {
            return Err(not_regular(&shown, info.file_type()));
        }
        // POSIX renames over a read-only file in a writable folder;
        // Windows does not.
        #[cfg(windows)]
        if info.permissions().readonly() {
            return Err(read_only(&shown));
        }
    }
    let temp = folder.join(format!(".{}.{}.tmp", name_start(&name, 180), token()));
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)
        .map_err(|err| {
            OsDetail::new(
                &err,
                format!(
                    "{shown}: cannot create {}, the new file bl.save renames over it: {}",
                    temp.display(),
                    reason(&err).to_lowercase()
                ),
            )
            .into_error(err.kind())
        })?;
    let result = (|| {
        #[cfg(unix)]
        if let Some(info) = &old {
            // The file replaced keeps its permission bits.
            use std::os::unix::fs::PermissionsExt;
            let bits = std::fs::Permissions::from_mode(info.permissions().mode() & 0o777);
            std::fs::set_permissions(&temp, bits).map_err(|err| {
                let mut detail = OsDetail::new(
                    &err,
                    format!(
                        "{shown}: giving the new file the old one's permission bits failed ({})",
                        reason(&err)
                    ),
                );
                detail.filename = Some(temp.clone());
                detail.into_error(err.kind())
            })?;
        }
        write(&mut f)
            .and_then(|()| f.flush())
            .and_then(|()| f.sync_all())
            .map_err(|err| write_failed(path, &shown, &err))?;
        drop(f);
        std::fs::rename(&temp, &target).map_err(|err| {
            let refused = err
                .raw_os_error()
                .is_some_and(|code| IN_USE_WINERRORS.contains(&code));
            if cfg!(windows) && old.is_some() && refused {
                in_use(&shown, &err)
            } else {
                os_error(err, &temp, Some(&target))
            }
        })
    })();
    if let Err(err) = result {
        let _ = std::fs::remove_file(&temp);
        return Err(err);
    }
    // The rename itself, to disk: POSIX syncs it through the folder.
    // Windows opens no folder as a file, so there the rename reaches the
    // disk when the system next writes the volume's metadata (the new
    // file's bytes were synced above either way).
    #[cfg(unix)]
    if let Ok(dir) = std::fs::File::open(&folder) {
        let _ = dir.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests;
