//! [`load`]: a file's arrays as checked views over the mapped file
//! ([`Loaded`]), each an [`Entry`]: an array ([`ArrayRef`], viewed as
//! typed elements by [`Loaded::view`]) or a GGUF tensor's quantised
//! blocks ([`Quantized`]).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use super::GgmlType;
use super::error::Error;
use super::npz::{self, Member};
use super::open::{describe, open};
use super::report::{ArrayInfo, COMPRESSED, MetaValue, Report};
use super::text::{quoted64, short64};
use crate::{Buffer, Descr, Element, Layout, LayoutError, MapMode, MappedFile, View, ViewMut};

/// How [`load_with`] reads a file: the mapping's mode, and the Python
/// `load`'s `strict` and `verify`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadOptions {
    /// Read-only, written through to the file, or copy-on-write.
    pub mode: MapMode,
    /// Refuse a misaligned array (an `AlignmentError`) rather than copy
    /// it, and a file with an array of a dtype bytelens lacks.
    pub strict: bool,
    /// Check every `.npz` member's CRC-32 now (deflated ones inflated now).
    pub verify: bool,
    /// The longest sharded checkpoint's index read, in bytes
    /// ([`MAX_INDEX`](super::MAX_INDEX) unless changed).
    pub max_index: u64,
}

impl LoadOptions {
    /// `mode`, neither strict nor verifying.
    pub fn new(mode: MapMode) -> LoadOptions {
        LoadOptions {
            mode,
            strict: false,
            verify: false,
            max_index: super::MAX_INDEX,
        }
    }
}

/// An array's bytes and the layout they are viewed through.
#[derive(Clone, Copy, Debug)]
pub struct ArrayRef<'a> {
    bytes: &'a [u8],
    layout: Layout,
}

impl<'a> ArrayRef<'a> {
    /// `layout` over `bytes`, checked: every element inside (alignment is
    /// the views' to check).
    pub fn new(bytes: &'a [u8], layout: Layout) -> Result<ArrayRef<'a>, LayoutError> {
        layout.unaligned().check(bytes.len())?;
        Ok(ArrayRef { bytes, layout })
    }

    /// The bytes the layout's offsets count from.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The layout: dtype, byte order, offset, shape and strides.
    pub fn layout(&self) -> Layout {
        self.layout
    }
}

impl<'a, T: Element> From<View<'a, T>> for ArrayRef<'a> {
    fn from(view: View<'a, T>) -> ArrayRef<'a> {
        ArrayRef {
            bytes: view.bytes(),
            layout: *view.layout(),
        }
    }
}

/// A quantised GGUF tensor (`Q4_K`, `Q8_0`, ...): its blocks in the file,
/// not dequantised until asked for ([`Quantized::dequantize`]).
#[derive(Clone, Copy, Debug)]
pub struct Quantized<'a> {
    /// The block type.
    pub ggml: GgmlType,
    /// Its shape, in numpy's order (GGUF stores it innermost first).
    pub shape: &'a [u64],
    /// The blocks' bytes.
    pub blocks: &'a [u8],
}

impl Quantized<'_> {
    /// The values as a new C-ordered buffer of `to` (float32, float16 or
    /// bfloat16), 64-byte aligned, by [`dequantize_into`](crate::dequantize_into).
    pub fn dequantize(&self, to: Descr) -> Result<Buffer, crate::Error> {
        let values: u64 = self.shape.iter().product();
        let nbytes = usize::try_from(values)
            .ok()
            .and_then(|n| n.checked_mul(to.dtype.size()))
            .ok_or(crate::Error::Alloc {
                nbytes: usize::MAX,
                align: 64,
            })?;
        let mut out = Buffer::new(nbytes)?;
        crate::dequantize_into(self.ggml, self.blocks, out.as_bytes_mut(), to)?;
        Ok(out)
    }
}

/// One entry of a [`Loaded`] file.
// An array's `Layout` is the crate's value type, copied by value everywhere
// (528 bytes); an entry lives no longer than the caller's look at it.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy, Debug)]
pub enum Entry<'a> {
    /// An array: its bytes and layout, and whether it may be written.
    Array {
        /// Its bytes and layout.
        array: ArrayRef<'a>,
        /// Whether [`Loaded::view_mut`] gives it (as Python's
        /// `flags.writeable`).
        writable: bool,
    },
    /// A GGUF tensor's quantised blocks.
    Quantized(Quantized<'a>),
}

