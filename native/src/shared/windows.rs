//! Segments on Windows: named file mappings backed by the paging file.
//!
//! Windows keeps a named object for as long as some process has a handle
//! to it, and has no call that removes a name. So a segment lives while any
//! process has it open (the last close frees it, unlinked or not), and
//! [`unlink`] marks its header unlinked instead: [`attach`] then refuses it
//! as missing, as on Unix, but the name is taken until the last close.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU32, Ordering};

use windows_sys::Win32::Foundation::{
    CloseHandle, ERROR_ALREADY_EXISTS, ERROR_FILE_NOT_FOUND, GetLastError, HANDLE,
    INVALID_HANDLE_VALUE,
};
use windows_sys::Win32::System::Memory::{
    CreateFileMappingW, FILE_MAP_ALL_ACCESS, MEMORY_BASIC_INFORMATION, MEMORY_MAPPED_VIEW_ADDRESS,
    MapViewOfFile, OpenFileMappingW, PAGE_READWRITE, UnmapViewOfFile, VirtualQuery,
};

use super::{AT_FLAGS, AT_TOKEN, DATA_OFFSET, HEAD, MAGIC, SharedError, TOKEN_LEN, UNLINKED};

/// Longest name, in bytes: the mapping's object name (with its
/// `Local\bytelens-shm-` prefix) stays within `MAX_PATH`.
pub const MAX_NAME: usize = 240;

/// The name rule, as [`SharedError::BadName`]'s message ends.
pub(super) const NAME_RULE: &str = "on Windows: 1 to 240 bytes, without '\\' or NUL";

/// Where the system keeps segments' memory, as [`SharedError::NoRoom`] says.
pub(super) const SEGMENT_ROOT: &str = "the paging file";

/// What [`SharedError::Exists`]'s message adds.
pub(super) const EXISTS_NOTE: &str = " (on Windows a name stays taken while any process has its \
     segment open, unlinked or not)";

/// Whether `name` is one this OS takes (length checked by the caller).
pub(super) fn name_is_usable(name: &str) -> bool {
    !name.contains(['\\', '\0'])
}

/// Windows has no file identity for a mapping: the header's token tells
/// segments apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Ident;

/// A NUL-terminated UTF-16 object name in the session's namespace.
pub(super) fn object_name(kind: &str, name: &str) -> Vec<u16> {
    format!("Local\\bytelens-{kind}-{name}")
        .encode_utf16()
        .chain([0])
        .collect()
}

/// The last Win32 error, as an `io::Error` saying what was being done.
pub(super) fn last_error(what: &'static str) -> SharedError {
    SharedError::Os {
        what,
        err: std::io::Error::last_os_error(),
    }
}

/// A view of a named file mapping, and the mapping's handle (which keeps
/// the segment alive).
pub(super) struct Mapping {
    view: MEMORY_MAPPED_VIEW_ADDRESS,
    len: usize,
    section: HANDLE,
}

// SAFETY: the view is plain memory that any thread may read and write (the
// bytes are shared with other processes anyway, and only ever accessed as
// bytes through `&`/`&mut`); the handle is a kernel handle, usable from any
// thread.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `section` (0: all of it), taking the handle over.
    fn new(section: HANDLE, len: usize) -> Result<Mapping, SharedError> {
        // SAFETY: `section` is a valid file-mapping handle we own; a zero
        // length maps the whole section.
        let view = unsafe { MapViewOfFile(section, FILE_MAP_ALL_ACCESS, 0, 0, len) };
        if view.Value.is_null() {
            let err = last_error("mapping the segment");
            // SAFETY: the handle is ours and used no more.
            unsafe { CloseHandle(section) };
            return Err(err);
        }
        let mut mapping = Mapping { view, len, section };
        if len == 0 {
            // SAFETY: MEMORY_BASIC_INFORMATION is plain data (pointers and
            // integers), for which all zeros is a valid value.
            let mut info: MEMORY_BASIC_INFORMATION = unsafe { std::mem::zeroed() };
            // SAFETY: `info` is a valid out-parameter of the size passed; the
            // address is the view's start, which is mapped.
            let got = unsafe {
                VirtualQuery(
                    view.Value,
                    &mut info,
                    std::mem::size_of::<MEMORY_BASIC_INFORMATION>(),
                )
            };
            if got == 0 {
                return Err(last_error("reading the segment's size"));
            }
            mapping.len = info.RegionSize;
        }
        Ok(mapping)
    }

    /// The header's flag word.
    fn flags(&self) -> &AtomicU32 {
        // SAFETY: the view is at least a header page long (checked by every
        // caller), page-aligned, so AT_FLAGS is 4-byte aligned and in bounds;
        // the reference lives no longer than the view.
        unsafe {
            &*self
                .view
                .Value
                .cast::<u8>()
                .add(AT_FLAGS)
                .cast::<AtomicU32>()
        }
    }
}

