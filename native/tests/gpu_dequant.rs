//! The core's WGSL dequantisers on a real Vulkan adapter (lavapipe in CI)
//! against the CPU reference, for every type and output dtype; and a GGUF
//! file loaded with its tensors dequantised on the GPU.
//!
//! Without an adapter these tests fail when `BYTELENS_REQUIRE_GPU` or `CI`
//! is set and otherwise skip, saying why (`support::gpu`).

mod support;

use bytelens::files::{GgmlType, dequant::can_dequantize, wgsl};
use bytelens::gpu::{Dequantize, GpuBuffer, GpuContext, GpuOptions, HostView};
use bytelens::{DType, Descr, Layout, dequantize_into};
use support::gpu;

/// A small xorshift generator: the same blocks on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// `count` blocks of `ggml` of random bytes, every float16 field a finite
/// value (normals of either sign over a wide range, subnormals and zeros
/// among them), MXFP4's exponent byte from 2 up unless `tiny_exponents`.
fn blocks(ggml: GgmlType, count: usize, seed: u64, tiny_exponents: bool) -> Vec<u8> {
    let info = ggml.info();
    let mut rng = Rng(seed | 1);
    let mut out: Vec<u8> = (0..count * info.bytes as usize)
        .map(|_| rng.next() as u8)
        .collect();
    for block in out.chunks_exact_mut(info.bytes as usize) {
        for field in info.fields {
            let at = usize::from(field.offset);
            match (field.dtype, field.name) {
                (DType::F16, _) => {
                    let r = rng.next();
                    // Exponents 0..=29: subnormals and zeros, up to 2^14.
                    let exp = (r % 30) as u16;
                    let bits = ((r >> 8) as u16 & 0x83ff) | (exp << 10);
                    block[at..at + 2].copy_from_slice(&bits.to_le_bytes());
                }
                (DType::U8, "e") => {
                    block[at] = if tiny_exponents {
                        (rng.next() % 2) as u8
                    } else {
                        2 + (rng.next() % 250) as u8
                    };
                }
                _ => {}
            }
        }
    }
    out
}

/// The values of `bytes` (blocks of `ggml`) into `to` by the CPU kernel.
fn on_cpu(ggml: GgmlType, bytes: &[u8], to: DType) -> Vec<u8> {
    let n = bytes.len() / ggml.info().bytes as usize * ggml.info().block as usize;
    let mut out = vec![0u8; n * to.size()];
    dequantize_into(ggml, bytes, &mut out, Descr::native(to)).unwrap();
    out
}

/// `bytes` uploaded as blocks of `ggml`, holding `n` values in one row.
fn upload(ggml: GgmlType, bytes: &[u8]) -> GpuBuffer {
    let gpu = gpu().unwrap();
    let n = bytes.len() / ggml.info().bytes as usize * ggml.info().block as usize;
    let layout = Layout::contiguous(DType::U8, &[bytes.len()]).unwrap();
    let values = Layout::contiguous(DType::F32, &[n]).unwrap();
    gpu.upload(HostView::quantized(bytes, &layout, ggml, &values))
        .buffer()
        .unwrap()
}

/// The first value (index, CPU bits, GPU bits) where two runs of `to`
/// values differ.
fn first_difference(cpu: &[u8], got: &[u8], to: DType) -> Option<(usize, u32, u32)> {
    let size = to.size();
    let word = |b: &[u8]| {
        let mut w = [0u8; 4];
        w[..size].copy_from_slice(b);
        u32::from_le_bytes(w)
    };
    cpu.chunks_exact(size)
        .zip(got.chunks_exact(size))
        .enumerate()
        .find(|(_, (a, b))| a != b)
        .map(|(i, (a, b))| (i, word(a), word(b)))
}

