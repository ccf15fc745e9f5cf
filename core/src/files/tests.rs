//! The readers against hand-made files: every error message, every version.

extern crate std;
use super::*;
use crate::ByteOrder;
use std::format;

fn npy(version: u8, header: &str, data: usize) -> Vec<u8> {
    let mut file = NPY_MAGIC.to_vec();
    file.extend([version, 0]);
    match version {
        1 => file.extend((header.len() as u16).to_le_bytes()),
        _ => file.extend((header.len() as u32).to_le_bytes()),
    }
    file.extend(header.as_bytes());
    file.resize(file.len() + data, 0);
    file
}

fn safetensors(json: &str, data: usize) -> Vec<u8> {
    let mut file = (json.len() as u64).to_le_bytes().to_vec();
    file.extend(json.as_bytes());
    file.resize(file.len() + data, 0);
    file
}

fn read(file: &[u8]) -> Result<FileHeader, FileError> {
    read_header(file, file.len() as u64)
}

#[test]
fn npy_in_every_version_and_order() {
    let dict = "{'descr': '>i2', 'fortran_order': True, 'shape': (2, 3), }";
    for version in [1, 2, 3] {
        // Padded as numpy pads, so that the data starts at a multiple of 64.
        let lead = if version == 1 { 10 } else { 12 };
        let padded = format!("{dict:<width$}\n", width = 127 - lead);
        let file = npy(version, &padded, 12);
        let header = read(&file).unwrap();
        let array = &header.arrays[0];
        assert_eq!(header.version, (version, 0));
        assert_eq!(
            (array.offset, array.nbytes, array.fortran),
            (file.len() as u64 - 12, 12, true)
        );
        let layout = array.layout().unwrap();
        assert_eq!(
            (layout.strides(), layout.byte_order()),
            (&[2, 4][..], ByteOrder::Big)
        );
        layout.check(file.len()).unwrap();
    }
    let scalar = npy(1, "{'descr':'<f8','fortran_order':False,'shape':()}", 8);
    assert_eq!(read(&scalar).unwrap().arrays[0].shape, Vec::<u64>::new());
    let old = npy(
        1,
        "{'descr': '<u4', 'fortran_order': False, 'shape': (3L,), }",
        12,
    );
    assert_eq!(read(&old).unwrap().arrays[0].shape, [3]);
}

#[test]
fn npy_dtypes_bytelens_lacks_are_reported() {
    for (descr, size) in [("<c8", 8), ("|S5", 5), ("<U2", 8)] {
        let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': (2,), }}");
        let header = read(&npy(1, &dict, 2 * size)).unwrap();
        let array = &header.arrays[0];
        assert_eq!((array.descr, array.nbytes), (None, 2 * size as u64));
        assert_eq!(array.layout().unwrap_err().kind(), "BadDType");
    }
    let structured =
        "{'descr': [('a', '<i4'), ('b', '<f8')], 'fortran_order': False, 'shape': (1,), }";
    assert_eq!(
        read(&npy(1, structured, 12)).unwrap().arrays[0].dtype,
        "structured"
    );
}

