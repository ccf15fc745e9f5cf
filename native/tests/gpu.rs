//! GPU round trips and a compute shader over a Plan, on a real Vulkan
//! adapter (Mesa's lavapipe in CI, installed by `cargo xtask test`).
//!
//! Without an adapter these tests fail when `BYTELENS_REQUIRE_GPU` or `CI`
//! is set (as `cargo xtask test` and CI do) and otherwise skip, saying why.

mod support;

use bytelens::gpu::{GpuBuffer, GpuContext, GpuError, GpuOptions, GpuTexture, wgpu};
use bytelens::{Buffer, ByteOrder, DType, Descr, Error, Layout, Plan, copy_into, gather_into};
use support::gpu;

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
    let up = gpu.upload((bytes, layout)).buffer().unwrap();
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
    let err = gpu.upload((&[0; 4], &huge)).buffer().unwrap_err();
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
        .upload((&bytes, &Layout::contiguous(DType::U8, &[5]).unwrap()))
        .buffer()
        .unwrap();
    // Read all 8 bytes on the GPU through a second upload's buffer copy.
    let mut whole = gpu
        .upload((&[1u8; 8], &Layout::contiguous(DType::U8, &[8]).unwrap()))
        .buffer()
        .unwrap();
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(up.buffer().unwrap(), 0, whole.buffer().unwrap(), 0, 8);
    gpu.queue().submit([encoder.finish()]);
    assert_eq!(
        whole.download().unwrap().as_bytes(),
        [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0]
    );

    let empty = gpu
        .upload((&bytes, &Layout::contiguous(DType::I32, &[0, 3]).unwrap()))
        .buffer()
        .unwrap();
    assert_eq!((empty.nbytes(), empty.padded_size()), (0, 4));
    assert!(empty.download().unwrap().is_empty());
    // upload_into rewrites in place; sizes must match.
    gpu.upload((&[9u8; 8], &Layout::contiguous(DType::U8, &[8]).unwrap()))
        .write_into(&mut whole)
        .unwrap();
    assert_eq!(whole.download().unwrap().as_bytes(), [9; 8]);
    let err = gpu
        .upload((&[9u8; 8], &Layout::contiguous(DType::U8, &[4]).unwrap()))
        .write_into(&mut whole)
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
    let up = gpu
        .upload(&buf.view_as::<f32>(t).unwrap())
        .buffer()
        .unwrap();
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
    let blocks = GpuContext::with_options(GpuOptions {
        host_writes_in_place: false,
        ..GpuOptions::default()
    })
    .unwrap();
    for gpu in [gpu, &staged, &blocks] {
        for (view, to) in [
            (layout.transpose(), little_f32),
            (layout, Descr::new(DType::F64, ByteOrder::Little)),
            (layout.slice(1, None, None, -3).unwrap(), little_f32),
        ] {
            let up = gpu.upload((&big, &view)).to(to).buffer().unwrap();
            let mut host = vec![0; view.size() * to.dtype.size()];
            copy_into(&big, &view, &mut host, to).unwrap();
            assert_eq!(up.download().unwrap().as_bytes(), host, "{view:?} as {to}");
            assert_eq!(up.layout().descr(), to);
            assert_eq!(up.layout().shape(), view.shape());
        }
        let t = layout.transpose();
        let up = gpu.upload((&big, &t)).to(little_f32).buffer().unwrap();
        let back = up.download().unwrap();
        let back = back.view_as::<f32>(up.layout()).unwrap();
        assert_eq!(back.get(&[3, 7]).unwrap(), values[7 * 80 + 3] as f32);
    }
    // A refused conversion is the host's error, before anything is uploaded.
    let err = gpu
        .upload((&big, &layout))
        .to(Descr::native(DType::I32))
        .buffer()
        .unwrap_err();
    assert!(matches!(err, GpuError::Host(Error::Cast { .. })), "{err:?}");
    assert!(err.to_string().contains("float64"), "{err}");
}

/// Every way an upload writes: staged or in place (where memory is
/// unified), each through a block in cache or, on a CPU adapter, by the
/// copy kernel straight into mapped memory.
const PATHS: [(bool, bool); 4] = [(false, false), (false, true), (true, false), (true, true)];

