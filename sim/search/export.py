"""Exporting a minimal counterexample: scenario TOML, timeline, pytest file.

The scenario file is the same kind of file as a scripted scenario (DESIGN
section 6), carrying the protocol, the invariant, the seed and the commit it
came from, so ``fencesim run FILE`` replays it with no seed.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import tomli_w

from sim.fileio import write_atomically
from sim.history import History
from sim.scenario import WorkspaceScenario, scenario_to_dict

TIMELINE_ACTORS = ("planner", "router", "client", "network", "executor", "human")


def current_commit() -> str:
    """The commit of the fencesim source tree, or "unknown" outside a git checkout."""
    try:
        out = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                             cwd=Path(__file__).resolve().parent, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower()


def counterexample_scenario(base: WorkspaceScenario, protocol_label: str, invariant: str, events, seed: int | None,
                            workload: str, commit: str) -> WorkspaceScenario:
    scenario = base.with_events(list(events))
    scenario.name = f"{slug(workload)}__{slug(protocol_label)}__{invariant}"
    scenario.description = (
        f"Minimal order violating {invariant} under {protocol_label}, found by fuzzing workload {workload}"
        + (f" (seed {seed})" if seed is not None else "") + "."
    )
    scenario.protocol = protocol_label
    scenario.expect = {}
    scenario.meta = {"invariant": invariant, "workload": workload, "commit": commit, "minimal": True}
    if seed is not None:
        scenario.meta["seed"] = seed
    return scenario


def scenario_toml(scenario: WorkspaceScenario) -> str:
    return tomli_w.dumps(scenario_to_dict(scenario), multiline_strings=False)


def timeline(history: History, width: int = 22) -> str:
    """A readable timeline: one column per actor, one row per event."""
    actors = [a for a in TIMELINE_ACTORS if any(e.actor == a for e in history)]
    header = "  t | " + " | ".join(a.ljust(width) for a in actors)
    lines = [header, "-" * len(header)]
    for event in history:
        if event.get("skipped"):
            continue
        text = event.event
        if event.get("step"):
            text += f" {event['step']}"
        if event.event == "human_edit":
            text += f" {event.get('path')}" + (f"#{event['hunk']}" if event.get("hunk") else "")
        if event.event == "preempt":
            text += f" {event.get('point', 'now')}"
        if event.get("verdict") and event.event not in ("ack", "lose_ack"):
            text += f" -> {event['verdict']}"
        cells = [(text if a == event.actor else "").ljust(width)[:max(width, len(text))] for a in actors]
        lines.append(f"{event.time:>3} | " + " | ".join(cells))
    return "\n".join(lines) + "\n"


PYTEST_TEMPLATE = '''"""Regression: {description}"""

from pathlib import Path

import sim

SCENARIO = Path(__file__).with_name("{toml_name}")


def test_{name}_still_violates():
    """The minimal order still violates {invariant} under {protocol}."""
    result = sim.run_scenario(sim.load_scenario(SCENARIO), "{protocol}")
    assert "{invariant}" in [v.invariant for v in result.violations]
'''


def pytest_file(scenario: WorkspaceScenario, toml_name: str) -> str:
    return PYTEST_TEMPLATE.format(
        description=scenario.description, toml_name=toml_name, name=slug(scenario.name),
        invariant=scenario.meta["invariant"], protocol=scenario.protocol,
    )


def export(scenario: WorkspaceScenario, history: History, out_dir: Path) -> dict[str, Path]:
    """Write ``NAME.toml``, ``NAME.timeline.txt`` and ``test_NAME.py`` atomically; return their paths."""
    out_dir = Path(out_dir)
    name = slug(scenario.name)
    paths = {
        "scenario": out_dir / f"{name}.toml",
        "timeline": out_dir / f"{name}.timeline.txt",
        "pytest": out_dir / f"test_{name}.py",
    }
    write_atomically(paths["scenario"], scenario_toml(scenario))
    write_atomically(paths["timeline"], timeline(history))
    write_atomically(paths["pytest"], pytest_file(scenario, paths["scenario"].name))
    return paths
