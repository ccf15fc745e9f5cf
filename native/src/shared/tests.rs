//! Headers read from bytes alone, the lock's clock, names.

#[cfg(target_os = "linux")]
use super::robust::{clocklock, deadline_after};
use super::*;

/// A whole segment as `create` lays it out, `nbytes` of data after the
/// header page; no lock (these tests only read headers).
fn segment(nbytes: usize, plan_text: &str) -> Vec<u8> {
    let mut bytes = vec![0; DATA_OFFSET + nbytes];
    write_header(
        &mut bytes,
        nbytes,
        plan_text,
        [7; TOKEN_LEN],
        LockKind::native(),
    );
    bytes[..8].copy_from_slice(&MAGIC);
    bytes
}

fn read(bytes: &[u8]) -> Result<Header<'_>, SharedError> {
    SharedBuffer::read_header("h", bytes)
}

#[test]
fn a_header_reads_back_what_was_written() {
    let bytes = segment(12, "P\na <i4 3");
    let header = read(&bytes).unwrap();
    assert_eq!(
        (header.nbytes, header.plan, header.token),
        (12, &b"P\na <i4 3"[..], [7; 16])
    );
    let spec = header.plan().unwrap().unwrap();
    assert_eq!(spec.to_text(), "P\na <i4 3");
    assert!(read(&segment(0, "")).unwrap().plan().unwrap().is_none());
}

#[test]
fn damaged_headers_are_errors_not_panics() {
    let good = segment(16, "P\na <i4 4");
    let damaged = |at: usize, with: &[u8]| {
        let mut bytes = good.clone();
        bytes[at..at + with.len()].copy_from_slice(with);
        bytes
    };
    let wrong = |bytes: &[u8]| matches!(read(bytes), Err(SharedError::WrongFormat { .. }));
    for len in [0, 1, 8, DATA_OFFSET - 1] {
        assert!(
            matches!(
                read(&good[..len]),
                Err(SharedError::TooSmall { needed: 4096, .. })
            ),
            "{len}"
        );
    }
    assert!(wrong(&damaged(0, b"BYTELENZ")));
    assert!(wrong(&damaged(AT_VERSION, &2u32.to_le_bytes())));
    assert!(wrong(&damaged(AT_LOCK_KIND, &7u32.to_le_bytes())));
    for kind in LockKind::ALL {
        let header = damaged(AT_LOCK_KIND, &kind.code().to_le_bytes());
        assert_eq!(read(&header).unwrap().lock, kind);
    }
    // Data past the end of the segment, as far as a u64 reaches.
    for nbytes in [17, u64::MAX - 4095, u64::MAX] {
        let err = read(&damaged(AT_NBYTES, &nbytes.to_le_bytes())).unwrap_err();
        assert!(
            matches!(err, SharedError::TooSmall { size: 4112, .. }),
            "{err}"
        );
    }
    // A plan longer than the rest of the page.
    let room = (DATA_OFFSET - AT_PLAN) as u32;
    assert!(wrong(&damaged(AT_PLAN_LEN, &(room + 1).to_le_bytes())));
    assert!(wrong(&damaged(AT_PLAN_LEN, &u32::MAX.to_le_bytes())));
    let whole_page = damaged(AT_PLAN_LEN, &room.to_le_bytes());
    assert_eq!(read(&whole_page).unwrap().plan.len(), room as usize);
    // A plan that is not text, does not parse, or does not fit the data.
    let not_utf8 = damaged(AT_PLAN + 2, &[0xff]);
    assert_eq!(read(&not_utf8).unwrap().plan_text(), "\u{fffd}");
    assert!(matches!(
        read(&not_utf8).unwrap().plan(),
        Err(SharedError::BadPlan(_))
    ));
    let bad_dtype = damaged(AT_PLAN + 4, b"#");
    assert!(matches!(
        read(&bad_dtype).unwrap().plan(),
        Err(SharedError::BadPlan(_))
    ));
    let too_big = damaged(AT_PLAN + 8, b"5");
    let err = read(&too_big).unwrap().plan().unwrap_err();
    assert!(
        matches!(
            err,
            SharedError::PlanDoesNotFit {
                plan: 20,
                nbytes: 16
            }
        ),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "the plan needs 20 bytes, more than the 16 bytes of data the segment holds"
    );
}

#[test]
#[cfg(target_os = "linux")]
fn deadlines_are_on_the_clock_asked_for() {
    for clock in [libc::CLOCK_MONOTONIC, libc::CLOCK_REALTIME] {
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let deadline = deadline_after(clock, Duration::from_millis(2500));
        // SAFETY: `now` is a valid timespec to write.
        unsafe { libc::clock_gettime(clock, &mut now) };
        let ns = |t: libc::timespec| i128::from(t.tv_sec) * 1_000_000_000 + i128::from(t.tv_nsec);
        let ahead = ns(deadline) - ns(now);
        assert!(
            (2_000_000_000..=2_500_000_000).contains(&ahead),
            "{ahead} ns"
        );
        assert!((0..1_000_000_000).contains(&deadline.tv_nsec));
    }
}

#[test]
#[cfg(target_os = "linux")]
#[cfg_attr(miri, ignore = "dlsym of a C library function")]
fn glibc_2_30_and_later_wait_on_the_monotonic_clock() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: gnu_get_libc_version returns a static NUL-terminated string.
        let version = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) };
        let version = version.to_str().unwrap();
        let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
        let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
        assert_eq!(
            clocklock().is_some(),
            (major, minor) >= (2, 30),
            "glibc {version}"
        );
    }
}

#[test]
fn messages_quote_names_short_and_escaped() {
    let long = "n".repeat(10_000);
    let message = checked(&long).unwrap_err().to_string();
    assert!(message.len() <= 200, "{} bytes: {message}", message.len());
    assert!(message.starts_with(&format!("\"{}\"... (10000 bytes) is not", "n".repeat(64))));
    // Every escape counts against the length: 254 control characters
    // (a name shm_open takes) stay short too.
    let controls = "\u{1}".repeat(MAX_NAME);
    let message = SharedError::Missing { name: controls }.to_string();
    assert!(message.len() <= 200, "{} bytes: {message}", message.len());
    assert!(
        message.ends_with(&format!("\"... ({MAX_NAME} bytes)")),
        "{message}"
    );
    // A short name stays whole, quotes escaped.
    let message = SharedError::Exists {
        name: "a\"b".into(),
    }
    .to_string();
    assert_eq!(
        message,
        format!(
            "shared memory named \"a\\\"b\" already exists{}",
            sys::EXISTS_NOTE
        )
    );
}
