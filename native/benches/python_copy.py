"""How fast bl.ascontiguous copies and converts, next to numpy and memcpy.

Run with `cargo xtask bench python` (after python_views.py), or on its own
with the installed package. Every row is the median of `--repeats` timed
calls after one warm-up call; every ratio is a speed ratio (the baseline's
time over the row's) against rows measured in this same run. memcpy is
`np.copyto` between contiguous arrays of the same dtype: the ceiling.

- transposed 8192x8192 float32 into C order: `bl.ascontiguous(a.T)` against
  `np.copyto(b, a.T)` (goal: at least 8x);
- seed 002's `transpose(1, 0, 2, 3)` of a (64, 64, 32, 32) float64 array
  against a memcpy of the same bytes (goal: at least 0.5x memcpy's speed);
- a byteswapping copy of 256 MiB of float32 against `a.byteswap()` (goal:
  at least 2x);
- float32 -> float16 and float16 -> float32 against numpy's astype (goal:
  at least 4x), float32 -> bfloat16 against ml_dtypes' astype (goal: at
  least 1.5x);
- float32 -> float8_e4m3fn and float8_e5m2, and back to float32, against
  ml_dtypes' astype (goal: at least 4x), the float8 arrays converted from
  the same 256 MiB of float32.

GB/s counts the bytes read (the source's nbytes) per second.
"""

import argparse
import os
import statistics
import time

# numpy's BLAS threads spin on idle cores and make every timing noisier.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import bytelens as bl  # noqa: E402

try:
    import ml_dtypes  # noqa: E402
except ImportError:  # bfloat16 rows need it
    ml_dtypes = None


