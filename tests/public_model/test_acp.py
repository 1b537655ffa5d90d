"""A public model with several initial states (tlaplus/Examples' ACP_SB.tla, as a family): exhaustive search
counts its states as TLC does -- the vote vectors are its initial states, the place they are chosen from is
none -- and finds a planted bug, its order beginning where the run starts."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sim.core.errors import InputError
from sim.core.registry import Registry
from sim.registry import SHIPPED
from sim.search.exhaustive import ExploreOptions, explore
from sim.search.expansion import Expansion

sys.path.insert(0, str(Path(__file__).resolve().parent))
from acp_family import FAMILY, AcpFamily, AcpMachine, ac1_violated, ac2_violated, workload_text  # noqa: E402

#: tlaplus/Examples, specifications/acp/manifest.json, ACP_SB_TLC.cfg (participants = {p0, p1, p2}):
#: distinctStates and stateDepth (the levels of the search, the initial states' included).  Its totalStates
#: (TLC's states generated) is 218,352; this search generates 218,128 -- every guard that holds, in every state,
#: once per action and participant, which a plain breadth-first search of the same guards counts too
#: (``benchmarks/bench_checker.py``): where TLC's 224 more come from is not known here.
MANIFEST = {"distinctStates": 54_944, "stateDepth": 21}


@pytest.fixture(scope="module")
def workload(tmp_path_factory):
    path = tmp_path_factory.mktemp("acp") / "acp-3.toml"
    path.write_text(workload_text(3), encoding="utf-8")
    return Registry((*SHIPPED, FAMILY)).load_workload(str(path))


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_the_search_counts_what_tlc_counts_with_eight_initial_states(workload):
    """54,944 distinct states over 21 levels, the first of them the 8 vote vectors; AC1 and AC2 hold."""
    result = explore(FAMILY, workload, FAMILY.parse_protocol("spec"), ExploreOptions(max_events=None, sleep=False))
    assert (result.distinct_states, result.diameter + 1) == tuple(MANIFEST.values())
    assert result.states_per_depth[:2] == [8, 56] and sum(result.states_per_depth) == result.distinct_states
    assert result.exhausted and set(result.proved_absent) == {"ac1", "ac2"}
    assert result.states_generated == 218_128


def test_the_place_the_initial_states_are_chosen_from_is_no_state(workload):
    """One event deep: the 8 initial states and the 56 states one event after them; nothing for initial()."""
    result = explore(FAMILY, workload, FAMILY.parse_protocol("spec"), ExploreOptions(max_events=1))
    assert (result.states_per_depth, result.distinct_states) == ([8, 56], 64)
    assert result.states_generated == 8 + 56  # every successor of an initial state is new here


def test_a_planted_bug_is_found_with_its_starting_event_first(workload):
    """Commit once any vote is yes: AC2 breaks 12 events after the start, and the order says which start."""
    protocol = FAMILY.parse_protocol("spec,decide=any_yes")
    result = explore(FAMILY, workload, protocol, ExploreOptions(max_events=12))
    assert result.shortest["ac2"] == 12
    order = result.minimal_orders["ac2"][0]
    assert len(order) == 13 and order[0].kind == "Init" and "no" in order[0].votes
    replay = FAMILY.replay(workload.base, protocol, order)
    assert not replay.skipped and ac2_violated(replay.state)
    assert FAMILY.check(replay.history).safety_violations[0].invariant == "ac2"


class EagerCoordinator(AcpMachine):
    """A coordinator that may die before Init: an event other than a start is enabled where starts are chosen."""

    def _enabled(self, state, event):
        return (state.coordinator is None and event.kind == "coordDie") or super()._enabled(state, event)


class EagerFamily(AcpFamily):
    def machine(self, scenario, protocol):
        return EagerCoordinator(scenario.participants, False)


def test_an_event_that_is_no_start_enabled_before_the_start_is_refused(workload):
    """The count would be wrong (a state TLC never has): the search says which event, in one line."""
    with pytest.raises(InputError, match="only starting events may happen in a machine's initial.. state.*coordDie"):
        explore(EagerFamily(), workload, FAMILY.parse_protocol("spec"), ExploreOptions(max_events=2))


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_the_family_keeps_every_law_that_applies(tmp_path):
    """Two participants: its Next in one call (successors) agrees with its guard and advance, among the rest."""
    from sim.testing import check_family

    path = tmp_path / "acp-2.toml"
    path.write_text(workload_text(2), encoding="utf-8")
    loaded = Registry((*SHIPPED, FAMILY)).load_workload(str(path))
    outcome = check_family(FAMILY, loaded, examples=20)
    assert all(outcome[law] == "held" for law in ("deterministic", "deletion", "machine_replay", "enabled_exact",
                                                   "state_invariants", "equal_keys_equal_futures", "parse_event"))


class WrongNext(AcpMachine):
    """A Next in one call that forgets parDie: its successors() disagree with its guard."""

    def successors(self, state, events):
        return [(i, after) for i, after in super().successors(state, events) if events[i].kind != "parDie"]


class WrongNextFamily(AcpFamily):
    def machine(self, scenario, protocol):
        return WrongNext(scenario.participants, False)


def test_a_next_that_disagrees_with_the_guards_breaks_a_law(tmp_path):
    from sim.testing import LawBroken, check_family

    path = tmp_path / "acp-2.toml"
    path.write_text(workload_text(2), encoding="utf-8")
    loaded = Registry((*SHIPPED, FAMILY)).load_workload(str(path))
    with pytest.raises(LawBroken, match="successors"):
        check_family(WrongNextFamily(), loaded, laws=["enabled_exact"], examples=10)


@pytest.mark.slow  # a subprocess: outside the fast lane
def test_a_spec_with_no_knob_and_no_fault_needs_neither(tmp_path):
    """A family with no knob and no fault class: its workload has no [faults] section, and `fencesim explore`
    searches it to the end from the command line (the family named by FENCESIM_FAMILIES)."""
    import json
    import os
    import subprocess

    path = tmp_path / "acp.toml"
    path.write_text('format = 1\nfamily = "acp-bare"\nname = "acp-2"\nparticipants = 2\n', encoding="utf-8")
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, FENCESIM_FAMILIES="acp_family:BARE_FAMILY",
               PYTHONPATH=os.pathsep.join([str(root), str(Path(__file__).resolve().parent)]))
    done = subprocess.run([sys.executable, "-c", "import sys; from sim.entry import main; main()", "explore",
                           "-w", str(path), "-p", "spec", "--depth", "max", "--json"],
                          capture_output=True, text=True, env=env, cwd=root, timeout=300)
    assert done.returncode == 0, done.stderr
    (result,) = json.loads(done.stdout)["protocols"]
    assert result["end"] == "exhausted" and sorted(result["proved_absent"]) == ["ac1", "ac2"]
    assert "its 4 initial states included" in done.stderr


def _violating_by_hand(participants: int, bugged: bool) -> tuple[int, int]:
    """(distinct states, those violating AC1 or AC2) by a plain breadth-first search of the machine's own
    ``successors``, the initial states those of the starting events."""
    machine = AcpMachine(participants, bugged)
    alphabet = FAMILY.alphabet(type("W", (), {"base": type("S", (), {"participants": participants})})())
    seen = {state for _, state in machine.successors(machine.initial(), alphabet)}
    frontier = list(seen)
    while frontier:
        found = [after for state in frontier for _, after in machine.successors(state, alphabet)]
        frontier = [after for after in dict.fromkeys(found) if after not in seen]
        seen.update(frontier)
    return len(seen), sum(1 for state in seen if ac1_violated(state) or ac2_violated(state))


@pytest.mark.slow  # over 3 s: outside the fast lane
@pytest.mark.parametrize("fused", [True, False], ids=["fused", "per-successor"])
def test_violating_states_are_counted_with_the_rest_and_reported_apart(workload, monkeypatch, fused):
    """With the planted bug, the states that violate an invariant are among the distinct states (TLC counts
    them too, stopping at the first) and are reported apart: as many as a plain search of the spec counts."""
    if not fused:  # every layer expanded through the per-successor loop
        monkeypatch.setattr(Expansion, "fusable", property(lambda self: False))
    protocol = FAMILY.parse_protocol("spec,decide=any_yes")
    result = explore(FAMILY, workload, protocol, ExploreOptions(max_events=None))
    distinct, violating = _violating_by_hand(3, True)
    assert (result.distinct_states, result.violating_states) == (distinct, violating)
    assert 0 < violating < distinct and result.to_json()["violating_states"] == violating
    clean = explore(FAMILY, workload, FAMILY.parse_protocol("spec"), ExploreOptions(max_events=None))
    assert clean.violating_states == 0 and clean.distinct_states == MANIFEST["distinctStates"]


def test_a_search_whose_layers_are_rebuilt_by_order_finds_the_same(workload, monkeypatch):
    """A machine that asks for its encoded entries to be rebuilt by order (``rebuilt_by_order``), with the default
    ``along`` (``advance`` each event of the path, the starting event first): the same search as with every
    layer kept as objects."""
    from sim.search import layers

    protocol = FAMILY.parse_protocol("spec")
    options = ExploreOptions(max_events=8, memory_limit=1 << 42)
    plain = explore(FAMILY, workload, protocol, options).to_json()
    grown: list[int] = []
    monkeypatch.setattr(AcpMachine, "rebuilt_by_order", True, raising=False)
    decoded = layers._decoded
    monkeypatch.setattr(layers, "_decoded", lambda blob, entries, codec=None: grown.append(entries * (
        codec is not None)) or decoded(blob, entries, codec))
    monkeypatch.setattr(layers, "MEMORY_CHECK_EVERY", 16)
    monkeypatch.setattr(layers, "resident_bytes", lambda: 1 << 35)  # past every layer's encode mark
    assert explore(FAMILY, workload, protocol, options).to_json() == plain
    assert sum(grown) > 1000
