"""Exporting a counterexample (sim.report.export): scenario TOML that replays, an aligned timeline marking
faults and the violating event, and a generated pytest file -- for either family."""

from __future__ import annotations

import functools
import subprocess
import sys
import tomllib

import pytest

import sim
from sim.families.effects import FAMILY as EFFECTS
from sim.families.effects.faults import FaultEvent
from sim.families.workspace import FAMILY
from sim.families.workspace.scenario import parse_action
from sim.report.export import (
    Exported,
    counterexample_name,
    export,
    pytest_file,
    slug,
    timeline,
)

CASES = {
    "lost_update": ("none", ["plan", "dispatch s1", "human_edit app.py", "deliver s1"], "plan"),
    "journal_loss": ("step-dedupe,journal_write=after_write",
                     ["plan", "dispatch s1", "preempt after_write", "deliver s1"], "step-dedupe"),
}


@functools.cache
def _workload(name="seed-fuzz"):
    return sim.load_workload(name)


def _events(texts, workload=None):
    base = (workload or _workload()).base
    return [parse_action(t, base.files, base.step_ids()) for t in texts]


def _export(tmp_path, invariant, seed=17, commit="abc123def456", fix="default"):
    label, texts, known_fix = CASES[invariant]
    workload = _workload()
    protocol = FAMILY.parse_protocol(label)
    meta = {"name": counterexample_name(workload.name, label, invariant), "invariant": invariant, "seed": seed,
            "commit": commit, "workload": workload.name, "minimal": True,
            "description": f"Minimal order violating {invariant} under {label}."}
    scenario = FAMILY.counterexample(workload, protocol, invariant, _events(texts), meta)
    replay = FAMILY.replay(scenario, protocol)
    marked = [v.event_index for v in FAMILY.check(replay.history, (invariant,)).safety_violations]
    paths = export(FAMILY, scenario, replay.history, tmp_path, marked, known_fix if fix == "default" else fix)
    return paths, replay.history, marked


@pytest.mark.parametrize("invariant", sorted(CASES))
def test_exported_toml_replays_to_the_same_violation(tmp_path, invariant):
    """The exported file loads with sim.load_scenario and replays under its protocol to the violation."""
    paths, _, _ = _export(tmp_path, invariant)
    scenario = sim.load_scenario(paths.scenario)
    result = sim.run_scenario(scenario, scenario.protocol)
    assert invariant in [v.invariant for v in result.violations]
    assert [str(a) for a in scenario.events] == CASES[invariant][1]


def test_exported_toml_carries_its_provenance_and_family(tmp_path):
    """The exported file carries format, family, protocol, invariant, seed, commit, workload and minimal."""
    paths, _, _ = _export(tmp_path, "journal_loss", seed=42, commit="0123456789ab")
    data = tomllib.loads(paths.scenario.read_text())
    assert (data["format"], data["family"]) == (1, "workspace")
    assert data["protocol"] == "step-dedupe,journal_write=after_write"
    assert (data["invariant"], data["seed"], data["commit"]) == ("journal_loss", 42, "0123456789ab")
    assert (data["workload"], data["minimal"]) == ("seed-fuzz", True)


def test_exported_protocol_is_the_default_of_run_scenario(tmp_path):
    """Running the exported scenario with no protocol argument uses the file's protocol."""
    paths, _, _ = _export(tmp_path, "journal_loss")
    result = sim.run_scenario(sim.load_scenario(paths.scenario))
    assert "journal_loss" in [v.invariant for v in result.violations]


def test_exported_scenario_keeps_the_workload_files_and_plan(tmp_path):
    """The exported scenario has the workload's files and plan, so it replays without the workload."""
    paths, _, _ = _export(tmp_path, "lost_update")
    scenario = sim.load_scenario(paths.scenario)
    assert scenario.files == _workload().base.files
    assert scenario.plan == _workload().base.plan


def test_export_writes_three_files_named_after_the_scenario(tmp_path):
    """Export writes NAME.toml, NAME.timeline.txt and test_NAME.py, the name slugged from workload, protocol
    and invariant."""
    paths, _, _ = _export(tmp_path, "lost_update")
    assert isinstance(paths, Exported)
    assert paths.scenario.name == "seed_fuzz_none_lost_update.toml"
    assert paths.timeline.name == "seed_fuzz_none_lost_update.timeline.txt"
    assert paths.pytest.name == "test_seed_fuzz_none_lost_update.py"
    assert all(p.exists() for p in (paths.scenario, paths.timeline, paths.pytest))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in (paths.scenario, paths.timeline, paths.pytest))