#[test]
fn uploads_larger_than_the_ring_and_the_buffer_limit_are_chunked() {
    let Some(_) = gpu() else { return };
    // Two 256-byte staging buffers and 1 KiB wgpu buffers: a 10,001-byte
    // view takes 40 chunks and 10 buffers.
    // Staged, and written straight into the buffers where memory is unified.
    for (direct_upload, host_writes_in_place) in PATHS {
        let small = GpuContext::with_options(GpuOptions {
            staging_chunk: 256,
            staging_slots: 2,
            max_buffer_size: Some(1024),
            direct_upload,
            host_writes_in_place,
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
    for (direct_upload, host_writes_in_place) in PATHS {
        let three = GpuContext::with_options(GpuOptions {
            upload_threads: 3,
            staging_chunk: 1 << 20,
            max_buffer_size: Some(3 << 20),
            direct_upload,
            host_writes_in_place,
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
        .upload((&[0u8; 8], &Layout::contiguous(DType::I32, &[3]).unwrap()))
        .buffer()
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
        .upload((&[1u8; 16], &Layout::contiguous(DType::U8, &[16]).unwrap()))
        .buffer()
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
        .upload((&[1u8; 12], &Layout::contiguous(DType::U8, &[12]).unwrap()))
        .buffer()
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
        let mut dst = small.upload((&bytes, &l)).buffer().unwrap();
        dst.buffers()[1].destroy();
        for err in [
            small.upload((&bytes, &l)).write_into(&mut dst).unwrap_err(),
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
        .upload((
            &bytes,
            &Layout::contiguous(DType::U8, &[bytes.len()]).unwrap(),
        ))
        .buffer()
        .unwrap();
    let out = gpu
        .upload((
            &vec![0xEEu8; want.len() * 4],
            &Layout::contiguous(DType::U32, &[want.len()]).unwrap(),
        ))
        .buffer()
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

/// What a texture upload of `layout` must read back as: the view's
/// elements in C order, in little-endian order.
fn expected_le(bytes: &[u8], layout: &Layout) -> Vec<u8> {
    let mut out = vec![0; layout.nbytes()];
    let le = Descr::new(layout.dtype(), ByteOrder::Little);
    copy_into(bytes, layout, &mut out, le).unwrap();
    out
}

/// Uploads `layout` over `bytes` as a texture (a volume when `volume`),
/// checks its format, size and what it reads back, and returns it.
fn texture_round_trip(
    gpu: &GpuContext,
    bytes: &[u8],
    layout: &Layout,
    volume: bool,
    format: &str,
    size: [u32; 3],
) -> GpuTexture {
    let up = gpu.upload((bytes, layout));
    let texture = if volume {
        up.volume(None)
    } else {
        up.texture(None)
    }
    .unwrap_or_else(|err| panic!("{layout:?}: {err}"));
    assert_eq!(texture.format_name(), format, "{layout:?}");
    let got = texture.size();
    assert_eq!(
        [got.width, got.height, got.depth_or_array_layers],
        size,
        "{layout:?}"
    );
    let back = texture.download().unwrap();
    assert_eq!(texture.layout().shape(), layout.shape());
    assert!(back.as_bytes() == expected_le(bytes, layout), "{layout:?}");
    texture
}

/// The texture's texels as the GPU holds them (alpha included), rows unpadded.
fn raw_texels(gpu: &GpuContext, texture: &GpuTexture) -> Vec<u8> {
    let size = texture.size();
    let texel = texture.format().block_copy_size(None).unwrap();
    let row = size.width * texel;
    let pitch = row.div_ceil(256) * 256;
    let rows = size.height * size.depth_or_array_layers;
    let buffer = gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: u64::from(pitch * rows),
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    encoder.copy_texture_to_buffer(
        texture.texture().as_image_copy(),
        wgpu::TexelCopyBufferInfo {
            buffer: &buffer,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(pitch),
                rows_per_image: Some(size.height),
            },
        },
        size,
    );
    gpu.queue().submit([encoder.finish()]);
    buffer.map_async(wgpu::MapMode::Read, .., |r| r.unwrap());
    gpu.device()
        .poll(wgpu::PollType::wait_indefinitely())
        .unwrap();
    let mapped = buffer.get_mapped_range(..).unwrap();
    mapped
        .chunks(pitch as usize)
        .flat_map(|r| r[..row as usize].to_vec())
        .collect()
}

#[test]
fn images_and_volumes_round_trip_through_textures() {
    let Some(gpu) = gpu() else { return };
    let bytes = pattern(1 << 20, 7);
    let c = |dtype, shape: &[usize]| Layout::contiguous(dtype, shape).unwrap();
    // Odd widths (rows padded to 256 bytes), each element and channel count.
    let cases = [
        (c(DType::U8, &[5, 3]), "r8unorm", [3, 5, 1]),
        (c(DType::U8, &[4, 7, 2]), "rg8unorm", [7, 4, 1]),
        (c(DType::U8, &[6, 9, 4]), "rgba8unorm", [9, 6, 1]),
        (c(DType::I8, &[3, 5, 1]), "r8snorm", [5, 3, 1]),
        (c(DType::U16, &[7, 33, 2]), "rg16uint", [33, 7, 1]),
        (c(DType::I16, &[2, 3, 4]), "rgba16sint", [3, 2, 1]),
        (c(DType::F16, &[9, 70, 4]), "rgba16float", [70, 9, 1]),
        (c(DType::U32, &[3, 5]), "r32uint", [5, 3, 1]),
        (c(DType::I32, &[2, 65, 2]), "rg32sint", [65, 2, 1]),
        (c(DType::F32, &[17, 129, 4]), "rgba32float", [129, 17, 1]),
        // Array layers, and volumes.
        (c(DType::U8, &[3, 5, 7, 4]), "rgba8unorm", [7, 5, 3]),
        (c(DType::F32, &[4, 6, 5, 1]), "r32float", [5, 6, 4]),
    ];
    for (layout, format, size) in &cases {
        texture_round_trip(gpu, &bytes, layout, false, format, *size);
    }
    texture_round_trip(
        gpu,
        &bytes,
        &c(DType::U16, &[3, 4, 5]),
        true,
        "r16uint",
        [5, 4, 3],
    );
    let rgba = c(DType::F16, &[3, 4, 5, 4]);
    texture_round_trip(gpu, &bytes, &rgba, true, "rgba16float", [5, 4, 3]);

    // Crops, flips, transposes and big-endian views go up as they read.
    let image = c(DType::U8, &[64, 80, 4]);
    let crop = image
        .slice(0, Some(5), Some(45), 1)
        .unwrap()
        .slice(1, Some(70), Some(3), -3)
        .unwrap();
    texture_round_trip(gpu, &bytes, &crop, false, "rgba8unorm", [23, 40, 1]);
    let t = c(DType::F32, &[40, 30]).transpose();
    texture_round_trip(gpu, &bytes, &t, false, "r32float", [40, 30, 1]);
    let big = c(DType::U16, &[20, 30, 2]).with_byte_order(ByteOrder::Big);
    texture_round_trip(gpu, &bytes, &big, false, "rg16uint", [30, 20, 1]);
}

#[test]
fn rgb_is_widened_to_rgba_with_an_opaque_alpha() {
    let Some(gpu) = gpu() else { return };
    let bytes = pattern(1 << 20, 3);
    let c = |dtype, shape: &[usize]| Layout::contiguous(dtype, shape).unwrap();
    // (element, its "one" in little-endian bytes, format)
    let cases: [(DType, &[u8], &str); 6] = [
        (DType::U8, &[0xFF], "rgba8unorm"),
        (DType::I8, &[0x7F], "rgba8snorm"),
        (DType::U16, &[1, 0], "rgba16uint"),
        (DType::F16, &[0x00, 0x3C], "rgba16float"),
        (DType::I32, &[1, 0, 0, 0], "rgba32sint"),
        (DType::F32, &1f32.to_le_bytes(), "rgba32float"),
    ];
    for (dtype, one, format) in cases {
        // A flipped RGB image: the widening happens in the gather pass.
        let rgb = c(dtype, &[11, 13, 3]).slice(0, None, None, -1).unwrap();
        let texture = texture_round_trip(gpu, &bytes, &rgb, false, format, [13, 11, 1]);
        let raw = raw_texels(gpu, &texture);
        let size = dtype.size();
        let want = expected_le(&bytes, &rgb);
        for (texel, (rgba, rgb)) in raw.chunks(4 * size).zip(want.chunks(3 * size)).enumerate() {
            assert_eq!(&rgba[..3 * size], rgb, "{format} texel {texel}");
            assert_eq!(&rgba[3 * size..], one, "{format} texel {texel}");
        }
    }
    // A format asked for by name: sRGB, with an RGB view widened into it.
    let srgb = wgpu::TextureFormat::Rgba8UnormSrgb;
    let texture = gpu
        .upload((&bytes, &c(DType::U8, &[4, 4, 3])))
        .texture(Some(srgb))
        .unwrap();
    assert_eq!(
        (texture.format(), texture.format_name()),
        (srgb, "rgba8unorm-srgb")
    );
}

#[test]
fn textures_larger_than_a_staging_chunk_and_rows_past_it() {
    let Some(_) = gpu() else { return };
    let bytes = pattern(4 << 20, 9);
    let layout = Layout::contiguous(DType::U8, &[300, 1000, 3]).unwrap();
    // 4000-byte rows: a few per 16 KiB chunk, none per 1 KiB chunk
    // (then written row by row through the queue); layers split across slots.
    for chunk in [16 << 10, 1 << 10] {
        let small = GpuContext::with_options(GpuOptions {
            staging_chunk: chunk,
            ..GpuOptions::default()
        })
        .unwrap();
        texture_round_trip(&small, &bytes, &layout, false, "rgba8unorm", [1000, 300, 1]);
        let layers = Layout::contiguous(DType::U8, &[5, 3, 700, 4]).unwrap();
        texture_round_trip(&small, &bytes, &layers, false, "rgba8unorm", [700, 3, 5]);
    }
}

#[test]
fn textures_refuse_what_no_format_holds() {
    let Some(gpu) = gpu() else { return };
    let bytes = [0u8; 4096];
    let c = |dtype, shape: &[usize]| Layout::contiguous(dtype, shape).unwrap();
    let refused = |layout: Layout, format: Option<wgpu::TextureFormat>, volume: bool| {
        let up = gpu.upload((&bytes, &layout));
        let got = if volume {
            up.volume(format)
        } else {
            up.texture(format)
        };
        match got.unwrap_err() {
            GpuError::Texture(reason) => reason,
            other => panic!("{layout:?}: expected a texture refusal, got {other:?}"),
        }
    };
    let limits = gpu.limits();
    let reasons = [
        (refused(c(DType::F64, &[4, 4]), None, false), "float64"),
        (refused(c(DType::BF16, &[4, 4]), None, false), "bfloat16"),
        (
            refused(c(DType::U8, &[4, 4, 5]), None, false),
            "(5) is no channel count",
        ),
        (refused(c(DType::U8, &[0, 4]), None, false), "empty"),
        (refused(c(DType::U8, &[8]), None, false), "2-D texture"),
        (
            refused(c(DType::U8, &[2, 2, 2, 2, 2]), None, true),
            "3-D texture",
        ),
        (
            refused(
                c(DType::F32, &[4, 4]),
                Some(wgpu::TextureFormat::R16Float),
                false,
            ),
            "r16float holds float16 channels",
        ),
        (
            refused(
                c(DType::U8, &[4, 4, 2]),
                Some(wgpu::TextureFormat::Rgba8Unorm),
                false,
            ),
            "rgba8unorm has 4 channels, and the view has 2",
        ),
    ];
    for (reason, part) in reasons {
        assert!(reason.contains(part), "{reason:?} lacks {part:?}");
    }
    // Sizes past the adapter's limits name the limit (a stride-0 view: no
    // bytes needed).
    let wide = limits.max_texture_dimension_2d as usize + 1;
    let past = Layout::new(DType::U8, 0, &[1, wide], &[0, 0]).unwrap();
    let reason = refused(past, None, false);
    assert!(reason.contains("max_texture_dimension_2d"), "{reason}");
    assert!(reason.contains(&wide.to_string()), "{reason}");
    let layers = limits.max_texture_array_layers as usize + 1;
    let past = Layout::new(DType::U8, 0, &[layers, 1, 1, 1], &[0, 0, 0, 0]).unwrap();
    assert!(refused(past, None, false).contains("max_texture_array_layers"));
    let deep = limits.max_texture_dimension_3d as usize + 1;
    let past = Layout::new(DType::U8, 0, &[deep, 1, 1], &[0, 0, 0]).unwrap();
    assert!(refused(past, None, true).contains("max_texture_dimension_3d"));
    // .to() is the buffer uploads'; a texture's element is its format's.
    let err = gpu
        .upload((&bytes, &c(DType::U8, &[4, 4])))
        .to(Descr::native(DType::U16))
        .texture(None)
        .unwrap_err();
    assert!(matches!(err, GpuError::Texture(_)), "{err}");
}

/// A safetensors file of `tensors` (name, dtype, shape, data), its JSON
/// header padded with `pad` spaces (which moves every tensor's offset).
fn safetensors(tensors: &[(&str, &str, &[usize], Vec<u8>)], pad: usize) -> Vec<u8> {
    let mut entries = vec![];
    let mut at = 0;
    for (name, dtype, shape, data) in tensors {
        let shape: Vec<String> = shape.iter().map(|n| n.to_string()).collect();
        entries.push(format!(
            "\"{name}\":{{\"dtype\":\"{dtype}\",\"shape\":[{}],\"data_offsets\":[{at},{}]}}",
            shape.join(","),
            at + data.len()
        ));
        at += data.len();
    }
    let header = format!("{{{}}}{}", entries.join(","), " ".repeat(pad));
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend(header.as_bytes());
    for (.., data) in tensors {
        file.extend(data);
    }
    file
}

#[test]
fn files_load_to_the_gpu_array_by_array() {
    let Some(gpu) = gpu() else { return };
    let a = pattern(4 * 30 * 17, 1);
    let b = pattern(2 * 1000, 2);
    let c = pattern(8 * 3, 3);
    let tensors = [
        ("weight", "F32", &[30, 17][..], a.clone()),
        ("bias", "BF16", &[1000][..], b.clone()),
        ("steps", "I64", &[3][..], c.clone()),
    ];
    // Aligned, then every tensor moved off its alignment (copied first).
    for pad in [0, 1, 2] {
        let file = safetensors(&tensors, pad);
        let path = std::env::temp_dir().join(format!("bytelens-load-{}-{pad}", std::process::id()));
        std::fs::write(&path, &file).unwrap();
        // SAFETY: the file is this test's own; nothing shrinks it while mapped.
        let mapped = unsafe { bytelens::MappedFile::open(&path, bytelens::MapMode::Read) }.unwrap();
        let loaded = gpu.load(mapped.as_bytes(), None).unwrap();
        let names: Vec<&str> = loaded.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["weight", "bias", "steps"]);
        for ((_, buffer), (_, _, shape, data)) in loaded.iter().zip(&tensors) {
            assert_eq!(buffer.layout().shape(), *shape);
            assert!(
                buffer.download().unwrap().as_bytes() == &data[..],
                "pad {pad}"
            );
        }
        assert_eq!(loaded[0].1.layout().dtype(), DType::F32);
        assert_eq!(loaded[1].1.layout().dtype(), DType::BF16);
        // Converted on the way: bfloat16 and int64 do not cast to float16
        // (same_kind), so only the float32 tensor is converted here.
        let one = safetensors(&tensors[..1], pad);
        let half = gpu.load(&one, Some(Descr::native(DType::F16))).unwrap();
        let mut want = vec![0; 30 * 17 * 2];
        let l = Layout::contiguous(DType::F32, &[30, 17]).unwrap();
        copy_into(&a, &l, &mut want, Descr::native(DType::F16)).unwrap();
        assert_eq!(half[0].1.download().unwrap().as_bytes(), want);
        drop(mapped);
        std::fs::remove_file(&path).unwrap();
    }
    // An .npy file: its one array is "array", Fortran order read as it lies.
    let dict = "{'descr': '>u2', 'fortran_order': True, 'shape': (3, 5), }";
    let mut header = format!("{dict:<117}");
    header.push('\n');
    let mut npy = b"\x93NUMPY\x01\x00".to_vec();
    npy.extend((header.len() as u16).to_le_bytes());
    npy.extend(header.as_bytes());
    let data = pattern(30, 5);
    npy.extend(&data);
    let loaded = gpu.load(&npy, None).unwrap();
    assert_eq!(loaded.len(), 1);
    let (name, buffer) = &loaded[0];
    assert_eq!(name, "array");
    let f = Layout::new(DType::U16, 128, &[3, 5], &[2, 6])
        .unwrap()
        .with_byte_order(ByteOrder::Big);
    assert_eq!(buffer.download().unwrap().as_bytes(), expected(&npy, &f));
    // What it cannot read, it says, before uploading anything.
    let odd = safetensors(&[("z", "C64", &[2][..], vec![0; 16])], 0);
    let err = gpu.load(&odd, None).unwrap_err();
    assert!(
        matches!(&err, GpuError::FileArray { name, reason } if name == "z" && reason.contains("C64")),
        "{err}"
    );
    let err = gpu.load(b"not a file at all", None).unwrap_err();
    assert!(matches!(err, GpuError::File(_)), "{err}");
    assert!(std::error::Error::source(&err).is_some(), "{err}");
}
