"""Playing an event order against a real executor process.

The same director, planner, client, network and human as the model play the
order (:func:`sim.families.workspace.replay.play`), with two parts swapped
for real ones:

* :class:`RealWorkspace` -- a fresh git repository in a temporary
  directory: the planner snapshots the files on disk, the client stamps the
  revision (commit count) and the hashes it reads there, a human edit is a
  real write and commit;
* :class:`ExecutorProxy` -- the executor's place in the run, backed by an
  :class:`ExecutorProcess`: a delivery goes down a pipe; a ``preempt
  POINT`` asks the process to pause at that point of the next delivery, and
  the proxy kills it there with ``SIGKILL`` and starts a new one, which
  recovers from disk alone; a plain ``preempt`` kills it between deliveries.

Lost acks and duplicates happen in the transport, as in the model.  The
history the proxy records for a delivery holds what the executor reported
(rev, hashes, verdict, commit) and what survived: a ``journal_key`` stays
only if the restarted executor finds the key on disk.  Every run is bounded
in time and touches nothing outside its temporary directory.
"""

from __future__ import annotations

import json
import os
import queue
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from sim.core.errors import FencesimError
from sim.core.family import Replay
from sim.core.history import History
from sim.core.knobs import Protocol
from sim.core.values import JsonObject
from sim.families.workspace.actors import Actor, Executor, World
from sim.families.workspace.content import Hunks
from sim.families.workspace.executor import domain_of
from sim.families.workspace.replay import play, world_for
from sim.families.workspace.scenario import Action, WorkspaceScenario
from sim.families.workspace.state import Message, State, content_of
from sim.real import executor as reference

#: Seconds the driver waits for one record from the executor before it calls the run hung.
RECORD_TIMEOUT_S = 30.0
#: Seconds one whole run may take.
RUN_TIMEOUT_S = 300.0
#: Fixed author and dates: the same order gives the same commits, byte for byte.
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "fencesim", "GIT_AUTHOR_EMAIL": "fencesim@localhost",
    "GIT_COMMITTER_NAME": "fencesim", "GIT_COMMITTER_EMAIL": "fencesim@localhost",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+0000", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+0000",
}


class RealRunError(FencesimError):
    """The executor failed, hung or broke the interface; the run has no verdict.  ``history`` holds the
    events recorded before the failure (when the run got that far), ``incidents`` the crashes so far."""

    history: History | None = None
    incidents: list = []


def reference_command() -> list[str]:
    """The reference executor, run in isolated mode (standard library only)."""
    return [sys.executable, "-I", str(Path(reference.__file__).resolve())]


def parse_command(text: str | None) -> list[str]:
    """The executor's command line: the reference executor for None, else ``text`` split as a shell would."""
    return reference_command() if text is None else shlex.split(text)


def git_environment(home: Path) -> dict[str, str]:
    """The environment of the driver's git and of the executor: the caller's, without any ``GIT_*`` variable
    (a ``GIT_DIR`` set by a hook would point git at another repository), with git's system and user
    configuration switched off, no prompts, and a fixed identity and commit dates.  ``home`` is unused: the
    caller's HOME is kept for the executor's own needs."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return {**keep, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0",
            **GIT_IDENTITY}


def _git(repo: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RealRunError(f"git {' '.join(args)} failed in {repo}: {done.stderr.strip()}")
    return done.stdout


class RealWorkspace:
    """The workspace as a git working tree: rev is the commit count after the initial commit."""

    def __init__(self, repo: Path, files: dict[str, Hunks], env: dict[str, str]):
        self.repo, self.env = repo, env
        self.paths = list(files)
        self.journal: dict = {}  # the executor's, on its own disk; never read through here
        repo.mkdir(parents=True)
        _git(repo, env, "init", "-q", "-b", "main")
        for path, hunks in files.items():
            reference.write_file(repo, path, dict(hunks))
        _git(repo, env, "add", "-A")
        _git(repo, env, "commit", "-q", "--no-verify", "-m", "fencesim: initial workspace")

    @property
    def rev(self) -> int:
        return int(_git(self.repo, self.env, "rev-list", "--count", "HEAD")) - 1

    @property
    def files(self) -> dict[str, Hunks]:
        return {path: reference.read_file(self.repo, path) for path in self.paths}

    def hash(self, path: str) -> str:
        return reference.file_hash(reference.read_file(self.repo, path))

    def write(self, path: str, patch: Hunks) -> None:
        """A human's edit: a real write and a commit."""
        hunks = reference.read_file(self.repo, path)
        hunks.update(patch)
        reference.write_file(self.repo, path, hunks)
        _git(self.repo, self.env, "commit", "-q", "--no-verify", "--allow-empty", "-m", f"human edit {path}",
             "--", path)


