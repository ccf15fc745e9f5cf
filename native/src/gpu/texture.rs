//! Textures: a checked image or volume view gathered into the upload ring
//! with its rows padded to `COPY_BYTES_PER_ROW_ALIGNMENT` (256 bytes) and
//! RGB widened to RGBA in the same pass, then copied into a
//! [`GpuTexture`]; and read back without the padding or the added alpha.
//!
//! The view's axes are `(H, W)`, `(H, W, C)` or `(L, H, W, C)` (`L`
//! array layers) for a 2-D texture, `(D, H, W)` or `(D, H, W, C)` for a
//! 3-D one, in C order whatever its strides: a crop, a flip or a
//! transposed image goes up as it reads, with no contiguous copy first.

use bytelens_core::{ByteOrder, DType, Descr, Layout};

use super::context::round_up;
use super::error::Scopes;
use super::ring::{lock, map_now};
use super::upload::{STAGE_BLOCK, Upload};
use super::{GpuContext, GpuError};
use crate::Buffer;
use crate::copy::Copier;

/// How a format's channels read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Unorm,
    Snorm,
    Uint,
    Sint,
    Float,
}

/// A texture format bytelens uploads to: its WebGPU name, the element
/// each channel holds, and how many channels.
struct Format {
    name: &'static str,
    format: wgpu::TextureFormat,
    component: DType,
    channels: usize,
    kind: Kind,
}

const fn f(
    name: &'static str,
    format: wgpu::TextureFormat,
    component: DType,
    channels: usize,
    kind: Kind,
) -> Format {
    Format {
        name,
        format,
        component,
        channels,
        kind,
    }
}

use wgpu::TextureFormat as T;
use {DType as D, Kind as K};

/// Every format an upload may ask for; for each element and channel count,
/// the first one listed is the default.
const FORMATS: [Format; 33] = [
    f("r8unorm", T::R8Unorm, D::U8, 1, K::Unorm),
    f("rg8unorm", T::Rg8Unorm, D::U8, 2, K::Unorm),
    f("rgba8unorm", T::Rgba8Unorm, D::U8, 4, K::Unorm),
    f("rgba8unorm-srgb", T::Rgba8UnormSrgb, D::U8, 4, K::Unorm),
    f("bgra8unorm", T::Bgra8Unorm, D::U8, 4, K::Unorm),
    f("bgra8unorm-srgb", T::Bgra8UnormSrgb, D::U8, 4, K::Unorm),
    f("r8uint", T::R8Uint, D::U8, 1, K::Uint),
    f("rg8uint", T::Rg8Uint, D::U8, 2, K::Uint),
    f("rgba8uint", T::Rgba8Uint, D::U8, 4, K::Uint),
    f("r8snorm", T::R8Snorm, D::I8, 1, K::Snorm),
    f("rg8snorm", T::Rg8Snorm, D::I8, 2, K::Snorm),
    f("rgba8snorm", T::Rgba8Snorm, D::I8, 4, K::Snorm),
    f("r8sint", T::R8Sint, D::I8, 1, K::Sint),
    f("rg8sint", T::Rg8Sint, D::I8, 2, K::Sint),
    f("rgba8sint", T::Rgba8Sint, D::I8, 4, K::Sint),
    f("r16uint", T::R16Uint, D::U16, 1, K::Uint),
    f("rg16uint", T::Rg16Uint, D::U16, 2, K::Uint),
    f("rgba16uint", T::Rgba16Uint, D::U16, 4, K::Uint),
    f("r16sint", T::R16Sint, D::I16, 1, K::Sint),
    f("rg16sint", T::Rg16Sint, D::I16, 2, K::Sint),
    f("rgba16sint", T::Rgba16Sint, D::I16, 4, K::Sint),
    f("r16float", T::R16Float, D::F16, 1, K::Float),
    f("rg16float", T::Rg16Float, D::F16, 2, K::Float),
    f("rgba16float", T::Rgba16Float, D::F16, 4, K::Float),
    f("r32uint", T::R32Uint, D::U32, 1, K::Uint),
    f("rg32uint", T::Rg32Uint, D::U32, 2, K::Uint),
    f("rgba32uint", T::Rgba32Uint, D::U32, 4, K::Uint),
    f("r32sint", T::R32Sint, D::I32, 1, K::Sint),
    f("rg32sint", T::Rg32Sint, D::I32, 2, K::Sint),
    f("rgba32sint", T::Rgba32Sint, D::I32, 4, K::Sint),
    f("r32float", T::R32Float, D::F32, 1, K::Float),
    f("rg32float", T::Rg32Float, D::F32, 2, K::Float),
    f("rgba32float", T::Rgba32Float, D::F32, 4, K::Float),
];

