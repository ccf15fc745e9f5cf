//! [`GpuContext`]: the adapter, a device with the adapter's own limits, and
//! the staging rings its uploads and downloads take turns on.

use std::fmt;
use std::sync::{Arc, Mutex};

use super::ring::{Ring, lock};
use super::{GpuError, GpuOptions};

/// A wgpu device and queue with reusable staging rings. Cheap to clone
/// (shared); usable from several threads (uploads take turns on the ring).
#[derive(Clone)]
pub struct GpuContext {
    pub(super) inner: Arc<Inner>,
}

/// What a context's clones share.
pub(super) struct Inner {
    adapter: wgpu::Adapter,
    pub(super) device: wgpu::Device,
    pub(super) queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    pub(super) chunk: u64,
    pub(super) slots: usize,
    pub(super) max_segment: u64,
    pub(super) usage: wgpu::BufferUsages,
    /// How uploads reach a buffer, chosen once, when the context is made.
    pub(super) path: UploadPath,
    /// A CPU adapter (lavapipe): its buffers are host memory.
    pub(super) host_memory: bool,
    /// The copy kernel writes mapped memory in place (a CPU adapter's,
    /// with `GpuOptions::host_writes_in_place`).
    pub(super) writes_in_place: bool,
    /// One upload ring per upload thread.
    pub(super) upload: Vec<Mutex<Ring>>,
    pub(super) readback: Mutex<Ring>,
    /// Dequantising shaders compiled so far.
    pub(super) pipelines: super::dequant::Pipelines,
    /// The first error wgpu raised outside any error scope (in the user's
    /// own wgpu calls on this device): kept instead of wgpu's default panic.
    uncaptured: Arc<Mutex<Option<String>>>,
}

impl fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpuContext")
            .field("adapter", &self.inner.info.name)
            .field("backend", &self.inner.info.backend)
            .field("staging_chunk", &self.inner.chunk)
            .field("staging_slots", &self.inner.slots)
            .field("max_segment", &self.inner.max_segment)
            .field("upload_path", &self.inner.path)
            .finish()
    }
}

impl Inner {
    /// Makes an upload ring's slots on first use: `MAP_WRITE` staging
    /// buffers of the context's chunk size, mapped.
    pub(super) fn ready_for_upload(&self, ring: &mut Ring) {
        let usage = wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC;
        ring.ensure(&self.device, self.slots, self.chunk, usage);
    }

    /// Makes the readback ring's slots on first use: `MAP_READ` buffers.
    pub(super) fn ready_for_readback(&self, ring: &mut Ring) {
        let usage = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST;
        ring.ensure(&self.device, self.slots, self.chunk, usage);
    }
}

/// How a context's uploads reach a GPU buffer, chosen once for its adapter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UploadPath {
    /// The destination buffer is mapped and written in place: on unified
    /// memory (integrated GPUs, CPU adapters such as lavapipe) with
    /// `MAPPABLE_PRIMARY_BUFFERS` and [`GpuOptions::direct_upload`].
    InPlace,
    /// Written into mapped staging buffers (the upload rings), each copied
    /// into the destination on the GPU while the next is written.
    Staged,
}

/// Rounds `n` up to a multiple of `to` (a power of two).
pub(super) fn round_up(n: u64, to: u64) -> u64 {
    n.div_ceil(to) * to
}

/// Most staging slots or upload threads a context takes.
const MAX_COUNT: usize = 64;

/// Segments and chunks are multiples of this: every element size divides
/// it, and it is wgpu's `MAP_ALIGNMENT` and binding-offset alignment.
const GRANULE: u64 = 256;

impl GpuContext {
    /// A context on the best adapter of [`GpuOptions::default`].
    pub fn new() -> Result<GpuContext, GpuError> {
        GpuContext::with_options(GpuOptions::default())
    }

