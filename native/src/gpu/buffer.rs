//! [`GpuBuffer`]: data on the GPU in C order, in one or more wgpu buffers,
//! and the arithmetic of its padding, segments and staging chunks.

use std::fmt;

use bytelens_core::Layout;
use bytelens_core::files::GgmlType;

use super::GpuContext;
use super::context::round_up;

/// A buffer on the GPU holding an uploaded view, in C order.
pub struct GpuBuffer {
    pub(super) ctx: GpuContext,
    pub(super) segments: Vec<wgpu::Buffer>,
    /// C-contiguous: its `nbytes` is the data's.
    pub(super) layout: Layout,
    /// Quantised blocks uploaded as they are: their ggml type and the
    /// layout (float32, C order) of the values they hold.
    pub(super) quantized: Option<(GgmlType, Layout)>,
}

/// Bytes on the GPU for `nbytes` of data: a multiple of
/// `COPY_BUFFER_ALIGNMENT`, and 4 for none (wgpu cannot bind an empty buffer).
pub(super) fn padded_len(nbytes: usize) -> u64 {
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

    /// Where the buffer holds quantised blocks as they were in the file
    /// (an upload of [`HostView::quantized`](super::HostView::quantized)
    /// without a `to`): their ggml type and the shape of the values they
    /// hold, for a shader to dequantise. Its [`layout`](Self::layout) is
    /// then the blocks' bytes, uint8.
    pub fn quantized(&self) -> Option<(GgmlType, &[usize])> {
        self.quantized
            .as_ref()
            .map(|(ggml, values)| (*ggml, values.shape()))
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

    /// The staging chunk starting at byte `at` of the padded data and
    /// ending by `end`: its wgpu buffer, its offset there, and its length
    /// (at most `chunk`, a staging buffer's size, and never across two wgpu
    /// buffers).
    pub(super) fn chunk_at(&self, at: u64, end: u64, chunk: u64) -> (&wgpu::Buffer, u64, u64) {
        let segment_size = self.ctx.inner.max_segment;
        let offset = at % segment_size;
        let len = chunk.min(segment_size - offset).min(end - at);
        (&self.segments[(at / segment_size) as usize], offset, len)
    }
}