/// The format named `name` as WebGPU spells it (`"rgba8unorm-srgb"`), among
/// those a view can be uploaded to.
pub fn texture_format(name: &str) -> Option<wgpu::TextureFormat> {
    known().find(|f| f.name == name).map(|f| f.format)
}

/// The WebGPU name of `format`, if a view can be uploaded to it.
pub fn texture_format_name(format: wgpu::TextureFormat) -> Option<&'static str> {
    find(format).map(|f| f.name)
}

fn known() -> impl Iterator<Item = &'static Format> {
    FORMATS.iter()
}

fn find(format: wgpu::TextureFormat) -> Option<&'static Format> {
    known().find(|f| f.format == format)
}

/// The default format for `channels` (3 widened to 4) of `component`.
fn default_format(component: DType, channels: usize) -> Option<&'static Format> {
    let wanted = if channels == 3 { 4 } else { channels };
    let kind = match component {
        D::U8 => K::Unorm,
        D::I8 => K::Snorm,
        D::U16 | D::U32 => K::Uint,
        D::I16 | D::I32 => K::Sint,
        _ => K::Float,
    };
    known().find(|f| f.component == component && f.channels == wanted && f.kind == kind)
}

/// The bytes of a channel's "one" in `format`, little-endian: the alpha
/// that widening RGB to RGBA adds (opaque).
fn one(format: &Format) -> [u8; 4] {
    let bits: u32 = match (format.kind, format.component) {
        (K::Unorm, _) => u32::MAX,
        (K::Snorm, _) => 0x7F,
        (K::Uint | K::Sint, _) => 1,
        (K::Float, D::F16) => 0x3C00,
        (K::Float, _) => 1f32.to_bits(),
    };
    bits.to_le_bytes()
}

/// Where an upload of a view to a texture goes, worked out from its shape.
struct Shape {
    width: u32,
    height: u32,
    /// Array layers (2-D) or depth (3-D).
    layers: u32,
    /// Channels in the view (3 where the format has 4: widened).
    channels: usize,
    format: &'static Format,
}

impl Shape {
    fn of(
        layout: &Layout,
        format: Option<wgpu::TextureFormat>,
        dimension: wgpu::TextureDimension,
        limits: &wgpu::Limits,
    ) -> Result<Shape, GpuError> {
        let refuse = |reason: String| Err(GpuError::Texture(reason));
        let dtype = layout.dtype();
        if !known().any(|f| f.component == dtype) {
            return refuse(format!(
                "no texture format holds {} elements (8-, 16- and 32-bit integers, \
                 float16 and float32 do)",
                dtype.name()
            ));
        }
        let shape = layout.shape();
        let volume = dimension == wgpu::TextureDimension::D3;
        let (layers, height, width, channels) = match (volume, shape) {
            (false, &[h, w]) => (1, h, w, 1),
            (false, &[h, w, c]) => (1, h, w, c),
            (false, &[l, h, w, c]) | (true, &[l, h, w, c]) => (l, h, w, c),
            (true, &[d, h, w]) => (d, h, w, 1),
            _ => {
                let axes = if volume {
                    "(D, H, W) or (D, H, W, C)"
                } else {
                    "(H, W), (H, W, C) or (L, H, W, C)"
                };
                return refuse(format!(
                    "a {} texture is read from a view of shape {axes}, not {shape:?}",
                    if volume { "3-D" } else { "2-D" }
                ));
            }
        };
        if layout.size() == 0 {
            return refuse(format!("the view of shape {shape:?} is empty"));
        }
        if !(1..=4).contains(&channels) {
            return refuse(format!(
                "the last axis ({channels}) is no channel count: textures have 1, 2, 3 \
                 (widened to RGBA) or 4 channels"
            ));
        }
        let format = match format {
            None => default_format(dtype, channels).ok_or_else(|| {
                GpuError::Texture(format!(
                    "no format has {channels} channels of {}",
                    dtype.name()
                ))
            })?,
            Some(asked) => {
                let Some(known) = find(asked) else {
                    return refuse(format!("bytelens does not upload to {asked:?} textures"));
                };
                if known.component != dtype {
                    return refuse(format!(
                        "{} holds {} channels, and the view's elements are {}",
                        known.name,
                        known.component.name(),
                        dtype.name()
                    ));
                }
                if known.channels != channels && !(channels == 3 && known.channels == 4) {
                    return refuse(format!(
                        "{} has {} channels, and the view has {channels}",
                        known.name, known.channels
                    ));
                }
                known
            }
        };
        let (limit, name) = if volume {
            (limits.max_texture_dimension_3d, "max_texture_dimension_3d")
        } else {
            (limits.max_texture_dimension_2d, "max_texture_dimension_2d")
        };
        let mut sides = vec![
            ("width", width, limit, name),
            ("height", height, limit, name),
        ];
        if volume {
            sides.push(("depth", layers, limit, name));
        } else {
            let most = limits.max_texture_array_layers;
            sides.push(("layer count", layers, most, "max_texture_array_layers"));
        }
        for (side, n, limit, name) in sides {
            if n > limit as usize {
                return refuse(format!(
                    "the {side} {n} is past the adapter's {name} ({limit})"
                ));
            }
        }
        Ok(Shape {
            width: width as u32,
            height: height as u32,
            layers: layers as u32,
            channels,
            format,
        })
    }