/// Where an entry's bytes are.
enum Source {
    /// In the mapping of file `map`, at the info's offset.
    Mapped { map: usize },
    /// Copied into aligned memory (a misaligned array), read-only unless
    /// the file is mapped copy-on-write.
    Copied(Buffer),
    /// A deflated `.npz` member, inflated on first access.
    Compressed {
        map: usize,
        member: Member,
        inflated: OnceLock<Buffer>,
    },
    /// An array of a dtype bytelens lacks.
    Unavailable,
}

/// What [`load`] returns: a file's arrays by name, in the file's order,
/// over its mapping (the Python package's `FileArrays`).
pub struct Loaded {
    path: String,
    mode: MapMode,
    report: Report,
    maps: Vec<MappedFile>,
    /// Whether `maps` map their files or hold copies of them.
    backing: Backing,
    sources: Vec<Source>,
    by_name: HashMap<String, usize>,
    /// Held while a compressed member is inflated: one inflation however
    /// many threads ask.
    inflating: Mutex<()>,
}

/// The arrays of an `.npy`, `.npz`, safetensors or GGUF file, as views
/// over the mapped file: read-only under [`MapMode::Read`], written
/// through to the file under `ReadWrite` (not for an `.npz`, whose
/// members' CRC-32s writes would break), copy-on-write under `Copy`.
///
/// As Python's `bytelens.load`: an array whose offset is not a multiple of
/// its dtype's alignment is copied into aligned memory (read-only unless
/// the mapping is `Copy`); a deflated `.npz` member is inflated on its
/// first access; an array of a dtype bytelens lacks keeps its name, and
/// asking for it is a `FormatError`.
///
/// # Examples
/// ```
/// use bytelens::{MapMode, files};
/// let dir = std::env::temp_dir().join(format!("bytelens-load-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("w.safetensors");
/// let w = [1.0f32, 2.0, 3.0];
/// files::save(&path, &[("w", files::ArrayRef::from(bytelens::View::<f32>::from_bytes(bytemuck::cast_slice(&w))?))], &[], 64)?;
/// // SAFETY: the file is this example's own, and nothing shrinks it while loaded.
/// let loaded = unsafe { files::load(&path, MapMode::Read) }?;
/// assert_eq!(loaded.view::<f32>("w")?.iter().collect::<Vec<_>>(), w);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Safety
/// As for [`MappedFile::open`]: no process may shrink the file while the
/// [`Loaded`] (or a view of it) lives. On Unix, reading a page past the new
/// end raises SIGBUS, which kills the process (as with any mapping,
/// numpy.memmap's too). Writes by other processes are fine. Where that
/// cannot be promised, [`read`] gives the same arrays from a copy in memory.
pub unsafe fn load(path: impl AsRef<Path>, mode: MapMode) -> Result<Loaded, Error> {
    // SAFETY: passed on to the caller.
    unsafe { load_with(path, LoadOptions::new(mode)) }
}

/// [`load`] with Python's `strict` and `verify` ([`LoadOptions`]).
///
/// # Safety
/// As for [`load`]: no process may shrink the file (or a shard of a
/// sharded checkpoint) while the [`Loaded`] lives.
pub unsafe fn load_with(path: impl AsRef<Path>, options: LoadOptions) -> Result<Loaded, Error> {
    open_with(path.as_ref(), options, Backing::Map)
}

/// Like [`load`], but safe: each file is read into memory of this process's
/// own (page-aligned, as a mapping is) instead of mapped, so that no other
/// process can take its bytes away; a file that shrinks while it is read is
/// an error, never a crash. What it costs: the file's size in memory, and
/// the time to read it whole. `MapMode::Read` gives read-only arrays,
/// `MapMode::Copy` writable ones that stay private; `MapMode::ReadWrite`
/// is refused, since a copy cannot write through to the file.
///
/// # Examples
/// ```
/// use bytelens::{MapMode, files};
/// let dir = std::env::temp_dir().join(format!("bytelens-read-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("w.safetensors");
/// let w = [1.0f32, 2.0, 3.0];
/// files::save(&path, &[("w", files::ArrayRef::from(bytelens::View::<f32>::from_bytes(bytemuck::cast_slice(&w))?))], &[], 64)?;
/// let loaded = files::read(&path, MapMode::Read)?;
/// std::fs::File::options().write(true).open(&path)?.set_len(0)?; // another process truncates it
/// assert_eq!(loaded.view::<f32>("w")?.iter().collect::<Vec<_>>(), w);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read(path: impl AsRef<Path>, mode: MapMode) -> Result<Loaded, Error> {
    read_with(path, LoadOptions::new(mode))
}

