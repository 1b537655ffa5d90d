"""The effects family's machine against the replay of fault lists: the same runs, byte for byte.

Every state the machine (:mod:`sim.families.effects.machine`) reaches within a depth is the run a replay of
its order gives, and every order a replay fires wholly is reached by the machine, in the order its faults
strike.  (The kernel both run on is pinned to the SimPy driver it replaced:
``test_effects_kernel_pinned.py``.)
"""

from __future__ import annotations

import itertools

import pytest

import sim
from sim.families.effects import FAMILY

WORKLOADS = ("agent-pr-workflow", "effects-pr", "effects-release", "effects-saga", "effects-zombie",
             "notify-after-create", "pinned-dependencies", "usage-charge")
PROTOCOLS = ("unkeyed-retry", "keyed", "keyed-reconcile", "keyed-fingerprint-reconcile", "temporal", "dbos",
             "restate", "keyed-fingerprint-reconcile,lease_fence=off")


def _reachable(machine, events, depth: int):
    """Every state the machine reaches within ``depth`` faults, with the order that reached it (breadth first)."""
    layer = [((), machine.initial())]
    out = list(layer)
    for _ in range(depth):
        following = []
        for order, state in layer:
            for position in machine.enabled(state, events):
                following.append((order + (events[position],), machine.advance(state, events[position])))
        out += following
        layer = following
    return out


def _records(history) -> str:
    """A history's records, written out: ``repr`` tells apart all that its JSON lines do (1 from True and 1.0,
    a list from a tuple) and the fields' order too, at a fraction of the cost."""
    return repr([(e.index, e.time, e.actor, e.event, e.fields) for e in history])


def _machine_is_replay(workload: str, label: str, depth: int) -> int:
    loaded = sim.load_workload(workload)
    protocol = FAMILY.parse_protocol(label)
    machine = FAMILY.machine(loaded.base, protocol)
    events = FAMILY.alphabet(loaded)
    states = _reachable(machine, events, depth)
    for order, state in states:
        replay = FAMILY.replay(loaded.base, protocol, order)
        completion = machine.completion(state)
        where = f"{workload} under {label}: {[str(e) for e in order]}"
        assert _records(completion.rt.history) == _records(replay.history), where
        assert completion.rt.verdicts == FAMILY.verdicts(replay), where
        assert not replay.skipped, f"{where}: the machine took a fault the replay did not fire"
        assert machine.judge(state, False) == {v.invariant for v in FAMILY.check(replay.history).safety_violations}
    return len(states)


@pytest.mark.parametrize("workload", WORKLOADS)
def test_every_state_of_one_fault_is_the_replay_of_its_order(workload):
    for label in PROTOCOLS:
        assert _machine_is_replay(workload, label, 1) > 1


@pytest.mark.slow
@pytest.mark.parametrize("workload, label", [("effects-saga", "keyed-fingerprint-reconcile"),
                                             ("agent-pr-workflow", "temporal"),
                                             ("effects-zombie", "unkeyed-retry"), ("effects-zombie", "keyed"),
                                             ("usage-charge", "keyed-reconcile"), ("usage-charge", "unkeyed-retry")])
def test_every_state_of_two_faults_is_the_replay_of_its_order(workload, label):
    """Depth 2 (about 9,000 states for the saga, about 1.5 minutes): every state, replayed.  Depth 3 is out of a
    test's time (several hundred thousand states); the benchmark runs it."""
    _machine_is_replay(workload, label, 2)


def _rebuilt_apart(workload: str, label: str, depth: int, parents: int = 40) -> list[list[str]]:
    """The orders of at most ``depth`` faults (from the first ``parents`` states of each depth) whose state
    :meth:`~sim.families.effects.machine.EffectsMachine.along` rebuilds from the initial state in one pass with
    another key or history than the state ``advance`` reached fault by fault (what a search's encoded layer
    reads back)."""
    loaded = sim.load_workload(workload)
    machine = FAMILY.machine(loaded.base, FAMILY.parse_protocol(label))
    events = FAMILY.alphabet(loaded)
    root = machine.initial()
    layer, apart = [((), root)], []
    for _ in range(depth):
        following = []
        for order, state in layer[:parents]:
            for position in machine.enabled(state, events):
                path, after = order + (events[position],), machine.advance(state, events[position])
                again = machine.along(root, path)
                if machine.key(again) != machine.key(after) or _records(again.rt.history) != _records(
                        after.rt.history):
                    apart.append([str(event) for event in path])
                following.append((path, after))
        layer = following
    return apart


@pytest.mark.parametrize("workload", WORKLOADS)
def test_a_state_rebuilt_along_its_order_is_the_state_the_search_reached(workload):
    """Every state of one fault, and of two faults after the first parents, under every protocol: rebuilt along
    its order in one pass, it has the key and the history of the state reached fault by fault."""
    for label in PROTOCOLS:
        assert _rebuilt_apart(workload, label, 2, parents=1 if label != "keyed" else 6) == [], label


def test_a_rebuilt_state_that_forgets_the_boundaries_passed_is_caught(monkeypatch):
    """Planted: the rebuilt state forgets the boundaries its run passed (a fault there could strike again)."""
    from sim.families.effects.machine import EffectsMachine

    strike = EffectsMachine._first_strike

    def forgetful(self, state, event):
        after = strike(self, state, event)
        after.popped, after._key = frozenset(), None
        return after

    monkeypatch.setattr(EffectsMachine, "_first_strike", forgetful)
    assert _rebuilt_apart("effects-saga", "keyed", 1)


