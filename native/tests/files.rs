//! `bytelens::files`: load, save and inspect against files the Python
//! package wrote (`tests/vectors/files/`, made by `bl.save`, `np.savez`
//! and `python -m bytelens inspect`), and hostile cases' messages.

use std::path::{Path, PathBuf};

use bytelens::files::{self, ArrayRef, Entry, Error, LoadOptions};
use bytelens::{ByteOrder, DType, Descr, Layout, MapMode, View};

/// [`files::load`] of the tests' own files and vectors, which nothing
/// shrinks while they are mapped.
fn load(path: impl AsRef<Path>, mode: MapMode) -> Result<files::Loaded, Error> {
    // SAFETY: no test truncates a file it has mapped.
    unsafe { files::load(path, mode) }
}

/// [`files::load_with`] as [`load`].
fn load_with(path: impl AsRef<Path>, options: LoadOptions) -> Result<files::Loaded, Error> {
    // SAFETY: as in `load`.
    unsafe { files::load_with(path, options) }
}

fn vector(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/vectors/files")
        .join(name)
}

/// A fresh folder of this test's own.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bytelens-files-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn array<'a>(bytes: &'a [u8], dtype: DType, order: ByteOrder, shape: &[usize]) -> ArrayRef<'a> {
    let layout = Layout::contiguous(dtype, shape)
        .unwrap()
        .with_byte_order(order);
    ArrayRef::new(bytes, layout).unwrap()
}

/// What `python -m bytelens inspect NAME` printed, for the file at `path`.
fn inspect_text(name: &str, path: &Path) -> String {
    let text = std::fs::read_to_string(vector(&format!("{name}.inspect.txt"))).unwrap();
    let text = text.strip_suffix('\n').unwrap();
    text.replacen(name, &path.display().to_string(), 1)
}

#[test]
fn save_writes_the_bytes_python_writes() {
    let dir = temp_dir("save");
    // a.npy: np.arange(6, dtype="<i4").reshape(2, 3)
    let ints: Vec<u8> = (0..6i32).flat_map(i32::to_le_bytes).collect();
    let a = dir.join("a.npy");
    files::save(
        &a,
        &[(
            "array",
            array(&ints, DType::I32, ByteOrder::Little, &[2, 3]),
        )],
        &[],
        64,
    )
    .unwrap();
    assert_eq!(
        std::fs::read(&a).unwrap(),
        std::fs::read(vector("a.npy")).unwrap()
    );

    // f.npy: np.asfortranarray(np.arange(6, dtype=">f8").reshape(2, 3)), align=4096
    let mut fortran = Vec::new();
    for j in 0..3 {
        for i in 0..2 {
            fortran.extend(((i * 3 + j) as f64).to_be_bytes());
        }
    }
    let f_layout = Layout::contiguous(DType::F64, &[3, 2])
        .unwrap()
        .transpose()
        .with_byte_order(ByteOrder::Big);
    let f = dir.join("f.npy");
    files::save(
        &f,
        &[("x", ArrayRef::new(&fortran, f_layout).unwrap())],
        &[],
        4096,
    )
    .unwrap();
    assert_eq!(
        std::fs::read(&f).unwrap(),
        std::fs::read(vector("f.npy")).unwrap()
    );

    // m.safetensors: b (u2, 3), w (f4 ones 2x2), 'é"x' (i8, empty); metadata; align 256.
    let b: Vec<u8> = (0..3u16).flat_map(u16::to_le_bytes).collect();
    let w: Vec<u8> = [1.0f32; 4].iter().flat_map(|x| x.to_le_bytes()).collect();
    let m = dir.join("m.safetensors");
    let tensors = [
        ("b", array(&b, DType::U16, ByteOrder::Little, &[3])),
        ("w", array(&w, DType::F32, ByteOrder::Little, &[2, 2])),
        ("é\"x", array(&[], DType::I64, ByteOrder::Little, &[0])),
    ];
    files::save(&m, &tensors, &[("k", "vé"), ("z", "1")], 256).unwrap();
    assert_eq!(
        std::fs::read(&m).unwrap(),
        std::fs::read(vector("m.safetensors")).unwrap()
    );
    // Nothing else in the folder: no temporary file left behind.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 3);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn inspect_prints_what_python_prints() {
    for name in ["a.npy", "f.npy", "m.safetensors", "z.npz", "s.npz"] {
        let path = vector(name);
        let report = files::inspect(&path).unwrap();
        assert_eq!(report.to_string(), inspect_text(name, &path), "{name}");
    }
}