    fn extent(&self) -> wgpu::Extent3d {
        wgpu::Extent3d {
            width: self.width,
            height: self.height,
            depth_or_array_layers: self.layers,
        }
    }
}

/// An image or volume on the GPU, uploaded from a view by
/// [`Upload::texture`] or [`Upload::volume`].
pub struct GpuTexture {
    ctx: GpuContext,
    texture: wgpu::Texture,
    format: &'static Format,
    /// The uploaded view's shape, its element in little-endian order.
    layout: Layout,
    /// Channels of the view (3 where the texture has 4).
    channels: usize,
}

impl std::fmt::Debug for GpuTexture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuTexture")
            .field("format", &self.format.name)
            .field("size", &self.size())
            .field("dimension", &self.texture.dimension())
            .field("shape", &self.layout.shape())
            .finish()
    }
}

/// Bytes per texel row of `width` texels of `format`, and that padded to
/// `COPY_BYTES_PER_ROW_ALIGNMENT` (a buffer-texture copy's row pitch).
fn row_bytes(format: &Format, width: u32) -> (usize, usize) {
    let row = width as usize * format.channels * format.component.size();
    let pitch = round_up(row as u64, wgpu::COPY_BYTES_PER_ROW_ALIGNMENT as u64) as usize;
    (row, pitch)
}

/// Writes a row of `texels` RGB texels of `size`-byte channels from `src`
/// into `dst` as RGBA, alpha `one`.
fn widen(src: &[u8], dst: &mut [u8], size: usize, one: [u8; 4]) {
    match size {
        1 => widen_by::<1>(src, dst, one),
        2 => widen_by::<2>(src, dst, one),
        _ => widen_by::<4>(src, dst, one),
    }
}

fn widen_by<const S: usize>(src: &[u8], dst: &mut [u8], one: [u8; 4]) {
    let alpha: [u8; S] = std::array::from_fn(|i| one[i]);
    for (rgb, rgba) in src.chunks_exact(3 * S).zip(dst.chunks_exact_mut(4 * S)) {
        rgba[..3 * S].copy_from_slice(rgb);
        rgba[3 * S..].copy_from_slice(&alpha);
    }
}

/// Writes RGBA texels from `src` into `dst` as RGB, dropping the alpha.
fn narrow(src: &[u8], dst: &mut [u8], size: usize) {
    for (rgba, rgb) in src
        .chunks_exact(4 * size)
        .zip(dst.chunks_exact_mut(3 * size))
    {
        rgb.copy_from_slice(&rgba[..3 * size]);
    }
}

