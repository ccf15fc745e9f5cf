//! GPU round trips and a compute shader over a Plan, on a real Vulkan
//! adapter (Mesa's lavapipe in CI, installed by `cargo xtask test`).
//!
//! Without an adapter these tests fail when `BYTELENS_REQUIRE_GPU` or `CI`
//! is set (as `cargo xtask test` and CI do) and otherwise skip, saying why.

use std::sync::OnceLock;

use bytelens::gpu::{GpuBuffer, GpuContext, GpuError, GpuOptions, wgpu};
use bytelens::{Buffer, ByteOrder, DType, Descr, Error, Layout, Plan, copy_into, gather_into};

/// The shared default context, or `None` (with a message) on a developer
/// machine without Vulkan.
fn gpu() -> Option<&'static GpuContext> {
    static GPU: OnceLock<Result<GpuContext, GpuError>> = OnceLock::new();
    match GPU.get_or_init(GpuContext::new) {
        Ok(gpu) => Some(gpu),
        Err(err) => {
            let required = ["BYTELENS_REQUIRE_GPU", "CI"]
                .iter()
                .any(|var| std::env::var_os(var).is_some_and(|v| !v.is_empty()));
            assert!(!required, "a GPU adapter is required here: {err}");
            eprintln!("skipping: {err}");
            None
        }
    }
}

/// Bytes that differ at every position and in every element size.
fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8)
        .collect()
}

/// What the GPU buffer must hold: the view's elements in C order.
fn expected(bytes: &[u8], layout: &Layout) -> Vec<u8> {
    let mut out = vec![0; layout.nbytes()];
    gather_into(bytes, layout, &mut out).unwrap();
    out
}

fn round_trip(gpu: &GpuContext, bytes: &[u8], layout: &Layout) -> GpuBuffer {
    let up = gpu.upload_layout(bytes, layout).unwrap();
    assert_eq!(up.nbytes(), layout.nbytes());
    assert_eq!(
        up.padded_size(),
        (layout.nbytes().max(1) as u64).div_ceil(4) * 4
    );
    let down = up.download().unwrap();
    assert_eq!(down.as_bytes(), expected(bytes, layout), "{layout:?}");
    assert_eq!(up.layout().shape(), layout.shape());
    assert!(up.layout().is_c_contiguous());
    up
}

#[test]
fn adapter_has_its_real_limits() {
    let Some(gpu) = gpu() else { return };
    let info = gpu.info();
    eprintln!(
        "adapter: {} ({:?}, {})",
        info.name, info.backend, info.driver
    );
    assert_eq!(
        gpu.limits().max_buffer_size,
        gpu.adapter().limits().max_buffer_size
    );
    // wgpu's default limit is 256 MiB; lavapipe and real GPUs offer more.
    assert!(gpu.limits().max_buffer_size > 256 << 20);
    assert_eq!(gpu.max_segment(), gpu.limits().max_buffer_size / 256 * 256);
    // lavapipe's memory is the host's: uploads write the buffers in place
    // (so CI exercises that path; the staged one has contexts of its own).
    if info.device_type == wgpu::DeviceType::Cpu {
        assert!(gpu.uploads_directly());
    }
}

#[test]
fn a_terabyte_of_stride_0_is_refused_before_allocating() {
    let Some(gpu) = gpu() else { return };
    // 2^38 float32 over 4 bytes: 1 TiB once gathered. lavapipe's buffers
    // are host memory that Linux would overcommit, then kill the process
    // for filling; a GPU refuses with an out-of-memory error.
    let huge = Layout::new(DType::F32, 0, &[1 << 38], &[0]).unwrap();
    let err = gpu.upload_layout(&[0; 4], &huge).unwrap_err();
    if gpu.info().device_type == wgpu::DeviceType::Cpu {
        assert!(
            matches!(
                err,
                GpuError::OutOfMemory {
                    bytes: 1_099_511_627_776,
                    ..
                }
            ),
            "{err}"
        );
    }
    eprintln!("refused: {err}");
}

