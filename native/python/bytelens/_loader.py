"""``bytelens.Loader``: batches made by worker processes, handed to the
training loop in index order over the slots of a ring, without a copy.

Two rings connect the main process and its workers: ``tasks`` (one slot a
task: a position in the loader's order and the index to fill) and ``data``
(the batches, each slot laid out by the user's plan, with the position
written after the plan's arrays). The main process publishes a task only
for positions less than ``slots - 1`` ahead of the one it hands out next,
so every batch it waits for has a slot, whatever order the workers finish
in, with one slot left for the batch the loop body holds. Both names are
unlinked once every worker has attached: nothing is left in ``/dev/shm``
however the processes end, and workers die with the main process (Linux's
``PR_SET_PDEATHSIG``; elsewhere they notice within 0.2 s).
"""

from __future__ import annotations

import ctypes
import multiprocessing
import operator
import os
import pickle
import queue
import signal
import sys
import threading
import time
import traceback
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from . import _frameworks
from ._native import Buffer, Plan, Ring, RingBatch, RingClosedError, RingSlot

#: How long the main process and the workers wait at a time before they
#: look for errors, dead workers or a dead parent.
_SLICE = 0.2
# POSIX: a process that removes what a dead process left in /dev/shm.
from multiprocessing import resource_tracker as _tracker

if "shared_memory" not in getattr(_tracker, "_CLEANUP_FUNCS", {}):  # Windows
    _tracker = None  # type: ignore[assignment]
#: How long the workers of a pass that ends have, all together, to stop
#: by themselves before they are killed.
_GRACE = 2.0
#: The task ring's plan: a position and an index.
_TASK = Plan("task").struct(task=("<i8", (2,)))


class LoaderWorkerError(RuntimeError):
    """A loader worker died, or could not start; says which, and how."""

    kind = "WorkerDied"


def _error(cls: type[Exception], kind: str, message: str) -> Exception:
    """``cls(message)`` with its ``kind`` from the error table (errors.md)."""
    err = cls(message)
    err.kind = kind  # type: ignore[attr-defined]
    return err


class _RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker, as its text."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return self.text


