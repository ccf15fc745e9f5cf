"""The ``bytelens inspect`` command and raw views (issue 20, items 11 and
14): byte ranges from the core's byte span, hexdump values walked in the
view's order (negative, zero and Fortran strides, bfloat16), and every
error a one-line ``bytelens inspect: ...`` with exit status 1. The
command runs in a child process with a time limit, so that a hang fails."""

import itertools
import json
import os
import resource
import struct
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import bytelens as bl
from bytelens._raw import _inspect_raw, elements


def command(*args, timeout=30, memory=None):
    """``python -m bytelens inspect ARGS`` in a child (with an address-space
    limit of ``memory`` bytes if given); a child running past ``timeout``
    fails the test."""

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return subprocess.run(
        [sys.executable, "-m", "bytelens", "inspect", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=limit if memory else None,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
    )


def refused(*args, says):
    """Runs the command and asserts that it failed with one line on stderr,
    ``bytelens inspect: ...`` containing each of ``says``."""
    done = command(*args)
    assert done.returncode == 1, (done.returncode, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("bytelens inspect: "), done.stderr
    for text in [says] if isinstance(says, str) else says:
        assert text in lines[0], lines[0]
    return lines[0]


def dump_lines(done):
    """The hexdump's title and rows: the lines after the report."""
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # The report's first line, its indented rows, then the dump's title.
    title = next(i for i in range(1, len(lines)) if not lines[i].startswith(" "))
    return lines[title], lines[title + 1 :]


def row_values(row):
    """The values column of a hexdump row (after its 16 hex bytes)."""
    return row[12 + 2 + 3 * 16 - 1 + 2 :].split()


@pytest.fixture
def counting(tmp_path):
    """A 16-byte raw file: the int32 0, 1, 2, 3."""
    path = tmp_path / "r.bin"
    path.write_bytes(np.arange(4, dtype="<i4").tobytes())
    return path


# Item 11: the byte range and the dump of strided raw views.


def test_layout_byte_span_is_the_cores():
    assert bl.Layout("<i4", (4,), (-4,), 12).byte_span == (0, 16)
    assert bl.Layout("<i4", (3, 4), (0, 4), 8).byte_span == (8, 24)
    assert bl.Layout("<f8", (0, 5), (-8, 8), 40).byte_span == (40, 40)
    assert bl.Layout("<u2", (2, 3), (2, 4), 6).byte_span == (6, 18)


def test_negative_strides_cover_bytes_below_the_offset(counting):
    report = _inspect_raw(str(counting), 16, "<i4", 12, (4,), (-4,), None)
    view = report.arrays[0]
    assert (view.offset, view.start, view.end, view.nbytes) == (12, 0, 16, 16)
    title, rows = dump_lines(command(counting, *"--dtype <i4 --shape 4 --strides -4 --offset 12 --dump".split()))
    assert "at 0..16" in title and "element 0 at byte 12" in title, title
    assert len(rows) == 1 and rows[0].startswith("           0  00 00 00 00 01 00")
    assert row_values(rows[0]) == ["3", "2", "1", "0"], rows


def test_a_view_past_the_start_is_refused(counting):
    # Element 0 at byte 4, stride -8: element 1 would be at byte -4.
    args = "--dtype <i4 --shape 2 --strides=-8 --offset 4".split()
    refused(counting, *args, says=[str(counting), "bytes -4..8"])


def test_zero_strides_repeat_elements(tmp_path):
    path = tmp_path / "u2.bin"
    path.write_bytes(np.arange(40, dtype="<u2").tobytes())
    view = _inspect_raw(str(path), 80, "<u2", 4, (3, 4), (0, 2), None).arrays[0]
    assert (view.start, view.end, view.nbytes) == (4, 12, 24)
    title, rows = dump_lines(command(path, *"--dtype <u2 --shape 3,4 --strides 0,2 --offset 4 --dump --rows 2".split()))
    assert "at 4..12" in title, title
    assert row_values(rows[0]) == ["2", "3", "4", "5"] * 3 and row_values(rows[1]) == [], rows
    # A broadcast of one element a million times lists a row's first 16, then "...".
    title, rows = dump_lines(command(path, *"--dtype <u2 --shape 1000000 --strides 0 --offset 6 --dump".split()))
    assert row_values(rows[0]) == ["3"] * 16 + ["..."] and "at 6..8" in title, (title, rows)


def test_fortran_order_arrays_dump_in_their_order(tmp_path):
    path = tmp_path / "f.npy"
    array = np.asfortranarray(np.arange(60, dtype="<i2").reshape(3, 4, 5))
    np.save(path, array)
    info = bl.inspect(path)["array"]
    title, rows = dump_lines(command(path, "--dump", "--rows", "100"))
    assert f"at {info.offset}..{info.offset + 120}" in title and f"strides {array.strides}" in title, title
    assert len(rows) == 120 // 16 + 1
    offsets = {i: info.offset + sum(n * s for n, s in zip(i, array.strides)) for i in np.ndindex(array.shape)}
    for row in rows:
        start = int(row.split()[0])
        expected = [str(array[index]) for index in np.ndindex(array.shape) if start <= offsets[index] < start + 16]
        assert row_values(row) == expected, row


def test_bfloat16_values_in_view_order(tmp_path):
    values = np.array([1.0, -2.0, 0.5, 3.25, 65536.0], dtype=ml_dtypes.bfloat16)
    path = tmp_path / "bf16.bin"
    path.write_bytes(values.tobytes())
    title, rows = dump_lines(command(path, *"--dtype bf16 --shape 5 --strides=-2 --offset 8 --dump".split()))
    assert "at 0..10" in title, title
    assert row_values(rows[0]) == ["65536", "3.25", "0.5", "-2", "1"], rows


def test_an_element_across_rows_is_read_whole(tmp_path):
    # A misaligned safetensors tensor: float64 from byte 13, across rows.
    path = tmp_path / "odd.safetensors"
    header = json.dumps({"x": {"dtype": "F64", "shape": [2], "data_offsets": [0, 16]}}).encode()
    header += b" " * ((5 - len(header)) % 16)  # 8 + its length: 13 modulo 16
    path.write_bytes(struct.pack("<Q", len(header)) + header + np.array([1.5, -7.25], "<f8").tobytes())
    assert bl.inspect(path)["x"].offset % 16 == 13
    title, rows = dump_lines(command(path, "--dump"))
    assert [row_values(row) for row in rows] == [["1.5"], ["-7.25"]], rows
    title, rows = dump_lines(command(path, "--dump", "--rows", "1"))  # past the bytes shown
    assert [row_values(row) for row in rows] == [["1.5"]], rows


def test_rows_are_read_a_chunk_at_a_time(tmp_path):
    # Rows past the end of the file stop the dump; none are read at once.
    path = tmp_path / "u1.bin"
    path.write_bytes(bytes(range(256)) * 64)
    done = command(path, "--dtype", "|u1", "--dump", "--rows", str(10**12), timeout=60, memory=1 << 30)
    title, rows = dump_lines(done)
    assert len(rows) == 1024 and row_values(rows[-1])[-1] == "255"


@st.composite
def views(draw):
    ndim = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=ndim, max_size=ndim)))
    strides = tuple(draw(st.lists(st.integers(-24, 24), min_size=ndim, max_size=ndim)))
    return draw(st.integers(0, 200)), shape, strides


