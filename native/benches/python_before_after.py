"""Two builds of the Python package, one benchmark, in one run: before and after a change.

    python native/benches/python_before_after.py BEFORE AFTER files --mib 256 --repeats 3

BEFORE and AFTER are folders holding a `bytelens` package (an unpacked
wheel each: `unzip -d BEFORE target/wheels/bytelens-*.whl`); `files` or
`views` names the script (python_files.py, python_views.py), and what
follows goes to it. The script runs `--rounds` times for each build,
alternating (before, after, before, ...), so that the machine's slow
minutes fall on both; each row is then the median over rounds of its
time and of its ratio to its baseline (measured in the same process), and
`after/before` compares the medians of the ratios: a change holds its
ratios when that is near 1.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("script", choices=["files", "views"])
    parser.add_argument("--rounds", type=int, default=3)
    args, rest = parser.parse_known_args()
    runs = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            for which in ("before", "after"):
                out = os.path.join(tmp, f"{which}-{round_}.json")
                env = dict(os.environ, PYTHONPATH=os.pathsep.join([getattr(args, which), HERE]))
                script = os.path.join(HERE, f"python_{args.script}.py")
                subprocess.run(
                    [sys.executable, script, "--json", out, *rest], env=env, check=True, stdout=subprocess.DEVNULL
                )
                with open(out) as f:
                    runs[which].append(json.load(f))
    medians = {}
    for which, rounds in runs.items():
        for rows in rounds:
            for group, name, value, ratio in rows:
                medians.setdefault((group, name), {}).setdefault(which, []).append((value, ratio))
    unit = "ms" if args.script == "files" else "ns"
    scale = 1e3 if args.script == "files" else 1.0
    print(f"{args.script}: median of {args.rounds} rounds each, before = {args.before}, after = {args.after}")
    print(f"{'group':<12} {'what':<40} {'before':>10} {'after':>10} {'ratio before':>13} {'ratio after':>12} {'after/before':>13}")
    for (group, name), by in medians.items():
        before = [statistics.median(v) for v in zip(*by["before"])]
        after = [statistics.median(v) for v in zip(*by["after"])]
        print(
            f"{group:<12} {name:<40} {before[0] * scale:>8.2f}{unit} {after[0] * scale:>8.2f}{unit} "
            f"{before[1]:>12.3f}x {after[1]:>11.3f}x {after[1] / before[1]:>12.2f}x"
        )


if __name__ == "__main__":
    main()
