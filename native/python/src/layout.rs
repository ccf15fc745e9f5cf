//! `bytelens.Layout` and `bytelens.Plan`: the core's checked layout
//! arithmetic, without memory, for Python.

use pyo3::exceptions::{PyOverflowError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyTuple, PyType};

use super::dtype::to_descr;
use super::error::{PyErrResult, error_of_kind};
use std::ops::Deref;

use bytelens::{ErrorKind, FieldSpec, Layout, MAX_NDIM, OwnedPlan, PlanSpec, ViewArgs};

/// An integer argument of a layout (an offset, stride, length, axis or
/// index). One outside 64 bits is a `LayoutError` (kind `"Overflow"`) that
/// shows the number, where pyo3 would raise a bare `OverflowError`.
#[derive(Clone, Copy)]
pub(crate) struct Int(pub(crate) isize);

impl<'a, 'py> FromPyObject<'a, 'py> for Int {
    type Error = PyErr;

    #[inline]
    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Int> {
        match obj.extract::<isize>() {
            Ok(n) => Ok(Int(n)),
            Err(err) if err.is_instance_of::<PyOverflowError>(obj.py()) => Err(too_large(&obj)),
            Err(err) => Err(err),
        }
    }
}

/// The `LayoutError` for an integer past 64 bits, the number written out
/// (or its size in bits, when it is longer than a line).
fn too_large(obj: &Bound<'_, PyAny>) -> PyErr {
    let bits: u64 = obj
        .call_method0("bit_length")
        .and_then(|b| b.extract())
        .unwrap_or(0);
    let number = match obj.str() {
        Ok(text) if bits <= 128 => text.to_string(),
        _ => format!("an integer of {bits} bits"),
    };
    error_of_kind(
        obj.py(),
        ErrorKind::Overflow,
        format!(
            "{number} is outside the range of a layout's offsets, strides, lengths and \
             axes ({} to {})",
            isize::MIN,
            isize::MAX
        ),
    )
}

/// An axis argument, negative ones counting from the end as in numpy; one out
/// of range on either side is a `LayoutError` (kind `"BadAxis"`) showing the
/// axis as given.
fn axis_arg(py: Python<'_>, axis: isize, ndim: usize) -> PyResult<usize> {
    let resolved = if axis < 0 {
        axis.checked_add_unsigned(ndim)
    } else {
        Some(axis)
    };
    match resolved.and_then(|a| usize::try_from(a).ok()) {
        Some(a) if a < ndim => Ok(a),
        _ => Err(error_of_kind(
            py,
            ErrorKind::BadAxis,
            format!("axis {axis} is out of range for a layout with {ndim} dimensions"),
        )),
    }
}

/// A field's explicit byte offset: not negative.
fn offset_arg(obj: &Bound<'_, PyAny>) -> PyResult<usize> {
    let Int(n) = obj.extract()?;
    usize::try_from(n).map_err(|_| {
        error_of_kind(
            obj.py(),
            ErrorKind::OutOfBounds,
            format!("a field's offset cannot be negative ({n})"),
        )
    })
}

/// numpy's `reshape` shape: at most one length may be -1, meaning "what the
/// size leaves"; the core checks the result.
fn reshape_arg(layout: &Layout, shape: &[isize]) -> PyResult<Vec<usize>> {
    let unknown: Vec<usize> = (0..shape.len()).filter(|&i| shape[i] == -1).collect();
    let known = shape.iter().filter(|&&n| n != -1);
    let mut out = Vec::with_capacity(shape.len());
    for &n in shape {
        let n = if n == -1 { 0 } else { n };
        out.push(
            usize::try_from(n)
                .map_err(|_| PyValueError::new_err(format!("{n} is not a valid length")))?,
        );
    }
    match unknown[..] {
        [] => Ok(out),
        [i] => {
            let product: usize = known.map(|&n| n as usize).product();
            if product == 0 || !layout.size().is_multiple_of(product) {
                return Err(PyValueError::new_err(format!(
                    "cannot reshape {} elements into shape {shape:?}",
                    layout.size()
                )));
            }
            out[i] = layout.size() / product;
            Ok(out)
        }
        _ => Err(PyValueError::new_err("only one length can be -1")),
    }
}
/// A shape or strides argument, read without allocating: an integer or a
/// sequence of at most [`MAX_NDIM`] integers.
pub(crate) struct Dims<T> {
    values: [T; MAX_NDIM],
    len: usize,
}

