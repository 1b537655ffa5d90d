"""The reference Temporal worker (a dev server on SQLite, offline) under the same faults: activity timeouts
are the lease; a frozen worker's stale attempt is cancelled or refused; compared with the model."""

from __future__ import annotations

import pytest

from sim.families.effects import cruel
from sim.families.effects.faults import FaultEvent
from sim.real.runtimes.harness import CellFault, NotApplicable, run_real_effects
from sim.real.runtimes.processes import runtime_unavailable
from sim.registry import FAMILIES

TEMPORAL_UNAVAILABLE = runtime_unavailable("temporal")
pytestmark = [pytest.mark.real,
              pytest.mark.skipif(TEMPORAL_UNAVAILABLE is not None, reason=str(TEMPORAL_UNAVAILABLE))]

EFFECTS = FAMILIES.get("effects")


def violated(history) -> list[str]:
    return sorted({v.invariant for v in EFFECTS.check(history).safety_violations})


def model_violations(protocol: str, fault: str) -> list[str]:
    cell = CellFault.parse(fault)
    replay = EFFECTS.replay(cruel.cruel_workload().base, EFFECTS.parse_protocol(protocol),
                            (FaultEvent(cell.fault, cell.transition, cell.boundary),))
    return violated(replay.history)


def prs(run) -> int:
    return sum(1 for o in run.objects if o["transition"] == "open_pr")


@pytest.mark.parametrize("protocol, expected", [("unkeyed-retry", 2), ("keyed-fingerprint-reconcile", 1)])
def test_killed_after_the_pr_committed_temporal_retries_the_attempt(protocol, expected):
    """SIGKILL at committed-no-receipt: the server times the attempt out and gives it to the next worker, which
    finds it in doubt: two PRs without a key, one with, and the model's violations."""
    fault = "terminate open_pr after_commit"
    run = run_real_effects("saga", protocol, fault, runtime="temporal")
    assert run.kills == 1 and prs(run) == expected
    assert violated(run.history) == model_violations(protocol, fault)


@pytest.mark.slow
def test_re_recording_on_temporal_gives_the_same_bytes():
    """Timeouts decide when, never what: the same cell twice, the same history."""
    first = run_real_effects("saga", "unkeyed-retry", "terminate open_pr after_commit", runtime="temporal")
    second = run_real_effects("saga", "unkeyed-retry", "terminate open_pr after_commit", runtime="temporal")
    assert first.history.to_jsonl() == second.history.to_jsonl()


@pytest.mark.slow
def test_a_frozen_worker_with_its_request_in_flight_is_replaced_and_its_effect_reconciled():
    """The zombie cell: frozen with the release's request at the Git host; the attempt's lease (its timeout)
    expires, the next worker reconciles and finds the release; the woken worker's completion goes nowhere.
    Slow (about 45 s): the frozen worker's outstanding polls still receive tasks, each costing its timeout."""
    fault = "zombie publish_release after_dispatch"
    run = run_real_effects("saga", "keyed-fingerprint-reconcile", fault, runtime="temporal")
    assert [o["effect"] for o in run.objects if o["transition"] == "publish_release"] == ["release#4"]
    assert violated(run.history) == model_violations("keyed-fingerprint-reconcile", fault) == []
    assert [e.actor for e in run.history if e.event == "task_terminal"] == ["w2"]


def test_change_owner_is_not_applicable_on_temporal():
    """Temporal has no owner to move; the lease ends by its timeout (the zombie cell)."""
    with pytest.raises(NotApplicable, match="no owner to move"):
        run_real_effects("saga", "keyed", "change_owner open_pr after_intent", runtime="temporal")
