"""Independence is derived from declared footprints, and the law suite checks every footprint and every derived
commutation exhaustively: a knob added with a forgotten read is refused, not proved past."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

from sim.core.footprint import access
from sim.core.mechanisms import knob, knob_table
from sim.families.workspace.family import WorkspaceFamily
from sim.families.workspace.knobs import EVENTS, TABLE, WorkspaceKnobs
from sim.families.workspace.machine import WorkspaceMachine
from sim.registry import FAMILIES
from sim.search.exhaustive import ExploreOptions, explore
from sim.testing import LAWS, LawBroken, check_family, default_protocols

ROOT = Path(__file__).resolve().parents[2]
EXHAUSTIVE = ["footprint", "independent_commute"]
#: What a retry re-stamped when it is re-sent reads: what a dispatch's stamp reads.
FRESH_READS = access("files[path] rev file_revs[path] plan_base_rev snapshot_revs")


def _retry_stamp_family(footprint: dict) -> WorkspaceFamily:
    """The workspace family with one knob more, added as docs/adding-a-family.md says: its table entry (with the
    footprint given) and its behaviour (a machine that re-stamps a retry) -- no independence written anywhere."""

    @dataclass(frozen=True)
    class RetryStampKnobs(WorkspaceKnobs):
        retry_stamp: Literal["same", "fresh"] = knob(
            "same", "fresh: a retry re-reads the revision and hash when it is re-sent", ranks={"same": 1, "fresh": 1},
            footprint=footprint)

    table = knob_table(RetryStampKnobs, family="workspace", presets=TABLE.presets, events=EVENTS)

    class RetryStampMachine(WorkspaceMachine):
        def retry(self, state, event):
            state, records = super().retry(state, event)
            if RetryStampKnobs.of(self.protocol).retry_stamp == "fresh":
                message = state.requests[-1]
                rev, digest = self.stamp(state, message.step, self.hash(state, message.step.path))
                state = state._replace(requests=state.requests[:-1] + (
                    message._replace(stamped_base_rev=rev, stamped_pre_hash=digest),))
                records[0][2].update(stamped_base_rev=rev, stamped_pre_hash=digest)
            return state, records

    class RetryStampFamily(WorkspaceFamily):
        knobs = table

    return RetryStampFamily(machine=RetryStampMachine)


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_a_knob_whose_footprint_forgets_a_read_is_refused_by_the_default_laws():
    """retry_stamp=fresh makes a retry read what a human edit writes; declared without that read, check_family
    with its default protocols refuses the family, naming retry and human_edit and the parts."""
    family = _retry_stamp_family({})
    assert "step-dedupe,retry_stamp=fresh" in [p.label for p in default_protocols(family)]
    with pytest.raises(LawBroken) as broken:
        check_family(family, FAMILIES.load_workload("tiny"), laws=EXHAUSTIVE)
    message = str(broken.value)
    assert broken.value.law == "footprint" and "retry_stamp=fresh" in broken.value.protocol
    assert "retry s" in message and "human_edit" in message and "does not declare read" in message
    assert "files[app.py]" in message and "rev" in message


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_the_forgotten_read_would_have_proved_past_states():
    """What the law prevents: with the under-declared footprint, the pruned search misses states that replaying
    every candidate reaches (the derived claim is wrong)."""
    family, workload = _retry_stamp_family({}), FAMILIES.load_workload("tiny")
    protocol = family.parse_protocol("step-dedupe,retry_stamp=fresh")
    pruned = explore(family, workload, protocol, ExploreOptions(max_events=6))
    every = explore(family, workload, protocol, ExploreOptions(max_events=6, accelerate=False))
    assert pruned.distinct_states < every.distinct_states


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_the_knob_with_its_read_declared_keeps_the_laws_and_prunes_soundly():
    """Declared with the reads of a stamp, the knob keeps every law on its protocols, retry and human_edit are no
    longer independent, and the pruned search reaches exactly the states of the unpruned one."""
    family, workload = _retry_stamp_family({"fresh": {"retry": FRESH_READS}}), FAMILIES.load_workload("tiny")
    protocol = family.parse_protocol("step-dedupe,retry_stamp=fresh")
    assert check_family(family, workload, [protocol, "none,retry_stamp=fresh"], laws=EXHAUSTIVE) == dict.fromkeys(
        EXHAUSTIVE, "held")
    retry, edit = family.parse_event(workload.base, "retry s1"), family.parse_event(workload.base, "human_edit app.py")
    assert not family.independent(workload, protocol, retry, edit)
    assert family.independent(workload, family.parse_protocol("step-dedupe"), retry, edit)
    pruned = explore(family, workload, protocol, ExploreOptions(max_events=7))
    every = explore(family, workload, protocol, ExploreOptions(max_events=7, accelerate=False))
    assert pruned.distinct_states == every.distinct_states and pruned.to_json()["violations"].keys() == \
        every.to_json()["violations"].keys()


class EditsTheArmedCrash(WorkspaceMachine):
    """Planted: a human edit also disarms an armed preemption -- a write its footprint does not declare."""

    def human_edit(self, state, event):
        state, records = super().human_edit(state, event)
        return state._replace(armed=None), records


def test_an_undeclared_write_breaks_the_law_naming_the_event_and_the_part():
    """An event that changes a part its footprint does not declare written is named with the part and an order."""
    family = WorkspaceFamily(machine=EditsTheArmedCrash)
    with pytest.raises(LawBroken) as broken:
        check_family(family, FAMILIES.load_workload("tiny"), ["step-dedupe"], laws=["footprint"], footprint_depth=3)
    message = str(broken.value)
    assert "human_edit app.py changes armed, which its footprint does not declare written" in message
    assert "after [plan, preempt " in message


class ForgetsTheArmedCrash(WorkspaceMachine):
    """Planted: the machine's parts leave out the armed preemption that the state key holds."""

    def parts(self, state):
        out = dict(super().parts(state))
        del out[("armed", None)]
        return out


