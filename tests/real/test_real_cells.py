"""What a real cell is, as plain data: transitions with keys and approval resolved, protocols, and what a
runtime cannot express -- no process started."""

from __future__ import annotations

import pytest

from sim.families.effects.workflow import Transition, Workflow, generic, saga
from sim.real.runtimes.cells import (
    CellFault,
    NotApplicable,
    check_applicable,
    check_order,
    resolve_protocol,
    workflow_data,
)


def test_keys_follow_the_class_and_an_irreversible_one_follows_the_knob():
    """keyed_creation and append honour keys; idempotent does not; an irreversible step that does not say
    takes irreversible_keys; approval defaults to true for an irreversible step only."""
    rows = [{"name": "a", "class": "keyed_creation", "object": "branch"}, {"name": "b", "class": "append"},
            {"name": "c", "class": "idempotent"}, {"name": "d", "class": "irreversible", "object": "release"},
            {"name": "e", "class": "irreversible", "keys": True}]
    off = {t["name"]: (t["keys"], t["approval"]) for t in workflow_data(rows, {"irreversible_keys": "off"})}
    on = {t["name"]: t["keys"] for t in workflow_data(rows, {"irreversible_keys": "on"})}
    assert off == {"a": (True, False), "b": (True, False), "c": (False, False), "d": (False, True), "e": (True, True)}
    assert on["d"] is True


def test_a_model_workflow_passes_the_fields_it_declares():
    """A model Workflow converts to plain data; every field a transition declares is kept (its timeout class
    included), and every other field takes its class's default."""
    assert [t["name"] for t in workflow_data(saga(), {})] == ["create_branch", "open_pr", "create_preview",
                                                               "publish_release"]
    assert workflow_data(generic(3), {})[2]["compensation"] == "undo_t3"

    declared = Workflow("declared", 1, (Transition("post_slack", "irreversible", "announcement", None, "post_slack",
                                                   (("keys", False), ("reconcile_by", "none"), ("timeout_s", 600.0))),))
    row = workflow_data(declared, {"irreversible_keys": "on"})[0]
    assert (row["keys"], row["reconcile_by"], row["timeout_s"], row["approval"]) == (False, "none", 600.0, True)


def test_a_bad_workflow_is_refused_with_the_reason():
    """An unknown class, an unknown saga name, a name twice."""
    with pytest.raises(ValueError, match="unknown class"):
        workflow_data([{"name": "a", "class": "teleport"}], {})
    with pytest.raises(ValueError, match="unknown saga transition 'nope'"):
        workflow_data(["open_pr", "nope"], {})
    with pytest.raises(ValueError, match="listed twice"):
        workflow_data(["open_pr", "open_pr"], {})


def test_protocols_come_as_strings_or_knobs():
    """A preset string resolves every knob (approval follows compensation); a dict overrides the defaults."""
    label, knobs = resolve_protocol("unkeyed-retry,compensation=off")
    assert (label, knobs["idempotency"], knobs["approval"]) == ("unkeyed-retry,compensation=off", "none", "off")
    assert resolve_protocol({"idempotency": "key"})[1]["reconcile"] == "on"


@pytest.mark.parametrize("fault, knobs, runtime, reason", [
    ("change_owner open_pr after_intent", {"lease_fence": "off"}, "dbos", "owner token"),
    ("zombie open_pr after_intent", {"lease_fence": "off"}, "temporal", "timed-out attempt"),
    ("change_owner open_pr after_intent", {}, "temporal", "no owner to move"),
    ("upgrade open_pr after_intent", {}, "dbos", "upgrade"),
    ("terminate open_pr after_intent", {"version_policy": "migrate"}, "dbos", "pinned"),
])
def test_what_a_runtime_cannot_express_is_not_applicable(fault, knobs, runtime, reason):
    """Each refusal names why; it is never a pass."""
    with pytest.raises(NotApplicable, match=reason):
        check_applicable(CellFault.parse(fault), {"lease_fence": "on", "version_policy": "pinned", **knobs}, runtime)


def test_a_fault_must_be_written_and_placed_as_the_harness_can_strike_it():
    """Three words; a known fault; a point it strikes at."""
    with pytest.raises(ValueError, match="FAULT TRANSITION BOUNDARY"):
        CellFault.parse("terminate open_pr")
    with pytest.raises(ValueError, match="strikes at after_commit"):
        check_applicable(CellFault.parse("lose_response open_pr after_intent"), {}, "dbos")
    with pytest.raises(ValueError, match="unknown fault"):
        check_applicable(CellFault.parse("meteor open_pr after_intent"), {}, "dbos")


SAGA_NAMES = ["create_branch", "open_pr", "create_preview", "publish_release"]


@pytest.mark.parametrize("faults, reason", [
    (["terminate open_pr after_commit", "duplicate open_pr after_receipt"], "two faults strike open_pr"),
    (["zombie create_branch after_commit", "terminate open_pr after_commit"], "a fault follows a zombie"),
    (["terminate open_pr after_commit", "slow_approval publish_release before_intent"], "slow_approval"),
])
def test_a_fault_list_the_harness_cannot_play_is_not_applicable(faults, reason):
    """One fault per transition, nothing after a zombie, and each fault one the harness can express."""
    with pytest.raises(NotApplicable, match=reason):
        check_order(tuple(CellFault.parse(f) for f in faults), {}, "dbos", SAGA_NAMES)


def test_a_fault_list_is_played_in_the_order_it_strikes():
    """Lists of faults on distinct transitions in workflow order are accepted; out of order, or naming no
    transition of the workflow, they are refused (a ValueError: the caller's mistake, not the runtime's)."""
    check_order((CellFault.parse("delay_ack create_branch before_intent"),
                 CellFault.parse("zombie publish_release after_commit")), {}, "dbos", SAGA_NAMES)
    with pytest.raises(ValueError, match="in the order they strike"):
        check_order((CellFault.parse("terminate open_pr after_commit"),
                     CellFault.parse("terminate create_branch after_commit")), {}, "dbos", SAGA_NAMES)
    with pytest.raises(ValueError, match="unknown transition"):
        check_order((CellFault.parse("terminate nowhere after_commit"),), {}, "dbos", SAGA_NAMES)


def test_a_runtime_that_is_missing_or_cannot_start_says_why_in_one_line(monkeypatch):
    """The reason the real tests skip with: the package absent, or present but failing to start."""
    import importlib.util
    import subprocess

    from sim.real.runtimes import processes

    monkeypatch.setattr(processes, "_PROBES", {})
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == "dbos" else real_find_spec(name))
    assert processes.runtime_unavailable("dbos") == "DBOS is not installed (dbos): pip install -e '.[real]'"
    monkeypatch.setattr(processes, "_PROBES", {})
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())
    monkeypatch.setattr(subprocess, "run", lambda command, **_: subprocess.CompletedProcess(
        command, 1, "", "Traceback (most recent call last):\nImportError: libsqlite3 is too old\n"))
    reason = processes.runtime_unavailable("dbos")
    assert reason == "DBOS cannot start here: -c import dbos: ImportError: libsqlite3 is too old"
    assert "\n" not in reason