@given(views(), st.integers(-20, 220), st.integers(0, 40), st.integers(1, 20))
def test_elements_match_a_walk_of_every_index(view, lo, width, limit):
    offset, shape, strides = view
    every = [
        (index, offset + sum(i * s for i, s in zip(index, strides)))
        for index in itertools.product(*map(range, shape))
    ]
    inside = [(index, byte) for index, byte in every if lo <= byte < lo + width]
    found, more = elements(offset, shape, strides, lo, lo + width, limit)
    assert found == inside[:limit]
    assert more == (len(inside) > limit)


def test_elements_of_a_huge_view_take_time_for_what_is_shown():
    # 10^5 x 10^5 float32 in Fortran order (40 GB): a row in the middle.
    shape, strides = (100_000, 100_000), (4, 400_000)
    lo = 4 * 12_345 + 400_000 * 54_321
    found, more = elements(0, shape, strides, lo, lo + 16, 16)
    assert found == [((12_345 + i, 54_321), lo + 4 * i) for i in range(4)] and not more
    # Overlapping elements: stride 1 for 4-byte elements, on both axes.
    found, more = elements(0, (10**9, 10**9), (1, 1), 10**6, 10**6 + 16, 16)
    assert len(found) == 16 and more


# Item 14: errors a person can act on, one line each, exit status 1.


def test_strides_without_a_shape_are_the_cores_missing_shape(counting):
    with pytest.raises(bl.LayoutError, match="strides were given without a shape") as err:
        _inspect_raw(str(counting), 16, "<i4", 0, None, (4,), None)
    assert err.value.kind == "MissingShape" and str(counting) in str(err.value)
    refused(counting, "--dtype", "<i4", "--strides", "4", says=[str(counting), "without a shape"])


