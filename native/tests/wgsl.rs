//! Every WGSL module a plan generates is read and validated by naga (the
//! shader translator wgpu itself uses), and naga's own layout of each struct
//! must put every member at the offset the plan gave its field: the bytes
//! the host writes are the bytes the shader reads.

use bytelens::{DType, LayoutError, OwnedPlan, PlanSpec};
use naga::valid::{Capabilities, ValidationFlags, Validator};

/// Parses and validates `source` with naga, each struct also declared as a
/// storage buffer so that naga checks it is host-shareable, and returns the
/// module with its structs by name.
fn validated(source: &str, structs: &[String]) -> naga::Module {
    let mut shader = source.to_owned();
    for (binding, name) in structs.iter().enumerate() {
        shader.push_str(&format!(
            "@group(0) @binding({binding}) var<storage, read_write> b{binding}: {name};\n"
        ));
    }
    let module = naga::front::wgsl::parse_str(&shader).unwrap_or_else(|err| {
        panic!(
            "naga cannot read\n{shader}\n{}",
            err.emit_to_string(&shader)
        )
    });
    Validator::new(ValidationFlags::all(), Capabilities::all())
        .validate(&module)
        .unwrap_or_else(|err| panic!("naga refuses\n{shader}\n{}", err.emit_to_string(&shader)));
    module
}

/// The members (name, offset) of the struct called `name` in `module`.
fn members(module: &naga::Module, name: &str) -> Vec<(String, u32)> {
    let (_, ty) = module
        .types
        .iter()
        .find(|(_, ty)| ty.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no struct {name}"));
    let naga::TypeInner::Struct { members, .. } = &ty.inner else {
        panic!("{name} is not a struct");
    };
    members
        .iter()
        .map(|m| (m.name.clone().unwrap_or_default(), m.offset))
        .collect()
}

/// Checks `plan`'s WGSL against naga: it reads, validates, and lays each
/// field where the plan did.
fn check_against_naga(plan: &OwnedPlan) {
    let source = plan.wgsl().expect("a plan WGSL can share");
    let structs: Vec<String> = if plan.alternatives() == 1 {
        vec![plan.name().to_owned()]
    } else {
        (0..plan.alternatives())
            .map(|a| format!("{}{a}", plan.name()))
            .collect()
    };
    let module = validated(&source, &structs);
    for (alternative, name) in structs.iter().enumerate() {
        let expected: Vec<(String, u32)> = plan
            .fields()
            .iter()
            .filter(|f| f.alternative == alternative)
            .map(|f| (f.name.clone(), f.offset as u32))
            .collect();
        assert_eq!(members(&module, name), expected, "{source}");
    }
}

/// A plan named `name` whose `alternatives` each hold `fields` (lines of
/// plan text), their names suffixed with the alternative's number.
fn plan(name: &str, alternatives: usize, fields: &str) -> Result<OwnedPlan, LayoutError> {
    let mut text = name.to_owned();
    for a in 0..alternatives {
        if a > 0 {
            text.push_str("\nunion");
        }
        for line in fields.lines() {
            let (field, rest) = line.split_once(' ').unwrap();
            text.push_str(&format!("\n{field}{a} {rest}"));
        }
    }
    OwnedPlan::from_spec(PlanSpec::from_text(&text)?)
}

#[test]
fn generated_struct_names_are_usable_or_refused() {
    // Names that are fine alone but may become reserved with a number appended.
    let names = [
        "f3", "i3", "u3", "f1", "vec", "mat2x", "mat4x", "Work", "Frame", "array", "atomic", "x",
        "ptr", "Self", "u", "i", "f", "mat3", "vec3", "texture_", "sampler", "vec2f", "mat2x2f",
    ];
    let mut refused = Vec::new();
    for name in names {
        for alternatives in [1, 2, 3, 5, 7, 13] {
            let Ok(plan) = plan(name, alternatives, "a <f4 2\nb <f2 3\nc <u4") else {
                continue; // a name a plan cannot take at all (`array`, `ptr`, ...)
            };
            match plan.wgsl() {
                Ok(_) => check_against_naga(&plan),
                Err(err) => {
                    assert!(
                        matches!(err, LayoutError::WgslStructName { .. }),
                        "{name}: {err}"
                    );
                    assert_eq!(err.kind(), "BadName");
                    refused.push(format!("{name}/{alternatives}"));
                }
            }
        }
    }
    // The examples: f3, i3 and u3 with three alternatives make
    // f32, i32 and u32; f1 with seven makes f16.
    for expected in ["f3/3", "i3/3", "u3/3", "f1/7", "mat2x/3", "vec/3"] {
        assert!(
            refused.contains(&expected.to_owned()),
            "{expected} not refused: {refused:?}"
        );
    }
}

#[test]
fn the_refusal_names_the_struct() {
    let err = plan("f3", 3, "x <f4").unwrap().wgsl().unwrap_err();
    assert_eq!(
        err.to_string(),
        "alternative 2's WGSL struct would be called \"f32\", which WGSL reserves; give the \
         plan a name that stays usable with a number appended"
    );
}

/// A small deterministic generator (xorshift), so the plans are the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// The text of a random plan `name` of WGSL-shareable fields: up to 6 per
/// alternative, up to 3 dimensions each, and with `gaps`, now and then a
/// field placed explicitly a few elements after where it would go.
fn random_plan(rng: &mut Rng, name: &str, gaps: bool) -> String {
    let dtypes = [DType::F32, DType::I32, DType::U32, DType::F16];
    let mut text = name.to_owned();
    for a in 0..1 + rng.next(3) {
        if a > 0 {
            text.push_str("\nunion");
        }
        let mut end: usize = 0;
        for f in 0..1 + rng.next(6) {
            let dtype = dtypes[rng.next(4) as usize];
            let shape: Vec<usize> = (0..rng.next(4)).map(|_| 1 + rng.next(5) as usize).collect();
            text.push_str(&format!("\nm{a}_{f} {}", dtype.name()));
            for n in &shape {
                text.push_str(&format!(" {n}"));
            }
            let mut offset = end.next_multiple_of(dtype.align());
            if gaps && f > 0 && rng.next(2) == 0 {
                offset += dtype.size() * rng.next(9) as usize;
                text.push_str(&format!(" @{offset}"));
            }
            end = offset + shape.iter().product::<usize>() * dtype.size();
        }
    }
    text
}

#[test]
fn random_plans_lay_out_as_naga_does() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for case in 0..300 {
        let text = random_plan(&mut rng, &format!("P{case}"), false);
        let plan = OwnedPlan::from_spec(PlanSpec::from_text(&text).unwrap()).unwrap();
        check_against_naga(&plan);
    }
}

#[test]
fn explicit_offsets_lay_out_as_naga_does() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut sized = 0;
    for case in 0..300 {
        let text = random_plan(&mut rng, &format!("G{case}"), true);
        let plan = OwnedPlan::from_spec(PlanSpec::from_text(&text).unwrap()).unwrap();
        check_against_naga(&plan);
        sized += usize::from(plan.wgsl().unwrap().contains("@size("));
    }
    assert!(
        sized > 100,
        "only {sized} plans had a gap WGSL gives as @size"
    );
}