#[test]
fn every_dtype_and_odd_sizes_round_trip() {
    let Some(gpu) = gpu() else { return };
    for dtype in DType::ALL {
        for n in [1, 3, 1001] {
            let mut bytes = pattern(n * dtype.size(), n as u8);
            if dtype == DType::Bool {
                bytes.iter_mut().for_each(|b| *b &= 1);
            }
            let layout = Layout::contiguous(dtype, &[n]).unwrap();
            round_trip(gpu, &bytes, &layout);
        }
    }
    // 1, 3 and 1001 bytes, as bytes: padded to 4, 4 and 1004.
    for n in [1, 3, 1001] {
        let up = round_trip(
            gpu,
            &pattern(n, 7),
            &Layout::contiguous(DType::U8, &[n]).unwrap(),
        );
        assert_eq!(up.buffer().unwrap().size(), up.padded_size());
    }
}

#[test]
fn padding_and_empty_views_are_zeros_on_the_gpu() {
    let Some(gpu) = gpu() else { return };
    let bytes = [0xFFu8; 7];
    let up = gpu
        .upload_layout(&bytes, &Layout::contiguous(DType::U8, &[5]).unwrap())
        .unwrap();
    // Read all 8 bytes on the GPU through a second upload's buffer copy.
    let mut whole = gpu
        .upload_layout(&[1u8; 8], &Layout::contiguous(DType::U8, &[8]).unwrap())
        .unwrap();
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(up.buffer().unwrap(), 0, whole.buffer().unwrap(), 0, 8);
    gpu.queue().submit([encoder.finish()]);
    assert_eq!(
        whole.download().unwrap().as_bytes(),
        [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0]
    );

    let empty = gpu
        .upload_layout(&bytes, &Layout::contiguous(DType::I32, &[0, 3]).unwrap())
        .unwrap();
    assert_eq!((empty.nbytes(), empty.padded_size()), (0, 4));
    assert!(empty.download().unwrap().is_empty());
    // upload_into rewrites in place; sizes must match.
    gpu.upload_layout_into(
        &[9u8; 8],
        &Layout::contiguous(DType::U8, &[8]).unwrap(),
        &mut whole,
    )
    .unwrap();
    assert_eq!(whole.download().unwrap().as_bytes(), [9; 8]);
    let err = gpu
        .upload_layout_into(
            &[9u8; 8],
            &Layout::contiguous(DType::U8, &[4]).unwrap(),
            &mut whole,
        )
        .unwrap_err();
    assert_eq!(err, GpuError::SizeMismatch { gpu: 8, host: 4 });
}

#[test]
fn strided_transposed_and_reversed_views_round_trip() {
    let Some(gpu) = gpu() else { return };
    let bytes = pattern(1 << 16, 3);
    for dtype in [DType::U8, DType::I16, DType::F32, DType::F64] {
        let base = Layout::contiguous(dtype, &[24, 40]).unwrap();
        let cases = [
            base.transpose(),
            base.slice(0, None, None, -1).unwrap(),
            base.slice(1, None, None, -1).unwrap().transpose(),
            base.slice(0, Some(1), None, 3)
                .unwrap()
                .slice(1, None, None, -2)
                .unwrap(),
            Layout::contiguous(dtype, &[4, 5, 6])
                .unwrap()
                .permute(&[2, 0, 1])
                .unwrap(),
            Layout::contiguous(dtype, &[5])
                .unwrap()
                .broadcast_to(&[3, 5])
                .unwrap(),
            base.index(1, 7).unwrap(),
        ];
        for layout in cases {
            round_trip(gpu, &bytes, &layout);
        }
    }
    // The typed entry point: a transposed float32 matrix.
    let mut buf = Buffer::new(64 * 48 * 4).unwrap();
    buf.view_mut::<f32>()
        .unwrap()
        .copy_from(&(0..64 * 48).map(|i| i as f32).collect::<Vec<_>>())
        .unwrap();
    let t = Layout::contiguous(DType::F32, &[64, 48])
        .unwrap()
        .transpose();
    let up = gpu.upload(&buf.view_as::<f32>(t).unwrap()).unwrap();
    let back = up.download().unwrap();
    let back = back.view_as::<f32>(up.layout()).unwrap();
    assert_eq!(back.get(&[5, 2]).unwrap(), (2 * 48 + 5) as f32);
}

