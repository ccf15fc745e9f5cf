//! GPU upload throughput against memcpy and `queue.write_buffer`, measured
//! in one run: `cargo xtask bench gpu` (or `cargo bench -p bytelens
//! --features gpu --bench gpu`).
//!
//! Every row moves the same bytes (256 MiB by default; `BYTELENS_BENCH_MIB`
//! changes it) and is timed as the median of several repetitions after a
//! warm-up; the GPU rows wait for the queue to finish. It prints a table
//! with ratios and writes `gpu.csv` and `gpu.svg` into `BYTELENS_BENCH_DIR`
//! (default `target/bench`).

mod common;

use std::fmt::Write as _;
use std::time::Duration;

use bytelens::gpu::{GpuBuffer, GpuContext, GpuOptions, wgpu};
use bytelens::{Buffer, ByteOrder, DType, Descr, Layout, gather_into};
use common::median;

struct Row {
    name: &'static str,
    what: &'static str,
    median: Duration,
}

fn wait(gpu: &GpuContext) {
    gpu.device()
        .poll(wgpu::PollType::wait_indefinitely())
        .expect("the device answers");
}

fn main() {
    let mib: usize = std::env::var("BYTELENS_BENCH_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let reps: usize = std::env::var("BYTELENS_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7);
    // The workspace's target/bench, whatever directory cargo runs this in.
    let out_dir = std::env::var("BYTELENS_BENCH_DIR")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../target/bench").into());
    let nbytes = mib << 20;
    let gpu = match GpuContext::new() {
        Ok(gpu) => gpu,
        Err(err) => {
            eprintln!("no GPU adapter: {err}");
            std::process::exit(1);
        }
    };
    let info = gpu.info();
    println!(
        "adapter: {} ({:?}, driver {} {}), {} MiB, median of {reps}, uploads {}",
        info.name,
        info.backend,
        info.driver,
        info.driver_info,
        mib,
        if gpu.uploads_directly() {
            "written in place (unified memory)"
        } else {
            "staged"
        }
    );
    // The same uploads through staging buffers, where the default context
    // writes in place (on a discrete GPU both rows measure staging).
    let staged = GpuContext::with_options(GpuOptions {
        direct_upload: false,
        ..GpuOptions::default()
    })
    .expect("a staged context on the same adapter");

    // The source: float32 values in a 64-byte aligned buffer, seen as a
    // square-ish matrix (rows × cols) for the transposed upload.
    let mut src = Buffer::new(nbytes).expect("host memory");
    for (i, chunk) in src.as_bytes_mut().chunks_exact_mut(4).enumerate() {
        chunk.copy_from_slice(&(i as f32).to_le_bytes());
    }
    let n = nbytes / 4;
    let cols = 1usize << n.trailing_zeros().div_ceil(2);
    let rows = n / cols;
    let flat = Layout::contiguous(DType::F32, &[n]).unwrap();
    let transposed = Layout::contiguous(DType::F32, &[rows, cols])
        .unwrap()
        .transpose();
    let mut host = vec![0u8; nbytes];
    let mut dst: GpuBuffer = gpu
        .upload((src.as_bytes(), &flat))
        .buffer()
        .expect("upload");
    let mut staged_dst: GpuBuffer = staged
        .upload((src.as_bytes(), &flat))
        .buffer()
        .expect("upload");
    let raw = gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("write_buffer target"),
        size: nbytes as u64,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });

    let mut table = Vec::new();
    table.push(Row {
        name: "memcpy",
        what: "host copy_from_slice into warm memory",
        median: median(reps, || host.copy_from_slice(src.as_bytes())),
    });
    table.push(Row {
        name: "write_buffer",
        what: "queue.write_buffer into an existing buffer",
        median: median(reps, || {
            gpu.queue().write_buffer(&raw, 0, src.as_bytes());
            gpu.queue().submit([]);
            wait(&gpu);
        }),
    });
    table.push(upload_row(
        &gpu,
        reps,
        "write_into",
        "bytelens, contiguous, repeated into one buffer",
        &src,
        &flat,
        &mut dst,
    ));
    table.push(upload_row(
        &staged,
        reps,
        "staged_into",
        "bytelens, contiguous, repeated, through staging buffers",
        &src,
        &flat,
        &mut staged_dst,
    ));
    table.push(Row {
        name: "upload",
        what: "bytelens, contiguous, a new GPU buffer each time",
        median: median(reps, || {
            let fresh = gpu.upload((src.as_bytes(), &flat)).buffer().unwrap();
            wait(&gpu);
            drop(fresh);
        }),
    });
    table.push(upload_row(
        &gpu,
        reps,
        "strided",
        "bytelens, transposed 2-D view gathered into staging",
        &src,
        &transposed,
        &mut dst,
    ));
    table.push(upload_row(
        &staged,
        reps,
        "staged_strided",
        "bytelens, transposed, through staging buffers",
        &src,
        &transposed,
        &mut staged_dst,
    ));
    let reversed = flat.slice(0, None, None, -1).unwrap();
    table.push(upload_row(
        &gpu,
        reps,
        "reversed",
        "bytelens, the 1-D view reversed (negative stride)",
        &src,
        &reversed,
        &mut dst,
    ));
    let other = match ByteOrder::NATIVE {
        ByteOrder::Little => ByteOrder::Big,
        ByteOrder::Big => ByteOrder::Little,
    };
    let big_endian = flat.with_byte_order(other);
    table.push(Row {
        name: "byteswapped",
        what: "bytelens, the other byte order swapped while staging",
        median: median(reps, || {
            gpu.upload((src.as_bytes(), &big_endian))
                .to(Descr::native(DType::F32))
                .write_into(&mut dst)
                .unwrap();
            wait(&gpu);
        }),
    });
    let f64s = flat.reinterpret(DType::F64).unwrap();
    let mut half = gpu
        .upload((src.as_bytes(), &f64s))
        .to(Descr::native(DType::F32))
        .buffer()
        .unwrap();
    table.push(Row {
        name: "f64_to_f32",
        what: "bytelens, float64 converted to float32 while staging (GB/s of float64 read)",
        median: median(reps, || {
            gpu.upload((src.as_bytes(), &f64s))
                .to(Descr::native(DType::F32))
                .write_into(&mut half)
                .unwrap();
            wait(&gpu);
        }),
    });
    table.push(Row {
        name: "transpose_host",
        what: "host only: the transposed view copied into memory (gather_into)",
        median: median(reps, || {
            gather_into(src.as_bytes(), &transposed, &mut host).unwrap()
        }),
    });
    let view = src.view_as::<f32>(transposed).unwrap();
    table.push(Row {
        name: "naive_strided",
        what: "copy to a contiguous Vec, then write_buffer",
        median: median(reps, || {
            let contiguous: Vec<f32> = view.iter().collect();
            gpu.queue()
                .write_buffer(&raw, 0, bytemuck::cast_slice(&contiguous));
            gpu.queue().submit([]);
            wait(&gpu);
        }),
    });
    table.push(Row {
        name: "readback",
        what: "bytelens download_into host memory",
        median: median(reps, || dst.download_into(&mut host).unwrap()),
    });
    // The last upload was the transposed one: check it arrived.
    gpu.upload((src.as_bytes(), &transposed))
        .write_into(&mut dst)
        .unwrap();
    dst.download_into(&mut host).unwrap();
    let first_column: Vec<f32> = host[..16]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(
        first_column,
        [0.0, cols as f32, 2.0 * cols as f32, 3.0 * cols as f32]
    );

    let texture = texture_ratio(&gpu, reps);
    report(&table, nbytes, &out_dir, info, texture);
    dequant_ratios(&gpu, nbytes, reps);
}

