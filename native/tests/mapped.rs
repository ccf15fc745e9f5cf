//! `MappedFile::open` maps regular files only, and refuses anything else
//! at once (a FIFO with no writer used to block `open` forever); what it
//! maps reads the file, writes through to it under `ReadWrite` and keeps
//! its writes private under `Copy`. All but the FIFO and device cases run
//! on Windows too (under Wine here).

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use bytelens::{MapMode, MappedFile, SharedError};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bytelens-mapped-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).unwrap();
    dir
}

fn open_error(path: PathBuf, mode: MapMode) -> std::io::Error {
    // On a thread, so that a regression that blocks fails the test instead of hanging it.
    let (done, result) = mpsc::channel();
    std::thread::spawn(move || {
        // SAFETY: nothing here is mapped successfully, let alone shrunk.
        let _ = done.send(unsafe { MappedFile::open(&path, mode) }.err());
    });
    match result.recv_timeout(Duration::from_secs(20)) {
        Ok(Some(SharedError::Os { err, .. })) => err,
        Ok(other) => panic!("expected an OS error, got {other:?}"),
        Err(_) => panic!("MappedFile::open blocked for 20 s"),
    }
}

fn map(path: &Path, mode: MapMode) -> MappedFile {
    // SAFETY: every file mapped here is its test's own, and nothing shrinks it while mapped.
    unsafe { MappedFile::open(path, mode) }.unwrap()
}

/// Writes `data` through the mapping's address (the only way to write a `MappedFile`).
fn write_at(file: &mut MappedFile, at: usize, data: &[u8]) {
    assert!(at + data.len() <= file.as_bytes().len());
    let ptr = file.as_ptr();
    // SAFETY: `file` is a writable mapping of at least `at + data.len()`
    // bytes (asserted above), borrowed mutably, so nothing else reads or
    // writes them meanwhile.
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), ptr.add(at), data.len()) };
}

#[test]
fn a_directory_is_is_a_directory() {
    let dir = scratch("dir");
    for mode in [MapMode::Read, MapMode::ReadWrite, MapMode::Copy] {
        let err = open_error(dir.clone(), mode);
        assert_eq!(err.kind(), ErrorKind::IsADirectory, "{mode:?}: {err}");
        assert_eq!(
            err.to_string(),
            format!(
                "{} is a directory: only regular files can be mapped",
                dir.display()
            )
        );
    }
    std::fs::remove_dir(dir).unwrap();
}

#[test]
fn a_missing_file_is_not_found_and_named() {
    let dir = scratch("missing");
    let path = dir.join("absent.bin");
    for mode in [MapMode::Read, MapMode::ReadWrite, MapMode::Copy] {
        let err = open_error(path.clone(), mode);
        assert_eq!(err.kind(), ErrorKind::NotFound, "{mode:?}: {err}");
        assert!(
            err.to_string()
                .starts_with(&format!("{}: ", path.display())),
            "{err}"
        );
    }
    assert!(!path.exists(), "opening must not create the file");
    std::fs::remove_dir(dir).unwrap();
}

