//! `bl.save` (`save_arrays`): its arguments checked as the package always
//! checked them, laid out by `bytelens::files::plan_save` and written by
//! the Rust file layer's one writer (`bytelens::files::write_atomically`),
//! the GIL released; and `save_file`, `bytelens::files::save` itself, which
//! the package's tests hold to the same bytes.

use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyMapping, PyString};

use super::dtype::to_descr;
use super::error::{PyErrResult, quote};
use super::quantized::PyQuantized;
use super::source::Source;
use bytelens::{QuoteStyle, Quoted};

/// `bytelens::files::save(path, arrays, metadata, align)` itself: each
/// `(name, array)` read where it is (any array numpy reads, in any layout),
/// the metadata's `(key, value)` strings in order. The format is the
/// path's extension, as for `bl.save`. A test writes the same arrays with
/// `bl.save` and compares the bytes.
#[pyfunction]
#[pyo3(signature = (path, arrays, metadata = Vec::new(), align = 64))]
pub(crate) fn save_file(
    py: Python<'_>,
    path: std::path::PathBuf,
    arrays: Vec<(String, Bound<'_, PyAny>)>,
    metadata: Vec<(String, String)>,
    align: usize,
) -> PyResult<()> {
    let sources = arrays
        .iter()
        .map(|(name, array)| Ok((name.as_str(), Source::read(array, "save")?)))
        .collect::<PyResult<Vec<_>>>()?;
    let refs = sources
        .iter()
        .map(|(name, source)| {
            let array = bytelens::files::ArrayRef::new(source.bytes(), *source.layout());
            Ok((*name, array.py_err(py)?))
        })
        .collect::<PyResult<Vec<_>>>()?;
    let metadata: Vec<(&str, &str)> = metadata
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    bytelens::files::save(&path, &refs, &metadata, align).py_err(py)
}

/// `bl.save(path, arrays, metadata, align=align)`: its arguments checked,
/// in `bl.save`'s order and words, laid out by
/// `bytelens::files::plan_save`, and written atomically by
/// `bytelens::files::write_atomically` (the GIL released while it
/// writes): the header's bytes, then each array's, the user's array where
/// its bytes are written as they lie (contiguous in the file's order and
/// byte order: no copy), or a new C-ordered one numpy converted (gathered,
/// or swapped to little-endian). A failed write raises what `bl.save`
/// always raised ([`IntoPyErr`] for `bytelens::files::Error`).
///
/// `path` is the path as a str (`os.fsdecode`d); `arrays` what `bl.save`
/// was given: one array-like or a mapping of one for `.npy`, a mapping of
/// names to array-likes for safetensors, each made an array by
/// `numpy.asarray`. A dtype bytelens lacks (datetimes, strings, complex,
/// records, raw bytes), which only numpy can name, is refused here as
/// `bl.save` words it, and so is a `bytelens.Quantized` (neither format
/// has its type, and `numpy.asarray` would dequantise it to float32
/// without a word).
#[pyfunction]
pub(crate) fn save_arrays<'py>(
    py: Python<'py>,
    path: &Bound<'py, PyString>,
    arrays: &Bound<'py, PyAny>,
    metadata: &Bound<'py, PyAny>,
    align: &Bound<'py, PyAny>,
) -> PyResult<()> {
    use bytelens::ByteOrder;
    use bytelens::files::{ArrayRef, SavePart, plan_save};
    let align = save_align(align)?;
    // Only the suffix matters here: a surrogate (a byte os.fsdecode could
    // not decode) is never part of it.
    let suffix = path.to_string_lossy();
    let npy = suffix.ends_with(".npy");
    let asarray = py.import("numpy")?.getattr("asarray")?;
    let mut named: Vec<(String, Bound<'py, PyAny>)> = Vec::new();
    let mut pairs: Vec<(String, String)> = Vec::new();
    if npy {
        if metadata.is_truthy()? {
            let message = path.add(": an .npy file has no metadata; safetensors files do")?;
            return Err(PyValueError::new_err(message.unbind()));
        }
        let values: Vec<Bound<'py, PyAny>> = match arrays.cast::<PyMapping>() {
            Ok(mapping) => mapping.values()?.iter().collect(),
            Err(_) => vec![arrays.clone()],
        };
        if let [value] = values.as_slice() {
            refuse_quantized(path, "array", value)?;
        }
        for value in values {
            named.push(("array".to_owned(), asarray.call1((value,))?));
        }
    } else if suffix.ends_with(".safetensors") {
        let Ok(arrays) = arrays.cast::<PyMapping>() else {
            return Err(PyTypeError::new_err(
                "a safetensors file holds named arrays: pass a dict of name -> array",
            ));
        };
        if !metadata.is_none() && metadata.cast::<PyMapping>().is_err() {
            return Err(PyTypeError::new_err(format!(
                "metadata is a dict of str -> str, not {}",
                type_name(metadata)?
            )));
        }
        for item in arrays.call_method0("items")?.try_iter()? {
            let (name, array): (Bound<'py, PyAny>, Bound<'py, PyAny>) = item?.extract()?;
            let name = save_text(&name, "a tensor name")?;
            let what = format!("tensor {}", Quoted::new(&name, 64, QuoteStyle::PyShortRepr));
            refuse_quantized(path, &what, &array)?;
            named.push((name, asarray.call1((array,))?));
        }
        if metadata.is_truthy()? {
            for item in metadata.call_method0("items")?.try_iter()? {
                let (key, value): (Bound<'py, PyAny>, Bound<'py, PyAny>) = item?.extract()?;
                let key_text = save_text(&key, "a metadata key")?;
                let what = format!(
                    "metadata {}",
                    quote(&key.str()?, 64, QuoteStyle::PyShortRepr)?
                );
                pairs.push((key_text, save_text(&value, &what)?));
            }
        }
    }
    // Raises UnicodeEncodeError for a surrogate, as `bl.save` always has.
    let path = path.to_str()?;
    if !npy && !path.ends_with(".safetensors") {
        // Neither format: the plan's own error, before any array's.
        plan_save(path, &[], &[], align).py_err(py)?;
    }
    let mut sources = Vec::with_capacity(named.len());
    for (name, array) in &named {
        if let Ok(array) = array.cast::<PyUntypedArray>() {
            refuse_foreign(path, npy, name, array, align)?;
        }
        sources.push((name.as_str(), Source::read(array, "save")?));
    }
    let refs = sources
        .iter()
        .map(|(name, source)| {
            Ok((
                *name,
                ArrayRef::new(source.bytes(), *source.layout()).py_err(py)?,
            ))
        })
        .collect::<PyResult<Vec<_>>>()?;
    let metadata: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let plan = plan_save(path, &refs, &metadata, align).py_err(py)?;
    let mut converted = Vec::new();
    for part in &plan.parts {
        if part.as_it_lies(&refs).is_some() {
            continue;
        }
        // Converted by numpy, into C order and the byte order the plan
        // asks for: its byte swap and gather ran 25% and 10% faster than
        // the core's `copy_into` (64 MiB of float32, 2 cores), and bl.save
        // must not get slower. What is converted is the plan's to say.
        let (_, array) = &named[part.array()];
        let mut dtype = array.getattr("dtype")?;
        if let SavePart::Converted(_, to) = part {
            if to.order == ByteOrder::Little {
                dtype = dtype.call_method1("newbyteorder", ("<",))?;
            }
        }
        let kwargs = PyDict::new(py);
        kwargs.set_item("dtype", dtype)?;
        kwargs.set_item("order", "C")?;
        converted.push(Source::read(
            &asarray.call((array,), Some(&kwargs))?,
            "save",
        )?);
    }
    // Each converted array is C-contiguous: its span is its bytes.
    let mut converted = converted.iter();
    let mut bytes: Vec<&[u8]> = vec![&plan.head];
    for part in &plan.parts {
        bytes.push(match part.as_it_lies(&refs) {
            Some(lying) => lying,
            None => converted.next().map_or(&[][..], Source::bytes),
        });
    }
    let target = std::path::Path::new(path);
    py.detach(|| bytelens::files::write_atomically(target, &bytes))
        .py_err(py)
}

