"""An invariant of steps, as TLA+'s action properties (``[][A]_vars``): a check's ``transition`` predicate on
(before, after), judged by exhaustive search on every step it takes -- into a new state or one already seen --
with no history record, and held by the law ``state_invariants`` to the check it stands for.

The property, on TwoPhase.tla: a resource manager that has decided (committed or aborted) never changes its
mind.  Under the spec it holds; with the coordinator committing before every RM prepared (``commit=any``), an
RM that chose to abort later receives the commit and takes it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sim.core.checks import CheckSpec, Fold, Violation
from sim.core.registry import Registry
from sim.registry import SHIPPED
from sim.search.exhaustive import ExploreOptions, explore
from sim.search.expansion import Expansion

sys.path.insert(0, str(Path(__file__).resolve().parent))
from two_phase_family import TwoPhaseFamily, TwoPhaseMachine, workload_text  # noqa: E402

DECIDED = ("committed", "aborted")


def changed_its_mind(before, after) -> bool:
    """Some RM decided before the step and holds another state after it."""
    return any(old in DECIDED and new != old for old, new in zip(before.rm_state, after.rm_state))


def _steady_feed(carry, event):
    """The same over the history: each record carries every RM's state after its step."""
    now = tuple(event.get("rm_state") or ())
    before = carry if carry is not None else ("working",) * len(now)
    if any(old in DECIDED and new != old for old, new in zip(before, now)):
        return now, (Violation("steady", event.index, None, "a decided RM changed its state"),)
    return now, ()


class SteadyFamily(TwoPhaseFamily):
    """TwoPhase with one more safety check, on steps only (no state predicate)."""

    checks = (*TwoPhaseFamily.checks,
              CheckSpec("steady", Fold("steady", None, _steady_feed), True, "a decided RM stays decided",
                        transition=changed_its_mind))


class Forgetful(SteadyFamily):
    """A step predicate that misses what its history check finds (it looks at committed RMs only)."""

    checks = (*TwoPhaseFamily.checks,
              CheckSpec("steady", Fold("steady", None, _steady_feed), True, "a decided RM stays decided",
                        transition=lambda before, after: any(
                            old == "committed" != new for old, new in zip(before.rm_state, after.rm_state))))


FAMILY = SteadyFamily()


def _workload(tmp_path: Path, count: int):
    path = tmp_path / f"two-phase-{count}.toml"
    path.write_text(workload_text([f"r{i}" for i in range(1, count + 1)]), encoding="utf-8")
    return Registry((*SHIPPED, FAMILY)).load_workload(str(path))


def _shortest_by_hand(rms: int, any_commit: bool) -> int | None:
    """The fewest events before a step that changes a decided RM's mind: a plain breadth-first search of the
    machine, asking the predicate of every step (None: no step does)."""
    machine = TwoPhaseMachine(tuple(f"r{i}" for i in range(1, rms + 1)), any_commit)
    alphabet = FAMILY.alphabet(type("W", (), {"base": type("S", (), {"rms": list(machine.rms)})})())
    frontier, seen, depth = [machine.initial()], {machine.initial()}, 0
    while frontier:
        depth += 1
        following = []
        for state in frontier:
            for event in alphabet:
                if machine.why_not(state, event) is not None:
                    continue
                after = machine.advance(state, event)
                if changed_its_mind(state, after):
                    return depth
                if after not in seen:
                    seen.add(after)
                    following.append(after)
        frontier = following
    return None


def test_a_step_invariant_that_holds_is_proved_on_the_fast_path(tmp_path):
    """Under the spec the search is judged by predicates alone (no history record), proves the step invariant
    absent at every depth and counts what TLC counts: the check changes no state."""
    workload = _workload(tmp_path, 3)
    protocol = FAMILY.parse_protocol("spec")
    assert Expansion(FAMILY, workload, protocol, FAMILY.alphabet(workload), accelerate=True,
                     canonical=None).mode == "states"
    result = explore(FAMILY, workload, protocol, ExploreOptions(max_events=None))
    assert result.exhausted and result.distinct_states == 288
    assert set(result.proved_absent) == {"type_ok", "consistent", "steady"}