/// [`read`] with Python's `strict` and `verify` ([`LoadOptions`]).
pub fn read_with(path: impl AsRef<Path>, options: LoadOptions) -> Result<Loaded, Error> {
    open_with(path.as_ref(), options, Backing::Read)
}

/// How a [`Loaded`] holds its files' bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Backing {
    /// Mapped ([`MappedFile::open`]: the caller keeps the file whole).
    Map,
    /// Read into memory ([`MappedFile::read`]).
    Read,
}

/// [`load_with`] or [`read_with`], as `backing` says.
fn open_with(path: &Path, options: LoadOptions, backing: Backing) -> Result<Loaded, Error> {
    if let Some(index) = super::sharded::index_path(path)? {
        return super::sharded::load(&index, options, backing);
    }
    let mut loaded = Loaded::empty(&path.display().to_string(), options.mode, backing);
    let report = loaded.add_file(path, options)?;
    loaded.report.format = report.format;
    loaded.report.size = report.size;
    loaded.report.version = report.version;
    loaded.report.metadata = report.metadata;
    Ok(loaded)
}

/// A check of a file's report before it is mapped (a shard's against its
/// index).
pub(crate) type Expect<'e> = &'e dyn Fn(&Report) -> Result<(), Error>;

impl Loaded {
    /// No arrays yet, loaded from `path`.
    pub(crate) fn empty(path: &str, mode: MapMode, backing: Backing) -> Loaded {
        Loaded {
            path: path.to_owned(),
            mode,
            report: Report {
                path: path.to_owned(),
                format: "",
                size: 0,
                arrays: Vec::new(),
                metadata: Vec::new(),
                version: None,
            },
            maps: Vec::new(),
            backing,
            sources: Vec::new(),
            by_name: HashMap::new(),
            inflating: Mutex::new(()),
        }
    }

    /// Maps the file at `path` and adds its arrays. Returns its report
    /// (without the arrays).
    pub(crate) fn add_file(&mut self, path: &Path, options: LoadOptions) -> Result<Report, Error> {
        self.add_file_checked(path, options, None)
    }