/// `bl.save`'s `align`: an int (not a bool), a power of two from 1 to
/// [`MAX_ALIGN`](bytelens::files::MAX_ALIGN) (the core checks it against
/// the widest itemsize).
fn save_align(align: &Bound<'_, PyAny>) -> PyResult<usize> {
    use bytelens::files::MAX_ALIGN;
    if align.is_instance_of::<PyBool>() || !align.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!(
            "align is an int, a power of two up to {MAX_ALIGN}, not {}",
            type_name(align)?
        )));
    }
    match align.extract::<usize>() {
        Ok(n) if n <= MAX_ALIGN && n.is_power_of_two() => Ok(n),
        _ => Err(PyValueError::new_err(format!(
            "align={}: a power of two from the widest dtype's itemsize up to {MAX_ALIGN}",
            align.str()?
        ))),
    }
}

/// `text` (a tensor name, a metadata key or value: `what`) as a `String`:
/// a `TypeError` for anything but a `str` (nothing is converted, so `1`
/// and `"1"` cannot both become `"1"`), a `ValueError` for a `str` that
/// UTF-8 cannot encode (a lone surrogate), with Python's own reason.
fn save_text(text: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    let Ok(string) = text.cast::<PyString>() else {
        return Err(PyTypeError::new_err(format!(
            "{what} must be a str, not {} ({})",
            type_name(text)?,
            quote(&text.repr()?, 64, QuoteStyle::PyShort)?
        )));
    };
    match string.to_str() {
        Ok(utf8) => Ok(utf8.to_owned()),
        Err(err) => {
            let err = err.value(text.py());
            Err(PyValueError::new_err(format!(
                "{what} {} is not valid Unicode ({} at index {}), so it cannot be written as UTF-8",
                quote(string, 64, QuoteStyle::PyShortRepr)?,
                err.getattr("reason")?,
                err.getattr("start")?
            )))
        }
    }
}

