"""A public model nobody here wrote (tlaplus/Examples' TwoPhase.tla, as a family): exhaustive search counts what
TLC counts, proves what TLC proves, and finds a planted bug at its proved-shortest length."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sim.core.registry import Registry
from sim.registry import SHIPPED
from sim.search.exhaustive import ExploreOptions, explore
from sim.testing import LAWS, check_family

sys.path.insert(0, str(Path(__file__).resolve().parent))
from two_phase_family import FAMILY, TwoPhaseMachine, inconsistent, workload_text  # noqa: E402

#: The manifest of tlaplus/Examples (specifications/transaction_commit/manifest.json) for TwoPhase.cfg,
#: RM = {r1, r2, r3}: distinctStates, totalStates (TLC's states generated) and stateDepth (levels of the search,
#: the initial one included: the diameter plus one).  The spec's own comment gives 50,816 states for six RMs.
MANIFEST = {"distinctStates": 288, "totalStates": 1146, "stateDepth": 11}
SIX_RMS_STATES = 50_816


def _workload(tmp_path: Path, count: int):
    path = tmp_path / f"two-phase-{count}.toml"
    path.write_text(workload_text([f"r{i}" for i in range(1, count + 1)]), encoding="utf-8")
    return Registry((*SHIPPED, FAMILY)).load_workload(str(path))


def test_the_search_counts_what_tlc_counts_on_the_published_model(tmp_path):
    """Every event tried in every state (as TLC does): 288 distinct states, 1,146 generated, depth 11,
    exhausted, both invariants proved at every depth."""
    result = explore(FAMILY, _workload(tmp_path, 3), FAMILY.parse_protocol("spec"),
                     ExploreOptions(max_events=None, sleep=False))
    assert (result.distinct_states, result.states_generated, result.diameter + 1) == tuple(MANIFEST.values())
    assert result.exhausted and result.complete and set(result.proved_absent) == {"type_ok", "consistent"}
    assert result.to_json()["proved_within_events"] == "all"
    assert sum(result.states_per_depth) == result.distinct_states


def test_sleep_sets_keep_every_state_and_generate_fewer(tmp_path):
    """With sleep sets (the default) the same states and proofs, fewer states generated."""
    workload = _workload(tmp_path, 3)
    every = explore(FAMILY, workload, FAMILY.parse_protocol("spec"), ExploreOptions(max_events=None, sleep=False))
    asleep = explore(FAMILY, workload, FAMILY.parse_protocol("spec"), ExploreOptions(max_events=None))
    assert (asleep.distinct_states, asleep.states_per_depth, asleep.proved_absent) == (
        every.distinct_states, every.states_per_depth, every.proved_absent)
    assert asleep.states_generated < every.states_generated and asleep.pruned > 0


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_six_resource_managers_have_the_spec_s_50816_states(tmp_path):
    """The spec's own figure for six RMs, with its 20 levels (no fixed depth cap stops it)."""
    result = explore(FAMILY, _workload(tmp_path, 6), FAMILY.parse_protocol("spec"), ExploreOptions(max_events=None))
    assert (result.distinct_states, result.diameter + 1, result.exhausted) == (SIX_RMS_STATES, 20, True)


def _shortest_violation_by_hand(rms: tuple[str, ...], alphabet: list) -> int:
    """A breadth-first search written here, apart from the engine: the fewest events to an inconsistent state."""
    machine = TwoPhaseMachine(rms, any_commit=True)
    frontier, seen, depth = [machine.initial()], {machine.initial()}, 0
    while frontier:
        if any(inconsistent(state) for state in frontier):
            return depth
        depth += 1
        nxt = []
        for state in frontier:
            for event in alphabet:
                if machine.why_not(state, event) is None:
                    after = machine.advance(state, event)
                    if after not in seen:
                        seen.add(after)
                        nxt.append(after)
        frontier = nxt
    raise AssertionError("the planted bug is never reachable")


def test_a_planted_bug_is_found_at_its_proved_shortest_length_and_replays(tmp_path):
    """TMCommit without every RM prepared: the consistency violation is found at the length an independent
    search proves shortest (3: RMChooseToAbort, TMCommit, RMRcvCommitMsg), and each order replays to it."""
    workload = _workload(tmp_path, 3)
    bugged = FAMILY.parse_protocol("commit=any")
    result = explore(FAMILY, workload, bugged, ExploreOptions(max_events=None))
    assert _shortest_violation_by_hand(("r1", "r2", "r3"), FAMILY.alphabet(workload)) == 3
    assert result.shortest == {"consistent": 3}
    for order in result.minimal_orders["consistent"]:
        replay = FAMILY.replay(workload.base, bugged, order)
        found = {v.invariant for v in FAMILY.check(replay.history).safety_violations}
        assert not replay.skipped and "consistent" in found
    assert result.proved_absent == ["type_ok"] and result.exhausted


def test_persistent_sets_and_symmetry_prove_the_same(tmp_path):
    """--reduce and --symmetry exhaust the states too, with the same proofs and the same shortest length."""
    workload = _workload(tmp_path, 4)
    for label in ("spec", "commit=any"):
        plain = explore(FAMILY, workload, FAMILY.parse_protocol(label), ExploreOptions(max_events=None))
        for asked in (ExploreOptions(max_events=None, reduce=True), ExploreOptions(max_events=None, symmetry=True)):
            reduced = explore(FAMILY, workload, FAMILY.parse_protocol(label), asked)
            assert reduced.exhausted and reduced.proved_absent == plain.proved_absent
            assert reduced.shortest == plain.shortest and reduced.distinct_states <= plain.distinct_states


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_the_family_keeps_every_law(tmp_path):
    """Written against the contract by transcribing a spec, the family keeps every law, its state predicates
    and footprints included."""
    outcome = check_family(FAMILY, _workload(tmp_path, 3), examples=30)
    assert outcome == dict.fromkeys(LAWS, "held")


class WrongDisabler(TwoPhaseMachine):
    """Planted: TMCommit is said to wait on tmState alone, though the Prepared messages enable it."""

    def disabled_by(self, state, event):
        if event.kind == "TMCommit":
            return [("tm_state", None)]
        return super().disabled_by(state, event)


class WrongDisablerFamily(type(FAMILY)):  # type: ignore[misc]
    def machine(self, scenario, protocol):
        return WrongDisabler(tuple(scenario.rms), False)


def test_a_wrong_disabled_by_breaks_the_footprint_law(tmp_path):
    """Persistent sets grow from disabled_by: a machine that names the wrong part is refused, with the event
    that enables what it said could not be."""
    from sim.testing import LawBroken

    with pytest.raises(LawBroken) as broken:
        check_family(WrongDisablerFamily(), _workload(tmp_path, 2), ["spec"], laws=["footprint"])
    assert "enables TMCommit" in str(broken.value) and "TMRcvPrepared" in str(broken.value)