def test_parts_that_leave_out_part_of_the_key_break_the_law():
    """Parts must determine the state key: parts() without a field the key holds is refused."""
    with pytest.raises(LawBroken) as broken:
        check_family(WorkspaceFamily(machine=ForgetsTheArmedCrash), FAMILIES.load_workload("tiny"), ["none"],
                     laws=["footprint"], footprint_depth=3)
    assert "parts are equal but the state keys differ" in str(broken.value)


class DropsTheRetriedCopy(WorkspaceMachine):
    """Planted: a retry is lost when a human edit lands in the same state -- both footprints stay as declared,
    but the two events no longer commute (the edit now writes what the retry reads: requests)."""

    def human_edit(self, state, event):
        state, records = super().human_edit(state, event)
        retried = tuple(m for m in state.requests if m.origin != "retry")
        return state._replace(requests=retried), records


def test_a_derived_commutation_that_does_not_hold_is_caught_exhaustively():
    """Two events the footprints call independent that do not commute in some reachable state break
    independent_commute, with the order that shows it."""
    with pytest.raises(LawBroken) as broken:
        check_family(WorkspaceFamily(machine=DropsTheRetriedCopy), FAMILIES.load_workload("tiny"), ["none"],
                     laws=["independent_commute"], footprint_depth=3)
    message = str(broken.value)
    assert "retry s1" in message and "human_edit app.py" in message


def test_default_protocols_set_every_value_of_every_knob_once():
    """check_family's default protocols: the default protocol, each other value of each knob on it, the presets."""
    family = FAMILIES.get("workspace")
    chosen = default_protocols(family)
    for spec in family.knobs.knobs:
        assert set(spec.candidates()) <= {p.knobs[spec.name] for p in chosen}
    assert {family.parse_protocol(name) for name in family.presets} <= set(chosen) and len(chosen) == len(set(chosen))


def test_no_family_writes_independence_by_hand():
    """Independence is derived from footprints: no family (shipped or the register example) defines
    ``independent`` or ``independent_under``."""
    sources = [*ROOT.joinpath("sim", "families").rglob("*.py"), ROOT / "tests" / "third_family" / "register_family.py"]
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef):
                assert node.name not in ("independent", "independent_under"), f"{path}: {node.name}"


def test_a_family_without_footprints_gets_no_pruning_and_says_so():
    """The effects family declares no footprints: nothing is independent, and the exhaustive laws say why."""
    effects = FAMILIES.get("effects")
    workload = FAMILIES.load_workload("effects-pr")
    events = effects.alphabet(workload)[:2]
    assert not effects.independent(workload, effects.parse_protocol("keyed"), *events)
    outcome = check_family(effects, workload, ["keyed"], laws=EXHAUSTIVE)
    assert all(outcome[law].startswith("not applicable: the family declares no footprints") for law in EXHAUSTIVE)
    assert set(EXHAUSTIVE) <= set(LAWS)