#[test]
fn load_views_npy_safetensors_and_npz() {
    let a = load(vector("a.npy"), MapMode::Read).unwrap();
    assert_eq!(a.names().collect::<Vec<_>>(), ["array"]);
    let v = a.view::<i32>("array").unwrap();
    assert_eq!(
        (v.layout().shape(), v.get(&[1, 2]).unwrap()),
        (&[2, 3][..], 5)
    );

    let f = load(vector("f.npy"), MapMode::Read).unwrap();
    let v = f.view::<f64>("array").unwrap();
    assert_eq!(
        (v.get(&[0, 1]).unwrap(), v.get(&[1, 0]).unwrap()),
        (1.0, 3.0)
    );

    let m = load(vector("m.safetensors"), MapMode::Read).unwrap();
    assert_eq!(m.names().collect::<Vec<_>>(), ["é\"x", "w", "b"]);
    assert_eq!(
        m.view::<u16>("b").unwrap().iter().collect::<Vec<_>>(),
        [0, 1, 2]
    );
    assert_eq!(
        m.metadata()[0],
        ("k".to_owned(), files::MetaValue::Str("vé".to_owned()))
    );
    let Entry::Array { writable, .. } = m.entry("w").unwrap() else {
        panic!("w is an array")
    };
    assert!(!writable);

    // Deflated members, inflated on access; a misaligned stored member, copied.
    let z = load(vector("z.npz"), MapMode::Read).unwrap();
    assert_eq!(
        z.view::<i64>("a").unwrap().iter().collect::<Vec<_>>(),
        [0, 1, 2]
    );
    assert_eq!(
        z.view::<f64>("b").unwrap().iter().collect::<Vec<_>>(),
        [1.0, 1.0]
    );
    let s = load(vector("s.npz"), MapMode::Read).unwrap();
    assert_eq!(
        s.view::<i16>("a").unwrap().iter().collect::<Vec<_>>(),
        [0, 1, 2]
    );
    let strict = LoadOptions {
        strict: true,
        ..LoadOptions::new(MapMode::Read)
    };
    let err = load_with(vector("s.npz"), strict).err().unwrap();
    assert_eq!(err.python_exception(), "AlignmentError");
    assert!(err.to_string().ends_with(
        "s.npz: array 'a': offset 183 is not a multiple of 2, the alignment of int16 (strict=True refuses the copy that would align it)"
    ), "{err}");
}

