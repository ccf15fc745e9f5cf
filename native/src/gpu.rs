//! GPU upload and download of checked views through wgpu (feature `gpu`).
//!
//! [`GpuContext`] owns a wgpu device with the adapter's real limits and two
//! rings of staging buffers that are mapped once and reused: one
//! `MAP_WRITE` ring for uploads, one `MAP_READ` ring for downloads.
//! [`GpuContext::upload`] streams any checked view into the upload ring in C
//! order — a contiguous view is one `memcpy` per chunk, a strided, transposed
//! or reversed view is gathered straight into the mapped memory (one host
//! copy, not "make contiguous, then copy again") — and copies each chunk into
//! the destination while the next is being written. Uploads larger than the
//! ring are chunked; uploads larger than the device's `max_buffer_size`
//! become several wgpu buffers ([`GpuBuffer::buffers`]).
//!
//! Every wgpu call runs inside validation and out-of-memory error scopes, so
//! a wgpu error comes back as a [`GpuError`], never as a panic.
//!
//! # Examples
//! ```no_run
//! use bytelens::{Buffer, Layout, DType};
//! use bytelens::gpu::GpuContext;
//!
//! let gpu = GpuContext::new()?;
//! let mut buf = Buffer::new(16 * 1024)?;
//! buf.view_mut::<f32>()?.fill(1.5);
//! // A transposed 64×64 float32 view, gathered into staging in one pass.
//! let t = Layout::contiguous(DType::F32, &[64, 64])?.transpose();
//! let on_gpu = gpu.upload(&buf.view_as::<f32>(t)?)?;
//! let back = on_gpu.download()?;
//! assert!(back.view::<f32>()?.iter().all(|x| x == 1.5));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytelens_core::{Element, Layout, View};
pub use wgpu;

use crate::gather::for_each_piece;
use crate::{Buffer, LayoutError};

/// How a [`GpuContext`] is set up. `GpuOptions::default()` is what
/// [`GpuContext::new`] uses.
#[derive(Clone, Debug)]
pub struct GpuOptions {
    /// Backends to look for an adapter on: the `WGPU_BACKEND` environment
    /// variable if set (e.g. `vulkan,gl`), else Vulkan only (with every
    /// backend, a missing Vulkan driver would silently fall back to GL).
    pub backends: wgpu::Backends,
    /// Which adapter to prefer when there are several.
    pub power_preference: wgpu::PowerPreference,
    /// Bytes per staging buffer, rounded up to a multiple of 256 (4 MiB:
    /// on lavapipe a ring that fits in the CPU caches measured 5.4 GB/s
    /// against 4.2 GB/s for 16 MiB buffers).
    pub staging_chunk: u64,
    /// Staging buffers per ring (3): one being written, the others in flight.
    pub staging_slots: usize,
    /// A smaller cap on the size of one wgpu buffer than the adapter's
    /// `max_buffer_size` (`None`: the adapter's). Larger uploads are split.
    pub max_buffer_size: Option<u64>,
    /// Usages of uploaded buffers, on top of `COPY_DST | COPY_SRC`
    /// (`STORAGE` by default).
    pub usage: wgpu::BufferUsages,
    /// Threads that fill staging memory for one large (8 MiB or more)
    /// strided upload, each with its own ring; contiguous uploads use half
    /// as many (default: the number of CPUs, at most 4). A single thread's
    /// copy or transpose cannot saturate memory or PCIe bandwidth.
    pub upload_threads: usize,
}

impl Default for GpuOptions {
    fn default() -> GpuOptions {
        GpuOptions {
            backends: wgpu::Backends::from_env().unwrap_or(wgpu::Backends::VULKAN),
            power_preference: wgpu::PowerPreference::HighPerformance,
            staging_chunk: 4 << 20,
            staging_slots: 3,
            max_buffer_size: None,
            usage: wgpu::BufferUsages::STORAGE,
            upload_threads: std::thread::available_parallelism().map_or(1, |n| n.get().min(4)),
        }
    }
}

