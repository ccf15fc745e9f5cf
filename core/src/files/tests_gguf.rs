//! The GGUF reader against hand-made files: every value type, tensor
//! infos in numpy's order, and every hostile header item by its message.

extern crate std;
use super::*;
use std::format;
use std::string::ToString;
use std::vec;

/// A GGUF file, written field by field.
#[derive(Default)]
struct Gguf {
    version: u32,
    keys: Vec<(String, Vec<u8>)>,
    tensors: Vec<(String, Vec<u64>, u32, u64)>,
    data: usize,
}

fn string(text: &[u8]) -> Vec<u8> {
    let mut out = (text.len() as u64).to_le_bytes().to_vec();
    out.extend(text);
    out
}

impl Gguf {
    fn new() -> Gguf {
        Gguf {
            version: 3,
            ..Gguf::default()
        }
    }

    /// A key whose value is `code` then `value`'s bytes.
    fn key(mut self, key: &str, code: u32, value: &[u8]) -> Gguf {
        let mut bytes = code.to_le_bytes().to_vec();
        bytes.extend(value);
        self.keys.push((key.into(), bytes));
        self
    }

    fn tensor(mut self, name: &str, dims: &[u64], code: u32, offset: u64) -> Gguf {
        self.tensors
            .push((name.into(), dims.to_vec(), code, offset));
        self
    }

    fn data(mut self, n: usize) -> Gguf {
        self.data = n;
        self
    }

    fn bytes(&self, align: usize) -> Vec<u8> {
        let mut file = b"GGUF".to_vec();
        file.extend(self.version.to_le_bytes());
        file.extend((self.tensors.len() as u64).to_le_bytes());
        file.extend((self.keys.len() as u64).to_le_bytes());
        for (key, value) in &self.keys {
            file.extend(string(key.as_bytes()));
            file.extend(value);
        }
        for (name, dims, code, offset) in &self.tensors {
            file.extend(string(name.as_bytes()));
            file.extend((dims.len() as u32).to_le_bytes());
            for d in dims {
                file.extend(d.to_le_bytes());
            }
            file.extend(code.to_le_bytes());
            file.extend(offset.to_le_bytes());
        }
        file.resize(file.len().next_multiple_of(align) + self.data, 0);
        file
    }

    fn read(&self) -> Result<FileHeader, FileError> {
        let file = self.bytes(32);
        read_header(&file, file.len() as u64)
    }

    fn error(&self) -> String {
        self.read().unwrap_err().to_string()
    }
}

#[test]
fn every_value_type_reads_back() {
    let mut tokens = 3u32.to_le_bytes().to_vec(); // an array of 8 = strings
    tokens[0] = 8;
    tokens.extend(2u64.to_le_bytes());
    tokens.extend(string(b"<s>"));
    tokens.extend(string("é".as_bytes()));
    let mut scores = 6u32.to_le_bytes().to_vec();
    scores.extend(2u64.to_le_bytes());
    scores.extend(1.5f32.to_le_bytes());
    scores.extend((-2.0f32).to_le_bytes());
    let g = Gguf::new()
        .key("u8", 0, &[200])
        .key("i8", 1, &[0xfe])
        .key("u16", 2, &600u16.to_le_bytes())
        .key("i16", 3, &(-600i16).to_le_bytes())
        .key("u32", 4, &70000u32.to_le_bytes())
        .key("i32", 5, &(-70000i32).to_le_bytes())
        .key("f32", 6, &0.25f32.to_le_bytes())
        .key("bool", 7, &[1])
        .key("str", 8, &string(b"llama"))
        .key("tokens", 9, &tokens)
        .key("scores", 9, &scores)
        .key("u64", 10, &u64::MAX.to_le_bytes())
        .key("i64", 11, &i64::MIN.to_le_bytes())
        .key("f64", 12, &0.1f64.to_le_bytes());
    let file = g.bytes(32);
    let header = read_header(&file, file.len() as u64).unwrap();
    assert_eq!(
        (header.format, header.version, header.data_start),
        (Format::Gguf, (3, 0), file.len() as u64)
    );
    let values: Vec<_> = header
        .gguf
        .iter()
        .map(|e| (e.key, e.value(&file).unwrap()))
        .collect();
    use GgufValue::*;
    assert_eq!(
        values[..9],
        [
            ("u8", UInt(200)),
            ("i8", Int(-2)),
            ("u16", UInt(600)),
            ("i16", Int(-600)),
            ("u32", UInt(70000)),
            ("i32", Int(-70000)),
            ("f32", Float(0.25)),
            ("bool", Bool(true)),
            ("str", Str("llama")),
        ]
    );
    assert_eq!(values[9].1.strings().collect::<Vec<_>>(), ["<s>", "é"]);
    let scores = header.gguf.find("scores").unwrap();
    assert_eq!(
        (scores.kind, scores.array, scores.count, scores.nbytes),
        (ValueType::F32, true, 2, 8)
    );
    assert_eq!(
        values[11..],
        [
            ("u64", UInt(u64::MAX)),
            ("i64", Int(i64::MIN)),
            ("f64", Float(0.1))
        ]
    );
}