#[test]
fn converted_uploads_arrive_in_the_asked_element_in_one_pass() {
    let Some(gpu) = gpu() else { return };
    let values: Vec<f64> = (0..4000).map(|i| i as f64 * 0.37 - 700.0).collect();
    let big: Vec<u8> = values.iter().flat_map(|v| v.to_be_bytes()).collect();
    let layout = Layout::contiguous(DType::F64, &[50, 80])
        .unwrap()
        .with_byte_order(ByteOrder::Big);
    let little_f32 = Descr::new(DType::F32, ByteOrder::Little);
    // Big-endian float64, transposed, as little-endian float32; then the
    // same bytes byteswapped only; through 1 KiB staging chunks and 3 threads.
    let staged = GpuContext::with_options(GpuOptions {
        staging_chunk: 1024,
        direct_upload: false,
        ..GpuOptions::default()
    })
    .unwrap();
    for gpu in [gpu, &staged] {
        for (view, to) in [
            (layout.transpose(), little_f32),
            (layout, Descr::new(DType::F64, ByteOrder::Little)),
            (layout.slice(1, None, None, -3).unwrap(), little_f32),
        ] {
            let up = gpu.upload_layout_as(&big, &view, to).unwrap();
            let mut host = vec![0; view.size() * to.dtype.size()];
            copy_into(&big, &view, &mut host, to).unwrap();
            assert_eq!(up.download().unwrap().as_bytes(), host, "{view:?} as {to}");
            assert_eq!(up.layout().descr(), to);
            assert_eq!(up.layout().shape(), view.shape());
        }
        let t = layout.transpose();
        let up = gpu.upload_layout_as(&big, &t, little_f32).unwrap();
        let back = up.download().unwrap();
        let back = back.view_as::<f32>(up.layout()).unwrap();
        assert_eq!(back.get(&[3, 7]).unwrap(), values[7 * 80 + 3] as f32);
    }
    // A refused conversion is the host's error, before anything is uploaded.
    let err = gpu
        .upload_layout_as(&big, &layout, Descr::native(DType::I32))
        .unwrap_err();
    assert!(matches!(err, GpuError::Host(Error::Cast { .. })), "{err:?}");
    assert!(err.to_string().contains("float64"), "{err}");
}

#[test]
fn uploads_larger_than_the_ring_and_the_buffer_limit_are_chunked() {
    let Some(_) = gpu() else { return };
    // Two 256-byte staging buffers and 1 KiB wgpu buffers: a 10,001-byte
    // view takes 40 chunks and 10 buffers.
    // Staged, and written straight into the buffers where memory is unified.
    for direct_upload in [false, true] {
        let small = GpuContext::with_options(GpuOptions {
            staging_chunk: 256,
            staging_slots: 2,
            max_buffer_size: Some(1024),
            direct_upload,
            ..GpuOptions::default()
        })
        .unwrap();
        chunked_round_trips(&small);
    }
}

fn chunked_round_trips(small: &GpuContext) {
    assert_eq!((small.staging_chunk(), small.max_segment()), (256, 1024));
    let bytes = pattern(10_001, 11);
    let contiguous = Layout::contiguous(DType::U8, &[10_001]).unwrap();
    let up = round_trip(small, &bytes, &contiguous);
    assert_eq!(up.buffers().len(), 10);
    assert!(up.buffer().is_none());
    assert!(up.buffers()[..9].iter().all(|b| b.size() == 1024));
    assert_eq!(up.buffers()[9].size(), 10_004 - 9 * 1024);
    // Strided and transposed gathers resume across chunk boundaries.
    let t = Layout::contiguous(DType::I16, &[50, 100])
        .unwrap()
        .transpose();
    round_trip(small, &bytes, &t);
    let r = Layout::contiguous(DType::F64, &[1250])
        .unwrap()
        .slice(0, None, None, -3)
        .unwrap();
    round_trip(small, &bytes, &r);
    // Uploads reuse the same staging buffers, over and over.
    for seed in 0..20 {
        let bytes = pattern(3000, seed);
        round_trip(
            small,
            &bytes,
            &Layout::contiguous(DType::U32, &[750]).unwrap(),
        );
    }
}