impl<T> Deref for Dims<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        &self.values[..self.len]
    }
}

/// `view(dtype, offset, shape, strides)`'s arguments resolved by the core's
/// rule (as JS's) for a buffer of `nbytes`, the result handed to `then` in
/// place: moving the 528-byte `Layout` out costs a copy that shows in a
/// ~200 ns `Buffer.view` call. The dimensions are read into locals, not
/// through `Option::map`/`transpose`, which copy the 264-byte `Dims`
/// several times over.
#[inline(always)]
pub(crate) fn resolve_view<R>(
    dtype: &Bound<'_, PyAny>,
    offset: Int,
    shape: Option<&Bound<'_, PyAny>>,
    strides: Option<&Bound<'_, PyAny>>,
    nbytes: usize,
    then: impl FnOnce(&Result<Layout, bytelens::LayoutError>) -> PyResult<R>,
) -> PyResult<R> {
    let descr = to_descr(dtype)?;
    let (shape_dims, strides_dims);
    let mut args = ViewArgs {
        offset: offset.0,
        ..ViewArgs::new(descr)
    };
    if let Some(shape) = shape {
        shape_dims = dims::<usize>(shape)?;
        args.shape = Some(&shape_dims);
    }
    if let Some(strides) = strides {
        strides_dims = dims::<isize>(strides)?;
        args.strides = Some(&strides_dims);
    }
    then(&args.resolve(Some(nbytes)))
}

/// Reads a [`Dims`]; negative values are refused for `usize`.
pub(crate) fn dims<T: TryFrom<isize> + Copy + Default>(
    obj: &Bound<'_, PyAny>,
) -> PyResult<Dims<T>> {
    let mut out = Dims {
        values: [T::default(); MAX_NDIM],
        len: 0,
    };
    let mut push = |item: &Bound<'_, PyAny>| -> PyResult<()> {
        let Int(n) = item.extract()?;
        let value = T::try_from(n)
            .map_err(|_| PyValueError::new_err(format!("{n} is not a valid length here")))?;
        let slot = out
            .values
            .get_mut(out.len)
            .ok_or_else(|| PyValueError::new_err(format!("more than {MAX_NDIM} dimensions")))?;
        *slot = value;
        out.len += 1;
        Ok(())
    };
    if obj.is_instance_of::<PyInt>() {
        push(obj)?;
    } else if let Ok(tuple) = obj.cast::<PyTuple>() {
        for item in tuple.iter() {
            push(&item)?;
        }
    } else if let Ok(items) = obj.try_iter() {
        for item in items {
            push(&item?)?;
        }
    } else {
        // Integers that are not `int`: numpy's np.int64, anything with __index__.
        push(obj)?;
    }
    Ok(out)
}

/// `bytelens.Layout(dtype, shape, strides=None, offset=0)`: where the
/// elements of a view lie, checked by the core; `buf.view(layout)` applies it.
#[pyclass(name = "Layout", module = "bytelens._native", frozen, eq)]
#[derive(PartialEq)]
pub struct PyLayout {
    pub(crate) inner: Layout,
}

impl PyLayout {
    fn wrap(py: Python<'_>, layout: Result<Layout, bytelens::LayoutError>) -> PyResult<PyLayout> {
        Ok(PyLayout {
            inner: layout.py_err(py)?,
        })
    }
}