#[test]
fn tensors_in_numpy_order_with_their_types() {
    let g = Gguf::new()
        .key("general.alignment", 4, &64u32.to_le_bytes())
        .tensor("tok_embd", &[64, 3], 12 + 2, 0) // Q6_K is 14: 64 is not a block
        .data(0);
    assert_eq!(
        g.error(),
        "array \"tok_embd\": has rows of 64 elements, not a multiple of Q6_K's block of 256"
    );
    let g = Gguf::new()
        .key("general.alignment", 4, &64u32.to_le_bytes())
        .tensor("w", &[512, 3], 12, 0) // Q4_K: 2 blocks a row, 144 bytes each
        .tensor("norm", &[8], 0, 896) // F32, after 864 bytes rounded to 64
        .tensor("iq", &[256], 16, 960) // IQ2_XXS: sized, not read
        .tensor("new", &[7], 99, 1088) // a type ggml has not got, unsized
        .data(1089); // but with elements: at least a byte in the file
    let file = g.bytes(64);
    let header = read_header(&file, file.len() as u64).unwrap();
    let start = header.data_start;
    let rows: Vec<_> = header
        .arrays
        .iter()
        .map(|a| {
            (
                a.name.as_str(),
                a.dtype.as_str(),
                a.shape.clone(),
                a.offset - start,
                a.nbytes,
                a.ggml,
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("w", "Q4_K", vec![3, 512], 0, 864, Some(GgmlType::Q4_K)),
            ("norm", "F32", vec![8], 896, 32, Some(GgmlType::F32)),
            ("iq", "IQ2_XXS", vec![256], 960, 66, None),
            ("new", "ggml type 99", vec![7], 1088, 0, None),
        ]
    );
    let access: Vec<_> = header
        .arrays
        .iter()
        .map(|a| a.access(0).to_string())
        .collect();
    assert_eq!(
        access,
        [
            "Q4_K blocks, dequantised on access",
            "a view of the mapped file",
            "bytelens has no dtype IQ2_XXS",
            "bytelens has no dtype ggml type 99",
        ]
    );
    assert_eq!(
        header.arrays[1].layout().unwrap().descr().to_string(),
        "<f4"
    );
}

#[test]
fn the_type_table_is_consistent() {
    for t in GgmlType::ALL {
        let info = t.info();
        assert_eq!(
            (
                GgmlType::from_code(info.code),
                GgmlType::from_name(info.name)
            ),
            (Some(t), Some(t))
        );
        assert!(
            other_ggml_type(info.code).is_none(),
            "{t} is in both tables"
        );
        // The fields cover the block exactly, in offset order.
        let plan = t.plan().unwrap();
        assert_eq!(plan.nbytes(), info.bytes as usize, "{t}");
        let covered: usize = plan.fields().iter().map(|f| f.nbytes()).sum();
        assert_eq!(covered, info.bytes as usize, "{t}");
        assert!(
            info.fields.windows(2).all(|w| w[0].offset < w[1].offset),
            "{t}"
        );
        assert_eq!(t.is_quantized(), info.block > 1, "{t}");
    }
}

#[test]
fn hostile_headers_say_what_is_wrong() {
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            Gguf {
                version: 1,
                ..Gguf::new()
            }
            .bytes(32),
            "the header gives GGUF version 1; bytelens reads versions 2 and 3",
        ),
        (
            Gguf {
                version: 3u32.swap_bytes(),
                ..Gguf::new()
            }
            .bytes(32),
            "the header is a big-endian GGUF file (version 3 with its bytes swapped), which bytelens does not read: convert it with gguf-py's gguf_convert_endian",
        ),
        (
            Gguf::new().key("a", 13, &[]).bytes(32),
            "the header gives \"a\" the value type 13, which GGUF does not have (0 to 12)",
        ),
        (
            Gguf::new().key("a", 9, &[9, 0, 0, 0]).bytes(32),
            "the header gives \"a\" an array of arrays, which GGUF readers refuse",
        ),
        (
            Gguf::new().key("a", 0, &[1]).key("a", 0, &[2]).bytes(32),
            "the header gives the key \"a\" twice",
        ),
        (
            Gguf::new().key("a", 8, &string(b"\xff")).bytes(32),
            "the header holds the value of \"a\" that is not UTF-8 (byte 45)",
        ),
        (
            Gguf::new()
                .key("general.alignment", 4, &48u32.to_le_bytes())
                .bytes(32),
            "the header gives general.alignment 48, where a power of two is needed",
        ),
        (
            Gguf::new()
                .key("general.alignment", 8, &string(b"32"))
                .bytes(32),
            "the header gives general.alignment a string value, where GGUF's type for it is uint32 (gguf-py and llama.cpp refuse the file)",
        ),
        // Issue 40: a power of two of another integer type was read.
        (
            Gguf::new()
                .key("general.alignment", 10, &32u64.to_le_bytes())
                .bytes(32),
            "the header gives general.alignment a uint64 value, where GGUF's type for it is uint32 (gguf-py and llama.cpp refuse the file)",
        ),
        (
            Gguf::new()
                .key("general.alignment", 5, &32i32.to_le_bytes())
                .bytes(32),
            "the header gives general.alignment an int32 value, where GGUF's type for it is uint32 (gguf-py and llama.cpp refuse the file)",
        ),
        (
            Gguf::new()
                .key(
                    "general.alignment",
                    9,
                    &[
                        &4u32.to_le_bytes()[..],
                        &1u64.to_le_bytes(),
                        &32u32.to_le_bytes(),
                    ]
                    .concat(),
                )
                .bytes(32),
            "the header gives general.alignment an array of uint32, where GGUF's type for it is uint32 (gguf-py and llama.cpp refuse the file)",
        ),
        (
            Gguf::new()
                .key("general.alignment", 4, &0u32.to_le_bytes())
                .bytes(32),
            "the header gives general.alignment 0, where a power of two is needed",
        ),
        // Issue 40: a tensor name is not "a key"; numbers past 2^64 are
        // said to overflow, not printed as 2^64 - 1; format characters
        // are escaped.
        (
            Gguf::new().tensor("w", &[4], 0, u64::MAX - 31).bytes(32),
            "array \"w\": starts at byte 18446744073709551584 of the tensor data, which itself starts at byte 64: past 2^64 bytes, and the file has 64",
        ),
        (
            Gguf::new().tensor("w", &[40], 0, u64::MAX - 127).bytes(32),
            "array \"w\" starts at byte 18446744073709551552 and its end overflows a 64-bit offset, past the end of the file (64 bytes)",
        ),
        (
            Gguf::new()
                .key("k", 8, &(u64::MAX - 8).to_le_bytes())
                .bytes(32),
            "the file ends at byte 64, inside a metadata value, whose end overflows a 64-bit offset",
        ),
        (
            Gguf::new()
                .tensor("a\u{202e}b\u{2028}c\u{feff}", &[4], 0, 0)
                .tensor("a\u{202e}b\u{2028}c\u{feff}", &[4], 0, 32)
                .data(64)
                .bytes(32),
            "the header names the tensor \"a\\u{202e}b\\u{2028}c\\u{feff}\" twice",
        ),
        // Item 20: a type ggml has not got is held to the shape rule, and
        // its data to starting inside the file.
        (
            Gguf::new().tensor("w", &[1 << 62, 4], 99, 0).bytes(32),
            "array \"w\": has the shape (4, 4611686018427387904), whose size does not fit in memory (1 byte times its lengths, a 0 counted as 1, is more than 9223372036854775807)",
        ),
        (
            Gguf::new().tensor("w", &[8, 8], 99, 0).bytes(32),
            "array \"w\": of ggml type 99, which bytelens does not know, has elements but starts at byte 96, and the file ends at byte 96",
        ),
        (
            Gguf::new().tensor("w", &[1, 1, 1, 1, 1], 0, 0).bytes(32),
            "array \"w\": has 5 dimensions, more than the 4 GGUF allows",
        ),
        (
            Gguf::new()
                .tensor("w", &[4], 0, 0)
                .tensor("w", &[4], 0, 32)
                .data(64)
                .bytes(32),
            "the header names the tensor \"w\" twice",
        ),
        (
            Gguf::new()
                .tensor("w", &[4], 0, 0)
                .tensor("v", &[4], 0, 0)
                .data(64)
                .bytes(32),
            "arrays \"w\" and \"v\" share bytes",
        ),
        (
            Gguf::new().tensor("w", &[4], 0, 8).data(64).bytes(32),
            "array \"w\": starts at byte 8 of the tensor data, not a multiple of the file's alignment, 32",
        ),
        (
            Gguf::new().tensor("w", &[40], 0, 0).data(64).bytes(32),
            "array \"w\" lies at bytes 64..224, past the end of the file (128 bytes)",
        ),
        (
            Gguf::new().tensor("w", &[1 << 62, 4], 0, 0).bytes(32),
            "array \"w\": has the shape (4, 4611686018427387904), whose size does not fit in memory (4 bytes times its lengths, a 0 counted as 1, is more than 9223372036854775807)",
        ),
    ];
    for (file, message) in cases {
        let err = read_header(&file, file.len() as u64).unwrap_err();
        assert_eq!(err.to_string(), message);
        assert_eq!(err.more_needed(file.len()), None, "{message}");
    }
}

