"""bl.save, bl.load and bl.inspect against hostile and careless input
(issue 20): saves that cannot lose data, reads that cannot hang, memory
bounded by what is touched. Whatever crashed or hung before runs in a
child process with a time limit, so that a regression fails, not hangs."""

import errno
import json
import os
import stat
import struct
import subprocess
import sys
import zipfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors.numpy import load_file

import bytelens as bl
from _support import run_child


def inspect_command(path, timeout=30):
    return subprocess.run(
        [sys.executable, "-m", "bytelens", "inspect", str(path)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# 1. Saves are atomic: a new file renamed over the old one, so the old
# file's mappings (this process's and others') keep their bytes.

SAVE_BACK = """
    import sys, numpy as np, bytelens as bl
    path, n = sys.argv[1], int(sys.argv[2])
    data = {"w": np.arange(n, dtype="<f4"), "b": np.arange(7, dtype="<i8")}
    if path.endswith(".npy"):
        data = {"array": data["w"]}
    bl.save(path, data)
    old = bl.load(path)
    bl.save(path, old)                     # the everyday load, edit, save back
    for name, array in data.items():
        assert (bl.load(path)[name] == array).all(), name
        assert (old[name] == array).all(), name
    bl.save(path, {name: a + 1 for name, a in old.items()})
    new = bl.load(path)
    for name, array in data.items():
        assert (new[name] == array + 1).all(), name
        assert (old[name] == array).all(), name   # the old file's views: the old bytes
    print("ok")
"""


@pytest.mark.skipif(
    os.name == "nt",
    reason="Windows renames over no mapped file: there save refuses, as "
    "test_save_over_a_file_windows_will_not_replace_says_why checks",
)
@pytest.mark.parametrize("name", ["m.safetensors", "a.npy"])
@pytest.mark.parametrize("n", [5, 1 << 20])
def test_save_over_the_loaded_file_keeps_its_views(tmp_path, name, n):
    # Before: SIGBUS for small arrays; "Bad address" and a 4 KiB file for 1M.
    rc, out = run_child(SAVE_BACK, tmp_path / name, n)
    assert rc == 0 and out.strip().endswith("ok"), (rc, out)
    assert sorted(os.listdir(tmp_path)) == [name]


@pytest.mark.skipif(os.name != "posix", reason="the failed write is provoked by RLIMIT_FSIZE, which Windows lacks; the Rust writer's own test fails a write there")
def test_a_save_that_fails_leaves_the_old_file_as_it_was(tmp_path):
    # The writer is Rust's (bytelens::files::write_atomically): its failure
    # reaches Python as Python's writer raised it, errno and filename set,
    # the old file whole and the new one gone (save.rs's
    # a_write_that_fails_leaves_the_old_file_and_no_new_one fails a write
    # half-way through).
    path = tmp_path / "m.safetensors"
    bl.save(path, {"w": np.arange(10, dtype="<f4")})
    before = path.read_bytes()
    code = """
        import errno, resource, signal, sys, numpy as np, bytelens as bl
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 12, 1 << 12))
        try:
            bl.save(sys.argv[1], {"w": np.zeros(1000, "<f4")})
        except OSError as err:
            print(type(err).__name__, err.errno == errno.EFBIG, err.filename == sys.argv[1])
            print(err)
    """
    rc, out = run_child(code, path)
    assert rc == 0 and out.splitlines()[0] == "OSError True True", out
    reason = os.strerror(errno.EFBIG)
    reason = reason[:1].lower() + reason[1:]
    message = f"{path}: writing the new file failed ({reason}); the old file is kept"
    assert out.splitlines()[1] == f"[Errno {errno.EFBIG}] {message}: {str(path)!r}", out
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["m.safetensors"]
    # Refused before writing: a dtype found wanting after a good tensor.
    with pytest.raises(TypeError, match="no dtype for complex64"):
        bl.save(path, {"a": np.zeros(3, "<f4"), "c": np.zeros(2, np.complex64)})
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["m.safetensors"]


def test_a_save_cut_short_by_a_full_disk_loses_nothing(tmp_path):
    path = tmp_path / "m.safetensors"
    bl.save(path, {"w": np.arange(10, dtype="<f4")})
    before = path.read_bytes()
    # RLIMIT_FSIZE: writes past 64 KiB fail with EFBIG, as on a full disk.
    code = """
        import resource, signal, sys, numpy as np, bytelens as bl
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 16, 1 << 16))
        try:
            bl.save(sys.argv[1], {"w": np.ones(1 << 20, "<f4")})
        except OSError as err:
            print("refused", err)
    """
    rc, out = run_child(code, path)
    assert rc == 0 and "refused" in out, out
    assert path.read_bytes() == before  # before: truncated, then cut at 64 KiB
    assert os.listdir(tmp_path) == ["m.safetensors"]


@pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")
def test_save_keeps_permissions_and_writes_through_symlinks(tmp_path):
    old_umask = os.umask(0o027)
    try:
        fresh = tmp_path / "new.npy"
        bl.save(fresh, np.arange(3))
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o640  # 0o666 less the umask
        private = tmp_path / "private.npy"
        bl.save(private, np.arange(3))
        os.chmod(private, 0o600)
        bl.save(private, np.arange(4))
        assert stat.S_IMODE(private.stat().st_mode) == 0o600
    finally:
        os.umask(old_umask)
    link = tmp_path / "link.npy"
    link.symlink_to(private)
    bl.save(link, np.arange(5))
    assert link.is_symlink() and np.load(private).tolist() == [0, 1, 2, 3, 4]
    folder = tmp_path / "folder.npy"
    folder.mkdir()
    with pytest.raises(IsADirectoryError, match="not a regular file"):
        bl.save(folder, np.arange(2))
    with pytest.raises(FileNotFoundError, match=r"cannot create .*\.tmp, the new file bl\.save renames over it"):
        bl.save(tmp_path / "nowhere" / "a.npy", np.arange(2))
    longest = tmp_path / ("é" * 123 + ".npy")  # 250 bytes: no room for a suffix
    bl.save(longest, np.arange(2))
    assert np.load(longest).tolist() == [0, 1]


# 2. Whatever bl.load would refuse, bl.save refuses before writing.


class Repeating(Mapping):
    """A mapping whose items repeat a name (a dict cannot)."""

    def __init__(self, items):
        self.pairs = items

    def __getitem__(self, key):
        return dict(self.pairs)[key]

    def __iter__(self):
        return iter(name for name, _ in self.pairs)

    def __len__(self):
        return len(self.pairs)

    def items(self):
        return list(self.pairs)


@pytest.mark.parametrize(
    "arrays, metadata, error, match",
    [
        ({1: np.zeros(2), "1": np.ones(2)}, None, TypeError, r"tensor name must be a str, not int \(1\)"),
        (Repeating([("a", np.zeros(2)), ("a", np.ones(2))]), None, ValueError, "two tensors are named 'a'"),
        ({"__metadata__": np.zeros(2)}, None, ValueError, "'__metadata__'"),
        ({"a\udc80": np.zeros(2)}, None, ValueError, r"not valid Unicode \(surrogates not allowed at index 1\)"),
        ({"a": np.zeros(2)}, {"k\ud800": "v"}, ValueError, "metadata key .* not valid Unicode"),
        ({"a": np.zeros(2)}, {"k": "v\udfff"}, ValueError, "not valid Unicode"),
        ({"a": np.zeros(2)}, {"k": 3}, TypeError, r"metadata 'k' must be a str, not int"),
        ({"a": np.zeros(2)}, {3: "v"}, TypeError, "metadata key must be a str"),
        ({"a": np.zeros(2)}, [("k", "v")], TypeError, "metadata is a dict"),
    ],
)
def test_save_refuses_safetensors_no_loader_reads(tmp_path, arrays, metadata, error, match):
    path = tmp_path / "m.safetensors"
    with pytest.raises(error, match=match):
        bl.save(path, arrays, metadata=metadata)
    assert not path.exists()


def test_save_refuses_a_header_past_the_limit_load_reads(tmp_path):
    path = tmp_path / "m.safetensors"
    big = "x" * bl._files.MAX_HEADER
    with pytest.raises(ValueError, match=r"header would be 1000001\d\d bytes, more than the 100000000"):
        bl.save(path, {"a": np.zeros(2)}, metadata={"k": big})
    assert not path.exists()
    del big
    just = "x" * (1 << 20)
    bl.save(path, {"a": np.zeros(2)}, metadata={"k": just})
    assert bl.inspect(path).metadata["k"] == just


# Any text, and some with lone surrogates (which st.text leaves out).
ANY_TEXT = st.one_of(st.text(max_size=6), st.sampled_from(["\ud800", "x\udc80", "__metadata__"]))


@settings(max_examples=150)
@given(
    names=st.lists(ANY_TEXT, max_size=5, unique=True),
    metadata=st.dictionaries(ANY_TEXT, ANY_TEXT, max_size=3),
    dtype=st.sampled_from(["<f4", ">i2", "|u1", "<f8", "|b1"]),
)
def test_whatever_save_writes_both_loaders_read(tmp_path_factory, names, metadata, dtype):
    path = tmp_path_factory.mktemp("s") / "m.safetensors"
    arrays = {name: np.arange(i + 2).astype(dtype) for i, name in enumerate(names)}
    try:
        bl.save(path, arrays, metadata=metadata)
    except (TypeError, ValueError) as err:
        assert not path.exists() and len(str(err)) < 400, err
        return
    loaded = bl.load(path)
    theirs = load_file(str(path))
    assert sorted(loaded) == sorted(arrays) == sorted(theirs)
    for name, array in arrays.items():
        np.testing.assert_array_equal(loaded[name], array)
        np.testing.assert_array_equal(theirs[name], array)
        assert loaded[name].ctypes.data % array.dtype.itemsize == 0
    assert bl.inspect(path).metadata == metadata


@pytest.mark.parametrize("dtype", ["M8[ns]", "m8[s]", "<U3", "|S4", "<c8", "<c16"])
def test_save_refuses_npy_dtypes_load_cannot_map(tmp_path, dtype):
    path = tmp_path / "a.npy"
    with pytest.raises(TypeError, match=r"bl\.load could not map an \.npy of dtype"):
        bl.save(path, np.zeros(3, dtype))
    assert not path.exists()
    np.save(path, np.zeros(3, dtype))  # numpy writes it; load says why it cannot view it
    loaded = bl.load(path)
    assert list(loaded) == ["array"] and loaded.unavailable == {"array": f"bytelens has no dtype {np.dtype(dtype).str}"}
    with pytest.raises(bl.FormatError, match=r"array 'array' has the dtype .*, which bytelens cannot view"):
        loaded["array"]
    with pytest.raises(bl.FormatError, match="strict=True refuses the file"):
        bl.load(path, strict=True)


def test_save_of_npy_refuses_metadata_and_takes_bytes_paths(tmp_path):
    with pytest.raises(ValueError, match="no metadata"):
        bl.save(tmp_path / "a.npy", np.zeros(2), metadata={"k": "v"})
    raw = os.fsencode(tmp_path / "b.npy")
    bl.save(raw, np.arange(3))  # before: "endswith first arg must be bytes"
    assert bl.load(raw)["array"].tolist() == [0, 1, 2]
    assert bl.inspect(raw).format == "npy"
    bl.save(os.fsencode(tmp_path / "c.safetensors"), {"x": np.ones(2, "<f4")})
    with pytest.raises(TypeError, match="expected str, bytes or os.PathLike"):
        bl.save(3, np.zeros(2))


# 3. .npz members: local and central names agree; CRC-32s checked.


def stored_npz(path, **arrays):
    np.savez(path, **arrays)
    return bytearray(Path(path).read_bytes())


def test_a_renamed_local_header_is_refused(tmp_path):
    path = tmp_path / "s.npz"
    data = stored_npz(path, a=np.arange(4), b=np.arange(3))
    assert data[30:35] == b"a.npy"
    data[30:35] = b"b.npy"  # the local header only; the directory says a.npy
    path.write_bytes(data)
    with pytest.raises(bl.FormatError, match=r"local header names it 'b\.npy', the zip's directory 'a\.npy'"):
        bl.inspect(path)
    with pytest.raises(zipfile.BadZipFile):
        np.load(path)["a"]


def test_a_flipped_byte_in_a_stored_member(tmp_path):
    path = tmp_path / "big.npz"
    values = np.arange(1 << 15, dtype="<f8")  # 256 KiB: past what inspect reads
    data = stored_npz(path, big=values)
    at = data.index(values[1000:1001].tobytes())
    data[at] ^= 1
    path.write_bytes(data)
    with pytest.raises(zipfile.BadZipFile):
        np.load(path)["big"]
    # Mapped lazily: load reads no data, so it cannot see the damage...
    assert bl.load(path)["big"][1000] != 1000
    # ...unless asked to.
    with pytest.raises(bl.FormatError, match=r"member 'big\.npy': .*CRC-32 0x[0-9a-f]{8}, not the 0x"):
        bl.load(path, verify=True)
    clean = tmp_path / "clean.npz"
    np.savez(clean, big=values, small=np.arange(3))
    assert bl.load(clean, verify=True)["big"].tolist() == values.tolist()
    # A small member is read whole by inspect: checked always.
    small = tmp_path / "small.npz"
    data = stored_npz(small, s=np.arange(4, dtype="<i8"))
    data[data.index(np.arange(4, dtype="<i8")[3:].tobytes())] ^= 0x10
    small.write_bytes(data)
    for call in (bl.inspect, bl.load):
        with pytest.raises(bl.FormatError, match="CRC-32"):
            call(small)


def patch_zip_field(data, member_name, local_at, central_at, value):
    """Sets a 4-byte field of `member_name`'s local header and its
    directory entry (offsets within each)."""
    name = member_name.encode()
    local = data.index(b"PK\x03\x04" + b"")
    central = data.index(b"PK\x01\x02")
    assert data[local + 30 : local + 30 + len(name)] == name
    assert data[central + 46 : central + 46 + len(name)] == name
    data[local + local_at : local + local_at + 4] = struct.pack("<I", value)
    data[central + central_at : central + central_at + 4] = struct.pack("<I", value)


def test_a_compressed_member_with_a_wrong_crc(tmp_path):
    path = tmp_path / "c.npz"
    np.savez_compressed(path, a=np.arange(100000, dtype="<i4"))
    data = bytearray(path.read_bytes())
    patch_zip_field(data, "a.npy", 14, 16, 0x12345678)  # the CRC-32 fields
    path.write_bytes(data)
    arrays = bl.load(path)  # lazy: nothing decompressed yet
    with pytest.raises(bl.FormatError, match=r"c\.npz, member 'a\.npy': .*CRC"):
        arrays["a"]
    with pytest.raises(bl.FormatError, match="CRC"):
        bl.load(path, verify=True)


def test_a_compressed_member_claiming_more_than_deflate_can_hold(tmp_path):
    path = tmp_path / "bomb.npz"
    n = 400_000_000  # 3.2 GB claimed, from 3 KiB of deflate
    head = np.lib.format.magic(1, 0) + struct.pack("<H", 118)
    head += f"{{'descr': '<f8', 'fortran_order': False, 'shape': ({n},), }}".ljust(117).encode() + b"\n"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("a.npy", head + bytes(1 << 20))
    data = bytearray(path.read_bytes())
    patch_zip_field(data, "a.npy", 22, 24, len(head) + 8 * n)
    path.write_bytes(data)
    # Before: inspect passed, and the first access set aside 3.2 GB.
    with pytest.raises(bl.FormatError, match=r"member 'a\.npy': .* more than deflate can hold"):
        bl.inspect(path)


# A file truncated between reading its header and mapping it is refused
# ("the file changed while it was loaded"): the Rust file layer reads and
# maps it, so native/src/files/load.rs tests it
# (a_file_changed_between_its_header_and_its_map_is_refused).


# 4. Header reads that end early stop with an error.


def short_npz(path, keep=50, claim=1000):
    """A deflated member holding `keep` bytes of an .npy header whose zip
    entry claims `claim` bytes."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("a.npy", npy_head()[:keep])
    data = bytearray(Path(path).read_bytes())
    patch_zip_field(data, "a.npy", 22, 24, claim)  # the uncompressed sizes
    Path(path).write_bytes(data)
    return len(data)


def npy_head():
    return np.lib.format.magic(1, 0) + b"".join(
        [struct.pack("<H", 118), b"{'descr': '<f8', 'fortran_order': False, 'shape': (125,), }".ljust(117), b"\n"]
    )


def test_a_member_shorter_than_its_entry_does_not_spin(tmp_path):
    path = tmp_path / "short.npz"
    size = short_npz(path)
    assert size < 200
    code = """
        import sys, bytelens as bl
        for call in (bl.inspect, bl.load):
            try:
                call(sys.argv[1])
            except bl.FormatError as err:
                print(err)
            else:
                raise SystemExit("read it")
    """
    # Before: 100% CPU forever in the header loop.
    rc, out = run_child(code, path, timeout=30)
    assert rc == 0, out
    lines = out.strip().splitlines()
    assert len(lines) == 2, out
    for line in lines:
        assert line == f"{path}, member 'a.npy': ends at byte 50, inside the header; the header needs 128 bytes"
    done = inspect_command(path)
    assert done.returncode == 1 and "ends at byte 50, inside the header" in done.stderr, done.stderr


# A file that shrinks while its header is read stops with one error naming
# the byte it ended at, never a retry: the Rust file layer reads headers, so
# native/src/files/open.rs tests it (a_file_that_shrinks_while_read_does_not_spin).


# 5. Only regular files are read: FIFOs (through symlinks too) and devices
# are refused before anything blocks.


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this OS")
def test_fifos_are_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.npy"
    os.mkfifo(fifo)
    link = tmp_path / "link.safetensors"
    link.symlink_to(fifo)
    code = """
        import sys, bytelens as bl
        for path in sys.argv[1:]:
            for call in (bl.inspect, bl.load, lambda p: bl.inspect(p, dtype="<u1")):
                try:
                    call(path)
                except OSError as err:
                    print(err)
                else:
                    raise SystemExit("read a FIFO")
    """
    # Before: blocked in open() forever.
    rc, out = run_child(code, fifo, link, timeout=30)
    assert rc == 0, out
    lines = out.strip().splitlines()
    assert lines == [f"{fifo}: not a regular file (a FIFO)"] * 3 + [f"{link}: not a regular file (a FIFO)"] * 3
    done = inspect_command(link)
    assert done.returncode == 1 and "not a regular file (a FIFO)" in done.stderr, done.stderr


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_devices_and_folders_are_not_regular_files(tmp_path):
    done = inspect_command("/dev/zero")
    # Before: "ends at byte 0, inside the npy magic".
    assert done.returncode == 1 and "/dev/zero: not a regular file (a character device)" in done.stderr, done.stderr
    with pytest.raises(IsADirectoryError, match="not a regular file"):
        bl.load(tmp_path)


# 9. Compressed .npz members are decompressed on first access, once, into
# their only copy.


def test_compressed_members_decompress_lazily_and_once(tmp_path):
    path = tmp_path / "zeros.npz"
    member = 32 << 20
    np.savez_compressed(path, **{f"m{i}": np.zeros(member // 8) for i in range(4)})
    assert path.stat().st_size < member // 100
    code = """
        import resource, sys, numpy as np, bytelens as bl
        from collections.abc import Mapping
        member = int(sys.argv[2])
        def grown():
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        arrays = bl.load(sys.argv[1])
        assert isinstance(arrays, Mapping) and list(arrays) == ["m0", "m1", "m2", "m3"]
        assert "m1" in arrays and len(arrays) == 4 and "compressed, not read yet" in repr(arrays)
        after_load = grown()
        first = arrays["m0"]
        assert first is arrays["m0"] and not first.flags.writeable and first.shape == (member // 8,)
        assert not first.any() and first.ctypes.data % 64 == 0
        after_one = grown()
        print(after_load / member, after_one / member)
    """
    rc, out = run_child(code, path, member, timeout=120)
    assert rc == 0, out
    after_load, after_one = map(float, out.split())
    # Before: every member decompressed by load, each held twice (8 members' worth).
    assert after_load < 0.25, out
    assert after_one < 1.5, out


def test_file_arrays_act_as_a_dict(tmp_path):
    path = tmp_path / "z.npz"
    np.savez_compressed(path, a=np.arange(3), b=np.ones(2))
    arrays = bl.load(path, mode="c")
    assert dict(arrays).keys() == {"a", "b"} and arrays["a"].flags.writeable
    arrays["c"] = np.zeros(1)
    del arrays["a"]
    assert list(arrays) == ["b", "c"] and arrays.get("a") is None
    import pickle

    again = pickle.loads(pickle.dumps(arrays))
    assert type(again) is dict and again["b"].tolist() == [1.0, 1.0]


# 13. r+ never hands out a writable copy whose writes would be lost.


def test_r_plus_gives_a_misaligned_tensor_as_a_read_only_copy(tmp_path):
    path = tmp_path / "odd.safetensors"
    header = {
        "tag": {"dtype": "U8", "shape": [3], "data_offsets": [0, 3]},
        "x": {"dtype": "F32", "shape": [2], "data_offsets": [3, 11]},
    }
    text = json.dumps(header).encode()
    text += b" " * (-(8 + len(text)) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"abc" + np.ones(2, "<f4").tobytes())
    assert "read-only under r+" in bl.inspect(path)["x"].copy
    arrays = bl.load(path, mode="r+")
    assert not arrays["x"].flags.writeable  # before: writable, its writes lost
    with pytest.raises(ValueError, match="read-only"):
        arrays["x"][0] = 5
    arrays["tag"][0] = ord("A")  # the aligned tensor is still the file
    del arrays
    assert path.read_bytes()[8 + len(text)] == ord("A")
    assert bl.load(path, mode="c")["x"].flags.writeable


# 14. Every load error names the file.


def test_a_layout_the_core_refuses_is_named_with_the_file(tmp_path):
    path = tmp_path / "huge.safetensors"
    header = json.dumps({"e": {"dtype": "F32", "shape": [0, 2**63], "data_offsets": [0, 0]}}).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header)
    # The core may refuse the header (FormatError) or Buffer.view the view
    # (LayoutError): either way the message starts with the file.
    with pytest.raises((bl.FormatError, bl.LayoutError)) as caught:
        bl.load(path)
    assert str(caught.value).startswith(f"{path}"), str(caught.value)


# 15. The SIGBUS hazard is where users of load read.


def test_load_documents_sigbus():
    assert "SIGBUS" in bl.load.__doc__ and "truncates" in bl.load.__doc__


# 16. Windows' refusals, simulated here (os.name set to "nt" for one call,
# the system call that fails there made to fail as it does): what bl.save
# and bl.load say instead of a bare "access is denied".


def windows_error(winerror, message="Access is denied"):
    """An OSError as Windows raises it (its `winerror` set, as POSIX
    Python cannot through the constructor)."""
    err = PermissionError(13, message) if winerror == 5 else OSError(22, message)
    err.winerror = winerror
    return err


def test_save_over_a_file_windows_will_not_replace_says_why(tmp_path):
    # Windows itself: the file mapped by bl.load's arrays (the message and
    # each of the three codes are save.rs's
    # the_in_use_message_says_why_and_what_to_do, under Wine too).
    path = tmp_path / "m.safetensors"
    bl.save(path, {"w": np.arange(10, dtype="<f4")})
    before = path.read_bytes()
    loaded = bl.load(path)
    if os.name != "nt":  # POSIX renames over it, the views keeping the old bytes
        bl.save(path, {"w": loaded["w"] * 2})
        assert loaded["w"].tolist() == list(range(10)) and bl.load(path)["w"].tolist() == list(range(0, 20, 2))
        assert os.listdir(tmp_path) == ["m.safetensors"]
        return
    with pytest.raises(PermissionError, match="Windows cannot replace the file while it is mapped or open") as caught:
        bl.save(path, loaded)
    assert str(caught.value).startswith(f"{path}: ") and "arrays bl.load returned" in str(caught.value)
    assert caught.value.errno == errno.EACCES and caught.value.winerror in (5, 32, 1224)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["m.safetensors"]  # the new file removed


def test_save_over_a_read_only_file_on_windows_is_refused_before_writing(tmp_path):
    # A real read-only file (os.chmod sets Windows' read-only attribute);
    # save.rs's a_read_only_file_is_refused_on_windows_and_replaced_elsewhere
    # checks the same under Wine.
    path = tmp_path / "a.npy"
    bl.save(path, np.arange(3))
    os.chmod(path, 0o444)
    if os.name == "nt":
        with pytest.raises(PermissionError, match="the file is read-only, and Windows replaces no read-only file") as caught:
            bl.save(path, np.arange(4))
        assert caught.value.errno == errno.EACCES
        assert os.listdir(tmp_path) == ["a.npy"] and np.load(path).tolist() == [0, 1, 2]
        os.chmod(path, stat.S_IWRITE)
        return
    bl.save(path, np.arange(4))  # POSIX renames over it, keeping its bits
    assert np.load(path).tolist() == [0, 1, 2, 3] and stat.S_IMODE(path.stat().st_mode) == 0o444


def test_a_folder_windows_will_not_open_is_still_a_folder(tmp_path, monkeypatch):
    folder = tmp_path / "folder.npy"
    folder.mkdir()
    real_open = os.open

    def windows_open(path, flags, *mode):
        if os.path.isdir(path):
            raise windows_error(5, "Permission denied")
        return real_open(path, flags, *mode)

    monkeypatch.setattr(os, "open", windows_open)
    monkeypatch.setattr(os, "name", "nt")
    for call in (bl.load, bl.inspect):
        with pytest.raises(IsADirectoryError, match=r"folder\.npy: not a regular file \(a directory\)$"):
            call(folder)
    monkeypatch.undo()
    # The same words as on POSIX, where the folder opens and fstat refuses it.
    with pytest.raises(IsADirectoryError, match=r"folder\.npy: not a regular file \(a directory\)$"):
        bl.load(folder)


@pytest.mark.parametrize(
    "name",
    ["a" * 300, "é" * 200, "a" + "é" * 200, "ab" + "€" * 100, "a" + "\U0001f600" * 60, "\udce9" * 200, "short"],
)
def test_the_new_files_name_keeps_whole_characters(tmp_path, name):
    # The new file's name, as the message of a save that cannot make it
    # shows it: the longest start of the name of at most 180 bytes, cut
    # between characters (save.rs's names_are_cut_between_characters).
    path = os.path.join(tmp_path, "nowhere", name + ".npy")
    if any("\udc80" <= c <= "\udcff" for c in name):
        with pytest.raises(UnicodeEncodeError):  # refused before anything is made
            bl.save(path, np.arange(2))
        return
    with pytest.raises(FileNotFoundError) as caught:
        bl.save(path, np.arange(2))
    made = str(caught.value).split(": cannot create ", 1)[1].split(", the new file bl.save renames over it")[0]
    start, token = os.path.basename(made)[1:].rsplit(".", 2)[:2]
    assert len(token) == 12 and int(token, 16) >= 0
    full = name + ".npy"
    encoded = os.fsencode(start)
    assert full.startswith(start) and len(encoded) <= 180
    # The longest such start: one more character would not fit.
    assert start == full or len(os.fsencode(full[: len(start) + 1])) > 180
    encoded.decode("utf-8")  # valid UTF-8: APFS and NTFS (as UTF-16) take it


def test_save_to_a_long_name_cut_inside_a_character(tmp_path):
    # 1 + 2 * 124 + 4 bytes: the first 180 end inside an "é", where the new
    # file's name used to be cut (a name macOS and Windows refuse).
    path = tmp_path / ("a" + "é" * 124 + ".npy")
    bl.save(path, np.arange(2))
    assert np.load(path).tolist() == [0, 1] and os.listdir(tmp_path) == [path.name]


# --- round 4 (issue 30) ---------------------------------------------------------


def test_an_empty_npz_is_an_empty_mapping_and_a_report_with_no_arrays(tmp_path):
    # np.savez with no arrays writes a zip that starts with PK\x05\x06: it
    # was "neither an .npy file ... nor a safetensors file".
    path = tmp_path / "empty.npz"
    np.savez(path)
    assert dict(np.load(path)) == {}
    assert dict(bl.load(path)) == {} and bl.load(path).unavailable == {}
    report = bl.inspect(path)
    assert (report.format, report.arrays) == ("npz", [])
    assert str(report) == f"{path}: npz, {path.stat().st_size:,} bytes, 0 arrays"
    done = inspect_command(path)
    assert done.returncode == 0 and "npz" in done.stdout and "0 arrays" in done.stdout, done.stderr


def test_a_file_of_arrays_named_json_is_read_by_its_bytes_not_as_an_index(tmp_path):
    # "weights.json" holding a safetensors file once said only "not UTF-8 text".
    path = tmp_path / "weights.json"
    bl.save(tmp_path / "w.safetensors", {"w": np.arange(3, dtype="<f4")})
    path.write_bytes((tmp_path / "w.safetensors").read_bytes())
    assert bl.load(path)["w"].tolist() == [0.0, 1.0, 2.0]
    assert bl.inspect(path).format == "safetensors"
    np.save(tmp_path / "a.npy", np.arange(2))
    (tmp_path / "a.json").write_bytes((tmp_path / "a.npy").read_bytes())
    assert bl.load(tmp_path / "a.json")["array"].tolist() == [0, 1]
    (tmp_path / "bad.json").write_bytes(b"\x80\x81 not json")
    with pytest.raises(bl.FormatError, match=r"read as a sharded checkpoint's index \(its name ends in .json\), but it is not UTF-8"):
        bl.load(tmp_path / "bad.json")


#: Text a hostile file could print to a terminal: clear the screen, set the
#: window title, forge a line, a bidirectional override.
HOSTILE_TEXT = "\x1b[2J\x1b]0;owned\x07\nforged line\r\u202e" + "k" * 500


def _no_control_characters(text):
    import unicodedata

    bad = [c for line in text.split("\n") for c in line if unicodedata.category(c) in ("Cc", "Cf")]
    assert not bad, f"control characters reach the terminal: {bad[:5]!r}"


def test_metadata_keys_reach_no_terminal_raw(tmp_path):
    # Keys were printed raw: the screen cleared, the title set, a line forged.
    path = tmp_path / "m.safetensors"
    bl.save(path, {"w": np.zeros(2, "<f4")}, metadata={HOSTILE_TEXT: HOSTILE_TEXT})
    text = str(bl.inspect(path))
    _no_control_characters(text)
    assert "forged line" not in text.split("\n")[2:] and len(text.split("\n")) == 4
    assert max(len(line) for line in text.split("\n")) < 200  # the 500-byte key is cut
    done = inspect_command(path)
    assert done.returncode == 0
    _no_control_characters(done.stdout)
    assert "\\x1b[2J" in done.stdout
    # A sharded checkpoint's index metadata alike.
    bl.save(tmp_path / "s.safetensors", {"w": np.zeros(2, "<f4")})
    (tmp_path / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {HOSTILE_TEXT: HOSTILE_TEXT}, "weight_map": {"w": "s.safetensors"}})
    )
    text = str(bl.inspect(tmp_path / "model.safetensors.index.json"))
    _no_control_characters(text)
    assert len(text.split("\n")) == 4


def test_names_from_a_folder_reach_no_terminal_raw(tmp_path):
    # A shard or index file name is text from elsewhere too.
    shard = "s\x1b[2J\x1b]0;owned\x07.safetensors"
    bl.save(tmp_path / shard, {"w": np.zeros(2, "<f4")})
    (tmp_path / "m\x1b[31m.safetensors.index.json").write_text(json.dumps({"weight_map": {"w": shard, "x": shard}}))
    with pytest.raises(bl.FormatError) as err:
        bl.load(tmp_path)
    _no_control_characters(str(err.value))
    done = inspect_command(tmp_path)
    assert done.returncode == 1
    _no_control_characters(done.stderr)
    assert "\\x1b[31m" in done.stderr


def test_a_failed_write_names_the_file(tmp_path):
    # EFBIG reached the caller as a bare OSError, without the path.
    code = """
    import errno, resource, signal, sys
    import numpy as np, bytelens as bl
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
    try:
        bl.save(sys.argv[1], {"w": np.zeros(1 << 16, "<f4")})
    except OSError as err:
        print("errno", err.errno == errno.EFBIG, "|", err)
    """
    path = tmp_path / "big.safetensors"
    returncode, out = run_child(code, path)
    assert returncode == 0 and "errno True |" in out and str(path) in out, out
    assert "writing the new file failed" in out and not path.exists()
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