    /// [`Loaded::add_file`], `expect` checking the file's report first.
    pub(crate) fn add_file_checked(
        &mut self,
        path: &Path,
        options: LoadOptions,
        expect: Option<Expect<'_>>,
    ) -> Result<Report, Error> {
        let shown = path.display().to_string();
        let (mut f, info) = open(path, "")?;
        let (mut report, members) = describe(&shown, &mut f, info.len())?;
        if let Some(expect) = expect {
            expect(&report)?;
        }
        if report.format == "npz" && options.mode == MapMode::ReadWrite {
            return Err(Error::value(format!(
                "{shown}: an .npz member written in place would no longer match its CRC-32, and \
                 zip readers (np.load among them) would refuse it: load it with mode \"r\" or \"c\""
            )));
        }
        if options.strict {
            if let Some(a) = report.arrays.iter().find(|a| a.unavailable.is_some()) {
                return Err(Error::format(format!(
                    "{shown}: array {} has the dtype {}, which bytelens cannot view ({}); \
                     strict=True refuses the file (without it the other arrays load)",
                    quoted64(&a.name),
                    short64(&a.dtype),
                    a.unavailable.as_deref().unwrap_or("")
                )));
            }
        }
        let map = match self.backing {
            // SAFETY: as `MappedFile::open` asks, the caller of the unsafe
            // `load` (or `load_with`) keeps the file from shrinking while it
            // is mapped: `Backing::Map` is made by those alone.
            Backing::Map => unsafe { MappedFile::open(path, options.mode) }?,
            Backing::Read => MappedFile::read(path, options.mode)?,
        };
        if !same_file(&info, path) || map.as_bytes().len() as u64 != info.len() {
            return Err(Error::format(format!(
                "{shown}: the file changed while it was loaded ({} bytes, then {}): load it again",
                info.len(),
                map.as_bytes().len()
            )));
        }
        let at = self.maps.len();
        let by_member: HashMap<&str, &Member> =
            members.iter().map(|m| (m.name.as_str(), m)).collect();
        let mut sources = Vec::with_capacity(report.arrays.len());
        for a in &report.arrays {
            let source = if a.unavailable.is_some() {
                Source::Unavailable
            } else if a.ggml.is_some() {
                Source::Mapped { map: at }
            } else if a.copy.as_deref() == Some(COMPRESSED) {
                let member = a.member.as_deref().and_then(|m| by_member.get(m));
                Source::Compressed {
                    map: at,
                    member: (*member.ok_or_else(|| {
                        Error::format(format!("{shown}: no member for {}", a.name))
                    })?)
                    .clone(),
                    inflated: OnceLock::new(),
                }
            } else if a.copy.is_some() {
                if options.strict {
                    let err = view_error(&shown, a, map.as_bytes());
                    return Err(match err {
                        Error::Layout { message, source } => Error::Layout {
                            message: format!(
                                "{message} (strict=True refuses the copy that would align it)"
                            ),
                            source,
                        },
                        other => other,
                    });
                }
                Source::Copied(aligned_copy(&shown, a, map.as_bytes())?)
            } else {
                let layout = array_layout(&shown, a)?;
                if let Err(err) = layout.check(map.as_bytes().len()) {
                    return Err(naming(&shown, a, err));
                }
                Source::Mapped { map: at }
            };
            sources.push(source);
        }
        if options.verify {
            for m in &members {
                if m.method == 0 {
                    let (start, end) = (m.start as usize, (m.start + m.size) as usize);
                    let crc = npz::crc32(0, &map.as_bytes()[start..end]);
                    npz::check_crc(crc, m, &format!("{shown}, member {}", quoted64(&m.name)))?;
                }
            }
            for source in &sources {
                if let Source::Compressed {
                    member, inflated, ..
                } = source
                {
                    let _ = inflated.set(npz::inflate_member(map.as_bytes(), member, &shown)?);
                }
            }
        }
        self.maps.push(map);
        for (a, source) in std::mem::take(&mut report.arrays).into_iter().zip(sources) {
            self.by_name.insert(a.name.clone(), self.sources.len());
            self.sources.push(source);
            self.report.arrays.push(a);
        }
        Ok(report)
    }

    /// Takes `report` as the whole file's (a sharded checkpoint's index):
    /// the arrays in its order, each one loaded by name.
    pub(crate) fn reorder(&mut self, report: Report) {
        let mut sources: Vec<Option<Source>> = std::mem::take(&mut self.sources)
            .into_iter()
            .map(Some)
            .collect();
        let mut by_name = HashMap::with_capacity(report.arrays.len());
        for a in &report.arrays {
            let at = self.by_name[a.name.as_str()];
            by_name.insert(a.name.clone(), self.sources.len());
            self.sources
                .push(sources[at].take().unwrap_or(Source::Unavailable));
        }
        self.by_name = by_name;
        self.report = report;
    }

    /// The path loaded from (a sharded checkpoint's index).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The header's metadata, in the file's order.
    pub fn metadata(&self) -> &[(String, MetaValue)] {
        &self.report.metadata
    }

    /// What [`inspect`](super::inspect) reports of the file: every
    /// array's dtype, shape, offset and how it is handed out.
    pub fn report(&self) -> &Report {
        &self.report
    }