#[test]
fn large_uploads_are_filled_by_several_threads() {
    let Some(_) = gpu() else { return };
    for direct_upload in [false, true] {
        let three = GpuContext::with_options(GpuOptions {
            upload_threads: 3,
            staging_chunk: 1 << 20,
            max_buffer_size: Some(3 << 20),
            direct_upload,
            ..GpuOptions::default()
        })
        .unwrap();
        threaded_round_trips(&three);
    }
}

fn threaded_round_trips(three: &GpuContext) {
    // 9 MiB and more: cut into three parts, each through its own ring,
    // across 1 MiB chunks and 3 MiB buffers; reversed and odd-sized too.
    let bytes = pattern((9 << 20) + 4096, 9);
    let t = Layout::contiguous(DType::U16, &[1024, (9 << 20) / 2048])
        .unwrap()
        .transpose();
    round_trip(three, &bytes, &t);
    let odd = Layout::contiguous(DType::U8, &[(9 << 20) + 4093]).unwrap();
    let up = round_trip(three, &bytes, &odd.slice(0, None, None, -1).unwrap());
    assert_eq!(up.buffers().len(), 4);
    round_trip(
        three,
        &bytes,
        &Layout::contiguous(DType::U8, &[3, (3 << 20) + 1]).unwrap(),
    );
}

#[test]
fn errors_come_back_as_values_not_panics() {
    let Some(gpu) = gpu() else { return };
    // A view outside its bytes: the core's error.
    let err = gpu
        .upload_layout(&[0u8; 8], &Layout::contiguous(DType::I32, &[3]).unwrap())
        .unwrap_err();
    assert!(
        matches!(err, GpuError::Layout(ref e) if e.is_bounds()),
        "{err}"
    );
    // wgpu refuses MAP_READ with STORAGE (without MAPPABLE_PRIMARY_BUFFERS,
    // which direct uploads ask for): a validation error, reported.
    let bad = GpuContext::with_options(GpuOptions {
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::STORAGE,
        direct_upload: false,
        ..GpuOptions::default()
    })
    .unwrap();
    let err = bad
        .upload_layout(&[1u8; 16], &Layout::contiguous(DType::U8, &[16]).unwrap())
        .unwrap_err();
    match &err {
        GpuError::Wgpu { during, message } => {
            assert_eq!(*during, "buffer creation");
            assert!(
                message.contains("MAP_READ") || message.contains("usage"),
                "{message}"
            );
        }
        other => panic!("expected a wgpu error, got {other:?}"),
    }
    // The context is still usable afterwards.
    round_trip(
        gpu,
        &[5u8; 12],
        &Layout::contiguous(DType::U8, &[12]).unwrap(),
    );
    // Downloads into the wrong size and bad options.
    let up = gpu
        .upload_layout(&[1u8; 12], &Layout::contiguous(DType::U8, &[12]).unwrap())
        .unwrap();
    assert_eq!(
        up.download_into(&mut [0u8; 11]).unwrap_err(),
        GpuError::SizeMismatch { gpu: 12, host: 11 }
    );
    for bad in [
        GpuOptions {
            staging_slots: 0,
            ..GpuOptions::default()
        },
        GpuOptions {
            staging_slots: 65,
            ..GpuOptions::default()
        },
        GpuOptions {
            upload_threads: usize::MAX,
            ..GpuOptions::default()
        },
        GpuOptions {
            staging_chunk: 0,
            ..GpuOptions::default()
        },
    ] {
        let err = GpuContext::with_options(bad).unwrap_err();
        assert!(matches!(err, GpuError::BadOptions(_)), "{err}");
    }
    // A chunk larger than a buffer may be is capped, not overflowed.
    let huge = GpuContext::with_options(GpuOptions {
        staging_chunk: u64::MAX,
        max_buffer_size: Some(4096),
        ..GpuOptions::default()
    })
    .unwrap();
    assert_eq!(huge.staging_chunk(), 4096);
    round_trip(
        &huge,
        &pattern(10_000, 1),
        &Layout::contiguous(DType::U8, &[10_000]).unwrap(),
    );
}