/// What went wrong on the GPU side, with wgpu's own message where there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GpuError {
    /// No adapter on the requested backends (no driver, or no device).
    NoAdapter {
        /// The backends searched, as wgpu names them.
        backends: String,
        /// wgpu's reason.
        reason: String,
    },
    /// The adapter refused to create a device.
    Device(String),
    /// The view does not fit its bytes (the core's error).
    Layout(LayoutError),
    /// wgpu reported a validation, out-of-memory or internal error.
    Wgpu {
        /// What bytelens was doing.
        during: &'static str,
        /// wgpu's message.
        message: String,
    },
    /// Mapping a staging buffer failed (device lost, or destroyed buffer).
    Map {
        /// What bytelens was doing.
        during: &'static str,
    },
    /// A host view or slice whose size differs from the GPU buffer's
    /// (`upload_into`, `download_into`).
    SizeMismatch {
        /// Bytes of data the GPU buffer holds.
        gpu: usize,
        /// Bytes the host side (the view uploaded, or the slice downloaded into) holds.
        host: usize,
    },
    /// Host memory for a download could not be allocated.
    Host(crate::Error),
    /// Options that cannot work (a zero-sized ring, say).
    BadOptions(String),
}

impl fmt::Display for GpuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GpuError::NoAdapter { backends, reason } => write!(
                f,
                "no GPU adapter on backends {backends}: {reason} \
                 (on Linux without a GPU, install Mesa's lavapipe: mesa-vulkan-drivers libvulkan1)"
            ),
            GpuError::Device(message) => write!(f, "the adapter refused a device: {message}"),
            GpuError::Layout(err) => err.fmt(f),
            GpuError::Wgpu { during, message } => {
                write!(f, "wgpu error during {during}: {message}")
            }
            GpuError::Map { during } => {
                write!(f, "mapping a staging buffer failed during {during}")
            }
            GpuError::SizeMismatch { gpu, host } => write!(
                f,
                "the GPU buffer holds {gpu} bytes but the host side holds {host}"
            ),
            GpuError::Host(err) => err.fmt(f),
            GpuError::BadOptions(message) => write!(f, "bad GPU options: {message}"),
        }
    }
}

impl std::error::Error for GpuError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            GpuError::Layout(err) => Some(err),
            GpuError::Host(err) => Some(err),
            _ => None,
        }
    }
}

impl From<LayoutError> for GpuError {
    fn from(err: LayoutError) -> GpuError {
        GpuError::Layout(err)
    }
}

/// A wgpu device and queue with reusable staging rings. Cheap to clone
/// (shared); usable from several threads (uploads take turns on the ring).
#[derive(Clone)]
pub struct GpuContext {
    inner: Arc<Inner>,
}

struct Inner {
    adapter: wgpu::Adapter,
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    chunk: u64,
    slots: usize,
    max_segment: u64,
    usage: wgpu::BufferUsages,
    /// One upload ring per upload thread.
    upload: Vec<Mutex<Ring>>,
    readback: Mutex<Ring>,
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
            .finish()
    }
}

