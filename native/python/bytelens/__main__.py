"""``bytelens inspect FILE`` (also ``python -m bytelens inspect FILE``):
what an ``.npy``, ``.npz``, safetensors or raw file holds, and a typed
hexdump of its bytes, reading only the headers and the rows shown."""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from ._files import FileReport, _itemsize, inspect
from ._native import FormatError, LayoutError

ROW = 16  # bytes per hexdump row


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.replace(" ", "").split(",") if part)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bytelens", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    cmd = commands.add_parser("inspect", help="describe a file's arrays and show its bytes")
    cmd.add_argument("file")
    cmd.add_argument("--dtype", help="view a raw file as this dtype ('<f4', 'int16', ...)")
    cmd.add_argument("--offset", type=int, default=0, help="byte offset of the raw view")
    cmd.add_argument("--shape", type=_ints, help="shape of the raw view, e.g. 3,4")
    cmd.add_argument("--strides", type=_ints, help="byte strides of the raw view, e.g. 16,4")
    cmd.add_argument("--plan", help="a file with a plan's text (name, then 'field dtype length... [@offset]' lines)")
    cmd.add_argument("--dump", action="store_true", help="a typed hexdump: offsets, hex, and the values")
    cmd.add_argument("--array", help="the array to dump (default: the first)")
    cmd.add_argument("--at", type=int, help="the byte offset to dump from (default: the array's start)")
    cmd.add_argument("--rows", type=int, default=8, help="hexdump rows of 16 bytes (default 8)")
    return parser


def dump(path: str, report: FileReport, name: str | None, at: int | None, rows: int) -> str:
    """Rows of 16 bytes from ``at``: offset, hex, and the values of the
    chosen array's elements that start in the row."""
    if not report.arrays:
        raise ValueError(f"{path} has no arrays to dump")
    array = report[name] if name is not None else report.arrays[0]
    if array.descr is None:
        raise ValueError(f"bytelens has no dtype {array.dtype} to show the values of {array.name!r} in")
    itemsize = _itemsize(array.descr)
    dtype = np.dtype(array.descr) if "bfloat16" not in array.descr else None
    start = array.offset if at is None else at
    start -= start % ROW
    lines = [f"{array.name}: {array.dtype} {array.shape} at {array.offset}..{array.end}"]
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(ROW * max(rows, 0))
    for row in range(0, len(data), ROW):
        chunk = data[row : row + ROW]
        offset = start + row
        hexes = " ".join(f"{b:02x}" for b in chunk).ljust(3 * ROW - 1)
        values = []
        # The elements of a C-order array that start in this row.
        first = max(array.offset, offset + (array.offset - offset) % itemsize)
        for element in range(first, min(offset + ROW, array.end), itemsize):
            raw = bytes(data[element - start : element - start + itemsize])
            if len(raw) < itemsize:
                break
            values.append(_value(raw, dtype, array.descr))
        lines.append(f"{offset:>12}  {hexes}  {' '.join(values)}")
    return "\n".join(lines)


def _value(raw: bytes, dtype: np.dtype | None, descr: str) -> str:
    if dtype is None:  # bfloat16: the high half of a float32
        bits = int.from_bytes(raw, "little" if descr.startswith("<") else "big")
        return f"{np.frombuffer((bits << 16).to_bytes(4, 'little'), '<f4')[0]:g}"
    value = np.frombuffer(raw, dtype)[0]
    return f"{value:g}" if dtype.kind == "f" else str(value)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    plan = None
    if args.plan is not None:
        with open(args.plan, encoding="utf-8") as f:
            plan = f.read()
    try:
        report = inspect(
            args.file, dtype=args.dtype, offset=args.offset, shape=args.shape, strides=args.strides, plan=plan
        )
        print(report)
        if args.dump:
            print(dump(args.file, report, args.array, args.at, args.rows))
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, as other tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (FormatError, LayoutError, OSError, ValueError, KeyError) as err:
        print(f"bytelens inspect: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
