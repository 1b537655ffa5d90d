"""Shared fixtures: the repo root, a workspace scenario factory, and a CLI runner.

Test folders mirror the package (``core``, ``families/workspace``, ``families/effects``,
``search``, ``report``, ``cli``); they are not packages, so every test file has a
unique basename.
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import subprocess
import sys
import warnings
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


#: What a command run in this process cannot give as a subprocess does: a hash seed, a family module imported
#: from another path (the registry would keep it for later tests), a planted kill.
_NEEDS_A_PROCESS = ("PYTHONHASHSEED", "FENCESIM_FAMILIES", "PYTHONPATH", "KILL_")

@pytest.fixture
def cli():
    """Run ``fencesim ARGS...`` (default: from the repo root); returns a CompletedProcess.

    The command runs in this process, as ``fencesim`` would run it (its exit code, its stdout and stderr,
    ``NO_COLOR`` set, no ``COLUMNS``; a warning is an error, as everywhere in the suite, where a process of its own
    would print it), unless it needs a process of its own:
    ``prelude`` (Python run before the command, to plant a fault), a variable only a new process reads
    (``PYTHONHASHSEED``, ``FENCESIM_FAMILIES``, ``PYTHONPATH``), or ``process=True``.  An in-process call
    costs no interpreter start and no import of the package, which most of the suite's command tests did.
    GITHUB_STEP_SUMMARY is removed unless given, so a CI runner's summary is never written to.
    """

    def run(*args, cwd=None, env_extra=None, prelude="", timeout=180, process=False):
        env = dict(os.environ)
        env["NO_COLOR"] = "1"
        env.pop("COLUMNS", None)  # a command's output is a log here (LOG_WIDTH), whatever launched the tests
        env.pop("GITHUB_STEP_SUMMARY", None)
        env.update(env_extra or {})
        argv = [str(a) for a in args]
        own = process or prelude or any(k.startswith(_NEEDS_A_PROCESS) for k in env_extra or {})
        if not own:
            return _in_process(argv, Path(cwd or REPO_ROOT), env)
        code = f"{prelude}\nfrom sim.cli import main; main()" if prelude else "from sim.cli import main; main()"
        return subprocess.run(
            [sys.executable, "-c", code, *argv],
            cwd=str(cwd or REPO_ROOT), env=env, capture_output=True, text=True, timeout=timeout, check=False,
        )

    return run


def _in_process(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """``fencesim ARGV`` called in this process with ``env`` as its environment and ``cwd`` as its folder;
    everything it changed of them put back."""
    from sim.cli import main

    saved_env, saved_cwd, saved_argv = dict(os.environ), os.getcwd(), sys.argv
    out, err = io.StringIO(), io.StringIO()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    sys.argv = ["fencesim", *argv]
    code: int | str | None = 0
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(argv)
            except SystemExit as stop:
                code = stop.code
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        os.chdir(saved_cwd)
        sys.argv = saved_argv
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message"): printed, exit 1, as the interpreter does
        err.write(f"{code}\n")
        code = 1
    return subprocess.CompletedProcess(["fencesim", *argv], code, out.getvalue(), err.getvalue())


#: Processes the running test started that it may leave running when it fails (a sweep of millions of seeds it
#: meant to interrupt, left to run for hours on a core the rest of the suite needs): see :func:`reaped`.
_STARTED: list[subprocess.Popen] = []


def reaped(process: subprocess.Popen) -> subprocess.Popen:
    """``process``, killed when the test that started it ends, if it is still running then (``from conftest
    import reaped``; a test that interrupts a long command wraps its ``Popen`` in it)."""
    _STARTED.append(process)
    return process


def reap_started() -> int:
    """Kill every process given to :func:`reaped` that is still running, and forget them all; how many it killed."""
    killed = 0
    while _STARTED:
        process = _STARTED.pop()
        if process.poll() is None:
            process.kill()
            process.wait()
            killed += 1
    return killed


@pytest.fixture(autouse=True)
def _reap_after_each_test():
    yield
    reap_started()


#: The xdist group of the tests that read the reference review (``reference_review``): one process runs them, so
#: the review (about two minutes) is run once in the suite.
REFERENCE_GROUP = "reference-review"


@pytest.fixture(scope="session")
def reference_review(tmp_path_factory):
    """``fencesim review --out DIR``, the command ``make reference`` runs (the seeds' designs), run once in a
    process of its own: (the finished process, its report folder).  Mark a test that reads it with
    ``pytest.mark.xdist_group(REFERENCE_GROUP)``."""
    out = tmp_path_factory.mktemp("review") / "reference"
    done = subprocess.run([sys.executable, "-c", "from sim.cli import main; main()", "review", "--out", str(out)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=2400,
                          env={**os.environ, "NO_COLOR": "1", "COLUMNS": "400"})  # a table's header on one line
    return done, out


# -- the real subset and its long tests -----------------------------------------------------------

#: Set to run the long real tests too (``make real``); without it they are skipped, each saying so.
REAL_FULL_VARIABLE = "FENCESIM_REAL_FULL"
REAL_FULL_REASON = f"a long real test, outside the real subset: run it with {REAL_FULL_VARIABLE}=1 (make real)"


#: The cyclic collector's first threshold in a test process: allocations between two young collections.
GC_YOUNG_THRESHOLD = 10_000


def pytest_collection_finish(session):
    """What collection built (modules, test items, hypothesis' strategies) lives until the session ends: frozen
    out of the collector's scans, and young collections made rarer, as a long-lived process of many objects is
    tuned.  In-process tests run SimPy kernels, which leave cycles behind; with the defaults the collector
    rescans the whole session's heap often (about 8% of an effects machine test; nothing a test checks
    changes)."""
    if os.environ.get("FENCESIM_TEST_GC_DEFAULTS"):
        return
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])


def pytest_configure(config):
    config.addinivalue_line("markers", "real_full: a long real test outside the real subset CI runs; skipped "
                            f"unless {REAL_FULL_VARIABLE}=1 (make real)")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """Tests marked ``real_full`` are skipped, with one line saying how to run them, unless FENCESIM_REAL_FULL
    is set: the real subset stays short, and nothing leaves it silently.  Then the order the test processes
    take tests in (``make test``: ``--dist loadgroup``): see :func:`_schedule`."""
    if not os.environ.get(REAL_FULL_VARIABLE):
        skip = pytest.mark.skip(reason=REAL_FULL_REASON)
        for item in items:
            if item.get_closest_marker("real_full") is not None:
                item.add_marker(skip)
    _schedule(items)


#: Fixture scopes computed once per module (or class): every process that runs one of the tests using it
#: computes it again.
_SHARED_SCOPES = {"module", "class", "package"}


def _schedule(items: list) -> None:
    """How the suite shares 2 test processes (``-n 2 --dist loadgroup``).

    * The tests of a module that share a module- or class-scoped fixture form one group (one process runs
      them, so the fixture is computed once), unless a test is in a group already.
    * Tests marked ``slow`` come first, in their order: the long ones start while the other process still
      has short ones to take, instead of one long test running alone at the end.
    """
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        info = getattr(item, "_fixtureinfo", None)
        scopes = {d.scope for defs in (info.name2fixturedefs.values() if info else ()) for d in defs}
        if scopes & _SHARED_SCOPES:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


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