def test_names_are_slugs():
    """counterexample_name joins slugged workload and protocol with the invariant."""
    assert counterexample_name("seed-fuzz", "step-dedupe,journal_write=after_write", "journal_loss") == (
        "seed_fuzz__step_dedupe_journal_write_after_write__journal_loss")
    assert slug("A b--C!") == "a_b_c"


def _cells(line):
    return [c.strip() for c in line.split("|")][1:]


def test_timeline_has_one_aligned_column_per_actor(tmp_path):
    """The header names each actor of the history once, in the family's lane order, every row has one cell per
    actor, and the column separators line up."""
    paths, history, _ = _export(tmp_path, "journal_loss")
    lines = paths.timeline.read_text().splitlines()
    actors = [a for a in FAMILY.lanes if any(e.actor == a for e in history)]
    assert _cells(lines[0]) == actors
    rows = [line for line in lines[2:] if "|" in line]
    assert len(rows) == sum(1 for e in history if not e.get("skipped"))
    bars = [i for i, ch in enumerate(lines[0]) if ch == "|"]
    for row in rows:
        assert len(row.split("|")) == len(actors) + 1
        assert [i for i, ch in enumerate(row) if ch == "|"] == bars


def test_timeline_puts_each_event_in_its_actors_column():
    """Each timeline row writes its event in the column of the actor that performed it."""
    protocol = FAMILY.parse_protocol("none")
    history = FAMILY.replay(_workload().base, protocol, _events(CASES["lost_update"][1])).history
    lines = timeline(FAMILY, history).splitlines()
    actors = _cells(lines[0])
    events = [e for e in history if not e.get("skipped")]
    assert events and len(lines[2:]) == len(events), "one row per event that took effect"
    for event, row in zip(events, lines[2:]):
        cells = _cells(row)
        column = actors.index(event.actor)
        assert cells[column].lstrip("* ").startswith(event.event)
        assert all(not c for i, c in enumerate(cells) if i != column)


def test_timeline_marks_faults_with_a_star_and_the_violation_with_arrows(tmp_path):
    """Injected faults are written '* ...'; the violating event's row starts with '>>'; a legend explains both."""
    paths, history, marked = _export(tmp_path, "journal_loss")
    lines = paths.timeline.read_text().splitlines()
    flagged = [line for line in lines if line.startswith(">>") and "|" in line]
    assert len(flagged) == len(marked) == 1 and "deliver s1 -> applied" in flagged[0]
    assert any("* preempt after_write" in line for line in lines)
    assert lines[-1].startswith(">> the event that violates the invariant")
    unmarked = timeline(FAMILY, history)
    assert ">>" not in unmarked and "* preempt after_write" in unmarked


def test_timeline_leaves_out_skipped_events():
    """An event that had no effect has no row."""
    protocol = FAMILY.parse_protocol("none")
    history = FAMILY.replay(_workload().base, protocol, _events(["deliver s1", "plan"])).history
    rows = [line for line in timeline(FAMILY, history).splitlines()[2:] if "|" in line]
    assert len(rows) == 1 and "plan" in rows[0]


def test_every_history_actor_has_a_timeline_column():
    """No actor of a replayed history is missing from the family's lanes."""
    workload = sim.load_workload("multi-file")
    for seed in range(30):
        order = FAMILY.generate(workload, seed)
        history = FAMILY.replay(workload.base, FAMILY.parse_protocol("step-dedupe"), order).history
        assert {e.actor for e in history if not e.get("skipped")} <= set(FAMILY.lanes)


def _pytest_in(directory, name):
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", name],
                          cwd=directory, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.slow  # over 3 s: outside the fast lane
@pytest.mark.parametrize("invariant", sorted(CASES))
def test_generated_pytest_file_passes_in_a_fresh_directory(tmp_path, invariant):
    """With a fix, the exported pytest file's two tests -- holds under the fix, violates under the reviewed
    protocol -- both pass when run in their own directory."""
    paths, _, _ = _export(tmp_path, invariant)
    out = _pytest_in(tmp_path, paths.pytest.name)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "2 passed" in out.stdout


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_generated_pytest_file_without_a_fix_marks_the_holds_test_xfail(tmp_path):
    """Without a known fix the 'holds' test is a strict xfail and the violation test passes."""
    paths, _, _ = _export(tmp_path, "lost_update", fix=None)
    text = paths.pytest.read_text()
    assert "xfail(strict=True" in text
    out = _pytest_in(tmp_path, paths.pytest.name)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 passed, 1 xfailed" in out.stdout