#[pymethods]
impl PyLayout {
    #[new]
    #[pyo3(
        signature = (dtype, shape, strides = None, offset = Int(0)),
        text_signature = "(dtype, shape, strides=None, offset=0)"
    )]
    fn py_new(
        dtype: &Bound<'_, PyAny>,
        shape: &Bound<'_, PyAny>,
        strides: Option<&Bound<'_, PyAny>>,
        offset: Int,
    ) -> PyResult<PyLayout> {
        let (shape, strides) = (dims::<usize>(shape)?, strides.map(dims).transpose()?);
        let args = ViewArgs {
            offset: offset.0,
            shape: Some(&shape),
            strides: strides.as_deref(),
            ..ViewArgs::new(to_descr(dtype)?)
        };
        // No buffer yet: `buf.view(layout)` checks it against one.
        PyLayout::wrap(dtype.py(), args.resolve(None))
    }

    /// The numpy type string, e.g. `"<i4"`.
    #[getter]
    fn dtype(&self) -> String {
        self.inner.descr().to_string()
    }

    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.shape())
    }

    /// Strides in bytes.
    #[getter]
    fn strides<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.strides())
    }

    /// Byte offset of the first element.
    #[getter]
    fn offset(&self) -> isize {
        self.inner.offset()
    }

    #[getter]
    fn ndim(&self) -> usize {
        self.inner.ndim()
    }

    #[getter]
    fn itemsize(&self) -> usize {
        self.inner.dtype().size()
    }

    /// Number of elements.
    #[getter]
    fn size(&self) -> usize {
        self.inner.size()
    }

    /// Bytes of the elements (`size * itemsize`), as numpy's `nbytes`.
    #[getter]
    fn nbytes(&self) -> usize {
        self.inner.nbytes()
    }

    /// The bytes the layout touches, `(start, end)`, as the core's
    /// `byte_span`: below the offset where a stride is negative, and
    /// `(offset, offset)` when it has no elements.
    #[getter]
    fn byte_span(&self, py: Python<'_>) -> PyResult<(isize, isize)> {
        let span = self.inner.byte_span().py_err(py)?;
        Ok((span.start, span.end))
    }

    #[getter]
    fn readonly(&self) -> bool {
        self.inner.is_read_only()
    }

    #[getter]
    fn c_contiguous(&self) -> bool {
        self.inner.is_c_contiguous()
    }

    #[getter]
    fn f_contiguous(&self) -> bool {
        self.inner.is_f_contiguous()
    }

    /// Raises unless the layout fits a buffer of `nbytes` bytes.
    fn check(&self, py: Python<'_>, nbytes: usize) -> PyResult<()> {
        self.inner.check(nbytes).py_err(py)
    }

    /// `a[..., start:stop:step, ...]` on `axis`.
    #[pyo3(
        signature = (axis, start = None, stop = None, step = Int(1)),
        text_signature = "(self, axis, start=None, stop=None, step=1)"
    )]
    fn slice(
        &self,
        py: Python<'_>,
        axis: Int,
        start: Option<Int>,
        stop: Option<Int>,
        step: Int,
    ) -> PyResult<PyLayout> {
        let axis = axis_arg(py, axis.0, self.inner.ndim())?;
        PyLayout::wrap(
            py,
            self.inner
                .slice(axis, start.map(|i| i.0), stop.map(|i| i.0), step.0),
        )
    }

    /// `a[..., i, ...]` on `axis`, which disappears; negative `i` counts from the end.
    fn index(&self, py: Python<'_>, axis: Int, i: Int) -> PyResult<PyLayout> {
        let axis = axis_arg(py, axis.0, self.inner.ndim())?;
        PyLayout::wrap(py, self.inner.index(axis, i.0))
    }

    /// numpy's `a.view(dtype)`: the same bytes as another dtype.
    fn reinterpret(&self, dtype: &Bound<'_, PyAny>) -> PyResult<PyLayout> {
        let descr = to_descr(dtype)?;
        let layout = self.inner.reinterpret(descr.dtype);
        PyLayout::wrap(dtype.py(), layout.map(|l| l.with_byte_order(descr.order)))
    }

    /// `a.T`.
    fn transpose(&self) -> PyLayout {
        PyLayout {
            inner: self.inner.transpose(),
        }
    }

    /// `a.transpose(axes)`.
    fn permute(&self, py: Python<'_>, axes: Vec<Int>) -> PyResult<PyLayout> {
        let ndim = self.inner.ndim();
        let axes = axes
            .into_iter()
            .map(|a| axis_arg(py, a.0, ndim))
            .collect::<PyResult<Vec<usize>>>()?;
        PyLayout::wrap(py, self.inner.permute(&axes))
    }

    /// `a.reshape(shape)` without a copy; raises where numpy would copy.
    fn reshape(&self, shape: &Bound<'_, PyAny>) -> PyResult<PyLayout> {
        let lengths = reshape_arg(&self.inner, &dims::<isize>(shape)?)?;
        PyLayout::wrap(shape.py(), self.inner.reshape(&lengths))
    }

    /// `np.broadcast_to(a, shape)`: read-only, stride 0 on new axes.
    fn broadcast_to(&self, shape: &Bound<'_, PyAny>) -> PyResult<PyLayout> {
        PyLayout::wrap(shape.py(), self.inner.broadcast_to(&dims(shape)?))
    }

    /// Pickles in band, small: the dtype, shape, strides, offset and flags.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let inner = &slf.get().inner;
        let state = (
            inner.descr().to_string(),
            PyTuple::new(py, inner.shape())?,
            PyTuple::new(py, inner.strides())?,
            inner.offset(),
            inner.is_read_only(),
            !inner.requires_alignment(),
        );
        let rebuild = py.get_type::<PyLayout>().getattr("_from_state")?;
        PyTuple::new(py, [rebuild, state.into_pyobject(py)?.into_any()])
    }

    /// Rebuilds a pickled Layout (see `__reduce__`).
    #[staticmethod]
    fn _from_state(
        descr: &Bound<'_, PyAny>,
        shape: &Bound<'_, PyAny>,
        strides: &Bound<'_, PyAny>,
        offset: Int,
        read_only: bool,
        unaligned: bool,
    ) -> PyResult<PyLayout> {
        let (shape, strides) = (dims::<usize>(shape)?, dims::<isize>(strides)?);
        let args = ViewArgs {
            offset: offset.0,
            shape: Some(&shape),
            strides: Some(&strides),
            read_only,
            unaligned,
            ..ViewArgs::new(to_descr(descr)?)
        };
        PyLayout::wrap(descr.py(), args.resolve(None))
    }

    fn __repr__(&self) -> String {
        format!(
            "Layout({:?}, shape={:?}, strides={:?}, offset={}{})",
            self.dtype(),
            self.inner.shape(),
            self.inner.strides(),
            self.inner.offset(),
            if self.inner.is_read_only() {
                ", readonly"
            } else {
                ""
            }
        )
    }
}

