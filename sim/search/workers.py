"""Worker processes that map a function over tasks, results in task order, and can always be stopped.

``multiprocessing.Pool`` shares one result queue, guarded by one lock, between all its workers, and its
``terminate`` kills them: a worker killed while it holds that lock (sending a result) leaves the pool's own
threads waiting on the lock forever (CPython issue 96995, open).  A sweep whose worker raised stops its pool
that way, so about one stop in forty on a loaded machine hung the command.  Here each worker has a pipe of
its own to this process and no lock is shared: stopping a worker can leave nothing held.  A worker that dies
is an error (a pool would wait for its task forever); a task that raises is re-raised here with its
worker's traceback as its cause, as a pool does (``sim.cli.blame`` reads it).
"""

from __future__ import annotations

import collections
import multiprocessing
import multiprocessing.connection
import signal
import traceback
from typing import Any, Callable, Iterable, Iterator, Sequence

from sim.core.errors import WorkerDied

#: Tasks sent ahead to each worker, so it never waits for this process between two.
AHEAD = 2
#: Seconds a stopped worker gets to exit before it is killed.
STOP_WAIT_S = 1.0


class RemoteTraceback(Exception):
    """A worker's traceback, as text: the cause of the error its task raised here."""

    def __init__(self, tb: str):
        super().__init__(tb)
        self.tb = tb

    def __str__(self) -> str:
        return self.tb


def _rebuilt(error: BaseException, tb: str) -> BaseException:
    error.__cause__ = RemoteTraceback(tb)
    return error


class _Raised:
    """An error sent from a worker: unpickled, it is the error itself, its worker's traceback its cause."""

    def __init__(self, error: BaseException):
        self.error = error
        self.tb = "".join(traceback.format_exception(type(error), error, error.__traceback__))

    def __reduce__(self) -> tuple[Any, tuple[BaseException, str]]:
        return _rebuilt, (self.error, self.tb)


def _serve(connection: Any, initializer: Callable[..., Any] | None, initargs: Sequence[Any],
           inherited: Sequence[Any] = ()) -> None:
    """A worker: answers each ``(function, items)`` with ``(True, results)`` or ``(False, error)``, until None
    or the pipe closes.  Interrupts are the parent's to handle.  ``inherited``: this process's copies of the
    pipes to the workers forked before it, closed, so that each worker's pipe ends when the parent's end does."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    for other in inherited:
        other.close()
    failed: BaseException | None = None
    try:
        if initializer is not None:
            initializer(*initargs)
    except BaseException as error:  # every task is answered with it: the parent raises it
        failed = error
    while True:
        try:
            message = connection.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        function, items = message
        try:
            if failed is not None:
                raise failed
            answer: tuple[bool, Any] = (True, [function(item) for item in items])
        except BaseException as error:
            answer = (False, _Raised(error))
        try:
            connection.send(answer)
        except Exception as error:  # a result that cannot be pickled: say so instead of dying
            connection.send((False, _Raised(error)))


class Workers:
    """``count`` worker processes (fork where the platform has it), each run ``initializer(*initargs)`` once.

    Use as a context manager.  :meth:`imap` may be called again once a map has finished; a map left
    unfinished (an error, an interrupt, a search stopped at its limit) kills the workers at once, and a later
    map raises :class:`WorkerDied`."""

    def __init__(self, count: int, initializer: Callable[..., Any] | None = None, initargs: Sequence[Any] = ()):
        forked = "fork" in multiprocessing.get_all_start_methods()
        context: Any = multiprocessing.get_context("fork" if forked else "spawn")
        self._connections: list[Any] = []
        self._processes: list[Any] = []
        self._broken: str | None = None
        try:
            for _ in range(max(1, count)):
                mine, theirs = context.Pipe(duplex=True)
                inherited = list(self._connections) if forked else []  # spawned, a worker inherits none
                process = context.Process(target=_serve, args=(theirs, initializer, tuple(initargs), inherited),
                                          daemon=True)
                process.start()
                theirs.close()
                self._connections.append(mine)
                self._processes.append(process)
        except BaseException:
            self.stop()
            raise

    def __enter__(self) -> "Workers":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def imap(self, function: Callable[[Any], Any], items: Iterable[Any], chunksize: int = 1) -> Iterator[Any]:
        """``function(item)`` for each item, in order, computed ``chunksize`` items to a task on the workers."""
        if self._broken is not None:
            raise WorkerDied(self._broken)
        chunks = _chunks(items, max(1, chunksize))
        waiting: dict[Any, collections.deque[int]] = {c: collections.deque() for c in self._connections}
        done: dict[int, list[Any]] = {}
        sent = wanted = 0
        exhausted = False
        try:
            while True:
                for connection, queue in waiting.items():  # keep every worker AHEAD tasks deep
                    while not exhausted and len(queue) < AHEAD:
                        chunk = next(chunks, None)
                        if chunk is None:
                            exhausted = True
                            break
                        connection.send((function, chunk))
                        queue.append(sent)
                        sent += 1
                while wanted in done:
                    yield from done.pop(wanted)
                    wanted += 1
                if exhausted and wanted == sent:
                    return
                for connection in multiprocessing.connection.wait([c for c, q in waiting.items() if q]):
                    ok, value = self._receive(connection)
                    task = waiting[connection].popleft()
                    if not ok:
                        raise value
                    done[task] = value
        finally:
            if any(waiting.values()):  # stopped early (an error, an interrupt, a search at its limit): no waiting
                self._broken = "the workers were stopped with tasks in flight"
                self.stop(at_once=True)

    def _receive(self, connection: Any) -> tuple[bool, Any]:
        try:
            return connection.recv()
        except (EOFError, OSError):
            process = self._processes[self._connections.index(connection)]
            process.join(STOP_WAIT_S)
            self._broken = f"a worker process ended (exit code {process.exitcode}) without answering its task"
            raise WorkerDied(self._broken) from None

    def stop(self, at_once: bool = False) -> None:
        """Ask every worker to end, wait a moment and kill those still running; ``at_once``: kill them now.
        Killing is safe: no worker holds anything this process waits on."""
        for connection in self._connections:
            try:
                connection.send(None)
            except (OSError, ValueError):
                pass
        for process in self._processes:
            if not at_once:
                process.join(STOP_WAIT_S)
            if process.is_alive():
                process.kill()
                process.join()
        for connection in self._connections:
            connection.close()
        self._connections, self._processes = [], []


def _chunks(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