#[test]
fn broken_npy_headers_say_what_is_wrong() {
    let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }";
    let good = npy(1, dict, 16);
    let cut = &good[..good.len() - 1];
    assert_eq!(
        read(cut).unwrap_err().to_string(),
        format!(
            "array \"array\" lies at bytes {}..{}, past the end of the file ({} bytes)",
            good.len() - 16,
            good.len(),
            cut.len()
        )
    );
    assert_eq!(
        read(&good[..20]).unwrap_err(),
        FileError::Truncated {
            what: "the npy header",
            need: 10 + dict.len() as u64,
            len: 20
        }
    );
    let mut future = good.clone();
    future[6] = 4;
    assert_eq!(
        read(&future).unwrap_err(),
        FileError::Version { major: 4, minor: 0 }
    );
    for (header, message) in [
        (
            "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (4,)}",
            "the header gives the key \"descr\" twice",
        ),
        (
            "{'descr': '<f4', 'shape': (4,)}",
            "the header has no 'fortran_order'",
        ),
        (
            "{'descr': '<f4', 'fortran_order': 0, 'shape': (4,)}",
            "the header does not parse: expected a string, True, False or a tuple at character 34",
        ),
        (
            "{'descr': '<f4', 'fortran_order': False, 'shape': (-4,)}",
            "the header does not parse: expected a length (a whole number) at character 51",
        ),
        (
            "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'x': 'y'}",
            "the header has the key \"x\", which npy headers do not",
        ),
        (
            "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999)}",
            "array \"array\": has the shape (99999999999, 99999999999), whose size does not fit in memory (4 bytes times its lengths, a 0 counted as 1, is more than 9223372036854775807)",
        ),
        (
            "{'descr': '<f4', 'fortran_order': False, 'shape': (4,)} x",
            "the header does not parse: expected only spaces after the dict at character 56",
        ),
    ] {
        assert_eq!(read(&npy(1, header, 16)).unwrap_err().to_string(), message);
    }
    let mut huge = npy(2, dict, 0);
    huge[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(
        read(&huge).unwrap_err(),
        FileError::HeaderTooLarge {
            len: u32::MAX.into()
        }
    );
    let mut latin = npy(1, dict, 16);
    latin[12] = 0xff;
    assert!(matches!(read(&latin), Err(FileError::Syntax { .. })));
    assert_eq!(
        read(b"\x93NUM").unwrap_err().to_string(),
        "the file ends at byte 4, inside the npy magic, which runs to byte 10"
    );
    assert_eq!(read(b"hello, world").unwrap_err(), FileError::Unrecognised);
}

#[test]
fn safetensors_with_metadata_and_every_dtype() {
    let json = r#"{"__metadata__":{"format":"np"},"b":{"dtype":"BF16","shape":[2,2],"data_offsets":[8,16]},"a":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},"e":{"dtype":"F32","shape":[0],"data_offsets":[16,16]},"q":{"dtype":"F8_E4M3","shape":[4],"data_offsets":[16,20]}}"#;
    let file = safetensors(json, 20);
    let header = read(&file).unwrap();
    assert_eq!(
        header.metadata.iter().collect::<Vec<_>>(),
        [("format", "np")]
    );
    let names: Vec<&str> = header.arrays.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["b", "a", "e", "q"]);
    let b = &header.arrays[0];
    assert_eq!(
        (b.offset, b.layout().unwrap().descr().to_string()),
        (8 + json.len() as u64 + 8, "<bfloat16".into())
    );
    let q = &header.arrays[3];
    assert_eq!(
        (q.descr, q.access(0)),
        (
            Some(Descr::new(DType::F8E4M3FN, ByteOrder::Little)),
            Access::View
        )
    );
}