/// `bytelens.Plan(name="Plan")`: named arrays in one buffer, struct fields
/// and union alternatives; immutable (`struct` and `union` return new plans).
#[pyclass(name = "Plan", module = "bytelens._native", frozen)]
pub struct PyPlan {
    pub(crate) plan: OwnedPlan,
}

impl PyPlan {
    /// A plan from `spec`, checked and placed by the core.
    pub(crate) fn from_spec(py: Python<'_>, spec: PlanSpec) -> PyResult<PyPlan> {
        Ok(PyPlan {
            plan: OwnedPlan::from_spec(spec).py_err(py)?,
        })
    }

    /// A new plan with `fields` appended to the last alternative (after
    /// starting a new one when `new_alternative`).
    fn extended(
        &self,
        py: Python<'_>,
        fields: Option<&Bound<'_, PyDict>>,
        new_alternative: bool,
    ) -> PyResult<PyPlan> {
        let mut specs = Vec::new();
        for (name, field) in fields.into_iter().flatten() {
            // `dtype`, `(dtype, shape)` or `(dtype, shape, offset)`.
            let (dtype, shape, offset) = match field.cast::<PyTuple>() {
                Ok(parts) if parts.len() == 2 || parts.len() == 3 => (
                    parts.get_item(0)?,
                    dims::<usize>(&parts.get_item(1)?)?.to_vec(),
                    match parts.len() {
                        3 => Some(offset_arg(&parts.get_item(2)?)?),
                        _ => None,
                    },
                ),
                // Not read as a dtype (no dtype is a tuple), which would only
                // say "unknown dtype", nor cut short, as if the rest meant nothing.
                Ok(parts) => {
                    let name: String = name.extract()?;
                    let items = parts.len();
                    return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                        "field {}: a field is dtype, (dtype, shape) or (dtype, shape, offset), \
                         not a tuple of {items} item{}",
                        super::error::excerpt(&name),
                        if items == 1 { "" } else { "s" }
                    )));
                }
                Err(_) => (field, Vec::new(), None),
            };
            specs.push(FieldSpec {
                name: name.extract()?,
                descr: to_descr(&dtype)?,
                shape,
                offset,
            });
        }
        Ok(PyPlan {
            plan: self.plan.extended(specs, new_alternative).py_err(py)?,
        })
    }
}