    /// The names, in the file's order.
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.report.arrays.iter().map(|a| a.name.as_str())
    }

    /// The number of arrays.
    pub fn len(&self) -> usize {
        self.report.arrays.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.report.arrays.is_empty()
    }

    /// Whether an array is called `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// The arrays bytelens cannot hand out, name and why.
    pub fn unavailable(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.report
            .arrays
            .iter()
            .filter_map(|a| Some((a.name.as_str(), a.unavailable.as_deref()?)))
    }

    fn index(&self, name: &str) -> Result<usize, Error> {
        self.by_name
            .get(name)
            .copied()
            .ok_or_else(|| Error::NotFound {
                name: name.to_owned(),
            })
    }

    /// The entry called `name`: an array's bytes and layout, or a
    /// quantised tensor's blocks. A deflated `.npz` member is inflated
    /// (once) here. `NotFound` for no such name; `Format` for a dtype
    /// bytelens lacks or a damaged member.
    pub fn entry(&self, name: &str) -> Result<Entry<'_>, Error> {
        let i = self.index(name)?;
        let a = &self.report.arrays[i];
        let path = self.path.as_str();
        fn array<'b>(
            path: &str,
            a: &ArrayInfo,
            bytes: &'b [u8],
            writable: bool,
        ) -> Result<Entry<'b>, Error> {
            let mut layout = array_layout(path, a)?;
            if !writable {
                layout = layout.read_only();
            }
            Ok(Entry::Array {
                array: ArrayRef { bytes, layout },
                writable,
            })
        }
        match &self.sources[i] {
            Source::Unavailable => Err(Error::format(format!(
                "{}: array {} has the dtype {}, which bytelens cannot view ({}); the file's other \
                 arrays loaded, and bl.inspect describes this one",
                self.path,
                quoted64(&a.name),
                short64(&a.dtype),
                a.unavailable.as_deref().unwrap_or("")
            ))),
            Source::Mapped { map } => {
                let bytes = self.maps[*map].as_bytes();
                match a.ggml {
                    Some(ggml) => Ok(Entry::Quantized(Quantized {
                        ggml,
                        shape: &a.shape,
                        blocks: &bytes[a.offset as usize..(a.offset + a.nbytes) as usize],
                    })),
                    None => array(path, a, bytes, self.mode != MapMode::Read),
                }
            }
            Source::Copied(buf) => array(path, a, buf.as_bytes(), self.mode == MapMode::Copy),
            Source::Compressed {
                map,
                member,
                inflated,
            } => {
                if inflated.get().is_none() {
                    let _one = self.inflating.lock().unwrap_or_else(|e| e.into_inner());
                    if inflated.get().is_none() {
                        let buf =
                            npz::inflate_member(self.maps[*map].as_bytes(), member, &self.path)?;
                        let _ = inflated.set(buf);
                    }
                }
                let buf = inflated
                    .get()
                    .ok_or_else(|| Error::format("inflation lost"))?;
                array(path, a, buf.as_bytes(), self.mode != MapMode::Read)
            }
        }
    }

    /// The array called `name` as elements of `T`, checked by the core's
    /// layout rules (in bounds, aligned, `T`'s dtype).
    pub fn view<T: Element>(&self, name: &str) -> Result<View<'_, T>, Error> {
        let i = self.index(name)?;
        match self.entry(name)? {
            Entry::Array { array, .. } => View::new(array.bytes, array.layout)
                .map_err(|err| naming(&self.path, &self.report.arrays[i], err)),
            Entry::Quantized(q) => Err(quantized_error(&self.path, name, q)),
        }
    }

    /// Like [`view`](Loaded::view), writable: under `ReadWrite` a mapped
    /// array's writes reach the file; under `Copy` they stay in this
    /// process. A copy under `ReadWrite` (misaligned) and anything under
    /// `Read` is refused with the core's `ReadOnly`.
    pub fn view_mut<T: Element>(&mut self, name: &str) -> Result<ViewMut<'_, T>, Error> {
        let i = self.index(name)?;
        let entry = self.entry(name)?;
        let (layout, writable) = match entry {
            Entry::Array { array, writable } => (array.layout, writable),
            Entry::Quantized(q) => return Err(quantized_error(&self.path, name, q)),
        };
        let a = &self.report.arrays[i];
        let path = &self.path;
        let bytes: Option<&mut [u8]> = if !writable {
            None
        } else {
            match &mut self.sources[i] {
                Source::Mapped { map } => self.maps[*map].as_bytes_mut(),
                Source::Copied(buf) => Some(buf.as_bytes_mut()),
                Source::Compressed { inflated, .. } => inflated.get_mut().map(Buffer::as_bytes_mut),
                Source::Unavailable => None,
            }
        };
        let Some(bytes) = bytes else {
            return Err(naming(path, a, LayoutError::ReadOnly));
        };
        ViewMut::new(bytes, layout).map_err(|err| naming(path, a, err))
    }
}