#[test]
fn counts_past_the_file_are_refused_before_anything_is_allocated() {
    let mut file = b"GGUF".to_vec();
    file.extend(3u32.to_le_bytes());
    file.extend(0u64.to_le_bytes());
    file.extend((1u64 << 62).to_le_bytes());
    let err = read_header(&file, file.len() as u64)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "the header says it holds 4611686018427387904 metadata keys, which take at least \
         13 bytes each: more than 2^64 bytes in all, and the file has 0 left"
    );
    // A string array of 2^62 elements in a file of a few bytes.
    let mut array = 8u32.to_le_bytes().to_vec();
    array.extend((1u64 << 62).to_le_bytes());
    let file = Gguf::new().key("tokens", 9, &array).bytes(32);
    let err = read_header(&file, file.len() as u64)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("the header gives \"tokens\" an array of 4611686018427387904 string values, more than the"), "{err}");
    // A string longer than the header may be.
    let mut long = 200_000_000u64.to_le_bytes().to_vec();
    long.extend(b"...");
    let file = Gguf::new().key("s", 8, &long).bytes(1);
    let err = read_header(&file, 1 << 40).unwrap_err();
    assert_eq!(
        err,
        FileError::HeaderTooLarge {
            len: 200_000_000 + file.len() as u64 - 3
        }
    );
}