impl Upload<'_, '_> {
    /// Uploads an image view, `(H, W)`, `(H, W, C)` or `(L, H, W, C)` (`L`
    /// array layers), to a new 2-D texture of `format`, or of the default
    /// for its element and channel count: `uint8` to `r8unorm`,
    /// `rg8unorm` or `rgba8unorm`, `int8` to `r8snorm`…, `uint16` and
    /// `uint32` to `r16uint`/`r32uint`…, `int16` and `int32` to
    /// `r16sint`/`r32sint`…, `float16` to `r16float`…`rgba16float`,
    /// `float32` to `r32float`…`rgba32float`. Three channels are widened to
    /// four, the alpha at the format's one (opaque), in the same pass that
    /// gathers the view and pads its rows to 256 bytes; the other byte
    /// order is swapped on the way.
    ///
    /// Refused with [`GpuError::Texture`]: elements no format holds (64-bit,
    /// bool, bfloat16, float8), channel counts past 4, empty views, a
    /// `format` whose channels or element differ from the view's, sizes
    /// past the adapter's `max_texture_dimension_2d` or
    /// `max_texture_array_layers`, and an upload given [`to`](Self::to).
    ///
    /// # Examples
    /// ```no_run
    /// use bytelens::{Buffer, DType, Layout, gpu::GpuContext};
    /// let gpu = GpuContext::new()?;
    /// let image = Buffer::new(480 * 640 * 3)?; // an RGB image
    /// let rgb = Layout::contiguous(DType::U8, &[480, 640, 3])?;
    /// // The left half, flipped upside down: gathered, widened and padded in one pass.
    /// let crop = rgb.slice(1, None, Some(320), 1)?.slice(0, None, None, -1)?;
    /// let texture = gpu.upload((image.as_bytes(), &crop)).texture(None)?;
    /// assert_eq!(texture.format(), bytelens::gpu::wgpu::TextureFormat::Rgba8Unorm);
    /// assert_eq!(texture.download()?.len(), 480 * 320 * 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn texture(self, format: Option<wgpu::TextureFormat>) -> Result<GpuTexture, GpuError> {
        self.to_texture(format, wgpu::TextureDimension::D2)
    }

    /// [`texture`](Self::texture) for a volume, `(D, H, W)` or `(D, H, W,
    /// C)`: a 3-D texture of depth `D`, each side at most the adapter's
    /// `max_texture_dimension_3d`.
    pub fn volume(self, format: Option<wgpu::TextureFormat>) -> Result<GpuTexture, GpuError> {
        self.to_texture(format, wgpu::TextureDimension::D3)
    }

    fn to_texture(
        self,
        format: Option<wgpu::TextureFormat>,
        dimension: wgpu::TextureDimension,
    ) -> Result<GpuTexture, GpuError> {
        let (gpu, bytes, layout, to) = self.parts();
        if to.is_some() {
            return Err(GpuError::Texture(
                "a texture's element is its format's: upload it without .to()".into(),
            ));
        }
        let limits = gpu.limits();
        let shape = Shape::of(layout, format, dimension, &limits)?;
        let element = Descr::new(layout.dtype(), ByteOrder::Little);
        let copier = Copier::new(bytes, layout, element)?;
        let inner = &gpu.inner;
        let texel = (shape.format.channels * shape.format.component.size()) as u64;
        let bytes = u64::from(shape.width)
            .saturating_mul(u64::from(shape.height))
            .saturating_mul(u64::from(shape.layers))
            .saturating_mul(texel);
        gpu.check_host_memory(bytes)?;
        let scopes = Scopes::push(&inner.device);
        let texture = inner.device.create_texture(&wgpu::TextureDescriptor {
            label: Some("bytelens texture"),
            size: shape.extent(),
            mip_level_count: 1,
            sample_count: 1,
            dimension,
            format: shape.format.format,
            usage: wgpu::TextureUsages::TEXTURE_BINDING
                | wgpu::TextureUsages::COPY_DST
                | wgpu::TextureUsages::COPY_SRC,
            view_formats: &[],
        });
        let filled = fill_texture(gpu, &copier, &shape, &texture);
        scopes
            .pop_needing("texture upload", Some(bytes))
            .and(filled)?;
        Ok(GpuTexture {
            ctx: gpu.clone(),
            texture,
            format: shape.format,
            layout: Layout::contiguous(element.dtype, layout.shape())?
                .with_byte_order(ByteOrder::Little),
            channels: shape.channels,
        })
    }
}

