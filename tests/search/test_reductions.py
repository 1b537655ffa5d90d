"""What exhaustive search leaves out never changes what it proves: sleep sets (on by default) against every event
tried, persistent sets (--reduce) against the unreduced search, on every shipped workload and preset, the
register example and the public model."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sim.core.registry import Registry
from sim.registry import FAMILIES, SHIPPED
from sim.search.exhaustive import ExploreOptions, explore

ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = sorted(p.stem for p in (ROOT / "scenarios" / "workloads").glob("*.toml"))
#: Depth per family: the effects family judges each state by the run after it (its events declare no
#: footprints: nothing is reduced), so one fault each.
DEPTHS = {"workspace": 6, "effects": 1, "runtime": 1}
#: What a reduction may change: the work done, not what is found.
WORK = ("pruned_commuting", "states_generated", "collision_probability")

sys.path.insert(0, str(ROOT / "tests" / "third_family"))
sys.path.insert(0, str(ROOT / "tests" / "public_model"))
from register_family import FAMILY as REGISTER  # noqa: E402
from two_phase_family import FAMILY as TWO_PHASE  # noqa: E402
from two_phase_family import workload_text  # noqa: E402


def _what_is_found(result) -> dict:
    return {k: v for k, v in result.to_json().items() if k not in WORK}


def _agrees(family, workload, label: str, depth: int | None) -> None:
    protocol = family.parse_protocol(label)
    every = explore(family, workload, protocol, ExploreOptions(max_events=depth, sleep=False))
    asleep = explore(family, workload, protocol, ExploreOptions(max_events=depth))
    assert _what_is_found(asleep) == _what_is_found(every), label
    reduced = explore(family, workload, protocol, ExploreOptions(max_events=depth, reduce=True))
    assert set(reduced.proved_absent) <= set(every.proved_absent), label
    assert all(every.shortest.get(name) == length for name, length in reduced.shortest.items()), label
    if reduced.exhausted:
        assert reduced.proved_absent == every.proved_absent and reduced.shortest == every.shortest, label
    if family.knobs.events is None:  # no footprints, nothing independent: --reduce leaves the search as it is
        assert _what_is_found(reduced) == _what_is_found(every), label


@pytest.mark.slow  # over 3 s: outside the fast lane
@pytest.mark.parametrize("name", WORKLOADS)
def test_every_shipped_workload_and_preset(name):
    """Sleep sets find exactly the states, proofs and orders of the search that tries every event; persistent
    sets find nothing the unreduced search does not, at its shortest length, and prove nothing it does not."""
    workload = FAMILIES.load_workload(name)
    family = FAMILIES.family_for(workload)
    for label in family.presets:
        _agrees(family, workload, label, DEPTHS[family.name])


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_the_register_example_and_the_public_model(tmp_path):
    """Exhausted searches: the reduced and unreduced ones prove the same invariants and find the same lengths."""
    registry = Registry((*SHIPPED, REGISTER, TWO_PHASE))
    (tmp_path / "register.toml").write_text('format = 1\nfamily = "register"\nname = "four"\n'
                                            'clients = ["A", "B", "C", "D"]\n[faults]\nclasses = ["interleave"]\n',
                                            encoding="utf-8")
    (tmp_path / "two-phase.toml").write_text(workload_text(["r1", "r2", "r3", "r4"]), encoding="utf-8")
    for file, family in (("register.toml", REGISTER), ("two-phase.toml", TWO_PHASE)):
        workload = registry.load_workload(str(tmp_path / file))
        for label in [*family.presets, *(["commit=any"] if family is TWO_PHASE else [])]:
            _agrees(family, workload, label, None)
