"""Headers of many entries (issue 40, item 2): read in memory in proportion
to their size, and out of memory an error, never a hang or an abort. Each
case runs in a child process with a time limit and, where it says so, an
address-space limit (RLIMIT_AS), so that a regression fails, not hangs.

GGUF's entries are the smallest a header has: an empty tensor takes 37
bytes here, a uint8 key 18. A header of millions of them once took about
58 times its size (a dict of eleven new objects for each tensor), and under
an address-space limit a failed allocation inside the extension panicked
("PyObject pointer is null"), then aborted or hung on a lock."""

import struct
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS and /proc are Linux's")

MIB = 1 << 20


def gguf(path, tensors=0, keys=0):
    """A GGUF file of `tensors` empty float32 tensors and `keys` uint8
    metadata keys, each named by its number in hex; its size."""
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, tensors, keys))
    for i in range(keys):
        key = b"%x" % i
        out += struct.pack("<Q", len(key)) + key + b"\0\0\0\0\1"
    for i in range(tensors):
        name = b"%x" % i
        out += struct.pack("<Q", len(name)) + name + struct.pack("<IQIQ", 1, 0, 0, 0)
    out += bytes(-len(out) % 32)
    path.write_bytes(out)
    return len(out)


# The child: bytelens imported and its address space measured, then
# limited to that much and `limit` more (0: no limit); then `call` (inspect,
# load, or the extension's header reader alone) on the file. It prints what
# happened and the growth of its peak resident memory.
CHILD = textwrap.dedent(
    """
    import resource, sys
    import bytelens as bl
    from bytelens._files._headers import _read_header
    path, call, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
    data = open(path, "rb").read() if call == "header" else b""
    if limit:
        with open("/proc/self/status") as status:
            size = next(int(l.split()[1]) * 1024 for l in status if l.startswith("VmSize:"))
        resource.setrlimit(resource.RLIMIT_AS, (size + limit, size + limit))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        if call == "header":
            got = _read_header(data, len(data))
            outcome = f"ok {len(got['arrays'])} {len(got['metadata'])}"
        else:
            got = getattr(bl, call)(path)
            outcome = f"ok {len(got.arrays if call == 'inspect' else got)} {len(got.metadata)}"
    except MemoryError as err:
        # Python's own MemoryError has no kind and, mostly, no message.
        outcome = f"MemoryError {getattr(err, 'kind', None)} {str(err)[:300]}".rstrip()
    except OSError as err:  # mapping the file
        outcome = f"OSError {str(err)[-200:]}"
    except bl.FormatError as err:
        outcome = f"FormatError {str(err)[:200]}"
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
    print(outcome)
    print(grown)
    """
)


def start(path, call, limit=0):
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), call, str(limit)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(child, timeout=30):
    """The child's outcome and peak growth in bytes; it must exit by itself
    (no abort, no hang) within `timeout` seconds."""
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        raise AssertionError(f"the child hung past {timeout} s") from None
    assert child.returncode == 0, f"child died ({child.returncode}): {err[-2000:]}"
    outcome, grown = out.strip().splitlines()[-2:]
    return outcome, int(grown)


def test_many_empty_tensors_take_memory_in_proportion_to_the_header(tmp_path):
    # 200,000 empty tensors, a 7.4 MB header. The extension's reader held
    # 51 times the header (a dict of eleven new objects a tensor), inspect
    # and load 58 times; now the reader holds the core's arrays (4 times
    # in resident memory) and makes each dict when it is asked for; inspect
    # then holds an ArrayInfo a tensor (15 times).
    path = tmp_path / "tensors.gguf"
    size = gguf(path, tensors=200_000)
    header, inspected = start(path, "header"), start(path, "inspect")
    outcome, grown = finish(header)
    assert outcome == "ok 200000 0", outcome
    print(f"the header reader: {grown / size:.1f} times the header")
    assert grown < 12 * size, f"{grown / size:.1f} times the header"
    outcome, grown = finish(inspected)
    assert outcome == "ok 200000 0", outcome
    print(f"inspect: {grown / size:.1f} times the header")
    assert grown < 25 * size, f"{grown / size:.1f} times the header"