/// Rounds `n` up to a multiple of `to` (a power of two).
fn round_up(n: u64, to: u64) -> u64 {
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
        let features = adapter.features() & wgpu::Features::SHADER_F16;
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
        let info = adapter.get_info();
        Ok(GpuContext {
            inner: Arc::new(Inner {
                adapter,
                device,
                queue,
                info,
                chunk,
                slots: options.staging_slots,
                max_segment,
                usage: options.usage | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
                upload: (0..options.upload_threads)
                    .map(|_| Mutex::new(Ring::default()))
                    .collect(),
                readback: Mutex::new(Ring::default()),
                uncaptured,
            }),
        })
    }

    /// The adapter's name, vendor, driver and backend.
    pub fn info(&self) -> &wgpu::AdapterInfo {
        &self.inner.info
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

    /// Uploads a checked view into a new GPU buffer, in C order (the bytes
    /// of `np.ascontiguousarray(view)`), zero-padded to a multiple of
    /// 4 bytes. An empty view gives a 4-byte buffer of zeros.
    pub fn upload<T: Element>(&self, view: &View<'_, T>) -> Result<GpuBuffer, GpuError> {
        self.upload_layout(view.bytes(), view.layout())
    }

    /// [`upload`](Self::upload) for an untyped view: `layout` over `bytes`,
    /// checked here.
    pub fn upload_layout(&self, bytes: &[u8], layout: &Layout) -> Result<GpuBuffer, GpuError> {
        layout.check(bytes.len())?;
        let dst = self.alloc(layout)?;
        self.upload_into_unchecked(bytes, layout, &dst)?;
        Ok(dst)
    }

    /// Uploads a view into an existing GPU buffer of the same byte size
    /// (streaming frame after frame into one buffer, with no allocation).
    /// The buffer's dtype and shape become the view's.
    pub fn upload_into<T: Element>(
        &self,
        view: &View<'_, T>,
        dst: &mut GpuBuffer,
    ) -> Result<(), GpuError> {
        self.upload_layout_into(view.bytes(), view.layout(), dst)
    }

    /// [`upload_into`](Self::upload_into) for an untyped view.
    pub fn upload_layout_into(
        &self,
        bytes: &[u8],
        layout: &Layout,
        dst: &mut GpuBuffer,
    ) -> Result<(), GpuError> {
        layout.check(bytes.len())?;
        if layout.nbytes() != dst.nbytes() {
            return Err(GpuError::SizeMismatch {
                gpu: dst.nbytes(),
                host: layout.nbytes(),
            });
        }
        self.upload_into_unchecked(bytes, layout, dst)?;
        dst.layout = contiguous_like(layout)?;
        Ok(())
    }

    /// A zeroed GPU buffer (split into segments) for the view `layout`.
    fn alloc(&self, layout: &Layout) -> Result<GpuBuffer, GpuError> {
        let padded = padded_len(layout.nbytes());
        let inner = &self.inner;
        let scopes = Scopes::push(&inner.device);
        let mut segments = Vec::new();
        let mut start = 0;
        while start < padded {
            let size = inner.max_segment.min(padded - start);
            segments.push(inner.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("bytelens upload"),
                size,
                usage: inner.usage,
                mapped_at_creation: false,
            }));
            start += size;
        }
        scopes.pop("buffer creation")?;
        Ok(GpuBuffer {
            ctx: self.clone(),
            segments,
            layout: contiguous_like(layout)?,
        })
    }

    /// Fills `dst` with the view: large views are cut into consecutive
    /// parts, each streamed by its own thread through its own ring.
    fn upload_into_unchecked(
        &self,
        bytes: &[u8],
        layout: &Layout,
        dst: &GpuBuffer,
    ) -> Result<(), GpuError> {
        let inner = &self.inner;
        // Rings are always locked in index order, so concurrent uploads wait
        // for each other instead of deadlocking.
        let mut rings: Vec<MutexGuard<'_, Ring>> = inner.upload.iter().map(lock).collect();
        // A copy of contiguous bytes needs fewer threads to reach memory
        // bandwidth than a transposing gather: on 2 lavapipe CPUs, two
        // threads took a transposed upload from 253 ms to 183 ms but a
        // contiguous one from 52 ms to 62 ms (they compete with the driver's
        // own copy).
        let threads = if layout.is_c_contiguous() {
            (rings.len() / 2).max(1)
        } else {
            rings.len()
        };
        let parts = split(layout, threads, PARALLEL_MIN);
        if parts.len() == 1 {
            return self.upload_part(&mut rings[0], bytes, layout, dst, 0..dst.padded_size());
        }
        let ends: Vec<u64> = parts
            .iter()
            .skip(1)
            .map(|(_, start)| *start as u64)
            .chain([dst.padded_size()])
            .collect();
        std::thread::scope(|scope| {
            let workers: Vec<_> = parts
                .iter()
                .zip(&ends)
                .zip(rings.iter_mut().map(|guard| &mut **guard))
                .map(|(((part, start), &end), ring)| {
                    let range = *start as u64..end;
                    scope.spawn(move || self.upload_part(ring, bytes, part, dst, range))
                })
                .collect();
            workers.into_iter().try_for_each(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
        })
    }

    /// Streams the view `layout` into bytes `range` of `dst` (the last part
    /// also writes the zero padding) through one ring, inside this thread's
    /// error scopes.
    fn upload_part(
        &self,
        ring: &mut Ring,
        bytes: &[u8],
        layout: &Layout,
        dst: &GpuBuffer,
        range: std::ops::Range<u64>,
    ) -> Result<(), GpuError> {
        let inner = &self.inner;
        ring.ensure(
            inner,
            wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
        );
        let pad = range.end - range.start - layout.nbytes() as u64;
        let scopes = Scopes::push(&inner.device);
        let mut sink = UploadSink {
            ctx: inner,
            ring,
            dst,
            written: range.start,
            end: range.end,
            open: None,
        };
        let mut scratch = Vec::new();
        let zeros = [0u8; 4];
        let result = for_each_piece(bytes, layout, &mut scratch, &mut |piece| sink.write(piece))
            .and_then(|()| sink.write(&zeros[..pad as usize]));
        drop(sink);
        // Pop the scopes whatever happened: they are a stack on this thread.
        let scoped = scopes.pop("upload");
        // wgpu's own error, when there is one, is the cause of any later one.
        scoped.and(result)
    }
}

