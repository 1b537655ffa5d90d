"""Weighted fault targets: what a workload's faults strike, and how often.

A workload may weigh the targets of its faults in ``[faults.targets]``::

    [faults.targets]
    "api/handlers.py#auth" = 10     # a formatter bot edits the auth hunk ten times as often
    "api/models.py" = 2             # human edits of the whole file
    routes = 0                      # a step id: never retried, duplicated, its ack never lost

A key is a path or ``path#hunk`` (what ``human_edit`` strikes; a hunk only
of a file with more than one) or a step id (what ``retry``, ``duplicate``,
``lose_ack`` and ``tests_fail`` strike).  A target not listed weighs 1; a
weight is a number from 0 to 1e9, and a target that weighs 0 is never
struck (nor in the alphabet of exhaustive search).  Draws come from the
run's one random source, so an order still depends only on (workload,
seed); a workload without the table draws exactly as before it existed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from sim.core.errors import ScenarioError
from sim.core.values import kind, shown
from sim.core.workload import Workload, did_you_mean

#: The largest weight a target may have (the same bound as a class's rate).
TARGET_WEIGHT_LIMIT = 1e9
#: Fault classes each kind of target weighs.
EDIT_CLASSES = ("human_edit",)
STEP_CLASSES = ("retry", "duplicate", "lose_ack", "tests_fail")


@dataclass(frozen=True)
class Targets:
    """The weights a workload gives (only the targets it lists; the others weigh 1)."""

    edits: dict[tuple[str, str | None], float] = field(default_factory=dict)  # (path, hunk or None) -> weight
    steps: dict[str, float] = field(default_factory=dict)

    def strikes_edit(self, path: str, hunk: str | None) -> bool:
        return self.edits.get((path, hunk), 1.0) > 0

    def strikes_step(self, step: str) -> bool:
        return self.steps.get(step, 1.0) > 0


def targets_of(workload: Workload) -> Targets | None:
    """The workload's ``[faults.targets]``, or None when it has none."""
    return workload.extra.get("targets")


def read_targets(raw: Any, scenario: Any, classes: tuple[str, ...], source) -> Targets:
    """Validate a ``[faults.targets]`` table against the workload's files, steps and classes."""
    if not isinstance(raw, dict):
        raise source.error(f"[faults.targets] must be a table of target = weight, not {kind(raw)}", "targets")
    files, steps = scenario.files, scenario.step_ids()
    edits: dict[tuple[str, str | None], float] = {}
    weighed_steps: dict[str, float] = {}
    for key, value in raw.items():
        where = _where(source, key)
        if (not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value)
                or not 0 <= value <= TARGET_WEIGHT_LIMIT):
            raise ScenarioError(f"[faults.targets] {shown(key)}: a weight is a number from 0 to 1e9, not "
                                f"{shown(value)}", where)
        target = _edit_target(key, files, where)
        if target is not None and key in steps:
            raise ScenarioError(f"[faults.targets] {shown(key)} is both a file and a step id; rename one of them",
                                where)
        if target is not None:
            edits[target] = float(value)
        elif key in steps:
            weighed_steps[key] = float(value)
        else:
            raise ScenarioError(f"[faults.targets]: unknown target {shown(key)}"
                                f"{did_you_mean(key, [*files, *steps])}; a target is a file ({', '.join(files)}), "
                                f"a file#hunk, or a step id ({', '.join(steps)})", where)
    _used(edits, EDIT_CLASSES, classes, "human edits", source)
    _used(weighed_steps, STEP_CLASSES, classes, "steps", source)
    if edits and "human_edit" in classes:
        struck = [(p, h) for p, hunks in files.items() for h in (None, *hunks) if h is None or len(hunks) > 1]
        if not any(edits.get(t, 1.0) > 0 for t in struck):
            raise source.error("[faults.targets]: every human_edit target weighs 0; give one a positive weight",
                               "targets")
    if weighed_steps and not any(weighed_steps.get(s, 1.0) > 0 for s in steps):
        raise source.error("[faults.targets]: every step weighs 0; give one a positive weight", "targets")
    return Targets(edits, weighed_steps)


def _edit_target(key: str, files: dict[str, dict[str, str]], where: str) -> tuple[str, str | None] | None:
    """``(path, hunk)`` for a key naming a file or a file's hunk; None for anything else."""
    if key in files:
        return key, None
    path, mark, hunk = key.partition("#")
    if not mark or path not in files:
        return None
    if hunk not in files[path]:
        raise ScenarioError(f"[faults.targets] {shown(key)}: {path} has no hunk {shown(hunk)}"
                            f"{did_you_mean(hunk, files[path])}; hunks: {', '.join(files[path])}", where)
    if len(files[path]) == 1:
        raise ScenarioError(f"[faults.targets] {shown(key)}: {path} is one hunk, so a human edit strikes the "
                            f"whole file; weigh it as {shown(path)}", where)
    return path, hunk


def _used(weights: dict, kinds: tuple[str, ...], classes: tuple[str, ...], what: str, source) -> None:
    if weights and not any(c in classes for c in kinds):
        raise source.error(f"[faults.targets] weighs {what}, but [faults] classes has none of "
                           f"{', '.join(kinds)}; add one or drop the weights", "targets")


def _where(source, key: str) -> str:
    """``file:line`` of a target's key: the first line naming it after the targets table begins."""
    text = getattr(source, "text", "") or ""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if _TARGETS_TABLE.match(line)), None)
    if start is None:
        return source.where(key)
    for number in range(start, len(lines)):
        if key in lines[number]:
            return f"{source.path}:{number + 1}"
    return f"{source.path}:{start + 1}"


_TARGETS_TABLE = re.compile(r"\s*(\[\s*(workload\s*\.\s*)?faults\s*\.\s*targets\s*\]|targets\s*=)")
