// The tensor panel's GPU runs (tensor-gpu.js), in a module worker of their
// own: loadToGpu's staging of the tensor's bytes into GPU buffers and the
// combining of the shaders' records run here, so that no task of the page
// runs long whatever the tensor and however busy the computer.
//
// Messages in:  { type: "device", id }: this worker's WebGPU device
//               { type: "run", id, options }: gpuStatistics(options), with
//                 the package, the device and a signal added
//               { type: "cancel", id }
// Messages out: { type: "device", id, adapter, limits } or { ..., reason }
//               { type: "progress", id, loaded, total }
//               { type: "done", id, result } (the pictures' arrays transferred)
//               { type: "cancelled" | "error", id, message }

import init, * as wasm from "./pkg/bytelens_wasm.js";
import { gpuDevice, gpuStatistics } from "./tensor-gpu.js";

const ready = init();
const runs = new Map(); // run id → its AbortController

self.onmessage = (e) => {
  const m = e.data;
  if (m.type === "device") {
    gpuDevice().then(({ adapter, limits, reason }) => self.postMessage({ type: "device", id: m.id, adapter, limits, reason }));
  } else if (m.type === "cancel") {
    runs.get(m.id)?.abort();
  } else if (m.type === "run") {
    run(m);
  }
};

async function run({ id, options }) {
  const controller = new AbortController();
  runs.set(id, controller);
  try {
    await ready;
    const { device, reason } = await gpuDevice();
    if (!device) throw new Error(reason);
    const result = await gpuStatistics({
      ...options,
      wasm,
      device,
      signal: controller.signal,
      onProgress: ({ loaded, total }) => self.postMessage({ type: "progress", id, loaded, total }),
    });
    const pictures = result.heat ? [result.heat.mean.values.buffer, result.heat.max.values.buffer] : [];
    self.postMessage({ type: "done", id, result }, pictures);
  } catch (err) {
    const cancelled = controller.signal.aborted || err?.name === "AbortError";
    self.postMessage({ type: cancelled ? "cancelled" : "error", id, message: String(err?.message ?? err) });
  } finally {
    runs.delete(id);
  }
}
