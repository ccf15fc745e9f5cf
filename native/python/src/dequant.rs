//! `Quantized.dequantize`: a GGUF tensor's blocks (a uint8 array over the
//! mapped file) dequantised by [`bytelens::dequantize_into`] into a new
//! 64-byte aligned `Buffer` or into an array the caller gives, with the
//! GIL released; into one that maps the blocks' own bytes of the file
//! elsewhere in memory (Linux tells through `/proc/self/maps`) by way of
//! new memory.

use std::ops::Range;

use numpy::PyUntypedArray;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::copy::{shape_text, write_result};
use super::dtype::to_descr;
use super::error::PyErrResult;
use super::source::Source;
use bytelens::files::GgmlType;
use bytelens::{DType, Descr, Layout, dequantize_into};

/// `blocks` (a C-contiguous uint8 array of whole `qtype` blocks)
/// dequantised to `dtype` (float32, float16 or bfloat16; float32 where
/// None) in the array of `shape` they make, into `out` (C-contiguous,
/// writable, of that shape and dtype) or a new array.
#[pyfunction]
#[pyo3(signature = (blocks, qtype, shape, dtype=None, out=None))]
pub(crate) fn dequantize<'py>(
    py: Python<'py>,
    blocks: &Bound<'py, PyAny>,
    qtype: &str,
    shape: Vec<usize>,
    dtype: Option<&Bound<'py, PyAny>>,
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let ggml = GgmlType::from_name(qtype)
        .filter(|t| bytelens::can_dequantize(*t))
        .ok_or_else(|| PyValueError::new_err(format!("bytelens dequantises no type {qtype:?}")))?;
    let to = match dtype {
        Some(dtype) => to_descr(dtype)?,
        None => Descr::native(DType::F32),
    };
    // One error for this mistake on the CPU and the GPU (kind "Dequantize").
    bytelens::check_dequantize_to(to).py_err(py)?;
    let source = Source::read(blocks, "dequantize")?;
    let layout = source.layout();
    if layout.descr().dtype != DType::U8 || !layout.is_c_contiguous() {
        return Err(PyValueError::new_err(
            "the blocks must be a C-contiguous uint8 array",
        ));
    }
    let result = Layout::contiguous(to.dtype, &shape).py_err(py)?;
    let info = ggml.info();
    let row = shape.last().copied().unwrap_or(1);
    if !row.is_multiple_of(info.block as usize) {
        return Err(PyValueError::new_err(format!(
            "shape {} cuts its rows of {row} values inside {ggml}'s blocks of {} values \
             (each row is whole blocks, as in a GGUF file)",
            shape_text(&shape),
            info.block
        )));
    }
    let elements = result.size();
    let want = elements / info.block as usize * info.bytes as usize;
    if !elements.is_multiple_of(info.block as usize) || layout.nbytes() != want {
        return Err(PyValueError::new_err(format!(
            "{} bytes of {ggml} blocks do not make {elements} elements ({want} bytes would)",
            layout.nbytes()
        )));
    }
    let parallel = result.nbytes() >= bytelens::PARALLEL_MIN;
    let fill = |bytes: &[u8], dst: &mut [u8]| dequantize_into(ggml, bytes, dst, to);
    if let Some(out) = out
        && writes_reach(&source, out)
    {
        // `out` is another mapping of the blocks' own bytes in the file:
        // the values go to new memory first, then into `out`.
        let values = write_result(py, &source, &result, None, parallel, fill)?;
        let values = Source::read(&values, "dequantize")?;
        let copy = |bytes: &[u8], dst: &mut [u8]| {
            dst.copy_from_slice(bytes);
            Ok(())
        };
        return write_result(py, &values, &result, Some(out), false, copy);
    }
    write_result(py, &source, &result, out, parallel, fill)
}

/// Whether writing `out` (a numpy array, not numpy's own memory) can
/// change the blocks of `source` through a file both map where they lie
/// apart in memory (at the same addresses, `write_result` sees the overlap
/// itself): see [`same_file_bytes`].
fn writes_reach(source: &Source<'_>, out: &Bound<'_, PyAny>) -> bool {
    if owned_by_numpy(out) || source.addresses().is_empty() {
        return false;
    }
    match Source::read(out, "dequantize") {
        Ok(target) => same_file_bytes(source.addresses(), target.addresses()),
        Err(_) => false, // write_result says what is wrong with `out`
    }
}

/// Whether `obj` is a numpy array over memory numpy allocated (through
/// its chain of bases), which no file backs: the common `out`, for which
/// `/proc/self/maps` is not read.
fn owned_by_numpy(obj: &Bound<'_, PyAny>) -> bool {
    let mut array = obj.clone();
    // Views of views: numpy collapses base chains, so this ends in a step or two.
    for _ in 0..64 {
        if array.cast::<PyUntypedArray>().is_err() {
            return false;
        }
        match array.getattr("base") {
            Ok(base) if base.is_none() => return true,
            Ok(base) => array = base,
            Err(_) => return false,
        }
    }
    false
}

/// Whether a shared mapping under `target` and a mapping under `blocks`
/// hold the same bytes of one file (its device and inode, and the offsets
/// in it), as Linux says (`PROCMAP_QUERY` on `/proc/self/maps`, 0.4 µs a
/// mapping, or before Linux 6.11 the file's text, ~1 µs a line of it);
/// writes to the one then change the other. False where neither answers.
#[cfg(target_os = "linux")]
fn same_file_bytes(blocks: Range<usize>, target: Range<usize>) -> bool {
    let Ok(maps) = std::fs::File::open("/proc/self/maps") else {
        return false;
    };
    let (read, written) = match (maps::query(&maps, &blocks), maps::query(&maps, &target)) {
        (Some(read), Some(written)) => (read, written),
        _ => match std::fs::read("/proc/self/maps") {
            Ok(text) => (maps::parse(&text, &blocks), maps::parse(&text, &target)),
            Err(_) => return false,
        },
    };
    read.iter().any(|from| {
        written.iter().any(|into| {
            into.shared
                && into.file == from.file
                && from.bytes.start < into.bytes.end
                && into.bytes.start < from.bytes.end
        })
    })
}