def median_s(calls, repeats, rotate=False):
    """Median seconds of each of `calls` over `repeats` rounds that run every
    call once (interleaved, so drift in the machine's load hits all rows
    alike), after one warm-up call of each. With `rotate`, each round starts
    one call later, so that every call takes every place in the order as
    often: where a call leaves work behind for the next (an engine freeing
    the last object), no row always pays for another's."""
    for call in calls:
        call()
    times = [[] for _ in calls]
    for round_ in range(repeats):
        shift = round_ % len(calls) if rotate else 0
        for i in list(range(shift, len(calls))) + list(range(shift)):
            start = time.perf_counter()
            calls[i]()
            times[i].append(time.perf_counter() - start)
    return [statistics.median(spent) for spent in times]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--side", type=int, default=8192, help="the transposed square's side")
    parser.add_argument("--mib", type=int, default=256, help="MiB of the byteswap and conversion sources")
    parser.add_argument("--markdown", action="store_true", help="also print the table in Markdown")
    args = parser.parse_args()
    rows = []  # (group, name, seconds, source bytes)
    rng = np.random.default_rng(2)

    def measure(group, nbytes, calls):
        """One group's rows: `calls` maps each row's name to its call."""
        medians = median_s(list(calls.values()), args.repeats)
        rows.extend((group, name, s, nbytes) for name, s in zip(calls, medians))

    # Transposed square.
    n = args.side
    group = f"transposed {n}x{n} float32"
    a = rng.random((n, n), dtype=np.float32)
    b = np.empty_like(a)
    measure(group, a.nbytes, {
        "memcpy": lambda: np.copyto(b, a),
        "numpy np.copyto(b, a.T)": lambda: np.copyto(b, a.T),
        "bl.ascontiguous(a.T)": lambda: bl.ascontiguous(a.T),
        "bl.ascontiguous(a.T, out=b)": lambda: bl.ascontiguous(a.T, out=b),
    })
    del a, b

    # Seed 002: a permutation of the two outer axes.
    group = "seed 002 transpose(1,0,2,3) float64"
    a = rng.random((64, 64, 32, 32))
    p = a.transpose(1, 0, 2, 3)
    b = np.empty(p.shape)
    measure(group, a.nbytes, {
        "memcpy": lambda: np.copyto(b, a),
        "numpy np.copyto(b, p)": lambda: np.copyto(b, p),
        "bl.ascontiguous(p)": lambda: bl.ascontiguous(p),
        "bl.ascontiguous(p, out=b)": lambda: bl.ascontiguous(p, out=b),
    })
    del a, p, b

    # Byte order and dtype conversions of contiguous arrays.
    count = (args.mib << 20) // 4
    f32 = rng.random(count, dtype=np.float32) * 1000
    f16 = f32.astype(np.float16)
    swapped = f32.dtype.newbyteorder()
    same = np.empty_like(f32)
    into_swapped = np.empty(count, dtype=swapped)
    group = f"byteswap {args.mib} MiB float32"
    measure(group, f32.nbytes, {
        "memcpy": lambda: np.copyto(same, f32),
        "numpy a.byteswap()": lambda: f32.byteswap(),
        "bl.ascontiguous(a, a.dtype.newbyteorder())": lambda: bl.ascontiguous(f32, dtype=swapped),
        "numpy np.copyto(b, a), b of the other order": lambda: np.copyto(into_swapped, f32),
        "bl.ascontiguous(a, a.dtype.newbyteorder(), out=b)": lambda: bl.ascontiguous(f32, dtype=swapped, out=into_swapped),
    })
    del into_swapped

    group = f"float32 -> float16, {args.mib} MiB"
    into_f16 = np.empty(count, dtype=np.float16)
    measure(group, f32.nbytes, {
        "memcpy": lambda: np.copyto(same, f32),
        "numpy a.astype(float16)": lambda: f32.astype(np.float16),
        "bl.ascontiguous(a, float16)": lambda: bl.ascontiguous(f32, dtype=np.float16),
        "numpy np.copyto(h, a), h float16": lambda: np.copyto(into_f16, f32, casting="same_kind"),
        "bl.ascontiguous(a, float16, out=h)": lambda: bl.ascontiguous(f32, dtype=np.float16, out=into_f16),
    })
    del into_f16

    group = f"float16 -> float32, {args.mib // 2} MiB"
    half = np.empty_like(f16)
    measure(group, f16.nbytes, {
        "memcpy": lambda: np.copyto(half, f16),
        "numpy a.astype(float32)": lambda: f16.astype(np.float32),
        "bl.ascontiguous(a, float32)": lambda: bl.ascontiguous(f16, dtype=np.float32),
    })
    del f16, half

    if ml_dtypes is not None:
        group = f"float32 -> bfloat16, {args.mib} MiB"
        measure(group, f32.nbytes, {
            "memcpy": lambda: np.copyto(same, f32),
            "ml_dtypes a.astype(bfloat16)": lambda: f32.astype(ml_dtypes.bfloat16),
            "bl.ascontiguous(a, bfloat16)": lambda: bl.ascontiguous(f32, dtype="bf16"),
        })
        # Values across float8's range (subnormals, every binade, a little
        # overflow: 2^-10 .. 2^9.2), not uniform ones, which would all land
        # in a few binades; every other one negative.
        spread = np.exp2(f32 * np.float32(19.2 / 1000) - np.float32(10))
        spread[1::2] *= -1
        for name in ("float8_e4m3fn", "float8_e5m2"):
            f8 = getattr(ml_dtypes, name)
            group = f"float32 -> {name}, {args.mib} MiB"
            measure(group, spread.nbytes, {
                "memcpy": lambda: np.copyto(same, spread),
                f"ml_dtypes a.astype({name})": lambda: spread.astype(f8),
                f"bl.ascontiguous(a, {name})": lambda: bl.ascontiguous(spread, dtype=name),
            })
            small = spread.astype(f8)
            copy = np.empty_like(small)
            group = f"{name} -> float32, {args.mib // 4} MiB"
            measure(group, small.nbytes, {
                "memcpy": lambda: np.copyto(copy, small),
                "ml_dtypes a.astype(float32)": lambda: small.astype(np.float32),
                "bl.ascontiguous(a, float32)": lambda: bl.ascontiguous(small, dtype=np.float32),
            })
            del small, copy
        del spread
    del f32, same

    report(rows, args)


