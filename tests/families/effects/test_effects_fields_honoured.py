"""Every field of the transition table is read by a check or by the simulation: for each field, changing only
its value changes what a run records or what a check finds (a field declared but ignored fails here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest
import tomli_w

from sim.core.files import read_toml
from sim.core.history import History
from sim.families.effects import FAMILY, checks, transition_fields
from sim.families.effects.scenario import load_runtime_scenario
from sim.families.effects.workflow_file import parse_tables
from sim.search.advisor import candidates

KFR = "keyed-fingerprint-reconcile"
MAKE = {"name": "make", "class": "keyed_creation", "object": "thing", "compensation": "unmake"}
MAIL = {"name": "send_email", "class": "irreversible", "object": "email", "keys": False, "reconcile_by": "none"}


def story(tmp_path: Path, tables: list[dict], faults: list[str], arguments: dict | None = None):
    data: dict[str, Any] = {"family": "effects", "task": "task_7", "faults": faults, "workflow": tables}
    if arguments:
        data["arguments"] = arguments
    path = tmp_path / "s.toml"
    path.write_text(tomli_w.dumps(data), encoding="utf-8")
    return load_runtime_scenario(*read_toml(path))


def outcome(tmp_path: Path, tables: list[dict], faults: list[str], protocol: str = KFR,
            arguments: dict | None = None) -> tuple[tuple, tuple]:
    """What a run records (event names and the effects committed) and what the checks find."""
    scenario = story(tmp_path, tables, faults, arguments)
    history = FAMILY.replay(scenario, FAMILY.parse_protocol(protocol), list(scenario.faults)).history
    found = tuple(sorted({v.invariant for v in FAMILY.check(history).safety_violations}))
    recorded = tuple((e.event, e.get("transition"), e.get("effect")) for e in history
                     if e.event in ("committed", "deduplicated", "rejected", "approved", "human_exception",
                                    "transition_failed", "compensated", "timed_out"))
    return recorded, found


def _name(tmp_path):
    return (outcome(tmp_path, [MAKE], []), outcome(tmp_path, [dict(MAKE, name="build")], []))


def _class(tmp_path):
    faults = ["duplicate make after_dispatch"]
    return (outcome(tmp_path, [MAKE], faults),
            outcome(tmp_path, [{"name": "make", "class": "irreversible", "object": "thing"}], faults))


def _object(tmp_path):
    return outcome(tmp_path, [MAKE], []), outcome(tmp_path, [dict(MAKE, object="pull_request")], [])


def _compensation(tmp_path):
    checked = {"name": "check", "class": "idempotent", "object": "check", "postcondition": True}
    faults = ["postcondition_fails check after_receipt"]
    without = {k: v for k, v in MAKE.items() if k != "compensation"}
    return outcome(tmp_path, [MAKE, checked], faults), outcome(tmp_path, [without, checked], faults)


def _keys(tmp_path):
    faults = ["duplicate send_email after_dispatch"]
    return outcome(tmp_path, [MAIL], faults), outcome(tmp_path, [dict(MAIL, keys=True)], faults)


def _reconcile_by(tmp_path):
    faults = ["lose_response send_email after_commit"]
    return outcome(tmp_path, [MAIL], faults), outcome(tmp_path, [dict(MAIL, reconcile_by="marker")], faults)


def _approval(tmp_path):
    """approval = false on an irreversible step: no approval is asked, and none is owed (approval=off lets the
    worker go ahead after its grace; a slow approval then leaves the approval-owing step unapproved)."""
    protocol = KFR + ",approval=off"
    owed = outcome(tmp_path, [dict(MAIL, approval=True)], ["slow_approval send_email before_intent"], protocol)
    assert "unapproved_irreversible" in owed[1]
    free = outcome(tmp_path, [dict(MAIL, approval=False)], [], protocol)
    assert "unapproved_irreversible" not in free[1]
    return owed, free


def _timeout_s(tmp_path):
    """A lost response: the worker gives up after its timeout class, 10 s by default, 300 s declared."""
    def gave_up_after(tables):
        scenario = story(tmp_path, tables, ["lose_response make after_commit"])
        history = FAMILY.replay(scenario, FAMILY.parse_protocol(KFR), list(scenario.faults)).history
        sent = next(e.time for e in history if e.event == "dispatched")
        return next(e.time for e in history if e.event == "timed_out") - sent

    short, long = gave_up_after([MAKE]), gave_up_after([dict(MAKE, timeout_s=300)])
    assert short < 300 <= long
    return short, long


def _key_retention_s(tmp_path):
    """A late original commits 0.5 s after the retry stored its key: an endpoint keeping keys 0.25 s takes it
    as a new request (a duplicate); the knob's week deduplicates it."""
    faults = ["timeout make after_dispatch"]
    kept = outcome(tmp_path, [MAKE], faults, "keyed")
    forgotten = outcome(tmp_path, [dict(MAKE, key_retention_s=0.25)], faults, "keyed")
    assert "duplicate_effect" in forgotten[1] and "duplicate_effect" not in kept[1]
    return kept, forgotten


def _fingerprint(tmp_path):
    """A retry under the same key with other arguments: refused where the endpoint compares fingerprints,
    accepted (a fingerprint_conflict) where it declares it cannot."""
    faults = ["retry_changed make after_dispatch", "timeout make after_dispatch"]
    protocol = "keyed,idempotency=key+fingerprint"
    compares = outcome(tmp_path, [MAKE], faults, protocol)
    blind = outcome(tmp_path, [dict(MAKE, fingerprint=False)], faults, protocol)
    assert "fingerprint_conflict" in blind[1] and "fingerprint_conflict" not in compares[1]
    return compares, blind


