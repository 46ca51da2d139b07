"""The worker processes of one multi-process DataLoader iterator: starting them, reading their
results, noticing deaths, and shutting them down with every shared-memory segment in flight
freed.

Each worker writes a pipe of its own: no lock is shared between workers, so one killed in the
middle of a write cannot stall the others (a shared queue's lock would stay taken), and its
process sentinel tells the main process of its death at once. The pool is kept apart from the
iterator and shut down by a ``weakref.finalize`` on it: the garbage collector finalizes the
objects of a cycle in any order, and must not close the pipes before the segments named in
them are freed.
"""

from __future__ import annotations

import multiprocessing.connection
import pickle
import queue
import time

from . import _shared_memory

# How long shutdown waits for workers to finish their current task before terminating them.
SHUTDOWN_TIMEOUT = 10.0

WORKER_EXITED = object()


class ResultPipe:
    """One worker's results to the main process. A put is written to the pipe before it returns
    (there is no feeder thread, unlike ``multiprocessing.Queue``): a worker that dies abruptly
    cannot take queued messages, and the segments they name, down with it."""

    def __init__(self, context):
        self.reader, self._writer = context.Pipe(duplex=False)
        self.open = True  # False once the writer's end is gone (the worker exited)

    def put(self, obj) -> None:
        self._writer.send_bytes(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))

    def close_writer(self) -> None:
        self._writer.close()  # in the main process, once the worker holds its copy

    def close_reader(self) -> None:
        self.reader.close()  # in workers: the parent's end, so its death breaks the pipe


class WorkerPool:
    """Processes, their index queues and result pipes, and the event that stops their work."""

    def __init__(self, context):
        self.context = context
        self.done_event = context.Event()
        self.workers, self.index_queues, self.pipes = [], [], []
        self.closed = False

    def start(self, target, args_of) -> None:
        """One more worker: ``target(*args_of(index_queue, result_pipe))``."""
        index_queue = self.context.Queue()
        index_queue.cancel_join_thread()  # exiting must not wait on tasks nobody will read
        pipe = ResultPipe(self.context)
        worker = self.context.Process(target=target, args=args_of(index_queue, pipe), daemon=True)
        worker.start()
        pipe.close_writer()  # the worker's copy is the only one now
        self.workers.append(worker)
        self.index_queues.append(index_queue)
        self.pipes.append(pipe)

    def receive(self, active, timeout: float):
        """The next message; ``queue.Empty`` after ``timeout`` seconds without one;
        ``WORKER_EXITED`` when a worker flagged in ``active`` ended or a pipe closed."""
        readers = [pipe.reader for pipe in self.pipes if pipe.open]
        sentinels = [w.sentinel for w, on in zip(self.workers, active) if on]
        ready = multiprocessing.connection.wait([*readers, *sentinels], timeout)
        for pipe in self.pipes:
            if pipe.open and pipe.reader in ready:
                try:
                    return pickle.loads(pipe.reader.recv_bytes())
                except EOFError:
                    pipe.open = False
        if ready:
            return WORKER_EXITED
        raise queue.Empty

    def dead(self, active) -> list[int]:
        """The pids of workers flagged in ``active`` that are no longer alive."""
        return [w.pid for w, on in zip(self.workers, active) if on and not w.is_alive()]

    def shutdown(self) -> None:
        """Stop the workers and free every segment still in flight; safe to call twice."""
        if self.closed:
            return
        self.closed = True
        self.done_event.set()
        for index_queue in self.index_queues:
            index_queue.put(None)
        # Workers finish their current task; keep reading, or a full pipe would block them.
        deadline = time.monotonic() + SHUTDOWN_TIMEOUT
        while any(w.is_alive() for w in self.workers) and time.monotonic() < deadline:
            self._drain(0.05)
        for worker in self.workers:
            if worker.is_alive():
                worker.terminate()
            worker.join()
        self._drain(0)
        for pipe in self.pipes:
            pipe.reader.close()
        for index_queue in self.index_queues:
            index_queue.close()

    def _drain(self, timeout: float) -> None:
        nobody = [False] * len(self.workers)
        while True:
            try:
                got = self.receive(nobody, timeout)
            except queue.Empty:
                return
            if got is not WORKER_EXITED and got[1] is not None:
                _shared_memory.discard(got[1])