/// Quantised blocks dequantised on the GPU by the core's WGSL (blocks
/// already on the GPU, values into a new buffer, waited for) against the
/// CPU's kernel on one thread, `nbytes` of float32 values each. Prints a
/// line per type with the ratio (the goal: at least 20× on a real GPU).
fn dequant_ratios(gpu: &GpuContext, nbytes: usize, reps: usize) {
    use bytelens::files::GgmlType;
    use bytelens::gpu::HostView;
    println!(
        "\nGPU dequantisation (the core's WGSL) against the CPU kernel on one thread, {} MiB of float32 values:",
        nbytes >> 20
    );
    for ggml in [
        GgmlType::Q4_0,
        GgmlType::Q8_0,
        GgmlType::Q4_K,
        GgmlType::Q6_K,
    ] {
        let info = ggml.info();
        let count = nbytes / 4 / info.block as usize;
        // Blocks of a pattern, every float16 field 0.5 (finite).
        let mut blocks: Vec<u8> = (0..count * info.bytes as usize)
            .map(|i| (i * 37 % 251) as u8)
            .collect();
        for block in blocks.chunks_exact_mut(info.bytes as usize) {
            for field in info.fields.iter().filter(|f| f.dtype == DType::F16) {
                let at = usize::from(field.offset);
                block[at..at + 2].copy_from_slice(&0x3800u16.to_le_bytes());
            }
        }
        let layout = Layout::contiguous(DType::U8, &[blocks.len()]).unwrap();
        let values = Layout::contiguous(DType::F32, &[count * info.block as usize]).unwrap();
        let up = gpu
            .upload(HostView::quantized(&blocks, &layout, ggml, &values))
            .buffer()
            .unwrap();
        let on_gpu = median(reps, || {
            drop(gpu.dequantize(&up, DType::F32).unwrap());
            wait(gpu);
        });
        let mut host = vec![0u8; nbytes];
        let on_cpu = median(reps, || {
            bytelens::dequantize_into_threads(
                ggml,
                &blocks,
                &mut host,
                Descr::native(DType::F32),
                1,
            )
            .unwrap()
        });
        println!(
            "  {:<5} GPU {:>7.2} GB/s of values, CPU one thread {:>6.2} GB/s: {:.2}x",
            ggml.name(),
            gbps(nbytes, on_gpu),
            gbps(nbytes, on_cpu),
            on_cpu.as_secs_f64() / on_gpu.as_secs_f64()
        );
    }
}

