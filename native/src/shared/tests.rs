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

/// The file lock's folders, made in a temporary folder of a test's own
/// (never in /dev/shm, which every process of the machine shares).
#[cfg(unix)]
mod lock_folders {
    use std::os::unix::fs::{PermissionsExt, chown, symlink};
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    use super::super::flock::{FileLock, Folder, Roots};
    use super::super::lock::hex;
    use super::super::{SharedError, TOKEN_LEN};

    /// A fresh temporary folder, removed when dropped.
    struct Temp(PathBuf);

    impl Temp {
        fn new(tag: &str) -> Temp {
            let dir =
                std::env::temp_dir().join(format!("bl-lock-folders-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir(&dir).unwrap();
            Temp(dir)
        }
    }

    impl Drop for Temp {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn uid() -> u32 {
        // SAFETY: getuid has no preconditions and cannot fail.
        unsafe { libc::getuid() }
    }

    fn mkdir(path: &Path, mode: u32) {
        std::fs::create_dir(path).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// The user a folder is squatted for, and its squatter: as root (as
    /// the test machines run), root's, squatted by uid 12345 ([`squat`]
    /// chowns it); as anyone else, a played uid 12345's, squatted by the
    /// real user.
    fn victim_and_squatter() -> (u32, u32) {
        if uid() == 0 {
            (0, 12345)
        } else {
            (12345, uid())
        }
    }

    /// Makes the folder `path` with `mode`, the squatter's.
    fn squat(path: &Path, mode: u32) {
        mkdir(path, mode);
        if uid() == 0 {
            chown(path, Some(12345), None).unwrap();
        }
    }

    const TOKEN: [u8; TOKEN_LEN] = [0xab; TOKEN_LEN];

    fn message(err: SharedError) -> String {
        err.to_string()
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "Miri answers geteuid with a uid of its own, not the owner of the folders it made"
    )]
    fn a_squatted_shared_folder_is_refused_saying_whose_it_is_and_what_to_do() {
        let temp = Temp::new("squat");
        let shared = temp.0.join("shm");
        mkdir(&shared, 0o1777);
        let (me, owner) = victim_and_squatter();
        let dir = shared.join(format!("bytelens-locks-{me}"));
        squat(&dir, 0o755);
        let roots = Roots::new(shared.clone(), Err("none here".into()), me);
        let err = message(FileLock::create_in(&roots, TOKEN).err().unwrap());
        let shown = dir.display();
        assert_eq!(
            err,
            format!(
                "the lock files' folder: {shown} is a folder of uid {owner}, mode 0755, not a \
                 folder of this user's (uid {me}) with mode 0700: another user made it, and \
                 could read or take the locks in it; have it removed (as uid {owner} or root: \
                 rm -r '{shown}'); and no folder of this user's own to use instead (none here)"
            )
        );
        // Nothing was made in it; attaching a segment whose lock file is in
        // the shared folder is refused the same way.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        let err = message(
            FileLock::attach_in(&roots, TOKEN, Folder::Shared)
                .err()
                .unwrap(),
        );
        assert!(
            err.contains(&format!("is a folder of uid {owner}, mode 0755")),
            "{err}"
        );
    }

    #[test]
    fn with_a_squatted_shared_folder_lock_files_go_in_the_users_own() {
        let (me, _) = victim_and_squatter();
        if me != uid() {
            println!("skipped: the user's own folder must be its, which needs root to chown");
            return;
        }
        let temp = Temp::new("own");
        let shared = temp.0.join("shm");
        mkdir(&shared, 0o1777);
        let squatted = shared.join(format!("bytelens-locks-{me}"));
        squat(&squatted, 0o777);
        let own = temp.0.join("run-user");
        mkdir(&own, 0o700);
        let roots = Roots::new(shared.clone(), Ok(own.clone()), me);
        let (held, folder) = FileLock::create_in(&roots, TOKEN).unwrap();
        assert_eq!(folder, Folder::Own);
        let file = own.join("bytelens-locks").join(hex(TOKEN));
        assert!(file.is_file(), "{}", file.display());
        let mode = std::fs::metadata(own.join("bytelens-locks"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        assert_eq!(
            std::fs::read_dir(&squatted).unwrap().count(),
            0,
            "nothing in the squatted one"
        );
        // Another open file of it is kept out while the first holds it.
        let other = FileLock::attach_in(&roots, TOKEN, Folder::Own).unwrap();
        held.lock(None).unwrap();
        assert!(matches!(
            other.lock(Some(Duration::ZERO)),
            Err(SharedError::Timeout { .. })
        ));
        held.unlock().unwrap();
        other.lock(Some(Duration::ZERO)).unwrap();
        other.unlock().unwrap();
        // Where the header says Shared, the squatted folder is refused.
        assert!(FileLock::attach_in(&roots, TOKEN, Folder::Shared).is_err());
        // With the shared folder free, it is used, as before.
        std::fs::remove_dir(&squatted).unwrap();
        let (_, folder) = FileLock::create_in(&roots, [1; TOKEN_LEN]).unwrap();
        assert_eq!(folder, Folder::Shared);
        assert!(squatted.join(hex([1; TOKEN_LEN])).is_file());
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "Miri answers geteuid with a uid of its own, not the owner of the folders it made"
    )]
    fn an_own_folder_that_is_not_the_users_alone_is_not_used() {
        let temp = Temp::new("notown");
        let shared = temp.0.join("shm");
        mkdir(&shared, 0o1777);
        let me = uid();
        mkdir(&shared.join(format!("bytelens-locks-{me}")), 0o777);
        let open = temp.0.join("open");
        mkdir(&open, 0o755);
        let roots = Roots::new(shared.clone(), Ok(open.clone()), me);
        let err = message(FileLock::create_in(&roots, TOKEN).err().unwrap());
        let (dir, open) = (shared.join(format!("bytelens-locks-{me}")), open.display());
        assert!(
            err.contains(&format!(
                "{} is this user's (uid {me}) but has mode 0777, so others could read or take \
                 the locks in it: make it 0700 (chmod 700 '{}')",
                dir.display(),
                dir.display()
            )),
            "{err}"
        );
        assert!(
            err.ends_with(&format!(
                "no folder of this user's own to use instead ({open} is this user's (uid {me}) \
                 but has mode 0755, so others could read or take the locks in it: make it 0700 \
                 (chmod 700 '{open}'))"
            )),
            "{err}"
        );
        // A link in the folder's place is not followed.
        std::fs::remove_dir(&dir).unwrap();
        let target = temp.0.join("target");
        mkdir(&target, 0o700);
        symlink(&target, &dir).unwrap();
        let err = message(FileLock::create_in(&roots, TOKEN).err().unwrap());
        assert!(
            err.contains(&format!(
                "{} is a symbolic link of this user's (uid {me})",
                dir.display()
            )),
            "{err}"
        );
        assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
    }
}
