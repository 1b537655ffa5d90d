"""The design-space map: every protocol of a knob lattice classified by exhaustive search, minimal safe
designs, the Pareto front, certificates exact on the lattice, and monotonicity findings."""

from __future__ import annotations

import itertools
import json

import pytest

from sim.core.errors import InputError
from sim.registry import FAMILIES
from sim.search.exhaustive import ExploreOptions, explore
from sim.search.lattice import SAFE, VIOLATED, design_map, lattice

FAMILY = FAMILIES.get("workspace")
TINY = FAMILIES.load_workload("tiny")


@pytest.fixture(scope="module")
def fence_dedupe():
    return design_map(FAMILY, TINY, ["fence", "dedupe"], 6, seeds=60)


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_every_protocol_is_classified_as_explore_classifies_it(fence_dedupe):
    """The map's verdict of each protocol is exhaustive search's on that protocol alone."""
    for point in fence_dedupe.points:
        alone = explore(FAMILY, TINY, point.protocol, ExploreOptions(max_events=6)).to_json()
        assert point.search.to_json() == alone
        assert point.status() == (VIOLATED if alone["violations"] else SAFE)
    assert len(fence_dedupe.points) == 9


def test_minimal_safe_design_and_certificate_of_tiny(fence_dedupe):
    """On tiny within 6 events only a plan fence prevents lost updates; plan (no dedupe) is the weakest."""
    document = fence_dedupe.to_json()
    assert document["minimal_safe"] == ["plan"]
    lost = next(c for c in document["certificates"] if c["invariant"] == "lost_update")
    held = ", ".join(f"{k.name}={k.show(k.default)}" for k in FAMILY.knobs.knobs if k.name not in ("fence", "dedupe"))
    assert held.startswith("stamp_at=dispatch, journal_write=atomic, drift_check=off, ")  # every other knob, in order
    assert lost["words"] == f"on tiny, within 6 events, no lost_update iff fence=plan -- with {held} held fixed"
    assert all(e["witness"] for e in lost["excluded"])  # every excluded corner has its witness order


def test_certificates_are_exact_on_the_lattice():
    """For every protocol, the certificate's condition holds exactly when the invariant is proved absent."""
    drawn = design_map(FAMILY, TINY, ["fence", "stamp_at", "dedupe"], 5, seeds=0)
    certificates = drawn.certificates()
    assert certificates and drawn.points
    for certificate in certificates:
        for point in drawn.points:
            admitted = any(all(point.values[k] in values for k, values in clause.sets.items())
                           for clause in certificate.clauses)
            assert admitted == (point.status(certificate.invariant) == SAFE), (certificate.invariant,
                                                                                point.protocol.label)


def test_a_stronger_value_that_breaks_safety_is_a_finding():
    """A journal keyed by the rev read at apply: fence=step with stamp_at=apply duplicates a retried step
    that fence=none with the same journal does not -- reported, not pruned."""
    drawn = design_map(FAMILY, TINY, ["fence", "stamp_at", "dedupe"], 5, seeds=0)
    findings = drawn.monotonicity_findings()
    assert {"invariant": "duplicate_effect", "safe": "none,stamp_at=apply,dedupe=journal",
            "stronger_violates": "step-dedupe,stamp_at=apply"} in [
        {"invariant": f.invariant, "safe": f.safe, "stronger_violates": f.stronger_violates} for f in findings]
    assert drawn.to_json()["pruned"] == 0


def test_protocols_that_behave_alike_are_one_group():
    """stamp_at changes nothing beside fence=plan: those protocols form one group under the plainest label."""
    drawn = design_map(FAMILY, TINY, ["fence", "stamp_at"], 4, seeds=0)
    group = next(g for g in drawn.groups() if g[0].protocol.label == "plan")
    assert {"plan", "plan,stamp_at=plan", "plan,stamp_at=apply"} <= {p.protocol.label for p in group}
    assert "none" not in {p.protocol.label for p in group}


def test_the_pareto_front_keeps_only_undominated_groups(fence_dedupe):
    """No group on the front is beaten on every cost by another group."""
    front = fence_dedupe.pareto()
    costs = [g[0].cost() for g in fence_dedupe.groups()]
    for point in front:
        mine = point.cost()
        assert not any(all(o <= m for o, m in zip(other, mine)) and other != mine for other in costs)
    assert any(p.status() == SAFE for p in front)


def test_a_lattice_too_large_or_a_knob_twice_is_refused():
    """Name fewer knobs: the limit is stated; a knob named twice is refused."""
    with pytest.raises(InputError, match="at most"):
        lattice(FAMILIES.get("effects"), None)
    with pytest.raises(InputError, match="twice"):
        lattice(FAMILY, ["fence", "fence"])
    knobs, protocols = lattice(FAMILY, ["fence", "dedupe"])
    assert len(protocols) == 9 and len({p.label for p in protocols}) == 9
    assert [tuple(p.knobs[k.name] for k in knobs) for p in protocols] == list(
        itertools.product(*(k.candidates() for k in knobs)))


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_map_command_prints_the_document_and_writes_the_figure(cli, tmp_path):
    """fencesim map --json: the classification, certificates and the Pareto figure in --out."""
    done = cli("map", "--workload", "tiny", "--knobs", "fence,dedupe", "--max-events", "4", "--seeds", "20",
               "--json", "--out", str(tmp_path / "map"))
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert len(document["protocols"]) == 9 and document["certificates"]
    assert (tmp_path / "map" / "pareto.png").stat().st_size > 0 and (tmp_path / "map" / "map.json").exists()
    bad = cli("map", "--workload", "tiny", "--knobs", "fence,drift_chek")
    assert bad.returncode == 4 and "drift_check" in bad.stderr