@dataclass
class Incident:
    """One crash of the executor and what its successor recovered."""

    point: str | None
    recovered: JsonObject


class ExecutorProcess:
    """One executor at a time, as an OS process: start, deliver, kill, restart."""

    def __init__(self, command: list[str], repo: Path, state: Path, protocol: Protocol, env: dict[str, str],
                 deadline: float, log: Path):
        self.command, self.repo, self.state, self.env = command, repo, state, env
        self.protocol = {k: protocol.knobs[k] for k in ("fence", "dedupe", "journal_write", "stamp_at")}
        self.deadline, self.log = deadline, log
        self.process: subprocess.Popen | None = None
        self.lines: queue.Queue = queue.Queue()
        self.incidents: list[Incident] = []
        self.starts = 0
        self.ready: JsonObject = {}

    def start(self) -> JsonObject:
        self.starts += 1
        stderr = open(self.log, "ab")
        try:
            self.process = subprocess.Popen(
                self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=self.env,
                start_new_session=True)
        except OSError as error:
            raise RealRunError(f"cannot start the executor {shlex.join(self.command)}: {error}") from None
        finally:
            stderr.close()
        self.lines = queue.Queue()
        threading.Thread(target=self._read, args=(self.process.stdout, self.lines), daemon=True).start()
        self._send({"op": "start", "repo": str(self.repo), "state": str(self.state), "protocol": self.protocol})
        self.ready = self._expect("ready")
        if not isinstance(self.ready.get("journal_keys"), list):
            raise RealRunError("the executor's 'ready' record has no 'journal_keys' list (the keys it holds "
                               "after recovery; [] for none)")
        return self.ready

    @staticmethod
    def _read(stream, lines: queue.Queue) -> None:
        try:
            for line in stream:
                lines.put(line)
        except ValueError:  # closed by close() while a killed executor's last bytes were read
            pass
        else:
            stream.close()  # its output ended: the pipe is the reader's to close
        lines.put(None)

    def _running(self) -> subprocess.Popen:
        if self.process is None:
            raise RealRunError("the executor has not been started")
        return self.process

    def _send(self, request: JsonObject) -> None:
        stdin = self._running().stdin
        if stdin is None:
            raise RealRunError("the executor was started without a pipe to its input")
        try:
            stdin.write((json.dumps(request) + "\n").encode("utf-8"))
            stdin.flush()
        except (BrokenPipeError, OSError):
            raise RealRunError(f"the executor went away ({self._stderr_tail()})") from None

    def record(self) -> JsonObject:
        """The next record the executor sends, within the time limits."""
        wait = min(RECORD_TIMEOUT_S, self.deadline - time.monotonic())
        try:
            line = self.lines.get(timeout=max(wait, 0.01))
        except queue.Empty:
            self.kill()
            raise RealRunError(f"the executor sent nothing for {wait:.0f} s (hung; killed)") from None
        if line is None:
            status = self._running().wait(timeout=RECORD_TIMEOUT_S)
            raise RealRunError(f"the executor exited with status {status} without answering ({self._stderr_tail()})")
        try:
            record = json.loads(line)
        except ValueError:
            text = line.decode("utf-8", "replace").rstrip("\n")
            raise RealRunError(f"the executor sent a line that is not JSON: {text[:120]!r}") from None
        if not isinstance(record, dict) or not isinstance(record.get("kind"), str):
            raise RealRunError(f"the executor sent a record without a kind: {line[:120].decode('utf-8', 'replace')!r}")
        if record["kind"] == "error":
            raise RealRunError(f"the executor failed: {record.get('message')}")
        return record

    def _expect(self, kind: str) -> JsonObject:
        record = self.record()
        if record["kind"] != kind:
            raise RealRunError(f"expected a {kind!r} record from the executor, got {record['kind']!r}")
        return record

    def _stderr_tail(self) -> str:
        try:
            text = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            text = []
        return text[-1] if text else "no error output"

    def deliver(self, message: JsonObject, pause_at: str | None) -> tuple[list[JsonObject], str | None]:
        """Send one delivery; return its records and the point where the executor was killed (or None)."""
        self._send({"op": "deliver", "message": message, "pause_at": pause_at})
        records: list[JsonObject] = []
        while True:
            record = self.record()
            if record["kind"] == "paused":
                if record.get("point") != pause_at:
                    raise RealRunError(f"the executor paused at {record.get('point')!r}, not at {pause_at!r}")
                self.crash(pause_at)
                return records, pause_at
            records.append(record)
            if record["kind"] == "answer":
                if pause_at in reference.MODEL_POINTS:
                    raise RealRunError(f"the executor answered without passing {pause_at!r}")
                return records, None

    def kill_during(self, message: JsonObject, seconds: float) -> list[JsonObject]:
        """Send a delivery and SIGKILL the executor ``seconds`` later, wherever it is (inside git, inside
        SQLite, or already done); then start a new one.  Returns the records it sent before dying."""
        self._send({"op": "deliver", "message": message, "pause_at": None})
        time.sleep(seconds)
        self.kill()
        records = []
        while True:
            try:
                line = self.lines.get(timeout=RECORD_TIMEOUT_S)
            except queue.Empty:  # pragma: no cover - the reader thread always ends with None
                break
            if line is None:
                break
            try:
                records.append(json.loads(line))
            except ValueError:
                break  # a line cut by the kill
        recovered = self.start()
        self.incidents.append(Incident(f"after {seconds:.4f} s", {k: v for k, v in recovered.items() if k != "kind"}))
        return records

    def crash(self, point: str | None) -> JsonObject:
        """SIGKILL now, then a new process that recovers from disk."""
        self.kill()
        recovered = self.start()
        self.incidents.append(Incident(point, {k: v for k, v in recovered.items() if k != "kind"}))
        return recovered

    def kill(self) -> None:
        if self.process is None or self.process.poll() is not None:
            self._close_input()
            return
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=RECORD_TIMEOUT_S)
        self._close_input()

    def _close_input(self) -> None:
        """The ended executor's input pipe (its output is its reader's to close, at its end)."""
        if self.process is not None and self.process.stdin is not None:
            try:
                self.process.stdin.close()
            except OSError:
                pass

    def close(self, graceful: bool = True) -> None:
        """Stop the executor: ask it to stop (``graceful``), else kill it at once."""
        if self.process is None:
            return
        if graceful and self.process.poll() is None:
            try:
                self._send({"op": "stop"})
                self.process.wait(timeout=5)
            except (RealRunError, subprocess.TimeoutExpired):
                pass
        self.kill()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is None:
                continue
            try:
                stream.close()
            except OSError:
                pass


