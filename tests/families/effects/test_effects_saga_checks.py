"""stranded_irreversible and check_after_effect: each fails on a planted history and on the refund agent's
planted run, and stays silent where the saga ends as it should."""

from __future__ import annotations

from pathlib import Path

import tomli_w

from sim.core.files import read_toml
from sim.core.history import History
from sim.families.effects import FAMILY
from sim.families.effects.saga_checks import check_after_effect, stranded_irreversible
from sim.families.effects.scenario import load_runtime_scenario

KFR = "keyed-fingerprint-reconcile"
#: The refund agent: read the order, a keyed refund approved above $100, a checked ledger row, a CRM note, a
#: keyless e-mail that cannot be queried; version 2 inserts a fraud check before the refund.
REFUND_AGENT = [
    {"name": "read_order", "class": "read", "object": "order"},
    {"name": "refund", "class": "irreversible", "object": "refund", "keys": True, "approval": "amount_cents > 10000"},
    {"name": "ledger_append", "class": "append", "object": "ledger_row", "compensation": "reverse_row",
     "postcondition": True},
    {"name": "crm_upsert", "class": "idempotent", "object": "crm_note"},
    {"name": "send_email", "class": "irreversible", "object": "email", "keys": False, "reconcile_by": "none",
     "approval": False},
]
FRAUD_CHECK = {"workflow": ["read_order", {"name": "fraud_check", "class": "idempotent", "object": "check"},
                            "refund", "ledger_append", "crm_upsert", "send_email"]}


def refund_agent(tmp_path: Path, faults: list[str]):
    data = {"family": "effects", "task": "task_7", "faults": faults, "workflow": REFUND_AGENT,
            "arguments": {"refund": {"amount_cents": 5000}}, "versions": {"2": FRAUD_CHECK}}
    path = tmp_path / "refund.toml"
    path.write_text(tomli_w.dumps(data), encoding="utf-8")
    return load_runtime_scenario(*read_toml(path))


def findings(tmp_path: Path, faults: list[str], protocol: str = KFR) -> dict[str, list[str]]:
    scenario = refund_agent(tmp_path, faults)
    history = FAMILY.replay(scenario, FAMILY.parse_protocol(protocol), list(scenario.faults)).history
    out: dict[str, list[str]] = {}
    for violation in FAMILY.check(history).safety_violations:
        out.setdefault(violation.invariant, []).append(violation.detail)
    return out


def history(*events: tuple[str, dict]) -> History:
    recorded = History()
    for name, fields in events:
        recorded.append(0.0, "worker", name, **fields)
    return recorded


REFUND = ("committed", {"task": "t", "transition": "refund", "effect": "refund#1", "effect_class": "irreversible"})
LEDGER = ("committed", {"task": "t", "transition": "ledger_append", "effect": "ledger_row#2",
                        "effect_class": "append", "compensation": "reverse_row"})
FAILED = ("transition_failed", {"task": "t", "transition": "ledger_append", "reason": "postcondition_failed"})
REVERSED = ("compensated", {"task": "t", "transition": "ledger_append", "effect": "ledger_row#2",
                            "compensation": "reverse_row"})


def test_a_compensated_task_with_its_refund_standing_is_stranded():
    """Refund committed, ledger row compensated, task closed compensated: money out, no ledger row."""
    result = stranded_irreversible(history(REFUND, LEDGER, FAILED, REVERSED,
                                           ("task_terminal", {"task": "t", "outcome": "compensated"})))
    assert [v.invariant for v in result.violations] == ["stranded_irreversible"]
    assert "refund#1 (irreversible) standing" in result.violations[0].detail
    assert "ledger_row#2 was compensated" in result.violations[0].detail


def test_a_failed_task_with_its_refund_standing_is_stranded():
    """compensation off: the task closes failed after the ledger row failed, the refund stands."""
    result = stranded_irreversible(history(REFUND, FAILED, ("task_terminal", {"task": "t", "outcome": "failed"})))
    assert len(result.violations) == 1


