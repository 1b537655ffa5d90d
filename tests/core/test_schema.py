"""What a family's histories may hold (sim.core.schema via the registry): a history with an event, value
or shape its family never records is refused, naming the line -- never judged, never passed."""

from __future__ import annotations

import json

import pytest

from sim.core.errors import HistoryError
from sim.core.history import History
from sim.core.schema import HistorySchema
from sim.registry import FAMILIES

DELIVERY = {"actor": "executor", "event": "deliver", "step": "s1", "path": "app.py", "verdict": "applied",
            "fence": "step", "dedupe": "journal", "stamped_base_rev": 0, "rev_at_apply": 0}
ACCEPTED = {"actor": "queue", "event": "accepted", "task": "t", "workflow_version": 1}


def _judge(*rows, family=None):
    text = "".join(json.dumps(row) + "\n" for row in rows)
    return FAMILIES.judge_history(History.from_jsonl(text, "h.jsonl"), family, "h.jsonl")


def _refused(*rows, family=None) -> HistoryError:
    with pytest.raises(HistoryError) as caught:
        _judge(*rows, family=family)
    return caught.value


def test_a_valid_history_is_judged():
    """A history of known events and values goes through to the checks."""
    family, report = _judge(DELIVERY)
    assert family.name == "workspace" and report.results


def test_a_misspelt_event_is_refused_with_a_guess():
    """An event name the family never records (delivr) is refused at its line, with the closest name."""
    error = _refused(DELIVERY, {**DELIVERY, "event": "delivr"})
    assert error.where == "h.jsonl:2" and "did you mean 'deliver'" in error.message


def test_a_verdict_no_executor_gives_is_refused():
    """A verdict outside the model's (aplied) is refused: lost_update would never read it."""
    error = _refused({**DELIVERY, "verdict": "aplied"})
    assert "verdict 'aplied'" in error.message and "did you mean 'applied'" in error.message


def test_a_knob_value_the_checks_do_not_know_is_refused():
    """dedupe=jounral would make journal_loss pass over the delivery: refused."""
    assert "dedupe 'jounral'" in _refused({**DELIVERY, "dedupe": "jounral"}).message


def test_events_of_two_families_are_refused():
    """A workspace history holding an effects event names the other family."""
    error = _refused(DELIVERY, DELIVERY, {"actor": "git", "event": "committed", "task": "t"})
    assert error.where == "h.jsonl:3" and "effects family" in error.message


@pytest.mark.parametrize("row, fragment", [
    ({"actor": "w1", "event": "migrated", "task": "t", "renamed": [1]}, "[old, new] pairs"),
    ({"actor": "w1", "event": "migrated", "task": "t", "renamed": [["a", "b", "c"]]}, "[old, new] pairs"),
    ({"actor": "w1", "event": "checkpoint_saved", "task": "t", "completed": [["open_pr"]]}, "list of names"),
    ({"actor": "w1", "event": "timed_out", "task": "t", "transition": "x", "outcome": "faild"}, "outcome 'faild'"),
    ({"actor": "w1", "event": "task_terminal", "task": "t", "outcome": "succeded"}, "did you mean 'succeeded'"),
])
def test_effects_fields_of_the_wrong_shape_or_value_are_refused(row, fragment):
    """renamed, completed and the outcomes the checks branch on are validated at reading."""
    assert fragment in _refused(ACCEPTED, row).message


def test_shipped_histories_are_judged():
    """The histories recorded from the reference executor pass the schema."""
    from pathlib import Path

    for path in sorted((Path(__file__).resolve().parents[2] / "scenarios" / "histories").glob("*.jsonl")):
        FAMILIES.judge_history(History.read(path), None, str(path))


def test_the_schemas_know_every_event_and_verdict_the_models_record():
    """Every event name and verdict a sweep of the shipped workloads records is in its family's schema."""
    for workload_name in ("tiny", "seed-fuzz", "effects-pr", "effects-saga"):
        workload = FAMILIES.load_workload(workload_name)
        family = FAMILIES.family_for(workload)
        for seed in range(40):
            order = family.generate(workload, seed)
            for label in family.presets:
                history = family.replay(workload.base, family.parse_protocol(label), order).history
                assert FAMILIES.history_problems(history, family) == [], (workload_name, seed, label)


def test_the_workspace_verdicts_are_the_familys_verdict_columns():
    """The schema's verdicts are exactly the verdicts the workspace family counts."""
    from sim.families.workspace.family import VERDICT_COLUMNS
    from sim.families.workspace.history_schema import VERDICTS

    assert VERDICTS == VERDICT_COLUMNS


def test_a_family_without_a_schema_is_checked_by_its_history_events():
    """A family that declares no schema is checked against its history_events (empty: any name)."""
    assert HistorySchema.of(FAMILIES.get("workspace")).events == FAMILIES.get("workspace").history_events
