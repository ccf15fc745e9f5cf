//! The one table of error kinds against the errors chapter, and the kinds
//! each layer's errors report.

use bytelens::{Buffer, DType, Error, ErrorKind, Layout, SharedError};

/// The Python package's own exception classes (the rest are built-ins).
const BYTELENS_CLASSES: [&str; 7] = [
    "AlignmentError",
    "BoundsError",
    "LayoutError",
    "CastError",
    "FormatError",
    "RingClosedError",
    "GpuError",
];

/// The guide's line for `kind`: `| "Kind" | Python | JS |`, the package's
/// classes as `bl.Name`.
fn guide_line(kind: ErrorKind) -> String {
    let python = kind.python_class();
    let python = if BYTELENS_CLASSES.contains(&python) {
        format!("bl.{python}")
    } else {
        python.to_owned()
    };
    format!(
        "| `\"{}\"` | `{python}` | `{}` |",
        kind.name(),
        kind.js_class()
    )
}

#[test]
fn the_errors_chapter_lists_every_kind_with_its_classes() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/guide/errors.md");
    let guide = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = guide.lines().collect();
    for &kind in ErrorKind::ALL {
        let line = guide_line(kind);
        assert!(
            lines.contains(&line.as_str()),
            "the guide lacks the line {line}"
        );
    }
    // And no line for a kind the table does not have.
    let listed = lines
        .iter()
        .filter(|l| l.starts_with("| `\"") && l.matches(" | `").count() == 2)
        .count();
    assert_eq!(listed, ErrorKind::ALL.len());
}

#[test]
fn each_layer_reports_its_kind() {
    let buf = Buffer::new(3).unwrap();
    let err = buf.view::<i16>().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ItemsizeMismatch);
    let err = Buffer::with_align(8, 3).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadAlign);
    assert_eq!(
        Error::Alloc {
            nbytes: 1,
            align: 1
        }
        .kind()
        .python_class(),
        "MemoryError"
    );
    let layout = Layout::contiguous(DType::U32, &[1])
        .unwrap()
        .with_offset(2)
        .unwrap();
    assert_eq!(
        Error::from(layout.check(8).unwrap_err()).kind(),
        "Misaligned"
    );

    let missing = SharedError::Missing { name: "w".into() };
    assert_eq!(missing.kind().python_class(), "FileNotFoundError");
    let os = SharedError::Os {
        what: "opening",
        err: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
    };
    assert_eq!(os.kind(), ErrorKind::PermissionDenied);
    assert!(std::error::Error::source(&os).is_some());
    let plan = SharedError::BadPlan(bytelens::LayoutError::EmptyPlan);
    assert_eq!(plan.kind(), ErrorKind::EmptyPlan);
    assert!(std::error::Error::source(&plan).is_some());

    let closed = bytelens::RingError::Closed { name: "r".into() };
    assert_eq!(closed.kind().python_class(), "RingClosedError");
    let ring = bytelens::RingError::Shared(missing);
    assert_eq!(ring.kind(), ErrorKind::NotFound);
    assert!(std::error::Error::source(&ring).is_some());

    let header = bytelens::files::read_header(b"not a file", 10).unwrap_err();
    assert_eq!(header.kind(), ErrorKind::Format);
    let err = bytelens::files::inspect("/no/such/file.npy").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert_eq!(err.python_exception(), "FileNotFoundError");
}

#[cfg(feature = "gpu")]
#[test]
fn the_gpu_s_errors_keep_the_host_s_kinds() {
    use bytelens::gpu::GpuError;
    let alloc = GpuError::Host(Error::Alloc {
        nbytes: 1 << 40,
        align: 64,
    });
    assert_eq!(alloc.kind().python_class(), "MemoryError");
    let header = bytelens::files::read_header(b"", 0).unwrap_err();
    let file = GpuError::from(header);
    assert!(std::error::Error::source(&file).is_some());
    assert_eq!(
        file.to_string(),
        "cannot load the file: the file is empty (0 bytes)"
    );
    assert_eq!(file.kind(), ErrorKind::Format);
    // A dtype no dequantiser writes is the CPU's error on the GPU paths too
    // (issue 50): kind Dequantize, a ValueError, wherever it is made.
    let dequantize = GpuError::Host(Error::Dequantize { detail: "x".into() });
    assert_eq!(dequantize.kind(), ErrorKind::Dequantize);
    assert_eq!(dequantize.kind().python_class(), "ValueError");
}
