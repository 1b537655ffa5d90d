"""Runtime scenario files (scenario.py): scripts and fault lists, errors at file:line, and
dump -> load round trips that replay to the same bytes."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomli_w

import sim
from sim.core.errors import ScenarioError
from sim.core.files import read_toml
from sim.families.effects import FAMILY
from sim.families.effects.faults import FaultEvent
from sim.families.effects.scenario import (
    RuntimeScenario,
    dump_scenario,
    load_runtime_scenario,
    parse_time,
)


def write(tmp_path: Path, body: str, name: str = "s.toml") -> Path:
    path = tmp_path / name
    path.write_text('family = "effects"\n' + body, encoding="utf-8")
    return path


def load(path: Path) -> RuntimeScenario:
    return load_runtime_scenario(*read_toml(path))


def _round_trip(tmp_path: Path, scenario: RuntimeScenario) -> RuntimeScenario:
    path = tmp_path / "again.toml"
    path.write_text(tomli_w.dumps(dump_scenario(scenario)), encoding="utf-8")
    return sim.load_scenario(path)


@pytest.mark.parametrize("body, needle", [
    ('events = ["accept task_1", "explode"]\n', "unknown event"),
    ('events = ["accept task_1", "intent open_prr"]\n', "unknown transition"),
    ('events = ["accept task_1", "lease_expire w1 w2"]\n', "lease_expire W -> W2"),
    ('events = ["@5 accept task_1", "@2 lease w1"]\n', "back in time"),
    ('events = ["accept other"]\n', "this scenario's task is 'task_1'"),
    ('events = ["@x accept task_1"]\n', "bad time"),
    ('events = []\n', "non-empty list"),
    ('workflow = ["nope"]\nevents = ["accept task_1"]\n', "unknown transition"),
    ('workflow = "generic:0"\nfaults = []\n', "generic:N"),
    ('colour = 1\nevents = ["accept task_1"]\n', "unknown key"),
    ('task = "bad task"\nfaults = []\n', "simple name"),
    ('next_number = 0\nfaults = []\n', "next_number"),
    ('recover = "yes"\nevents = ["accept task_1"]\n', "true or false"),
    ('[arguments.nope]\nx = 1\n', "arguments for unknown transition"),
    ('protocol = "keyed,colour=red"\nfaults = []\n', "unknown knob 'colour' for the effects family"),
    ('faults = [ "terminate open_pr" ]\n', "FAULT TRANSITION POINT"),
    ('faults = "terminate open_pr after_commit"\n', "list of strings"),
    ('faults = [\n  "explode open_pr after_commit" ]\n', "unknown fault 'explode'"),
    ('faults = [\n  "lose_response open_pr after_dispatch" ]\n', "strikes at after_commit"),
    ('events = ["accept task_1"]\nfaults = ["terminate open_pr after_commit"]\n', "not both"),
    ('faults = ["terminate open_pr after_commit"]\nrecover = true\n', "recover belongs to scripts"),
], ids=lambda value: value if len(value) < 30 else None)
def test_bad_scenarios_name_file_and_line(tmp_path, body, needle):
    """A malformed effects scenario raises ScenarioError with file:line and what is allowed."""
    path = write(tmp_path, body)
    with pytest.raises(ScenarioError) as caught:
        load(path)
    assert needle in caught.value.message
    assert caught.value.where.startswith(f"{path}:")


def test_bad_fault_is_reported_at_its_own_line(tmp_path):
    """In a multi-line fault list, the bad fault's own line is named."""
    path = write(tmp_path, 'faults = [\n  "terminate open_pr after_commit",\n  "zombie open_pr reconcile" ]\n')
    with pytest.raises(ScenarioError) as caught:
        load(path)
    assert caught.value.where == f"{path}:4"


def test_unknown_expect_label_is_reported_at_its_line(tmp_path):
    """An [expect] label that is not an effects protocol is refused at its own line."""
    path = write(tmp_path, 'faults = []\n[expect]\n"keyed-magic" = "done"\n')
    with pytest.raises(ScenarioError, match="unknown effects preset") as caught:
        load(path)
    assert caught.value.where == f"{path}:4"


def test_family_alias_runtime_is_accepted(tmp_path):
    """A file may name the family by its former name 'runtime', an alias; it loads as 'effects'."""
    path = tmp_path / "alias.toml"
    path.write_text('family = "runtime"\nfaults = []\n', encoding="utf-8")
    assert sim.load_scenario(path).family == "effects"
    assert dump_scenario(sim.load_scenario(path))["family"] == "effects"