/// The `TypeError` `bl.save` raises for a `bytelens.Quantized` (a GGUF
/// tensor's blocks), `what` naming where it was given; nothing otherwise.
fn refuse_quantized(
    path: &Bound<'_, PyString>,
    what: &str,
    array: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let Ok(quantized) = array.cast::<PyQuantized>() else {
        return Ok(());
    };
    let message = path.add(format!(
        ": {what} is a quantised {} tensor of shape {}, which neither .npy nor safetensors can \
         hold: pass its values, q.dequantize(dtype) (float32, float16 or bfloat16), or load the \
         file with dequantize=\"float32\"",
        quantized.getattr("qtype")?,
        quantized.getattr("shape")?
    ))?;
    Err(PyTypeError::new_err(message.unbind()))
}

/// `type(value).__name__`.
fn type_name(value: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(value.get_type().getattr("__name__")?.str()?.to_string())
}

/// The error `bl.save` raises for an array whose numpy dtype bytelens
/// has no dtype for (nothing for one it has, except one that an `.npy`
/// header cannot name, said with numpy's type string for it).
fn refuse_foreign(
    path: &str,
    npy: bool,
    name: &str,
    array: &Bound<'_, PyUntypedArray>,
    align: usize,
) -> PyResult<()> {
    let dtype = array.dtype();
    let shown = dtype.str()?;
    let type_string = dtype.getattr("str")?.repr()?;
    if let Ok(descr) = to_descr(dtype.as_any()) {
        let info = descr.dtype.info();
        if npy && !info.npy {
            // np.save writes ml_dtypes' types as raw bytes ('<V1', '<V2'),
            // which every loader reads back as bytes.
            return Err(PyTypeError::new_err(format!(
                "{path}: an .npy header cannot name {} (np.save writes it as raw bytes {type_string}, \
                 and loaders read bytes back): save it to a .safetensors file, as {}",
                descr.dtype.name(),
                info.safetensors
            )));
        }
        return Ok(());
    }
    if !npy {
        return Err(PyTypeError::new_err(format!(
            "safetensors has no dtype for {shown} (tensor {}) that bytelens has: bl.save writes the \
             dtypes bytelens views, each under its safetensors code",
            bytelens::files::quoted64(name)
        )));
    }
    if dtype.has_object() || dtype.has_fields() {
        return Err(PyTypeError::new_err(format!(
            "save writes arrays of numbers, not {shown}"
        )));
    }
    if dtype.kind() == b'V' {
        return Err(PyTypeError::new_err(format!(
            "save writes arrays of numbers, not raw bytes ({shown})"
        )));
    }
    let itemsize = dtype.itemsize();
    if align < itemsize {
        return Err(PyValueError::new_err(format!(
            "align={align} is below the itemsize of {shown} ({itemsize} bytes): it could not keep it aligned"
        )));
    }
    Err(PyTypeError::new_err(format!(
        "{path}: bl.load could not map an .npy of dtype {shown} ({type_string}): bytelens has no such \
         dtype, and bl.save writes only what bl.load maps (np.save writes it)"
    )))
}
