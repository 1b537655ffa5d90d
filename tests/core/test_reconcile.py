"""A history whose events contradict each other is refused, naming both events (sim.core.reconcile and the
families' facts): one test per kind of contradiction that used to pass ``fencesim check``.

Each history is a recorded one (a shipped history file, or the model's own run of a shipped scenario) with
one fact edited.  Where the edit hides a violation the unchanged history shows, the test also asserts that
the checks alone -- a reader that stopped reconciling, the planted bug -- would pass it as ``ok``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.core.checks import OK
from sim.core.errors import HistoryError
from sim.core.history import History
from sim.registry import FAMILIES

REPO = Path(__file__).resolve().parents[2]


def _rows(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _shipped(name: str) -> list[dict]:
    return _rows((REPO / "scenarios" / "histories" / name).read_text())


def _simulated(scenario: str, protocol: str) -> list[dict]:
    loaded = FAMILIES.load_scenario(REPO / scenario)
    family = FAMILIES.family_for(loaded)
    return _rows(family.replay(loaded, family.parse_protocol(protocol)).history.to_jsonl())


def _workload_run(workload: str, protocol: str, seed: int) -> list[dict]:
    loaded = FAMILIES.load_workload(workload)
    family = FAMILIES.family_for(loaded)
    replay = family.replay(loaded.base, family.parse_protocol(protocol), family.generate(loaded, seed))
    return _rows(replay.history.to_jsonl())


def _history(rows: list[dict]) -> History:
    return History.from_jsonl("".join(json.dumps({**row, "index": i}) + "\n" for i, row in enumerate(rows)),
                              "h.jsonl")


def _refusal(rows: list[dict]) -> str:
    with pytest.raises(HistoryError) as caught:
        FAMILIES.judge_history(_history(rows), None, "h.jsonl")
    message = str(caught.value)
    assert "\n" not in message
    return message


def _blind_without_facts(rows: list[dict]) -> bool:
    """Whether the checks alone (no reconciliation: the planted bug) judge every check ok."""
    history = _history(rows)
    family = FAMILIES.infer_history_family(history)
    return all(result.status == OK for result in family.check(history).results)


def _index(rows, event, **fields) -> int:
    return next(i for i, row in enumerate(rows)
                if row["event"] == event and all(row.get(k) == v for k, v in fields.items()))


def _judged(rows) -> str:
    _, report = FAMILIES.judge_history(_history(rows), None, "h.jsonl")
    return "violated" if report.safety_violations else "not_evaluable" if report.not_evaluable else OK


# -- the effects family --------------------------------------------------------------------------------------

def test_the_unchanged_histories_are_judged():
    """The recorded histories the tests edit are reconciled and judged (violations where they have them)."""
    assert _judged(_shipped("lost-update-duplicate.jsonl")) == "violated"
    assert _judged(_shipped("clean.jsonl")) == OK
    assert _judged(_simulated("scenarios/runtime/pr_lost_response.toml", "keyed-fingerprint-reconcile")) == OK
    assert _judged(_workload_run("effects-release", "keyed-fingerprint-reconcile,on_timeout=failed", 5)) == "violated"


def test_a_receipt_before_the_commit_it_acknowledges_is_refused():
    """The receipt of pull_request#812 moved before the commit that creates it."""
    rows = _simulated("scenarios/runtime/pr_lost_response.toml", "keyed-fingerprint-reconcile")
    receipt = rows.pop(_index(rows, "receipt_recorded"))
    at = _index(rows, "committed")
    rows.insert(at, {**receipt, "time": rows[at]["time"]})
    message = _refusal(rows)
    assert f"event {at} (receipt_recorded) and event {at + 1} (committed)" in message
    assert "a receipt follows the commit it acknowledges" in message


def test_a_transition_failed_after_it_succeeded_is_refused():
    """open_pr is receipted, then a worker records it failed (not a later check of its effect)."""
    rows = _simulated("scenarios/runtime/pr_lost_response.toml", "keyed-fingerprint-reconcile")
    at = _index(rows, "receipt_recorded") + 1
    rows.insert(at, {"time": rows[at - 1]["time"], "actor": "w2", "event": "transition_failed", "task": "task_42",
                     "transition": "open_pr", "reason": "no_response"})
    message = _refusal(rows)
    assert "(receipt_recorded) and event" in message and "(transition_failed)" in message
    assert "cannot fail after it succeeded" in message


