"""The reference Restate worker (the server from npm, on loopback, in the run's folder) under the same faults: a
killed worker's invocation is retried by the server at the deployment's address, where the successor replays the
journal; compared with the model, and the model's restate preset checked against it."""

from __future__ import annotations

import pytest

from sim.families.effects import cruel
from sim.families.effects.faults import FaultEvent
from sim.real.runtimes.harness import CellFault, NotApplicable, run_real_effects
from sim.real.runtimes.restate_server import restate_unavailable
from sim.registry import FAMILIES

RESTATE_UNAVAILABLE = restate_unavailable()
pytestmark = [pytest.mark.real,
              pytest.mark.skipif(RESTATE_UNAVAILABLE is not None, reason=str(RESTATE_UNAVAILABLE))]

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


def test_a_healthy_saga_on_restate():
    run = run_real_effects("saga", "keyed-fingerprint-reconcile", None, runtime="restate")
    assert run.kills == 0 and run.workers == ["w1"]
    assert [o["effect"] for o in run.objects] == ["branch#1", "pull_request#2", "preview#3", "release#4"]
    assert violated(run.history) == []


@pytest.mark.parametrize("protocol, expected", [("unkeyed-retry", 2), ("keyed-fingerprint-reconcile", 1),
                                                ("restate", 2), ("restate,idempotency=key", 1)])
def test_killed_after_the_pr_committed_restate_runs_the_step_again(protocol, expected):
    """SIGKILL at committed-no-receipt: the server retries the invocation at the deployment's address, the
    successor replays the journal and runs the call step again, in doubt: two PRs without a key, one with --
    the model's violations, under the seed's presets and under the model's restate preset alike."""
    fault = "terminate open_pr after_commit"
    run = run_real_effects("saga", protocol, fault, runtime="restate")
    assert run.kills == 1 and run.workers == ["w1", "w2"] and prs(run) == expected
    assert violated(run.history) == model_violations(protocol, fault)


@pytest.mark.parametrize("fault, reason", [("zombie open_pr after_intent", "frozen worker still holds it"),
                                           ("change_owner open_pr after_intent", "no owner to move")])
def test_what_restate_cannot_express_is_not_applicable(fault, reason):
    with pytest.raises(NotApplicable, match=reason):
        run_real_effects("saga", "keyed", fault, runtime="restate")