/// Views smaller than this are uploaded by one thread.
const PARALLEL_MIN: usize = 8 << 20;

/// Cuts a view into at most `parts` consecutive pieces of its C-order byte
/// stream, each a view of its own with its starting byte, by slicing the
/// first axis longer than 1. Cuts fall on multiples of 4 bytes (a copy's
/// alignment). Small views, and views that cannot be cut so, stay whole.
fn split(layout: &Layout, parts: usize, min_bytes: usize) -> Vec<(Layout, usize)> {
    let whole = vec![(*layout, 0)];
    if parts < 2 || layout.nbytes() < min_bytes {
        return whole;
    }
    let Some(axis) = layout.shape().iter().position(|&n| n > 1) else {
        return whole;
    };
    let len = layout.shape()[axis];
    // Bytes per index of `axis`, and how many indices make a multiple of 4.
    let step = layout.nbytes() / len;
    let group = 4 / gcd(step, 4);
    let groups = len / group;
    let parts = parts.min(groups);
    if parts < 2 {
        return whole;
    }
    (0..parts)
        .map(|k| {
            let start = groups * k / parts * group;
            let stop = if k + 1 == parts {
                len
            } else {
                groups * (k + 1) / parts * group
            };
            let part = layout
                .slice(axis, Some(start as isize), Some(stop as isize), 1)
                .expect("a slice within the axis");
            (part, start * step)
        })
        .collect()
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The C-contiguous layout with `layout`'s dtype, byte order and shape.
fn contiguous_like(layout: &Layout) -> Result<Layout, LayoutError> {
    Ok(Layout::contiguous(layout.dtype(), layout.shape())?.with_byte_order(layout.byte_order()))
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the ring leaves its slots in states `Ring`
    // re-checks, so the ring is still usable.
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// Validation, out-of-memory and internal error scopes, popped together.
struct Scopes {
    guards: [wgpu::ErrorScopeGuard; 3],
}

impl Scopes {
    fn push(device: &wgpu::Device) -> Scopes {
        Scopes {
            guards: [
                device.push_error_scope(wgpu::ErrorFilter::Internal),
                device.push_error_scope(wgpu::ErrorFilter::OutOfMemory),
                device.push_error_scope(wgpu::ErrorFilter::Validation),
            ],
        }
    }

    /// Pops the scopes (innermost first) and returns the first error in them.
    fn pop(self, during: &'static str) -> Result<(), GpuError> {
        let [internal, oom, validation] = self.guards;
        let mut first = None;
        for guard in [validation, oom, internal] {
            if let Some(err) = pollster::block_on(guard.pop()) {
                first.get_or_insert_with(|| err.to_string());
            }
        }
        match first {
            Some(message) => Err(GpuError::Wgpu { during, message }),
            None => Ok(()),
        }
    }
}

const UNMAPPED: u8 = 0;
const PENDING: u8 = 1;
const MAPPED: u8 = 2;
const FAILED: u8 = 3;

/// One staging buffer and its mapping state (set by wgpu's callbacks).
struct Slot {
    buffer: wgpu::Buffer,
    state: Arc<AtomicU8>,
    submission: Option<wgpu::SubmissionIndex>,
}

#[derive(Default)]
struct Ring {
    slots: Vec<Slot>,
    next: usize,
}

impl Ring {
    /// Creates the slots on first use: upload slots start mapped.
    fn ensure(&mut self, inner: &Inner, usage: wgpu::BufferUsages) {
        if !self.slots.is_empty() {
            return;
        }
        let mapped = usage.contains(wgpu::BufferUsages::MAP_WRITE);
        self.slots = (0..inner.slots)
            .map(|_| Slot {
                buffer: inner.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("bytelens staging"),
                    size: inner.chunk,
                    usage,
                    mapped_at_creation: mapped,
                }),
                state: Arc::new(AtomicU8::new(if mapped { MAPPED } else { UNMAPPED })),
                submission: None,
            })
            .collect();
    }

    /// Requests a mapping of the first `len` bytes of slot `i`, answered
    /// once the work submitted on it (up to submission `at`) is done.
    fn map_after(
        &mut self,
        i: usize,
        mode: wgpu::MapMode,
        len: u64,
        at: Option<wgpu::SubmissionIndex>,
    ) {
        let slot = &mut self.slots[i];
        slot.state.store(PENDING, Ordering::Release);
        slot.submission = at;
        let state = Arc::clone(&slot.state);
        slot.buffer.map_async(mode, ..len, move |result| {
            let now = if result.is_ok() { MAPPED } else { FAILED };
            state.store(now, Ordering::Release);
        });
    }

    /// Waits until slot `i`'s mapping request has been answered.
    fn wait(
        &mut self,
        i: usize,
        device: &wgpu::Device,
        during: &'static str,
    ) -> Result<(), GpuError> {
        let slot = &mut self.slots[i];
        while slot.state.load(Ordering::Acquire) == PENDING {
            let poll = match slot.submission.take() {
                Some(index) => wgpu::PollType::Wait {
                    submission_index: Some(index),
                    timeout: None,
                },
                None => wgpu::PollType::wait_indefinitely(),
            };
            device.poll(poll).map_err(|err| GpuError::Wgpu {
                during,
                message: err.to_string(),
            })?;
        }
        if slot.state.load(Ordering::Acquire) == FAILED {
            slot.state.store(UNMAPPED, Ordering::Release);
            return Err(GpuError::Map { during });
        }
        Ok(())
    }

    /// The next upload slot, mapped for writing (waiting for its last copy;
    /// mapping it again if an earlier failure left it unmapped).
    fn next_for_write(&mut self, device: &wgpu::Device) -> Result<usize, GpuError> {
        let i = self.advance();
        self.wait(i, device, "upload")?;
        if self.slots[i].state.load(Ordering::Acquire) == UNMAPPED {
            let len = self.slots[i].buffer.size();
            self.map_after(i, wgpu::MapMode::Write, len, None);
            self.wait(i, device, "upload")?;
        }
        Ok(i)
    }

    /// The next readback slot, unmapped (waiting for it, and unmapping what
    /// an earlier failed download left mapped).
    fn next_for_read(&mut self, device: &wgpu::Device) -> Result<usize, GpuError> {
        let i = self.advance();
        // A failed mapping leaves the slot unmapped, which is what we want.
        let _ = self.wait(i, device, "download");
        let slot = &self.slots[i];
        if slot.state.load(Ordering::Acquire) == MAPPED {
            slot.buffer.unmap();
            slot.state.store(UNMAPPED, Ordering::Release);
        }
        Ok(i)
    }

    fn advance(&mut self) -> usize {
        let i = self.next;
        self.next = (i + 1) % self.slots.len();
        i
    }
}

