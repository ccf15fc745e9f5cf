"""Loading model and data files: bytelens against the loaders people use.

Run with `cargo xtask bench python files`. Every row is the median of
`--repeats` runs, interleaved with its baselines (measured in this same run,
with the file in the page cache):

- a 1 GiB safetensors file (16 tensors of 64 MiB): `bl.load` against
  `safetensors.numpy.load_file`, which reads every tensor into memory; and
  both followed by reading every byte (a sum), since bl.load's views read
  the file only when touched;
- saving the same 16 tensors: `bl.save` against safetensors' `save_file`,
  and one 64 MiB tensor as `.npy` against `np.save`;
- a 1 GiB .npy file: `bl.load` against `np.load(mmap_mode="r")` and `np.load`;
- a 1 GiB bfloat16 checkpoint (16 tensors of 64 MiB) into torch:
  `bl.load(framework="torch")` against `safetensors.torch.load_file` and
  against `safe_open(framework="pt")` taking every tensor; each alone (every
  tensor in hand) and followed by reading every byte (`t.view(torch.int64)
  .sum()` of each tensor, the same reduction for all three). Goal: bl.load
  at most 0.5x load_file. Skipped, saying so, where torch is not installed;
- `bl.inspect` of a 2 GiB safetensors file: its time, the bytes it read
  (/proc/self/io) and how much its resident memory grew;
- GGUF (`gguf_rows`), against gguf-py 0.19.0: opening a file of 16 Q4_K
  tensors of 1024x4096 and a Llama-3-sized tokenizer (128,256 tokens,
  scores, token types) and reading its metadata, `bl.load(path).metadata`
  against `gguf.GGUFReader(path)` (goal: at most 0.01x); and dequantising
  256 MiB of float32 output from Q8_0, Q4_0, Q4_K, Q5_K and Q6_K blocks,
  `bl.Quantized.dequantize` against `gguf.quants.dequantize` (goal: at
  least 10x as fast) and against a memcpy of the output (numpy's copy
  into an existing array). Skipped, saying so, where gguf is not installed.
"""

import argparse
import json
import os
import resource
import struct
import tempfile
import time

import numpy as np
from safetensors.numpy import load_file, save_file

import bytelens as bl
from python_copy import median_s  # this folder: interleaved medians


def read_bytes():
    """Bytes this process has read through read(2) and friends."""
    with open("/proc/self/io") as f:
        return int(dict(line.split(": ") for line in f.read().splitlines())["rchar"])


def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def touch_all(arrays):
    return sum(float(a.view(np.uint8).sum(dtype=np.uint64)) for a in arrays.values())


def torch_rows(tmp, mib, repeats, rng):
    """The torch rows (see the module's docstring), and the goal's line."""
    try:
        import ml_dtypes
        import torch
        from safetensors import safe_open
        from safetensors.torch import load_file as torch_load_file
    except ImportError as err:
        return [], f"torch rows skipped: {err}"
    n = 16
    per = mib * (1 << 20) // n // 2
    path = os.path.join(tmp, "model-bf16.safetensors")
    bl.save(path, {f"layer{i}.weight": rng.standard_normal(per, dtype=np.float32).astype(ml_dtypes.bfloat16)
                   for i in range(n)})  # fmt: skip

    def bl_torch():
        return bl.load(path, framework="torch")

    def st_open():
        with safe_open(path, framework="pt") as f:
            return {k: f.get_tensor(k) for k in f.keys()}

    def read_all(tensors):
        return sum(int(t.view(torch.int64).sum()) for t in tensors.values())

    calls = [
        bl_torch,
        lambda: torch_load_file(path),
        st_open,
        lambda: read_all(bl_torch()),
        lambda: read_all(torch_load_file(path)),
        lambda: read_all(st_open()),
    ]
    t = median_s(calls, repeats)
    rows = [
        ("torch bf16", 'bl.load(framework="torch")', t[0], t[1]),
        ("torch bf16", "safetensors.torch load_file", t[1], t[1]),
        ("torch bf16", 'safe_open(framework="pt")', t[2], t[1]),
        ("torch bf16", "bl.load + read all", t[3], t[4]),
        ("torch bf16", "load_file + read all", t[4], t[4]),
        ("torch bf16", "safe_open + read all", t[5], t[4]),
    ]
    os.unlink(path)
    verdict = lambda r: "met" if r <= 0.5 else "NOT met"  # noqa: E731
    goal = (
        f"torch goal, bl.load(framework=\"torch\") <= 0.5x safetensors.torch.load_file: "
        f"{t[0] / t[1]:.3f}x every tensor ({verdict(t[0] / t[1])}), "
        f"{t[3] / t[4]:.3f}x with every byte read ({verdict(t[3] / t[4])})"
    )
    return rows, goal


