"""The family law suite (``sim.testing.check_family``) holds for the three families and fails on planted bugs:
an unsound state key, and a guard that exhaustive search would get wrong."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sim.families.workspace import replay as replaying
from sim.families.workspace.family import WorkspaceFamily
from sim.families.workspace.machine import WorkspaceMachine
from sim.registry import FAMILIES
from sim.search.exhaustive import ExploreOptions, explore
from sim.testing import LAWS, LawBroken, check_family

#: What the suite answers for a family that declares no symmetry (the shipped ones: docs/adding-a-family.md).
NO_SYMMETRY = "not applicable: the family declares no interchangeable parts in this workload"
NO_PREDICATES = "not applicable: no safety check has a state predicate"

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "third_family"))
from register_family import FAMILY as REGISTER  # noqa: E402

WORKSPACE_PROTOCOLS = ["none", "plan", "step-dedupe", "step-dedupe,journal_write=after_write,pipeline=on",
                       "fence=step,dedupe=memory,drift_check=reject", "fence=step,stamp_at=apply",
                       "step-dedupe,rev_scope=file,on_reject=replan,journal_gc=eager"]


PLATFORM_WORKLOAD = """format = 1
family = "workspace"
name = "platform"
files = { "api.py" = { routes = "r0", auth = "a0" }, "models.py" = "m0" }
plan = [ { id = "s1", path = "api.py", patch = { routes = "r1" } },
         { id = "s2", path = "models.py", patch = "m1" } ]

[faults]
classes = ["human_edit", "lose_ack", "retry", "duplicate", "tests_fail", "preempt"]

[faults.targets]
"api.py#auth" = 5
"""
PLATFORM_PROTOCOLS = ["step-dedupe,rev_scope=file,pipeline=on,on_reject=replan",
                      "fence=step,dedupe=journal,drift_check=reject,drift_scope=hunk,checkpoint=per_step,"
                      "journal_gc=after_checkpoint",
                      "none,dedupe=journal,journal_gc=eager,checkpoint=per_step",
                      "fence=plan,rev_scope=file,journal_gc=session_end,on_reject=replan"]


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_the_workspace_platform_mechanisms_keep_every_law(tmp_path):
    """Per-file revisions, hunk drift, recovery, checkpoints and a bounded journal keep the laws on a
    workload with test failures and weighted targets."""
    path = tmp_path / "platform.toml"
    path.write_text(PLATFORM_WORKLOAD, encoding="utf-8")
    loaded = FAMILIES.load_workload(str(path))
    outcome = check_family(FAMILIES.get("workspace"), loaded, PLATFORM_PROTOCOLS, examples=30)
    assert outcome == {law: "held" for law in LAWS} | {"symmetric": NO_SYMMETRY, "state_invariants": NO_PREDICATES}


@pytest.mark.slow  # over 3 s: outside the fast lane
@pytest.mark.parametrize("workload", ["tiny", "multi-file"])
def test_the_workspace_family_keeps_every_law(workload):
    """Deterministic, deletable, machine equals replay, exact guards, commuting, sound keys, events read back."""
    loaded = FAMILIES.load_workload(workload)
    outcome = check_family(FAMILIES.get("workspace"), loaded, WORKSPACE_PROTOCOLS, examples=40)
    assert outcome == {law: "held" for law in LAWS} | {"symmetric": NO_SYMMETRY, "state_invariants": NO_PREDICATES}


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_the_effects_family_keeps_every_law_it_can():
    """The effects family's machine keeps every law that applies to it: its events strike a timed run, so
    driving it one event a time unit is not its replay (a differential test holds the two together), and its
    guard never lets through a fault a replay skips (enabled_exact)."""
    loaded = FAMILIES.load_workload("effects-release")
    outcome = check_family(FAMILIES.get("effects"), loaded, ["unkeyed-retry", "keyed-fingerprint-reconcile"],
                           examples=25, walk_depth=2)
    assert outcome["machine_replay"].startswith("not applicable: the machine's events strike a timed run")
    assert outcome["enabled_exact"] == "held" and outcome["symmetric"] == NO_SYMMETRY
    assert outcome["footprint"].startswith("not applicable: the family declares no footprints")
    assert all(outcome[law] == "held" for law in LAWS
               if law not in ("machine_replay", "symmetric", "footprint", "independent_commute",
                              "state_invariants"))


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_the_register_family_keeps_every_law(tmp_path):
    """A family written only against the contract, with a machine, keeps every law."""
    path = tmp_path / "three.toml"
    path.write_text('format = 1\nfamily = "register"\nname = "three"\nclients = ["A", "B", "C"]\n'
                    '[faults]\nclasses = ["interleave"]\n', encoding="utf-8")
    from sim.core.registry import Registry
    from sim.registry import SHIPPED

    loaded = Registry((*SHIPPED, REGISTER)).load_workload(str(path))
    assert check_family(REGISTER, loaded, examples=40) == {law: "held" for law in LAWS} | {
        "state_invariants": NO_PREDICATES}


class ForgetfulKey(WorkspaceMachine):
    """Planted: the state key leaves out the armed preemption (a field forgotten in the key), so a state about
    to crash at its next delivery merges with one that is not."""

    def key(self, state):
        return state._replace(armed=None)


class EagerGuard(WorkspaceMachine):
    """Planted: the guard refuses a duplicate of a retried message, which the run would take."""

    def why_not(self, state, event):
        if event.kind == "duplicate" and any(m.origin == "retry" for m in state.requests):
            return "planted: no duplicates of retries"
        return super().why_not(state, event)


class GuardedOnlyInSearch(WorkspaceFamily):
    """The replay runs the true model; only the machine handed to exhaustive search has the planted guard."""

    def machine(self, scenario, protocol):
        return EagerGuard(scenario, protocol)

    def replay(self, scenario, protocol, events=None):
        return replaying.replay(scenario, protocol, events, machine=WorkspaceMachine(scenario, protocol))


class NoDuplicateOfRetries(WorkspaceMachine):
    """Planted in one guard: a retried message is never duplicated."""

    def why_not_duplicate(self, state, event):
        if any(m.origin == "retry" for m in state.requests):
            return "planted: no duplicates of retries"
        return super().why_not_duplicate(state, event)


def _states(machine, events, depth):
    layer, seen = [machine.initial()], []
    for _ in range(depth):
        layer = [machine.step(state, events[i])[0] for state in layer for i in machine.enabled(state, events)]
        seen += layer
    return seen


def test_enabled_decides_by_kind_only_where_the_guards_are_the_modules_own():
    """``enabled()`` decides each kind of event from the state at once; a subclass overriding a guard (a planted
    bug) has each guard asked instead, so the search sees what that guard says, not what the module's would."""
    loaded, family = FAMILIES.load_workload("tiny"), FAMILIES.get("workspace")
    events, protocol = list(family.alphabet(loaded)), family.parse_protocol("none")
    told_apart = 0
    for kind in (WorkspaceMachine, NoDuplicateOfRetries):
        machine = kind(loaded.base, protocol)
        for state in _states(machine, events, 5):
            guards = [i for i, event in enumerate(events) if machine.why_not(state, event) is None]
            assert machine.enabled(state, events) == guards
            told_apart += kind is NoDuplicateOfRetries and machine.enabled(state, events) != \
                WorkspaceMachine.enabled(WorkspaceMachine(loaded.base, protocol), state, events)
    assert told_apart, "no state where the planted guard refuses a duplicate: the test shows nothing"