#[test]
fn a_regular_file_maps_its_bytes() {
    let dir = scratch("file");
    let file = dir.join("data");
    std::fs::write(&file, [1u8, 2, 3, 4]).unwrap();
    for mode in [MapMode::Read, MapMode::ReadWrite, MapMode::Copy] {
        let mapped = map(&file, mode);
        assert_eq!(mapped.as_bytes(), [1, 2, 3, 4], "{mode:?}");
        assert!(matches!(
            (mode, &mapped),
            (MapMode::Read, MappedFile::Read(_)) | (_, MappedFile::Write(_))
        ));
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn read_write_writes_reach_the_file() {
    let dir = scratch("rw");
    let path = dir.join("data");
    std::fs::write(&path, [0u8; 8192]).unwrap();
    let mut mapped = map(&path, MapMode::ReadWrite);
    write_at(&mut mapped, 0, b"head");
    write_at(&mut mapped, 8188, b"tail"); // the second page too
    // Another handle on the file sees the bytes while the mapping lives
    // (the system's cache is the mapping's pages, on Unix and Windows)...
    let seen = std::fs::read(&path).unwrap();
    assert_eq!((&seen[..4], &seen[8188..]), (&b"head"[..], &b"tail"[..]));
    assert_eq!(seen[4..8188], [0u8; 8184]);
    // ...and after it is gone.
    drop(mapped);
    let seen = std::fs::read(&path).unwrap();
    assert_eq!((&seen[..4], &seen[8188..]), (&b"head"[..], &b"tail"[..]));
    // A read-only mapping opened afterwards reads them as well.
    assert_eq!(&map(&path, MapMode::Read).as_bytes()[..4], b"head");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn copy_on_write_writes_stay_private() {
    let dir = scratch("copy");
    let path = dir.join("data");
    std::fs::write(&path, [7u8; 16]).unwrap();
    let mut private = map(&path, MapMode::Copy);
    let shared = map(&path, MapMode::Read);
    write_at(&mut private, 3, &[9, 9]);
    assert_eq!(private.as_bytes()[2..6], [7, 9, 9, 7]);
    // Neither the file nor another mapping of it sees the write.
    assert_eq!(shared.as_bytes(), [7u8; 16]);
    assert_eq!(std::fs::read(&path).unwrap(), [7u8; 16]);
    drop(private);
    assert_eq!(std::fs::read(&path).unwrap(), [7u8; 16]);
    drop(shared);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn copy_on_write_maps_a_read_only_file() {
    let dir = scratch("readonly");
    let path = dir.join("data");
    std::fs::write(&path, [5u8; 4]).unwrap();
    let mut perms = std::fs::metadata(&path).unwrap().permissions();
    perms.set_readonly(true);
    std::fs::set_permissions(&path, perms.clone()).unwrap();
    let mut private = map(&path, MapMode::Copy);
    write_at(&mut private, 0, &[6]);
    assert_eq!(private.as_bytes(), [6, 5, 5, 5]);
    assert_eq!(map(&path, MapMode::Read).as_bytes(), [5u8; 4]);
    drop(private);
    #[allow(clippy::permissions_set_readonly_false)] // removing the file needs it on Windows
    perms.set_readonly(false);
    std::fs::set_permissions(&path, perms).unwrap();
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn an_empty_file_maps_to_no_bytes() {
    let dir = scratch("empty");
    let path = dir.join("empty");
    std::fs::write(&path, []).unwrap();
    for mode in [MapMode::Read, MapMode::ReadWrite, MapMode::Copy] {
        let mut mapped = map(&path, mode);
        assert_eq!(mapped.as_bytes(), [0u8; 0], "{mode:?}");
        assert!(!mapped.as_ptr().is_null(), "{mode:?}");
    }
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
    std::fs::remove_dir_all(dir).unwrap();
}

#[cfg(unix)]
#[test]
fn a_fifo_without_a_writer_is_refused_at_once() {
    let dir = scratch("fifo");
    let fifo = dir.join("pipe");
    let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: `path` is a NUL-terminated string that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    for mode in [MapMode::Read, MapMode::Copy] {
        let err = open_error(fifo.clone(), mode);
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert!(err.to_string().contains("is a FIFO (named pipe)"), "{err}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[cfg(unix)]
#[test]
fn a_character_device_is_refused() {
    for device in ["/dev/null", "/dev/zero"] {
        let err = open_error(PathBuf::from(device), MapMode::Read);
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert!(err.to_string().contains("is a character device"), "{err}");
    }
}

#[cfg(windows)]
#[test]
fn the_nul_device_is_refused() {
    let err = open_error(PathBuf::from("NUL"), MapMode::Read);
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.to_string().contains("is a character device"), "{err}");
}
