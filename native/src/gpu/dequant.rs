//! Dequantising on the GPU: [`GpuContext::dequantize`] runs the core's
//! WGSL shaders ([`bytelens_core::files::wgsl`], the same the wasm package
//! gives the browser) over a buffer of ggml blocks, in passes within the
//! device's binding limit, into a new buffer of float32, float16 or
//! bfloat16 values.

use std::collections::HashMap;
use std::sync::Mutex;

use bytelens_core::files::GgmlType;
use bytelens_core::files::wgsl::{self, DequantPass, OFFSET_ALIGN, PARAMS_BYTES};
use bytelens_core::{DType, Layout};

use super::error::Scopes;
use super::ring::lock;
use super::{GpuBuffer, GpuContext, GpuError};

/// `size` bytes of `buffer` from `offset`, bound.
fn binding(buffer: &wgpu::Buffer, offset: u64, size: u64) -> wgpu::BindingResource<'_> {
    wgpu::BindingResource::Buffer(wgpu::BufferBinding {
        buffer,
        offset,
        size: wgpu::BufferSize::new(size),
    })
}

/// Compiled dequantising pipelines of a context, by block type and output dtype.
pub(super) type Pipelines = Mutex<HashMap<(GgmlType, DType), wgpu::ComputePipeline>>;

impl GpuContext {
    /// The values `blocks` holds (a buffer of quantised blocks, as
    /// [`load`](Self::load) without a `to` makes, [`GpuBuffer::quantized`])
    /// dequantised on the GPU into a new buffer of `to` (float32, float16 or
    /// bfloat16), in C order, the shape of the values. The shader is the
    /// core's ([`bytelens_core::files::wgsl::shader`]): its values are the
    /// CPU's bit for bit for finite scales (the module's documentation says
    /// where WGSL allows otherwise). The buffers stay on the GPU; nothing
    /// crosses to the host.
    ///
    /// A `to` of another dtype is the CPU's error for it
    /// ([`check_dequantize_to`](crate::check_dequantize_to), kind
    /// `Dequantize`); [`GpuError::Dequantize`] where `blocks` holds no
    /// blocks; [`GpuError::TooLarge`] where the blocks or the values
    /// do not fit one buffer of the device (`maxBufferSize`).
    ///
    /// # Examples
    /// ```no_run
    /// use bytelens::{DType, MapMode, MappedFile, gpu::GpuContext};
    /// let gpu = GpuContext::new()?;
    /// // SAFETY: nothing shrinks the file while it is mapped.
    /// let file = unsafe { MappedFile::open("model.gguf".as_ref(), MapMode::Read) }?;
    /// for (name, buffer) in gpu.load(file.as_bytes(), None)? {
    ///     if buffer.quantized().is_some() {
    ///         let values = gpu.dequantize(&buffer, DType::F16)?;
    ///         println!("{name}: {:?} float16 on the GPU", values.layout().shape());
    ///     }
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dequantize(&self, blocks: &GpuBuffer, to: DType) -> Result<GpuBuffer, GpuError> {
        let max_binding = self.inner.device.limits().max_storage_buffer_binding_size;
        self.dequantize_within(blocks, to, max_binding)
    }

