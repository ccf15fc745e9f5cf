"""``bytelens.DataLoader``: torch's ``DataLoader`` habits (a dataset of
samples, batches, shuffling, samplers, seeds, persistent workers, resume)
over a ring of typed slots.

The pieces, and where each lives:

- **Batches.** The first sample a worker makes fixes the batch's layout: one
  plan field per leaf of the sample (a dict's values, a tuple's items,
  nested), each ``(capacity, *shape)`` of the leaf's dtype, starting on a
  multiple of 64 bytes (so JAX takes it without a copy). The main process
  makes the ring once it has that layout, and every worker attaches to it;
  each batch's samples are written by a worker straight into a slot, with a
  header after the plan: the pass it belongs to, its worker, its number,
  how many samples it holds and whether it ends a worker's stream.
- **Order.** A map-style dataset's batches are numbered in the epoch's
  order; batch ``j`` goes to worker ``j % num_workers``. An iterable
  dataset's worker ``w`` makes its own batches ``0, 1, ...`` from its shard,
  and the loop takes them round-robin, skipping workers whose stream
  ended (as torch does). The main process asks for at most ``slots - 1``
  batches ahead of the one it waits for.
- **Randomness.** Before each batch the worker seeds ``random``, numpy's
  global RNG and torch's (if imported) from ``(seed, epoch, batch number)``
  (and the worker, for an iterable dataset, whose shards are the workers').
- **Workers.** Spawned, started by the first pass; with
  ``persistent_workers`` they live until ``close()``, the loader's
  collection or the end of the process, and a pass left early tells them
  to drop its batches. The ring's name is removed once every worker has
  attached, and the dataset's shared copy is removed with the loader; the
  resource tracker of ``multiprocessing`` removes both if the main process
  dies first.
- **The dataset** goes to each worker pickled, except its numpy arrays of
  at least ``SHARE_BYTES``: those in a file mapping (``bl.load``,
  ``np.memmap``, a ``bl.SharedBuffer``) go by the file's name, the others
  are copied once into one shared segment, and every worker maps the same
  pages (read-only).
"""

from __future__ import annotations

import itertools
import math
import multiprocessing
import operator
import os
import pickle
import random
import signal
import sys
import time
import traceback
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from multiprocessing import connection as _connection
from typing import Any, NamedTuple, NoReturn

import numpy as np

from . import _frameworks, _loader
from ._loader import LoaderWorkerError, _error, _RemoteTraceback
from ._native import Buffer, Plan, Ring, RingClosedError, SharedBuffer

#: Arrays of at least this many bytes that the dataset holds are shared
#: with the workers instead of pickled into each.
SHARE_BYTES = 64 << 10
#: A batch's header: the pass, the worker, the batch number, the samples,
#: the flags, the epoch (int64 each, two spare).
_HEADER = 8
_END = 1
#: Plan fields start on multiples of this (XLA's zero-copy alignment).
_FIELD_ALIGN = _frameworks.JAX_ALIGN


