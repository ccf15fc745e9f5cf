"""``bytelens inspect FILE`` (also ``python -m bytelens inspect FILE``):
what an ``.npy``, ``.npz``, safetensors, GGUF or raw file holds, and a
typed hexdump of its bytes (a quantised GGUF tensor's blocks dequantised),
reading only the headers and the rows shown."""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Callable, Iterator, NoReturn

import numpy as np

from ._files import (
    COMPRESSED,
    ArrayInfo,
    FileReport,
    Quantized,
    _file_dtype,
    _itemsize,
    _open,
    _printable,
    _reason,
    inspect,
    read_elements,
)
from ._native import FormatError, Layout, LayoutError, Plan
from ._files._raw import _quote, elements

ROW = 16  # bytes per hexdump row
#: Values listed on a row at most (a broadcast view repeats one element
#: as often as its shape says).
ROW_VALUES = 16
#: Rows read from the file at a time.
CHUNK_ROWS = 256
#: The longest plan file read: a plan is a few lines of text.
PLAN_LIMIT = 1 << 20
#: Array names listed at most when ``--array`` names none of them.
NAMES_SHOWN = 10


class _Parser(argparse.ArgumentParser):
    """argparse, its errors one line (``bytelens inspect: argument
    --shape: ...``) with exit status 1, as the command's other errors."""

    def error(self, message: str) -> NoReturn:
        self.exit(1, f"{self.prog}: {_printable(message)} (see {self.prog} --help)\n")


def _dims(text: str, what: str, negative: bool) -> tuple[int, ...]:
    """``3,4`` (or ``(3, 4)``, ``3,``; empty for no axes) as a tuple; an
    empty item (``1,,2``), a non-integer or (unless ``negative``) a
    negative number is refused, not skipped."""
    body = text.strip()
    if body.startswith("(") and body.endswith(")"):
        body = body[1:-1].strip()
    if not body:
        return ()
    parts = body.split(",")
    if len(parts) > 1 and not parts[-1].strip():  # a trailing comma, as in (3,)
        parts.pop()
    out = []
    for i, part in enumerate(parts, 1):
        part = part.strip()
        if not part:
            raise argparse.ArgumentTypeError(f"{_quote(text)} has no {what} at item {i}; give {what}s like 3,4")
        try:
            n = int(part)
        except ValueError:
            where = "" if part == text.strip() else f" in {_quote(text)}"
            raise argparse.ArgumentTypeError(f"{_quote(part)}{where} is not a whole number") from None
        if n < 0 and not negative:
            raise argparse.ArgumentTypeError(f"{_quote(text)} has the negative length {n} at item {i}")
        out.append(n)
    return tuple(out)


def _lengths(text: str) -> tuple[int, ...]:
    return _dims(text, "length", negative=False)


def _strides(text: str) -> tuple[int, ...]:
    return _dims(text, "stride", negative=True)


def _whole(least: int, what: str) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``least``."""

    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{_quote(text)} is not a whole number") from None
        if n < least:
            raise argparse.ArgumentTypeError(f"{n} is {'negative' if n < 0 else 'too few'}; {what}")
        return n

    return parse


#: Options whose values may start with a minus sign.
_SIGNED = ("--offset", "--shape", "--strides", "--at")


def _signed_values(argv: list[str]) -> list[str]:
    """``--strides -4,4`` as ``--strides=-4,4``: argparse takes a value
    that starts with ``-`` for an option, unless it is one number."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] in _SIGNED and i + 1 < len(argv) and re.fullmatch(r"-[0-9][0-9,\s()+-]*", argv[i + 1]):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="bytelens", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    cmd = commands.add_parser("inspect", help="describe a file's arrays and show its bytes")
    cmd.add_argument("file")
    raw = cmd.add_argument_group("a raw file, as one view (as Buffer.view takes it)")
    raw.add_argument("--dtype", help="view a raw file as this dtype ('<f4', 'int16', 'bf16', ...)")
    raw.add_argument("--offset", type=int, help="byte offset of the view's first element (default 0)")
    raw.add_argument("--shape", type=_lengths, help="shape of the view, e.g. 3,4 (default: every element to the end)")
    raw.add_argument("--strides", type=_strides, help="byte strides of the view, e.g. 16,4 or -4,4; needs --shape")
    cmd.add_argument("--plan", help="a file with a plan's text (name, then 'field dtype length... [@offset]' lines)")
    dump = cmd.add_argument_group("the hexdump")
    dump.add_argument("--dump", action="store_true", help="a typed hexdump: offsets, hex, and the values")
    dump.add_argument("--array", help="the array to dump (default: the first)")
    dump.add_argument(
        "--at",
        type=_whole(0, "give a byte offset in the file"),
        help="the byte offset to dump from (default: the array's first byte)",
    )
    dump.add_argument("--rows", type=_whole(1, "give 1 or more"), help="hexdump rows of 16 bytes (default 8)")
    return parser


