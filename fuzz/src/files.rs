//! The `files` target: any bytes as the start of an `.npy` or safetensors
//! file (`bytelens_core::files::read_header`). A header that reads must
//! describe arrays inside the file, over no shared bytes, whose layouts
//! the core accepts; one that does not must say why in a short message.
//! Reading from a prefix and then from the `need` bytes it asks for gives
//! what reading the whole file gives (how bindings read a header).

use bytelens_core::files::{FileError, FileHeader, Format, read_header};

use crate::MAX_MESSAGE;

pub fn run(data: &[u8]) {
    let whole = read_header(data, data.len());
    match &whole {
        Ok(header) => check_header(header, data.len()),
        Err(err) => {
            let message = err.to_string();
            assert!(
                !message.is_empty() && message.len() <= MAX_MESSAGE,
                "{} bytes: {message}",
                message.len()
            );
        }
    }
    // As a binding reads it: a first few bytes, then what they ask for.
    let head = &data[..data.len().min(64)];
    let from_head = match read_header(head, data.len()) {
        Err(FileError::Truncated { need, .. }) if need > head.len() as u64 => {
            match usize::try_from(need).ok().and_then(|n| data.get(..n)) {
                Some(prefix) => read_header(prefix, data.len()),
                None => return, // the file itself is too short: `whole` said so
            }
        }
        other => other,
    };
    assert_eq!(from_head, whole);
}

fn check_header(header: &FileHeader, len: usize) {
    assert!(header.data_start <= len);
    if header.format == Format::Npy {
        assert_eq!(header.arrays.len(), 1);
    }
    let mut used = Vec::new();
    for array in &header.arrays {
        assert!(array.offset >= header.data_start && array.offset + array.nbytes <= len);
        if let Some(descr) = array.descr {
            let layout = array.layout().expect("a described array has a layout");
            assert_eq!(layout.descr(), descr);
            assert_eq!(layout.nbytes(), array.nbytes);
            layout.unaligned().check(len).expect("inside the file");
            assert_eq!(layout.check(len).is_ok(), array.is_aligned());
            if array.nbytes > 0 {
                let span = layout.byte_span().expect("in range");
                assert_eq!(
                    span,
                    array.offset as isize..(array.offset + array.nbytes) as isize
                );
            }
        }
        if array.nbytes > 0 {
            used.push(array.offset..array.offset + array.nbytes);
        }
    }
    used.sort_by_key(|r| r.start);
    assert!(used.windows(2).all(|w| w[0].end <= w[1].start), "{used:?}");
}