def test_many_one_byte_keys_take_memory_in_proportion_to_the_header(tmp_path):
    # 300,000 uint8 keys, a 5.3 MB header. The reader made a (key, value)
    # tuple a key beside the core's entries (8.9 times the header in the
    # child's resident memory); it makes the dict inspect keeps, and the
    # core's entries go when it returns (6.1 times). A key's str and its
    # place in a dict are most of what is left: Python's, not the header's.
    path = tmp_path / "keys.gguf"
    size = gguf(path, keys=300_000)
    outcome, grown = finish(start(path, "header"))
    assert outcome == "ok 0 300000", outcome
    print(f"the header reader: {grown / size:.1f} times the header")
    assert grown < 7.5 * size, f"{grown / size:.1f} times the header"


def test_running_out_of_memory_on_many_keys_is_an_error_not_a_hang(tmp_path):
    # 300,000 one-byte keys (5.4 MB) and 100,000 empty tensors (3.7 MB),
    # loaded under limits that run out in different places: in the core
    # (a FormatError), making the keys' or the arrays' objects (a
    # MemoryError), mapping the file (an OSError), or nowhere. Each child
    # ends by itself; with a million keys, 10 of 13 limits between 80 and
    # 200 MiB hung.
    path = tmp_path / "keys.gguf"
    gguf(path, tensors=100_000, keys=300_000)
    limits = [24, 48, 96, 128, 192]
    children = [start(path, "load", limit * MIB) for limit in limits]
    outcomes = {limit: finish(child)[0] for limit, child in zip(limits, children)}
    for limit, outcome in outcomes.items():
        assert (
            outcome == "ok 100000 300000"
            or outcome.startswith("MemoryError")
            or outcome.startswith("FormatError")
            or (outcome.startswith("OSError") and "Cannot allocate memory" in outcome)
        ), (limit, outcome)
    assert outcomes[192] == "ok 100000 300000", outcomes


def test_running_out_of_memory_in_a_safetensors_header_is_an_error_not_an_abort(tmp_path):
    # 200,000 empty tensors in an 11.7 MB safetensors header, under limits
    # where the core's second pass runs out among the entries' small
    # allocations: serde_json then allocated the error that stops it, and
    # with not a byte left the process aborted ("memory allocation of 7
    # bytes failed", SIGABRT, at 32 to 44 MiB here). The reader keeps a
    # few KiB back for that error and frees them first.
    header = (
        "{" + ",".join(f'"t{i}":{{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}' for i in range(200_000)) + "}"
    ).encode()
    path = tmp_path / "tensors.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header)
    limits = [26, 32, 35, 38, 41, 44, 256]
    children = [start(path, "load", limit * MIB) for limit in limits]
    outcomes = {limit: finish(child)[0] for limit, child in zip(limits, children)}
    for limit, outcome in outcomes.items():
        assert (
            outcome == "ok 200000 0"
            or outcome.startswith("MemoryError")
            or outcome.startswith(f"FormatError {path}: reading the header ran out of memory (an allocation of ")
            or (outcome.startswith("OSError") and "Cannot allocate memory" in outcome)
        ), (limit, outcome)
    assert outcomes[256] == "ok 200000 0", outcomes


def test_a_header_read_that_runs_out_of_memory_is_a_memory_error_naming_the_file(tmp_path):
    # A million keys (17 MB of header) under address-space limits: std's
    # read_to_end reported its failed reservation as a bare OSError("out of
    # memory"), without errno, path or kind, and the core's failures were
    # FormatErrors. Whatever allocation fails is a MemoryError: bytelens'
    # own (the core's or the extension's) naming the file and the
    # allocation, or Python's own; never an OSError.
    path = tmp_path / "million.gguf"
    gguf(path, keys=1_000_000)
    limits = [16, 48, 80, 112]
    children = [start(path, "load", limit * MIB) for limit in limits]
    outcomes = {limit: finish(child, timeout=60)[0] for limit, child in zip(limits, children)}
    ours = 0
    for limit, outcome in outcomes.items():
        assert not outcome.startswith("OSError"), (limit, outcome)
        assert (
            outcome == "ok 0 1000000"
            or outcome.startswith("MemoryError None")  # Python's own allocation
            or outcome.startswith(f"MemoryError OutOfMemory {path}: reading the header ran out of memory (an allocation of ")
        ), (limit, outcome)
        ours += outcome.startswith("MemoryError OutOfMemory")
    print(outcomes)
    assert ours > 0, outcomes