def test_raw_view_errors_name_the_file_and_keep_their_class(counting):
    with pytest.raises(bl.BoundsError, match=r"r\.bin: the view reaches bytes 4\.\.20") as err:
        _inspect_raw(str(counting), 16, "<i4", 4, (4,), None, None)
    assert err.value.kind == "OutOfBounds"
    with pytest.raises(bl.LayoutError, match="r.bin: field 'late': the view reaches bytes 16..18"):
        _inspect_raw(str(counting), 16, None, 0, None, None, "H\nearly <u2 2 @0\nlate <u2 1 @16\n")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--shape", "1,,2"], ["--shape", "'1,,2' has no length at item 2"]),
        (["--shape", ",4"], ["--shape", "no length at item 1"]),
        (["--shape", "2,x"], ["--shape", "'x' in '2,x' is not a whole number"]),
        (["--shape", "-2"], ["--shape", "negative length -2"]),
        (["--shape", "4", "--strides", "4,,4"], ["--strides", "'4,,4' has no stride at item 2"]),
        (["--shape", "2", "--dump", "--at", "-100"], ["--at", "-100 is negative"]),
        (["--shape", "2", "--dump", "--rows", "0"], ["--rows", "0 is too few"]),
        (["--shape", "5"], ["r.bin", "bytes 0..20", "16 bytes"]),
        # Buffer.view's own words (the core's ViewArgs rule, as for a view).
        (["--offset", "-4"], ["r.bin", "offset -4 is outside the buffer of 16 bytes"]),
    ],
)
def test_bad_numbers_are_refused(counting, args, says):
    refused(counting, "--dtype", "<i4", *args, says=says)


def test_shapes_read_as_written(counting):
    for shape in ["2,2", "(2, 2)", " 2 , 2 "]:
        done = command(counting, "--dtype", "<i4", "--shape", shape)
        assert done.returncode == 0 and "(2, 2)" in done.stdout, (shape, done.stderr)
    assert "(4,)" in command(counting, "--dtype", "<i4", "--shape", "4,").stdout
    # Negative strides after a space, which argparse would take for an option.
    done = command(counting, "--dtype", "<i4", "--shape", "2,2", "--strides", "-8,-4", "--offset", "12", "--dump")
    assert row_values(dump_lines(done)[1][0]) == ["3", "2", "1", "0"]
    assert "()" in command(counting, "--dtype", "<i4", "--shape", "").stdout


def test_options_that_would_be_ignored_are_refused(counting):
    refused(counting, "--shape", "4", says="give --dtype too")
    refused(counting, "--dtype", "<i4", "--array", "view", says="give --dump too")


def test_at_past_the_end(counting):
    says = [str(counting), "--at 16 is past the end", "16 bytes"]
    refused(counting, "--dtype", "<i4", "--dump", "--at", "16", says=says)


def test_a_missing_array_lists_some_names(tmp_path):
    path = tmp_path / "m.safetensors"
    bl.save(path, {f"layer{i:04d}." + "w" * 100: np.zeros(1, "<f4") for i in range(1000)})
    line = refused(path, "--dump", "--array", "nothere", says=["no array 'nothere' in", str(path), "(1,000 in all)"])
    assert "layer0000." in line and len(line) < 1000, line


def test_a_compressed_member_is_not_dumped_from_the_file(tmp_path):
    path = tmp_path / "c.npz"
    np.savez_compressed(path, a=np.arange(100, dtype="<i4"))
    refused(path, "--dump", says=["compressed member 'a.npy'"])


@pytest.mark.parametrize("kind", ["missing", "folder", "not utf-8", "fifo", "device", "huge", "bad line"])
def test_plan_files_that_cannot_be_read(counting, tmp_path, kind):
    plan = tmp_path / "x.plan"
    says = {
        "missing": "no such file",
        "folder": "not a regular file (a directory)",
        "not utf-8": "not UTF-8 text (byte 7 is 0xff)",
        "fifo": "not a regular file (a FIFO)",
        "device": "not a regular file (a character device)",
        "huge": "longer than 1,048,576 bytes",
        "bad line": 'the plan\'s line "x <u4 zz"',
    }[kind]
    if kind == "folder":
        plan.mkdir()
    elif kind == "not utf-8":
        plan.write_bytes(b"Header\n\xff <u4 1\n")
    elif kind == "fifo":
        os.mkfifo(plan)  # with no writer: open() would block forever
    elif kind == "device":
        plan = "/dev/zero"
    elif kind == "huge":
        plan.write_bytes(b"H\n" + b"# x\n" * (1 << 18) + b"\n")
    elif kind == "bad line":
        plan.write_text("Header\nx <u4 zz\n")
    refused(counting, "--plan", plan, says=[f"plan file {plan}", says])


