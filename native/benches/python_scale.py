"""How bytelens buffers travel through Ray and Dask, next to numpy arrays.

Run with `cargo xtask bench python scale` (or as part of `cargo xtask bench
python`). Every row is the median of `--repeats` round trips after one
warm-up, interleaved with its baseline so that drift in the machine's load
hits both alike, and in a rotating order (an engine frees the last object
during the next round trip, so whichever row came second would pay for
it); each ratio is the row's time over the baseline's, measured
in this same run (goal: at most 1.1x):

- Ray: `ray.put` -> a task that reads one byte -> `ray.get`, 256 MiB: a
  `bl.Buffer` against a numpy array of the same size;
- Dask, a LocalCluster of two worker processes: scatter -> a task that
  reads one byte -> gather of the scattered object, the same sizes (Dask
  reads a message's first out-of-band frame into the block of its header,
  at no particular alignment; bytelens' Dask serializer sends spare bytes
  after a Buffer's, and on arrival moves them up to an aligned address in
  that block, where numpy takes the misaligned memory as it is);
- Ray: a strided (transposed) view of a 256 MiB buffer sent as
  `bl.View.of(view)` against sending its contiguous buffer.
"""

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")

import numpy as np  # noqa: E402

import bytelens as bl  # noqa: E402
from python_copy import median_s  # noqa: E402  (this folder: interleaved medians)


def first_byte(x):
    """The first byte of the first element: one byte read, whatever the layout."""
    if isinstance(x, bl.Buffer):
        return int(x.view("<u1")[0])
    a = x.array() if isinstance(x, bl.View) else np.asarray(x)
    return int(np.asarray(a[(0,) * a.ndim]).reshape(1).view(np.uint8)[0])


def ray_rows(nbytes, repeats):
    import ray

    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        task = ray.remote(first_byte)

        def round_trip(obj):
            def call():
                ref = ray.put(obj)
                assert ray.get(task.remote(ref)) == 0
                back = ray.get(ref)
                del back, ref
            return call

        array = np.zeros(nbytes, np.uint8)
        buf = bl.Buffer(nbytes)
        side = int((nbytes // 4) ** 0.5)
        square = bl.Buffer(side * side * 4)
        transposed = square.view("<f4", 0, (side, side), (4, side * 4))
        numpy_s, buffer_s, contiguous_s, view_s = median_s(
            [round_trip(array), round_trip(buf), round_trip(square), round_trip(bl.View.of(transposed))],
            repeats,
            rotate=True,
        )
        return [
            ("Ray put -> task -> get", f"numpy array, {nbytes >> 20} MiB", numpy_s, None),
            ("Ray put -> task -> get", f"bl.Buffer, {nbytes >> 20} MiB", buffer_s, numpy_s),
            ("Ray strided view", f"its contiguous bl.Buffer ({side}x{side} f4)", contiguous_s, None),
            ("Ray strided view", "bl.View.of(transposed view)", view_s, contiguous_s),
        ]
    finally:
        ray.shutdown()


def dask_rows(nbytes, repeats):
    import distributed

    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:

        def round_trip(obj):
            def call():
                [future] = client.scatter([obj], direct=True)
                assert client.submit(first_byte, future, pure=False).result() == 0
                back = future.result()
                del back, future
            return call

        numpy_s, buffer_s = median_s(
            [round_trip(np.zeros(nbytes, np.uint8)), round_trip(bl.Buffer(nbytes))],
            repeats,
            rotate=True,
        )
        group = "Dask scatter -> task -> gather"
        return [
            (group, f"numpy array, {nbytes >> 20} MiB", numpy_s, None),
            (group, f"bl.Buffer, {nbytes >> 20} MiB (aligned in place on arrival)", buffer_s, numpy_s),
        ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--engines", default="ray,dask", help="which of ray and dask to run")
    args = parser.parse_args()
    nbytes = args.mib << 20
    engines = args.engines.split(",")
    rows = (ray_rows(nbytes, args.repeats) if "ray" in engines else []) + (
        dask_rows(nbytes, args.repeats) if "dask" in engines else []
    )

    import dask

    versions = f"dask {dask.__version__}"
    if "ray" in engines:
        import ray

        versions = f"ray {ray.__version__}, {versions}"
    print(f"\nnumpy {np.__version__}, bytelens {bl.__version__}, {versions}; medians of {args.repeats}")
    print(f"{'group':<32} {'sent':<58} {'ms':>9} {'vs baseline':>12}")
    for group, sent, s, base in rows:
        ratio = "baseline" if base is None else f"{s / base:.2f}x"
        print(f"{group:<32} {sent:<58} {s * 1e3:>9.1f} {ratio:>12}")
    if args.markdown:
        print("\n| group | sent | ms | time vs baseline |\n|---|---|---:|---:|")
        for group, sent, s, base in rows:
            ratio = "baseline" if base is None else f"{s / base:.2f}×"
            print(f"| {group} | {sent} | {s * 1e3:.1f} | {ratio} |")
    print("\ngoals (time, at most 1.1x the baseline):")
    for group, sent, s, base in rows:
        if base is not None:
            verdict = "met" if s / base <= 1.1 else "missed"
            print(f"  {group}, {sent}: {s / base:.2f}x: {verdict}")


if __name__ == "__main__":
    main()