def _mirror(world: World, workspace: RealWorkspace) -> None:
    """The state's workspace is what is on disk (the client stamps and the planner reads it)."""
    files = workspace.files
    world.state = world.state._replace(rev=workspace.rev,
                                       files=tuple(content_of(files[p]) for p in world.machine.paths))


class RealHuman(Actor):
    """A human whose edit is a real write and commit in the repository."""

    workspace: RealWorkspace

    def perform(self, action: Action) -> None:
        world = self.world
        reason = world.machine.why_not(world.state, action)
        if reason is not None:
            world.record_skip(action, reason)
            return
        path = action.path
        if path is None:
            raise RealRunError(f"the human edit {action} names no file")
        world.state, records = world.machine.step(world.state, action)
        _, _, fields = records[0]
        hunks = [action.hunk] if action.hunk else list(self.workspace.files[path])
        self.workspace.write(path, {h: fields["content"] for h in hunks})
        _mirror(world, self.workspace)
        fields.update(rev_after=self.workspace.rev, hash_after=self.workspace.hash(path))  # as on disk
        world.record(records)


class ExecutorProxy(Executor):
    """The executor's seat, filled by a real process: a delivery goes down its pipe, a preemption kills it."""

    process: ExecutorProcess
    workspace: RealWorkspace

    def perform(self, action: Action) -> None:
        world = self.world
        if action.point is None and world.machine.why_not(world.state, action) is None:
            self.process.crash(None)  # a plain preempt kills the process between deliveries
        super().perform(action)

    def pause_point(self, state: State) -> str | None:
        """Where this delivery pauses to be killed (the preemption the order armed)."""
        return state.armed

    def serve(self, message: Message) -> None:
        world = self.world
        step = message.step
        copy = message.copy.value
        pause_at = self.pause_point(world.state)
        world.state = world.state._replace(armed=None)
        records, killed = self.process.deliver({
            "step": step.step_id, "path": step.path, "patch": dict(step.patch), "origin": message.origin,
            "copy": copy, "stamped_base_rev": message.stamped_base_rev,
            "stamped_pre_hash": message.stamped_pre_hash,
        }, pause_at)
        seen = {str(r["kind"]): r for r in records}  # record() refused any record whose kind is not a string
        if seen.get("read") is None:
            raise RealRunError(f"the executor sent no 'read' record for {step.step_id}")
        verdict = (seen.get("answer") or seen.get("wrote") or seen.get("verdict") or {}).get("verdict")
        if verdict is not None and not isinstance(verdict, str):
            raise RealRunError(f"the executor's verdict for {step.step_id} is not a string: {verdict!r:.120}")
        fields = self._fields(message, copy, seen, killed)
        if verdict is not None:  # the cause is judged on the files before the write, as the model judges it
            fields["domain"] = domain_of(message, world.machine.replan_caused(world.state, step))
        if killed is not None:
            world.state = world.machine.die(world.state)
        _mirror(world, self.workspace)
        world.state, finished = world.machine.finish(world.state, message, verdict, fields)
        world.record(finished)  # answered only if not killed: "preempted" is set then

    def _fields(self, message: Message, copy: int, seen: dict[str, JsonObject], killed: str | None) -> JsonObject:
        """What the executor reported (rev, hashes, commit) and what survived a kill."""
        step, read = message.step, seen["read"]
        truth = dict(step.truth)
        fields: JsonObject = dict(
            step=step.step_id, path=step.path, origin=message.origin, copy=copy, model=step.model.value,
            replanned=step.replanned, fence=read.get("fence"), dedupe=read.get("dedupe"),
            claimed_base_rev=step.claimed_base_rev, stamped_base_rev=read.get("stamped_base_rev"),
            stamped_pre_hash=read.get("stamped_pre_hash"), rev_at_apply=read.get("rev_at_apply"),
            hash_before=read.get("hash_before"), incarnation=self.world.state.incarnation.value,
            expected_prior_hash=step.truth_hash.value, patch_hunks=sorted(h for h, _ in step.patch),
            expected_prior_hunks={h: reference.hunk_hash(truth.get(h, "")) for h in sorted(h for h, _ in step.patch)},
            hunks_before=read.get("hunks_before"),
        )
        wrote = seen.get("wrote")
        if wrote is not None:
            fields.update(hash_after=wrote.get("hash_after"), rev_after=wrote.get("rev_after"),
                          commit=wrote.get("commit"))
        if "journaled" in seen:
            fields["journal_key"] = seen["journaled"].get("journal_key")
        if killed is not None:
            if wrote is not None and read.get("dedupe") != "off":
                # what counts is what the restarted executor finds on disk, not what was said before the crash
                fields.pop("journal_key", None)
                held = self.process.ready.get("journal_keys")  # a list: start() refused any other
                if isinstance(held, list) and read.get("key") in held:
                    fields["journal_key"] = read["key"]
            fields["preempted"] = killed
        return fields


