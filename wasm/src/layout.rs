//! `Layout`: where the elements of a view lie, without memory, by the
//! core's checked arithmetic.
#![forbid(unsafe_code)]

use bytelens_core::{Error, Layout};
use js_sys::JsString;
use wasm_bindgen::prelude::*;

use crate::BindingError;
use crate::convert::{
    ViewOptions, arg, axis, axis_from_end, dtype_arg, integer, integers, numbers, object, optional,
    shape, whole,
};
use crate::types::{LayoutSpec, Numbers};

/// Where the elements of a view lie, without memory: the core's checked
/// arithmetic (numpy's slicing, indexing, `view(dtype)`, `.T`, `reshape`,
/// `broadcast_to`). `options()` gives what `Buffer.read`/`write` take.
#[wasm_bindgen(js_name = Layout)]
pub struct JsLayout {
    inner: Layout,
}

impl JsLayout {
    /// The core's layout it holds.
    pub(crate) fn layout(&self) -> &Layout {
        &self.inner
    }
}

fn wrap(layout: Result<Layout, Error>) -> Result<JsLayout, BindingError> {
    Ok(JsLayout { inner: layout? })
}

#[wasm_bindgen(js_class = Layout)]
impl JsLayout {
    /// A layout of `dtype` with `options.shape` (required: there is no
    /// buffer to take a length from), strides (default C order) and offset
    /// (default 0), by the same rule as `Buffer.read`.
    #[wasm_bindgen(constructor)]
    pub fn new(dtype: &JsString, options: LayoutSpec) -> Result<JsLayout, BindingError> {
        let descr = dtype_arg(dtype)?;
        let options = ViewOptions::read(&options.into())?;
        wrap(options.args(descr).resolve(None))
    }

    /// The numpy type string, e.g. `"<i4"`.
    #[wasm_bindgen(getter)]
    pub fn dtype(&self) -> String {
        self.inner.descr().to_string()
    }

    #[wasm_bindgen(getter)]
    pub fn shape(&self) -> Numbers {
        numbers(self.inner.shape().iter().map(|&n| n as f64)).unchecked_into()
    }

    /// Strides in bytes.
    #[wasm_bindgen(getter)]
    pub fn strides(&self) -> Numbers {
        numbers(self.inner.strides().iter().map(|&n| n as f64)).unchecked_into()
    }

    /// Byte offset of element [0, ..., 0].
    #[wasm_bindgen(getter)]
    pub fn offset(&self) -> f64 {
        self.inner.offset() as f64
    }

    #[wasm_bindgen(getter)]
    pub fn readonly(&self) -> bool {
        self.inner.is_read_only()
    }

    /// What `Buffer.read`, `write` and `offsets` take: `{ offset, shape, strides, readonly, unaligned }`.
    pub fn options(&self) -> Result<LayoutSpec, BindingError> {
        let unaligned = !self.inner.requires_alignment() && self.inner.size() > 0;
        let options = object(&[
            ("offset", self.offset().into()),
            ("shape", self.shape().into()),
            ("strides", self.strides().into()),
            ("readonly", self.readonly().into()),
            ("unaligned", unaligned.into()),
        ])?;
        Ok(options.unchecked_into())
    }

    /// Throws unless the layout fits a buffer of `nbytes` bytes.
    pub fn check(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] nbytes: &JsValue,
    ) -> Result<(), BindingError> {
        let nbytes = arg(nbytes, "nbytes", whole)?;
        Ok(self.inner.check(nbytes)?)
    }

    /// `a[..., start:stop:step, ...]` on `axis` (Python's rules; omitted = undefined).
    pub fn slice(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] axis: &JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "number")] start: &JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "number")] stop: &JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "number")] step: &JsValue,
    ) -> Result<JsLayout, BindingError> {
        let axis = self::axis(axis, self.inner.ndim())?;
        let (start, stop) = (optional(start, "start")?, optional(stop, "stop")?);
        let step = optional(step, "step")?.unwrap_or(1);
        wrap(self.inner.slice(axis, start, stop, step))
    }

    /// `a[..., i, ...]` on `axis`, which disappears; negative `i` counts from the end.
    pub fn index(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] axis: &JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] i: &JsValue,
    ) -> Result<JsLayout, BindingError> {
        let axis = self::axis(axis, self.inner.ndim())?;
        wrap(self.inner.index(axis, arg(i, "index", integer)?))
    }

    /// numpy's `a.view(dtype)`.
    pub fn reinterpret(&self, dtype: &JsString) -> Result<JsLayout, BindingError> {
        let descr = dtype_arg(dtype)?;
        wrap(
            self.inner
                .reinterpret(descr.dtype)
                .map(|l| l.with_byte_order(descr.order)),
        )
    }

    /// `a.T`.
    pub fn transpose(&self) -> JsLayout {
        JsLayout {
            inner: self.inner.transpose(),
        }
    }

    /// `a.transpose(axes)`; negative axes count from the end.
    pub fn permute(&self, axes: Numbers) -> Result<JsLayout, BindingError> {
        let ndim = self.inner.ndim();
        let axes: Vec<usize> = integers(&axes, "axes")?
            .into_iter()
            .map(|axis| axis_from_end(axis, ndim))
            .collect();
        wrap(self.inner.permute(&axes))
    }

    /// `a.reshape(shape)` without a copy; throws where numpy would copy.
    pub fn reshape(&self, shape: Numbers) -> Result<JsLayout, BindingError> {
        wrap(self.inner.reshape(&self::shape(&shape, "shape")?))
    }

    /// `np.broadcast_to(a, shape)`: read-only, stride 0 on new axes.
    #[wasm_bindgen(js_name = broadcastTo)]
    pub fn broadcast_to(&self, shape: Numbers) -> Result<JsLayout, BindingError> {
        wrap(self.inner.broadcast_to(&self::shape(&shape, "shape")?))
    }
}
