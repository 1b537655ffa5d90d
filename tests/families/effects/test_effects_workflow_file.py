"""A user's workflow written as transition tables (workflow_file.py): the format, its defaults, every mistake
at ``file:line``, the string forms unchanged, and the endpoint assumptions the runtime honours."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
import tomli_w

import sim
from sim.cli.app import main
from sim.core.errors import ScenarioError
from sim.core.files import read_toml
from sim.families.effects import FAMILY
from sim.families.effects.scenario import dump_scenario, load_runtime_scenario

FIVE = """workflow = [
  { name = "create_branch", class = "keyed_creation", object = "branch", compensation = "delete_branch" },
  { name = "open_pr", class = "keyed_creation", object = "pull_request", compensation = "close_pr" },
  { name = "run_ci", class = "idempotent", object = "ci_run" },
  { name = "post_slack", class = "irreversible", object = "announcement", keys = false, reconcile_by = "none" },
  { name = "merge_pr", class = "irreversible", object = "merge", keys = true },
]
"""


def run_cli(*args) -> tuple[int, str]:
    """``fencesim ARGS`` in this process: (exit code, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in args])
            code = 0
        except SystemExit as exit_:
            code = exit_.code
    return code, err.getvalue()


def write(tmp_path: Path, body: str, name: str = "s.toml") -> Path:
    path = tmp_path / name
    path.write_text('family = "effects"\ntask = "task_42"\n' + body, encoding="utf-8")
    return path


def load(path: Path):
    return load_runtime_scenario(*read_toml(path))


def violated(scenario, protocol: str, faults: list[str]) -> dict[str, set]:
    """Invariant -> the transitions it is violated at, for one fault list under one protocol."""
    events = [FAMILY.parse_event(scenario, f) for f in faults]
    replay = FAMILY.replay(scenario, FAMILY.parse_protocol(protocol), events)
    out: dict[str, set] = {}
    for v in FAMILY.check(replay.history).safety_violations:
        out.setdefault(v.invariant, set()).add(v.step)
    return out


def test_five_transition_tables_load_with_their_declarations(tmp_path):
    """Each table gives a transition in order; what it leaves out takes its class's default."""
    workflow = load(write(tmp_path, FIVE + 'faults = ["terminate run_ci after_intent"]\n')).workflow
    assert workflow.names() == ["create_branch", "open_pr", "run_ci", "post_slack", "merge_pr"]
    slack, merge, ci = workflow.get("post_slack"), workflow.get("merge_pr"), workflow.get("run_ci")
    assert (slack.effect_class, slack.object_kind, slack.keys, slack.queried_by) == (
        "irreversible", "announcement", False, "none")
    assert slack.needs_approval and merge.needs_approval and not ci.needs_approval
    assert merge.honours_keys(False, "key") and not slack.honours_keys(True, "key")
    assert workflow.get("open_pr").compensation == "close_pr" and workflow.get("open_pr").queried_by == "key"


def test_irreversible_keys_is_the_default_only_where_the_transition_says_nothing(tmp_path):
    """An irreversible step without ``keys`` follows the irreversible_keys knob; a declared one does not."""
    body = FIVE.replace(', keys = true', '') + 'faults = ["terminate run_ci after_intent"]\n'
    merge = load(write(tmp_path, body)).workflow.get("merge_pr")
    assert merge.keys is None and merge.honours_keys(True, "key") and not merge.honours_keys(False, "key")


def test_a_table_workflow_round_trips_and_replays_to_the_same_bytes(tmp_path):
    """dump -> load keeps the tables; the same inputs give the same history bytes."""
    scenario = load(write(tmp_path, FIVE + 'faults = ["duplicate post_slack after_dispatch"]\n'))
    again_path = tmp_path / "again.toml"
    again_path.write_text(tomli_w.dumps(dump_scenario(scenario)), encoding="utf-8")
    again = sim.load_scenario(again_path)
    assert again.workflow.transitions == scenario.workflow.transitions
    protocol = FAMILY.parse_protocol("keyed-fingerprint-reconcile")
    events = list(scenario.faults)
    first = FAMILY.replay(scenario, protocol, events).history.to_jsonl()
    assert first == FAMILY.replay(again, protocol, list(again.faults)).history.to_jsonl()


