"""Shared fixtures: the repo root, a workspace scenario factory, and a CLI runner.

Test folders mirror the package (``core``, ``families/workspace``, ``families/effects``,
``search``, ``report``, ``cli``); they are not packages, so every test file has a
unique basename.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SEED_DIR = REPO_ROOT / "scenarios" / "seed"
STORIES_DIR = REPO_ROOT / "scenarios" / "runtime"
TWO_STEPS = [{"id": "s1", "path": "app.py", "patch": "v1"}, {"id": "s2", "path": "app.py", "patch": "v2"}]


@pytest.fixture
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture
def seed_dir() -> Path:
    return SEED_DIR


@pytest.fixture
def stories_dir() -> Path:
    return STORIES_DIR


@pytest.fixture
def make_scenario():
    """Build a workspace scenario from a few keys; default: app.py = v0, the seed's two-step plan."""
    from sim.families.workspace.scenario import build_scenario

    def make(events, files=None, plan=None, replan=None, **extra):
        data = {"files": files or {"app.py": "v0"}, "plan": plan or TWO_STEPS, "events": list(events)}
        if replan is not None:
            data["replan"] = replan
        data.update(extra)
        return build_scenario(data)

    return make


@pytest.fixture
def cli():
    """Run ``fencesim ARGS...`` in a subprocess (default: from the repo root); returns CompletedProcess.

    ``prelude`` is Python run before the command (to plant a fault); ``env_extra`` adds variables.
    GITHUB_STEP_SUMMARY is removed unless given, so a CI runner's summary is never written to.
    """

    def run(*args, cwd=None, env_extra=None, prelude="", timeout=180):
        env = dict(os.environ)
        env["NO_COLOR"] = "1"
        env.pop("COLUMNS", None)  # a command's output is a log here (LOG_WIDTH), whatever launched the tests
        env.pop("GITHUB_STEP_SUMMARY", None)
        env.update(env_extra or {})
        code = f"{prelude}\nfrom sim.cli import main; main()" if prelude else "from sim.cli import main; main()"
        return subprocess.run(
            [sys.executable, "-c", code, *[str(a) for a in args]],
            cwd=str(cwd or REPO_ROOT), env=env, capture_output=True, text=True, timeout=timeout, check=False,
        )

    return run


# -- the real subset and its long tests -----------------------------------------------------------

#: Set to run the long real tests too (``make real``); without it they are skipped, each saying so.
REAL_FULL_VARIABLE = "FENCESIM_REAL_FULL"
REAL_FULL_REASON = f"a long real test, outside the real subset: run it with {REAL_FULL_VARIABLE}=1 (make real)"


def pytest_configure(config):
    config.addinivalue_line("markers", "real_full: a long real test outside the real subset CI runs; skipped "
                            f"unless {REAL_FULL_VARIABLE}=1 (make real)")


def pytest_collection_modifyitems(config, items):
    """Tests marked ``real_full`` are skipped, with one line saying how to run them, unless FENCESIM_REAL_FULL
    is set: the real subset stays short, and nothing leaves it silently."""
    if os.environ.get(REAL_FULL_VARIABLE):
        return
    skip = pytest.mark.skip(reason=REAL_FULL_REASON)
    for item in items:
        if item.get_closest_marker("real_full") is not None:
            item.add_marker(skip)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """One line per reason the real tests were skipped for (DBOS or Temporal missing or unable to start, a
    long test outside the subset), with how many: a quiet run (-q, no -rs) says so too."""
    reasons: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        reason = reason.removeprefix("Skipped: ")
        if "real" not in getattr(report, "keywords", {}) and not reason.startswith(("DBOS", "Temporal")):
            continue
        reasons[reason] = reasons.get(reason, 0) + 1
    for reason, count in sorted(reasons.items()):
        terminalreporter.write_line(f"real tests skipped ({count}): {reason}")


#: A two-file workspace workload with weighted fault targets (the TARGETS line is replaced by the test).
WEIGHED_WORKLOAD = """format = 1
name = "weighed"
files = { "api/handlers.py" = { routes = "r0", auth = "a0" }, "README.md" = "m0" }
plan = [ { id = "routes", path = "api/handlers.py", patch = { routes = "r1" } },
         { id = "docs", path = "README.md", patch = "m1" } ]

[faults]
classes = ["human_edit", "retry", "lose_ack"]
per_run_max = 3

[faults.targets]
TARGETS
"""