/// A [`Loaded`] file taken apart ([`Loaded::into_parts`]), for a binding
/// that keeps the memory alive by its own means (the Python extension's
/// buffers): the report, the mappings, and where each array's bytes are.
pub struct Parts {
    /// What [`inspect`](super::inspect) reports: the arrays, in the file's
    /// (or index's) order, and the metadata.
    pub report: Report,
    /// Each file mapped (one, or a sharded checkpoint's shards), in the
    /// mode loaded with.
    pub maps: Vec<MappedFile>,
    /// Where each array of the report is, in the report's order.
    pub parts: Vec<Part>,
}

/// Where one array of a [`Parts`] is; [`Parts::layout`] gives its layout
/// over those bytes.
pub enum Part {
    /// In mapping `map` (its layout's offset counts from the file's first
    /// byte); as writable as the mapping.
    Mapped {
        /// Which of [`Parts::maps`].
        map: usize,
    },
    /// A quantised GGUF tensor's blocks: bytes `start..end` of mapping
    /// `map` (the report's `ggml` names the block type).
    Blocks {
        /// Which of [`Parts::maps`].
        map: usize,
        /// The first byte of its blocks.
        start: usize,
        /// The byte after its last block.
        end: usize,
    },
    /// Copied into aligned memory (a misaligned array), its layout at
    /// offset 0: writable only under [`MapMode::Copy`], since under
    /// `ReadWrite` its writes would not reach the file.
    Copied {
        /// The copy.
        buffer: Buffer,
        /// Whether it may be written.
        writable: bool,
    },
    /// A deflated `.npz` member, inflated when asked ([`Deflated::inflate`]).
    Compressed(Box<Deflated>),
    /// An array of a dtype bytelens lacks (the report says why).
    Unavailable,
}

impl Parts {
    /// The layout of array `i` of the report over its bytes: the mapped
    /// file, its copy, or its inflated member; `None` for a quantised or
    /// unavailable one.
    pub fn layout(&self, i: usize) -> Option<Layout> {
        let a = self.report.arrays.get(i)?;
        if a.ggml.is_some() || a.unavailable.is_some() {
            return None;
        }
        array_layout(&self.report.path, a).ok()
    }
}

/// A deflated `.npz` member of a [`Parts`]: inflated once, on request, from
/// the bytes of its mapping.
pub struct Deflated {
    map: usize,
    member: Member,
    path: String,
    writable: bool,
    /// Inflated already (by `verify`).
    inflated: Option<Buffer>,
}

impl Deflated {
    /// Which of [`Parts::maps`] holds its deflated bytes.
    pub fn map(&self) -> usize {
        self.map
    }

    /// Whether the inflated array may be written (not under
    /// [`MapMode::Read`]: it is a copy, but the file's other arrays are
    /// read-only too).
    pub fn writable(&self) -> bool {
        self.writable
    }

    /// The member inflated into aligned memory of its size, its size and
    /// CRC-32 checked: `file` is the bytes of mapping [`map`](Deflated::map).
    /// A member `verify` inflated already is handed over, not inflated again.
    pub fn inflate(&mut self, file: &[u8]) -> Result<Buffer, Error> {
        match self.inflated.take() {
            Some(buffer) => Ok(buffer),
            None => npz::inflate_member(file, &self.member, &self.path),
        }
    }
}

impl Loaded {
    /// The report, the mappings and where each array is, for a binding
    /// that hands out views of its own (over memory it keeps alive).
    ///
    /// # Examples
    /// ```
    /// use bytelens::{MapMode, View, files::{self, ArrayRef, Part}};
    /// let dir = std::env::temp_dir().join(format!("bytelens-parts-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("p.safetensors");
    /// let w = View::<u8>::from_bytes(&[7u8, 8][..])?;
    /// files::save(&path, &[("w", ArrayRef::from(w))], &[], 64)?;
    /// let parts = files::read(&path, MapMode::Read)?.into_parts();
    /// let Part::Mapped { map } = parts.parts[0] else { panic!("a view") };
    /// let view = View::<u8>::new(parts.maps[map].as_bytes(), parts.layout(0).unwrap())?;
    /// assert_eq!((parts.report.arrays[0].name.as_str(), view.get(&[1])?), ("w", 8));
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_parts(self) -> Parts {
        let Loaded {
            path,
            mode,
            report,
            maps,
            sources,
            ..
        } = self;
        let mut parts = Vec::with_capacity(sources.len());
        for (a, source) in report.arrays.iter().zip(sources) {
            parts.push(match source {
                Source::Unavailable => Part::Unavailable,
                Source::Mapped { map } if a.ggml.is_some() => Part::Blocks {
                    map,
                    start: a.offset as usize,
                    end: (a.offset + a.nbytes) as usize,
                },
                Source::Mapped { map } => Part::Mapped { map },
                Source::Copied(buffer) => Part::Copied {
                    buffer,
                    writable: mode == MapMode::Copy,
                },
                Source::Compressed {
                    map,
                    member,
                    inflated,
                } => Part::Compressed(Box::new(Deflated {
                    map,
                    member,
                    path: path.clone(),
                    writable: mode != MapMode::Read,
                    inflated: inflated.into_inner(),
                })),
            });
        }
        Parts {
            report,
            maps,
            parts,
        }
    }
}