/// Writes the element stream into mapped upload slots, copying each full
/// chunk into the destination and moving on to the next slot.
struct UploadSink<'a> {
    ctx: &'a Inner,
    ring: &'a mut Ring,
    dst: &'a GpuBuffer,
    /// Where the next chunk goes in the destination.
    written: u64,
    /// Where this sink's part of the destination ends.
    end: u64,
    /// The slot being filled: its index, mapping, length and fill.
    open: Option<(usize, wgpu::BufferViewMut, u64, u64)>,
}

impl UploadSink<'_> {
    fn write(&mut self, mut piece: &[u8]) -> Result<(), GpuError> {
        while !piece.is_empty() {
            let (i, mut view, len, filled) = match self.open.take() {
                Some(open) => open,
                None => self.open_slot()?,
            };
            let n = (piece.len() as u64).min(len - filled);
            view.slice(filled as usize..(filled + n) as usize)
                .copy_from_slice(&piece[..n as usize]);
            piece = &piece[n as usize..];
            if filled + n == len {
                drop(view);
                self.flush(i, len);
            } else {
                self.open = Some((i, view, len, filled + n));
            }
        }
        Ok(())
    }

    /// Takes the next slot, waiting for its last copy to finish.
    fn open_slot(&mut self) -> Result<(usize, wgpu::BufferViewMut, u64, u64), GpuError> {
        let i = self.ring.next_for_write(&self.ctx.device)?;
        let (_, _, len) = self.dst.chunk_at(self.written, self.end, self.ctx.chunk);
        let view = self.ring.slots[i]
            .buffer
            .get_mapped_range_mut(..len)
            .map_err(|err| GpuError::Wgpu {
                during: "upload",
                message: err.to_string(),
            })?;
        Ok((i, view, len, 0))
    }

    /// Copies a full slot into the destination and asks for it back mapped.
    fn flush(&mut self, i: usize, len: u64) {
        let slot = &self.ring.slots[i];
        slot.buffer.unmap();
        let (segment, offset, _) = self.dst.chunk_at(self.written, self.end, self.ctx.chunk);
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("bytelens upload"),
            });
        encoder.copy_buffer_to_buffer(&slot.buffer, 0, segment, offset, len);
        let index = self.ctx.queue.submit([encoder.finish()]);
        self.written += len;
        self.ring
            .map_after(i, wgpu::MapMode::Write, self.ctx.chunk, Some(index));
    }
}