impl Deref for Mapping {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: the view holds `len` bytes, mapped until `drop`.
        unsafe { std::slice::from_raw_parts(self.view.Value.cast::<u8>(), self.len) }
    }
}

impl DerefMut for Mapping {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and the view is writable.
        unsafe { std::slice::from_raw_parts_mut(self.view.Value.cast::<u8>(), self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the view and the handle are ours, used no more after this.
        unsafe {
            UnmapViewOfFile(self.view);
            CloseHandle(self.section);
        }
    }
}

/// Opens the segment `name`'s mapping: `Missing` if there is none.
fn open(name: &str) -> Result<HANDLE, SharedError> {
    let object = object_name("shm", super::checked(name)?);
    // SAFETY: `object` is a NUL-terminated UTF-16 string.
    let section = unsafe { OpenFileMappingW(FILE_MAP_ALL_ACCESS, 0, object.as_ptr()) };
    if section.is_null() {
        // SAFETY: no preconditions.
        if unsafe { GetLastError() } == ERROR_FILE_NOT_FOUND {
            return Err(SharedError::Missing {
                name: name.to_owned(),
            });
        }
        return Err(last_error("opening the segment"));
    }
    Ok(section)
}

/// Creates the segment `name`, `size` zeroed bytes, mapped.
pub(super) fn create(name: &str, size: usize) -> Result<(Mapping, Ident), SharedError> {
    let object = object_name("shm", super::checked(name)?);
    let size64 = size as u64;
    // SAFETY: `object` is a NUL-terminated UTF-16 string; INVALID_HANDLE_VALUE
    // asks for memory backed by the paging file; no security attributes.
    let section = unsafe {
        CreateFileMappingW(
            INVALID_HANDLE_VALUE,
            std::ptr::null(),
            PAGE_READWRITE,
            (size64 >> 32) as u32,
            size64 as u32,
            object.as_ptr(),
        )
    };
    if section.is_null() {
        return Err(last_error("creating the segment"));
    }
    // SAFETY: no preconditions; read right after the call it reports on.
    if unsafe { GetLastError() } == ERROR_ALREADY_EXISTS {
        // SAFETY: the handle (to the existing mapping) is ours.
        unsafe { CloseHandle(section) };
        return Err(SharedError::Exists {
            name: name.to_owned(),
        });
    }
    Ok((Mapping::new(section, size)?, Ident))
}

/// After a failed `create`: nothing to do, the segment goes with its last
/// handle.
pub(super) fn discard(_name: &str, _ident: Ident) {}

/// Maps the segment `name`, checking it can hold a header page.
pub(super) fn attach(name: &str) -> Result<(Mapping, Ident), SharedError> {
    let map = Mapping::new(open(name)?, 0)?;
    if map.len < DATA_OFFSET {
        return Err(SharedError::TooSmall {
            name: name.to_owned(),
            size: map.len as u64,
            needed: DATA_OFFSET as u64,
        });
    }
    Ok((map, Ident))
}

/// Marks the bytelens segment `name` unlinked (see the module's note),
/// giving the first [`HEAD`] bytes of its header.
pub(super) fn unlink(name: &str) -> Result<[u8; HEAD], SharedError> {
    let map = attach(name)?;
    let map = map.0;
    if map[..8] != MAGIC {
        return Err(SharedError::WrongFormat {
            name: name.to_owned(),
            why: "no bytelens header (on Windows only bytelens segments can be unlinked)",
        });
    }
    if map.flags().fetch_or(UNLINKED, Ordering::AcqRel) & UNLINKED != 0 {
        return Err(SharedError::Missing {
            name: name.to_owned(),
        });
    }
    let mut head = [0; HEAD];
    head.copy_from_slice(&map[..HEAD]);
    Ok(head)
}

/// Whether `name` names a segment not unlinked and, if `token` is given,
/// with that token. `Missing` if nothing has the name.
pub(super) fn names(
    name: &str,
    _ident: Ident,
    token: Option<[u8; TOKEN_LEN]>,
) -> Result<bool, SharedError> {
    let (map, _) = attach(name)?;
    if map.flags().load(Ordering::Acquire) & UNLINKED != 0 {
        return Err(SharedError::Missing {
            name: name.to_owned(),
        });
    }
    Ok(token.is_none_or(|token| map[AT_TOKEN..AT_TOKEN + TOKEN_LEN] == token))
}