def _fired_orders_reached(workload: str, label: str, length: int) -> int:
    """Every order of ``length`` faults whose replay fires them all: the machine reaches the same run by the
    same faults in some order (the order they strike in)."""
    loaded = sim.load_workload(workload)
    protocol = FAMILY.parse_protocol(label)
    machine = FAMILY.machine(loaded.base, protocol)
    events = FAMILY.alphabet(loaded)
    checked = 0
    for order in itertools.product(events, repeat=length):
        replay = FAMILY.replay(loaded.base, protocol, order)
        if replay.skipped:
            continue
        reached = []
        for permutation in set(itertools.permutations(order)):
            state = machine.initial()
            for event in permutation:
                if machine.why_not(state, event) is not None:
                    break
                state = machine.advance(state, event)
            else:
                reached.append(machine.completion(state).rt.history.to_jsonl())
        assert replay.history.to_jsonl() in reached, f"{workload} under {label}: {[str(e) for e in order]}"
        checked += 1
    return checked


@pytest.mark.parametrize("workload", ("effects-pr", "effects-release", "notify-after-create"))
def test_every_fired_fault_is_reached_by_the_machine(workload):
    assert _fired_orders_reached(workload, "keyed-fingerprint-reconcile", 1) > 0


@pytest.mark.slow
@pytest.mark.parametrize("workload", ("effects-pr", "effects-release"))
def test_every_fired_pair_is_reached_by_the_machine(workload):
    """Every ordered pair of the alphabet that a replay fires wholly."""
    assert _fired_orders_reached(workload, "keyed-fingerprint-reconcile", 2) > 0


def test_a_fault_whose_point_passed_is_refused_with_its_reason():
    loaded = sim.load_workload("effects-pr")
    machine = FAMILY.machine(loaded.base, FAMILY.parse_protocol("keyed"))
    events = FAMILY.alphabet(loaded)
    late = next(e for e in events if e.point == "after_receipt")
    early = next(e for e in events if e.point == "before_intent" and e.fault == "terminate")
    state = machine.advance(machine.initial(), late)
    assert "has passed" in (machine.why_not(state, early) or "")


def test_a_script_has_no_machine():
    story = sim.load_scenario("scenarios/runtime/pr_lost_response.toml")
    assert FAMILY.machine(story, FAMILY.parse_protocol("keyed")) is None


@pytest.mark.slow
def test_the_search_is_the_same_whatever_the_hash_seed_and_the_workers():
    """Keys are digests of plain values (no set's order, no hash in them): the same states, counts and orders in
    processes with other hash seeds, on one worker or two."""
    import json
    import os
    import subprocess
    import sys

    code = ("import json, sys, sim; from sim.search.exhaustive import ExploreOptions, explore; "
            "f = sim.family('effects'); r = explore(f, sim.load_workload('effects-pr'), f.parse_protocol('keyed'), "
            "ExploreOptions(max_events=2, workers=int(sys.argv[1]))); "
            "print(json.dumps(r.to_json(), sort_keys=True))")
    outputs = set()
    for seed, workers in (("1", "1"), ("2", "2"), ("3", "1")):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        done = subprocess.run([sys.executable, "-c", code, workers], capture_output=True, text=True, env=env,
                              check=True)
        outputs.add(done.stdout)
    assert len(outputs) == 1
    assert json.loads(outputs.pop())["distinct_states"] > 100


def test_a_path_listed_in_any_order_reaches_its_replays_run():
    """A fault list as a user or a sweep writes it (sorted by transition, so a compensation's fault comes before
    the failure that makes it run): the machine's state after it is its replay's run (serve starts there)."""
    from sim.families.effects.faults import FaultEvent

    loaded = sim.load_workload("effects-saga")
    protocol = FAMILY.parse_protocol("keyed-fingerprint-reconcile")
    machine = FAMILY.machine(loaded.base, protocol)
    order = (FaultEvent("compensation_fails", "create_branch", "compensate"),
             FaultEvent("postcondition_fails", "create_preview", "after_receipt"))
    assert machine.why_not(machine.initial(), order[0]) is not None  # no compensation in the fault-free run
    replay = FAMILY.replay(loaded.base, protocol, order)
    assert not replay.skipped
    state = machine.state_after(order)
    assert machine.completion(state).rt.history.to_jsonl() == replay.history.to_jsonl()


def test_a_state_digest_tells_apart_what_repr_does_and_nothing_else():
    """The bytes a state's key and history digest hash: 1, 1.0 and True, a list and a tuple, two orders of a dict
    are told apart; two equal values built of different objects (a string shared or copied) are not, and a value
    marshal cannot write is still written."""
    from sim.families.effects.machine import _encoded

    told_apart = [1, 1.0, True, (1,), [1], "1", b"1", None, {"a": 1, "b": 2}, {"b": 2, "a": 1}]
    assert len({_encoded(value) for value in told_apart}) == len(told_apart)
    word = "".join(["fen", "ce"])  # strings of their own: one object met three times, against three objects
    one, two, three = ("".join(["fen", "ce"]) for _ in range(3))
    shared, copied = (word, word, (word,)), (one, two, (three,))
    assert _encoded(shared) == _encoded(copied)
    assert _encoded((FAMILY,)) == _encoded((FAMILY,)) != _encoded(("x",))