def test_a_timeout_that_claims_a_reads_effect_is_refused():
    """A timeout recorded failed hides unknown_as_failed by claiming to be a read's; its transition committed."""
    rows = _workload_run("effects-release", "keyed-fingerprint-reconcile,on_timeout=failed", 5)
    timeout = _index(rows, "timed_out")
    rows[timeout]["effect_class"] = "read"
    assert _blind_without_facts(rows)
    message = _refusal(rows)
    assert f"event {timeout} (timed_out)" in message and "'read'" in message


def test_an_effect_class_that_changes_within_a_transition_is_refused():
    """The release's commit says idempotent while its intent said irreversible: unapproved_irreversible would
    not read it."""
    rows = _simulated("scenarios/runtime/release_needs_approval.toml", "keyed-fingerprint-reconcile")
    commit = _index(rows, "committed", effect_class="irreversible")
    rows[commit]["effect_class"] = "idempotent"
    message = _refusal(rows)
    assert f"(intent_recorded) and event {commit} (committed)" in message
    assert "one effect class per transition" in message


def test_a_generation_that_contradicts_its_key_is_refused():
    """A second commit of one transition claims generation 2 although its request was sent under the
    generation-1 intent's key (duplicate_effect would count it as a deliberate new attempt)."""
    rows = _workload_run("effects-release", "unkeyed-retry", 1)
    assert _judged(rows) == "violated"
    commits = [i for i, row in enumerate(rows) if row["event"] == "committed"]
    rows[commits[-1]]["generation"] = 2
    message = _refusal(rows)
    assert f"event {commits[-1]} (committed)" in message and "(intent_recorded)" in message
    assert "generation 2" in message


def test_a_key_naming_another_generation_is_refused():
    """An intent whose key ends in :1 records generation 2."""
    rows = _simulated("scenarios/runtime/pr_lost_response.toml", "keyed-fingerprint-reconcile")
    intent = _index(rows, "intent_recorded")
    rows[intent]["generation"] = 2
    message = _refusal(rows)
    assert f"event {intent} (intent_recorded)" in message and "generation" in message


# -- the workspace family ------------------------------------------------------------------------------------

def test_a_delivery_without_a_verdict_is_refused():
    """The retry's delivery loses its verdict (nothing cut it short): duplicate_effect would not read it."""
    rows = _shipped("lost-update-duplicate.jsonl")
    second = [i for i, row in enumerate(rows) if row["event"] == "deliver"][1]
    del rows[second]["verdict"]
    message = _refusal(rows)
    assert f"event {second} (deliver)" in message and "a delivery has a verdict" in message


def test_a_journal_entry_keyed_by_another_step_is_refused():
    """s2's applied delivery records s1's journal key."""
    rows = _shipped("clean.jsonl")
    delivery = _index(rows, "deliver", step="s2")
    rows[delivery]["journal_key"] = "s1@0"
    message = _refusal(rows)
    assert f"event {delivery} (deliver)" in message and "journal" in message


def test_a_step_both_skipped_and_applied_is_refused():
    """A delivery recorded skipped (it did not happen) that still carries an applied verdict."""
    rows = _shipped("lost-update-duplicate.jsonl")
    second = [i for i, row in enumerate(rows) if row["event"] == "deliver"][1]
    rows[second]["skipped"] = True
    message = _refusal(rows)
    assert f"event {second} (deliver)" in message and "skipped and applied" in message


def test_a_hash_that_contradicts_the_files_last_write_is_refused():
    """The first delivery reads the content from before the human's edit: lost_update would not see it."""
    rows = _shipped("lost-update-duplicate.jsonl")
    first = _index(rows, "deliver")
    rows[first]["hash_before"] = rows[first]["expected_prior_hash"]
    rows[first]["hunks_before"] = rows[first]["expected_prior_hunks"]
    message = _refusal(rows)
    assert f"event {first} (deliver)" in message and "hash" in message


