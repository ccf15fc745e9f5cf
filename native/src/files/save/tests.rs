use super::*;
use crate::{DType, Layout};

#[test]
fn json_strings_are_python_json_dumps() {
    let mut out = String::new();
    json_string("a\"\\\n\u{7f}é😀", &mut out);
    assert_eq!(out, "\"a\\\"\\\\\\n\\u007f\\u00e9\\ud83d\\ude00\"");
}

#[test]
fn names_are_cut_between_characters() {
    assert_eq!(name_start("ééé", 5), "éé");
    assert_eq!(name_start("abc", 180), "abc");
    // Was Python's test of `_name_start`: the longest start that fits.
    let emoji = format!("a{}", "\u{1f600}".repeat(60));
    assert_eq!(name_start(&emoji, 180).len(), 177);
    assert_eq!(name_start(&"€".repeat(100), 180).len(), 180);
}

fn f32s(values: &[f32], order: ByteOrder) -> Vec<u8> {
    values
        .iter()
        .flat_map(|v| match order {
            ByteOrder::Big => v.to_be_bytes(),
            _ => v.to_le_bytes(),
        })
        .collect()
}

fn array(bytes: &[u8], layout: Layout) -> ArrayRef<'_> {
    ArrayRef::new(bytes, layout).unwrap()
}

#[test]
fn contiguous_arrays_are_written_as_they_lie_in_the_files_order() {
    let small = [1u8, 2, 3];
    let wide = f32s(&[1.0; 16], ByteOrder::Little);
    let arrays = [
        (
            "small",
            array(&small, Layout::contiguous(DType::U8, &[3]).unwrap()),
        ),
        (
            "wide",
            array(&wide, Layout::contiguous(DType::F32, &[16]).unwrap()),
        ),
    ];
    let plan = plan_save("m.safetensors", &arrays, &[], 64).unwrap();
    // 64 bytes of float32 keep the alignment: first.
    assert_eq!(plan.parts, [SavePart::AsItLies(1), SavePart::AsItLies(0)]);
    assert_eq!(plan.parts[0].as_it_lies(&arrays), Some(&wide[..]));
    assert_eq!(plan.parts[1].as_it_lies(&arrays), Some(&small[..]));
    assert_eq!(plan.head.len() % 64, 0);
}

#[test]
fn big_endian_tensors_are_swapped_and_strided_ones_gathered() {
    let big = f32s(&[1.0, 2.0], ByteOrder::Big);
    let every_other = f32s(&[1.0, 9.0, 2.0, 9.0], ByteOrder::Little);
    let arrays = [
        (
            "big",
            array(
                &big,
                Layout::contiguous(DType::F32, &[2])
                    .unwrap()
                    .with_byte_order(ByteOrder::Big),
            ),
        ),
        (
            "strided",
            array(
                &every_other,
                Layout::new(DType::F32, 0, &[2], &[8]).unwrap(),
            ),
        ),
    ];
    let plan = plan_save("m.safetensors", &arrays, &[], 8).unwrap();
    let little = Descr::new(DType::F32, ByteOrder::Little);
    assert_eq!(
        plan.parts,
        [
            SavePart::Converted(0, little),
            SavePart::Converted(1, little)
        ]
    );
    for part in &plan.parts {
        assert_eq!(part.as_it_lies(&arrays), None);
        let mut out = vec![0u8; part.nbytes(&arrays)];
        part.convert_into(&arrays, &mut out).unwrap();
        assert_eq!(out, f32s(&[1.0, 2.0], ByteOrder::Little));
    }
    let mut short = [0u8; 4];
    assert!(plan.parts[0].convert_into(&arrays, &mut short).is_err());
}

#[test]
fn an_npy_keeps_fortran_order_and_the_byte_order_as_they_lie() {
    let bytes = f32s(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], ByteOrder::Big);
    let fortran = Layout::contiguous(DType::F32, &[3, 2])
        .unwrap()
        .with_byte_order(ByteOrder::Big)
        .transpose();
    let arrays = [("a", array(&bytes, fortran))];
    let plan = plan_save("a.npy", &arrays, &[], 64).unwrap();
    assert_eq!(plan.parts, [SavePart::AsItLies(0)]);
    let head = String::from_utf8_lossy(&plan.head);
    assert!(
        head.contains("{'descr': '>f4', 'fortran_order': True, 'shape': (2, 3)}"),
        "{head}"
    );
    // numpy's name of a byte-swapped dtype is its type string.
    let err = plan_save("a.npy", &arrays, &[], 2).unwrap_err();
    assert_eq!(
        err.to_string(),
        "align=2 is below the itemsize of >f4 (4 bytes): it could not keep it aligned"
    );
}