#[test]
fn every_type_dequantises_on_the_gpu_as_on_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut checked = 0;
    for ggml in GgmlType::ALL.into_iter().filter(|&t| can_dequantize(t)) {
        let bytes = blocks(ggml, 300, ggml.info().code.into(), false);
        let up = upload(ggml, &bytes);
        for to in [DType::F32, DType::F16, DType::BF16] {
            let values = gpu.dequantize(&up, to).unwrap();
            assert_eq!(values.layout().dtype(), to);
            let got = values.download().unwrap();
            let cpu = on_cpu(ggml, &bytes, to);
            assert_eq!(
                first_difference(&cpu, got.as_bytes(), to),
                None,
                "{ggml} into {}: (value, CPU bits, GPU bits)",
                to.name()
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 15 * 3);
}

#[test]
fn passes_within_a_small_binding_limit_give_the_same_values() {
    let Some(gpu) = gpu() else { return };
    for ggml in [
        GgmlType::Q4_0,
        GgmlType::MXFP4,
        GgmlType::Q6_K,
        GgmlType::TQ1_0,
    ] {
        // The smallest power-of-two binding limit that has passes, each
        // starting at a 256-byte multiple of blocks and of values; three
        // passes and a part of a fourth.
        let limit = (10..24)
            .map(|k| 1u64 << k)
            .find(|&l| wgsl::passes(ggml, 1, DType::F16, l).is_some())
            .unwrap();
        let per_pass = wgsl::passes(ggml, 1 << 20, DType::F16, limit).unwrap()[0].dst_size
            / (u64::from(ggml.info().block) * 2);
        let count = 3 * per_pass as usize + 7;
        let bytes = blocks(ggml, count, 7, false);
        assert_eq!(
            wgsl::passes(ggml, count as u64, DType::F16, limit)
                .unwrap()
                .len(),
            4,
            "{ggml}"
        );
        let values = gpu
            .dequantize_within(&upload(ggml, &bytes), DType::F16, limit)
            .unwrap();
        assert_eq!(
            first_difference(
                &on_cpu(ggml, &bytes, DType::F16),
                values.download().unwrap().as_bytes(),
                DType::F16
            ),
            None,
            "{ggml} in passes of {limit} bytes"
        );
    }
}

#[test]
fn mxfp4_subnormal_scales_are_the_cpus_or_flushed_to_zero() {
    let Some(gpu) = gpu() else { return };
    let bytes = blocks(GgmlType::MXFP4, 64, 11, true);
    let cpu = on_cpu(GgmlType::MXFP4, &bytes, DType::F32);
    let got = gpu
        .dequantize(&upload(GgmlType::MXFP4, &bytes), DType::F32)
        .unwrap();
    let got = got.download().unwrap();
    let (mut same, mut flushed) = (0, 0);
    for (a, b) in cpu.chunks_exact(4).zip(got.as_bytes().chunks_exact(4)) {
        let (a, b) = (
            f32::from_le_bytes(a.try_into().unwrap()),
            f32::from_le_bytes(b.try_into().unwrap()),
        );
        assert!(
            a.to_bits() == b.to_bits() || (b == 0.0 && a.abs() < 6.0 * 2f32.powi(-125)),
            "{a:e} {b:e}"
        );
        if a.to_bits() == b.to_bits() {
            same += 1
        } else {
            flushed += 1
        }
    }
    eprintln!(
        "MXFP4 with subnormal scales on {}: {same} values as the CPU's, {flushed} flushed to zero",
        gpu.info().name
    );
}

#[test]
fn dequantising_what_is_not_blocks_is_refused_with_the_reason() {
    let Some(gpu) = gpu() else { return };
    let plain = gpu
        .upload((
            &[0u8; 64][..],
            &Layout::contiguous(DType::F32, &[16]).unwrap(),
        ))
        .buffer()
        .unwrap();
    let err = gpu.dequantize(&plain, DType::F32).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot dequantise on the GPU: the buffer holds float32 data, not quantised blocks"
    );
    let up = upload(GgmlType::Q8_0, &blocks(GgmlType::Q8_0, 2, 3, false));
    // The CPU's error for the same mistake: kind Dequantize, not Gpu.
    let err = gpu.dequantize(&up, DType::F64).unwrap_err();
    assert_eq!(err.kind(), bytelens::ErrorKind::Dequantize, "{err}");
    let cpu = bytelens::check_dequantize_to(Descr::native(DType::F64)).unwrap_err();
    assert_eq!(err.to_string(), cpu.to_string());
}

