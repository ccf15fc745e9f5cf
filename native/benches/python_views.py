"""How much a bytelens view costs next to numpy's own ways of viewing bytes.

Run with `cargo xtask bench python` (builds the release wheel first). Every
row is the median over repeats of the per-call time of a loop, and every
ratio is against a baseline measured in this same run:

- `buf.view(dtype)` against `np.frombuffer(bytearray, dtype)` at 1 KiB and
  1 GiB (goal: at most 0.5x, and the same at both sizes: a view never
  touches the bytes);
- `np.from_dlpack(buf)` against `np.from_dlpack(ndarray)` (goal: at most 1.2x).
"""

import argparse
import json
import os
import statistics
import timeit

# numpy's BLAS threads spin on idle cores and make every timing noisier.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import bytelens as bl  # noqa: E402


def per_call_ns(stmt, names, calls, repeats):
    """Median over `repeats` of the mean time of `stmt` in timeit's loop of `calls`."""
    timer = timeit.Timer(stmt, globals=names)
    return statistics.median(t / calls * 1e9 for t in timer.repeat(repeats, calls))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--big", type=int, default=1 << 30, help="bytes of the large buffers")
    parser.add_argument("--json", help="also write the rows here (python_before_after.py reads them)")
    args = parser.parse_args()
    rows = []  # (group, name, ns, baseline name)

    def measure(group, name, stmt, names, baseline=None):
        ns = per_call_ns(stmt, names, args.calls, args.repeats)
        rows.append((group, name, ns, baseline))

    for label, nbytes in [("1 KiB", 1024), (f"{args.big >> 20} MiB", args.big)]:
        names = {
            "np": np,
            "raw": bytearray(nbytes),
            "buf": bl.Buffer(nbytes),
            "i32": np.dtype(np.int32),
        }
        names["arr"] = np.frombuffer(names["raw"], np.uint8)
        base = "np.frombuffer(bytearray)"
        measure(label, base, "np.frombuffer(raw, i32)", names)
        measure(label, "ndarray.view(int32)", "arr.view(i32)", names, base)
        measure(label, 'buf.view("<i4")', 'buf.view("<i4")', names, base)
        measure(label, "buf.view(np.dtype(int32))", "buf.view(i32)", names, base)
        measure(label, "buf.view(np.int32)", "buf.view(np.int32)", names, base)
        measure(
            label,
            "buf.view(<f4, offset, shape, strides)",
            'buf.view("<f4", offset=64, shape=(4, 8), strides=(4, 16))',
            names,
            base,
        )
        del names

    names = {"np": np, "bl": bl, "arr": np.zeros(1024, np.uint8), "buf": bl.Buffer(1024)}
    base = "np.from_dlpack(ndarray)"
    measure("DLPack", base, "np.from_dlpack(arr)", names)
    measure("DLPack", "np.from_dlpack(buf)", "np.from_dlpack(buf)", names, base)
    measure("DLPack", "Buffer.from_dlpack(ndarray)", "bl.Buffer.from_dlpack(arr)", names, base)
    measure("DLPack", "Buffer.wrap(ndarray)", "bl.Buffer.wrap(arr)", names, base)

    medians = {(group, name): ns for group, name, ns, _ in rows}
    print(f"numpy {np.__version__}, bytelens {bl.__version__}; median of {args.repeats} x {args.calls} calls")
    print(f"{'group':<10} {'operation':<40} {'ns/call':>9} {'vs baseline':>12}")
    for group, name, ns, baseline in rows:
        ratio = "baseline" if baseline is None else f"{ns / medians[(group, baseline)]:.2f}x"
        print(f"{group:<10} {name:<40} {ns:>9.1f} {ratio:>12}")

    if args.json:
        with open(args.json, "w") as f:
            json.dump([[g, n, ns, ns / medians[(g, b or n)]] for g, n, ns, b in rows], f)

    print("\ngoals:")
    for group, _ in [(g, None) for g in dict.fromkeys(g for g, *_ in rows) if g != "DLPack"]:
        ratio = medians[(group, 'buf.view("<i4")')] / medians[(group, "np.frombuffer(bytearray)")]
        verdict = "met" if ratio <= 0.5 else "MISSED"
        print(f"  buf.view at {group}: {ratio:.2f}x np.frombuffer (goal <= 0.5x): {verdict}")
    ratio = medians[("DLPack", "np.from_dlpack(buf)")] / medians[("DLPack", base)]
    verdict = "met" if ratio <= 1.2 else "MISSED"
    print(f"  np.from_dlpack(buf): {ratio:.2f}x np.from_dlpack(ndarray) (goal <= 1.2x): {verdict}")


if __name__ == "__main__":
    main()