def test_fault_list_scenario_loads_its_faults(tmp_path):
    """A scenario with faults parses them into FaultEvents; its events are the faults."""
    scenario = load(write(tmp_path, 'workflow = ["open_pr"]\nfaults = ["lose_response open_pr after_commit"]\n'))
    assert scenario.faults == [FaultEvent("lose_response", "open_pr", "after_commit")]
    assert scenario.events == scenario.faults and scenario.ops == []


def test_fault_list_round_trip_replays_to_the_same_bytes(tmp_path):
    """A fault-list scenario dumped, written as TOML and loaded again replays to identical history bytes."""
    body = ('name = "fl"\nprotocol = "keyed-reconcile"\ntask = "task_42"\nworkflow = ["open_pr", "publish_release"]\n'
            'next_number = 40\nfaults = ["terminate open_pr after_dispatch", "unprovable open_pr reconcile",\n'
            '          "duplicate publish_release after_commit"]\n')
    original = load(write(tmp_path, body))
    dumped = dump_scenario(original)
    assert (dumped["format"], dumped["family"]) == (1, "effects") and "recover" not in dumped
    assert dumped["faults"] == ["terminate open_pr after_dispatch", "unprovable open_pr reconcile",
                                "duplicate publish_release after_commit"]
    again = _round_trip(tmp_path, original)
    for label in ("keyed-reconcile", "unkeyed-retry", "keyed-fingerprint-reconcile,irreversible_keys=on"):
        first, second = sim.run_scenario(original, label), sim.run_scenario(again, label)
        assert first.history.to_jsonl() == second.history.to_jsonl()
        assert first.history.to_jsonl()


def test_script_round_trip_replays_to_the_same_bytes(tmp_path, stories_dir):
    """A scripted story dumped and loaded again keeps its times, arguments and [expect], and replays the same."""
    original = sim.load_scenario(stories_dir / "pr_lost_response.toml")
    again = _round_trip(tmp_path, original)
    assert (again.expect, again.arguments, again.next_number, again.recover) == (
        original.expect, original.arguments, original.next_number, original.recover)
    for label in original.expect:
        assert sim.run_scenario(original, label).history.to_jsonl() == sim.run_scenario(again, label).history.to_jsonl()


@pytest.mark.parametrize("workflow, written", [('"saga"', "saga"), ('"generic:3"', "generic:3"),
                                               ('["open_pr", "publish_release"]', ["open_pr", "publish_release"])])
def test_dump_writes_the_workflow_as_it_can_be_read(tmp_path, workflow, written):
    """The saga is written 'saga', a generic workflow 'generic:N', a sub-saga as its names."""
    scenario = load(write(tmp_path, f'workflow = {workflow}\ntenant = "globex"\nfaults = []\n'))
    dumped = dump_scenario(scenario)
    assert dumped["workflow"] == written and dumped["tenant"] == "globex"
    assert _round_trip(tmp_path, scenario).workflow == scenario.workflow


def test_with_events_gives_a_fault_list_of_the_same_task(stories_dir):
    """with_events turns any scenario into a fault list of the same task, workflow and arguments."""
    story = sim.load_scenario(stories_dir / "pr_lost_response.toml")
    faults = [FaultEvent("lose_response", "open_pr", "after_commit")]
    derived = story.with_events(faults)
    assert derived.faults == faults and derived.ops == [] and derived.recover is True
    assert (derived.task, derived.workflow, derived.arguments, derived.family) == (
        story.task, story.workflow, story.arguments, "effects")
    assert story.faults is None


def test_family_load_and_dump_are_the_modules():
    """The family's load_scenario and dump_scenario are this module's loader and dumper."""
    data, source = read_toml(Path(__file__).resolve().parents[3] / "scenarios" / "runtime" / "pr_lost_response.toml")
    by_family = FAMILY.load_scenario(data, source)
    assert FAMILY.dump_scenario(by_family) == dump_scenario(load_runtime_scenario(data, source))


@pytest.mark.parametrize("token, seconds", [("@5", 5.0), ("@2.5", 2.5), ("09:00:02.5", 32402.5), ("x", None),
                                            ("@-1", None)])
def test_parse_time_reads_seconds_and_clock_times(token, seconds):
    """A script time is @SECONDS or HH:MM:SS[.f]; anything else is not a time."""
    assert parse_time(token) == seconds