def _position_at(plan: Plan) -> int:
    """Where a data slot keeps its position: after the plan's bytes, aligned."""
    return -(-plan.nbytes // 8) * 8


class Loader:
    """Batches filled by ``workers`` processes, yielded in index order.

    ``fill(slot, index)`` runs in the workers (it must be importable, as
    for ``multiprocessing``'s spawn): it writes the batch for ``index``
    into ``slot["field"]``, the numpy arrays of ``plan``'s fields over the
    slot's shared memory. Iterating the loader yields ``{field: array}``
    dicts (torch tensors with ``framework="torch"``, JAX arrays with
    ``"jax"``) over the slots, in the order of ``indices`` (an iterable of
    ints, or ``n`` for ``range(n)``), zero-copy. The slot of a batch goes
    back to the workers once nothing refers to its arrays or tensors any
    more; the loop body may keep its current batch while the next is
    filled, and keeping more than ``slots - workers - 1`` stalls the
    workers until some are let go.

    A worker's exception is raised here, with its traceback as the cause;
    a worker that dies is a :class:`LoaderWorkerError` naming it. Leaving
    the loop, ``close()``, ``del`` or the end of the main process stop the
    workers, and leave nothing in ``/dev/shm``.
    """

    def __init__(
        self,
        fill: Callable[[RingSlot, int], Any],
        plan: Plan,
        indices: Iterable[int] | int,
        workers: int = 2,
        slots: int = 8,
        framework: str = "numpy",
    ) -> None:
        if not isinstance(plan, Plan):
            raise _error(TypeError, "WrongType", f"plan must be a bytelens.Plan, not {type(plan).__name__}")
        if not isinstance(workers, int) or workers < 1:
            raise _error(ValueError, "BadValue", f"workers must be an int >= 1, not {workers!r}")
        if not isinstance(slots, int) or slots < 2:
            raise _error(ValueError, "BadValue", f"slots must be an int >= 2, not {slots!r}")
        if not isinstance(indices, int):
            try:
                iter(indices)
            except TypeError:
                raise _error(
                    TypeError,
                    "WrongType",
                    f"indices must be an int or an iterable of ints, not {type(indices).__name__}",
                ) from None
        # Read lazily, as the loop goes: an endless iterator is fine.
        self.indices: Iterable[int] = range(indices) if isinstance(indices, int) else indices
        self.fill = fill
        self.plan = plan
        self.workers = workers
        self.slots = slots
        self.framework = _frameworks.framework_name(framework)
        # The passes in progress (a pass ends by itself; close() ends them).
        self._runs: weakref.WeakSet[_Run] = weakref.WeakSet()

    def __len__(self) -> int:
        if not hasattr(self.indices, "__len__"):
            raise _error(
                TypeError, "WrongType", "this Loader's indices have no len() (an iterator, read as the loop goes)"
            )
        return len(self.indices)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        run = _Run(self)
        self._runs.add(run)
        try:
            yield from run.batches()
        finally:
            run.close()

    def close(self) -> None:
        """Stops the workers of the loops in progress and ends them (leaving
        a loop does too). Called from the loop's body, the loop ends there."""
        for run in list(self._runs):
            run.close()


class _Parts:
    """What a pass holds outside this process's heap: its rings, pipes and
    workers. Nothing here refers to the pass or its loader, so that the
    pass's finalizer (which holds this) lets both be collected."""

    def __init__(self) -> None:
        self.rings: list[Ring] = []
        self.procs: list[Any] = []
        self.conns: list[Any] = []
        self.tracked: list[str] = []

    def track(self, name: str) -> None:
        """Has multiprocessing's resource tracker (a process of its own)
        remove the segment `name` if this process dies before it does: the
        names live until every worker has attached, which can take seconds
        (a worker importing torch)."""
        if _tracker is not None:
            _tracker.register("/" + name, "shared_memory")
            self.tracked.append(name)

    def untrack(self) -> None:
        """The names are removed: the tracker has nothing to do."""
        tracked, self.tracked = self.tracked, []
        for name in tracked:
            _tracker.unregister("/" + name, "shared_memory")  # type: ignore[union-attr]

    def close(self) -> None:
        """Closes the rings, stops the workers (together: one grace period
        for all, then SIGKILL), closes the pipes and removes the names."""
        rings, procs, conns = self.rings, self.procs, self.conns
        self.rings, self.procs, self.conns = [], [], []
        for ring in rings:
            try:
                ring.close()
            except Exception:
                pass
        deadline = time.monotonic() + _GRACE
        for proc in procs:
            proc.join(max(0.0, deadline - time.monotonic()))
        for proc in procs:
            if proc.is_alive():
                proc.kill()
        for proc in procs:
            proc.join(_GRACE)
        for conn in conns:
            conn.close()
        for ring in rings:
            try:
                ring.unlink()
            except FileNotFoundError:
                pass
        self.untrack()


class _Run:
    """One pass of a loader: its rings, workers and order."""

    def __init__(self, loader: Loader) -> None:
        self.loader = loader
        self.window = loader.slots - 1
        tag = self.tag = f"bl-loader-{os.getpid()}-{os.urandom(4).hex()}"
        at = _position_at(loader.plan)
        self.parts = _Parts()
        # However the pass ends (its loop left, its iterator dropped, the
        # interpreter exiting), its parts go; the finalizer holds only them.
        self.end = weakref.finalize(self, self.parts.close)
        self.data: Any = Ring.create(tag + "-data", loader.plan, loader.slots, nbytes=at + 8)
        self.parts.rings.append(self.data)
        self.parts.track(self.data.name)
        self.tasks: Any = Ring.create(tag + "-tasks", _TASK, loader.slots)
        self.parts.rings.insert(0, self.tasks)
        self.parts.track(self.tasks.name)
        self.at = at
        self.procs: list[Any] = self.parts.procs
        self.conns: list[Any] = self.parts.conns
        self.closed = False
        self.waiting = 0
        self.next_task = 0
        # The indices, read as the loop goes: those of the positions not yet
        # handed out, how many were read, and how many there are (at the end).
        self.source = iter(loader.indices)
        self.index_of: dict[int, int] = {}
        self.read = 0
        self.total: int | None = None
        self.warned = False
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    def _start(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        fill = self.loader.fill
        try:
            # Sent as bytes, loaded by the worker itself: it says why it
            # cannot load `fill`, where the spawn start would just die.
            blob = pickle.dumps(fill)
        except Exception as err:
            raise LoaderWorkerError(
                f"fill ({_name_of(fill)}) cannot be sent to the loader's workers: {err}. It must be "
                f"importable in a new process: a function defined at the top level of a module"
            ) from err
        # Per worker: whether it is in `fill`, and the index it fills (read
        # when it dies: os._exit and signals leave no message).
        self.filling = ctx.RawArray("q", 2 * self.loader.workers)
        for w in range(self.loader.workers):
            mine, theirs = ctx.Pipe(duplex=False)
            proc = ctx.Process(
                target=_work,
                args=(blob, self.data.name, self.tasks.name, self.at, theirs, self.filling, w, os.getpid()),
                name=f"bytelens-loader-{w}",
                daemon=True,
            )
            _start_lasting(proc)
            theirs.close()
            self.procs.append(proc)
            self.conns.append(mine)
        for w, conn in enumerate(self.conns):
            # A worker attaches, or says why not, or dies.
            said = _ready(conn, self.procs[w])
            if said != ("ready",):
                self._raise_from(w, said, starting=True)
        # Every worker has the rings mapped: the names can go.
        self.data.unlink()
        self.tasks.unlink()
        self.parts.untrack()

    def batches(self) -> Iterator[dict[str, Any]]:
        slots = self.loader.slots
        self._feed(self.window)
        # Batches taken ahead of their turn, by position: their numpy arrays,
        # and the buffer that holds their slot (None once copied out).
        pending: dict[int, tuple[dict[str, Any], Buffer | None]] = {}
        # The buffers of batches handed out in place, while anything made
        # from them (the loop's variable, a kept array or tensor) lives.
        lent: list[Buffer] = []
        pos = -1
        while True:
            pos += 1
            self.waiting = pos
            self._feed(pos + self.window)
            if self._index(pos) is None:
                return  # the indices ended
            while pos not in pending:
                self._feed(pos + self.window)
                lent = [buf for buf in lent if buf.exports]
                ahead = [p for p, (_, buf) in pending.items() if buf is not None]
                if len(lent) + len(ahead) >= slots:
                    # Every slot is this process's: the worker filling `pos`
                    # has none. A batch taken ahead moves to new memory, or,
                    # when the loop keeps every slot, `pos` is filled here.
                    if ahead:
                        pending[max(ahead)] = (self._copied(pending[max(ahead)][0], len(lent)), None)
                    else:
                        pending[pos] = (self._filled_here(pos, len(lent)), None)
                        break
                batch = self._take()
                buf = batch.buffer
                at = int(buf.view("<i8", offset=self.at, shape=(1,))[0])
                if at >= pos and at not in pending:
                    pending[at] = (batch.arrays(), buf)
                # (Else a worker filled a position already filled here.)
                batch.release()
                del batch, buf
            arrays, held = pending.pop(pos)
            if held is not None:
                lent.append(held)
            del held
            out = {name: _frameworks.to_framework(array, self.loader.framework) for name, array in arrays.items()}
            del arrays
            self._feed(pos + 1 + self.window)
            self.index_of.pop(pos, None)
            yield out
            del out
            if self.closed:  # loader.close() from the loop's body
                return

    def _warn(self, kept: int) -> None:
        """Says once why batches arrive in new memory."""
        if not self.warned:
            self.warned = True
            warnings.warn(
                f"{kept} batches of this loader are still referenced (arrays or tensors "
                f"kept by the loop) and hold all its {self.loader.slots} slots: the next "
                f"batches get new memory while they are kept, and the workers wait. "
                f"Keep a copy of what you keep (batch['y'].copy(), tensor.clone(), "
                f"loss.item()) and the batches stay zero-copy and parallel",
                RuntimeWarning,
                stacklevel=4,
            )

    def _copied(self, arrays: dict[str, Any], kept: int) -> dict[str, Any]:
        """The batch's arrays in new memory: its slot goes back to the workers."""
        self._warn(kept)
        return {name: array.copy() for name, array in arrays.items()}

    def _filled_here(self, pos: int, kept: int) -> dict[str, Any]:
        """Batch `pos` filled by this process in new memory (a one-slot ring
        of its own, its name removed at once), for a loop that keeps every
        slot of the loader's: no worker can fill it."""
        self._warn(kept)
        ring = Ring.create(f"{self.tag}-own-{pos}", self.loader.plan, 1)
        try:
            ring.unlink()
            with ring.produce(timeout=0) as slot:
                self.loader.fill(slot, self.index_of[pos])
            with ring.consume(timeout=0) as batch:
                arrays = batch.arrays()
            return arrays
        finally:
            ring.close()

    def _feed(self, upto: int) -> None:
        """Publishes the tasks of the positions before `upto` that the task
        ring has room for (while the loop keeps every slot, workers hold
        tasks they cannot fill, and the rest wait here)."""
        while self.next_task < upto:
            if self.next_task < self.waiting:
                self.next_task += 1  # filled here already
                continue
            index = self._index(self.next_task)
            if index is None:
                return
            try:
                slot = self.tasks.produce(timeout=0)
            except TimeoutError:
                return
            with slot:
                slot["task"][:] = (self.next_task, index)
            self.next_task += 1

    def _index(self, pos: int) -> int | None:
        """The index at position `pos` (read from the indices as far as it;
        None past their end)."""
        while self.read <= pos and self.total is None:
            try:
                item = next(self.source)
            except StopIteration:
                self.total = self.read
                break
            try:
                self.index_of[self.read] = operator.index(item)
            except TypeError:
                raise _error(
                    TypeError,
                    "WrongType",
                    f"indices must be ints, not {type(item).__name__} ({item!r} at position {self.read})",
                ) from None
            self.read += 1
        return self.index_of.get(pos)

    def _take(self) -> RingBatch:
        while True:
            try:
                return self.data.consume(timeout=_SLICE)
            except TimeoutError:
                self._check()
                self._feed(self.waiting + self.window)

    def _check(self) -> None:
        """Raises a worker's exception, or an error for a worker that died."""
        for w, conn in enumerate(self.conns):
            if conn.poll():
                self._raise_from(w)
            if self.procs[w].exitcode is not None:
                self._raise_from(w)

    def _raise_from(self, w: int, message: Any = None, starting: bool = False) -> None:
        proc, conn = self.procs[w], self.conns[w]
        try:
            if message is None and conn.poll(1.0):
                message = conn.recv()
        except (EOFError, OSError):
            pass
        name = f"loader worker {w} (pid {proc.pid})"
        if message and message[0] == "load":
            _, _, payload, text = message
            raise LoaderWorkerError(
                f"{name} could not load fill ({_name_of(self.loader.fill)}): {text.strip().splitlines()[-1]}. "
                f"fill must be importable in a new process (the workers are spawned): define it in a "
                f"module, not in a notebook, `python -c` or the interactive prompt"
            ) from _RemoteTraceback(f"\n\nin {name}, loading fill:\n{text}")
        if message and message[0] == "exit":
            _, index, code, _ = message
            raise LoaderWorkerError(
                f"{name} called sys.exit({code}) while filling index {index}; the batch it was "
                f"filling is lost (a worker's exit is an error here, not the main process's exit)"
            )
        if message and message[0] == "error":
            _, index, payload, text = message
            try:
                err = pickle.loads(payload)
            except Exception:  # not picklable: its text will do
                err = RuntimeError(f"loader worker {w} failed on index {index}")
            raise err from _RemoteTraceback(f"\n\nin loader worker {w} (pid {proc.pid}), filling index {index}:\n{text}")
        proc.join(1.0)
        code = proc.exitcode
        how = (
            f"was killed by {signal.Signals(-code).name}"
            if code is not None and code < 0
            else f"exited with code {code}"
        )
        if starting:
            raise LoaderWorkerError(
                f"{name} {how} while starting, before it could load fill: a spawned worker first "
                f"imports the main module, and a script that starts the loop at import (without an "
                f'`if __name__ == "__main__":` guard) makes it fail so; its traceback is on the '
                f"worker's stderr"
            )
        if self.filling[2 * w]:
            raise LoaderWorkerError(
                f"{name} {how} while filling index {self.filling[2 * w + 1]}; the batch it was "
                f"filling is lost"
            )
        index = self.index_of.get(self.waiting)
        waiting = "nothing" if index is None else f"index {index}"
        raise LoaderWorkerError(
            f"{name} {how}, while the loader waited for "
            f"{waiting} (position {self.waiting}); the batch it was filling is lost"
        )

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.end()
        self.data = self.tasks = None


def _ready(conn: Any, proc: Any) -> Any:
    """Waits for a worker's first word: ("ready",), or why not (None when
    it died saying nothing)."""
    while not conn.poll(_SLICE):
        if proc.exitcode is not None:
            break
    try:
        return conn.recv() if conn.poll() else None
    except EOFError:
        return None


_starter: queue.SimpleQueue[tuple[Any, queue.SimpleQueue[BaseException | None]]] | None = None
_starter_lock = threading.Lock()


def _start_lasting(proc: Any) -> None:
    """Starts `proc` from a thread that lives as long as this process.
    Linux's PR_SET_PDEATHSIG (which kills a worker when its parent dies)
    follows the parent *thread*: workers started from the thread that
    iterates would die with it, though the loader lives on."""
    global _starter
    with _starter_lock:
        if _starter is None:
            _starter = queue.SimpleQueue()
            threading.Thread(target=_run_starter, args=(_starter,), name="bytelens-loader-starter", daemon=True).start()
        starter = _starter
    done: queue.SimpleQueue[BaseException | None] = queue.SimpleQueue()
    starter.put((proc, done))
    err = done.get()
    if err is not None:
        raise err


def _run_starter(requests: queue.SimpleQueue[tuple[Any, queue.SimpleQueue[BaseException | None]]]) -> None:
    while True:
        proc, done = requests.get()
        try:
            proc.start()
        except BaseException as err:
            done.put(err)
        else:
            done.put(None)


def _forget_starter() -> None:
    """A forked child has no starter thread: it starts its own."""
    global _starter, _starter_lock
    _starter, _starter_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_starter)


def _die_with_parent(parent: int) -> Callable[[], bool]:
    """Asks Linux to kill this worker when its parent (`parent`, the main
    process) dies; and a check that it still lives, for everywhere (a
    worker whose parent died before it got here exits at its first check)."""
    if sys.platform == "linux":
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    return lambda: os.getppid() == parent


def _name_of(fill: Any) -> str:
    return f"{getattr(fill, '__module__', '?')}.{getattr(fill, '__qualname__', repr(fill))}"


def _work(blob: bytes, data_name: str, tasks_name: str, at: int, conn: Any, filling: Any, w: int, parent: int) -> None:
    """A worker: takes tasks, fills their batches, until the tasks close."""
    parent_alive = _die_with_parent(parent)
    if not parent_alive():
        return
    try:
        fill: Callable[[RingSlot, int], Any] = pickle.loads(blob)
    except BaseException as err:
        conn.send(("load", None, _pickled(err), traceback.format_exc()))
        return
    try:
        data = Ring.attach(data_name)
        tasks = Ring.attach(tasks_name)
    except BaseException as err:
        conn.send(("error", None, _pickled(err), traceback.format_exc()))
        return
    conn.send(("ready",))
    while parent_alive():
        try:
            task = tasks.consume(timeout=_SLICE)
        except TimeoutError:
            continue
        except RingClosedError:
            return
        with task:
            pos, index = (int(v) for v in task["task"])
        try:
            slot = _produce(data, parent_alive)
            if slot is None:
                return
            with slot:
                filling[2 * w + 1], filling[2 * w] = index, 1
                fill(slot, index)
                filling[2 * w] = 0
                # Written after `fill`, which may write its whole slot
                # (ctypes.memset(slot.address, 0, slot.nbytes)).
                slot.buffer.view("<i8", offset=at, shape=(1,))[0] = pos
        except RingClosedError:
            return
        except SystemExit as err:
            conn.send(("exit", index, repr(err.code), ""))
            return
        except BaseException as err:
            conn.send(("error", index, _pickled(err), traceback.format_exc()))
            return


def _produce(data: Ring, parent_alive: Callable[[], bool]) -> RingSlot | None:
    while parent_alive():
        try:
            return data.produce(timeout=_SLICE)
        except TimeoutError:
            continue
    return None


def _pickled(err: BaseException) -> bytes:
    try:
        return pickle.dumps(err)
    except Exception:
        return pickle.dumps(RuntimeError(f"{type(err).__name__}: {err}"))