def test_no_stranding_without_an_irreversible_effect_or_with_success():
    """A compensated task that never reached its irreversible step, or a succeeded one, is not stranded."""
    assert stranded_irreversible(history(LEDGER, FAILED, REVERSED,
                                         ("task_terminal", {"task": "t", "outcome": "compensated"}))).status == "ok"
    assert stranded_irreversible(history(REFUND, LEDGER,
                                         ("task_terminal", {"task": "t", "outcome": "succeeded"}))).status == "ok"


def test_undoing_what_came_before_the_irreversible_step_is_not_stranding():
    """The release itself fails its postcondition and the saga closes the pull request opened before it: the
    saga undid its prerequisites, nothing recorded after the release is missing."""
    pr = ("committed", {"task": "t", "transition": "open_pr", "effect": "pull_request#1",
                        "effect_class": "keyed_creation", "compensation": "close_pr"})
    release = ("committed", {"task": "t", "transition": "publish_release", "effect": "release#2",
                             "effect_class": "irreversible"})
    failed = ("transition_failed", {"task": "t", "transition": "publish_release", "reason": "postcondition_failed"})
    closed = ("compensated", {"task": "t", "transition": "open_pr", "effect": "pull_request#1",
                              "compensation": "close_pr"})
    terminal = ("task_terminal", {"task": "t", "outcome": "compensated"})
    assert stranded_irreversible(history(pr, release, failed, closed, terminal)).status == "ok"


def test_the_refund_agent_with_a_failed_ledger_row_is_stranded(tmp_path):
    """The run: postcondition_fails on the ledger row compensates it while the refund stays committed."""
    found = findings(tmp_path, ["postcondition_fails ledger_append after_receipt"])
    assert list(found) == ["stranded_irreversible"]
    assert "refund#" in found["stranded_irreversible"][0]
    assert findings(tmp_path, []) == {}


UPGRADE = ("upgraded", {"workflow_version": 2, "inserted": ["fraud_check"],
                        "inserted_before": [["fraud_check", "refund"]]})
CHECK = ("committed", {"task": "t", "transition": "fraud_check", "logical": "fraud_check", "effect": "check#3",
                       "effect_class": "idempotent"})


def test_an_inserted_check_after_its_transition_is_found():
    """The fraud check commits after the refund in the same task: a violation naming both."""
    result = check_after_effect(history(REFUND, UPGRADE, CHECK))
    assert [v.invariant for v in result.violations] == ["check_after_effect"]
    assert "inserted before refund, ran after refund's effect refund#1" in result.violations[0].detail


def test_an_inserted_check_before_its_transition_is_not():
    """Checked before the refund, or never run (a task pinned to version 1), is fine."""
    assert check_after_effect(history(UPGRADE, CHECK, REFUND)).status == "ok"
    assert check_after_effect(history(UPGRADE, REFUND)).status == "ok"
    assert check_after_effect(history(REFUND, CHECK)).status == "ok"  # no upgrade says what it guards


def test_migrate_runs_the_fraud_check_after_the_refund(tmp_path):
    """The run: the upgrade lands after the refund's receipt, the worker dies and its successor migrates to
    version 2, whose fraud check then runs after the refund was issued; pinned, the task stays on version 1."""
    faults = ["terminate refund after_receipt", "upgrade refund after_receipt"]
    found = findings(tmp_path, faults, KFR + ",version_policy=migrate")
    assert list(found) == ["check_after_effect"]
    assert "fraud_check, which version 2 inserted before refund" in found["check_after_effect"][0]
    assert findings(tmp_path, faults, KFR) == {}
    assert findings(tmp_path, ["terminate read_order after_receipt", "upgrade read_order after_receipt"],
                    KFR + ",version_policy=migrate") == {}


def test_what_the_saga_checks_cannot_judge_is_not_evaluable():
    """A commit without effect_class beside a compensated task, or an upgrade that inserts steps without
    saying what each guards, is not_evaluable, never ok."""
    bare = ("committed", {k: v for k, v in REFUND[1].items() if k != "effect_class"})
    closed = ("task_terminal", {"task": "t", "outcome": "compensated"})
    assert stranded_irreversible(history(bare, LEDGER, FAILED, REVERSED, closed)).status == "not_evaluable"
    silent = ("upgraded", {"workflow_version": 2, "inserted": ["fraud_check"]})
    assert check_after_effect(history(REFUND, silent, CHECK)).status == "not_evaluable"