def synthetic_blocks(rng, qtype, nbytes):
    """``nbytes`` (rounded down to whole blocks) of random ``qtype`` blocks
    whose float16 fields are finite, as a 2-D uint8 array of one block a row."""
    fields = bl._native.ggml_type(qtype)
    n = nbytes // fields["bytes"]
    blocks = rng.integers(0, 256, size=(n, fields["bytes"]), dtype=np.uint8)
    for _, descr, _, offset in fields["fields"]:
        if descr == "<f2":
            blocks[:, offset : offset + 2] = rng.normal(0, 0.02, n).astype(np.float16).view(np.uint8).reshape(n, 2)
    return blocks


def gguf_rows(tmp, repeats, rng):
    """The GGUF rows (see the module's docstring) and the goals' lines."""
    try:
        import gguf
        from gguf.quants import dequantize as gguf_dequantize
    except ImportError:
        return [], ["gguf goals: skipped, gguf (gguf-py) is not installed (cargo xtask installs it into venv-np2)"]
    T = gguf.GGMLQuantizationType
    path = os.path.join(tmp, "model.gguf")
    w = gguf.GGUFWriter(path, arch="llama")
    w.add_tokenizer_model("gpt2")
    w.add_token_list([f"tok{i}" for i in range(128_256)])
    w.add_token_scores(rng.normal(size=128_256).astype(np.float32).tolist())
    w.add_token_types([1] * 128_256)
    for i in range(16):
        blocks = synthetic_blocks(rng, "Q4_K", 1024 * 4096 // 256 * 144).reshape(1024, -1)
        w.add_tensor(f"blk.{i}.weight", blocks, raw_dtype=T.Q4_K)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    open_reps = max(1, min(repeats, 3))  # GGUFReader takes seconds a run
    t = median_s([lambda: bl.load(path).metadata, lambda: gguf.GGUFReader(path)], open_reps)
    rows = [
        ("gguf", "bl.load + metadata", t[0], t[1]),
        ("gguf", "gguf.GGUFReader", t[1], t[1]),
    ]
    opened = t[0] / t[1]
    goals = [f"goal open a GGUF file with a 128,256-token vocabulary <= 0.01x GGUFReader: {opened:.4f} "
             f"({'met' if opened <= 0.01 else 'MISSED'})"]
    os.unlink(path)
    out_bytes = 256 << 20
    out = np.empty(out_bytes // 4, np.float32)
    copy_src = np.ones_like(out)
    for qtype in ("Q8_0", "Q4_0", "Q4_K", "Q5_K", "Q6_K"):
        info = bl._native.ggml_type(qtype)
        blocks = synthetic_blocks(rng, qtype, out_bytes // 4 // info["block"] * info["bytes"])
        q = bl.Quantized.from_blocks(qtype, blocks, (out.size,))
        calls = [
            lambda: q.dequantize(out=out),
            lambda: gguf_dequantize(blocks, T[qtype]),
            lambda: np.copyto(out, copy_src),
        ]
        t = median_s(calls, max(1, min(repeats, 3)))
        rows += [
            (qtype, "Quantized.dequantize(out=)", t[0], t[2]),
            (qtype, "gguf.quants.dequantize", t[1], t[2]),
            (qtype, "memcpy of the output", t[2], t[2]),
        ]
        speedup = t[1] / t[0]
        goals.append(f"goal dequantise {qtype} to float32 >= 10x gguf.quants.dequantize: {speedup:.1f} "
                     f"({'met' if speedup >= 10 else 'MISSED'}); {t[0] / t[2]:.2f}x a memcpy "
                     f"({os.cpu_count()} threads)")
    return rows, goals


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--mib", type=int, default=1024, help="size of the files loaded")
    parser.add_argument("--json", help="also write the rows here (python_before_after.py reads them)")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        n = 16
        per = args.mib * (1 << 20) // n // 4
        rng = np.random.default_rng(1)
        tensors = {f"layer{i}.weight": rng.standard_normal(per, dtype=np.float32) for i in range(n)}
        st_path = os.path.join(tmp, "model.safetensors")
        bl.save(st_path, tensors)
        del tensors
        calls = [
            lambda: bl.load(st_path),
            lambda: load_file(st_path),
            lambda: touch_all(bl.load(st_path)),
            lambda: touch_all(load_file(st_path)),
        ]
        t = median_s(calls, args.repeats)
        rows += [
            ("safetensors", "bl.load", t[0], t[1]),
            ("safetensors", "safetensors load_file", t[1], t[1]),
            ("safetensors", "bl.load + read all", t[2], t[3]),
            ("safetensors", "load_file + read all", t[3], t[3]),
        ]
        os.unlink(st_path)

        # save: the same tensors written atomically (bytes planned by the
        # Rust file layer), against safetensors' writer and np.save.
        tensors = {f"layer{i}.weight": rng.standard_normal(per, dtype=np.float32) for i in range(n)}
        one = tensors["layer0.weight"]
        npy_out = os.path.join(tmp, "out.npy")
        calls = [
            lambda: bl.save(st_path, tensors),
            lambda: save_file(tensors, st_path),
            lambda: bl.save(npy_out, one),
            lambda: np.save(npy_out, one),
        ]
        t = median_s(calls, args.repeats)
        rows += [
            ("save", "bl.save safetensors", t[0], t[1]),
            ("save", "safetensors save_file", t[1], t[1]),
            ("save", "bl.save .npy", t[2], t[3]),
            ("save", "np.save", t[3], t[3]),
        ]
        del tensors, one
        os.unlink(st_path)
        os.unlink(npy_out)

        more, torch_goal = torch_rows(tmp, args.mib, args.repeats, rng)
        rows += more
        more, gguf_goals = gguf_rows(tmp, args.repeats, rng)
        rows += more

        npy_path = os.path.join(tmp, "data.npy")
        np.save(npy_path, rng.standard_normal(args.mib * (1 << 20) // 8))
        calls = [
            lambda: bl.load(npy_path),
            lambda: np.load(npy_path, mmap_mode="r"),
            lambda: np.load(npy_path),
        ]
        t = median_s(calls, args.repeats)
        rows += [
            ("npy", "bl.load", t[0], t[1]),
            ("npy", "np.load(mmap_mode='r')", t[1], t[1]),
            ("npy", "np.load", t[2], t[1]),
        ]
        os.unlink(npy_path)

        # inspect: a 2 GiB file (sparse: its data is never read).
        big = os.path.join(tmp, "big.safetensors")
        header = {}
        chunk = 1 << 26
        for i in range(32):
            header[f"t{i}"] = {"dtype": "F32", "shape": [chunk // 4], "data_offsets": [i * chunk, (i + 1) * chunk]}
        text = json.dumps(header).encode()
        with open(big, "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text)
            f.truncate(8 + len(text) + 32 * chunk)
        before_read, before_rss = read_bytes(), rss()
        start = time.perf_counter()
        report = bl.inspect(big)
        spent = time.perf_counter() - start
        read, grew = read_bytes() - before_read, rss() - before_rss
        assert len(report.arrays) == 32
        big_size = os.path.getsize(big)
    print(f"\n{'file':<12} {'what':<28} {'median':>10} {'ratio':>8}")
    for group, name, seconds, baseline in rows:
        print(f"{group:<12} {name:<28} {seconds * 1e3:>8.2f}ms {seconds / baseline:>7.3f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([[group, name, seconds, seconds / baseline] for group, name, seconds, baseline in rows], f)
    print(f"\n{torch_goal}")
    print("\n".join(gguf_goals))
    print(
        f"\nbl.inspect of a {big_size:,}-byte "
        f"safetensors file: {spent * 1e3:.2f} ms, {read:,} bytes read, resident memory +{grew:,} bytes "
        f"(peak RSS of the process {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MiB)"
    )


if __name__ == "__main__":
    main()