#[test]
fn hostile_and_wrong_requests_say_what_python_says() {
    let m = load(vector("m.safetensors"), MapMode::Read).unwrap();
    let err = m.view::<f32>("nope").unwrap_err();
    assert!(matches!(err, Error::NotFound { ref name } if name == "nope"));
    assert_eq!(
        (err.to_string(), err.python_exception()),
        ("'nope'".to_owned(), "KeyError")
    );
    assert_eq!(
        m.view::<f64>("w").unwrap_err().python_exception(),
        "LayoutError"
    );

    let err = load(vector("z.npz"), MapMode::ReadWrite).err().unwrap();
    assert_eq!(err.python_exception(), "ValueError");
    assert!(err.to_string().ends_with("z.npz: an .npz member written in place would no longer match its CRC-32, and zip readers (np.load among them) would refuse it: load it with mode \"r\" or \"c\""));

    let dir = temp_dir("hostile");
    let junk = dir.join("junk.bin");
    std::fs::write(&junk, b"hello, world").unwrap();
    let err = load(&junk, MapMode::Read).err().unwrap();
    assert_eq!(err.python_exception(), "FormatError");
    assert!(
        err.to_string()
            .starts_with(&format!("{}: not an .npy file", junk.display())),
        "{err}"
    );
    let err = files::inspect(&dir).unwrap_err();
    assert_eq!(
        (err.python_exception(), err.to_string()),
        (
            "IsADirectoryError",
            format!("{}: not a regular file (a directory)", dir.display())
        )
    );

    // A truncated safetensors file: the core's message, after the path.
    let mut cut = std::fs::read(vector("m.safetensors")).unwrap();
    cut.truncate(270);
    let short = dir.join("cut.safetensors");
    std::fs::write(&short, &cut).unwrap();
    let err = files::inspect(&short).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Format {
                header: Some(_),
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string().starts_with(&format!(
            "{}: array \"w\" lies at bytes 256..272",
            short.display()
        )),
        "{err}"
    );

    // A damaged deflated member: its CRC-32 is checked as it is inflated.
    let mut z = std::fs::read(vector("z.npz")).unwrap();
    let path = dir.join("bad.npz");
    // The zip directory's CRC-32 of the first member (what zip readers check).
    let first_dir = z.windows(4).position(|w| w == b"PK\x01\x02").unwrap();
    z[first_dir + 16] ^= 0xff;
    std::fs::write(&path, &z).unwrap();
    let loaded = load(&path, MapMode::Read).unwrap();
    let err = loaded.view::<i64>("a").unwrap_err();
    assert!(err.to_string().ends_with("member 'a.npy': its bytes do not have the CRC-32 the zip records (the member is damaged)"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn save_refuses_before_writing_and_keeps_the_old_file() {
    let dir = temp_dir("refuse");
    let path = dir.join("m.safetensors");
    let ones: Vec<u8> = [1.0f32; 2].iter().flat_map(|x| x.to_le_bytes()).collect();
    let w = array(&ones, DType::F32, ByteOrder::Little, &[2]);
    files::save(&path, &[("w", w)], &[], 64).unwrap();
    let before = std::fs::read(&path).unwrap();
    type Case<'c> = (&'c [(&'c str, ArrayRef<'c>)], usize, &'c str, &'c str);
    let cases: [Case<'_>; 4] = [
        (
            &[("w", w)],
            48,
            "ValueError",
            "align=48: a power of two from the widest dtype's itemsize up to 4096",
        ),
        (
            &[("w", w)],
            2,
            "ValueError",
            "align=2 is below the itemsize of float32 (tensor 'w') (4 bytes): it could not keep it aligned",
        ),
        (
            &[("__metadata__", w)],
            64,
            "ValueError",
            "no tensor can be named '__metadata__': safetensors keeps the file's metadata there",
        ),
        (
            &[("w", w), ("w", w)],
            64,
            "ValueError",
            "two tensors are named 'w'",
        ),
    ];
    for (arrays, align, class, message) in cases {
        let err = files::save(&path, arrays, &[], align).unwrap_err();
        assert_eq!(
            (err.python_exception(), err.to_string().as_str()),
            (class, message)
        );
    }
    let err = files::save(dir.join("x.txt"), &[("w", w)], &[], 64).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("save writes .npy or .safetensors files, not '"),
        "{err}"
    );
    let bf = array(&[0, 0], DType::BF16, ByteOrder::Little, &[1]);
    let err = files::save(dir.join("b.npy"), &[("b", bf)], &[], 64).unwrap_err();
    assert_eq!(err.python_exception(), "TypeError");
    assert!(err.to_string().ends_with("an .npy header cannot name bfloat16 (np.save writes it as raw bytes '<V2', and loaders read bytes back): save it to a .safetensors file, as BF16"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    // Over a folder: refused, the folder untouched, no temporary file.
    std::fs::create_dir(dir.join("d.npy")).unwrap();
    let err = files::save(dir.join("d.npy"), &[("w", w)], &[], 64).unwrap_err();
    assert_eq!(err.python_exception(), "IsADirectoryError");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["d.npy", "m.safetensors"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn writes_reach_the_file_under_read_write_only() {
    let dir = temp_dir("modes");
    let path = dir.join("a.npy");
    let ints: Vec<u8> = (0..4i32).flat_map(i32::to_le_bytes).collect();
    files::save(
        &path,
        &[("a", array(&ints, DType::I32, ByteOrder::Little, &[4]))],
        &[],
        64,
    )
    .unwrap();
    let mut c = load(&path, MapMode::Copy).unwrap();
    c.view_mut::<i32>("array").unwrap().set(&[0], 7).unwrap();
    assert_eq!(first_element(&path), 0);
    let mut rw = load(&path, MapMode::ReadWrite).unwrap();
    rw.view_mut::<i32>("array").unwrap().set(&[0], 9).unwrap();
    drop(rw);
    assert_eq!(first_element(&path), 9);
    let mut r = load(&path, MapMode::Read).unwrap();
    assert_eq!(
        r.view_mut::<i32>("array").err().unwrap().python_exception(),
        "LayoutError"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A GGUF v3 file: one float32 tensor "f" (2 values) and one q8_0 tensor
/// "q" (32 values), the data at 32-byte alignment.
fn gguf_file() -> Vec<u8> {
    let mut out = b"GGUF".to_vec();
    out.extend(3u32.to_le_bytes());
    out.extend(2u64.to_le_bytes()); // tensors
    out.extend(1u64.to_le_bytes()); // key/values
    let string = |out: &mut Vec<u8>, s: &str| {
        out.extend((s.len() as u64).to_le_bytes());
        out.extend(s.as_bytes());
    };
    string(&mut out, "general.name");
    out.extend(8u32.to_le_bytes()); // string
    string(&mut out, "tiny");
    for (name, ggml, n, offset) in [("f", 0u32, 2u64, 0u64), ("q", 8, 32, 32)] {
        string(&mut out, name);
        out.extend(1u32.to_le_bytes());
        out.extend(n.to_le_bytes());
        out.extend(ggml.to_le_bytes());
        out.extend(offset.to_le_bytes());
    }
    while !out.len().is_multiple_of(32) {
        out.push(0);
    }
    out.extend(1.5f32.to_le_bytes());
    out.extend((-2.0f32).to_le_bytes());
    out.resize(out.len() + 24, 0);
    out.extend([0x00, 0x3c]); // q8_0: d = 1.0 (float16)
    out.extend((0..32).map(|i| i as u8));
    out
}

#[test]
fn load_gguf_views_and_quantised_blocks() {
    let dir = temp_dir("gguf");
    let path = dir.join("tiny.gguf");
    std::fs::write(&path, gguf_file()).unwrap();
    let loaded = load(&path, MapMode::Read).unwrap();
    assert_eq!(loaded.names().collect::<Vec<_>>(), ["f", "q"]);
    assert_eq!(
        loaded.view::<f32>("f").unwrap().iter().collect::<Vec<_>>(),
        [1.5, -2.0]
    );
    let Entry::Quantized(q) = loaded.entry("q").unwrap() else {
        panic!("q is quantised")
    };
    assert_eq!(
        (q.ggml.name(), q.shape, q.blocks.len()),
        ("Q8_0", &[32u64][..], 34)
    );
    let values = q.dequantize(Descr::native(DType::F32)).unwrap();
    let got: Vec<f32> = View::<f32>::from_bytes(values.as_bytes())
        .unwrap()
        .iter()
        .collect();
    assert_eq!(got, (0..32).map(|i| i as f32).collect::<Vec<_>>());
    assert_eq!(
        loaded.view::<f32>("q").unwrap_err().python_exception(),
        "TypeError"
    );
    let text = files::inspect(&path).unwrap().to_string();
    assert!(
        text.contains("gguf 3.0, 194 bytes, 2 arrays\n  metadata general.name: tiny\n"),
        "{text}"
    );
    assert!(
        text.contains("  q     Q8_0   (32,)  160..194  32     1 blocks, dequantised on access"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A two-shard checkpoint in `dir`: `a` and `b` in shard 1, `c` in shard 2,
/// and its index, whose weight map is `map` (JSON text) where given.
fn checkpoint(dir: &Path, map: Option<&str>) -> PathBuf {
    let f32s = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let (a, b, c) = (f32s(&[1.0, 2.0]), f32s(&[3.0]), f32s(&[4.0, 5.0, 6.0]));
    let le = ByteOrder::Little;
    let one = [
        ("a", array(&a, DType::F32, le, &[2])),
        ("b", array(&b, DType::F32, le, &[1])),
    ];
    files::save(dir.join("s1.safetensors"), &one, &[], 64).unwrap();
    files::save(
        dir.join("s2.safetensors"),
        &[("c", array(&c, DType::F32, le, &[3]))],
        &[],
        64,
    )
    .unwrap();
    let map =
        map.unwrap_or(r#"{"c": "s2.safetensors", "a": "s1.safetensors", "b": "s1.safetensors"}"#);
    let index = dir.join("model.safetensors.index.json");
    let text = format!(r#"{{"metadata": {{"total_size": 24, "note": "é"}}, "weight_map": {map}}}"#);
    std::fs::write(&index, text).unwrap();
    index
}

#[test]
fn sharded_checkpoints_load_in_the_index_order() {
    let dir = temp_dir("sharded");
    let index = checkpoint(&dir, None);
    for path in [&index, &dir] {
        let loaded = load(path, MapMode::Read).unwrap();
        assert_eq!(loaded.names().collect::<Vec<_>>(), ["c", "a", "b"]);
        assert_eq!(loaded.view::<f32>("c").unwrap().get(&[2]).unwrap(), 6.0);
        assert_eq!(loaded.view::<f32>("b").unwrap().get(&[0]).unwrap(), 3.0);
        assert_eq!(loaded.path(), index.display().to_string());
        let report = files::inspect(path).unwrap();
        assert_eq!(report.format, "safetensors index");
        let shards: Vec<_> = report
            .arrays
            .iter()
            .map(|a| a.shard.as_deref().unwrap())
            .collect();
        assert_eq!(
            shards,
            ["s2.safetensors", "s1.safetensors", "s1.safetensors"]
        );
        // json.dumps of a value that is not a string; strings as they are.
        let meta: Vec<_> = report
            .metadata
            .iter()
            .map(|(k, v)| format!("{k}={v:?}"))
            .collect();
        assert_eq!(meta, [r#"total_size=Str("24")"#, r#"note=Str("é")"#]);
    }
    // Read into memory, every shard: the same arrays.
    let read = files::read(&index, MapMode::Read).unwrap();
    assert_eq!(read.names().collect::<Vec<_>>(), ["c", "a", "b"]);
    assert_eq!(read.view::<f32>("c").unwrap().get(&[2]).unwrap(), 6.0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sharded_indexes_say_what_python_says() {
    let dir = temp_dir("sharded-bad");
    let fails = |map: &str| {
        let index = checkpoint(&dir, Some(map));
        let err = load(&index, MapMode::Read).err().unwrap();
        assert_eq!(err.python_exception(), "FormatError");
        let inspected = files::inspect(&index).err().unwrap().to_string();
        assert_eq!(err.to_string(), inspected);
        let shown = index.display().to_string();
        err.to_string()
            .strip_prefix(&format!("{shown}: "))
            .unwrap()
            .to_owned()
    };
    let both = r#""a": "s1.safetensors", "b": "s1.safetensors""#;
    for (c, says) in [
        (
            r#""../s2.safetensors""#,
            "tensor 'c': the shard name '../s2.safetensors' has a path separator: a shard is a file beside the index",
        ),
        (
            r#""C:s2""#,
            "tensor 'c': the shard name 'C:s2' is an absolute path or names a drive: a shard is a file beside the index",
        ),
        (r#""""#, "tensor 'c': the shard name '' is not a file name"),
        (
            r#""s\u0000""#,
            "tensor 'c': the shard name 's\\\\x00' holds a NUL character",
        ),
        (
            "[1.5e20, true]",
            "tensor 'c': its shard is list [1.5e+20, True], not a file name",
        ),
        (
            r#""s3.safetensors""#,
            "its shard 's3.safetensors' is missing",
        ),
        (
            r#""s1.safetensors""#,
            "tensor 'c' is not in its shard 's1.safetensors'",
        ),
        (
            r#""model.safetensors.index.json""#,
            "its shard 'model.safetensors.index.json' is no safetensors file: ",
        ),
    ] {
        let says_now = fails(&format!(r#"{{"c": {c}, {both}}}"#));
        assert!(says_now.starts_with(says), "{says_now} / {says}");
    }
    let missing = dir.join("s3.safetensors").display().to_string();
    assert!(fails(r#"{"c": "s3.safetensors"}"#).ends_with(&format!("is missing ({missing})")));
    assert_eq!(
        fails(r#"{"c": "s2.safetensors", "a": "s2.safetensors", "b": "s1.safetensors"}"#),
        "shard 's1.safetensors' holds tensor 'a', which the index puts in 's2.safetensors'"
    );
    assert_eq!(
        fails(r#"{"c": "s2.safetensors", "a": "s1.safetensors"}"#),
        "shard 's1.safetensors' holds tensor 'b', which the index does not name"
    );
    assert_eq!(
        fails(&format!(
            r#"{{"c": "s2.safetensors", "ghost": "s2.safetensors", {both}}}"#
        )),
        "tensor 'ghost' is not in its shard 's2.safetensors'"
    );
    // A tensor in two shards.
    let c = 7.0f32.to_le_bytes();
    let le = ByteOrder::Little;
    let arr = [
        ("c", array(&c, DType::F32, le, &[1])),
        ("a", array(&c, DType::F32, le, &[1])),
    ];
    let index = checkpoint(&dir, Some(&format!(r#"{{{both}, "c": "s2.safetensors"}}"#)));
    files::save(dir.join("s2.safetensors"), &arr, &[], 64).unwrap();
    let err = load(&index, MapMode::Read).err().unwrap().to_string();
    assert!(
        err.ends_with(": tensor 'a' is in two shards, 's1.safetensors' and 's2.safetensors'"),
        "{err}"
    );
    // A shard of another format.
    let index = checkpoint(&dir, None);
    std::fs::copy(vector("a.npy"), dir.join("s2.safetensors")).unwrap();
    let err = load(&index, MapMode::Read).err().unwrap().to_string();
    assert!(
        err.ends_with(": its shard 's2.safetensors' is npy, not safetensors"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn garbage_indexes_are_format_errors() {
    let dir = temp_dir("sharded-garbage");
    let index = dir.join("x.json");
    let says = |text: &[u8]| {
        std::fs::write(&index, text).unwrap();
        let err = load(&index, MapMode::Read).err().unwrap();
        assert_eq!(err.python_exception(), "FormatError");
        let shown = format!("{}: ", index.display());
        err.to_string().strip_prefix(&shown).unwrap().to_owned()
    };
    let as_index = "read as a sharded checkpoint's index (its name ends in .json)";
    assert_eq!(
        says(b"\xff\xfe{}"),
        format!("{as_index}, but it is not UTF-8 text (byte 0 is 0xff)")
    );
    assert!(says(b"{\"weight_map\": {").starts_with(&format!("{as_index}, but it is not JSON: ")));
    assert_eq!(
        says(br#"{"weight_map": {"a": "x", "a": "y"}}"#),
        "the key 'a' is given twice"
    );
    let deep = [vec![b'['; 5000], vec![b']'; 5000]].concat();
    assert_eq!(
        says(&deep),
        "JSON nested too deeply to be a sharded checkpoint's index"
    );
    let not_index = "not a sharded checkpoint's index, a JSON object with a \"weight_map\" object of tensor name -> shard file name";
    for text in [&b"[1, 2]"[..], b"\"weight_map\"", br#"{"weight_map": []}"#] {
        assert_eq!(says(text), not_index);
    }
    assert_eq!(
        says(br#"{"weight_map": {}, "metadata": "big"}"#),
        "its \"metadata\" is str, not an object"
    );
    std::fs::write(&index, br#"{"weight_map": {}, "metadata": {}}"#).unwrap();
    assert!(load(&index, MapMode::Read).unwrap().is_empty());
    assert!(files::inspect(&index).unwrap().arrays.is_empty());
    // Past the limit: refused unread.
    let small = LoadOptions {
        max_index: 16,
        ..LoadOptions::new(MapMode::Read)
    };
    let err = load_with(&index, small).err().unwrap().to_string();
    assert!(
        err.ends_with(": an index of more than 16 bytes (a sharded checkpoint's is a few MB)"),
        "{err}"
    );
    // A folder of two indexes.
    std::fs::write(dir.join("a.safetensors.index.json"), "{}").unwrap();
    std::fs::write(dir.join("b.safetensors.index.json"), "{}").unwrap();
    let err = load(&dir, MapMode::Read).err().unwrap().to_string();
    assert!(err.ends_with("the folder holds 2 sharded checkpoints' indexes ('a.safetensors.index.json', 'b.safetensors.index.json'): load one of them"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The first int32 of the array named "array" in the file at `path`, read
/// through a new read-only load (what another reader of the file sees).
fn first_element(path: &std::path::Path) -> i32 {
    load(path, MapMode::Read)
        .unwrap()
        .view::<i32>("array")
        .unwrap()
        .get(&[0])
        .unwrap()
}

#[test]
fn read_survives_the_file_shrinking_under_it() {
    // What `load`'s mapping cannot survive (SIGBUS on Unix): another
    // process truncates the file while its arrays are in use.
    let dir = temp_dir("read-shrinks");
    let path = dir.join("w.safetensors");
    let values: Vec<u8> = (0..1000i32).flat_map(i32::to_le_bytes).collect();
    let w = array(&values, DType::I32, ByteOrder::Little, &[1000]);
    files::save(&path, &[("w", w)], &[], 64).unwrap();
    let mut loaded = files::read(&path, MapMode::Copy).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(0)
        .unwrap();
    let view = loaded.view::<i32>("w").unwrap();
    assert_eq!(
        view.iter().collect::<Vec<_>>(),
        (0..1000).collect::<Vec<_>>()
    );
    // Copy: writable, and private to the copy.
    loaded.view_mut::<i32>("w").unwrap().set(&[0], 7).unwrap();
    assert_eq!(loaded.view::<i32>("w").unwrap().get(&[0]).unwrap(), 7);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
    // Read: read-only, as a read-only mapping.
    files::save(&path, &[("w", w)], &[], 64).unwrap();
    let mut r = files::read(&path, MapMode::Read).unwrap();
    assert_eq!(
        r.view_mut::<i32>("w").err().unwrap().python_exception(),
        "LayoutError"
    );
    // A read copy is as aligned as a mapping: the view is in place.
    assert_eq!(r.view::<i32>("w").unwrap().get(&[999]).unwrap(), 999);
    // ReadWrite cannot write through a copy: refused, naming the file.
    let err = files::read(&path, MapMode::ReadWrite)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains(&path.display().to_string()) && err.contains("cannot write through"),
        "{err}"
    );
    // An empty .npy-less file: the header's error, not a crash.
    std::fs::write(dir.join("empty.npy"), []).unwrap();
    let err = files::read(dir.join("empty.npy"), MapMode::Read)
        .err()
        .unwrap();
    assert_eq!(err.python_exception(), "FormatError");
    std::fs::remove_dir_all(&dir).unwrap();
}