/// Other systems do not say which file a mapping holds (`Quantized.dequantize` documents it).
#[cfg(not(target_os = "linux"))]
fn same_file_bytes(_blocks: Range<usize>, _target: Range<usize>) -> bool {
    false
}

/// What Linux says of the file mappings over a range of this process's
/// addresses.
#[cfg(target_os = "linux")]
mod maps {
    use std::ops::Range;
    use std::os::fd::AsRawFd;

    /// Part of a range that maps a file.
    pub(super) struct FileBytes {
        /// Device (major, minor) and inode.
        pub(super) file: (u32, u32, u64),
        /// Writes reach the file, not private pages.
        pub(super) shared: bool,
        /// The file's bytes there.
        pub(super) bytes: Range<u64>,
    }

    /// `struct procmap_query` of `linux/fs.h` (Linux 6.11 and later).
    #[repr(C)]
    #[derive(Default)]
    struct ProcmapQuery {
        size: u64,
        query_flags: u64,
        query_addr: u64,
        vma_start: u64,
        vma_end: u64,
        vma_flags: u64,
        vma_page_size: u64,
        vma_offset: u64,
        inode: u64,
        dev_major: u32,
        dev_minor: u32,
        vma_name_size: u32,
        build_id_size: u32,
        vma_name_addr: u64,
        build_id_addr: u64,
    }

    /// `_IOWR('f', 17, struct procmap_query)`: 104 bytes, read and written.
    const PROCMAP_QUERY: u32 = 0xC068_6611;
    /// The mapping covering the address, or else the next one.
    const COVERING_OR_NEXT_VMA: u64 = 0x10;
    /// Only mappings of files.
    const FILE_BACKED_VMA: u64 = 0x20;
    /// `vma_flags`: a shared mapping.
    const SHARED: u64 = 0x08;

    /// The file mappings over `range`, asked of the kernel one mapping at
    /// a time; None where it does not know the request (before 6.11).
    pub(super) fn query(maps: &std::fs::File, range: &Range<usize>) -> Option<Vec<FileBytes>> {
        const _: () = assert!(std::mem::size_of::<ProcmapQuery>() == 104);
        let (mut at, end) = (range.start as u64, range.end as u64);
        let mut out = Vec::new();
        while at < end {
            let mut q = ProcmapQuery {
                size: std::mem::size_of::<ProcmapQuery>() as u64,
                query_flags: COVERING_OR_NEXT_VMA | FILE_BACKED_VMA,
                query_addr: at,
                ..ProcmapQuery::default()
            };
            // SAFETY: `q` is a live `struct procmap_query` (its layout is
            // the kernel's, 104 bytes, its `size` said), which the request
            // reads and writes; with `vma_name_size` and `build_id_size`
            // 0 the kernel writes nothing else. `maps` is an open file.
            let done =
                unsafe { libc::ioctl(maps.as_raw_fd(), PROCMAP_QUERY as libc::Ioctl, &raw mut q) };
            if done != 0 {
                return match std::io::Error::last_os_error().raw_os_error() {
                    Some(libc::ENOENT) => Some(out), // no file mapping from `at` on
                    _ => None,
                };
            }
            if q.vma_end <= at || q.vma_start >= end {
                break;
            }
            let (low, high) = (at.max(q.vma_start), end.min(q.vma_end));
            let from = q.vma_offset.saturating_add(low - q.vma_start);
            out.push(FileBytes {
                file: (q.dev_major, q.dev_minor, q.inode),
                shared: q.vma_flags & SHARED != 0,
                bytes: from..from.saturating_add(high - low),
            });
            at = q.vma_end;
        }
        Some(out)
    }

    /// The file mappings over `range`, from the text of `/proc/self/maps`:
    /// lines of `start-end perms offset major:minor inode path`.
    pub(super) fn parse(text: &[u8], range: &Range<usize>) -> Vec<FileBytes> {
        let (start, end) = (range.start as u64, range.end as u64);
        let hex = |field: &[u8]| u64::from_str_radix(std::str::from_utf8(field).ok()?, 16).ok();
        let line = |line: &[u8]| -> Option<FileBytes> {
            let mut fields = line.split(|&b| b == b' ').filter(|f| !f.is_empty());
            let (addresses, perms, offset) = (fields.next()?, fields.next()?, fields.next()?);
            let (device, inode) = (fields.next()?, fields.next()?);
            let inode: u64 = std::str::from_utf8(inode).ok()?.parse().ok()?;
            let mut ends = addresses.split(|&b| b == b'-');
            let (vma_start, vma_end) = (hex(ends.next()?)?, hex(ends.next()?)?);
            let mut dev = device.split(|&b| b == b':');
            let (major, minor) = (hex(dev.next()?)?, hex(dev.next()?)?);
            let (low, high) = (start.max(vma_start), end.min(vma_end));
            if inode == 0 || low >= high {
                return None; // anonymous memory, or elsewhere
            }
            let from = hex(offset)?.saturating_add(low - vma_start);
            Some(FileBytes {
                file: (major as u32, minor as u32, inode),
                shared: perms.get(3) == Some(&b's'),
                bytes: from..from.saturating_add(high - low),
            })
        };
        text.split(|&b| b == b'\n').filter_map(line).collect()
    }
}
