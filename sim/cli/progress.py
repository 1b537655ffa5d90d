"""Progress on stderr for long phases: a Rich bar for a person, nothing for a machine."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

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