#[pymethods]
impl PyPlan {
    #[new]
    #[pyo3(signature = (name = "Plan"))]
    fn py_new(py: Python<'_>, name: &str) -> PyResult<PyPlan> {
        PyPlan::from_spec(py, PlanSpec::new(name))
    }

    /// Appends fields, `name=(dtype, shape)` or `name=dtype`, to the current
    /// alternative, each at the next offset its alignment allows, or
    /// `name=(dtype, shape, offset)` at that byte offset (aligned, and
    /// clear of the alternative's other fields).
    #[pyo3(signature = (**fields))]
    fn r#struct(&self, py: Python<'_>, fields: Option<&Bound<'_, PyDict>>) -> PyResult<PyPlan> {
        self.extended(py, fields, false)
    }

    /// Starts another alternative over the same bytes (from offset 0) with `fields`.
    #[pyo3(signature = (**fields))]
    fn union(&self, py: Python<'_>, fields: Option<&Bound<'_, PyDict>>) -> PyResult<PyPlan> {
        self.extended(py, fields, true)
    }

    #[getter]
    fn name(&self) -> &str {
        self.plan.name()
    }

    /// Bytes a buffer needs: the largest alternative, rounded up to `align`.
    #[getter]
    fn nbytes(&self) -> usize {
        self.plan.nbytes()
    }

    /// The largest alignment of any field.
    #[getter]
    fn align(&self) -> usize {
        self.plan.align()
    }

    /// Number of alternatives.
    #[getter]
    fn alternatives(&self) -> usize {
        self.plan.alternatives()
    }

    /// `{name: byte offset}`.
    #[getter]
    fn offsets<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        for field in self.plan.fields() {
            out.set_item(&field.name, field.offset)?;
        }
        Ok(out)
    }

    /// `[(name, dtype, shape, offset, alternative), ...]`, shape a tuple.
    #[getter]
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyTuple>>> {
        self.plan
            .fields()
            .iter()
            .map(|f| {
                let shape = PyTuple::new(py, &f.shape)?;
                (&f.name, f.descr.to_string(), shape, f.offset, f.alternative).into_pyobject(py)
            })
            .collect()
    }

    /// Byte ranges `(start, stop)` of `alternative` that no field covers.
    #[pyo3(signature = (alternative = 0))]
    fn padding(&self, py: Python<'_>, alternative: usize) -> PyResult<Vec<(usize, usize)>> {
        let padding = self.plan.padding(alternative).py_err(py)?;
        Ok(padding.iter().map(|r| (r.start, r.end)).collect())
    }

    /// The plan as text: its name, then a line per field (`name dtype
    /// length...`) and `union` between alternatives; `Plan.from_text` reads it.
    fn to_text(&self) -> String {
        self.plan.to_text()
    }

    /// The plan `to_text` wrote (blank lines and runs of spaces allowed).
    #[classmethod]
    fn from_text(_cls: &Bound<'_, PyType>, py: Python<'_>, text: &str) -> PyResult<PyPlan> {
        PyPlan::from_spec(py, PlanSpec::from_text(text).py_err(py)?)
    }

    /// Pickles in band as its text.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let rebuild = py.get_type::<PyPlan>().getattr("from_text")?;
        let args = (slf.get().plan.to_text(),).into_pyobject(py)?;
        PyTuple::new(py, [rebuild, args.into_any()])
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyPlan>()
            .is_ok_and(|other| other.get().plan == self.plan)
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.plan.to_text().hash(&mut hasher);
        hasher.finish()
    }

    /// WGSL struct declarations for the plan, one struct per alternative.
    fn wgsl(&self, py: Python<'_>) -> PyResult<String> {
        self.plan.wgsl().py_err(py)
    }

    fn __repr__(&self) -> String {
        let fields: Vec<String> = self
            .plan
            .fields()
            .iter()
            .map(|f| {
                format!(
                    "{}: {}{:?} @{} (alternative {})",
                    f.name, f.descr, f.shape, f.offset, f.alternative
                )
            })
            .collect();
        format!("Plan({:?}, [{}])", self.plan.name(), fields.join(", "))
    }
}
