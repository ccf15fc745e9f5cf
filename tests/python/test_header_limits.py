"""Headers near the size limits, inspected in a child process with a time
limit and an address-space limit, so that a reader that is quadratic in
the keys, or that holds the header at many times its size, fails here
instead of hanging or aborting the test run (issue 20, items 6 and 8)."""

import json
import struct
import subprocess
import sys
import textwrap

import pytest

import bytelens as bl

MIB = 1 << 20

# The child: bytelens imported, its address space measured, then limited to
# that much and `limit` more, then the file inspected. It prints what
# happened; an abort (allocation failure in Rust) kills it with a signal.
CHILD = textwrap.dedent(
    """
    import resource, sys, time
    import bytelens as bl
    path, limit = sys.argv[1], int(sys.argv[2])
    if limit:
        with open("/proc/self/status") as status:
            size = next(int(l.split()[1]) * 1024 for l in status if l.startswith("VmSize:"))
        resource.setrlimit(resource.RLIMIT_AS, (size + limit, size + limit))
    started = time.perf_counter()
    try:
        report = bl.inspect(path)
        outcome = f"ok {len(report.arrays)} {len(report.metadata)}"
    except bl.FormatError as err:
        outcome = "FormatError " + str(err)[:200]
    print(outcome)
    print(f"{time.perf_counter() - started:.3f}")
    """
)


def inspect_in_child(path, limit=0, timeout=60):
    """``bl.inspect(path)`` in a child under ``limit`` bytes more address
    space than it started with (0: no limit): its outcome and seconds."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), str(limit)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, f"child died ({done.returncode}): {done.stderr[-2000:]}"
    outcome, seconds = done.stdout.strip().splitlines()[-2:]
    return outcome, float(seconds)


def write_safetensors(path, header, size):
    """A safetensors file whose JSON header, padded with spaces, is ``size`` bytes."""
    text = header.encode()
    assert len(text) <= size
    text += b" " * (size - len(text))
    path.write_bytes(struct.pack("<Q", len(text)) + text)


HEADER = 99_000_000


def test_a_99_mb_header_inspects_in_bounded_memory(tmp_path):
    # A large metadata value or two, and tensors: the header read whole
    # takes little more than its size.
    tensors = {
        f"layer.{i}.weight": {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]} for i in range(2000)
    }
    metadata = {f"blob{i}": "x" * 9_000_000 for i in range(10)}
    path = tmp_path / "large.safetensors"
    write_safetensors(path, json.dumps({"__metadata__": metadata, **tensors}), HEADER)
    outcome, _ = inspect_in_child(path, limit=900 * MIB)
    assert outcome == "ok 2000 10", outcome


def test_values_held_at_many_times_their_size_are_refused_in_bounded_memory(tmp_path):
    # 49.5 million numbers: a tree of JSON values holds them at 16 times the
    # header's size (1.6 GB), which aborted under this limit.
    path = tmp_path / "numbers.safetensors"
    numbers = ",".join(["0"] * ((HEADER - 100) // 2))
    write_safetensors(path, '{"__metadata__":{"k":[' + numbers + "]}}", HEADER)
    outcome, _ = inspect_in_child(path, limit=900 * MIB)
    assert outcome.startswith("FormatError"), outcome
    assert "'__metadata__' value of \"k\" is not a string" in outcome, outcome


def test_many_keys_inspect_quickly(tmp_path):
    # 160,000 metadata keys (2.3 MB) took 16-18 s when each key was compared
    # with every other; sorted, a fraction of a second. The child's time
    # limit, well under the old time, is what fails.
    path = tmp_path / "keys.safetensors"
    metadata = {f"key{i}": str(i) for i in range(160_000)}
    header = json.dumps({"__metadata__": metadata}, separators=(",", ":"))
    write_safetensors(path, header, len(header))
    outcome, seconds = inspect_in_child(path, timeout=10)
    assert outcome == "ok 0 160000", outcome
    print(f"160,000 metadata keys inspected in {seconds:.2f} s")
    # A repeated key among them is still found.
    repeated = header.replace('"key159999"', '"key7"')
    write_safetensors(path, repeated, len(repeated))
    outcome, _ = inspect_in_child(path, timeout=10)
    assert outcome.startswith("FormatError") and '"key7" twice' in outcome, outcome


def test_many_npy_keys_inspect_quickly(tmp_path):
    # 80,000 keys in an npy dict: refused at once, not after comparing each
    # with every other.
    entries = "".join(f"'k{i}': False, " for i in range(80_000))
    dict_text = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), " + entries + "}"
    dict_text += " " * (-(len(dict_text) + 13) % 64) + "\n"
    path = tmp_path / "keys.npy"
    path.write_bytes(b"\x93NUMPY\x02\x00" + struct.pack("<I", len(dict_text)) + dict_text.encode() + bytes(4))
    outcome, _ = inspect_in_child(path, timeout=10)
    assert outcome.startswith("FormatError") and "'k0'" not in outcome and '"k0"' in outcome, outcome


@pytest.mark.parametrize(("descr", "expected"), [("int16", "<i2"), ("float32", "<f4"), ("<f", "<f4"), ("|i2", "<i2")])
def test_npy_descr_spelled_as_numpy_reads_it(tmp_path, descr, expected):
    np = pytest.importorskip("numpy")
    dict_text = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': (3,), }}"
    dict_text += " " * (-(len(dict_text) + 11) % 64) + "\n"
    path = tmp_path / "named.npy"
    data = np.arange(3, dtype=expected)
    path.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(dict_text)) + dict_text.encode() + data.tobytes())
    assert np.load(path).dtype == np.dtype(expected)
    loaded = bl.load(path)
    array = loaded if isinstance(loaded, np.ndarray) else next(iter(loaded.values()))
    np.testing.assert_array_equal(np.asarray(array), np.load(path))


def test_a_length_no_layout_holds_is_refused_by_inspect_as_by_load(tmp_path):
    # (0, 2**63) has no elements, but no layout holds an axis of 2**63:
    # inspect said it was fine and load raised a LayoutError without the file.
    dict_text = f"{{'descr': '<f4', 'fortran_order': False, 'shape': (0, {2**63}), }}"
    dict_text += " " * (-(len(dict_text) + 11) % 64) + "\n"
    path = tmp_path / "empty.npy"
    path.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(dict_text)) + dict_text.encode())
    for read in (bl.inspect, bl.load):
        with pytest.raises(bl.FormatError, match=f"empty.npy.*length {2**63}"):
            read(path)