#[test]
fn values_past_the_largest_buffer_are_dequantised_into_segments() {
    // The plain upload splits a tensor past max_buffer_size into segments;
    // dequantising on the GPU refused one whose values were that large
    // (Llama-3-70B's token_embd is 8.4 GB in float32). Small limits here,
    // of which some cut the blocks' values mid-step and mid-block.
    if gpu().is_none() {
        return;
    }
    let mut checked = 0;
    for max in [4096u64, 5120, 16_640] {
        let small = GpuContext::with_options(GpuOptions {
            max_buffer_size: Some(max),
            ..GpuOptions::default()
        })
        .unwrap();
        for ggml in [
            GgmlType::Q4_0,
            GgmlType::Q8_0,
            GgmlType::Q4_K,
            GgmlType::IQ4_NL,
        ] {
            let info = ggml.info();
            // Blocks that fit one buffer, values that need several.
            let count = (max / u64::from(info.bytes)) as usize - 1;
            let bytes = blocks(ggml, count, 17, false);
            let n = count * info.block as usize;
            let layout = Layout::contiguous(DType::U8, &[bytes.len()]).unwrap();
            let values = Layout::contiguous(DType::F32, &[n]).unwrap();
            let up = small
                .upload(HostView::quantized(&bytes, &layout, ggml, &values))
                .buffer()
                .unwrap();
            for to in [DType::F32, DType::F16, DType::BF16] {
                let out = small.dequantize(&up, to).unwrap();
                let segments = out.buffers().len();
                assert!(segments > 1, "{ggml} into {}: one segment", to.name());
                let got = out.download().unwrap();
                assert_eq!(
                    first_difference(&on_cpu(ggml, &bytes, to), got.as_bytes(), to),
                    None,
                    "{ggml} into {} over {segments} segments of {max} bytes",
                    to.name()
                );
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 3 * 4 * 3);
}

/// A GGUF version 3 file of `tensors` (name, type, shape, bytes), aligned to 32.
fn gguf(tensors: &[(&str, GgmlType, Vec<u64>, Vec<u8>)]) -> Vec<u8> {
    let mut out = b"GGUF".to_vec();
    out.extend_from_slice(&3u32.to_le_bytes());
    out.extend_from_slice(&(tensors.len() as u64).to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes());
    let mut offset = 0u64;
    for (name, ggml, shape, bytes) in tensors {
        out.extend_from_slice(&(name.len() as u64).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&(shape.len() as u32).to_le_bytes());
        // GGUF lists dimensions innermost first.
        for n in shape.iter().rev() {
            out.extend_from_slice(&n.to_le_bytes());
        }
        out.extend_from_slice(&ggml.info().code.to_le_bytes());
        out.extend_from_slice(&offset.to_le_bytes());
        offset = (offset + bytes.len() as u64).next_multiple_of(32);
    }
    out.resize(out.len().next_multiple_of(32), 0);
    for (_, _, _, bytes) in tensors {
        out.extend_from_slice(bytes);
        out.resize(out.len().next_multiple_of(32), 0);
    }
    out
}

#[test]
fn a_gguf_file_loads_with_its_tensors_dequantised_on_the_gpu() {
    let Some(gpu) = gpu() else { return };
    let q4k = blocks(GgmlType::Q4_K, 8, 5, false);
    let q8 = blocks(GgmlType::Q8_0, 12, 6, false);
    let norm: Vec<u8> = (0..64u32)
        .flat_map(|i| (i as f32 * 0.5).to_le_bytes())
        .collect();
    let file = gguf(&[
        (
            "blk.0.attn_q.weight",
            GgmlType::Q4_K,
            vec![4, 512],
            q4k.clone(),
        ),
        (
            "blk.0.attn_norm.weight",
            GgmlType::F32,
            vec![64],
            norm.clone(),
        ),
        ("output.weight", GgmlType::Q8_0, vec![3, 128], q8.clone()),
    ]);
    let to = Some(Descr::native(DType::F16));
    let on_gpu = gpu.load_with(&file, to, Dequantize::Gpu).unwrap();
    let on_host = gpu.load(&file, to).unwrap();
    let names: Vec<&str> = on_gpu.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        [
            "blk.0.attn_q.weight",
            "blk.0.attn_norm.weight",
            "output.weight"
        ]
    );
    for ((name, a), (_, b)) in on_gpu.iter().zip(&on_host) {
        assert_eq!(a.layout().shape(), b.layout().shape(), "{name}");
        assert_eq!(a.layout().dtype(), DType::F16, "{name}");
        assert!(a.quantized().is_none(), "{name}");
        assert_eq!(
            a.download().unwrap().as_bytes(),
            b.download().unwrap().as_bytes(),
            "{name}"
        );
    }
    assert_eq!(
        on_gpu[2].1.download().unwrap().as_bytes(),
        on_cpu(GgmlType::Q8_0, &q8, DType::F16)
    );
    // Without a dtype, blocks stay blocks either way.
    let blocks_only = gpu.load_with(&file, None, Dequantize::Gpu).unwrap();
    assert_eq!(
        blocks_only[0].1.quantized().map(|(t, s)| (t, s.to_vec())),
        Some((GgmlType::Q4_K, vec![4, 512]))
    );
    let big_endian = gpu.load_with(
        &file,
        Some(Descr::new(DType::F32, bytelens::ByteOrder::Big)),
        Dequantize::Gpu,
    );
    // The CPU's error for the same mistake (kind Dequantize).
    let err = big_endian.expect_err("a big-endian dequantisation refused");
    assert_eq!(err.kind(), bytelens::ErrorKind::Dequantize, "{err}");
    assert!(err.to_string().contains("'>f4'"), "{err}");
}
