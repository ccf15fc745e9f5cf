"""A hypothesis state machine over everything that can reach a Buffer's
memory: views, np.frombuffer, np.ndarray(buffer=), memoryviews, DLPack
export and import, wrapping, pickling (protocol 5, zero-copy), close() and
del, interleaved at random. Run as a script by test_hostile.py, in a child
process, so that a crash (reading freed memory) fails that test instead of
killing pytest.

The model keeps, for each block of memory, the bytes written to it. Every
step checks that every live array still reads the model's bytes, after
other allocations have had a chance to reuse freed memory; so an array left
over freed memory is caught by its contents even where touching it does not
crash.
"""

import gc
import os
import pickle
import sys

import numpy as np
from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

import bytelens as bl

SIZE = 16 * 1024  # blocks big enough to be reused by the allocations that follow a free


class Block:
    """The expected contents of one block of memory, shared by every Buffer over it."""

    def __init__(self, nbytes):
        self.bytes = bytearray(nbytes)


PICK = st.integers(0, 1 << 16)  # an index into a list, taken modulo its length


class Memory(RuleBasedStateMachine):
    """Buffers and handles live in plain lists (not hypothesis bundles, which
    would keep every object alive), so that forgetting one really drops it."""

    def __init__(self):
        super().__init__()
        self.buffers = []  # (Buffer, Block)
        self.handles = []  # (array or memoryview, Block)
        self.churn = []

    def _buffer(self, pick):
        return self.buffers[pick % len(self.buffers)] if self.buffers else None

    # --- making buffers ---------------------------------------------------

    @initialize()
    def start(self):
        # Every run starts with memory to reach, so short runs test something too.
        for nbytes in (SIZE, 256):
            self.buffers.append((bl.Buffer(nbytes), Block(nbytes)))

    @rule(nbytes=st.sampled_from([SIZE, SIZE + 8, 256]))
    def new(self, nbytes):
        self.buffers.append((bl.Buffer(nbytes), Block(nbytes)))

    @rule(pick=PICK)
    def pickled(self, pick):
        if (entry := self._buffer(pick)) is None or entry[0].closed:
            return
        buf, block = entry
        oob = []
        data = pickle.dumps(buf, protocol=5, buffer_callback=oob.append)
        again = pickle.loads(data, buffers=oob)
        assert again.address == buf.address  # zero-copy: the same block
        self.buffers.append((again, block))

    @rule(pick=PICK)
    def wrapped(self, pick):
        if not self.handles:
            return
        arr, block = self.handles[pick % len(self.handles)]
        if isinstance(arr, np.ndarray) and arr.nbytes == len(block.bytes) and arr.flags.writeable:
            self.buffers.append((bl.Buffer.wrap(arr), block))

    @rule(pick=PICK)
    def from_dlpack(self, pick):
        if (entry := self._buffer(pick)) is None or entry[0].closed:
            return
        buf, block = entry
        try:
            self.buffers.append((bl.Buffer.from_dlpack(buf.view("<u1")), block))
        except BufferError:
            # numpy 1.26 exports only legacy capsules, which cannot say "read-only".
            assert buf.readonly


    # --- reaching the memory --------------------------------------------------

    MAKERS = {
        "view": lambda buf: buf.view("<u1"),
        "frombuffer": lambda buf: np.frombuffer(buf, np.uint8),
        "ndarray(buffer=)": lambda buf: np.ndarray((buf.nbytes,), np.uint8, buffer=buf),
        "memoryview": memoryview,
        "np.from_dlpack": np.from_dlpack,
        "wide view": lambda buf: buf.view("<u2").view(np.uint8),
    }

    @rule(pick=PICK, how=st.sampled_from(sorted(MAKERS)))
    def reach(self, pick, how):
        if (entry := self._buffer(pick)) is None:
            return
        buf, block = entry
        make = self.MAKERS[how]
        if buf.closed:
            try:
                make(buf)
            except ValueError:
                return  # a closed buffer gives no new way in
            raise AssertionError(f"a closed Buffer handed out its memory ({how})")
        try:
            self.handles.append((make(buf), block))
        except BufferError:
            # A read-only buffer gives only versioned DLPack capsules; numpy 1.26 asks for legacy ones.
            assert how == "np.from_dlpack" and buf.readonly

    # --- writing, closing, forgetting -------------------------------------------

    @rule(pick=PICK, index=st.integers(0, SIZE + 7), value=st.integers(0, 255))
    def write(self, pick, index, value):
        if not self.handles:
            return
        arr, block = self.handles[pick % len(self.handles)]
        writable = arr.flags.writeable if isinstance(arr, np.ndarray) else not arr.readonly
        if index < len(block.bytes) and writable:
            arr[index] = value
            block.bytes[index] = value

    @rule(pick=PICK)
    def close(self, pick):
        if (entry := self._buffer(pick)) is None:
            return
        self._close(entry[0])

    @rule(pick=PICK)
    def close_a_reached_one(self, pick):
        """Closes a buffer some handle reaches: where use-after-free would be."""
        if not self.handles:
            return
        _, block = self.handles[pick % len(self.handles)]
        owners = [buf for buf, b in self.buffers if b is block]
        if owners:
            self._close(owners[pick % len(owners)])

    def _close(self, buf):
        try:
            buf.close()
        except BufferError as err:
            assert buf.exports > 0, err
            return
        assert buf.closed
        self._reuse_memory()

    @rule(pick=PICK)
    def forget_handle(self, pick):
        if self.handles:
            arr, _ = self.handles.pop(pick % len(self.handles))
            if isinstance(arr, memoryview) and pick % 2:
                arr.release()  # by hand, as a with-block would
            del arr
            self._reuse_memory()

    @rule(pick=PICK)
    def forget_buffer(self, pick):
        if self.buffers:
            del self.buffers[pick % len(self.buffers)]
            self._reuse_memory()

    @rule()
    def collect(self):
        gc.collect()
        self._reuse_memory()

    def _reuse_memory(self):
        # Allocations the size of the blocks, filled, so that memory freed too
        # early shows up as 0xAB in an array that should not have seen it.
        self.churn = None
        self.churn = [bytearray(b"\xab" * n) for n in (SIZE, SIZE + 8, 256) for _ in range(3)]

    # --- what must always hold ----------------------------------------------------

    @invariant()
    def every_live_array_reads_what_was_written(self):
        for arr, block in self.handles:
            got = bytes(arr) if isinstance(arr, memoryview) else arr.tobytes()
            assert got == bytes(block.bytes), "an array reads bytes nobody wrote to it"


def main():
    examples = int(os.environ.get("STATEFUL_EXAMPLES", "200"))
    Memory.TestCase.settings = settings(
        max_examples=examples,
        stateful_step_count=30,
        deadline=None,
        derandomize=False,
        database=None,
    )
    import unittest

    result = unittest.TextTestRunner(stream=sys.stdout, verbosity=1).run(
        unittest.defaultTestLoader.loadTestsFromTestCase(Memory.TestCase)
    )
    sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