@pytest.mark.parametrize("item, fragment", [
    ('{ name = "a", class = "idempotent", object = "ci" }', "listed twice"),
    ('{ name = "b", class = "bogus", object = "x" }', "unknown class 'bogus'"),
    ('{ name = "b", class = "idempotent", object = "x", colour = 1 }', "unknown field 'colour'"),
    ('{ name = "b", class = "irreversible", object = "x", compensation = "undo" }', "takes no compensation"),
    ('{ name = "b", class = "read", object = "x", keys = true }', "is a read"),
    ('{ name = "b", class = "append", object = "x", reconcile_by = "email" }', "reconcile_by must be one of"),
    ('{ name = "b", class = "append", object = "x", timeout_s = -1 }', "timeout_s must be"),
    ('{ name = "b", class = "append", object = "x", approval = "yes" }', "approval must be true, false or a condition"),
    ('{ class = "append", object = "x" }', "needs a name"),
])
def test_every_mistake_names_its_file_and_line(tmp_path, item, fragment):
    """A mistake in the third table is reported at the third table's line (5), with exit code 4."""
    body = ('faults = ["terminate a after_intent"]\nworkflow = [\n'
            '  { name = "a", class = "idempotent", object = "ci" },\n  ' + item + ',\n]\n')
    path = write(tmp_path, body)
    with pytest.raises(ScenarioError, match=fragment) as caught:
        load(path)
    assert f"{path}:6" in str(caught.value)
    code, err = run_cli("run", path)
    assert code == 4 and f"{path}:6:" in err and "Traceback" not in err


def test_the_string_forms_are_unchanged(tmp_path):
    """"saga", "generic:N" and a list of saga names mean what they always meant."""
    saga = load(write(tmp_path, 'workflow = "saga"\nfaults = ["terminate open_pr after_intent"]\n'))
    assert saga.workflow.names() == ["create_branch", "open_pr", "create_preview", "publish_release"]
    generic = load(write(tmp_path, 'workflow = "generic:3"\nfaults = ["terminate t1 after_intent"]\n'))
    assert generic.workflow.names() == ["t1", "t2", "t3"]
    names = load(write(tmp_path, 'workflow = ["open_pr", "publish_release"]\n'
                                 'faults = ["terminate open_pr after_intent"]\n'))
    assert names.workflow.names() == ["open_pr", "publish_release"] and names.workflow.spec is None
    with pytest.raises(ScenarioError, match="unknown transition 'run_ci'.*describe your own as tables"):
        load(write(tmp_path, 'workflow = ["run_ci"]\nfaults = ["terminate run_ci after_intent"]\n'))


def test_keys_false_makes_a_duplicated_request_a_second_effect_whatever_the_protocol(tmp_path):
    """No knob -- not even irreversible_keys=on -- makes a keyless endpoint deduplicate; a keyed one does."""
    scenario = load(write(tmp_path, FIVE + 'faults = ["duplicate post_slack after_dispatch"]\n'))
    for protocol in ("keyed-fingerprint-reconcile", "keyed-fingerprint-reconcile,irreversible_keys=on"):
        assert violated(scenario, protocol, ["duplicate post_slack after_dispatch"])["duplicate_effect"] == {
            "post_slack"}
        assert violated(scenario, protocol, ["duplicate merge_pr after_dispatch"]) == {}


def test_reconcile_by_none_sends_an_unknown_outcome_to_a_human(tmp_path):
    """With nothing to query, reconciliation proves nothing and a human resolves the announcement."""
    scenario = load(write(tmp_path, FIVE + 'faults = ["lose_response post_slack after_commit"]\n'))
    replay = FAMILY.replay(scenario, FAMILY.parse_protocol("keyed-fingerprint-reconcile"), list(scenario.faults))
    kinds = [(e.event, e.get("transition"), e.get("query")) for e in replay.history]
    assert ("reconciled", "post_slack", "none") in kinds
    assert ("human_exception", "post_slack", None) in kinds
    assert not FAMILY.check(replay.history).safety_violations
