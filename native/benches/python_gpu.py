"""Model files to the GPU: `bytelens.gpu.load` against the usual way.

Run by `cargo xtask bench gpu` after the Rust GPU benchmark, or alone with
`cargo xtask bench python gpu`. A safetensors file of `--mib` MiB (16
float32 tensors) is written once; then, interleaved, each the median of
`--repeats` runs, with the file in the page cache both times (dropping the
page cache needs root and a quiet machine; this run cannot promise either):

- `gpu.load(path)`: the mapped file's tensors straight into GPU buffers,
  the next tensors' pages brought in while one is copied;
- the usual way: `safetensors.numpy.load_file(path)` (every tensor read
  into memory), then one `gpu.upload` per tensor.

Each run's buffers are dropped before the next. Prints one goal line.

Then a GGUF file shaped like a Q4_K_M model (per layer: a float32 norm, a
Q4_K and a Q6_K matrix of 2048x2048; `--mib` / 128 layers), to float16 on
the GPU: `gpu.load(path, dtype="float16")`, which dequantises on the way
through the staging memory, against gguf-py's way: `GGUFReader(path)`,
`gguf.quants.dequantize` of each tensor, then `gpu.upload(values,
dtype="float16")`. A second goal line (skipped, saying so, without gguf).
"""

import argparse
import os
import tempfile

import numpy as np
from safetensors.numpy import load_file, save_file

from bytelens import gpu
from python_copy import median_s  # this folder: interleaved medians


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--mib", type=int, default=1024, help="size of the safetensors file")
    args = parser.parse_args()
    info = gpu.adapter_info()
    tensors = 16
    per = (args.mib << 20) // tensors // 4
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.safetensors")
        rng = np.random.default_rng(0)
        save_file({f"layer{i}.weight": rng.random(per, dtype=np.float32) for i in range(tensors)}, path)
        size = os.path.getsize(path)

        def bytelens_load():
            on_gpu = gpu.load(path)
            assert len(on_gpu) == tensors

        def usual():
            arrays = load_file(path)
            on_gpu = {name: gpu.upload(array) for name, array in arrays.items()}
            assert len(on_gpu) == tensors

        # A check first: the same bytes arrive both ways.
        first = gpu.load(path)["layer0.weight"].download()
        assert first.tobytes() == load_file(path)["layer0.weight"].tobytes()
        ours, theirs = median_s([bytelens_load, usual], args.repeats)
    gib = size / (1 << 30)
    print(f"adapter: {info['name']} ({info['backend']}); {size >> 20} MiB safetensors, {tensors} tensors, "
          f"page cache warm, median of {args.repeats}")
    print(f"{'gpu.load':<48} {ours * 1e3:9.1f} ms {gib / ours:7.2f} GiB/s")
    print(f"{'load_file + one gpu.upload per tensor':<48} {theirs * 1e3:9.1f} ms {gib / theirs:7.2f} GiB/s")
    ratio = theirs / ours
    verdict = "met" if ratio >= 1.5 else "MISSED"
    print(f"goal gpu.load of a {size >> 20} MiB safetensors file >= 1.5x load_file + gpu.upload "
          f"per tensor (warm): {ratio:.2f} ({verdict})")
    gguf_goal(args)


def gguf_goal(args):
    """The GGUF rows and goal (see the module's docstring)."""
    try:
        import gguf
        from gguf.quants import dequantize
    except ImportError:
        print("goal gpu.load of a Q4_K_M-shaped GGUF file: skipped, gguf (gguf-py) is not installed")
        return
    from python_files import synthetic_blocks

    T = gguf.GGMLQuantizationType
    layers = max(1, args.mib // 128)
    rng = np.random.default_rng(2)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.gguf")
        w = gguf.GGUFWriter(path, arch="llama")
        for i in range(layers):
            w.add_tensor(f"blk.{i}.attn_norm.weight", rng.random(2048, dtype=np.float32))
            for kind, qtype in (("attn_q", "Q4_K"), ("ffn_down", "Q6_K")):
                info_q = gguf.GGML_QUANT_SIZES[T[qtype]]
                blocks = synthetic_blocks(rng, qtype, 2048 * 2048 // info_q[0] * info_q[1]).reshape(2048, -1)
                w.add_tensor(f"blk.{i}.{kind}.weight", blocks, raw_dtype=T[qtype])
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        size = os.path.getsize(path)

        def bytelens_load():
            on_gpu = gpu.load(path, dtype="float16")
            assert len(on_gpu) == 3 * layers

        def usual():
            reader = gguf.GGUFReader(path)
            on_gpu = {}
            for t in reader.tensors:
                values = dequantize(t.data, t.tensor_type).reshape([int(n) for n in reversed(t.shape)])
                on_gpu[t.name] = gpu.upload(values, dtype="float16")
            assert len(on_gpu) == 3 * layers

        # A check first: the same values arrive both ways.
        reader = gguf.GGUFReader(path)
        t = reader.tensors[1]
        want = dequantize(t.data, t.tensor_type).astype(np.float16)
        assert gpu.load(path, dtype="float16")[t.name].download().tobytes() == want.tobytes()
        ours, theirs = median_s([bytelens_load, usual], args.repeats)
    print(f"\nQ4_K_M-shaped GGUF, {size >> 20} MiB, {3 * layers} tensors, to float16, median of {args.repeats}")
    print(f"{'gpu.load(dtype=float16)':<48} {ours * 1e3:9.1f} ms")
    print(f"{'GGUFReader + dequantize + gpu.upload per tensor':<48} {theirs * 1e3:9.1f} ms")
    ratio = theirs / ours
    verdict = "met" if ratio >= 1.5 else "MISSED"
    print(f"goal gpu.load of a Q4_K_M-shaped GGUF file >= 1.5x GGUFReader + dequantize + gpu.upload "
          f"per tensor (warm): {ratio:.2f} ({verdict})")


if __name__ == "__main__":
    main()
