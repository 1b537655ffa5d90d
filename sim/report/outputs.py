"""Which files are fencesim's: every kind of file it writes, how an earlier run's file is recognised, and
the output checks that use them.

:mod:`sim.core.outputs` decides what may be written where, for any writer: it takes what a writer's
files look like as data (:class:`~sim.core.outputs.FileKind`, :class:`~sim.core.outputs.Ownership`).
This module is that data for fencesim's own files -- counterexample scenarios, timelines and regression
tests, JUnit files, baselines, sweep states, recorded histories, side-by-side diffs -- and binds the
checks to it, so a command asks ``check_output_file(path, "--junit", "junit")`` and never lists kinds.

A file is recognised as fencesim's by its content (every kind fencesim writes carries a signature), so an
earlier run's outputs are recognised whichever fencesim version wrote them.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Iterable

from sim.core.outputs import (
    FileKind,
    Ownership,
    append_text,
    check_append,
    check_file,
    check_folder,
    check_will_write,
    own_name,
)

#: The first line of every counterexample scenario fencesim writes.
COUNTEREXAMPLE_MARK = "# Written by fencesim: a counterexample scenario; `fencesim run` replays it."
#: The first line of every regression test fencesim writes.
PYTEST_MARK = "# Written by fencesim: a regression test of a minimal counterexample."
#: The name of the JUnit document's root (``<testsuites name="fencesim ...">``).
#: What marks a lasso's swimlane as fencesim's own (a comment after its XML declaration).
SWIMLANE_MARK = "<!-- fencesim: a liveness lasso's swimlane -->"
JUNIT_MARK = '<testsuites name="fencesim'
#: The state an interrupted ``fencesim fuzz`` resumes from, in its ``--out`` folder.
SWEEP_STATE_NAME = "sweep-state.json"
#: Bytes read from a file to recognise it.
SIGNATURE_BYTES = 8192
#: Folders tools leave beside exported tests; they are never fencesim's to keep or lose.
CACHES = frozenset({"__pycache__", ".pytest_cache"})


def _head(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read(SIGNATURE_BYTES).decode("utf-8", "replace")
    except OSError:
        return ""


def _json(path: Path) -> object:
    try:
        with open(path, "rb") as handle:
            data = handle.read(64 * 1024 * 1024 + 1)
        return json.loads(data)
    except (OSError, ValueError, RecursionError):
        return None


def is_junit(path: Path) -> bool:
    """A JUnit document fencesim wrote."""
    head = _head(path)
    return head.lstrip().startswith("<?xml") and JUNIT_MARK in head


def is_baseline(path: Path) -> bool:
    """A baseline file fencesim wrote (its keys, whatever its entries)."""
    data = _json(path)
    return isinstance(data, dict) and isinstance(data.get("entries"), list) and {"format", "family",
                                                                                "workload"} <= set(data)


def is_sweep_state(path: Path) -> bool:
    data = _json(path)
    return isinstance(data, dict) and {"format", "arguments", "sweep"} <= set(data)


def is_history(path: Path) -> bool:
    """JSON lines of a history: every line of the first 8 KiB an event record (``index``, ``event``)."""
    lines = [line for line in _head(path).splitlines() if line.strip()]
    if len(lines) > 1 and len(_head(path)) >= SIGNATURE_BYTES:
        lines = lines[:-1]  # the last line may be cut by the signature's limit
    try:
        records = [json.loads(line) for line in lines]
    except ValueError:
        return False
    return bool(records) and all(isinstance(r, dict) and "index" in r and "event" in r for r in records)


def is_counterexample(path: Path) -> bool:
    """A scenario file fencesim exported (its mark, or the keys every export writes)."""
    head = _head(path)
    if head.startswith(COUNTEREXAMPLE_MARK):
        return True
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return False
    return ({"invariant", "commit"} <= set(data) or {"invariant", "minimal"} <= set(data)
            or {"lasso", "workload"} <= set(data))


def is_swimlane(path: Path) -> bool:
    """A swimlane fencesim wrote beside a lasso (``explore --liveness --out``)."""
    return SWIMLANE_MARK in _head(path)


def is_timeline(path: Path) -> bool:
    """A timeline fencesim wrote: its header (``# t | lane...``; no lane when no event had an effect), then
    a rule of dashes."""
    lines = _head(path).splitlines()
    return len(lines) >= 2 and re.match(r"^\s+(#\s+)?t \|( |$)", lines[0]) is not None and set(lines[1]) == {"-"}


def is_pytest(path: Path) -> bool:
    head = _head(path)
    return head.startswith(PYTEST_MARK) or ('"""Regression:' in head and "sim.load_scenario(SCENARIO)" in head)


def is_side_by_side(path: Path) -> bool:
    first = _head(path).split("\n", 1)[0]
    return re.match(r"^\s*#\s+model\s+real executor", first) is not None


#: What each kind of single output file is, for messages, and how it is recognised (``check_output_file``).
KINDS: dict[str, FileKind] = {
    "junit": FileKind("a JUnit file fencesim wrote", is_junit),
    "baseline": FileKind("a fencesim baseline", is_baseline),
    "history": FileKind("a recorded history (JSON lines)", is_history),
    "sweep-state": FileKind("a fencesim sweep state", is_sweep_state),
}


def fencesim_file(path: Path) -> str | None:
    """The kind of fencesim output ``path`` holds, by name and content; None when it is not one."""
    name = path.name
    if name == SWEEP_STATE_NAME or own_name(name):
        return "own"
    checks = (("test_", ".py", is_pytest), ("", ".timeline.txt", is_timeline), ("", ".side-by-side.txt",
                                                                                  is_side_by_side),
              ("", ".toml", is_counterexample), ("", ".jsonl", is_history), ("", ".xml", is_junit),
              ("", ".svg", is_swimlane),
              ("", ".json", is_baseline))
    for prefix, suffix, check in checks:
        if name.startswith(prefix) and name.endswith(suffix):
            return suffix if check(path) else None
    return None


#: fencesim's files in an output folder: what :func:`fencesim_file` recognises; tools' caches pass.
FENCESIM = Ownership(fencesim_file, CACHES)


def check_output_file(path: str | Path, what: str, kind: str | None = None, force: bool = False,
                      forcible: bool = True) -> Path:
    """Fail fast, before any work, if ``path`` cannot take an output file of ``kind`` (a key of
    :data:`KINDS`); return the path to write (see :func:`sim.core.outputs.check_file`: a file of the
    user's is never replaced)."""
    return check_file(path, what, None if kind is None else KINDS[kind], force, forcible)


def check_output_dir(path: str | Path, what: str, force: bool = False, contents: bool = True) -> Path:
    """Fail fast, before any work, if ``path`` cannot be (or become) an output folder: it must be new, empty
    or hold only fencesim's outputs (``contents=False``: any folder; ``force``: beside other files)."""
    return check_folder(path, what, FENCESIM, force=force or not contents)


def check_output_names(folder: Path, names: Iterable[str], what: str) -> None:
    """Files ``names`` that a command will write in ``folder``: each is new, empty, or fencesim's own."""
    check_will_write(folder, names, what, FENCESIM)


def check_summary(path: str | Path, what: str = "GITHUB_STEP_SUMMARY") -> Path:
    """The file to append the job summary to, checked before any work (GitHub creates it; a missing one is
    created, in a folder that exists)."""
    return check_append(path, what, "the summary")


def append_summary(path: Path, text: str, what: str = "GITHUB_STEP_SUMMARY") -> None:
    """Append the job summary ``text``; never blocks and never truncates (:func:`sim.core.outputs.append_text`)."""
    append_text(path, text, what, "the summary")