class WorkerInfo(NamedTuple):
    """What ``bl.get_worker_info()`` returns in a worker."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """In a :class:`DataLoader` worker, its ``id``, ``num_workers``, ``seed``
    (the worker's own, derived from the loader's seed) and ``dataset`` (the
    worker's copy); ``None`` in the main process. An iterable dataset uses it
    in ``__iter__`` to read its own shard.

    >>> import bytelens as bl
    >>> bl.get_worker_info() is None
    True
    """
    return _worker_info


# Samples and their layout ---------------------------------------------------


def _leaf(value: Any) -> np.ndarray | None:
    """A sample's leaf as a numpy array (None if it is no leaf)."""
    if isinstance(value, np.ndarray):
        return value if value.dtype != object else None
    if isinstance(value, np.generic):
        return np.asarray(value)
    if isinstance(value, bool):
        return np.asarray(value, dtype=np.bool_)
    if isinstance(value, int):
        return np.asarray(value, dtype=np.int64)
    if isinstance(value, float):
        return np.asarray(value, dtype=np.float64)
    if type(value).__module__.startswith("torch") and hasattr(value, "numpy"):
        return value.detach().cpu().numpy()  # type: ignore[no-any-return]
    return None


def _describe(sample: Any, path: str = "") -> tuple[Any, list[tuple[str, str, tuple[int, ...]]]]:
    """A sample's tree (its dicts, tuples and lists) and its leaves'
    (path, dtype, shape), in order."""
    fields: list[tuple[str, str, tuple[int, ...]]] = []

    def walk(value: Any, where: str) -> Any:
        if isinstance(value, Mapping):
            keys = list(value)
            return ("dict", type(value), keys, [walk(value[k], f"{where}[{k!r}]") for k in keys])
        if isinstance(value, (tuple, list)):
            return ("seq", type(value), [walk(v, f"{where}[{i}]") for i, v in enumerate(value)])
        array = _leaf(value)
        if array is None:
            raise _error(TypeError, "WrongType", 
                f"the sample's field {where or '(the sample itself)'} is a {type(value).__name__}: "
                f"bl.DataLoader batches numpy arrays, numpy and Python numbers and torch tensors, "
                f"in dicts, tuples and lists (turn strings and other objects into numbers in the dataset)"
            )
        fields.append((where or "(the sample)", array.dtype.str, tuple(array.shape)))
        return ("leaf",)

    return walk(sample, path), fields


def _flatten(tree: Any, sample: Any, fields: list[tuple[str, str, tuple[int, ...]]], what: str, first: str) -> list[np.ndarray]:
    """The sample's leaves, checked against the batch's layout."""
    out: list[np.ndarray] = []

    def walk(node: Any, value: Any) -> None:
        kind = node[0]
        if kind == "dict":
            if not isinstance(value, Mapping) or list(value) != node[2]:
                keys = list(value) if isinstance(value, Mapping) else type(value).__name__
                raise _error(ValueError, "BadValue", f"{what} has keys {keys}, the batch {node[2]} (from {first})")
            for k, child in zip(node[2], node[3]):
                walk(child, value[k])
        elif kind == "seq":
            if not isinstance(value, (tuple, list)) or len(value) != len(node[2]):
                n = len(value) if isinstance(value, (tuple, list)) else type(value).__name__
                raise _error(ValueError, "BadValue", f"{what} has {n} items, the batch {len(node[2])} (from {first})")
            for child, v in zip(node[2], value):
                walk(child, v)
        else:
            path, dtype, shape = fields[len(out)]
            array = _leaf(value)
            if array is None:
                raise _error(TypeError, "WrongType", f"{what}: field {path} is a {type(value).__name__}, not an array or a number")
            if array.dtype.str != dtype or array.shape != shape:
                raise _error(ValueError, "BadValue", 
                    f"{what}: field {path} has shape {array.shape} and dtype {array.dtype}, but the "
                    f"batch's has shape {shape} and dtype {np.dtype(dtype)}, taken from {first}: every "
                    f"sample's field must have one shape and dtype (crop or pad it in the dataset)"
                )
            out.append(array)

    walk(tree, sample)
    return out


def _rebuild(tree: Any, leaves: Iterator[Any]) -> Any:
    kind = tree[0]
    if kind == "dict":
        pairs = [(k, _rebuild(child, leaves)) for k, child in zip(tree[2], tree[3])]
        try:
            return tree[1](pairs) if tree[1] is not dict else dict(pairs)
        except TypeError:
            return dict(pairs)
    if kind == "seq":
        items = [_rebuild(child, leaves) for child in tree[2]]
        if hasattr(tree[1], "_fields"):  # a namedtuple
            return tree[1](*items)
        return tree[1](items)
    return next(leaves)


def _plan(fields: list[tuple[str, str, tuple[int, ...]]], capacity: int) -> Plan:
    """The batch's plan: field ``fk`` for leaf k, each on a multiple of 64."""
    plan = Plan("batch")
    for k, (_, dtype, shape) in enumerate(fields):
        if plan.nbytes % _FIELD_ALIGN:
            plan = plan.struct(**{f"_pad{k}": ("|u1", (_FIELD_ALIGN - plan.nbytes % _FIELD_ALIGN,))})
        plan = plan.struct(**{f"f{k}": (dtype, (capacity, *shape))})
    return plan


def _header_at(plan: Plan) -> int:
    return -(-plan.nbytes // _FIELD_ALIGN) * _FIELD_ALIGN


# Randomness ------------------------------------------------------------------


def _seed_batch(seed: int, epoch: int, number: int, worker: int) -> None:
    """Seeds random, numpy's global RNG and torch's (if imported) for one
    batch; `worker` is -1 for a map-style dataset (its batch numbers are
    the epoch's)."""
    words = np.random.SeedSequence([seed, epoch, number, worker + 1, 0x626C]).generate_state(4, np.uint32)
    word64 = (int(words[0]) << 32) | int(words[1])
    random.seed(word64)
    np.random.seed(words)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(word64 & (2**63 - 1))


def _permutation(seed: int, epoch: int, n: int) -> list[int]:
    rng = np.random.default_rng(np.random.SeedSequence([seed, epoch, 0x7368]))
    return rng.permutation(n).tolist()  # type: ignore[no-any-return]


def _worker_seed(seed: int, worker: int) -> int:
    return int(np.random.SeedSequence([seed, worker, 0x7772]).generate_state(1, np.uint64)[0]) & (2**63 - 1)


def _new_seed() -> int:
    """A seed for seed=None: from torch's global generator when torch is
    imported (so torch.manual_seed makes the run reproducible, as with
    torch's DataLoader), else from Python's `random`."""
    torch = sys.modules.get("torch")
    if torch is not None:
        return int(torch.empty((), dtype=torch.int64).random_().item()) & (2**63 - 1)
    return random.getrandbits(63)


# The dataset, shared --------------------------------------------------------


def _mappings() -> list[tuple[int, int, str, int, str]]:
    """This process's file mappings: (start, end, perms, file offset, path)."""
    out = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6 and parts[5].startswith("/"):
                    start, end = (int(v, 16) for v in parts[0].split("-"))
                    out.append((start, end, parts[1], int(parts[2], 16), parts[5].rstrip("\n")))
    except OSError:
        pass
    return out


def _extent(array: np.ndarray) -> tuple[int, int]:
    """The first and one-past-the-last byte addresses the array touches."""
    low = high = array.ctypes.data
    for n, stride in zip(array.shape, array.strides):
        if n == 0:
            return low, low
        if stride < 0:
            low += (n - 1) * stride
        else:
            high += (n - 1) * stride
    return low, high + array.itemsize


class _Sharing(pickle.Pickler):
    """Pickles the dataset with its large numpy arrays as references: by a
    file's name where the array lies in a shared or read-only file mapping,
    else as a place in one segment that the caller fills afterwards."""

    def __init__(self, file: Any, segment: str) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.segment = segment
        self.copies: list[tuple[np.ndarray, int]] = []
        self.size = 0
        self.by_file = 0
        self.maps = _mappings() if sys.platform.startswith("linux") else []
        self.seen: dict[int, tuple[Any, ...]] = {}

    def reducer_override(self, obj: Any) -> Any:
        if not isinstance(obj, np.ndarray) or obj.dtype.hasobject or obj.nbytes < SHARE_BYTES:
            return NotImplemented
        ref = self.seen.get(id(obj))
        if ref is None:
            ref = self.seen[id(obj)] = self._reference(obj)
        return _shared_array, (ref,)

    def _reference(self, array: np.ndarray) -> tuple[Any, ...]:
        low, high = _extent(array)
        for start, end, perms, offset, path in self.maps:
            if start <= low and high <= end:
                # A private writable mapping may differ from its file.
                if path.endswith(" (deleted)") or (perms[1] == "w" and perms[3] == "p"):
                    break
                self.by_file += 1
                at = offset + array.ctypes.data - start
                return ("file", path, at, array.dtype.str, array.shape, array.strides)
        at = -(-self.size // _FIELD_ALIGN) * _FIELD_ALIGN
        self.size = at + array.nbytes
        self.copies.append((array, at))
        return ("segment", self.segment, at, array.dtype.str, array.shape, None)


#: A worker's mappings of shared datasets, by segment name or file path.
_attached: dict[str, Any] = {}


def _shared_array(ref: tuple[Any, ...]) -> np.ndarray:
    """Rebuilds a shared array in a worker: a read-only view of the segment
    or the file it lies in."""
    how, name, offset, dtype, shape, strides = ref
    source = _attached.get(name)
    if source is None:
        source = _attached[name] = SharedBuffer.attach(name) if how == "segment" else Buffer.map(name, "r")
    array = source.view(dtype, offset, shape, strides)
    array.flags.writeable = False
    return array  # type: ignore[no-any-return]


class _Shared:
    """The segment holding the copies of a dataset's arrays, with its name
    until the loader goes (workers started later attach by it)."""

    def __init__(self, name: str, copies: list[tuple[np.ndarray, int]], size: int) -> None:
        self.segment: SharedBuffer | None = SharedBuffer.create(name, max(size, 1))
        self.name = name
        if _loader._tracker is not None:
            _loader._tracker.register("/" + name, "shared_memory")
        whole = self.segment.view("|u1")
        for array, at in copies:
            whole[at : at + array.nbytes].view(array.dtype).reshape(array.shape)[...] = array
        del whole

    def close(self) -> None:
        if self.segment is None:
            return
        segment, self.segment = self.segment, None
        try:
            segment.unlink()
        except FileNotFoundError:
            pass
        if _loader._tracker is not None:
            _loader._tracker.unregister("/" + self.name, "shared_memory")
        try:
            segment.close()
        except Exception:
            pass  # a view of it is still alive: it goes with the last one


# The worker -----------------------------------------------------------------


class _Job(NamedTuple):
    """What every worker gets (pickled once, shared arrays by reference)."""

    dataset: Any
    worker_init_fn: Callable[[int], Any] | None
    batch_size: int
    drop_last: bool
    iterable: bool


def _serve(blob: bytes, conn: Any, w: int, workers: int, parent: int, imports: list[str], seed: int) -> None:
    """A worker: loads the job, then makes the batches it is asked for until
    it is told to stop, its pipe closes or the main process dies.

    `imports` are the seeded frameworks the main process had imported
    (torch): imported here before any batch, so that a sample's draws from
    torch's generator are seeded as torch's DataLoader workers' are.
    `seed` is the loader's (a pool's workers are started again when
    ``load_state_dict`` changes it)."""
    global _worker_info
    alive = _loader._die_with_parent(parent)
    if not alive():
        return
    try:
        for module in imports:
            __import__(module)
        job: _Job = pickle.loads(blob)
    except BaseException as err:
        conn.send(("load", None, _loader._pickled(err), traceback.format_exc()))
        return
    _worker_info = WorkerInfo(w, workers, _worker_seed(seed, w), job.dataset)
    _seed_batch(seed, 0, 1 << 63, w)  # for worker_init_fn's draws (never a batch's: each is seeded again)
    try:
        if job.worker_init_fn is not None:
            job.worker_init_fn(w)
    except BaseException as err:
        conn.send(("init", None, _loader._pickled(err), traceback.format_exc()))
        return
    conn.send(("ready",))
    try:
        _Worker(job, conn, w, alive).run()
    except (EOFError, OSError, RingClosedError):
        pass


def _fill_slot(slot: Any, leaves: list[list[np.ndarray]], at: int, header: tuple[int, ...]) -> None:
    """Writes a batch's samples and its header into a slot."""
    if leaves:
        for k in range(len(leaves[0])):
            out = slot[f"f{k}"]
            for i, row in enumerate(leaves):
                out[i] = row[k]
    slot.buffer.view("<i8", offset=at, shape=(_HEADER,))[:6] = header


class _Worker:
    def __init__(self, job: _Job, conn: Any, w: int, alive: Callable[[], bool]) -> None:
        self.job, self.conn, self.w, self.alive = job, conn, w, alive
        self.inbox: list[Any] = []
        self.floor = 0  # tasks of passes before this one are dropped
        self.ring: Any = None
        self.layout: Any = None  # (tree, fields, first, at)
        self.stream: Iterator[Any] | None = None
        self.made = 0  # batches of the stream made so far
        self.taken = 0  # samples of the stream taken so far
        self.seed = self.epoch = 0

    def _read(self, wait: float) -> None:
        """Moves what the main process sent into the inbox, acting on
        flushes at once."""
        while self.conn.poll(wait):
            wait = 0
            msg = self.conn.recv()
            if msg[0] == "flush":
                self.floor = msg[1]
                self.inbox = [m for m in self.inbox if m[0] not in ("map", "iter", "next") or m[1] >= self.floor]
            else:
                self.inbox.append(msg)

    def run(self) -> None:
        while self.alive():
            if not self.inbox:
                self._read(_loader._SLICE)
                continue
            self._read(0)
            if not self.inbox:
                continue
            msg = self.inbox.pop(0)
            kind = msg[0]
            if kind == "stop":
                return
            if kind == "ring":
                self._attach(msg)
                continue
            if msg[1] < self.floor:
                continue
            key = (msg[1], self.w, msg[4] if kind in ("map", "iter") else msg[2])
            try:
                if kind == "map":
                    self._map(*msg[1:])
                elif kind == "iter":
                    self._start(*msg[1:])
                else:
                    self._next(*msg[1:])
            except RingClosedError:
                return
            except SystemExit as err:
                self.conn.send(("exit", key, repr(err.code), ""))
                return
            except BaseException as err:
                self.conn.send(("error", key, _loader._pickled(err), traceback.format_exc()))

    def _attach(self, msg: Any) -> None:
        _, name, tree, fields, first, at = msg
        self.ring = Ring.attach(name)
        self.layout = (tree, fields, first, at)
        self.conn.send(("attached",))

    def _map(self, gen: int, epoch: int, seed: int, number: int, indices: list[int]) -> None:
        _seed_batch(seed, epoch, number, -1)
        samples = [self.job.dataset[i] for i in indices]
        self._write(gen, epoch, number, samples, [f"sample {i}" for i in indices])

    def _start(self, gen: int, epoch: int, seed: int, skip: int) -> None:
        """A new pass over an iterable dataset: a new iterator, with the
        batches a resumed run already had made again and dropped."""
        self.stream, self.made, self.taken, self.seed, self.epoch = iter(self.job.dataset), 0, 0, seed, epoch
        for _ in range(skip):
            self._take()

    def _take(self) -> list[Any]:
        _seed_batch(self.seed, self.epoch, self.made, self.w)
        assert self.stream is not None
        samples = list(itertools.islice(self.stream, self.job.batch_size))
        self.taken += len(samples)
        self.made += 1
        return samples

    def _next(self, gen: int, number: int) -> None:
        if number != self.made or self.stream is None:
            raise RuntimeError(f"worker {self.w} was asked for batch {number} of its stream, at batch {self.made}")
        first = self.taken
        samples = self._take()
        if not samples or (self.job.drop_last and len(samples) < self.job.batch_size):
            samples = []
        names = [f"sample {first + k} of worker {self.w}'s stream" for k in range(len(samples))]
        self._write(gen, self.epoch, number, samples, names)

    def _write(self, gen: int, epoch: int, number: int, samples: list[Any], names: list[str]) -> None:
        if not samples and self.layout is None:
            # A stream that ends before any batch: said through the pipe,
            # as there may never be a ring.
            self.conn.send(("ended", (gen, self.w, number)))
            return
        if self.layout is None:
            self._wait_for_ring(samples[0], names[0])
        tree, fields, first, at = self.layout
        leaves = [_flatten(tree, s, fields, name, first) for s, name in zip(samples, names)]
        slot = _loader._produce(self.ring, self.alive)
        if slot is None:
            raise RingClosedError("the main process is gone")
        with slot:
            # In a function of its own: no array of the slot outlives it,
            # as publishing requires.
            _fill_slot(slot, leaves, at, (gen, self.w, number, len(samples), 0 if samples else _END, epoch))

    def _wait_for_ring(self, sample: Any, name: str) -> None:
        """Says the first sample's layout; waits for the ring made for it."""
        tree, fields = _describe(sample)
        self.conn.send(("spec", tree, fields, name))
        while self.layout is None:
            if not self.alive():
                raise RingClosedError("the main process is gone")
            self._read(_loader._SLICE)
            for msg in [m for m in self.inbox if m[0] == "ring"]:
                self.inbox.remove(msg)
                self._attach(msg)


# The main process -----------------------------------------------------------


class _Pool:
    """The workers, their pipes and the ring; nothing in it refers to the
    loader (its finalizer holds this)."""

    def __init__(self, blob: bytes, workers: int, slots: int, tag: str, seed: int) -> None:
        self.parts = _loader._Parts()
        self.end = weakref.finalize(self, self.parts.close)
        self.slots, self.tag = slots, tag
        self.procs: list[Any] = self.parts.procs
        self.conns: list[Any] = self.parts.conns
        self.ring: Any = None
        self.layout: Any = None
        self.attached = 0
        self.errors: dict[tuple[int, int, int], Any] = {}
        self.ends: set[tuple[int, int, int]] = set()
        self.gen = 0
        #: The buffers of the slots batches were yielded in, while the loop
        #: (this pass's or an earlier one's) still refers to them.
        self.lent: list[Buffer] = []
        try:
            self._start(blob, workers, seed)
        except BaseException:
            self.close()
            raise

    def _start(self, blob: bytes, workers: int, seed: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        imports = [m for m in ("torch",) if m in sys.modules]
        for w in range(workers):
            mine, theirs = ctx.Pipe()
            proc = ctx.Process(
                target=_serve, args=(blob, theirs, w, workers, os.getpid(), imports, seed), name=f"bytelens-dataloader-{w}", daemon=True
            )
            _loader._start_lasting(proc)
            theirs.close()
            self.procs.append(proc)
            self.conns.append(mine)
        for w, conn in enumerate(self.conns):
            said = _loader._ready(conn, self.procs[w])
            if said != ("ready",):
                self.raise_from(w, said, None)

    def send(self, w: int, msg: Any) -> None:
        try:
            self.conns[w].send(msg)
        except (OSError, ValueError):
            self.raise_from(w, None, None)

    def flush(self, gen: int) -> None:
        for w in range(len(self.conns)):
            try:
                self.conns[w].send(("flush", gen))
            except (OSError, ValueError):
                pass

    def make_ring(self, fields: Any, tree: Any, first: str, capacity: int) -> None:
        plan = _plan(fields, capacity)
        at = _header_at(plan)
        self.ring = Ring.create(f"{self.tag}-data", plan, self.slots, nbytes=at + 8 * _HEADER)
        self.parts.rings.append(self.ring)
        self.parts.track(self.ring.name)
        self.layout = (tree, fields, first, at, len(fields))
        for w in range(len(self.conns)):
            self.send(w, ("ring", self.ring.name, tree, fields, first, at))

    def read(self, capacity: int) -> None:
        """Acts on what the workers said: a layout, an attach, an error
        (kept for its batch's turn), a death."""
        for w, conn in enumerate(self.conns):
            while conn.poll():
                try:
                    msg = conn.recv()
                except (EOFError, OSError):
                    self.raise_from(w, None, None)
                kind = msg[0]
                if kind == "spec" and self.ring is None:
                    self.make_ring(msg[2], msg[1], f"the first sample ({msg[3]})", capacity)
                elif kind == "attached":
                    self.attached += 1
                    if self.attached == len(self.conns):
                        self.ring.unlink()  # every worker has it mapped
                        self.parts.untrack()
                elif kind == "error":
                    self.errors.setdefault(tuple(msg[1]), msg)
                elif kind == "ended":
                    self.ends.add(tuple(msg[1]))
                elif kind == "exit":
                    self.raise_from(w, msg, None)
            if self.procs[w].exitcode is not None:
                self.raise_from(w, None, None)

    def raise_from(self, w: int, msg: Any, waiting: str | None) -> NoReturn:
        proc = self.procs[w]
        name = f"DataLoader worker {w} (pid {proc.pid})"
        if msg is None:
            try:
                if self.conns[w].poll(0.5):
                    msg = self.conns[w].recv()
            except (EOFError, OSError):
                pass
        if msg and msg[0] in ("load", "init"):
            _, _, payload, text = msg
            what = "load the dataset" if msg[0] == "load" else "run worker_init_fn"
            last = text.strip().splitlines()[-1]
            cause = _RemoteTraceback(f"\n\nin {name}:\n{text}")
            if msg[0] == "init":
                raise _unpickled(payload, last) from cause
            raise LoaderWorkerError(
                f"{name} could not {what}: {last}. The dataset's class and worker_init_fn must be "
                f"importable in a new process (the workers are spawned): define them in a module or "
                f"in the script's top level, not in a notebook, `python -c` or the interactive prompt"
            ) from cause
        if msg and msg[0] == "exit":
            raise LoaderWorkerError(f"{name} called sys.exit({msg[2]}) while making a batch; the batch is lost")
        proc.join(1.0)
        code = proc.exitcode
        how = f"was killed by {signal.Signals(-code).name}" if code is not None and code < 0 else f"exited with code {code}"
        raise LoaderWorkerError(f"{name} {how}" + (f", while the loop waited for {waiting}" if waiting else ""))

    def close(self) -> None:
        for conn in self.conns:
            try:
                conn.send(("stop",))
            except (OSError, ValueError):
                pass
        self.end()


def _unpickled(payload: bytes, text: str) -> BaseException:
    try:
        err = pickle.loads(payload)
        return err if isinstance(err, BaseException) else RuntimeError(text)
    except Exception:
        return RuntimeError(text)


class _Resources:
    """What a loader holds outside this process's heap (its pool and the
    dataset's segment), for its finalizer."""

    def __init__(self) -> None:
        self.pool: _Pool | None = None
        self.shared: _Shared | None = None

    def close_pool(self) -> None:
        pool, self.pool = self.pool, None
        if pool is not None:
            pool.close()

    def close(self) -> None:
        self.close_pool()
        shared, self.shared = self.shared, None
        if shared is not None:
            shared.close()


class DataLoader:
    """Batches of a dataset's samples, made by worker processes straight
    into shared-memory slots, with torch's ``DataLoader`` arguments.

    ``dataset`` is map-style (``__len__`` and ``__getitem__``) or iterable
    (``__iter__``). A sample is a numpy array, a number or a torch tensor,
    or a dict, tuple or list of them (nested); a batch has the sample's
    structure, each leaf stacked along a new first axis, as numpy arrays
    over the slot (torch tensors with ``framework="torch"``, JAX arrays
    with ``"jax"``, zero-copy). One pass over the loader is one epoch:
    shuffled (``shuffle=True``) by a permutation that depends only on
    ``(seed, epoch)``; each batch made after seeding ``random``, numpy and
    torch from ``(seed, epoch, batch number)``, whichever worker makes it.

    ``state_dict()`` mid-epoch and ``load_state_dict()`` in a new loader
    built the same way resume exactly. Workers are spawned; with
    ``persistent_workers`` (the default) the same processes serve every
    epoch. ``close()``, ``del``, the end of the program or its death
    leave no process and nothing in ``/dev/shm``.

    >>> import numpy as np
    >>> import bytelens as bl
    >>> samples = [{"x": np.full(3, i, dtype=np.float32), "y": i} for i in range(5)]
    >>> loader = bl.DataLoader(samples, batch_size=2, num_workers=0)
    >>> len(loader), [b["y"].tolist() for b in loader]
    (3, [[0, 1], [2, 3], [4]])
    >>> next(iter(loader))["x"].shape
    (2, 3)
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: int | None = 1,
        shuffle: bool = False,
        *,
        seed: int | None = None,
        drop_last: bool = False,
        num_workers: int = 2,
        persistent_workers: bool = True,
        slots: int | None = None,
        framework: str = "numpy",
        sampler: Iterable[int] | None = None,
        batch_sampler: Iterable[Iterable[int]] | None = None,
        worker_init_fn: Callable[[int], Any] | None = None,
        timeout: float | None = None,
    ) -> None:
        self.iterable = not (hasattr(dataset, "__getitem__") and hasattr(dataset, "__len__")) or _torch_iterable(dataset)
        if self.iterable and not hasattr(dataset, "__iter__"):
            raise _error(TypeError, "WrongType", f"dataset must have __len__ and __getitem__, or __iter__: {type(dataset).__name__} has neither")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise _error(ValueError, "BadValue", "batch_sampler is mutually exclusive with batch_size, shuffle, sampler and drop_last (as in torch)")
            batch_size = None
        elif not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise _error(ValueError, "BadValue", f"batch_size must be an int >= 1, not {batch_size!r} (bl.DataLoader always batches)")
        if sampler is not None and shuffle:
            raise _error(ValueError, "BadValue", "sampler is mutually exclusive with shuffle (as in torch)")
        if self.iterable and (shuffle or sampler is not None or batch_sampler is not None):
            raise _error(ValueError, "BadValue", "an iterable dataset takes no shuffle, sampler or batch_sampler: it gives its samples in its own order")
        if not isinstance(num_workers, int) or num_workers < 0:
            raise _error(ValueError, "BadValue", f"num_workers must be an int >= 0, not {num_workers!r}")
        if slots is None:
            slots = 2 * num_workers + 2
        if not isinstance(slots, int) or slots < 2:
            raise _error(ValueError, "BadValue", f"slots must be an int >= 2, not {slots!r}")
        if timeout is not None and not timeout >= 0:
            raise _error(ValueError, "BadValue", f"timeout must be a number of seconds >= 0 (0 or None: none), not {timeout!r}")
        if timeout == 0:
            timeout = None  # torch's default, 0, is no timeout
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = _new_seed() if seed is None else operator.index(seed) % (1 << 64)
        self.drop_last = drop_last
        self.num_workers = num_workers
        self.persistent_workers = persistent_workers
        self.slots = slots
        self.framework = _frameworks.framework_name(framework)
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.worker_init_fn = worker_init_fn
        self.timeout = timeout
        self._capacity = batch_size if batch_sampler is None else _batch_sampler_size(batch_sampler)
        self._next_epoch = 0
        self._resume: dict[str, Any] | None = None
        self._position: dict[str, Any] | None = None  # where the pass in progress is
        self._pass: weakref.ref[_Pass] | None = None
        self._blob: bytes | None = None
        self._res = _Resources()
        self._end = weakref.finalize(self, self._res.close)

    def __len__(self) -> int:
        if self.batch_sampler is not None:
            return len(self.batch_sampler)  # type: ignore[arg-type]
        n = len(self.sampler if self.sampler is not None else self.dataset)  # type: ignore[arg-type]
        assert self.batch_size is not None
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def set_epoch(self, epoch: int) -> None:
        """The epoch of the next pass (its shuffle and its seeds); without
        it, each pass is the epoch after the last."""
        self._next_epoch = operator.index(epoch)

    def state_dict(self) -> dict[str, Any]:
        """Where the loader is: after k batches of an epoch, a loader built
        the same way and given this yields the rest of that epoch, then
        the epochs after it."""
        if self._position is not None:
            return {**self._position, "seed": self.seed}
        if self._resume is not None:
            return dict(self._resume)
        return {"epoch": self._next_epoch, "batches": 0, "seed": self.seed}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resumes where `state` (from :meth:`state_dict`) was taken: the
        next pass yields the rest of its epoch, with the same samples and
        the same random draws."""
        state = dict(state)
        if state.get("workers", self.num_workers) != self.num_workers and self.iterable:
            raise _error(ValueError, "BadValue", 
                f"this state comes from a loader with {state['workers']} workers; an iterable dataset's "
                f"shards depend on the number of workers, so resume with num_workers={state['workers']}"
            )
        if state["seed"] != self.seed:
            self.seed = state["seed"]
            self._res.close_pool()  # the workers' own seeds change
        self._next_epoch = state["epoch"]
        self._resume = state if state.get("batches") else None

    def close(self) -> None:
        """Stops the workers and removes the shared memory; a loop in
        progress ends (from its body too: the loop ends there)."""
        current = self._pass() if self._pass is not None else None
        if current is not None:
            current.closed = True
        self._res.close()
        self._blob = None  # its shared copy is gone: a later pass makes another

    def __iter__(self) -> Iterator[Any]:
        previous = self._pass() if self._pass is not None else None
        if previous is not None:
            previous.closed = True  # one pass at a time, as torch's iterator
        run = _Pass(self)
        self._pass = weakref.ref(run)
        return run.batches()

    # Used by _Pass.

    def _pool(self) -> _Pool:
        if self._res.pool is None:
            self._res.pool = _Pool(self._job_blob(), self.num_workers, self.slots, f"bl-dl-{os.getpid()}-{os.urandom(4).hex()}", self.seed)
        return self._res.pool

    def _job_blob(self) -> bytes:
        if self._blob is None:
            import io

            name = f"bl-dl-{os.getpid()}-{os.urandom(4).hex()}-dataset"
            out = io.BytesIO()
            pickler = _Sharing(out, name)
            job = _Job(self.dataset, self.worker_init_fn, self._capacity or 0, self.drop_last, self.iterable)
            try:
                pickler.dump(job)
            except Exception as err:
                raise LoaderWorkerError(
                    f"the dataset ({type(self.dataset).__name__}) or worker_init_fn cannot be sent to the "
                    f"DataLoader's workers: {err}. Both must be picklable, their classes and functions "
                    f"importable in a new process (the workers are spawned)"
                ) from err
            if pickler.copies:
                self._res.shared = _Shared(name, pickler.copies, pickler.size)
            self._blob = out.getvalue()
        return self._blob

    def _batches_of(self, epoch: int) -> Iterator[list[int]]:
        """The epoch's batches of indices."""
        if self.batch_sampler is not None:
            if hasattr(self.batch_sampler, "set_epoch"):
                self.batch_sampler.set_epoch(epoch)
            for batch in self.batch_sampler:
                yield [operator.index(i) for i in batch]
            return
        order: Iterable[int]
        if self.sampler is not None:
            if hasattr(self.sampler, "set_epoch"):
                self.sampler.set_epoch(epoch)
            order = self.sampler
        elif self.shuffle:
            order = _permutation(self.seed, epoch, len(self.dataset))
        else:
            order = range(len(self.dataset))
        assert self.batch_size is not None
        it = iter(order)
        while True:
            chunk = [operator.index(i) for i in itertools.islice(it, self.batch_size)]
            if not chunk or (self.drop_last and len(chunk) < self.batch_size):
                return
            yield chunk


def _torch_iterable(dataset: Any) -> bool:
    """Whether `dataset` is a torch ``IterableDataset`` (which may have a
    ``__len__`` and inherits a ``__getitem__``: torch goes by its class)."""
    data = sys.modules.get("torch.utils.data")
    return data is not None and isinstance(dataset, data.IterableDataset)


def _batch_sampler_size(batch_sampler: Any) -> int | None:
    """How many samples a batch_sampler's batches hold at most (the slots'
    capacity): its ``batch_size`` (torch's ``BatchSampler`` has one), the
    longest of a list's batches, else (None) the first batch's size."""
    size = getattr(batch_sampler, "batch_size", None)
    if isinstance(size, int) and size >= 1:
        return size
    if isinstance(batch_sampler, (list, tuple)):
        return max((len(b) for b in batch_sampler), default=1) or 1
    return None


class _Pass:
    """One epoch of a loader."""

    def __init__(self, loader: DataLoader) -> None:
        self.loader = loader
        self.closed = False
        resume, loader._resume = loader._resume, None
        self.epoch = loader._next_epoch if resume is None else resume["epoch"]
        loader._next_epoch = self.epoch + 1
        self.done = 0 if resume is None else resume["batches"]
        self.resume = resume
        self.warned = False

    def _where(self, extra: dict[str, Any] | None = None) -> None:
        self.loader._position = {"epoch": self.epoch, "batches": self.done, "workers": self.loader.num_workers, **(extra or {})}

    def batches(self) -> Iterator[Any]:
        loader = self.loader
        try:
            if loader.num_workers == 0:
                yield from self._here()
            else:
                yield from self._from_workers()
        finally:
            if loader._pass is not None and loader._pass() is self:
                loader._position = None
            if not loader.persistent_workers:
                loader._res.close_pool()

    # Without workers: batches made here, in new memory.

    def _here(self) -> Iterator[Any]:
        loader = self.loader
        layout: Any = None
        torch = sys.modules.get("torch")
        saved = (random.getstate(), np.random.get_state(), torch.get_rng_state() if torch is not None else None)
        try:
            if loader.iterable:
                stream = iter(loader.dataset)
                batches: Iterator[tuple[int, list[Any], list[str]]] = (
                    (number, samples, [f"sample {k} of batch {number}" for k in range(len(samples))])
                    for number in itertools.count()
                    for samples in [self._drawn(stream, number)]
                )
            else:
                batches = (
                    (number, [loader.dataset[i] for i in seeded], [f"sample {i}" for i in seeded])
                    for number, indices in enumerate(loader._batches_of(self.epoch))
                    for seeded in [self._seeded(indices, number)]
                )
            for number, samples, names in batches:
                if not samples:
                    return
                if number < self.done:
                    continue  # a resumed epoch: made again, dropped
                if layout is None:
                    layout = (*_describe(samples[0]), f"the first sample ({names[0]})")
                tree, fields, first = layout
                rows = [_flatten(tree, s, fields, name, first) for s, name in zip(samples, names)]
                stacked = [np.stack([row[k] for row in rows]) for k in range(len(fields))]
                self.done = number + 1
                self._where({"streams": [self.done], "ended": [], "turn": 0} if loader.iterable else None)
                yield _rebuild(tree, iter(_frameworks.to_framework(a, loader.framework) for a in stacked))
                if self.closed:
                    return
        finally:
            # The caller's generators, as they were: no batch's seeds leak
            # into the training loop.
            random.setstate(saved[0])
            np.random.set_state(saved[1])
            if torch is not None:
                torch.set_rng_state(saved[2])

    def _seeded(self, indices: list[int], number: int) -> list[int]:
        _seed_batch(self.loader.seed, self.epoch, number, -1)
        return indices

    def _drawn(self, stream: Iterator[Any], number: int) -> list[Any]:
        loader = self.loader
        _seed_batch(loader.seed, self.epoch, number, 0)
        samples = list(itertools.islice(stream, loader.batch_size))
        if loader.drop_last and len(samples) < (loader.batch_size or 0):
            return []
        return samples

    # With workers.

    def _from_workers(self) -> Iterator[Any]:
        loader = self.loader
        pool = loader._pool()
        pool.gen += 1
        self.gen = gen = pool.gen
        self.pool = pool
        pool.flush(gen)
        pool.errors.clear()
        pool.ends.clear()
        n = loader.num_workers
        # Batches taken ahead of their turn, by (worker, number): their
        # arrays, the buffer holding their slot (None once copied out) and
        # their sample count; None for a stream's end.
        self.pending: dict[tuple[int, int], Any] = {}
        complete = False
        try:
            if loader.iterable:
                yield from self._streams(pool, n)
            else:
                yield from self._mapped(pool, n)
            complete = not self.closed
        finally:
            self.pending.clear()
            if not complete and loader._res.pool is pool:
                pool.flush(gen + 1)  # the workers drop this pass's tasks

    def _mapped(self, pool: _Pool, n: int) -> Iterator[Any]:
        loader = self.loader
        source = loader._batches_of(self.epoch)
        for _ in range(self.done):  # a resumed epoch: its first batches again, dropped
            if next(source, None) is None:
                return
        window = loader.slots - 1
        indices_of: dict[int, list[int]] = {}
        sent = self.done
        ended = False
        number = self.done
        while True:
            while not ended and sent < number + window:
                batch = next(source, None)
                if batch is None:
                    ended = True
                    break
                if loader._capacity is None:
                    loader._capacity = len(batch) or 1
                if len(batch) > loader._capacity:
                    raise _error(ValueError, "BadValue", 
                        f"batch {sent} of epoch {self.epoch} has {len(batch)} indices, more than the "
                        f"{loader._capacity} its slots hold (the first batch's size): give the batch_sampler a "
                        f"batch_size attribute, the most indices a batch has, as torch's BatchSampler has"
                    )
                if not batch:
                    raise _error(ValueError, "BadValue", f"batch {sent} of epoch {self.epoch} has no indices")
                indices_of[sent] = batch
                pool.send(sent % n, ("map", self.gen, self.epoch, loader.seed, sent, batch))
                sent += 1
            if number >= sent:
                return
            indices = indices_of.pop(number)
            got = self._wait(pool, (number % n, number), f"batch {number} of epoch {self.epoch} (samples {indices[:8]}{'...' if len(indices) > 8 else ''})")
            if got is _CLOSED:
                return
            self.done = number + 1
            self._where()
            yield got
            del got
            number += 1
            if self.closed:
                return

    def _streams(self, pool: _Pool, n: int) -> Iterator[Any]:
        resume = self.resume or {}
        made = list(resume.get("streams", [0] * n))
        ended = set(resume.get("ended", []))
        turn = resume.get("turn", 0)
        asked = list(made)
        credit = max(1, (self.loader.slots - 1) // n)
        for w in range(n):
            pool.send(w, ("iter", self.gen, self.epoch, self.loader.seed, made[w]))
        while len(ended) < n:
            w = turn
            if w in ended:
                turn = (turn + 1) % n
                continue
            for v in range(n):
                while v not in ended and asked[v] < made[v] + credit:
                    pool.send(v, ("next", self.gen, asked[v]))
                    asked[v] += 1
            got = self._wait(pool, (w, made[w]), f"batch {made[w]} of worker {w}'s stream, epoch {self.epoch}")
            if got is _CLOSED:
                return
            if got is _ENDED:
                ended.add(w)
                turn = (turn + 1) % n
                continue
            made[w] += 1
            turn = (turn + 1) % n
            self.done += 1
            self._where({"streams": list(made), "ended": sorted(ended), "turn": turn})
            yield got
            del got
            if self.closed:
                return

    def _wait(self, pool: _Pool, key: tuple[int, int], what: str) -> Any:
        """The batch `key`, as the loop gets it."""
        loader = self.loader
        started = time.monotonic()
        slots = loader.slots
        w = key[0]
        while key not in self.pending:
            if self.closed:
                return _CLOSED
            pool.read(loader._capacity or 1)
            if (self.gen, *key) in pool.ends:
                return _ENDED
            error = pool.errors.pop((self.gen, *key), None)
            if error is not None:
                _, _, payload, text = error
                proc = pool.procs[w]
                raise _unpickled(payload, text.strip().splitlines()[-1]) from _RemoteTraceback(
                    f"\n\nin DataLoader worker {w} (pid {proc.pid}), making {what}:\n{text}"
                )
            if pool.ring is None:  # no layout yet: wait for a worker to say it
                _connection.wait(pool.conns, _loader._SLICE)
            else:
                pool.lent = [buf for buf in pool.lent if buf.exports]
                ahead = [k for k, v in self.pending.items() if v is not _ENDED and v[1] is not None]
                if len(pool.lent) + len(ahead) >= slots:
                    # Every slot is this process's: the batch taken furthest
                    # ahead moves to new memory, and its slot goes round.
                    far = max(ahead, key=lambda k: (k[1], k[0]))
                    self.pending[far] = _copied(self.pending[far])
                    self._warn()
                try:
                    batch = pool.ring.consume(timeout=_loader._SLICE)
                except TimeoutError:
                    batch = None
                if batch is not None:
                    self._took(pool, batch)
            if loader.timeout is not None and time.monotonic() - started > loader.timeout and key not in self.pending:
                proc = pool.procs[w]
                raise _error(TimeoutError, "Timeout", 
                    f"{what} took more than {loader.timeout} s (timeout=) in DataLoader worker {w} (pid {proc.pid})"
                )
        got = self.pending.pop(key)
        if got is _ENDED:
            return _ENDED
        arrays, buf, count = got
        if buf is not None:
            alive = [b for b in pool.lent if b.exports]
            if len(alive) >= slots - 1:
                # Yielded in place, this batch would leave no slot to go round.
                arrays = {k: a[:count].copy() for k, a in arrays.items()}
                self._warn()
            else:
                pool.lent = alive + [buf]
        del buf
        tree, fields, first, at, nfields = pool.layout
        framework = loader.framework
        return _rebuild(tree, iter(_frameworks.to_framework(arrays[f"f{k}"][:count], framework) for k in range(nfields)))

    def _took(self, pool: _Pool, batch: Any) -> None:
        """Files a batch the ring gave: ahead of its turn, or dropped if a
        pass left early made it."""
        at = pool.layout[3]
        buf = batch.buffer
        head = buf.view("<i8", offset=at, shape=(_HEADER,))
        gen, w, number, count, flags = (int(v) for v in head[:5])
        del head
        if gen == self.gen and (w, number) not in self.pending:
            if flags & _END:
                self.pending[(w, number)] = _ENDED
            else:
                self.pending[(w, number)] = (batch.arrays(), buf, count)
        batch.release()

    def _warn(self) -> None:
        if not self.warned:
            self.warned = True
            warnings.warn(
                f"batches of this DataLoader are still referenced (arrays or tensors kept by the loop) "
                f"and hold nearly all its {self.loader.slots} slots: the next batches get new memory "
                f"while they are kept. Keep a copy of what you keep (batch['y'].copy(), tensor.clone(), "
                f"loss.item()) and the batches stay zero-copy",
                RuntimeWarning,
                stacklevel=4,
            )


def _copied(pending: tuple[dict[str, np.ndarray], Any, int]) -> tuple[dict[str, np.ndarray], None, int]:
    """A batch taken ahead, moved out of its slot into new memory (no
    reference to the slot's arrays is left here: its slot goes round)."""
    arrays, _, count = pending
    return {k: a[:count].copy() for k, a in arrays.items()}, None, count


#: What _wait returns for a stream's end, and for a pass closed meanwhile.
_ENDED: Any = object()
_CLOSED: Any = object()
