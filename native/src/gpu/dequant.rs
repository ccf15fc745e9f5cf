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
    /// [`GpuError::Dequantize`] where `blocks` holds no blocks or `to` is
    /// another dtype; [`GpuError::TooLarge`] where the blocks or the values
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
        let count = blocks.nbytes() as u64 / block_bytes;
        let passes = wgsl::passes(*ggml, count, to, max_binding).ok_or_else(refuse)?;
        let out_layout = Layout::contiguous(to, values.shape())?;
        for (what, bytes) in [
            ("blocks", blocks.padded_size()),
            ("values", out_layout.nbytes() as u64),
        ] {
            if bytes > inner.max_segment {
                return Err(GpuError::TooLarge {
                    what: format!("the {ggml} tensor's {what}"),
                    bytes,
                    limit: "maxBufferSize",
                    max: inner.max_segment,
                });
            }
        }
        let pipeline = self.dequant_pipeline(*ggml, to)?;
        let out = self.alloc(&out_layout)?;
        if passes.is_empty() {
            return Ok(out);
        }
        let scopes = Scopes::push(&inner.device);
        self.run_passes(
            &pipeline,
            &passes,
            blocks.segments[0].clone(),
            out.segments[0].clone(),
        );
        scopes.pop("dequantisation")?;
        Ok(out)
    }

    /// Records and submits `passes` of `pipeline` from `src` into `dst`,
    /// each with its uniform at its own 256-byte offset of one buffer.
    fn run_passes(
        &self,
        pipeline: &wgpu::ComputePipeline,
        passes: &[DequantPass],
        src: wgpu::Buffer,
        dst: wgpu::Buffer,
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
                            resource: binding(&src, pass.src_offset, pass.src_size),
                        },
                        wgpu::BindGroupEntry {
                            binding: 1,
                            resource: binding(&dst, pass.dst_offset, pass.dst_size),
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