/// Gathers the view row after row into the upload ring's mapped slots
/// (rows padded, RGB widened), each slot copied into the texture on the
/// GPU while the next is written.
fn fill_texture(
    gpu: &GpuContext,
    copier: &Copier<'_>,
    shape: &Shape,
    texture: &wgpu::Texture,
) -> Result<(), GpuError> {
    let inner = &gpu.inner;
    let size = shape.format.component.size();
    let (row, pitch) = row_bytes(shape.format, shape.width);
    // One row of the view, before widening.
    let src_row = shape.width as usize * shape.channels * size;
    let row_elements = shape.width as usize * shape.channels;
    let widened = shape.channels != shape.format.channels;
    let one = one(shape.format);
    let (height, layers) = (shape.height as usize, shape.layers as usize);
    let total = height * layers;
    // Whole rows of the view gathered at a time, then written (padded or
    // widened) into mapped memory.
    let per_block = (STAGE_BLOCK / src_row).max(1);
    let mut block = vec![0u8; per_block.min(total) * src_row];
    let mut wide = vec![0u8; if widened { row } else { 0 }];
    // Writes rows `first..first + n` (n ≤ per_block) to `put(i, bytes)`.
    let mut gather = |first: usize, n: usize, put: &mut dyn FnMut(usize, &[u8])| {
        let mut done = 0;
        while done < n {
            let k = per_block.min(n - done);
            let rows = &mut block[..k * src_row];
            copier.fill((first + done) * row_elements, rows);
            for (i, one_row) in rows.chunks_exact(src_row).enumerate() {
                if widened {
                    widen(one_row, &mut wide, size, one);
                    put(done + i, &wide);
                } else {
                    put(done + i, one_row);
                }
            }
            done += k;
        }
    };
    let at = |layer: usize, y: usize| wgpu::TexelCopyTextureInfo {
        texture,
        mip_level: 0,
        origin: wgpu::Origin3d {
            x: 0,
            y: y as u32,
            z: layer as u32,
        },
        aspect: wgpu::TextureAspect::All,
    };
    let per_slot = inner.chunk as usize / pitch;
    if per_slot == 0 {
        // A staging chunk smaller than one padded row (a tiny
        // `GpuOptions::staging_chunk`): row by row through the queue.
        for r in 0..total {
            gather(r, 1, &mut |_, bytes| {
                let layout = wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(row as u32),
                    rows_per_image: None,
                };
                let one_row = wgpu::Extent3d {
                    width: shape.width,
                    height: 1,
                    depth_or_array_layers: 1,
                };
                inner
                    .queue
                    .write_texture(at(r / height, r % height), bytes, layout, one_row);
            });
        }
        return Ok(());
    }
    let mut ring = lock(&inner.upload[0]);
    inner.ready_for_upload(&mut ring);
    let mut r = 0;
    while r < total {
        let (layer, y) = (r / height, r % height);
        // Whole layers in one copy where they fit, else rows of one layer.
        let whole = y == 0 && per_slot >= height;
        let n = if whole {
            (per_slot / height).min(layers - layer) * height
        } else {
            per_slot.min(height - y)
        };
        let i = ring.next_for_write(&inner.device)?;
        let slot = &ring.slots[i].buffer;
        {
            let mut view = slot
                .get_mapped_range_mut(..(n * pitch) as u64)
                .map_err(|err| GpuError::Wgpu {
                    during: "texture upload",
                    message: err.to_string(),
                })?;
            let mut mapped = view.slice(..);
            // The padding past each row is left as it is: the copy skips it.
            gather(r, n, &mut |k, bytes| {
                mapped
                    .slice(k * pitch..k * pitch + bytes.len())
                    .copy_from_slice(bytes);
            });
        }
        slot.unmap();
        let extent = wgpu::Extent3d {
            width: shape.width,
            height: if whole { shape.height } else { n as u32 },
            depth_or_array_layers: if whole { (n / height) as u32 } else { 1 },
        };
        let mut encoder = inner
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("bytelens texture upload"),
            });
        encoder.copy_buffer_to_texture(
            wgpu::TexelCopyBufferInfo {
                buffer: slot,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(pitch as u32),
                    rows_per_image: Some(if whole { shape.height } else { n as u32 }),
                },
            },
            at(layer, y),
            extent,
        );
        let index = inner.queue.submit([encoder.finish()]);
        ring.map_after(i, wgpu::MapMode::Write, inner.chunk, Some(index));
        r += n;
    }
    Ok(())
}

impl GpuTexture {
    /// The wgpu texture, to bind or copy from.
    pub fn texture(&self) -> &wgpu::Texture {
        &self.texture
    }

    /// The texture's format.
    pub fn format(&self) -> wgpu::TextureFormat {
        self.format.format
    }

