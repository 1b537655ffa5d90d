"""The five-transition agent task of scenarios/workloads/agent-pr-workflow.toml end to end: the cruel grid
has one row group per transition and, under keyed-fingerprint-reconcile, violates only at post_slack; the
search's shortest counterexamples sit there too; the advice never proposes a key."""

from __future__ import annotations

from sim.families.effects import FAMILY
from sim.registry import FAMILIES
from sim.search.exhaustive import ExploreOptions, explore
from sim.search.grid import single_fault_grid

KFR = "keyed-fingerprint-reconcile"
NAMES = ["create_branch", "open_pr", "run_ci", "post_slack", "merge_pr"]


def workload():
    return FAMILIES.load_workload("agent-pr-workflow")


def test_the_cruel_grid_has_five_rows_and_violates_only_at_the_announcement():
    grid = single_fault_grid(FAMILY, workload(), FAMILY.parse_protocol(KFR))
    assert list(grid.to_json()) == NAMES
    violating = {(c.labels[0], c.labels[1], c.labels[2]) for c in grid.violations}
    assert violating == {("post_slack", "after_dispatch", "duplicate"), ("post_slack", "after_commit", "duplicate")}


def test_without_keys_at_the_merge_it_would_be_duplicated_too():
    """The same grid with the merge's keys taken away (keyed, which retries blindly) shows the merge: the
    declaration, not the class, protects it."""
    grid = single_fault_grid(FAMILY, workload(), FAMILY.parse_protocol("unkeyed-retry"))
    assert {c.labels[0] for c in grid.violations if "duplicate_effect" in c.invariants} >= {"post_slack", "merge_pr"}


def test_the_exhaustive_search_finds_only_the_announcement_at_depth_one():
    """At depth one the only finding is the duplicated announcement (a network copy's commit is not also a
    lost success)."""
    proof = explore(FAMILY, workload(), FAMILY.parse_protocol(KFR), ExploreOptions(max_events=1))
    assert set(proof.shortest) == {"duplicate_effect"}
    for orders in proof.minimal_orders.values():
        assert all(str(order[0]).split()[1] == "post_slack" for order in orders)