@dataclass
class RealRun:
    """One order played against a real executor."""

    replay: Replay
    files: dict[str, Hunks]
    rev: int
    seconds: float
    incidents: list[Incident] = field(default_factory=list)
    starts: int = 0


def run_real(scenario: WorkspaceScenario, protocol: Protocol, events: Iterable[Action] | None = None,
             command: list[str] | None = None, keep: Path | None = None,
             timeout_s: float = RUN_TIMEOUT_S, pause_points: dict[int, str] | None = None) -> RealRun:
    """Play ``events`` (default: the scenario's) against a real executor in a fresh temporary repository.

    ``keep``: copy the run's directory (repository, journal, executor log) there afterwards.
    ``pause_points``: for tests, deliver number -> an instrumented point to kill the executor at
    (including the points only a real executor has), whatever the order says.
    """
    actions = tuple(scenario.events if events is None else events)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fencesim-real-") as tmp:
        root = Path(tmp)
        state = root / "state"
        state.mkdir()
        env = git_environment(root)
        workspace = RealWorkspace(root / "repo", scenario.files, env)
        process = ExecutorProcess(command or reference_command(), workspace.repo, state, protocol, env,
                                  started + timeout_s, root / "executor.log")
        world: World | None = None
        finished = False
        try:
            process.start()

            def make_executor(world: World, name: str) -> ExecutorProxy:
                proxy: ExecutorProxy
                if pause_points:
                    forcing = _ForcedPauses(world, name)
                    forcing.forced = dict(pause_points)
                    proxy = forcing
                else:
                    proxy = ExecutorProxy(world, name)
                proxy.process, proxy.workspace = process, workspace
                return proxy

            def make_human(world: World, name: str) -> RealHuman:
                human = RealHuman(world, name)
                human.workspace = workspace
                return human

            world = world_for(scenario, protocol, seats={"executor": make_executor, "human": make_human})
            replay = play(world, actions)
            files, rev = workspace.files, workspace.rev
            finished = True
        except RealRunError as error:
            error.history = world.history if world is not None else None  # what happened before it failed
            error.incidents = list(process.incidents)
            raise
        finally:
            process.close(graceful=finished)
            if keep is not None:
                if keep.exists():
                    shutil.rmtree(keep)
                shutil.copytree(root, keep, symlinks=True)
        return RealRun(replay, files, rev, time.monotonic() - started, list(process.incidents), process.starts)


class _ForcedPauses(ExecutorProxy):
    """For the kill tests: kill at a given point of the Nth delivery, even one the model has not."""

    forced: dict[int, str]
    delivered = 0

    def pause_point(self, state: State) -> str | None:
        self.delivered += 1
        return self.forced.get(self.delivered) or super().pause_point(state)