def report(rows, args):
    times = {(group, name): s for group, name, s, _ in rows}
    print(f"\nnumpy {np.__version__}, bytelens {bl.__version__}"
          + (f", ml_dtypes {ml_dtypes.__version__}" if ml_dtypes else "")
          + f"; median of {args.repeats} calls, speed ratios against rows of this run")
    print(f"{'group':<38} {'operation':<44} {'ms':>8} {'GB/s':>7} {'vs numpy':>9} {'vs memcpy':>10}")
    for group, name, s, nbytes in rows:
        base = next((t for (g, n), t in times.items() if g == group and n.split()[0] in ("numpy", "ml_dtypes")), None)
        vs_numpy = "-" if base is None or name.startswith(("numpy", "ml_dtypes", "memcpy")) else f"{base / s:.2f}x"
        vs_memcpy = f"{times[(group, 'memcpy')] / s:.2f}x"
        print(f"{group:<38} {name:<44} {s * 1e3:>8.2f} {nbytes / s / 1e9:>7.2f} {vs_numpy:>9} {vs_memcpy:>10}")

    if args.markdown:
        print("\n| group | operation | ms | GB/s | vs numpy | vs memcpy |\n|---|---|---:|---:|---:|---:|")
        for group, name, s, nbytes in rows:
            base = next(t for (g, n), t in times.items() if g == group and n.split()[0] in ("numpy", "ml_dtypes"))
            vs_numpy = "-" if name.startswith(("numpy", "ml_dtypes", "memcpy")) else f"{base / s:.2f}×"
            op = name if name == "memcpy" else f"`{name}`"
            print(f"| {group} | {op} | {s * 1e3:.1f} | {nbytes / s / 1e9:.2f} | {vs_numpy} "
                  f"| {times[(group, 'memcpy')] / s:.2f}× |")

    def speed(group, name, baseline):
        return times[(group, baseline)] / times[(group, name)]

    goals = []
    g = next(g for g, *_ in rows if g.startswith("transposed"))
    # Like for like: numpy's copyto writes into an array it already has.
    goals.append((f"{g}: bl.ascontiguous(a.T, out=b) vs np.copyto(b, a.T)",
                  speed(g, "bl.ascontiguous(a.T, out=b)", "numpy np.copyto(b, a.T)"), 8.0))
    g = "seed 002 transpose(1,0,2,3) float64"
    goals.append((f"{g}: bl.ascontiguous(p, out=b) vs memcpy",
                  speed(g, "bl.ascontiguous(p, out=b)", "memcpy"), 0.5))
    for prefix, name, baseline, goal in [
        ("byteswap", "bl.ascontiguous(a, a.dtype.newbyteorder())", "numpy a.byteswap()", 2.0),
        # Not the goal: into an existing array, not slower than numpy's own.
        ("byteswap", "bl.ascontiguous(a, a.dtype.newbyteorder(), out=b)",
         "numpy np.copyto(b, a), b of the other order", 1.0),
        ("float32 -> float16", "bl.ascontiguous(a, float16)", "numpy a.astype(float16)", 4.0),
        ("float16 -> float32", "bl.ascontiguous(a, float32)", "numpy a.astype(float32)", 4.0),
        ("float32 -> bfloat16", "bl.ascontiguous(a, bfloat16)", "ml_dtypes a.astype(bfloat16)", 1.5),
        ("float32 -> float8_e4m3fn", "bl.ascontiguous(a, float8_e4m3fn)",
         "ml_dtypes a.astype(float8_e4m3fn)", 4.0),
        ("float32 -> float8_e5m2", "bl.ascontiguous(a, float8_e5m2)", "ml_dtypes a.astype(float8_e5m2)", 4.0),
        ("float8_e4m3fn -> float32", "bl.ascontiguous(a, float32)", "ml_dtypes a.astype(float32)", 4.0),
        ("float8_e5m2 -> float32", "bl.ascontiguous(a, float32)", "ml_dtypes a.astype(float32)", 4.0),
    ]:
        g = next((g for g, *_ in rows if g.startswith(prefix)), None)
        if g is not None:
            goals.append((f"{g}: {name} vs {baseline}", speed(g, name, baseline), goal))
    print("\ngoals:")
    for text, ratio, goal in goals:
        verdict = "met" if ratio >= goal else "MISSED"
        print(f"  {text}: {ratio:.2f}x (goal >= {goal}x): {verdict}")


if __name__ == "__main__":
    main()
