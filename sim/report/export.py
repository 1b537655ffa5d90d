"""Exporting a minimal counterexample: scenario TOML, timeline, pytest file -- for any family.

The scenario file is the same kind of file as a scripted scenario, carrying
the protocol, the invariant, the seed and the commit it came from, so
``fencesim run FILE`` replays it with no seed.  The three files of one
counterexample are written as a unit (all or none).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable

import tomli_w

from sim.core.family import Family
from sim.core.files import write_files_atomically
from sim.core.history import History
from sim.report.outputs import COUNTEREXAMPLE_MARK, PYTEST_MARK, check_output_names


def current_commit() -> str:
    """The commit of the fencesim source tree, or "unknown" outside a git checkout."""
    try:
        out = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                             cwd=Path(__file__).resolve().parent, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def fencesim_version() -> str:
    try:
        return metadata.version("fencesim")
    except metadata.PackageNotFoundError:
        return "unknown"


def shown_path(path: Path) -> str:
    """A path as a user can type it from here: relative to the current folder when inside it."""
    relative = os.path.relpath(path)
    return relative if not relative.startswith("..") else str(path)


SLUG_LIMIT = 80
#: The longest exported file stem (well inside the 255 bytes file systems allow, with suffixes).
NAME_LIMIT = 200


def slug(text: str, limit: int = SLUG_LIMIT) -> str:
    """A file-name-safe form of ``text``; long names are cut and keep a short hash.

    The hash keeps two long names that share a prefix apart, and the limit keeps
    every exported file name well inside what file systems accept.
    """
    cleaned = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower()
    if len(cleaned) <= limit:
        return cleaned
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
    return f"{cleaned[:limit - 9].rstrip('_')}_{digest}"


def file_stem(name: str) -> str:
    """The stem of a review's figure files for a design or counterexample name (letters, digits, ``-``, ``_``)."""
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name).strip("_").lower()


def counterexample_name(workload: str, protocol: str, invariant: str, where: str = "") -> str:
    """The file name (no suffix) of a finding's counterexample: where it happens is part of it, so two
    findings of one invariant are two files."""
    return f"{slug(workload)}__{slug(protocol)}__{invariant}" + (f"__{slug(where)}" if where else "")


def scenario_toml(family: Family, scenario: Any) -> str:
    """A scenario as a file of its family, marked as fencesim's own (an output fencesim may replace)."""
    return COUNTEREXAMPLE_MARK + "\n" + tomli_w.dumps(family.dump_scenario(scenario), multiline_strings=False)


def timeline(family: Family, history: History, marked: Iterable[int] = (),
             marks: str = "the event that violates the invariant") -> str:
    """A readable swimlane: one column per actor, one row per event.

    ``#`` is the event's index in the history, the number an explanation's ``event N`` cites (events that
    had no effect have no row, so the numbers can skip). ``*`` marks an injected fault; ``>>`` marks a
    violating event (``marked``; ``marks`` says what a mark means, e.g. a lasso's cycle).
    """
    marked = set(marked)
    shown = [e for e in history if not e.get("skipped") and e.actor != "script"]
    lanes = [a for a in family.lanes if any(e.actor == a for e in shown)]
    lanes += sorted({e.actor for e in shown} - set(lanes))
    rows = []
    for event in shown:
        text = family.describe(event)
        rows.append((event, ("* " + text) if family.is_fault(event) else text))
    widths = {a: max([len(a)] + [len(text) for e, text in rows if e.actor == a]) for a in lanes}
    header = "  " + "#".rjust(4) + " " + "t".rjust(6) + " | " + " | ".join(a.ljust(widths[a]) for a in lanes)
    lines = [header.rstrip(), "-" * len(header)]
    for event, text in rows:
        cells = [(text if a == event.actor else "").ljust(widths[a]) for a in lanes]
        flag = ">>" if event.index in marked else "  "
        lines.append(f"{flag}{event.index:>4} {_time(event.time):>6} | " + " | ".join(cells).rstrip())
    if marked:
        lines += ["", f">> {marks}; * an injected fault; # the event's index, as the explanation cites it"]
    return "\n".join(lines) + "\n"


def _time(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


PYTEST_TEMPLATE = PYTEST_MARK + '''
"""Regression: {description}

Kept the right way round: the first test holds once the design is fixed
(it asserts {holds_what}); the second documents that the protocol under
review violates {invariant} on this order.
"""

from pathlib import Path

import pytest

import sim

SCENARIO = Path(__file__).with_name("{toml_name}")

{marker}def test_{name}_holds():
    """Under {holds_protocol} the minimal order violates no safety invariant."""
    result = sim.run_scenario(sim.load_scenario(SCENARIO), "{holds_protocol}")
    assert result.violations == []


def test_{name}_violates_under_the_reviewed_protocol():
    """Under {protocol} the minimal order still violates {invariant} (why this file exists)."""
    result = sim.run_scenario(sim.load_scenario(SCENARIO), "{protocol}")
    assert "{invariant}" in [v.invariant for v in result.violations]
'''


def pytest_file(name: str, description: str, protocol: str, invariant: str, toml_name: str,
                fix: str | None) -> str:
    if fix:
        holds, marker, what = fix, "", f"that the advisor's fix {fix} holds on the order"
    else:
        holds = protocol
        marker = ('@pytest.mark.xfail(strict=True, reason="no fix known yet: the protocol under review '
                  'violates this order; remove this mark once the design holds")\n')
        what = "that the protocol under review holds, marked xfail until it does"
    return PYTEST_TEMPLATE.format(
        description=description.replace('"""', "'''"), toml_name=toml_name, name=slug(name, limit=NAME_LIMIT),
        invariant=invariant, protocol=protocol, holds_protocol=holds, marker=marker, holds_what=what,
    )


def export_names(name: str) -> tuple[str, str, str]:
    """The files :func:`export` writes for a counterexample named ``name``."""
    stem = slug(name, limit=NAME_LIMIT)
    return f"{stem}.toml", f"{stem}.timeline.txt", f"test_{stem}.py"


@dataclass
class Exported:
    scenario: Path
    timeline: Path
    pytest: Path


def export(family: Family, scenario: Any, history: History, out_dir: Path, marked: Iterable[int] = (),
           fix: str | None = None) -> Exported:
    """Write ``NAME.toml``, ``NAME.timeline.txt`` and ``test_NAME.py`` as a unit; return their paths.

    A file of the user's with one of these names is never replaced (refused, nothing written)."""
    out_dir = Path(out_dir)
    name = slug(scenario.name, limit=NAME_LIMIT)
    paths = Exported(out_dir / f"{name}.toml", out_dir / f"{name}.timeline.txt", out_dir / f"test_{name}.py")
    check_output_names(out_dir, export_names(scenario.name), "--out")
    invariant = scenario.meta.get("invariant", "")
    write_files_atomically({
        paths.scenario: scenario_toml(family, scenario),
        paths.timeline: timeline(family, history, marked),
        paths.pytest: pytest_file(name, scenario.description, scenario.protocol, invariant, paths.scenario.name, fix),
    })
    return paths
