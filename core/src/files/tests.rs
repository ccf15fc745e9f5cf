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
    read_header(file, file.len())
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
            (file.len() - 12, 12, true)
        );
        let layout = array.layout().unwrap();
        assert_eq!(
            (layout.strides(), layout.byte_order()),
            (&[2, 4][..], ByteOrder::Big)
        );
        layout.check(file.len()).unwrap();
    }
    let scalar = npy(1, "{'descr':'<f8','fortran_order':False,'shape':()}", 8);
    assert_eq!(read(&scalar).unwrap().arrays[0].shape, Vec::<usize>::new());
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
        assert_eq!((array.descr, array.nbytes), (None, 2 * size));
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
            "array \"array\": has a shape whose size does not fit in memory",
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
    assert_eq!(header.metadata, [("format".into(), "np".into())]);
    let names: Vec<&str> = header.arrays.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["b", "a", "e", "q"]);
    let b = &header.arrays[0];
    assert_eq!(
        (b.offset, b.layout().unwrap().descr().to_string()),
        (8 + json.len() + 8, "<bfloat16".into())
    );
    assert_eq!(header.arrays[3].descr, None);
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
        (
            format!(
                r#"{{"a":{{{}}}}}"#,
                t("F64", "[4294967296,4294967296]", "[0,1]")
            ),
            1,
            "array \"a\": has a shape whose size does not fit in memory",
        ),
        (
            r#"{"a":{"dtype":"U8","shape":[1]}}"#.into(),
            1,
            "array \"a\": has no data_offsets pair",
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
            "neither an .npy file (which starts with \\x93NUMPY) nor a safetensors file (an 8-byte header length, then a JSON object)",
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
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    assert!(matches!(
        read(&safetensors(&format!("{{\"a\":{deep}}}"), 0)),
        Err(FileError::Syntax { .. })
    ));
    let name = "n".repeat(300);
    let message = read(&safetensors(&format!(r#"{{"{name}":{{}}}}"#), 0))
        .unwrap_err()
        .to_string();
    assert!(message.len() < 120, "{message}");
    let list = safetensors("[1]", 0);
    assert_eq!(
        read_safetensors(&list, list.len()).unwrap_err().to_string(),
        "the header is not a JSON object"
    );
}
