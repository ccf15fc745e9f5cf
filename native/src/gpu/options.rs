//! [`GpuOptions`]: how a [`GpuContext`](super::GpuContext) is set up.

/// How a [`GpuContext`](super::GpuContext) is set up.
/// `GpuOptions::default()` is what [`GpuContext::new`](super::GpuContext::new) uses.
#[derive(Clone, Debug)]
pub struct GpuOptions {
    /// Backends to look for an adapter on: the `WGPU_BACKEND` environment
    /// variable if set (e.g. `vulkan,gl`), else wgpu's primary ones, of
    /// which each system has one: Vulkan (Linux, Windows), Metal (macOS),
    /// DX12 (Windows). GL is left out: with it, a missing Vulkan driver
    /// would silently fall back to a slower GL adapter.
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
    /// On an adapter whose memory is the host's (an integrated GPU, or a
    /// CPU adapter such as lavapipe) that offers
    /// `MAPPABLE_PRIMARY_BUFFERS`, uploads write straight into the
    /// destination buffer's memory, with no staging copy (default `true`).
    /// Uploaded buffers then also have the `MAP_WRITE` usage. Discrete
    /// GPUs always stage.
    pub direct_upload: bool,
    /// On a CPU adapter (lavapipe), whose buffers are the process's own
    /// memory, a strided or converting upload's copy kernel writes straight
    /// into the mapped memory, as [`gather_into`](crate::gather_into) writes
    /// a host buffer (default `true`); `false` writes it through a block in
    /// cache, as every upload to a GPU does (its mapped memory may be
    /// write-combined, slow unless written in whole sequential lines).
    pub host_writes_in_place: bool,
}

impl Default for GpuOptions {
    fn default() -> GpuOptions {
        GpuOptions {
            backends: wgpu::Backends::from_env().unwrap_or(wgpu::Backends::PRIMARY),
            power_preference: wgpu::PowerPreference::HighPerformance,
            staging_chunk: 4 << 20,
            staging_slots: 3,
            max_buffer_size: None,
            usage: wgpu::BufferUsages::STORAGE,
            upload_threads: std::thread::available_parallelism().map_or(1, |n| n.get().min(4)),
            direct_upload: true,
            host_writes_in_place: true,
        }
    }
}