def dump(path: str, report: FileReport, name: str | None, at: int | None, rows: int) -> Iterator[str]:
    """Rows of 16 bytes from ``at`` (rounded down to a row): offset, hex,
    and the values of the chosen array's elements that start in the row,
    in the array's order (which strides may reverse or repeat), at most
    :data:`ROW_VALUES` of them. Reads the file a chunk of rows at a time."""
    array = _chosen(path, report, name)
    if array.ggml is not None:
        yield from _dump_blocks(path, array, at, rows)
        return
    if array.descr is None:
        raise ValueError(f"{path}: bytelens has no dtype {array.dtype} to show the values of {_quote(array.name)} in")
    if array.copy == COMPRESSED:
        raise ValueError(
            f"{path}: {_quote(array.name)} is in the compressed member {_quote(array.member or '')}, "
            "so its bytes are not the file's to dump"
        )
    size = report.size
    if array.shard is not None:  # a sharded checkpoint's: its bytes are its shard's
        path = os.path.join(os.path.dirname(report.path), array.shard)
        size = os.stat(path).st_size
    if at is not None and at >= size:
        raise ValueError(f"{path}: --at {at} is past the end of the file ({size:,} bytes)")
    itemsize = _itemsize(array.descr)
    is_float = _file_dtype(array.descr)["float"]
    shape, strides = array.shape, array.strides or ()
    yield _title(array)
    start = array.start if at is None else at
    start -= start % ROW
    f, _ = _open(path)
    with f:
        f.seek(start)
        for first in range(0, rows, CHUNK_ROWS):
            count = min(CHUNK_ROWS, rows - first)
            # The chunk's rows, and the rest of an element that starts in the last.
            data = f.read(count * ROW + itemsize - 1)
            f.seek(-max(len(data) - count * ROW, 0), os.SEEK_CUR)
            base = start + first * ROW
            for row in range(0, min(len(data), count * ROW), ROW):
                offset = base + row
                hexes = " ".join(f"{b:02x}" for b in data[row : row + ROW]).ljust(3 * ROW - 1)
                found, more = elements(array.offset, shape, strides, offset, offset + ROW, ROW_VALUES)
                read = read_elements(array.descr, data, [b - base for _, b in found])
                values = [_value(value, is_float) for value in read]
                if more:
                    values.append("...")
                yield f"{offset:>12}  {hexes}  {' '.join(values)}".rstrip()
            if len(data) < count * ROW + itemsize - 1:
                return  # the end of the file


def _dump_blocks(path: str, array: ArrayInfo, at: int | None, rows: int) -> Iterator[str]:
    """A quantised tensor's blocks from the one holding byte ``at`` (the
    first without it), one a row: its offset, its number and its first
    values dequantised. Reads only the blocks shown."""
    assert array.ggml is not None
    q = Quantized(np.zeros(0, np.uint8), array.ggml, (0,))
    size, block = q.blocks.dtype.itemsize, q.values_per_block
    yield f"{_title(array)}, {array.blocks:,} blocks of {block} values in {size} bytes"
    first = 0 if at is None else max(0, at - array.offset) // size
    if at is not None and not array.offset <= at < array.end:
        raise ValueError(f"{path}: --at {at} is not in {_quote(array.name)} ({array.offset}..{array.end})")
    count = max(0, min(rows, array.blocks - first))
    f, _ = _open(path)
    with f:
        f.seek(array.offset + first * size)
        data = f.read(count * size)
    count = len(data) // size  # the file may have shrunk since its header was read
    raw = np.frombuffer(data[: count * size], np.uint8)
    values = Quantized.from_blocks(array.ggml, raw, (count * block,)).dequantize()
    for i in range(count):
        shown = " ".join(f"{v:g}" for v in values[i * block : i * block + ROW_VALUES].tolist())
        more = " ..." if block > ROW_VALUES else ""
        yield f"{array.offset + (first + i) * size:>12}  block {first + i}: {shown}{more}"


