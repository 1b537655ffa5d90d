"""The one way the search runs an order (sim.search.oracle): evaluate, and the cached, bounded Oracle."""

from __future__ import annotations

import functools

import sim
from sim.families.workspace import FAMILY
from sim.families.workspace.scenario import parse_action
from sim.search.oracle import Oracle, evaluate


@functools.cache
def _tiny():
    return sim.load_workload("tiny")


def _events(*texts):
    base = _tiny().base
    return tuple(parse_action(t, base.files, base.step_ids()) for t in texts)


LOST = ("deliver s1", "plan", "dispatch s1", "human_edit app.py", "deliver s1")


def test_evaluate_replays_checks_and_names_the_violated_invariants():
    """evaluate gives the replay, the check report and the safety invariants violated, in check order."""
    result = evaluate(FAMILY, _tiny().base, FAMILY.parse_protocol("none"), _events(*LOST))
    assert result.violated == ("lost_update",)
    assert [str(e) for e in result.valid_order] == list(LOST[1:])
    assert result.report.status()["lost_update"] == "violated"


def test_evaluate_runs_only_the_named_checks():
    """With only=, evaluate runs just those checks."""
    result = evaluate(FAMILY, _tiny().base, FAMILY.parse_protocol("none"), _events(*LOST), ("duplicate_effect",))
    assert result.violated == () and list(result.report.status()) == ["duplicate_effect"]


def test_oracle_answers_with_the_valid_order_or_none_and_caches():
    """The oracle returns the valid order of a violating order (None otherwise) and replays each text once."""
    oracle = Oracle(FAMILY, _tiny().base, FAMILY.parse_protocol("none"), "lost_update", max_replays=10)
    assert [str(e) for e in oracle(_events(*LOST))] == list(LOST[1:])
    assert oracle(_events("plan", "dispatch s1", "deliver s1")) is None
    oracle(_events(*LOST))
    assert oracle.replays == 2 and not oracle.exhausted()


def test_oracle_is_exhausted_at_its_replay_limit():
    """After max_replays distinct orders the oracle says it is exhausted."""
    oracle = Oracle(FAMILY, _tiny().base, FAMILY.parse_protocol("none"), "lost_update", max_replays=2)
    oracle(_events("plan"))
    oracle(_events("plan", "dispatch s1"))
    assert oracle.exhausted()