@pytest.mark.parametrize("sleep", [True, False], ids=["sleep-sets", "no-sleep"])
def test_a_step_into_a_state_already_seen_is_judged_and_its_order_replays(tmp_path, sleep):
    """With commit=any the step invariant breaks at the depth a plain search of the steps finds, and the order
    found shows the violation when replayed and judged by the history check."""
    workload = _workload(tmp_path, 3)
    protocol = FAMILY.parse_protocol("spec,commit=any")
    result = explore(FAMILY, workload, protocol, ExploreOptions(max_events=None, sleep=sleep))
    assert result.shortest["steady"] == _shortest_by_hand(3, True) == 3  # commit, an RM aborts, it takes the commit
    for order in result.minimal_orders["steady"]:
        replay = FAMILY.replay(workload.base, protocol, order)
        assert not replay.skipped
        assert "steady" in {v.invariant for v in FAMILY.check(replay.history).safety_violations}
        machine = FAMILY.machine(workload.base, protocol)
        assert changed_its_mind(machine.state_after(order[:-1]), replay.state)


def test_the_law_holds_a_step_predicate_to_its_history_check(tmp_path):
    """state_invariants holds for the step predicate that says what its check says, and breaks, naming the
    check, for one that misses a case."""
    from sim.testing import LawBroken, check_family

    workload = _workload(tmp_path, 2)
    outcome = check_family(FAMILY, workload, ["spec,commit=any"], laws=["state_invariants"], examples=10,
                           footprint_depth=4)
    assert outcome == {"state_invariants": "held"}
    with pytest.raises(LawBroken, match="steady"):
        check_family(Forgetful(), workload, ["spec,commit=any"], laws=["state_invariants"], examples=10,
                           footprint_depth=4)



@pytest.mark.parametrize("options", [{}, {"reduce": True}, {"sleep": False}],
                         ids=["sleep-sets", "persistent-sets", "every-order"])
def test_a_step_of_an_independent_event_is_taken_and_judged(tmp_path, options):
    """Dec and Freeze are independent by their footprints, and the step invariant is broken by Dec after
    Freeze: every way of searching finds it in 3 events (a sleep set would skip that step, and prove the
    invariant absent), and the search says it was not reduced."""
    from freeze_counter_family import FAMILY as COUNTER
    from freeze_counter_family import WORKLOAD

    path = tmp_path / "counter.toml"
    path.write_text(WORKLOAD, encoding="utf-8")
    workload = Registry((*SHIPPED, COUNTER)).load_workload(str(path))
    result = explore(COUNTER, workload, COUNTER.parse_protocol("spec,dec=on"),
                     ExploreOptions(max_events=None, **options))
    assert result.shortest == {"frozen_monotone": 3} and not result.reduced
    assert [str(e) for e in result.minimal_orders["frozen_monotone"][0]] == ["Inc", "Freeze", "Dec"]
    assert explore(COUNTER, workload, COUNTER.parse_protocol("spec"), ExploreOptions(max_events=None)).proved_absent \
        == ["frozen_monotone"]


class OneParameter(SteadyFamily):
    checks = (*TwoPhaseFamily.checks,
              CheckSpec("steady", Fold("steady", None, _steady_feed), True, "a decided RM stays decided",
                        transition=lambda after: False))


def test_a_step_predicate_that_takes_one_state_is_refused_in_one_line(tmp_path):
    from sim.core.errors import InputError

    with pytest.raises(InputError, match=r"check 'steady': transition= must take \(before, after\)"):
        explore(OneParameter(), _workload(tmp_path, 2), FAMILY.parse_protocol("spec"), ExploreOptions(max_events=2))


def test_the_law_names_the_invariant_two_independent_events_disagree_on(tmp_path):
    """The freeze counter's footprints make Dec and Freeze independent, but the step invariant tells their
    orders apart: the law says which order violates what, and what to declare."""
    from freeze_counter_family import FAMILY as COUNTER
    from freeze_counter_family import WORKLOAD

    from sim.testing import LawBroken, check_family

    path = tmp_path / "counter.toml"
    path.write_text(WORKLOAD, encoding="utf-8")
    workload = Registry((*SHIPPED, COUNTER)).load_workload(str(path))
    with pytest.raises(LawBroken, match=r"Dec ; Freeze violates nothing and Freeze ; Dec frozen_monotone.*declare"):
        check_family(COUNTER, workload, ["spec,dec=on"], laws=["independent_commute"], examples=10)
