//! One buffer's bytes, with their int8, int16, int32 and float32 readings
//! side by side: what `cargo xtask demo` shows until the web demo lands.

use bytelens::{Buffer, Error, Layout};

fn main() -> Result<(), Error> {
    let mut buf = Buffer::new(16)?;
    buf.view_mut::<i32>()?.set(&[0], 0x11223344)?;
    buf.view_mut::<f32>()?.set(&[1], 1.0)?;
    buf.view_mut::<i16>()?.set(&[4], -2)?;
    buf.view_mut::<u8>()?.set(&[12], 0xff)?;

    let i8s: Vec<i8> = buf.view::<i8>()?.iter().collect();
    let i16s: Vec<i16> = buf.view::<i16>()?.iter().collect();
    let i32s: Vec<i32> = buf.view::<i32>()?.iter().collect();
    let f32s: Vec<f32> = buf.view::<f32>()?.iter().collect();

    let aligned = (buf.as_ptr() as usize).is_multiple_of(buf.align());
    println!(
        "{} bytes, {}-byte aligned: {aligned}. Four values were written; each row is the same 4 bytes read four ways.\n",
        buf.len(),
        buf.align()
    );
    println!(
        "{:<6}  {:<11}  {:<15}  {:<13}  {:<23}  float32",
        "offset", "bytes", "int8", "int16", "int32"
    );
    for (row, chunk) in buf.as_bytes().chunks(4).enumerate() {
        let bytes: Vec<String> = chunk.iter().map(|b| format!("{b:02x}")).collect();
        let int8: Vec<String> = i8s[row * 4..row * 4 + 4]
            .iter()
            .map(i8::to_string)
            .collect();
        let int16: Vec<String> = i16s[row * 2..row * 2 + 2]
            .iter()
            .map(|v| format!("{:#06x}", *v as u16))
            .collect();
        let int32 = format!("{:#010x} ({})", i32s[row] as u32, i32s[row]);
        println!(
            "0x{:04x}  {:<11}  {:<15}  {:<13}  {:<23}  {:?}",
            row * 4,
            bytes.join(" "),
            int8.join(" "),
            int16.join(" "),
            int32,
            f32s[row]
        );
    }
    println!(
        "\nint32[0] = 0x11223344 reads as int16 0x3344 then 0x1122: the low half comes first."
    );

    println!("\nThe same bytes through layouts the core checks:");
    let transposed = Layout::contiguous(bytelens::DType::I16, &[2, 4])?.transpose();
    let walk: Vec<i16> = buf.view_as::<i16>(transposed)?.iter().collect();
    println!("  int16 as a 2x4 matrix, transposed (column by column): {walk:?}");
    let misaligned = Layout::new(bytelens::DType::I32, 2, &[1], &[4])?;
    match buf.view_as::<i32>(misaligned) {
        Ok(_) => println!("  int32 at offset 2: unexpectedly accepted"),
        Err(err) => println!("  int32 at offset 2: {err}"),
    }
    Ok(())
}
