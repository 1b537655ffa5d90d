"""Shared fixtures: the repo root, a scenario factory, and a CLI runner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SEED_DIR = REPO_ROOT / "scenarios" / "seed"
TWO_STEPS = [{"id": "s1", "path": "app.py", "patch": "v1"}, {"id": "s2", "path": "app.py", "patch": "v2"}]


@pytest.fixture
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture
def seed_dir() -> Path:
    return SEED_DIR


@pytest.fixture
def make_scenario():
    """Build a workspace scenario from a few keys; default: app.py = v0, the seed's two-step plan."""
    from sim.scenario import build_scenario

    def make(events, files=None, plan=None, replan=None, **extra):
        data = {"files": files or {"app.py": "v0"}, "plan": plan or TWO_STEPS, "events": list(events)}
        if replan is not None:
            data["replan"] = replan
        data.update(extra)
        return build_scenario(data)

    return make


@pytest.fixture
def cli():
    """Run ``fencesim ARGS...`` in a subprocess from the repo root; returns CompletedProcess."""

    def run(*args, cwd=None, env_extra=None, prelude=""):
        env = dict(os.environ)
        env["NO_COLOR"] = "1"
        env.update(env_extra or {})
        code = f"{prelude}\nfrom sim.cli import main; main()" if prelude else "from sim.cli import main; main()"
        return subprocess.run(
            [sys.executable, "-c", code, *[str(a) for a in args]],
            cwd=str(cwd or REPO_ROOT), env=env, capture_output=True, text=True, timeout=120,
        )

    return run