/// A strided RGB crop of a 4096×4096 uint8 image to an RGBA texture:
/// bytelens' one pass against the usual way (a contiguous copy, a widened
/// RGBA copy, a copy with rows padded to 256 bytes, then `write_texture`),
/// each making a new texture every time. Prints both; returns the ratio.
fn texture_ratio(gpu: &GpuContext, reps: usize) -> f64 {
    let side = 4096;
    let mut image = Buffer::new(side * side * 3).expect("host memory");
    for (i, b) in image.as_bytes_mut().iter_mut().enumerate() {
        *b = (i % 251) as u8;
    }
    let whole = Layout::contiguous(DType::U8, &[side, side, 3]).unwrap();
    let crop = whole
        .slice(0, Some(48), Some(4048), 1)
        .unwrap()
        .slice(1, Some(48), Some(4048), 1)
        .unwrap();
    let (h, w) = (crop.shape()[0], crop.shape()[1]);
    let bytelens = median(reps, || {
        let texture = gpu.upload((image.as_bytes(), &crop)).texture(None).unwrap();
        wait(gpu);
        drop(texture);
    });
    let pitch = (w * 4).div_ceil(256) * 256;
    let usual = median(reps, || {
        let mut contiguous = vec![0u8; h * w * 3];
        gather_into(image.as_bytes(), &crop, &mut contiguous).unwrap();
        let mut rgba = vec![0u8; h * w * 4];
        for (rgb, out) in contiguous.chunks_exact(3).zip(rgba.chunks_exact_mut(4)) {
            out[..3].copy_from_slice(rgb);
            out[3] = 255;
        }
        let mut padded = vec![0u8; h * pitch];
        for (row, out) in rgba.chunks_exact(w * 4).zip(padded.chunks_exact_mut(pitch)) {
            out[..w * 4].copy_from_slice(row);
        }
        let size = wgpu::Extent3d {
            width: w as u32,
            height: h as u32,
            depth_or_array_layers: 1,
        };
        let texture = gpu.device().create_texture(&wgpu::TextureDescriptor {
            label: Some("usual texture"),
            size,
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: wgpu::TextureFormat::Rgba8Unorm,
            usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
            view_formats: &[],
        });
        let layout = wgpu::TexelCopyBufferLayout {
            offset: 0,
            bytes_per_row: Some(pitch as u32),
            rows_per_image: None,
        };
        gpu.queue()
            .write_texture(texture.as_image_copy(), &padded, layout, size);
        gpu.queue().submit([]);
        wait(gpu);
    });
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "\ntexture: a {h}x{w} RGB crop of a {side}x{side} uint8 image to rgba8unorm: \
         bytelens {:.1} ms, the usual way {:.1} ms",
        ms(bytelens),
        ms(usual)
    );
    usual.as_secs_f64() / bytelens.as_secs_f64()
}

/// A row timing `gpu.upload((src, layout)).write_into(dst)`,
/// waiting for the GPU each time.
fn upload_row(
    gpu: &GpuContext,
    reps: usize,
    name: &'static str,
    what: &'static str,
    src: &Buffer,
    layout: &Layout,
    dst: &mut GpuBuffer,
) -> Row {
    let median = median(reps, || {
        gpu.upload((src.as_bytes(), layout))
            .write_into(dst)
            .unwrap();
        wait(gpu);
    });
    Row { name, what, median }
}