#[test]
#[cfg_attr(
    miri,
    ignore = "real files: non-blocking opens, chmod and folder syncs are past Miri's shims"
)]
fn save_writes_the_plan() {
    let dir = std::env::temp_dir().join(format!("bytelens-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bytes = f32s(&[1.0, 2.0, 3.0, 4.0], ByteOrder::Big);
    let layout = Layout::contiguous(DType::F32, &[2, 2])
        .unwrap()
        .with_byte_order(ByteOrder::Big);
    let arrays = [
        ("t", array(&bytes, layout.transpose())),
        ("b", array(&bytes, layout)),
    ];
    let path = dir.join("m.safetensors");
    save(&path, &arrays, &[("k", "v")], 16).unwrap();
    let plan = plan_save(&path.display().to_string(), &arrays, &[("k", "v")], 16).unwrap();
    let mut expected = plan.head.clone();
    for part in &plan.parts {
        let mut out = vec![0u8; part.nbytes(&arrays)];
        part.convert_into(&arrays, &mut out).unwrap();
        expected.extend(out);
    }
    assert_eq!(std::fs::read(&path).unwrap(), expected);
    // The transpose gathered and both swapped, in the arrays' order (equal
    // sizes and dtypes keep it).
    let data = f32s(&[1.0, 3.0, 2.0, 4.0, 1.0, 2.0, 3.0, 4.0], ByteOrder::Little);
    assert_eq!(expected[plan.head.len()..], data[..]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A fresh folder for one test.
fn folder(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bytelens-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn detail(err: &Error) -> &OsDetail {
    let Error::Io(io) = err else {
        panic!("not an OS error: {err}")
    };
    io.get_ref()
        .and_then(|e| e.downcast_ref::<OsDetail>())
        .unwrap_or_else(|| panic!("no detail: {err}"))
}

#[test]
#[cfg_attr(
    miri,
    ignore = "real files: non-blocking opens, chmod and folder syncs are past Miri's shims"
)]
fn a_write_that_fails_leaves_the_old_file_and_no_new_one() {
    // Was test_a_save_that_fails_leaves_the_old_file_as_it_was (Python,
    // os.fsync patched): the writer's own failure, named, errno kept.
    let dir = folder("write-fails");
    let path = dir.join("m.safetensors");
    write_atomically(&path, &[b"old"]).unwrap();
    let err = write_with(&path, |f| {
        f.write_all(b"half of the new")?;
        Err(io::Error::from_raw_os_error(5))
    })
    .unwrap_err();
    let shown = path.display().to_string();
    let why = reason(&io::Error::from_raw_os_error(5));
    assert_eq!(
        err.to_string(),
        format!("{shown}: writing the new file failed ({why}); the old file is kept")
    );
    let detail = detail(&err);
    assert_eq!(
        (detail.code, detail.filename.as_deref()),
        (Some(5), Some(&*path))
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"old");
    assert_eq!(names(&dir), ["m.safetensors"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
#[cfg_attr(
    miri,
    ignore = "real files: non-blocking opens, chmod and folder syncs are past Miri's shims"
)]
fn a_temp_file_that_cannot_be_made_keeps_its_code() {
    let dir = folder("no-temp");
    let err = write_atomically(dir.join("nowhere").join("a.npy"), &[b"x"]).unwrap_err();
    assert!(
        err.to_string()
            .contains(", the new file bl.save renames over it: "),
        "{err}"
    );
    assert_eq!(err.python_exception(), "FileNotFoundError");
    let detail = detail(&err);
    assert!(detail.code.is_some() && detail.filename.is_none());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_in_use_message_says_why_and_what_to_do() {
    // Was test_save_over_a_file_windows_will_not_replace_says_why (Python,
    // os.replace and os.name patched): the message, the code kept as
    // Python's winerror. Windows itself runs it under `xtask cross`.
    for code in IN_USE_WINERRORS {
        let err = in_use("/d/m.safetensors", &io::Error::from_raw_os_error(code));
        let why = reason(&io::Error::from_raw_os_error(code));
        assert_eq!(
            err.to_string(),
            format!(
                "/d/m.safetensors: Windows cannot replace the file while it is mapped or open \
                 ({}): arrays bl.load returned for it, here or in another process, map it \
                 until they are gone (del them, or copy what you need first), or save to \
                 another path",
                why.trim_end_matches('.')
            )
        );
        assert_eq!(err.python_exception(), "PermissionError");
        let detail = detail(&err);
        assert!(detail.windows_refused && detail.code == Some(code));
    }
}

#[test]
fn a_read_only_file_is_refused_in_windows_words() {
    let err = read_only("/d/a.npy");
    assert_eq!(
        err.to_string(),
        "/d/a.npy: the file is read-only, and Windows replaces no read-only file: clear its \
         read-only attribute first (os.chmod(path, stat.S_IWRITE))"
    );
    assert_eq!(err.python_exception(), "PermissionError");
    let detail = detail(&err);
    assert!(detail.windows_refused && detail.code.is_none());
}

#[test]
#[cfg_attr(
    miri,
    ignore = "real files: non-blocking opens, chmod and folder syncs are past Miri's shims"
)]
fn a_read_only_file_is_refused_on_windows_and_replaced_elsewhere() {
    // Was test_save_over_a_read_only_file_on_windows_is_refused_before_writing
    // (Python, os.name patched): a real read-only file.
    let dir = folder("read-only");
    let path = dir.join("a.npy");
    write_atomically(&path, &[b"old"]).unwrap();
    let writable = std::fs::metadata(&path).unwrap().permissions();
    let mut bits = writable.clone();
    bits.set_readonly(true);
    std::fs::set_permissions(&path, bits).unwrap();
    let result = write_atomically(&path, &[b"new"]);
    // Refused before the new file existed: nothing beside it.
    assert_eq!(names(&dir), ["a.npy"]);
    if cfg!(windows) {
        let err = result.unwrap_err();
        assert!(
            err.to_string()
                .ends_with("the file is read-only, and Windows replaces no read-only file: clear its read-only attribute first (os.chmod(path, stat.S_IWRITE))"),
            "{err}"
        );
        assert!(detail(&err).windows_refused);
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
    } else {
        // POSIX renames over it, keeping its bits.
        result.unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert!(std::fs::metadata(&path).unwrap().permissions().readonly());
    }
    // Writable again (as it was), so that Windows can remove it.
    std::fs::set_permissions(&path, writable).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(unix)]
#[test]
#[cfg_attr(
    miri,
    ignore = "real files: non-blocking opens, chmod and folder syncs are past Miri's shims"
)]
fn a_replaced_file_keeps_its_bits_and_a_symlink_its_place() {
    use std::os::unix::fs::PermissionsExt;
    let dir = folder("bits");
    let path = dir.join("a.npy");
    write_atomically(&path, &[b"old"]).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o604)).unwrap();
    write_atomically(&path, &[b"new"]).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o604);
    // A dangling symlink: the file it names is made, the link kept.
    let link = dir.join("link.npy");
    std::os::unix::fs::symlink("made.npy", &link).unwrap();
    write_atomically(&link, &[b"through"]).unwrap();
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read(dir.join("made.npy")).unwrap(), b"through");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn shapes_are_python_tuples() {
    assert_eq!(
        (tuple_text(&[]), tuple_text(&[5]), tuple_text(&[2, 3])),
        ("()".into(), "(5,)".into(), "(2, 3)".into())
    );
}

#[test]
#[cfg(unix)]
#[cfg_attr(
    miri,
    ignore = "real files: non-blocking opens, chmod and folder syncs are past Miri's shims"
)]
fn every_system_error_names_its_path() {
    // A symlink loop: the system's reason alone ("too many levels of
    // symbolic links") said nothing of which file, where load named it.
    let dir = folder("symlink-loop");
    let (a, b) = (dir.join("a.npy"), dir.join("b.npy"));
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    let err = write_atomically(&a, &[b"x"]).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(&*dir.to_string_lossy()) && text.contains(".npy"),
        "{text}"
    );
    assert_eq!(detail(&err).code, Some(libc::ELOOP), "{text}");
    // The rename's failure names the temporary file and the target.
    let folder_in_place = dir.join("f.npy");
    std::fs::create_dir(&folder_in_place).unwrap();
    std::fs::write(folder_in_place.join("inside"), b"x").unwrap();
    let err = write_atomically(&folder_in_place, &[b"x"]).unwrap_err();
    assert!(err.to_string().contains("f.npy"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
