//! `MappedFile::open` maps regular files only, and refuses anything else
//! at once: a FIFO with no writer used to block `open` forever.

#![cfg(unix)]

use std::io::ErrorKind;
use std::path::PathBuf;
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

#[test]
fn a_directory_is_is_a_directory() {
    let dir = scratch("dir");
    let err = open_error(dir.clone(), MapMode::Read);
    assert_eq!(err.kind(), ErrorKind::IsADirectory);
    assert!(
        err.to_string()
            .ends_with("is a directory: only regular files can be mapped"),
        "{err}"
    );
    std::fs::remove_dir(dir).unwrap();
}

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

#[test]
fn a_character_device_is_refused() {
    let err = open_error(PathBuf::from("/dev/null"), MapMode::Read);
    assert!(err.to_string().contains("is a character device"), "{err}");
}

#[test]
fn a_regular_file_still_maps() {
    let dir = scratch("file");
    let file = dir.join("data");
    std::fs::write(&file, [1u8, 2, 3, 4]).unwrap();
    // SAFETY: the file is this test's own and nothing shrinks it while mapped.
    let mapped = unsafe { MappedFile::open(&file, MapMode::Read) }.unwrap();
    assert_eq!(mapped.as_bytes(), [1, 2, 3, 4]);
    drop(mapped);
    std::fs::remove_dir_all(dir).unwrap();
}