/// A buffer on the GPU holding an uploaded view, in C order.
pub struct GpuBuffer {
    ctx: GpuContext,
    segments: Vec<wgpu::Buffer>,
    /// C-contiguous: its `nbytes` is the data's.
    layout: Layout,
}

/// Bytes on the GPU for `nbytes` of data: a multiple of
/// `COPY_BUFFER_ALIGNMENT`, and 4 for none (wgpu cannot bind an empty buffer).
fn padded_len(nbytes: usize) -> u64 {
    round_up(nbytes.max(1) as u64, wgpu::COPY_BUFFER_ALIGNMENT)
}

impl fmt::Debug for GpuBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpuBuffer")
            .field("nbytes", &self.nbytes())
            .field("segments", &self.segments.len())
            .field("layout", &self.layout)
            .finish()
    }
}

impl GpuBuffer {
    /// Bytes of data (the view's `nbytes`, before padding).
    pub fn nbytes(&self) -> usize {
        self.layout.nbytes()
    }

    /// Bytes on the GPU: `nbytes` rounded up to a multiple of 4 (4 when empty).
    pub fn padded_size(&self) -> u64 {
        padded_len(self.nbytes())
    }

    /// The data's layout: C-contiguous, with the uploaded view's dtype,
    /// byte order and shape. `download()?.view_as(gpu.layout())` reads it.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The wgpu buffers holding the data, in order; more than one when the
    /// data is larger than [`GpuContext::max_segment`]. Each but the last
    /// holds exactly `max_segment` bytes.
    pub fn buffers(&self) -> &[wgpu::Buffer] {
        &self.segments
    }

    /// The one wgpu buffer, when the data fits in one (`None` when split).
    pub fn buffer(&self) -> Option<&wgpu::Buffer> {
        match self.segments.as_slice() {
            [one] => Some(one),
            _ => None,
        }
    }

    /// Reads the data back into a new (64-byte aligned) [`Buffer`].
    pub fn download(&self) -> Result<Buffer, GpuError> {
        let mut out = Buffer::new(self.nbytes()).map_err(GpuError::Host)?;
        self.download_into(out.as_bytes_mut())?;
        Ok(out)
    }

    /// Reads the data back into `out`, which must be `nbytes()` long.
    pub fn download_into(&self, out: &mut [u8]) -> Result<(), GpuError> {
        if out.len() != self.nbytes() {
            return Err(GpuError::SizeMismatch {
                gpu: self.nbytes(),
                host: out.len(),
            });
        }
        let inner = &self.ctx.inner;
        let mut ring = lock(&inner.readback);
        ring.ensure(
            inner,
            wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        );
        let scopes = Scopes::push(&inner.device);
        let result = self.read_chunks(&mut ring, out);
        let scoped = scopes.pop("download");
        scoped.and(result)
    }