#[test]
fn failures_report_their_cause_and_leave_the_context_usable() {
    let Some(_) = gpu() else { return };
    let bytes = pattern(2000, 4);
    let l = Layout::contiguous(DType::U8, &[2000]).unwrap();
    // Staged and (where the adapter has unified memory) direct uploads.
    for direct_upload in [false, true] {
        let small = GpuContext::with_options(GpuOptions {
            staging_chunk: 256,
            staging_slots: 1,
            max_buffer_size: Some(512),
            direct_upload,
            ..GpuOptions::default()
        })
        .unwrap();
        let mut dst = small.upload_layout(&bytes, &l).unwrap();
        dst.buffers()[1].destroy();
        for err in [
            small.upload_layout_into(&bytes, &l, &mut dst).unwrap_err(),
            dst.download().unwrap_err(),
        ] {
            match &err {
                GpuError::Wgpu { message, .. } => {
                    assert!(message.contains("destroyed"), "{message}")
                }
                other => panic!("expected wgpu's error, got {other:?}"),
            }
        }
        // The ring recovers: later uploads and downloads are right.
        for seed in 0..10 {
            round_trip(
                &small,
                &pattern(1500, seed),
                &Layout::contiguous(DType::U8, &[1500]).unwrap(),
            );
        }
    }
    let small = GpuContext::with_options(GpuOptions {
        staging_chunk: 256,
        staging_slots: 1,
        max_buffer_size: Some(512),
        direct_upload: false,
        ..GpuOptions::default()
    })
    .unwrap();
    // An error in the user's own wgpu call is kept for them, not blamed
    // on the next upload, and does not panic.
    let _invalid = small.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("invalid on purpose"),
        size: 16,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    });
    round_trip(&small, &bytes, &l);
    let kept = small.take_uncaptured_error().expect("the error is kept");
    assert!(
        kept.contains("MAP_READ") || kept.contains("usage"),
        "{kept}"
    );
    assert_eq!(small.take_uncaptured_error(), None);
}

#[test]
fn threads_share_one_context() {
    let Some(gpu) = gpu() else { return };
    std::thread::scope(|s| {
        for seed in 0..4u8 {
            s.spawn(move || {
                for round in 0..10u8 {
                    let bytes = pattern(4096 + round as usize * 12, seed * 16 + round);
                    let n = bytes.len() / 4;
                    let t = Layout::contiguous(DType::F32, &[n / 8, 8])
                        .unwrap()
                        .transpose();
                    round_trip(gpu, &bytes, &t);
                }
            });
        }
    });
}

/// The WGSL expression giving the 32 bits of one scalar of a plan field.
fn bits(dtype: DType, expr: &str) -> String {
    match dtype {
        DType::U32 => expr.to_string(),
        // f16 -> f32 -> f16 is exact for finite values.
        DType::F16 => format!("pack2x16float(vec2<f32>(f32({expr}), 0.0))"),
        _ => format!("bitcast<u32>({expr})"),
    }
}

