"""Exporting counterexamples (sim.search.export): scenario TOML, timeline, generated pytest file."""

from __future__ import annotations

import subprocess
import sys
import tomllib

import pytest

import sim
from sim.protocol import parse_protocol
from sim.replay import replay
from sim.search.export import TIMELINE_ACTORS, counterexample_scenario, export, timeline
from sim.search.workload import load_workload

CASES = {
    "lost_update": ("none", ["plan", "dispatch s1", "human_edit app.py", "deliver s1"]),
    "journal_loss": ("step-dedupe,journal_write=after_write",
                     ["plan", "dispatch s1", "preempt after_write", "deliver s1"]),
}


def _export(tmp_path, invariant, seed=17, commit="abc123def456"):
    workload = load_workload("seed-fuzz")
    label, texts = CASES[invariant]
    events = [sim.parse_action(t, workload.base.files, workload.base.step_ids()) for t in texts]
    scenario = counterexample_scenario(workload.base, label, invariant, events, seed, workload.name, commit)
    history, _ = replay(scenario, parse_protocol(label))
    return export(scenario, history, tmp_path), history


@pytest.mark.parametrize("invariant", sorted(CASES))
def test_exported_toml_replays_to_the_same_violation(tmp_path, invariant):
    """The exported file loads with sim.load_scenario and replays under its protocol to the violation."""
    paths, _ = _export(tmp_path, invariant)
    scenario = sim.load_scenario(paths["scenario"])
    result = sim.run_scenario(scenario, scenario.protocol)
    assert invariant in [v.invariant for v in result.violations]
    assert [str(a) for a in scenario.events] == CASES[invariant][1]


def test_exported_toml_carries_its_provenance(tmp_path):
    """The exported file carries format, protocol, invariant, seed and commit."""
    paths, _ = _export(tmp_path, "journal_loss", seed=42, commit="0123456789ab")
    data = tomllib.loads(paths["scenario"].read_text())
    assert data["format"] == 1
    assert data["protocol"] == "step-dedupe,journal_write=after_write"
    assert data["invariant"] == "journal_loss"
    assert data["seed"] == 42
    assert data["commit"] == "0123456789ab"


def test_exported_protocol_is_the_default_of_run_scenario(tmp_path):
    """Running the exported scenario with no protocol argument uses the file's protocol."""
    paths, _ = _export(tmp_path, "journal_loss")
    result = sim.run_scenario(sim.load_scenario(paths["scenario"]))
    assert "journal_loss" in [v.invariant for v in result.violations]


def test_exported_scenario_keeps_the_workload_files_and_plan(tmp_path):
    """The exported scenario has the workload's files and plan, so it replays without the workload."""
    paths, _ = _export(tmp_path, "lost_update")
    scenario = sim.load_scenario(paths["scenario"])
    base = load_workload("seed-fuzz").base
    assert scenario.files == base.files
    assert scenario.plan == base.plan


def test_timeline_has_one_column_per_actor(tmp_path):
    """The timeline header names each actor of the history once, and every row has one cell per actor."""
    paths, history = _export(tmp_path, "journal_loss")
    lines = paths["timeline"].read_text().splitlines()
    actors = [a for a in TIMELINE_ACTORS if any(e.actor == a for e in history)]
    header = [c.strip() for c in lines[0].split("|")]
    assert header[1:] == actors
    rows = [line for line in lines[2:] if line.strip()]
    assert len(rows) == sum(1 for e in history if not e.get("skipped"))
    for row in rows:
        assert len(row.split("|")) == len(actors) + 1


def test_timeline_puts_each_event_in_its_actors_column():
    """Each timeline row writes its event in the column of the actor that performed it."""
    workload = load_workload("seed-fuzz")
    events = [sim.parse_action(t, workload.base.files, workload.base.step_ids()) for t in CASES["lost_update"][1]]
    history, _ = replay(workload.base, parse_protocol("none"), events)
    lines = timeline(history).splitlines()
    actors = [c.strip() for c in lines[0].split("|")][1:]
    for event, row in zip([e for e in history if not e.get("skipped")], lines[2:]):
        cells = [c.strip() for c in row.split("|")][1:]
        column = actors.index(event.actor)
        assert cells[column].startswith(event.event)
        assert all(not c for i, c in enumerate(cells) if i != column)


def test_every_history_actor_has_a_timeline_column():
    """No actor of a replayed history is missing from the timeline's actor list."""
    workload = load_workload("multi-file")
    from sim.faults import generate

    for seed in range(30):
        history, _ = replay(workload.base, parse_protocol("step-dedupe"), generate(workload, seed).events)
        assert {e.actor for e in history if not e.get("skipped")} <= set(TIMELINE_ACTORS)


@pytest.mark.parametrize("invariant", sorted(CASES))
def test_generated_pytest_file_passes_in_a_fresh_directory(tmp_path, invariant):
    """The exported pytest file, run with pytest in its own directory, passes."""
    paths, _ = _export(tmp_path, invariant)
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", paths["pytest"].name],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 passed" in out.stdout


def test_export_writes_three_files_named_after_the_scenario(tmp_path):
    """Export writes NAME.toml, NAME.timeline.txt and test_NAME.py."""
    paths, _ = _export(tmp_path, "lost_update")
    assert paths["scenario"].name == "seed_fuzz_none_lost_update.toml"
    assert paths["timeline"].name == "seed_fuzz_none_lost_update.timeline.txt"
    assert paths["pytest"].name == "test_seed_fuzz_none_lost_update.py"
    assert all(p.exists() for p in paths.values())