def _postcondition(tmp_path):
    checked = {"name": "check", "class": "idempotent", "object": "check", "postcondition": True}
    faults = ["postcondition_fails check after_receipt"]
    unchecked = dict(checked, postcondition=False)
    return outcome(tmp_path, [MAKE, checked], faults), outcome(tmp_path, [MAKE, unchecked], [])


#: Per field of the table: two runs that differ only in that field (a field with no entry here is a failure).
DEMONSTRATIONS: dict[str, Callable[[Path], tuple]] = {
    "name": _name, "class": _class, "object": _object, "compensation": _compensation, "keys": _keys,
    "reconcile_by": _reconcile_by, "approval": _approval, "timeout_s": _timeout_s,
    "key_retention_s": _key_retention_s, "fingerprint": _fingerprint, "postcondition": _postcondition,
}


def test_every_field_of_the_table_has_a_demonstration():
    """A field added to FIELDS without a run that shows it read fails: declared-but-ignored is a failure."""
    assert set(DEMONSTRATIONS) == set(transition_fields.field_names())


@pytest.mark.parametrize("name", transition_fields.field_names())
def test_changing_only_the_field_changes_the_run_or_the_findings(name, tmp_path):
    """Two runs that differ in this field alone differ in what they record or what the checks find."""
    first, second = DEMONSTRATIONS[name](tmp_path)
    assert first != second, f"the field {name!r} changed nothing a run records or a check finds"


def committed(effect_class: str, **fields) -> dict:
    return {"event": "committed", "task": "t", "transition": "send_email", "logical": "send_email",
            "effect": "email#1", "effect_class": effect_class, **fields}


def recorded(*events: dict) -> History:
    history = History()
    for event in events:
        fields = {k: v for k, v in event.items() if k != "event"}
        history.append(0.0, "git", event["event"], **fields)
    return history


def test_a_recorded_history_saying_no_approval_was_due_is_not_unapproved():
    """check on a recorded history: an irreversible effect recording approval_required = false owes no
    approval; without the field, or with true, it does."""
    assert checks.unapproved_irreversible(recorded(committed("irreversible", approval_required=False))).status == "ok"
    assert checks.unapproved_irreversible(recorded(committed("irreversible"))).violations
    assert checks.unapproved_irreversible(recorded(committed("irreversible", approval_required=True))).violations


def test_the_simulation_records_that_no_approval_was_due(tmp_path):
    """An irreversible e-mail declared approval = false commits with approval_required = false and is clean
    under every preset; declared true, it is approved first."""
    for protocol in FAMILY.presets:
        scenario = story(tmp_path, [dict(MAIL, approval=False)], [])
        history = FAMILY.replay(scenario, FAMILY.parse_protocol(protocol), []).history
        commit = next(e for e in history if e.event == "committed")
        assert commit["approval_required"] is False and not any(e.event == "approved" for e in history)
        assert "unapproved_irreversible" not in {v.invariant for v in FAMILY.check(history).safety_violations}


@pytest.mark.parametrize(("amount", "approved"), [(500, False), (20_000, True), (None, True)])
def test_an_approval_on_a_condition_of_the_arguments(tmp_path, amount, approved):
    """approval = "amount_cents > 10000": a small refund goes without, a large one (or one whose amount is
    unknown) waits for a human."""
    refund = {"name": "refund", "class": "irreversible", "object": "refund", "keys": True,
              "approval": "amount_cents > 10000"}
    arguments = {"refund": {"amount_cents": amount}} if amount is not None else None
    scenario = story(tmp_path, [refund], [], arguments)
    history = FAMILY.replay(scenario, FAMILY.parse_protocol(KFR), []).history
    assert any(e.event == "approved" for e in history) is approved
    assert FAMILY.check(history).safety_violations == []


@pytest.mark.parametrize("text", ["amount > ", "__import__('os')", "a > 1 or 1", "amount_cents >> 3", "1 < x"])
def test_a_condition_is_parsed_never_evaluated(text):
    """Anything but ARGUMENT OP NUMBER is refused with the allowed form."""
    from sim.core.errors import ScenarioError

    with pytest.raises(ScenarioError, match="approval must be true, false or a condition"):
        parse_tables([{"name": "r", "class": "irreversible", "approval": text}], "f.toml:1")


def test_the_advisor_never_proposes_fingerprints_to_endpoints_that_cannot_compare_them(tmp_path):
    """The family's filter refuses idempotency=key+fingerprint when every keyed endpoint declares
    fingerprint = false, and lets it through when one can compare."""
    from sim.core.workload import Workload

    base = FAMILY.parse_protocol("keyed")
    proposals = [c for c in candidates(base, 1) if c.knobs["idempotency"] == "key+fingerprint"]
    assert proposals
    ledger = {"name": "ledger_append", "class": "append", "object": "ledger_row", "compensation": "reverse"}

    def allowed(tables):
        workload = Workload(name="w", family="effects", base=story(tmp_path, tables, []), classes=("terminate",),
                            rates={"terminate": 1.0})
        return [FAMILY.candidate_allowed(workload, base, c) for c in proposals]

    assert allowed([dict(ledger, fingerprint=False)]) == [False] * len(proposals)
    assert allowed([dict(ledger, fingerprint=False), MAKE]) == [True] * len(proposals)