def _chosen(path: str, report: FileReport, name: str | None) -> ArrayInfo:
    if not report.arrays:
        raise ValueError(f"{path} has no arrays to dump")
    if name is None:
        return report.arrays[0]
    for array in report.arrays:
        if array.name == name:
            return array
    names = [_quote(a.name) for a in report.arrays[:NAMES_SHOWN]]
    if len(report.arrays) > NAMES_SHOWN:
        names.append(f"... ({len(report.arrays):,} in all)")
    raise ValueError(f"no array {_quote(name)} in {path}; it has: {', '.join(names)}")


def _title(array: ArrayInfo) -> str:
    """``name: dtype shape at start..end``, and the strides and the first
    element's byte where they are not C order from the start."""
    line = f"{_quote(array.name)[1:-1]}: {array.dtype} {array.shape} at {array.start}..{array.end}"
    if array.descr is not None and array.strides is not None:
        c_order = Layout(array.descr, array.shape, None, max(array.offset, 0)).strides
        if array.strides != c_order or array.offset != array.start:
            line += f", strides {array.strides}, element 0 at byte {array.offset}"
    return line


def _value(value: bool | int | float | None, is_float: bool) -> str:
    """An element the core read (``read_elements``: every float format,
    bfloat16 and float8 included, decoded by the core, not here)."""
    if value is None:
        return "?"  # the file ended (it shrank since its header was read)
    return f"{value:g}" if is_float else str(value)


def _read_plan(path: str) -> Plan:
    """The plan in the text file at ``path``, errors naming it."""
    where = f"plan file {path}"
    f, _ = _open(path, "plan file ")
    with f:
        data = f.read(PLAN_LIMIT + 1)
    if len(data) > PLAN_LIMIT:
        raise ValueError(f"{where}: longer than {PLAN_LIMIT:,} bytes, where a plan is a few lines of text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{where}: not UTF-8 text (byte {err.start} is 0x{data[err.start]:02x})") from None
    try:
        return Plan.from_text(text)
    except (LayoutError, ValueError, TypeError) as err:
        raise ValueError(f"{where}: {err}") from None


def _report(args: argparse.Namespace) -> FileReport:
    plan = _read_plan(args.plan) if args.plan is not None else None
    offset = 0 if args.offset is None else args.offset
    return inspect(args.file, dtype=args.dtype, offset=offset, shape=args.shape, strides=args.strides, plan=plan)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(_signed_values(sys.argv[1:] if argv is None else argv))
    unused = None
    if args.dtype is None and (args.offset, args.shape, args.strides) != (None, None, None):
        unused = "--offset, --shape and --strides describe a raw view: give --dtype too"
    elif not args.dump and (args.array, args.at, args.rows) != (None, None, None):
        unused = "--array, --at and --rows choose what --dump shows: give --dump too"
    if unused is not None:
        print(f"bytelens inspect: {unused} (see bytelens inspect --help)", file=sys.stderr)
        return 1
    try:
        report = _report(args)
        # Each line is escaped where it came from (names, keys, values, paths);
        # escaped here again, line by line, so that nothing a file holds
        # reaches the terminal as a control character.
        for line in str(report).split("\n"):
            print(_printable(line))
        if args.dump:
            for line in dump(args.file, report, args.array, args.at, 8 if args.rows is None else args.rows):
                print(_printable(line))
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, as other tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as err:
        named = f"{err.filename}: {_reason(err)}" if err.filename is not None else str(err)
        print(f"bytelens inspect: {_printable(named)}", file=sys.stderr)
        return 1
    except MemoryError:
        print(f"bytelens inspect: {_printable(args.file)}: out of memory", file=sys.stderr)
        return 1
    except (FormatError, LayoutError, ValueError, KeyError, TypeError) as err:
        print(f"bytelens inspect: {_printable(str(err))}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
