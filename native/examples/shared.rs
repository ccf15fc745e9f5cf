//! A Rust process on one side of a shared buffer (Python on the other, in
//! tests/python/test_shared.py):
//!
//! - `shared write NAME`: creates NAME with the plan Work (A: f32[4],
//!   B: i16[3], then D: i32[7] over the same bytes) and writes A and B;
//! - `shared read NAME`: attaches to NAME and prints every field of its
//!   stored plan, one line each: `name value value ...`.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    use bytelens::{DType, Plan, Scalar, SharedBuffer};

    let args: Vec<String> = std::env::args().skip(1).collect();
    let [command, name] = &args[..] else {
        return Err("usage: shared write|read NAME".into());
    };
    match command.as_str() {
        "write" => {
            let mut plan = Plan::named("Work")?;
            plan.field("A", DType::F32, &[4])?
                .field("B", DType::I16, &[3])?;
            plan.union()?.field("D", DType::I32, &[7])?;
            // SAFETY: this example and its Python counterpart never shrink the segment.
            let mut sh = unsafe { SharedBuffer::create(name, plan.nbytes(), Some(&plan)) }?;
            let bytes = sh.as_bytes_mut();
            for (i, v) in [0.5f32, 1.5, 2.5, 3.5].iter().enumerate() {
                bytes[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
            }
            let b = plan.get("B").ok_or("no field B")?.offset();
            for (i, v) in [-1i16, 2, -3].iter().enumerate() {
                bytes[b + i * 2..b + i * 2 + 2].copy_from_slice(&v.to_le_bytes());
            }
            println!("wrote {name}");
        }
        "read" => {
            // SAFETY: as in `write`.
            let sh = unsafe { SharedBuffer::attach(name) }?;
            let spec = sh.plan()?.ok_or("the segment has no plan")?;
            let plan = spec.build()?;
            for field in plan.fields() {
                let layout = field.layout()?;
                let size = field.descr().dtype.size();
                let mut line = field.name().to_owned();
                for offset in layout.offsets(sh.len())? {
                    let value = Scalar::read(field.descr(), &sh.as_bytes()[offset..offset + size])?;
                    line.push_str(&format!(" {value}"));
                }
                println!("{line}");
            }
        }
        other => return Err(format!("unknown command {other:?}").into()),
    }
    Ok(())
}