/// A compute shader reads every element of every field of `plan` through
/// `plan.wgsl()`'s structs (one binding per union alternative, all over the
/// same buffer) and writes its bits out; they must equal the bytes the CPU
/// put at the plan's offsets.
fn check_plan_on_gpu(gpu: &GpuContext, plan: &Plan<'_>) {
    let mut bytes = pattern(plan.nbytes(), 5);
    // Keep f16 values finite and non-NaN so a conversion cannot change them.
    for field in plan.fields() {
        if field.descr().dtype == DType::F16 {
            for at in field.layout().unwrap().offsets(bytes.len()).unwrap() {
                bytes[at + 1] &= 0x3B;
            }
        }
    }
    let mut body = String::new();
    let mut want = Vec::new();
    for field in plan.fields() {
        let layout = field.layout().unwrap();
        let n = field.descr().dtype.size();
        let mut offsets = layout.offsets(bytes.len()).unwrap();
        let shape = field.shape().to_vec();
        let count: usize = shape.iter().product();
        for flat in 0..count {
            let mut rest = flat;
            let mut index = String::new();
            for len in shape.iter().rev() {
                index.insert_str(0, &format!("[{}]", rest % len));
                rest /= len;
            }
            let expr = format!("p{}.{}{}", field.alternative(), field.name(), index);
            body += &format!(
                "    out[{}] = {};\n",
                want.len(),
                bits(field.descr().dtype, &expr)
            );
            let at = offsets.next().unwrap();
            let mut word = [0u8; 4];
            word[..n].copy_from_slice(&bytes[at..at + n]);
            want.push(u32::from_le_bytes(word));
        }
    }
    let wgsl = plan.wgsl().unwrap().to_string();
    let mut bindings = String::new();
    for a in 0..plan.alternatives() {
        let ty = if plan.alternatives() == 1 {
            plan.name().to_string()
        } else {
            format!("{}{a}", plan.name())
        };
        bindings += &format!("@group(0) @binding({a}) var<storage, read> p{a}: {ty};\n");
    }
    let out_binding = plan.alternatives();
    let source = format!(
        "{wgsl}\n{bindings}@group(0) @binding({out_binding}) var<storage, read_write> out: array<u32>;\n\
         @compute @workgroup_size(1)\nfn main() {{\n{body}}}\n"
    );

    let device = gpu.device();
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let data = gpu
        .upload_layout(
            &bytes,
            &Layout::contiguous(DType::U8, &[bytes.len()]).unwrap(),
        )
        .unwrap();
    let out = gpu
        .upload_layout(
            &vec![0xEEu8; want.len() * 4],
            &Layout::contiguous(DType::U32, &[want.len()]).unwrap(),
        )
        .unwrap();
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("plan"),
        source: wgpu::ShaderSource::Wgsl(source.clone().into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("plan"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let mut entries: Vec<wgpu::BindGroupEntry<'_>> = (0..plan.alternatives())
        .map(|a| wgpu::BindGroupEntry {
            binding: a as u32,
            resource: data.buffer().unwrap().as_entire_binding(),
        })
        .collect();
    entries.push(wgpu::BindGroupEntry {
        binding: out_binding as u32,
        resource: out.buffer().unwrap().as_entire_binding(),
    });
    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("plan"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &entries,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(1, 1, 1);
    }
    gpu.queue().submit([encoder.finish()]);
    let error = pollster::block_on(scope.pop());
    assert!(error.is_none(), "{error:?}\n{source}");
    let got = out.download().unwrap();
    let got: Vec<u32> = got.view::<u32>().unwrap().iter().collect();
    assert_eq!(got, want, "\n{source}");
}

#[test]
fn a_plan_reads_the_same_on_cpu_and_gpu() {
    let Some(gpu) = gpu() else { return };
    assert!(
        gpu.device().features().contains(wgpu::Features::SHADER_F16),
        "lavapipe and current GPUs have shader-f16; this adapter does not"
    );
    // float16 fields put padding between 4-byte fields: 2 bytes after `h`,
    // 2 after `g`.
    let mut plan = Plan::named("Particle").unwrap();
    plan.field("h", DType::F16, &[3])
        .unwrap()
        .field("pos", DType::F32, &[2, 3])
        .unwrap()
        .field("g", DType::F16, &[1])
        .unwrap()
        .field("id", DType::U32, &[])
        .unwrap()
        .field("delta", DType::I32, &[4])
        .unwrap();
    assert_eq!(plan.fields()[1].offset(), 8);
    assert_eq!(plan.fields()[3].offset(), 36);
    assert_eq!(plan.padding(0).collect::<Vec<_>>(), [6..8, 34..36]);
    check_plan_on_gpu(gpu, &plan);

    // The seed's overlapping arrays: float32 A, B, C and int32 D, E over the
    // same bytes, as two structs bound to one buffer.
    let mut seed = Plan::named("Seed").unwrap();
    seed.field("a", DType::F32, &[4])
        .unwrap()
        .field("b", DType::F32, &[4])
        .unwrap()
        .field("c", DType::F32, &[4])
        .unwrap()
        .union()
        .unwrap()
        .field("d", DType::I32, &[6])
        .unwrap()
        .field("e", DType::I32, &[5])
        .unwrap();
    assert_eq!(seed.alternatives(), 2);
    check_plan_on_gpu(gpu, &seed);
}
