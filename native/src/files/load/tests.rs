use super::*;
use crate::files::save;

/// A file of one float32 array, `w`, in a folder of its own.
fn one_array(test: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("bytelens-load-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("m.safetensors");
    let w: Vec<f32> = (0..100).map(|i| i as f32).collect();
    let view = View::<f32>::from_bytes(bytemuck::cast_slice(&w)).unwrap();
    save(&path, &[("w", ArrayRef::from(view))], &[], 64).unwrap();
    path
}

/// [`load`] of a test's own file, which nothing else shrinks.
fn mapped(path: &std::path::Path, mode: MapMode) -> Result<Loaded, Error> {
    // SAFETY: every file given is a test's own, in a folder of its own.
    unsafe { load(path, mode) }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "real files: non-blocking opens, chmod and folder syncs are past Miri's shims"
)]
fn a_file_changed_between_its_header_and_its_map_is_refused() {
    // Truncated after its header was read and before it is mapped:
    // the mapping's length is checked against the size the header was
    // read at (Python's test patched `_load._describe` to do this).
    let path = one_array("changed");
    let size = std::fs::metadata(&path).unwrap().len();
    let mut loaded = Loaded::empty("m", MapMode::Read, Backing::Map);
    let truncate = |_: &Report| {
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_len(100))
            .map_err(Error::from)
    };
    let err = loaded
        .add_file_checked(&path, LoadOptions::new(MapMode::Read), Some(&truncate))
        .expect_err("refused");
    assert_eq!(err.python_exception(), "FormatError");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: the file changed while it was loaded ({size} bytes, then 100): load it again",
            path.display()
        )
    );
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
#[cfg_attr(
    miri,
    ignore = "real files: non-blocking opens, chmod and folder syncs are past Miri's shims"
)]
fn parts_hand_out_views_and_copies() {
    let path = one_array("parts");
    let parts = mapped(&path, MapMode::Copy).unwrap().into_parts();
    assert_eq!(parts.maps.len(), 1);
    let Part::Mapped { map } = parts.parts[0] else {
        panic!("a view in place");
    };
    let view = View::<f32>::new(parts.maps[map].as_bytes(), parts.layout(0).unwrap()).unwrap();
    assert_eq!(view.get(&[99]).unwrap(), 99.0);
    // An .npy whose data starts at byte 126: misaligned for float32, so
    // copied, and writable only under Copy.
    let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
    let mut npy = b"\x93NUMPY\x01\x00".to_vec();
    npy.extend_from_slice(&116u16.to_le_bytes());
    npy.extend_from_slice(format!("{dict:<115}\n").as_bytes());
    for x in [1.5f32, 2.5, 3.5] {
        npy.extend_from_slice(&x.to_le_bytes());
    }
    let odd = path.with_file_name("odd.npy");
    std::fs::write(&odd, &npy).unwrap();
    for (mode, writable) in [(MapMode::Copy, true), (MapMode::ReadWrite, false)] {
        let parts = mapped(&odd, mode).unwrap().into_parts();
        let Part::Copied {
            buffer,
            writable: w,
        } = &parts.parts[0]
        else {
            panic!("a copy");
        };
        assert_eq!(*w, writable);
        let view = View::<f32>::new(buffer.as_bytes(), parts.layout(0).unwrap()).unwrap();
        assert_eq!(view.iter().collect::<Vec<_>>(), [1.5, 2.5, 3.5]);
    }
    drop(parts); // Windows removes no mapped file
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}