def test_files_that_cannot_be_read_raw(tmp_path, counting):
    refused(tmp_path / "nothere.bin", "--dtype", "<i4", says=["nothere.bin: no such file"])
    refused(tmp_path, "--dtype", "<i4", says=["not a regular file"])
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    refused(fifo, "--dtype", "<i4", says=["not a regular file (a FIFO)"])
    refused(counting, "--dtype", "int7", says=["r.bin", 'unknown dtype "int7"'])


def test_names_in_messages_are_one_short_line(tmp_path):
    path = tmp_path / "n.safetensors"
    header = json.dumps({"a\nb" + "x" * 5000: {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 4)
    line = refused(path, "--dump", "--array", "c\nd", says=["no array 'c\\nd'", "'a\\nb"])
    assert len(line) < 300, line


def test_raw_doctests():
    import doctest

    import bytelens._raw

    failed, attempted = doctest.testmod(bytelens._raw)
    assert attempted >= 3 and failed == 0


def test_bl_inspect_refuses_strides_without_a_shape(counting):
    with pytest.raises(bl.LayoutError, match="strides were given without a shape") as err:
        bl.inspect(counting, dtype="<i4", strides=(4,))
    assert err.value.kind == "MissingShape" and str(counting) in str(err.value)


def test_the_report_gives_a_views_byte_span(counting):
    report = bl.inspect(counting, dtype="<i4", shape=(4,), strides=(-4,), offset=12)
    assert (report["view"].start, report["view"].end) == (0, 16)
    assert "view  <i4    (4,)   0..16" in str(report), str(report)


# Issue 22: the command takes what Buffer.view takes, and shows every dtype's values.


@pytest.mark.parametrize("length, offset", [(10, 0), (13, 4), (3, 0)])
def test_a_shapeless_view_is_refused_where_buffer_view_refuses_it(tmp_path, length, offset):
    path = tmp_path / "odd.bin"
    path.write_bytes(bytes(range(length)))
    with pytest.raises(bl.LayoutError) as theirs:
        bl.Buffer.from_bytes(path.read_bytes()).view("<f4", offset=offset)
    line = refused(path, "--dtype", "<f4", "--offset", offset, says=str(theirs.value))
    assert line.endswith(f"odd.bin: {theirs.value}"), line
    with pytest.raises(bl.LayoutError, match=str(theirs.value)):
        bl.inspect(path, dtype="<f4", offset=offset)
    # What Buffer.view takes, the command takes: the whole elements.
    whole = length - (length - offset) % 4
    (tmp_path / "whole.bin").write_bytes(bytes(range(whole)))
    assert bl.inspect(tmp_path / "whole.bin", dtype="<f4", offset=offset)["view"].shape == ((whole - offset) // 4,)


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "bfloat16"])
def test_dump_shows_float8_and_bfloat16_values_as_ml_dtypes_reads_them(tmp_path, name):
    dtype = getattr(ml_dtypes, name)
    itemsize = np.dtype(dtype).itemsize
    raw = np.arange(16 // itemsize, dtype=f"<u{itemsize}") * (0x11 if itemsize == 1 else 0x1111)
    values = raw.view(dtype)
    path = tmp_path / "w.safetensors"
    bl.save(path, {"w": values})
    title, rows = dump_lines(command(path, "--dump", "--rows", 1))
    assert title.startswith("w: "), title
    expected = [f"{float(v):g}" for v in values]
    assert row_values(rows[0]) == expected, (rows, expected)


def test_dump_of_a_sharded_checkpoint_reads_the_shard(tmp_path):
    from safetensors.numpy import save_file

    save_file({"a": np.arange(4, dtype="<i4")}, str(tmp_path / "s-1.safetensors"))
    save_file({"b": np.array([1.5, -2], dtype="<f4")}, str(tmp_path / "s-2.safetensors"))
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {}, "weight_map": {"a": "s-1.safetensors", "b": "s-2.safetensors"}}))
    done = command(index, "--dump", "--array", "b", "--rows", 1)
    assert "safetensors index" in done.stdout and "s-2.safetensors" in done.stdout, done.stdout
    title, rows = dump_lines(done)
    assert title.startswith("b: F32 (2,)") and row_values(rows[0]) == ["1.5", "-2"], (title, rows)
    # A folder holding the index is the checkpoint too.
    assert command(tmp_path).stdout == command(index).stdout
