//! bytelens for JavaScript: bytes in WebAssembly memory, read and written
//! through layouts the core checks, with `DataView` semantics for every
//! dtype and byte order.
//!
//! ```js
//! import init, { Buffer, Plan, dtypes } from "./pkg/bytelens_wasm.js";
//! await init();
//! const buf = new Buffer(16);
//! buf.write("<i4", {}, [0x11223344]);
//! buf.read("<i2", { shape: [2] });          // Int16Array [0x3344, 0x1122]
//! buf.write("<f4", {}, new Float32Array([1.5, 2, 3, 4]));  // or a plain array
//! buf.typed("<i4");                         // Int32Array over wasm memory, fresh on every call
//! dtypes().map((d) => d.name);              // ["bool", "uint8", "int8", ...]
//! Plan.fromText("Work\nA <f4 4\nunion\nD <i4 6").nbytes;  // 24
//! ```
//!
//! Typed arrays over wasm memory are detached (length 0) when the memory
//! grows, so `typed()` makes a new one on every call and the package keeps
//! none; `read`, `write`, `bytes` and `offsets` copy, `read` and `write`
//! in bulk (see `transfer`).
//!
//! The modules: `convert` reads JS arguments (numbers, lists, options
//! objects) and `value` converts element values; `transfer` moves a view's
//! elements to and from JS typed arrays in one copy (with `js/arrays.js`,
//! whose functions `js` imports, the one module that does); `buffer`,
//! `layout`, `plan` and `dtypes` are the API, thin over the core: a view's
//! arguments resolve by [`ViewArgs`](bytelens_core::ViewArgs), plans are
//! the core's [`OwnedPlan`](bytelens_core::OwnedPlan), the dtype table is
//! the core's.
//! Every error becomes a JS error in one place, [`BindingError`]'s
//! conversion: a `RangeError` with the core's message and `kind`.

/// talc instead of std's dlmalloc (see Cargo.toml); wasm32 without atomics
/// is single-threaded, which its `TalcSyncCell` relies on.
#[cfg(all(target_family = "wasm", not(target_feature = "atomics")))]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

mod buffer;
mod convert;
mod dtypes;
mod error;
#[cfg(feature = "files")]
mod files;
mod gpu;
#[cfg(feature = "files")]
mod gpu_files;
mod js;
mod layout;
mod plan;
#[cfg(feature = "files")]
mod stats;
mod transfer;
mod types;
mod value;

pub use buffer::Buffer;
pub use dtypes::{describe_dtype, dtypes};
pub use error::BindingError;
#[cfg(feature = "files")]
pub use files::read_header;
pub use gpu::upload_view;
#[cfg(feature = "files")]
pub use gpu_files::{dequant_passes, dequant_shader, load_to_gpu};
pub use layout::JsLayout;
pub use plan::Plan;
#[cfg(feature = "files")]
pub use stats::{JsHeatmap, JsHistogram, JsStats, JsTally, Range, StatsResult, dequantize};
pub use types::{
    ByteSource, DTypeDescription, DTypeTable, FieldSpecs, LayoutOptions, LayoutSpec, Numbers,
    PlanFields, Ranges, TypedArray, Values,
};