def test_a_revision_that_contradicts_the_last_write_is_refused():
    """s2's delivery reads revision 0 after s1's write left revision 1."""
    rows = _shipped("clean.jsonl")
    delivery = _index(rows, "deliver", step="s2")
    rows[delivery]["rev_at_apply"] = 0
    message = _refusal(rows)
    assert f"event {delivery} (deliver)" in message and "revision" in message


def test_a_write_that_skips_a_revision_is_refused():
    """A human edit that leaves revision 3 where the next dispatch reads revision 1; and a delivery's write
    that leaves revision 5 after it read revision 1."""
    rows = _shipped("lost-update-duplicate.jsonl")
    edit = _index(rows, "human_edit")
    rows[edit]["rev_after"] = 3
    message = _refusal(rows)
    assert f"event {edit} (human_edit) and event {edit + 1} (dispatch)" in message and "revision" in message
    rows = _shipped("lost-update-duplicate.jsonl")
    delivery = _index(rows, "deliver")
    rows[delivery]["rev_after"] = 5
    assert "rev_after 5 does not follow revision 1" in _refusal(rows)


@pytest.mark.parametrize("knob, value", [("fence", "step"), ("dedupe", "journal")])
def test_a_protocol_that_changes_mid_run_is_refused(knob, value):
    """The retry's delivery claims another fence (or dedupe mode) than the first delivery of the same run."""
    rows = _shipped("lost-update-duplicate.jsonl")
    deliveries = [i for i, row in enumerate(rows) if row["event"] == "deliver"]
    rows[deliveries[1]][knob] = value
    message = _refusal(rows)
    assert f"event {deliveries[0]} (deliver) and event {deliveries[1]} (deliver)" in message
    assert f"one {knob} per run" in message


def test_a_delivery_of_a_step_never_sent_is_refused():
    """A delivery of s1 recorded before its dispatch."""
    rows = _shipped("clean.jsonl")
    dispatch = rows.pop(_index(rows, "dispatch", step="s1"))
    at = _index(rows, "deliver", step="s1") + 1
    rows.insert(at, {**dispatch, "time": rows[at - 1]["time"]})
    assert "dispatched before it is delivered" in _refusal(rows)


def test_time_that_runs_backwards_is_refused():
    """An event recorded after another but at an earlier time."""
    rows = _shipped("clean.jsonl")
    rows[3]["time"] = -1
    assert "time never goes backwards" in _refusal(rows)


def test_the_cli_refuses_a_contradiction_with_exit_four_and_one_line(tmp_path, capsys):
    """Through the command line: exit 4, one line on stderr naming both events, nothing on stdout."""
    from sim.cli import main

    rows = _shipped("lost-update-duplicate.jsonl")
    deliveries = [i for i, row in enumerate(rows) if row["event"] == "deliver"]
    rows[deliveries[1]]["fence"] = "step"
    path = tmp_path / "h.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(SystemExit) as exit_:
        main(["check", str(path)])
    captured = capsys.readouterr()
    assert exit_.value.code == 4
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(lines) == 1 and f"event {deliveries[0]} (deliver) and event {deliveries[1]} (deliver)" in lines[0]


def test_a_hunk_read_as_it_was_before_a_write_changed_it_is_refused():
    """s1 rewrites one hunk of a file of several; s5's delivery to that file, with no write of that hunk between,
    claims to read it as it was before s1 (found by the quality suite's edited histories: a lost update hidden).
    No other fact says so: the file's other hunks and its whole hash are not what s1 read."""
    rows = _workload_run("three-files", "none", 0)
    first, later = _index(rows, "deliver", step="s1"), _index(rows, "deliver", step="s5")
    (hunk,) = rows[first]["patch_hunks"]
    assert rows[later]["path"] == rows[first]["path"] and hunk in rows[later]["hunks_before"]
    assert _judged(rows) in (OK, "violated")  # as recorded: judged
    rows[later]["hunks_before"][hunk] = rows[first]["hunks_before"][hunk]
    message = _refusal(rows)
    assert f"event {first} (deliver)" in message and f"event {later} (deliver)" in message
    assert "a hunk a write changed is not what it was" in message