fn gbps(nbytes: usize, d: Duration) -> f64 {
    nbytes as f64 / d.as_secs_f64() / 1e9
}

fn report(table: &[Row], nbytes: usize, out_dir: &str, info: &wgpu::AdapterInfo, texture: f64) {
    let get = |name: &str| {
        let row = table.iter().find(|r| r.name == name).expect("measured row");
        gbps(nbytes, row.median)
    };
    let (memcpy, write_buffer) = (get("memcpy"), get("write_buffer"));
    println!(
        "\n{:<14} {:>10} {:>8} {:>12} {:>9}  what",
        "row", "median ms", "GB/s", "x write_buf", "x memcpy"
    );
    let mut csv = String::from("row,median_ms,gb_per_s,ratio_write_buffer,ratio_memcpy,what\n");
    for row in table {
        let rate = gbps(nbytes, row.median);
        let ms = row.median.as_secs_f64() * 1e3;
        println!(
            "{:<14} {:>10.1} {:>8.2} {:>12.2} {:>9.2}  {}",
            row.name,
            ms,
            rate,
            rate / write_buffer,
            rate / memcpy,
            row.what
        );
        let _ = writeln!(
            csv,
            "{},{ms:.3},{rate:.3},{:.3},{:.3},\"{}\"",
            row.name,
            rate / write_buffer,
            rate / memcpy,
            row.what
        );
    }
    let contiguous = get("write_into");
    let goals = [
        (
            "repeated contiguous upload >= 3x write_buffer",
            contiguous / write_buffer,
            3.0,
        ),
        (
            "repeated contiguous upload >= 0.5x memcpy",
            contiguous / memcpy,
            0.5,
        ),
        (
            "(staged) repeated contiguous upload >= 0.5x memcpy",
            get("staged_into") / memcpy,
            0.5,
        ),
        (
            "transposed upload (in place) >= 0.9x the host transpose alone",
            get("strided") / get("transpose_host"),
            0.9,
        ),
        (
            "(staged) transposed upload >= 0.9x the host transpose alone",
            get("staged_strided") / get("transpose_host"),
            0.9,
        ),
        (
            "texture upload of a strided RGB crop >= 3x the usual way",
            texture,
            3.0,
        ),
    ];
    println!();
    for (goal, ratio, want) in goals {
        let verdict = if ratio >= want { "met" } else { "MISSED" };
        println!("goal {goal}: {ratio:.2} ({verdict})");
    }
    std::fs::create_dir_all(out_dir).expect("bench output directory");
    std::fs::write(format!("{out_dir}/gpu.csv"), csv).expect("write gpu.csv");
    std::fs::write(format!("{out_dir}/gpu.svg"), svg(table, nbytes, info)).expect("write gpu.svg");
    println!("\nwrote {out_dir}/gpu.csv and {out_dir}/gpu.svg");
}

/// A horizontal bar chart of GB/s, one bar per row.
fn svg(table: &[Row], nbytes: usize, info: &wgpu::AdapterInfo) -> String {
    let (left, width, bar, gap, top) = (130.0, 460.0, 22.0, 8.0, 48.0);
    let max = table
        .iter()
        .map(|r| gbps(nbytes, r.median))
        .fold(0.0, f64::max);
    let height = top + table.len() as f64 * (bar + gap) + 20.0;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"680\" height=\"{height}\" \
         font-family=\"sans-serif\" font-size=\"13\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"10\" y=\"22\" font-size=\"15\">bytelens GPU upload, {} MiB: GB/s on {}</text>\n",
        nbytes >> 20,
        escape(&info.name)
    );
    for (i, row) in table.iter().enumerate() {
        let rate = gbps(nbytes, row.median);
        let y = top + i as f64 * (bar + gap);
        let w = (rate / max * width).max(1.0);
        let fill = if [
            "upload",
            "write_into",
            "staged_into",
            "strided",
            "staged_strided",
            "reversed",
            "byteswapped",
            "f64_to_f32",
        ]
        .contains(&row.name)
        {
            "#2b6cb0"
        } else {
            "#a0aec0"
        };
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\
             <rect x=\"{left}\" y=\"{y}\" width=\"{w:.1}\" height=\"{bar}\" fill=\"{fill}\"/>\
             <text x=\"{:.1}\" y=\"{}\">{rate:.2}</text>",
            left - 8.0,
            y + bar * 0.72,
            row.name,
            left + w + 6.0,
            y + bar * 0.72
        );
    }
    s.push_str("</svg>\n");
    s
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
