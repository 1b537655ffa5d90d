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

import multiprocessing
import multiprocessing.connection
import signal
import traceback
from typing import Any, Callable, Iterable, Iterator, NoReturn, Sequence

from sim.core.errors import WorkerDied

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
    """An error sent from a worker: unpickled, it is the error itself, its worker's traceback its cause.  An error
    that cannot be pickled is sent as a RuntimeError naming it, with its own traceback still the cause."""

    def __init__(self, error: BaseException, tb: str | None = None):
        self.error = error
        self.tb = tb or "".join(traceback.format_exception(type(error), error, error.__traceback__))

    def __reduce__(self) -> tuple[Any, tuple[BaseException, str]]:
        return _rebuilt, (self.error, self.tb)


def _answer(connection: Any, answer: tuple[bool, Any]) -> None:
    """Send an answer; one that cannot be pickled (a result, or an error) is sent as an error saying so."""
    try:
        connection.send(answer)
        return
    except Exception as error:
        ok, value = answer
        if ok:  # the result: the pickling error is the task's error
            connection.send((False, _Raised(error)))
        else:  # the error itself: its name and text, with its traceback
            surrogate = RuntimeError(f"{type(value.error).__name__}: {value.error} (could not be pickled: {error})")
            connection.send((False, _Raised(surrogate, value.tb)))


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
        except BaseException as error:  # a task that cannot be unpickled here: its error is the answer
            _answer(connection, (False, _Raised(error)))
            continue
        if message is None:
            return
        function, items = message
        try:
            if failed is not None:
                raise failed
            answer: tuple[bool, Any] = (True, [function(item) for item in items])
        except BaseException as error:
            answer = (False, _Raised(error))
        _answer(connection, answer)


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
        #: The task each busy worker holds (its pipe -> the task's number), in the map under way.
        self._held: dict[Any, int] = {}
        try:
            for _ in range(max(1, count)):
                mine, theirs = context.Pipe(duplex=True)
                self._connections.append(mine)
                inherited = self._connections[:-1] if forked else []  # spawned, a worker inherits none
                process = context.Process(target=_serve, args=(theirs, initializer, tuple(initargs), inherited),
                                          daemon=True)
                try:
                    process.start()
                finally:
                    theirs.close()
                self._processes.append(process)
        except BaseException:
            self.stop(at_once=True)
            raise

    def __enter__(self) -> "Workers":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def imap(self, function: Callable[[Any], Any], items: Iterable[Any], chunksize: int = 1) -> Iterator[Any]:
        """``function(item)`` for each item, in order, computed ``chunksize`` items to a task on the workers.  A
        task's error is raised where its results would have come, after every earlier task's."""
        if self._broken is not None:
            raise WorkerDied(self._broken)
        chunks = _chunks(items, max(1, chunksize))
        held = self._held = {}
        done: dict[int, tuple[bool, Any]] = {}
        sent = wanted = 0
        exhausted = False
        try:
            while True:
                # One task per worker: a task goes only to a worker that answered its last (so is reading), never
                # to one that may be blocked sending a result not read yet -- with two each, a task and a result
                # larger than a pipe's buffer (an effects search's chunk of states) deadlock the two.
                for connection in self._connections:
                    if exhausted:
                        break
                    if connection in held:
                        continue
                    chunk = next(chunks, None)
                    if chunk is None:
                        exhausted = True
                        break
                    held[connection] = sent  # held from here on: an interrupt in the send still stops the workers
                    sent += 1
                    self._send(connection, (function, chunk))
                while wanted in done:
                    ok, value = done.pop(wanted)
                    if not ok:
                        raise value
                    yield from value
                    wanted += 1
                if exhausted and wanted == sent:
                    return
                for connection in multiprocessing.connection.wait(list(held)):
                    answer = self._receive(connection)
                    done[held.pop(connection)] = answer
                    exhausted = exhausted or not answer[0]  # an error: no task after it is worth sending
        finally:
            self._held = {}
            if held:  # stopped early (an error, an interrupt, a search at its limit): no waiting
                self._broken = "the workers were stopped with tasks in flight"
                self.stop(at_once=True)

    def _send(self, connection: Any, message: Any) -> None:
        try:
            connection.send(message)
        except (BrokenPipeError, ConnectionResetError, EOFError):
            self._died(connection)

    def _receive(self, connection: Any) -> tuple[bool, Any]:
        try:
            answer: tuple[bool, Any] = connection.recv()
        except (EOFError, OSError):
            self._died(connection)
        return answer

    def _died(self, connection: Any) -> NoReturn:
        process = self._processes[self._connections.index(connection)]
        process.join(STOP_WAIT_S)
        self._broken = f"a worker process ended (exit code {process.exitcode}) without answering its task"
        raise WorkerDied(self._broken) from None

    def stop(self, at_once: bool = False) -> None:
        """Ask every worker to end, wait a moment and kill those still running; ``at_once`` (or a map still
        holding tasks): kill them now.  Killing is safe: no worker holds anything this process waits on."""
        at_once = at_once or bool(self._held)
        if not at_once:
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
        self._connections, self._processes, self._held = [], [], {}
        self._broken = self._broken or "the workers were stopped"


def _chunks(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