def test_pytest_file_names_both_tests_and_the_protocols():
    """The generated file holds a 'holds' test under the fix and a 'violates under the reviewed protocol' test."""
    text = pytest_file("cx", "why", "none", "lost_update", "cx.toml", "plan")
    assert "def test_cx_holds():" in text and "def test_cx_violates_under_the_reviewed_protocol():" in text
    assert '"plan")' in text and '"none")' in text and "xfail" not in text
    compile(text, "test_cx.py", "exec")


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_effects_counterexample_exports_and_replays(tmp_path):
    """An effects fault list exports the same three files; its scenario replays to the same history."""
    workload = sim.load_workload("effects-pr")
    protocol = EFFECTS.parse_protocol("keyed-fingerprint-reconcile")
    faults = [FaultEvent("duplicate", "publish_release", "after_commit")]
    scenario = EFFECTS.counterexample(workload, protocol, "duplicate_effect", faults,
                                      {"name": "effects_cx", "invariant": "duplicate_effect"})
    replay = EFFECTS.replay(scenario, protocol)
    marked = [v.event_index for v in EFFECTS.check(replay.history, ("duplicate_effect",)).safety_violations]
    paths = export(EFFECTS, scenario, replay.history, tmp_path, marked,
                   "keyed-fingerprint-reconcile,irreversible_keys=on")
    data = tomllib.loads(paths.scenario.read_text())
    assert (data["family"], data["faults"]) == ("effects", ["duplicate publish_release after_commit"])
    again = sim.run_scenario(sim.load_scenario(paths.scenario))
    assert again.history.to_jsonl() == replay.history.to_jsonl()
    timeline_text = paths.timeline.read_text()
    assert ">>" in timeline_text and "* request_duplicated" in timeline_text
    out = _pytest_in(tmp_path, paths.pytest.name)
    assert out.returncode == 0 and "2 passed" in out.stdout, out.stdout + out.stderr


def test_long_names_are_cut_and_kept_apart():
    """A very long workload name gives a short file name; two long names sharing a prefix stay distinct."""
    a, b = "w" * 5000 + "a", "w" * 5000 + "b"
    assert len(slug(a)) <= 80 and slug(a) != slug(b)
    assert slug(a) == slug(a)
    name = counterexample_name(a, "step-dedupe," + "x=y," * 500, "lost_update")
    assert len(name) < 200


def test_timeline_numbers_each_row_with_the_index_the_explanation_cites(tmp_path):
    """The '#' column is the event's history index: every event an explanation cites is the row of that number,
    naming that event, and a skipped event leaves a gap in the numbers rather than renumbering the rest."""
    paths, history, marked = _export(tmp_path, "lost_update")
    rows = {int(line[2:].split()[0]): line for line in paths.timeline.read_text().splitlines()[2:] if "|" in line}
    violation = FAMILY.check(history, ("lost_update",)).safety_violations[0]
    cited = [f for f in violation.explanation if f.event_index is not None]
    assert cited, "the lost update's explanation cites its events"
    for fact in cited:
        assert fact.event in rows[fact.event_index], (fact, rows.get(fact.event_index))
    assert rows[violation.event_index].startswith(">>")
    skipping = FAMILY.replay(_workload().base, FAMILY.parse_protocol("none"),
                             _events(["deliver s1", "plan", "dispatch s1"])).history
    numbers = [int(line[2:].split()[0]) for line in timeline(FAMILY, skipping).splitlines()[2:] if "|" in line]
    assert numbers == [e.index for e in skipping if not e.get("skipped")] and numbers[0] > 0


def test_fencesim_knows_its_timelines_with_and_without_the_index_column(tmp_path):
    """A timeline fencesim wrote, numbered or from before the '#' column, is its own output (it may replace
    it); a text file of the user's that merely has a '|' is not."""
    from sim.report.outputs import is_timeline

    paths, _, _ = _export(tmp_path, "lost_update")
    older = tmp_path / "older.timeline.txt"
    older.write_text("       t | planner\n------------------\n       0 | plan\n")
    mine = tmp_path / "mine.timeline.txt"
    mine.write_text("time | what\n---- | ----\n")
    no_row = tmp_path / "no_row.timeline.txt"  # a path none of whose events had an effect: no lane, no row
    no_row.write_text(timeline(FAMILY, FAMILY.replay(_workload().base, FAMILY.parse_protocol("none"),
                                                      _events(["deliver s1"])).history))
    assert is_timeline(paths.timeline) and is_timeline(older) and is_timeline(no_row) and not is_timeline(mine)
