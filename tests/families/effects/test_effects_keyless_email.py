"""A keyless irreversible e-mail that cannot be queried and needs no approval (``approval = false``): no
check reports an approval it does not owe, and under keyed-fingerprint-reconcile a duplicate of the e-mail
is the only finding -- in the cruel grid, the exhaustive search and a sweep."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.families.effects import FAMILY
from sim.registry import FAMILIES
from sim.search.exhaustive import ExploreOptions, explore
from sim.search.grid import single_fault_grid
from sim.search.sweep import sweep

KFR = "keyed-fingerprint-reconcile"
WORKLOAD = """format = 1
family = "effects"
name = "keyless-email"
task = "task_0"
workflow = [
  { name = "read_order", class = "read", object = "order" },
  { name = "open_pr", class = "keyed_creation", object = "pull_request", compensation = "close_pr" },
  { name = "send_email", class = "irreversible", object = "email", keys = false, reconcile_by = "none", \
approval = false },
]

[faults]
classes = ["terminate", "duplicate", "delay_ack", "change_owner", "lose_request", "lose_response", "unprovable"]
per_run_max = 2
"""


@pytest.fixture
def workload(tmp_path: Path):
    path = tmp_path / "keyless-email.toml"
    path.write_text(WORKLOAD, encoding="utf-8")
    return FAMILIES.load_workload(str(path))


@pytest.mark.parametrize("protocol", FAMILY.presets)
def test_no_cell_reports_an_approval_the_email_does_not_owe(workload, protocol):
    """Under every preset, no cruel cell reports unapproved_irreversible."""
    grid = single_fault_grid(FAMILY, workload, FAMILY.parse_protocol(protocol))
    assert not any("unapproved_irreversible" in cell.invariants for cell in grid.violations)


def test_a_duplicate_of_the_email_is_the_only_cruel_finding(workload):
    """keyed-fingerprint-reconcile: only the e-mail's duplicated request violates, and only duplicate_effect."""
    grid = single_fault_grid(FAMILY, workload, FAMILY.parse_protocol(KFR))
    assert {(c.labels[0], c.labels[2]) for c in grid.violations} == {("send_email", "duplicate")}
    assert {i for c in grid.violations for i in c.invariants} == {"duplicate_effect"}


def test_the_search_and_a_sweep_find_only_the_duplicate(workload):
    """Exhaustive search at depth one and 150 swept seeds: duplicate_effect at send_email, nothing else."""
    proof = explore(FAMILY, workload, FAMILY.parse_protocol(KFR), ExploreOptions(max_events=1))
    assert set(proof.shortest) == {"duplicate_effect"}
    assert all(str(order[0]).split()[1] == "send_email" for orders in proof.minimal_orders.values()
               for order in orders)
    summary, _ = sweep(FAMILY, workload, [KFR], 150, workers=1)
    found = {name for name, runs in summary.tallies[KFR].by_invariant.items() if runs}
    assert found == {"duplicate_effect"}


@pytest.mark.slow
def test_no_claim_of_its_review_says_duplicate_effect_holds_under_the_strongest_class(tmp_path):
    """The review settles the seed's claims against all of its evidence: even where no sampled run
    duplicated the e-mail, the per-transition single-fault grid does, so the claim that stable keys make a
    retried effect singular does not hold under keyed-fingerprint-reconcile -- and nothing contradicts."""
    import sim
    from sim.report.consistency import contradictions

    design = tmp_path / "keyless-email-design.toml"
    workload = WORKLOAD.split("\n", 3)[3]  # the workload's keys, inline
    design.write_text(f'format = 1\nname = "keyless-email"\nfamily = "effects"\nprotocols = ["{KFR}"]\n'
                      f'seeds = 20\n\n[workload]\n{workload}'.replace("[faults]", "[workload.faults]"),
                      encoding="utf-8")
    row = sim.review([str(design)]).designs[0].row
    duplicate = [c for c in row.claims if c["protocol"] == KFR and "duplicate_effect" in c["invariants"]]
    assert duplicate and not any(c["holds"] for c in duplicate)
    assert any("send_email" in line for c in duplicate for line in c["refuted_by"])
    assert not any("unapproved_irreversible" in e.invariant for e in row.counterexamples)
    assert contradictions(row) == []