    /// [`dequantize`](Self::dequantize) in passes that bind at most
    /// `max_binding` bytes (at most the device's limit): for tests of the
    /// passes, which a device's real limit makes only for large tensors.
    #[doc(hidden)]
    pub fn dequantize_within(
        &self,
        blocks: &GpuBuffer,
        to: DType,
        max_binding: u64,
    ) -> Result<GpuBuffer, GpuError> {
        crate::check_dequantize_to(bytelens_core::Descr::native(to)).map_err(GpuError::Host)?;
        let Some((ggml, values)) = &blocks.quantized else {
            return Err(GpuError::Dequantize(format!(
                "the buffer holds {} data, not quantised blocks",
                blocks.layout.dtype().name()
            )));
        };
        let refuse = || {
            GpuError::Dequantize(format!(
                "no shader dequantises {ggml} blocks into {} (float32, float16 and bfloat16 only)",
                to.name()
            ))
        };
        let inner = &self.inner;
        let max_binding = max_binding.min(inner.device.limits().max_storage_buffer_binding_size);
        let block_bytes = u64::from(ggml.info().bytes);
        let values_bytes = u64::from(ggml.info().block) * to.size() as u64;
        let count = blocks.nbytes() as u64 / block_bytes;
        let step = wgsl::pass_step(*ggml, to);
        // Checked once here for the smallest run; each run's passes again.
        wgsl::passes(*ggml, count.min(step), to, max_binding).ok_or_else(refuse)?;
        let out_layout = Layout::contiguous(to, values.shape())?;
        // The blocks are read through one binding; the values may span
        // several buffers (segments), as a plain upload's do.
        if blocks.segments.len() > 1 || blocks.padded_size() > inner.max_segment {
            return Err(GpuError::TooLarge {
                what: format!("the {ggml} tensor's blocks"),
                bytes: blocks.padded_size(),
                limit: "maxBufferSize",
                max: inner.max_segment,
            });
        }
        let pipeline = self.dequant_pipeline(*ggml, to)?;
        let out = self.alloc(&out_layout)?;
        if count == 0 {
            return Ok(out);
        }
        let src = &blocks.segments[0];
        let runs = runs(count, step, values_bytes, inner.max_segment);
        let scratch_size = (step * values_bytes).min(count * values_bytes);
        let scopes = Scopes::push(&inner.device);
        let scratch = runs
            .iter()
            .any(|r| matches!(r.into, Target::Scratch(_)))
            .then(|| {
                inner.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("bytelens dequantisation across segments"),
                    size: scratch_size,
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                })
            });
        for run in &runs {
            let passes = wgsl::passes(*ggml, run.count, to, max_binding).ok_or_else(refuse)?;
            let src_shift = run.first * block_bytes;
            match (&run.into, &scratch) {
                (Target::Segment { segment, offset }, _) => {
                    let dst = &out.segments[*segment];
                    self.run_passes(&pipeline, &passes, (src, src_shift), (dst, *offset));
                }
                (Target::Scratch(copies), Some(scratch)) => {
                    self.run_passes(&pipeline, &passes, (src, src_shift), (scratch, 0));
                    let mut encoder =
                        inner
                            .device
                            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                                label: Some("bytelens dequantisation across segments"),
                            });
                    for c in copies {
                        encoder.copy_buffer_to_buffer(
                            scratch,
                            c.from,
                            &out.segments[c.segment],
                            c.to,
                            c.len,
                        );
                    }
                    inner.queue.submit([encoder.finish()]);
                }
                (Target::Scratch(_), None) => unreachable!("made above when a run needs it"),
            }
        }
        scopes.pop("dequantisation")?;
        Ok(out)
    }

    /// Records and submits `passes` of `pipeline` from `src` into `dst`
    /// (each a buffer, and where in it the passes' offsets count from: a
    /// multiple of 256), each with its uniform at its own 256-byte offset
    /// of one buffer.
    fn run_passes(
        &self,
        pipeline: &wgpu::ComputePipeline,
        passes: &[DequantPass],
        (src, src_shift): (&wgpu::Buffer, u64),
        (dst, dst_shift): (&wgpu::Buffer, u64),
    ) {
        let device = &self.inner.device;
        let mut params = vec![0u8; passes.len() * OFFSET_ALIGN as usize];
        for (pass, at) in passes
            .iter()
            .zip(params.chunks_exact_mut(OFFSET_ALIGN as usize))
        {
            at[..PARAMS_BYTES as usize].copy_from_slice(&pass.params());
        }
        let uniform = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("bytelens dequantisation passes"),
            size: params.len() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        self.inner.queue.write_buffer(&uniform, 0, &params);
        let layout = pipeline.get_bind_group_layout(0);
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("bytelens dequantisation"),
        });
        {
            let mut compute = encoder.begin_compute_pass(&Default::default());
            compute.set_pipeline(pipeline);
            for (i, pass) in passes.iter().enumerate() {
                let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("bytelens dequantisation pass"),
                    layout: &layout,
                    entries: &[
                        wgpu::BindGroupEntry {
                            binding: 0,
                            resource: binding(src, src_shift + pass.src_offset, pass.src_size),
                        },
                        wgpu::BindGroupEntry {
                            binding: 1,
                            resource: binding(dst, dst_shift + pass.dst_offset, pass.dst_size),
                        },
                        wgpu::BindGroupEntry {
                            binding: 2,
                            resource: binding(&uniform, i as u64 * OFFSET_ALIGN, PARAMS_BYTES),
                        },
                    ],
                });
                compute.set_bind_group(0, &group, &[]);
                compute.dispatch_workgroups(pass.groups[0], pass.groups[1], 1);
            }
        }
        self.inner.queue.submit([encoder.finish()]);
    }

    /// The compiled shader for `ggml` into `to`, made once per context.
    fn dequant_pipeline(
        &self,
        ggml: GgmlType,
        to: DType,
    ) -> Result<wgpu::ComputePipeline, GpuError> {
        let inner = &self.inner;
        let mut cache = lock(&inner.pipelines);
        if let Some(pipeline) = cache.get(&(ggml, to)) {
            return Ok(pipeline.clone());
        }
        let source = wgsl::shader(ggml, to).ok_or_else(|| {
            GpuError::Dequantize(format!("no shader for {ggml} into {}", to.name()))
        })?;
        let scopes = Scopes::push(&inner.device);
        let module = inner
            .device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(ggml.name()),
                source: wgpu::ShaderSource::Wgsl(source.into()),
            });
        let pipeline = inner
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(ggml.name()),
                layout: None,
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            });
        scopes.pop("shader compilation")?;
        cache.insert((ggml, to), pipeline.clone());
        Ok(pipeline)
    }
}