    /// A context with these options. The device gets the adapter's own
    /// limits (wgpu's defaults cap buffers at 256 MiB) and `SHADER_F16` when
    /// the adapter has it.
    pub fn with_options(options: GpuOptions) -> Result<GpuContext, GpuError> {
        let counts = [
            ("staging_slots", options.staging_slots),
            ("upload_threads", options.upload_threads),
        ];
        for (name, n) in counts {
            if !(1..=MAX_COUNT).contains(&n) {
                return Err(GpuError::BadOptions(format!(
                    "{name} is {n}; it must be from 1 to {MAX_COUNT}"
                )));
            }
        }
        if options.staging_chunk == 0 {
            return Err(GpuError::BadOptions("staging_chunk is 0".into()));
        }
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends: options.backends,
            ..wgpu::InstanceDescriptor::new_without_display_handle()
        });
        let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: options.power_preference,
            ..Default::default()
        }))
        .map_err(|err| GpuError::NoAdapter {
            backends: format!("{:?}", options.backends),
            reason: err.to_string(),
        })?;
        let limits = adapter.limits();
        let info = adapter.get_info();
        let unified = matches!(
            info.device_type,
            wgpu::DeviceType::Cpu | wgpu::DeviceType::IntegratedGpu
        );
        let host_memory = info.device_type == wgpu::DeviceType::Cpu;
        let direct = options.direct_upload
            && unified
            && adapter
                .features()
                .contains(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS);
        let mut features = adapter.features() & wgpu::Features::SHADER_F16;
        let mut usage = options.usage | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC;
        let path = if direct {
            UploadPath::InPlace
        } else {
            UploadPath::Staged
        };
        if path == UploadPath::InPlace {
            features |= wgpu::Features::MAPPABLE_PRIMARY_BUFFERS;
            usage |= wgpu::BufferUsages::MAP_WRITE;
        }
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("bytelens"),
            required_features: features,
            required_limits: limits.clone(),
            ..Default::default()
        }))
        .map_err(|err| GpuError::Device(err.to_string()))?;
        let uncaptured = Arc::new(Mutex::new(None));
        let store = Arc::clone(&uncaptured);
        device.on_uncaptured_error(Arc::new(move |err: wgpu::Error| {
            let mut slot = store.lock().unwrap_or_else(|p| p.into_inner());
            slot.get_or_insert_with(|| err.to_string());
        }));
        let cap = options
            .max_buffer_size
            .map_or(limits.max_buffer_size, |cap| {
                cap.min(limits.max_buffer_size)
            });
        let max_segment = cap / GRANULE * GRANULE;
        if max_segment == 0 {
            return Err(GpuError::BadOptions(format!(
                "max_buffer_size {cap} is smaller than {GRANULE} bytes"
            )));
        }
        // Capped first, so rounding cannot overflow (max_segment is a multiple of GRANULE).
        let chunk = round_up(options.staging_chunk.min(max_segment), GRANULE);
        Ok(GpuContext {
            inner: Arc::new(Inner {
                adapter,
                device,
                queue,
                info,
                chunk,
                slots: options.staging_slots,
                max_segment,
                usage,
                path,
                host_memory,
                writes_in_place: host_memory && options.host_writes_in_place,
                upload: (0..options.upload_threads)
                    .map(|_| Mutex::new(Ring::default()))
                    .collect(),
                readback: Mutex::new(Ring::default()),
                pipelines: Default::default(),
                uncaptured,
            }),
        })
    }

    /// The adapter's name, vendor, driver and backend.
    pub fn info(&self) -> &wgpu::AdapterInfo {
        &self.inner.info
    }

    /// Whether uploads write straight into the destination buffer's memory
    /// (see [`GpuOptions::direct_upload`](super::GpuOptions::direct_upload))
    /// rather than through staging buffers.
    pub fn uploads_directly(&self) -> bool {
        self.inner.path == UploadPath::InPlace
    }

    /// How this context's uploads reach a buffer: in place or staged.
    pub fn upload_path(&self) -> UploadPath {
        self.inner.path
    }

    /// The device's limits (the adapter's own).
    pub fn limits(&self) -> wgpu::Limits {
        self.inner.device.limits()
    }

    /// The wgpu adapter, for what bytelens does not wrap.
    pub fn adapter(&self) -> &wgpu::Adapter {
        &self.inner.adapter
    }

    /// The wgpu device: create pipelines over uploaded buffers with it.
    pub fn device(&self) -> &wgpu::Device {
        &self.inner.device
    }

    /// The wgpu queue the uploads are submitted on.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.inner.queue
    }

    /// Takes the first error wgpu raised outside any error scope since the
    /// last call: from wgpu calls made directly on [`device`](Self::device)
    /// (bytelens's own calls run inside scopes and return their errors).
    /// wgpu's default would panic; this context keeps it here instead.
    pub fn take_uncaptured_error(&self) -> Option<String> {
        lock(&self.inner.uncaptured).take()
    }

    /// The largest single wgpu buffer an upload makes (bytes, a multiple of 256).
    pub fn max_segment(&self) -> u64 {
        self.inner.max_segment
    }

    /// Bytes per staging buffer.
    pub fn staging_chunk(&self) -> u64 {
        self.inner.chunk
    }
}
