//! `Plan`: named arrays in one buffer, the core's [`OwnedPlan`], checked and
//! placed once when made.
#![forbid(unsafe_code)]

use bytelens_core::{Descr, FieldSpec, MAX_FIELDS, OwnedPlan};
use js_sys::{Array, JsString, Reflect};
use wasm_bindgen::prelude::*;

use crate::BindingError;
use crate::convert::{arg, dtype_arg, numbers, object, shape, whole};
use crate::types::{FieldSpecs, PlanFields, Ranges};

/// Named arrays in one buffer, laid out like C structs and unions, and the
/// WGSL that declares them. Immutable: `struct` and `union` return new plans.
#[wasm_bindgen]
#[derive(Clone)]
pub struct Plan {
    inner: OwnedPlan,
}

/// A string argument, or a `TypeError` naming `what`.
fn string(value: &JsString, what: &'static str) -> Result<String, BindingError> {
    value
        .as_string()
        .ok_or_else(|| BindingError::wrong_type(what, "a string", value))
}

/// One field of a fields object, a dtype, `[dtype, shape]` or
/// `[dtype, shape, offset]`: its descr, shape and explicit offset.
#[inline(never)] // for `struct` and `union` both: the .wasm has a budget
fn field_spec(field: &JsValue) -> Result<(Descr, Vec<usize>, Option<usize>), BindingError> {
    let (dtype, shape, offset) = if Array::is_array(field) {
        // At most three items: a fourth is refused, not ignored as if it
        // meant nothing. Of a longer array only its length is read, and the
        // few items the message shows.
        if field.unchecked_ref::<Array>().length() > 3 {
            return Err(BindingError::wrong_type(
                "a field",
                "a dtype, [dtype, shape] or [dtype, shape, offset]",
                field,
            ));
        }
        let shape = match Reflect::get_u32(field, 1)? {
            value if value.is_undefined() => Vec::new(),
            value => self::shape(&value, "shape")?,
        };
        let offset = match Reflect::get_u32(field, 2)? {
            value if value.is_undefined() => None,
            value => Some(arg(&value, "offset", whole)?),
        };
        (Reflect::get_u32(field, 0)?, shape, offset)
    } else {
        (field.clone(), Vec::new(), None)
    };
    Ok((dtype_arg(dtype.unchecked_ref())?, shape, offset))
}

impl Plan {
    fn extended(&self, fields: FieldSpecs, new_alternative: bool) -> Result<Plan, BindingError> {
        let fields: JsValue = fields.into();
        if !fields.is_object() || Array::is_array(&fields) {
            return Err(BindingError::wrong_type(
                "fields",
                "an object such as { name: [dtype, shape] }",
                &fields,
            ));
        }
        let mut specs = Vec::new();
        // A fresh array of the engine's: no getters to run.
        let keys = Reflect::own_keys(fields.unchecked_ref())?;
        for key in keys.iter() {
            let Some(name) = key.as_string() else {
                continue; // symbols name no field
            };
            if specs.len() > MAX_FIELDS {
                break; // already more than a plan holds, which the core refuses
            }
            let field = Reflect::get(&fields, &key)?;
            match field_spec(&field) {
                Ok((descr, shape, offset)) => specs.push(FieldSpec {
                    name,
                    descr,
                    shape,
                    offset,
                }),
                Err(error) => {
                    let error = Box::new(error);
                    return Err(BindingError::InField { name, error });
                }
            }
        }
        Ok(Plan {
            inner: self.inner.extended(specs, new_alternative)?,
        })
    }
}

#[wasm_bindgen]
impl Plan {
    /// An empty plan; `name` names its WGSL structs (default "Plan").
    #[wasm_bindgen(constructor)]
    pub fn new(name: Option<JsString>) -> Result<Plan, BindingError> {
        let name = match name {
            Some(name) => string(&name, "a plan's name")?,
            None => "Plan".to_owned(),
        };
        Ok(Plan {
            inner: OwnedPlan::new(&name)?,
        })
    }

    /// The plan its text form describes (what `toText()` writes and a shared
    /// segment's header stores): the name on the first line, then one line
    /// per field, `name dtype length…` (`A <f4 4`), and `union` before each
    /// further alternative.
    #[wasm_bindgen(js_name = fromText)]
    pub fn from_text(text: &JsString) -> Result<Plan, BindingError> {
        Ok(Plan {
            inner: OwnedPlan::from_text(&string(text, "a plan's text")?)?,
        })
    }

    /// The plan's text form, which `Plan.fromText` reads back.
    #[wasm_bindgen(js_name = toText)]
    pub fn to_text(&self) -> String {
        self.inner.to_text()
    }

    /// A new plan with `fields` ({ name: [dtype, shape] or dtype }) appended
    /// to the current alternative, each at the next offset its alignment allows.
    #[wasm_bindgen(js_name = struct)]
    pub fn struct_(&self, fields: FieldSpecs) -> Result<Plan, BindingError> {
        self.extended(fields, false)
    }

    /// A new plan with another alternative over the same bytes, from offset 0.
    pub fn union(&self, fields: FieldSpecs) -> Result<Plan, BindingError> {
        self.extended(fields, true)
    }

    /// Bytes a buffer needs: the largest alternative, rounded up to `align`.
    #[wasm_bindgen(getter)]
    pub fn nbytes(&self) -> usize {
        self.inner.nbytes()
    }

    /// The largest alignment of any field.
    #[wasm_bindgen(getter)]
    pub fn align(&self) -> usize {
        self.inner.align()
    }

    /// How many alternatives (union members) the plan has.
    #[wasm_bindgen(getter)]
    pub fn alternatives(&self) -> usize {
        self.inner.alternatives()
    }

    /// Every field: `{ name, dtype, shape, offset, nbytes, alternative }`.
    pub fn fields(&self) -> Result<PlanFields, BindingError> {
        let out = Array::new();
        for field in self.inner.fields() {
            let field = object(&[
                ("name", field.name.as_str().into()),
                ("dtype", field.descr.to_string().into()),
                (
                    "shape",
                    numbers(field.shape.iter().map(|&n| n as f64)).into(),
                ),
                ("offset", (field.offset as f64).into()),
                ("nbytes", (field.nbytes as f64).into()),
                ("alternative", (field.alternative as f64).into()),
            ])?;
            out.push(&field.into());
        }
        Ok(out.unchecked_into())
    }

    /// Byte ranges `[start, end]` of `alternative` that no field covers.
    pub fn padding(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] alternative: &JsValue,
    ) -> Result<Ranges, BindingError> {
        let alternative = arg(alternative, "alternative", whole)?;
        let ranges = self.inner.padding(alternative)?;
        let out: Array = ranges
            .iter()
            .map(|range| numbers([range.start as f64, range.end as f64]))
            .collect();
        Ok(out.unchecked_into())
    }

    /// WGSL struct declarations, one struct per alternative.
    pub fn wgsl(&self) -> Result<String, BindingError> {
        Ok(self.inner.wgsl()?)
    }
}