/// One run of a tensor's blocks, dequantised by one call of
/// [`wgsl::passes`]: its first block, how many, and where its values go.
#[derive(Debug, PartialEq)]
struct Run {
    first: u64,
    count: u64,
    into: Target,
}

/// Where a [`Run`]'s values go.
#[derive(Debug, PartialEq)]
enum Target {
    /// Straight into one segment of the output, from byte `offset` of it.
    Segment { segment: usize, offset: u64 },
    /// Into the scratch buffer, then copied piece by piece to the
    /// segments it spans (a run of one step across a segment's end).
    Scratch(Vec<Piece>),
}

/// `len` bytes from `from` of the scratch buffer to `to` of `segment`.
#[derive(Debug, PartialEq)]
struct Piece {
    segment: usize,
    from: u64,
    to: u64,
    len: u64,
}

/// The runs that dequantise `count` blocks (`values_bytes` of values each)
/// into an output cut into segments of `segment` bytes (a multiple of 256),
/// each run starting at a multiple of `step` blocks
/// ([`wgsl::pass_step`]): the steps wholly inside one segment as one run
/// into it, and each step across a segment's end on its own, through the
/// scratch buffer. Every offset is a multiple of 256, every length of 4.
fn runs(count: u64, step: u64, values_bytes: u64, segment: u64) -> Vec<Run> {
    let total = count * values_bytes;
    let unit = step * values_bytes;
    let steps = count.div_ceil(step);
    let bytes = |k: u64| (k * unit).min(total);
    let mut runs = Vec::new();
    let mut k = 0;
    while k < steps {
        let (start, end) = (bytes(k), bytes(k + 1));
        let (first_segment, last_segment) = (start / segment, (end - 1) / segment);
        if first_segment == last_segment {
            // Every step that ends by this segment's end.
            let segment_end = ((first_segment + 1) * segment).min(total);
            let after = if segment_end == total {
                steps
            } else {
                segment_end / unit
            };
            runs.push(Run {
                first: k * step,
                count: (after * step).min(count) - k * step,
                into: Target::Segment {
                    segment: first_segment as usize,
                    offset: start - first_segment * segment,
                },
            });
            k = after;
        } else {
            let pieces = (first_segment..=last_segment)
                .map(|s| {
                    let (from, to) = (start.max(s * segment), end.min((s + 1) * segment));
                    Piece {
                        segment: s as usize,
                        from: from - start,
                        to: from - s * segment,
                        len: to - from,
                    }
                })
                .collect();
            runs.push(Run {
                first: k * step,
                count: ((k + 1) * step).min(count) - k * step,
                into: Target::Scratch(pieces),
            });
            k += 1;
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each value byte of the output written exactly once, at the place
    /// its block puts it, by the runs' direct writes and copies.
    fn check(count: u64, step: u64, values_bytes: u64, segment: u64) {
        let total = count * values_bytes;
        let mut written = vec![0u32; total as usize];
        let mut next_block = 0;
        for run in runs(count, step, values_bytes, segment) {
            assert_eq!(run.first, next_block, "runs in order, none missing");
            assert_eq!(run.first % step, 0, "a run starts at a step");
            next_block += run.count;
            let start = run.first * values_bytes;
            let len = run.count * values_bytes;
            match run.into {
                Target::Segment { segment: s, offset } => {
                    assert_eq!(offset % 256, 0);
                    let at = s as u64 * segment + offset;
                    assert_eq!(at, start);
                    assert!(offset + len <= segment, "inside its segment");
                    for b in at..at + len {
                        written[b as usize] += 1;
                    }
                }
                Target::Scratch(pieces) => {
                    assert!(len <= step * values_bytes && pieces.len() > 1);
                    for p in pieces {
                        assert_eq!((p.from % 4, p.to % 256, p.len % 4), (0, 0, 0));
                        assert!(p.to + p.len <= segment);
                        let at = p.segment as u64 * segment + p.to;
                        assert_eq!(at, start + p.from);
                        for b in at..at + p.len {
                            written[b as usize] += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(next_block, count);
        assert!(
            written.iter().all(|&w| w == 1),
            "{count} {step} {values_bytes} {segment}"
        );
    }

    #[test]
    #[cfg_attr(miri, ignore = "safe arithmetic: nothing for Miri to check")]
    fn runs_cover_every_value_once_across_segments() {
        for (step, values_bytes) in [(128, 128), (64, 64), (2, 1024), (1, 512), (32, 64)] {
            for segment in [256, 768, 4096, 5120, 1 << 16, 1 << 20] {
                for count in [1, 2, 3, 63, 64, 65, 127, 128, 129, 1000, 4099] {
                    check(count, step, values_bytes, segment);
                }
            }
        }
    }
}