/// A safetensors file of one tensor `t`.
fn one_tensor(dtype: &str, shape: &str, nbytes: u64) -> Result<FileHeader, FileError> {
    let json =
        format!(r#"{{"t":{{"dtype":"{dtype}","shape":{shape},"data_offsets":[0,{nbytes}]}}}}"#);
    read(&safetensors(&json, nbytes as usize))
}

#[test]
fn every_dtype_of_the_table_reads_from_its_safetensors_code() {
    for dtype in DType::ALL {
        let code = dtype.info().safetensors;
        let header = one_tensor(code, "[3]", 3 * dtype.size() as u64).unwrap();
        let t = &header.arrays[0];
        assert_eq!(
            t.descr,
            Some(Descr::new(dtype, ByteOrder::Little)),
            "{code}"
        );
        assert_eq!(t.layout().unwrap().descr().dtype, dtype, "{code}");
    }
}

#[test]
fn no_lacking_code_is_in_the_dtype_table() {
    for (code, _) in safetensors::LACKING {
        assert_eq!(
            DType::from_safetensors(code),
            None,
            "{code} has a row now: remove it from LACKING"
        );
    }
}

#[test]
fn safetensors_dtypes_bytelens_lacks_are_described_not_refused() {
    // Bits per element as safetensors 0.8 counts them: F4 packs two to a byte.
    for (code, shape, nbytes) in [
        ("F4", "[8]", 4),
        ("F6_E2M3", "[4]", 3),
        ("F6_E3M2", "[2,4]", 6),
        ("F8_E4M3FNUZ", "[5]", 5),
        ("F8_E5M2FNUZ", "[5]", 5),
        ("C64", "[3]", 24),
        ("F4", "[0]", 0),
    ] {
        let header = one_tensor(code, shape, nbytes).unwrap();
        let t = &header.arrays[0];
        assert_eq!((t.descr, t.nbytes), (None, nbytes), "{code}");
        let access = t.access(0);
        assert_eq!(
            access,
            Access::NoDType {
                dtype: code.into(),
                raw: false
            }
        );
        assert_eq!(access.to_string(), format!("bytelens has no dtype {code}"));
        assert_eq!(t.layout().unwrap_err().kind(), "BadDType");
    }
    assert_eq!(
        one_tensor("F4", "[3]", 2).unwrap_err().to_string(),
        "array \"t\": has 3 elements of \"F4\" (4 bits each), which do not fill whole bytes"
    );
    assert_eq!(
        one_tensor("F4", "[8]", 8).unwrap_err().to_string(),
        "array \"t\": data_offsets 0..8 do not hold its 8 elements of \"F4\" (4 bytes)"
    );
    // The shape's rule still holds below a byte.
    let big = 1u64 << 62;
    assert!(matches!(
        one_tensor("F4", &format!("[{big},4]"), 0),
        Err(FileError::BadEntry { .. })
    ));
}

#[test]
fn access_says_where_a_copy_is_needed_and_why() {
    let header = one_tensor("F32", "[2]", 8).unwrap();
    let t = &header.arrays[0];
    // The data starts after 8 + the JSON's length: not a multiple of 4 here.
    let start = t.offset;
    let aligned = (4 - start % 4) % 4;
    assert_eq!(t.access(aligned), Access::View);
    let off = t.access(aligned + 1);
    assert_eq!(
        off,
        Access::Misaligned {
            offset: start + aligned + 1,
            align: 4,
            dtype: DType::F32
        }
    );
    assert_eq!(
        off.to_string(),
        format!(
            "offset {} is not a multiple of 4, the alignment of float32",
            start + aligned + 1
        )
    );
    // No elements, no alignment needed (as in numpy).
    let empty = one_tensor("F64", "[0]", 0).unwrap();
    assert_eq!(empty.arrays[0].access(3), Access::View);
    assert_eq!(t.is_aligned(), t.access(0) == Access::View);
}

#[test]
fn broken_safetensors_headers_say_what_is_wrong() {
    let t = |dtype: &str, shape: &str, offsets: &str| {
        format!(r#""dtype":"{dtype}","shape":{shape},"data_offsets":{offsets}"#)
    };
    for (json, data, message) in [
        (
            format!(
                r#"{{"a":{{{}}},"a":{{{}}}}}"#,
                t("U8", "[1]", "[0,1]"),
                t("U8", "[1]", "[1,2]")
            ),
            2,
            "the header gives the key \"a\" twice",
        ),
        (
            format!(r#"{{"a":{{{},"dtype":"U8"}}}}"#, t("U8", "[1]", "[0,1]")),
            1,
            "the header gives the key \"dtype\" twice",
        ),
        (
            format!(
                r#"{{"a":{{{}}},"b":{{{}}}}}"#,
                t("U16", "[2]", "[0,4]"),
                t("U8", "[2]", "[3,5]")
            ),
            5,
            "arrays \"a\" and \"b\" share bytes",
        ),
        (
            format!(r#"{{"a":{{{}}}}}"#, t("F32", "[2]", "[0,4]")),
            4,
            "array \"a\": data_offsets 0..4 do not hold its 2 elements of \"F32\" (8 bytes)",
        ),
        (
            format!(r#"{{"a":{{{}}}}}"#, t("F32", "[1]", "[0,4]")),
            3,
            "array \"a\" lies at bytes 62..66, past the end of the file (65 bytes)",
        ),
        (
            format!(r#"{{"a":{{{}}}}}"#, t("F7", "[1]", "[0,1]")),
            1,
            "array \"a\": has the dtype \"F7\", which safetensors does not define",
        ),
        (
            format!(r#"{{"a":{{{}}}}}"#, t("U8", "[-1]", "[0,1]")),
            1,
            "array \"a\": a length is not a whole number",
        ),
        (
            format!(r#"{{"a":{{{}}}}}"#, t("U8", "[1.5]", "[0,1]")),
            1,
            "array \"a\": a length is not a whole number",
        ),
        // Issue 40: an integer past 2^64 - 1 (a float to serde_json) was
        // "not a whole number".
        (
            format!(
                r#"{{"a":{{{}}}}}"#,
                t("U8", "[1]", "[0,1180591620717411303424]")
            ),
            1,
            "array \"a\": an offset is past 2^64 - 1",
        ),
        (
            format!(
                r#"{{"a":{{{}}}}}"#,
                t("U8", "[18446744073709551616]", "[0,1]")
            ),
            1,
            "array \"a\": a length is past 2^64 - 1",
        ),
        (
            format!(
                r#"{{"a":{{{}}}}}"#,
                t("F64", "[4294967296,4294967296]", "[0,1]")
            ),
            1,
            "array \"a\": has the shape (4294967296, 4294967296), whose size does not fit in memory (8 bytes times its lengths, a 0 counted as 1, is more than 9223372036854775807)",
        ),
        (
            r#"{"a":{"dtype":"U8","shape":[1]}}"#.into(),
            1,
            "array \"a\": has no data_offsets pair",
        ),
        // Issue 40: offsets past 2^64 are said to overflow, not printed as
        // 2^64 - 1; format characters in names are escaped.
        (
            format!(
                r#"{{"a":{{{}}}}}"#,
                t("U8", "[8]", "[18446744073709551600,18446744073709551608]")
            ),
            1,
            "array \"a\" starts past byte 2^64 - 1 (its offset overflows), past the end of the file (100 bytes)",
        ),
        (
            format!(
                r#"{{"a\u202e\u2029\ufeff":{{{}}}}}"#,
                t("U8", "[8]", "[18446744073709551607,18446744073709551615]")
            ),
            1,
            "array \"a\\u{202e}\\u{2029}\\u{feff}\" starts past byte 2^64 - 1 (its offset overflows), past the end of the file (118 bytes)",
        ),
        (
            r#"{"__metadata__":{"k":1}}"#.into(),
            0,
            "the header '__metadata__' value of \"k\" is not a string",
        ),
        (
            r#"{"a\u0000\n":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":0}}"#.into(),
            1,
            "array \"a\\0\\n\": has the unknown key \"x\"",
        ),
        (
            r#"[1]"#.into(),
            0,
            "not an .npy file (which starts with \\x93NUMPY), a GGUF file (which starts with GGUF) or a safetensors file (an 8-byte header length, then a JSON object)",
        ),
        (
            r#"{"a":"#.into(),
            0,
            "the header does not parse: EOF while parsing a value at line 1 column 5",
        ),
    ] {
        let file = safetensors(&json, data);
        assert_eq!(read(&file).unwrap_err().to_string(), message, "{json}");
    }
    let mut long = safetensors("{}", 0);
    long[..8].copy_from_slice(&1000u64.to_le_bytes());
    assert_eq!(
        read(&long).unwrap_err(),
        FileError::Truncated {
            what: "the safetensors header",
            need: 1008,
            len: 10
        }
    );
    long[..8].copy_from_slice(&u64::MAX.to_le_bytes());
    assert_eq!(
        read(&long).unwrap_err(),
        FileError::HeaderTooLarge { len: u64::MAX }
    );
    // Values the reader does not keep are skipped without recursion, so
    // any depth is safe, and reported for what it is.
    let depth = if cfg!(miri) { 1000 } else { 100_000 };
    let deep = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    assert_eq!(
        read(&safetensors(&format!("{{\"a\":{deep}}}"), 0))
            .unwrap_err()
            .to_string(),
        "array \"a\": is not an object of dtype, shape and data_offsets"
    );
    for json in [
        format!("{{\"__metadata__\":{{\"k\":{deep}}}}}"),
        format!(r#"{{"a":{{"dtype":"U8","shape":[{deep}],"data_offsets":[0,0]}}}}"#),
    ] {
        assert!(matches!(
            read(&safetensors(&json, 0)),
            Err(FileError::BadEntry { .. })
        ));
    }
    let unclosed = format!("{{\"a\":{}", "[".repeat(depth));
    assert!(matches!(
        read(&safetensors(&unclosed, 0)),
        Err(FileError::Syntax { .. })
    ));
    let name = "n".repeat(300);
    let message = read(&safetensors(&format!(r#"{{"{name}":{{}}}}"#), 0))
        .unwrap_err()
        .to_string();
    assert!(message.len() < 120, "{message}");
    let list = safetensors("[1]", 0);
    assert_eq!(
        read_safetensors(&list, list.len() as u64)
            .unwrap_err()
            .to_string(),
        "the header is not a JSON object"
    );
}

#[test]
fn repeated_keys_are_found_wherever_they_are() {
    let tensor = r#"{"dtype":"U8","shape":[1],"data_offsets":[0,1]}"#;
    for (json, key) in [
        (
            r#"{"__metadata__":{"a":"1","b":"2","a":"3"}}"#.to_string(),
            "a",
        ),
        (
            r#"{"__metadata__":{"a":"1"},"__metadata__":{}}"#.into(),
            "__metadata__",
        ),
        (format!(r#"{{"z":{tensor},"z":{tensor}}}"#), "z"),
    ] {
        let err = read(&safetensors(&json, 1)).unwrap_err();
        assert_eq!(err, FileError::DuplicateKey { key: key.into() }, "{json}");
    }
    for key in ["descr", "fortran_order", "shape"] {
        let value = match key {
            "descr" => "'<f4'",
            "fortran_order" => "False",
            _ => "(4,)",
        };
        let dict =
            format!("{{'descr': '<f4', 'fortran_order': False, 'shape': (4,), '{key}': {value}}}");
        assert_eq!(
            read(&npy(1, &dict, 16)).unwrap_err(),
            FileError::DuplicateKey { key: key.into() }
        );
    }
}

/// Keys by the hundred thousand, as the quadratic checks could not take
/// (160,000 took 16 s): correct results, found by sorting.
#[test]
#[cfg_attr(miri, ignore = "hundreds of thousands of keys: too slow under Miri")]
fn many_keys_are_checked_by_sorting() {
    let n = 200_000;
    let mut json = String::from(r#"{"__metadata__":{"#);
    for i in 0..n {
        json.push_str(&format!(r#""key{i}":"v","#));
    }
    json.push_str(r#""last":"v"}}"#);
    let started = std::time::Instant::now();
    let header = read(&safetensors(&json, 0)).unwrap();
    std::println!("{} metadata keys in {:?}", n + 1, started.elapsed());
    assert_eq!(header.metadata.len(), n + 1);
    assert_eq!(
        header.metadata.get(n - 1).unwrap(),
        (format!("key{}", n - 1).as_str(), "v")
    );
    let repeated = json.replace(r#""last""#, r#""key777""#);
    assert_eq!(
        read(&safetensors(&repeated, 0)).unwrap_err(),
        FileError::DuplicateKey {
            key: "key777".into()
        }
    );
    // As many tensors, one byte each, and one over another's byte.
    let mut json = String::from("{");
    for i in 0..n {
        json.push_str(&format!(
            r#""t{i}":{{"dtype":"U8","shape":[1],"data_offsets":[{i},{}]}},"#,
            i + 1
        ));
    }
    json.push_str(r#""u":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}"#);
    let header = read(&safetensors(&json, n)).unwrap();
    assert_eq!(header.arrays.len(), n + 1);
    let overlapping = json.replace(
        r#""u":{"dtype":"U8","shape":[0]"#,
        r#""u":{"dtype":"U8","shape":[1]"#,
    );
    let overlapping = overlapping.replace(r#""data_offsets":[0,0]"#, r#""data_offsets":[5,6]"#);
    assert_eq!(
        read(&safetensors(&overlapping, n)).unwrap_err(),
        FileError::Overlap {
            array: "t5".into(),
            other: "u".into()
        }
    );
    // An npy dict of 80,000 keys (numpy refuses it; so does bytelens, at once).
    let mut dict = String::from("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), ");
    for i in 0..80_000 {
        dict.push_str(&format!("'k{i}': 0, "));
    }
    dict.push('}');
    let dict = dict.replace(": 0,", ": False,");
    assert_eq!(
        read(&npy(2, &dict, 16)).unwrap_err().to_string(),
        "the header has the key \"k0\", which npy headers do not"
    );
}

#[test]
fn npy_descr_as_numpy_reads_it() {
    for (descr, expected) in [
        ("int16", Some("<i2")),
        ("float32", Some("<f4")),
        ("uint8", Some("|u1")),
        ("bool", Some("|b1")),
        ("double", Some("<f8")),
        ("f4", Some("<f4")),
        ("<f", Some("<f4")),
        (">h", Some(">i2")),
        ("|i2", Some("<i2")),
        ("=u4", Some("<u4")),
        ("<int16", None),
        ("bfloat16", None),
        ("<bfloat16", None),
        ("float8_e4m3fn", None),
        ("float8_e5m2", None),
        ("float8_e8m0fnu", None),
        ("float33", None),
    ] {
        let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': (2,), }}");
        let header = read(&npy(1, &dict, 16)).unwrap();
        let array = &header.arrays[0];
        assert_eq!(array.dtype, descr);
        assert_eq!(
            array.descr.map(|d| d.to_string()).as_deref(),
            expected,
            "{descr}"
        );
    }
}

#[test]
fn lengths_no_layout_holds_are_refused_even_beside_a_zero() {
    let big = 1u64 << 63;
    let dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': (0, {big}), }}");
    assert_eq!(
        read(&npy(1, &dict, 0)).unwrap_err().to_string(),
        "array \"array\": has the length 9223372036854775808, more than the \
         9223372036854775807 an axis can hold"
    );
    let json = format!(r#"{{"w":{{"dtype":"F32","shape":[{big},0],"data_offsets":[0,0]}}}}"#);
    assert!(
        read(&safetensors(&json, 0))
            .unwrap_err()
            .to_string()
            .starts_with("array \"w\": has the length 9223372036854775808")
    );
    // The largest length beside a zero that a layout holds is read, and laid out.
    let fits = format!(
        "{{'descr': '|u1', 'fortran_order': True, 'shape': (0, {}), }}",
        i64::MAX
    );
    let header = read(&npy(1, &fits, 0)).unwrap();
    assert_eq!(header.arrays[0].nbytes, 0);
    header.arrays[0].layout().unwrap();
    let over = format!(
        "{{'descr': '<u2', 'fortran_order': True, 'shape': (0, {}), }}",
        i64::MAX / 2 + 1
    );
    assert!(matches!(
        read(&npy(1, &over, 0)),
        Err(FileError::BadEntry { .. })
    ));
}

#[test]
fn offsets_past_4_gib_are_exact() {
    let len: u64 = 5_368_709_248;
    let end = len - 256;
    let json = format!(
        r#"{{"far":{{"dtype":"F32","shape":[2],"data_offsets":[{},{end}]}},"near":{{"dtype":"U8","shape":[8],"data_offsets":[0,8]}}}}"#,
        end - 8
    );
    let file = safetensors(&json, 0);
    let header = read_header(&file, len).unwrap();
    let far = &header.arrays[0];
    assert_eq!(header.data_start, file.len() as u64);
    assert_eq!((far.offset, far.nbytes), (file.len() as u64 + end - 8, 8));
    assert_eq!(
        far.layout().unwrap().byte_span().unwrap().start as u64,
        far.offset
    );
    let past = read_header(&file, file.len() as u64 + end - 1).unwrap_err();
    assert_eq!(
        past,
        FileError::OutsideFile {
            array: "far".into(),
            start: far.offset,
            end: far.offset + 8,
            len: file.len() as u64 + end - 1
        }
    );
    // Offsets up to 2^64 - 1 are reported, not wrapped.
    let json = format!(
        r#"{{"x":{{"dtype":"U8","shape":[1],"data_offsets":[{},{}]}}}}"#,
        u64::MAX - 1,
        u64::MAX
    );
    let file = safetensors(&json, 0);
    assert_eq!(
        read(&file).unwrap_err(),
        FileError::OutsideFile {
            array: "x".into(),
            start: u64::MAX,
            end: u64::MAX,
            len: file.len() as u64
        }
    );
}

#[test]
fn npy_names_every_numpy_dtype_and_no_ml_dtypes_one() {
    for dtype in DType::ALL {
        let descr = Descr::new(dtype, ByteOrder::Little).to_string();
        let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': (2,), }}");
        let header = read(&npy(1, &dict, 2 * dtype.size())).unwrap();
        let read_as = header.arrays[0].descr.map(|d| d.dtype);
        assert_eq!(read_as, dtype.info().npy.then_some(dtype), "{descr}");
    }
}

#[test]
fn npy_raw_bytes_say_what_np_save_did() {
    for (descr, size) in [("|V1", 1), ("<V2", 2), ("<f1", 1)] {
        let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': (3,), }}");
        let header = read(&npy(1, &dict, 3 * size)).unwrap();
        let access = header.arrays[0].access(0);
        assert_eq!(
            access,
            Access::NoDType {
                dtype: descr.into(),
                raw: true
            }
        );
        let text = access.to_string();
        assert!(
            text.starts_with(&format!(
                "bytelens has no dtype {descr} (np.save writes ml_dtypes'"
            )),
            "{text}"
        );
    }
    let complex = read(&npy(
        1,
        "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }",
        8,
    ))
    .unwrap();
    assert_eq!(
        complex.arrays[0].access(0).to_string(),
        "bytelens has no dtype <c8"
    );
}

#[test]
fn messages_escape_what_changes_how_a_line_reads() {
    // Issue 40: U+202E, U+2028 and a BOM reached messages raw. Every
    // character escaped is one Rust's Debug escapes too (nothing printable
    // is), and the bidirectional controls, separators and BOM all are.
    let step = if cfg!(miri) { 997 } else { 1 };
    for c in (0..=0x10ffff).step_by(step).filter_map(char::from_u32) {
        let text = c.to_string();
        let escaped = crate::Escaped(&text).to_string() != text;
        let debug = c.escape_debug().next() == Some('\\');
        assert!(!escaped || debug, "U+{:04X} escaped", c as u32);
    }
    for c in [
        '\u{202a}',
        '\u{202e}',
        '\u{2066}',
        '\u{2069}',
        '\u{200b}',
        '\u{200f}',
        '\u{2028}',
        '\u{2029}',
        '\u{feff}',
        '\u{ad}',
        '\u{e0041}',
        '\u{e000}',
        '\u{ffff}',
    ] {
        let escaped = crate::Escaped(&c.to_string()).to_string();
        assert_eq!(escaped, format!("\\u{{{:x}}}", c as u32));
    }
    assert_eq!(crate::Escaped("é中 ü").to_string(), "é中 ü");
    let err = FileError::DuplicateKey {
        key: "w\u{202e}txt.exe".into(),
    };
    assert_eq!(
        err.to_string(),
        "the header gives the key \"w\\u{202e}txt.exe\" twice"
    );
}