    /// The staging chunk starting at byte `at` of the padded data and
    /// ending by `end`: its wgpu buffer, its offset there, and its length
    /// (at most `chunk`, a staging buffer's size, and never across two wgpu
    /// buffers).
    fn chunk_at(&self, at: u64, end: u64, chunk: u64) -> (&wgpu::Buffer, u64, u64) {
        let segment_size = self.ctx.inner.max_segment;
        let offset = at % segment_size;
        let len = chunk.min(segment_size - offset).min(end - at);
        (&self.segments[(at / segment_size) as usize], offset, len)
    }

    /// Copies chunk after chunk into readback slots, keeping every slot in
    /// flight, and copies each out as its mapping arrives.
    fn read_chunks(&self, ring: &mut Ring, out: &mut [u8]) -> Result<(), GpuError> {
        let inner = &self.ctx.inner;
        // (slot, start in the data, length copied)
        let mut in_flight: VecDeque<(usize, u64, u64)> = VecDeque::new();
        let mut start = 0;
        let finish = |ring: &mut Ring, (i, at, len): (usize, u64, u64), out: &mut [u8]| {
            ring.wait(i, &inner.device, "download")?;
            let slot = &ring.slots[i];
            {
                let mapped = slot
                    .buffer
                    .get_mapped_range(..len)
                    .map_err(|err| GpuError::Wgpu {
                        during: "download",
                        message: err.to_string(),
                    })?;
                let keep = (len as usize).min(out.len() - at as usize);
                out[at as usize..at as usize + keep].copy_from_slice(&mapped[..keep]);
            }
            slot.buffer.unmap();
            slot.state.store(UNMAPPED, Ordering::Release);
            Ok::<(), GpuError>(())
        };
        let padded = self.padded_size();
        while start < padded {
            if in_flight.len() == ring.slots.len() {
                let done = in_flight.pop_front().expect("a slot in flight");
                finish(ring, done, out)?;
            }
            let i = ring.next_for_read(&inner.device)?;
            let (segment, offset, len) = self.chunk_at(start, padded, inner.chunk);
            let mut encoder =
                inner
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("bytelens download"),
                    });
            encoder.copy_buffer_to_buffer(segment, offset, &ring.slots[i].buffer, 0, len);
            let index = inner.queue.submit([encoder.finish()]);
            ring.map_after(i, wgpu::MapMode::Read, len, Some(index));
            in_flight.push_back((i, start, len));
            start += len;
        }
        while let Some(done) = in_flight.pop_front() {
            finish(ring, done, out)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytelens_core::DType;

    #[test]
    fn splits_fall_on_multiples_of_four_bytes_and_cover_the_view() {
        let t = Layout::contiguous(DType::F32, &[300, 200])
            .unwrap()
            .transpose();
        let parts = split(&t, 3, 0);
        let starts: Vec<usize> = parts.iter().map(|(_, start)| *start).collect();
        assert_eq!(starts, [0, 66 * 1200, 133 * 1200]);
        let sizes: usize = parts.iter().map(|(part, _)| part.nbytes()).sum();
        assert_eq!(sizes, t.nbytes());
        // A uint8 view with 3-byte rows: cuts every 4 rows (12 bytes).
        let bytes = Layout::contiguous(DType::U8, &[1, 10, 3]).unwrap();
        let parts = split(&bytes, 2, 0);
        assert_eq!(
            parts
                .iter()
                .map(|(p, s)| (p.shape()[1], *s))
                .collect::<Vec<_>>(),
            [(4, 0), (6, 12)]
        );
        // Too small, too short or one part: whole.
        assert_eq!(split(&t, 4, t.nbytes() + 1).len(), 1);
        assert_eq!(
            split(&Layout::contiguous(DType::U8, &[3, 1]).unwrap(), 4, 0).len(),
            1
        );
        assert_eq!(split(&t, 1, 0).len(), 1);
    }
}