/// Why a quantised tensor has no typed view.
fn quantized_error(path: &str, name: &str, q: Quantized<'_>) -> Error {
    Error::type_error(format!(
        "{path}: array {} is a quantised {} tensor: its blocks are Entry::Quantized, and \
         Quantized::dequantize gives its values",
        quoted64(name),
        q.ggml.name().to_lowercase()
    ))
}

/// `err` naming the file and array: `"{path}: array 'w': {err}"`.
fn naming(path: &str, a: &ArrayInfo, err: LayoutError) -> Error {
    Error::Layout {
        message: format!("{path}: array {}: {err}", quoted64(&a.name)),
        source: err,
    }
}

/// The layout of `a` over its bytes (the mapped file, or its own copy
/// at offset 0).
fn array_layout(path: &str, a: &ArrayInfo) -> Result<Layout, Error> {
    let descr = a.descr.ok_or_else(|| {
        Error::format(format!("{path}: array {} has no dtype", quoted64(&a.name)))
    })?;
    // A misaligned array's copy starts at its first byte; a deflated
    // member's offset is in the member, which is its copy.
    let copied = a.copy.as_deref().is_some_and(|why| why != COMPRESSED);
    let offset = if copied { 0 } else { a.offset };
    let shape: Vec<usize> = a.shape.iter().map(|&n| n as usize).collect();
    let strides: Vec<isize> = a.strides.iter().flatten().map(|&s| s as isize).collect();
    Layout::new(descr.dtype, offset as usize, &shape, &strides)
        .map(|l| l.with_byte_order(descr.order))
        .map_err(|err| naming(path, a, err))
}

/// The error viewing `a` in place over `bytes` gives (a misaligned one).
fn view_error(path: &str, a: &ArrayInfo, bytes: &[u8]) -> Error {
    let mut at = a.clone();
    at.copy = None;
    match array_layout(path, &at) {
        Ok(layout) => match layout.check(bytes.len()) {
            Ok(()) => Error::format(format!("{path}: array {} is aligned", quoted64(&a.name))),
            Err(err) => naming(path, a, err),
        },
        Err(err) => err,
    }
}

/// `a`'s bytes copied into 64-byte aligned memory (file arrays are C or
/// Fortran order: their bytes are `offset..offset + nbytes`).
fn aligned_copy(path: &str, a: &ArrayInfo, bytes: &[u8]) -> Result<Buffer, Error> {
    let span = usize::try_from(a.offset)
        .ok()
        .zip(usize::try_from(a.offset + a.nbytes).ok())
        .and_then(|(s, e)| bytes.get(s..e))
        .ok_or_else(|| {
            Error::format(format!(
                "{path}: array {} lies past the file",
                quoted64(&a.name)
            ))
        })?;
    let mut buf =
        Buffer::new(span.len().max(1)).map_err(|err| Error::format(format!("{path}: {err}")))?;
    buf.as_bytes_mut()[..span.len()].copy_from_slice(span);
    Ok(buf)
}

/// Whether `path` still names the file whose metadata is `info`.
fn same_file(info: &std::fs::Metadata, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).is_ok_and(|now| (now.dev(), now.ino()) == (info.dev(), info.ino()))
    }
    #[cfg(not(unix))]
    {
        std::fs::metadata(path).is_ok_and(|now| now.len() == info.len())
    }
}

#[cfg(test)]
mod tests;
