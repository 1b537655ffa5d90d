"""Seed sweeps (sim.search.sweep): determinism across worker counts, the seed rule, DataFrames."""

from __future__ import annotations

import pytest

from sim.checks.workspace import SAFETY_INVARIANTS
from sim.errors import InputError
from sim.protocol import parse_protocol
from sim.replay import replay
from sim.search.runs import run_one
from sim.search.sweep import CHUNK_SEEDS, sweep, sweep_frame
from sim.search.workload import load_workload

PROTOCOLS = ["none", "step-dedupe,journal_write=after_write", "plan"]


def _comparable(summary):
    tallies = {label: (t.runs, t.violating_runs, dict(t.by_invariant), t.spurious_rejections, t.events)
               for label, t in summary.tallies.items()}
    found = {key: (f.run, f.seed, tuple(str(a) for a in f.order)) for key, f in summary.found.items()}
    return tallies, found


@pytest.mark.slow
def test_one_and_two_workers_give_identical_summaries():
    """A sweep spanning several chunks reports the same tallies and found orders with 1 and 2 workers."""
    seeds = 2 * CHUNK_SEEDS + 50
    one, _ = sweep("seed-fuzz", PROTOCOLS, seeds, workers=1)
    two, _ = sweep("seed-fuzz", PROTOCOLS, seeds, workers=2)
    assert _comparable(one) == _comparable(two)
    assert one.found  # the comparison is about something


def test_found_is_the_lowest_violating_run():
    """Each found order comes from the first run that violated its invariant."""
    summary, rows = sweep("seed-fuzz", ["none"], 200, workers=1, keep_rows=True)
    for (label, invariant), found in summary.found.items():
        first = min(r["run"] for r in rows if r["protocol"] == label and r[f"violations_{invariant}"])
        assert found.run == first


def test_seed_start_shifts_seeds_by_the_documented_rule():
    """Run i of a sweep starting at seed_start uses seed seed_start + i."""
    frame = sweep_frame("seed-fuzz", ["none"], seeds=5, seed_start=7, workers=1)
    assert list(frame["run"]) == [0, 1, 2, 3, 4]
    assert list(frame["seed"]) == [7, 8, 9, 10, 11]


def test_seed_start_rows_match_the_same_seeds_of_a_longer_sweep():
    """A run's row depends on its seed only, not on where the sweep started."""
    shifted = sweep_frame("seed-fuzz", ["none", "step"], seeds=6, seed_start=10, workers=1)
    full = sweep_frame("seed-fuzz", ["none", "step"], seeds=16, seed_start=0, workers=1)
    tail = full[full["seed"] >= 10].reset_index(drop=True)
    assert shifted.drop(columns="run").equals(tail.drop(columns="run"))


def test_found_seed_follows_the_seed_rule():
    """A found violation's seed equals seed_start plus its run index."""
    summary, _ = sweep("seed-fuzz", ["none"], 50, seed_start=1000, workers=1)
    assert summary.found
    for found in summary.found.values():
        assert found.seed == 1000 + found.run


def test_sweep_frame_has_one_row_per_seed_and_protocol():
    """sweep_frame returns one row per (seed, protocol) pair."""
    frame = sweep_frame("seed-fuzz", ["none", "step-dedupe"], seeds=20, workers=1)
    assert len(frame) == 40
    assert not frame.duplicated(subset=["seed", "protocol"]).any()
    assert set(frame["protocol"]) == {"none", "step-dedupe"}
    assert sorted(set(frame["seed"])) == list(range(20))


def test_sweep_frame_has_the_documented_columns():
    """sweep_frame has seed, protocol, events, violations_<invariant> and spurious_rejections columns."""
    frame = sweep_frame("seed-fuzz", ["none"], seeds=5, workers=1)
    expected = {"seed", "protocol", "events", "spurious_rejections"} | {f"violations_{n}" for n in SAFETY_INVARIANTS}
    assert expected <= set(frame.columns)


def test_sweep_frame_tallies_agree_with_the_summary():
    """Summing the frame's per-run violations gives the summary's per-invariant tallies."""
    frame = sweep_frame("seed-fuzz", ["none"], seeds=100, workers=1)
    summary, _ = sweep("seed-fuzz", ["none"], 100, workers=1)
    tally = summary.tallies["none"]
    for name in SAFETY_INVARIANTS:
        assert int((frame[f"violations_{name}"] > 0).sum()) == tally.by_invariant[name]
    assert int(frame["spurious_rejections"].sum()) == tally.spurious_rejections


@pytest.mark.parametrize("workload", ["seed-fuzz", "multi-file"])
def test_found_orders_contain_no_skipped_events(workload):
    """Every order a sweep keeps replays with no event marked skipped."""
    protocols = ["none", "fence=none,dedupe=memory", "step-dedupe,journal_write=after_write",
                 "fence=step,stamp_at=apply", "step-dedupe"]
    summary, _ = sweep(workload, protocols, 300, workers=1)
    loaded = load_workload(workload)
    assert summary.found
    for (label, _), found in summary.found.items():
        history, _ = replay(loaded.base, parse_protocol(label), found.order)
        assert not [e for e in history if e.get("skipped")], [str(a) for a in found.order]


def test_run_orders_contain_no_skipped_events():
    """The valid order of every run drops exactly the events the replay skipped."""
    loaded = load_workload("seed-fuzz")
    protocol = parse_protocol("step")
    for seed in range(150):
        outcome = run_one(loaded, protocol, seed, seed)
        history, _ = replay(loaded.base, protocol, outcome.order)
        assert not any(e.get("skipped") for e in history)
        assert outcome.row["events"] == len(outcome.order)


def test_found_order_still_violates_its_invariant():
    """Dropping skipped events keeps the violation that made the sweep keep the order."""
    from sim.checks.base import run_checks
    from sim.checks.workspace import WORKSPACE_CHECKS

    loaded = load_workload("seed-fuzz")
    summary, _ = sweep(loaded, ["none", "step-dedupe,journal_write=after_write"], 300, workers=1)
    for (label, invariant), found in summary.found.items():
        history, _ = replay(loaded.base, parse_protocol(label), found.order)
        violated = {v.invariant for v in run_checks(WORKSPACE_CHECKS, history).safety_violations}
        assert invariant in violated


@pytest.mark.parametrize("seeds", [0, -3])
def test_non_positive_seed_count_is_refused(seeds):
    """A sweep of zero or fewer seeds raises InputError."""
    with pytest.raises(InputError):
        sweep("seed-fuzz", ["none"], seeds, workers=1)