def test_an_unsound_state_key_is_caught():
    """A key without the armed preemption merges states whose futures differ: the law names it."""
    family = WorkspaceFamily(machine=ForgetfulKey)
    with pytest.raises(LawBroken) as broken:
        check_family(family, FAMILIES.load_workload("tiny"), ["step-dedupe,journal_write=after_write"],
                     laws=["equal_keys_equal_futures"], walk_depth=4)
    assert broken.value.law == "equal_keys_equal_futures"


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_a_guard_exhaustive_search_gets_wrong_is_caught():
    """A guard stricter than the run hides behaviour from exhaustive search: the law names it."""
    with pytest.raises(LawBroken) as broken:
        check_family(GuardedOnlyInSearch(), FAMILIES.load_workload("tiny"), ["none"], laws=["enabled_exact"],
                     examples=200)
    assert broken.value.law == "enabled_exact"


def test_exhaustive_is_the_same_for_any_worker_count():
    """Parallel expansion merges in frontier order: the same orders, states and proofs."""
    family, workload = FAMILIES.get("workspace"), FAMILIES.load_workload("tiny")
    one = explore(family, workload, family.parse_protocol("none"), ExploreOptions(max_events=6, workers=1)).to_json()
    two = explore(family, workload, family.parse_protocol("none"), ExploreOptions(max_events=6, workers=2)).to_json()
    assert one == two


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_exhaustive_driving_the_machine_equals_replaying_every_candidate():
    """The machine path proves what replaying every order through the kernel (with no pruning of commuting
    events) proves, over the same distinct states."""
    family, workload = FAMILIES.get("workspace"), FAMILIES.load_workload("tiny")
    # sleeping events are not tried, so fewer states are generated (and fingerprints looked up): never fewer found
    counted = ("pruned_commuting", "states_generated", "collision_probability")
    for label in ("none", "step-dedupe,journal_write=after_write", "plan"):
        protocol = family.parse_protocol(label)
        fast = explore(family, workload, protocol, ExploreOptions(max_events=5)).to_json()
        slow = explore(family, workload, protocol, ExploreOptions(max_events=5, accelerate=False)).to_json()
        assert ({k: v for k, v in fast.items() if k not in counted}
                == {k: v for k, v in slow.items() if k not in counted})