    /// The format's WebGPU name (`"rgba8unorm"`).
    pub fn format_name(&self) -> &'static str {
        self.format.name
    }

    /// Width, height, and depth (3-D) or array layers (2-D).
    pub fn size(&self) -> wgpu::Extent3d {
        self.texture.size()
    }

    /// The uploaded view's shape and element (little-endian, C-contiguous):
    /// what [`download`](Self::download) gives back, RGB staying RGB.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Reads the texture back into a new [`Buffer`] of the uploaded view's
    /// shape ([`layout`](Self::layout)): the added alpha of an RGB upload
    /// is dropped again. Goes through one readback buffer of the texture's
    /// padded size.
    pub fn download(&self) -> Result<Buffer, GpuError> {
        let mut out = Buffer::new(self.layout.nbytes()).map_err(GpuError::Host)?;
        self.download_into(out.as_bytes_mut())?;
        Ok(out)
    }

    /// [`download`](Self::download) into `out`, which must be the layout's
    /// `nbytes()` long.
    pub fn download_into(&self, out: &mut [u8]) -> Result<(), GpuError> {
        if out.len() != self.layout.nbytes() {
            return Err(GpuError::SizeMismatch {
                gpu: self.layout.nbytes(),
                host: out.len(),
            });
        }
        let inner = &self.ctx.inner;
        let size = self.size();
        let (row, pitch) = row_bytes(self.format, size.width);
        let rows = (size.height * size.depth_or_array_layers) as usize;
        let scopes = Scopes::push(&inner.device);
        let readback = inner.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("bytelens texture readback"),
            size: (rows * pitch) as u64,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = inner
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("bytelens texture download"),
            });
        encoder.copy_texture_to_buffer(
            self.texture.as_image_copy(),
            wgpu::TexelCopyBufferInfo {
                buffer: &readback,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(pitch as u32),
                    rows_per_image: Some(size.height),
                },
            },
            size,
        );
        inner.queue.submit([encoder.finish()]);
        let read =
            map_now(&readback, wgpu::MapMode::Read, &inner.device, "download").and_then(|()| {
                let mapped = readback
                    .get_mapped_range(..)
                    .map_err(|err| GpuError::Wgpu {
                        during: "download",
                        message: err.to_string(),
                    })?;
                let element = self.format.component.size();
                let out_row = out.len() / rows;
                for (src, dst) in mapped.chunks(pitch).zip(out.chunks_exact_mut(out_row)) {
                    if self.channels == self.format.channels {
                        dst.copy_from_slice(&src[..row]);
                    } else {
                        narrow(&src[..row], dst, element);
                    }
                }
                Ok(())
            });
        scopes.pop("texture download").and(read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_is_named_once_and_found_by_its_name() {
        for format in known() {
            assert_eq!(texture_format(format.name), Some(format.format));
            assert_eq!(texture_format_name(format.format), Some(format.name));
            let texel = format.format.block_copy_size(None).unwrap() as usize;
            assert_eq!(
                texel,
                format.channels * format.component.size(),
                "{}",
                format.name
            );
        }
        assert_eq!(texture_format("rgb8unorm"), None);
    }

    #[test]
    fn defaults_follow_the_element_and_channel_count() {
        let name = |dtype, c| default_format(dtype, c).map(|f| f.name);
        assert_eq!(name(D::U8, 1), Some("r8unorm"));
        assert_eq!(name(D::U8, 3), Some("rgba8unorm"));
        assert_eq!(name(D::U16, 2), Some("rg16uint"));
        assert_eq!(name(D::I32, 4), Some("rgba32sint"));
        assert_eq!(name(D::F16, 3), Some("rgba16float"));
        assert_eq!(name(D::F32, 1), Some("r32float"));
        assert_eq!(name(D::F64, 1), None);
    }

    #[test]
    fn widening_adds_the_formats_one_and_narrowing_drops_it() {
        let rgb = [1u8, 2, 3, 4, 5, 6];
        let mut rgba = [0u8; 8];
        widen(&rgb, &mut rgba, 1, one(find(T::Rgba8Unorm).unwrap()));
        assert_eq!(rgba, [1, 2, 3, 255, 4, 5, 6, 255]);
        let mut back = [0u8; 6];
        narrow(&rgba, &mut back, 1);
        assert_eq!(back, rgb);
        let rgb: Vec<u8> = [0.5f32, 2.0, -1.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let mut rgba = [0u8; 16];
        widen(&rgb, &mut rgba, 4, one(find(T::Rgba32Float).unwrap()));
        assert_eq!(f32::from_le_bytes(rgba[12..].try_into().unwrap()), 1.0);
        assert_eq!(rgba[..12], rgb[..]);
        assert_eq!(one(find(T::Rgba16Float).unwrap())[..2], [0x00, 0x3C]);
        assert_eq!(one(find(T::Rgba8Snorm).unwrap())[0], 0x7F);
        assert_eq!(one(find(T::Rgba16Uint).unwrap())[..2], [1, 0]);
    }
}
