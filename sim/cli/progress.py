"""Progress on stderr for long phases: a Rich bar for a person, nothing for a machine."""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import IO, TYPE_CHECKING, Any

from sim.cli.app import error_console

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID


def progress_wanted(json_out: bool) -> bool:
    """A progress bar on stderr only for a person: not with --json, not off a terminal, not under CI."""
    return not json_out and sys.stderr.isatty() and not os.environ.get("CI")


class Bar:
    """A Rich progress bar on stderr, one task per phase (a no-op when not wanted)."""

    def __init__(self, enabled: bool):
        self.progress: Progress | None = None
        self.tasks: dict[str, TaskID] = {}
        if enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                     TextColumn("{task.fields[note]}"), TimeElapsedColumn(),
                                     console=error_console(), transient=True)

    def __enter__(self) -> "Bar":
        if self.progress is not None:
            self.progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self.progress is not None:
            self.progress.__exit__(*exc)

    def __call__(self, phase: str, done: float, total: float, note: str = "") -> None:
        if self.progress is None:
            return
        if phase not in self.tasks:
            self.tasks[phase] = self.progress.add_task(phase, total=total, note=note)
        self.progress.update(self.tasks[phase], completed=done, total=total, note=note)


#: Seconds between two progress lines of a :class:`Ticker` while one item runs.
TICK_S = 5.0


class Ticker:
    """Progress as plain lines on stderr, for a long run that shows no bar (``--json``, output to a log): the
    phase, which item of how many, what it is and the seconds elapsed -- when an item starts, and every
    ``every`` seconds while it runs, so stderr is never silent for long.  Stdout is left alone.

    Called as a :class:`Bar` is, with ``done`` the number of items before the one starting; ``units`` names
    a phase's items (``{"conform": "cell"}``: "conform: cell 3 of 12 (...), 41 s elapsed")."""

    def __init__(self, units: dict[str, str], every: float = TICK_S, stream: IO[str] | None = None):
        self.units, self.every, self.stream = units, every, stream
        self.started = self.last = time.monotonic()
        self.now: tuple[str, float, float, str] | None = None
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._tick, daemon=True)

    def __enter__(self) -> "Ticker":
        self.started = self.last = time.monotonic()
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stopped.set()
        self.thread.join(timeout=1.0)

    def __call__(self, phase: str, done: float, total: float, note: str = "") -> None:
        with self.lock:
            self.now = (phase, done, total, note)
        self._line()

    def _tick(self) -> None:
        while not self.stopped.wait(min(self.every, 0.25)):
            if time.monotonic() - self.last >= self.every:
                self._line()

    def _line(self) -> None:
        with self.lock:
            self.last = time.monotonic()
            elapsed = f"{self.last - self.started:.0f} s elapsed"
            if self.now is None:
                text = f"working, {elapsed}"
            else:
                phase, done, total, note = self.now
                unit, shown = self.units.get(phase, "item"), f" ({note})" if note else ""
                if total == 1:  # a phase of one item: its note says how far it is
                    text = f"{phase}{': done' if done >= total else ''}{shown}, {elapsed}"
                elif total and done >= total:  # the last item finished
                    text = f"{phase}: all {int(total)} done{shown}, {elapsed}"
                else:
                    text = f"{phase}: {unit} {int(done) + 1} of {int(total)}{shown}, {elapsed}"
            stream = self.stream or sys.stderr
            try:
                stream.write(text + "\n")
                stream.flush()
            except (OSError, ValueError):  # stderr closed: progress is not worth failing the run for
                pass


def progress_for(json_out: bool, units: dict[str, str]) -> "Bar | Ticker":
    """A person's bar on a terminal; else (``--json``, a log) plain progress lines on stderr."""
    return Bar(True) if progress_wanted(json_out) else Ticker(units)