#[test]
fn a_head_cut_short_asks_for_twice_as_much() {
    let mut tokens = 8u32.to_le_bytes().to_vec();
    tokens.extend(1000u64.to_le_bytes());
    for i in 0..1000 {
        tokens.extend(string(format!("token{i}").as_bytes()));
    }
    let file = Gguf::new()
        .key("tokens", 9, &tokens)
        .tensor("w", &[4], 0, 0)
        .data(16)
        .bytes(32);
    let mut have = 64;
    let mut passes = 0;
    let header = loop {
        passes += 1;
        match read_header(&file[..have], file.len() as u64) {
            Ok(header) => break header,
            Err(err) => {
                let need = err.more_needed(have).unwrap() as usize;
                assert!(
                    need >= 2 * have || need == file.len(),
                    "{need} after {have}"
                );
                have = need;
            }
        }
    };
    assert!(passes <= 10, "{passes}");
    assert_eq!(
        header
            .gguf
            .get(0)
            .unwrap()
            .value(&file)
            .unwrap()
            .strings()
            .nth(999),
        Some("token999")
    );
    // Every prefix of a small file: an error that asks for more, never a panic.
    let small = Gguf::new()
        .key("k", 8, &string(b"v"))
        .tensor("w", &[4], 1, 0)
        .data(8)
        .bytes(32);
    let whole = read_header(&small, small.len() as u64).unwrap();
    let mut read = false;
    for n in 0..small.len() {
        match read_header(&small[..n], small.len() as u64) {
            Ok(header) => (read, _) = (true, assert_eq!(header, whole, "{n}")),
            Err(err) => assert!(!read && err.more_needed(n).is_some(), "{n}: {err}"),
        }
        let cut = read_header(&small[..n], n as u64).unwrap_err();
        assert_eq!(cut.more_needed(n), None, "{n}: {cut}");
    }
}

#[test]
fn names_that_are_not_utf8_are_called_what_they_are() {
    // Issue 40: a tensor name was "a key". Each file holds "wé" with its
    // first byte of é (0xc3) made 0xff.
    let cut = |file: Vec<u8>| {
        let mut file = file;
        let at = file.iter().position(|&b| b == 0xc3).unwrap();
        file[at] = 0xff;
        (
            read_header(&file, file.len() as u64)
                .unwrap_err()
                .to_string(),
            at,
        )
    };
    let (err, at) = cut(Gguf::new().tensor("w\u{e9}", &[4], 0, 0).data(16).bytes(32));
    assert_eq!(
        err,
        format!("the header holds a tensor name that is not UTF-8 (byte {at})")
    );
    let (err, at) = cut(Gguf::new().key("w\u{e9}", 0, &[1]).bytes(32));
    assert_eq!(
        err,
        format!("the header holds a metadata key that is not UTF-8 (byte {at})")
    );
}

#[test]
fn an_empty_file_is_said_to_be_empty() {
    // Issue 40: an empty .gguf was "inside the npy magic".
    let err = read_header(&[], 0).unwrap_err();
    assert_eq!(err.to_string(), "the file is empty (0 bytes)");
    assert_eq!(err.more_needed(0), None);
    // No bytes of a longer file: the first ones are asked for.
    let err = read_header(&[], 100).unwrap_err();
    assert_eq!(err.more_needed(0), Some(10));
    assert_eq!(
        err.to_string(),
        "the file ends at byte 100, inside the first bytes, which say the format, which runs to byte 10"
    );
}
