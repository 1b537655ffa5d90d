"""Seed sweeps (sim.search.sweep): determinism across worker counts, the seed rule, DataFrames -- on the
workspace family, and through the same contract on the effects family."""

from __future__ import annotations

import functools

import pytest

import sim
from sim.core.errors import InputError
from sim.core.findings import findings_of, invariant_of
from sim.families.effects import FAMILY as EFFECTS
from sim.families.workspace import FAMILY
from sim.families.workspace.checks import SAFETY_INVARIANTS
from sim.search import sweep as sweeping
from sim.search.sweep import CHUNK_SEEDS, run_row


@functools.cache
def load_workload(name):
    return sim.load_workload(name)


def parse_protocol(label):
    return FAMILY.parse_protocol(label)


def replay(scenario, protocol, events):
    result = FAMILY.replay(scenario, protocol, events)
    return result.history, result.end


def sweep(workload, protocols, seeds, seed_start=0, workers=None, keep_rows=False):
    """A workspace sweep of a workload given by name or object."""
    if isinstance(workload, str):
        workload = load_workload(workload)
    return sweeping.sweep(FAMILY, workload, protocols, seeds, seed_start, workers, keep_rows=keep_rows)


def sweep_frame(workload, protocols, seeds, seed_start=0, workers=None):
    return sweeping.sweep_frame(FAMILY, load_workload(workload), protocols, seeds, seed_start, workers)


PROTOCOLS = ["none", "step-dedupe,journal_write=after_write", "plan"]


def _comparable(summary):
    tallies = {label: (t.runs, t.violating_runs, dict(t.by_invariant), dict(t.counted), t.events)
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
    assert summary.found, "200 seeds under none violate something"
    for label, invariant in {(label, found.invariant) for (label, _), found in summary.found.items()}:
        first = min(r["run"] for r in rows if r["protocol"] == label and r[f"violations_{invariant}"])
        assert summary.first(label, invariant).run == first


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
    assert int(frame["spurious_rejections"].sum()) == tally.counted["spurious_rejections"]


@pytest.mark.slow  # over 3 s: outside the fast lane
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
        row, order, _ = run_row(FAMILY, loaded, protocol, seed, seed)
        history, _ = replay(loaded.base, protocol, order)
        assert not any(e.get("skipped") for e in history)
        assert row["events"] == len(order)


def test_found_order_still_violates_its_invariant():
    """Dropping skipped events keeps the violation that made the sweep keep the order."""
    loaded = load_workload("seed-fuzz")
    summary, _ = sweep(loaded, ["none", "step-dedupe,journal_write=after_write"], 300, workers=1)
    assert {label for label, _ in summary.found} == {"none", "step-dedupe,journal_write=after_write"}
    for (label, finding), found in summary.found.items():
        history, _ = replay(loaded.base, parse_protocol(label), found.order)
        shown = findings_of(FAMILY, loaded.base, FAMILY.check(history).safety_violations)
        assert finding in shown and found.invariant == invariant_of(finding)


@pytest.mark.parametrize("seeds", [0, -3])
def test_non_positive_seed_count_is_refused(seeds):
    """A sweep of zero or fewer seeds raises InputError."""
    with pytest.raises(InputError):
        sweep("seed-fuzz", ["none"], seeds, workers=1)


def test_run_row_reports_violations_availability_and_measures():
    """A row holds the run, seed, protocol, valid length, end, one column per invariant, the availability
    column and the family's measures."""
    row, order, violated = run_row(FAMILY, load_workload("tiny"), parse_protocol("none"), 5, 2)
    assert (row["run"], row["seed"], row["protocol"], row["end"]) == (2, 5, "none", "completed")
    assert {f"violations_{n}" for n in SAFETY_INVARIANTS} | {"spurious_rejections", "steps_applied"} <= set(row)
    assert row["violated"] == bool(violated) and row["events"] == len(order)


def test_tally_to_json_has_runs_invariants_availability_and_measures():
    """A protocol's tally has runs, violating runs, per-invariant counts, availability counts and measures."""
    summary, _ = sweep("tiny", ["step"], 20, workers=1)
    tally = summary.tallies["step"].to_json()
    assert {"runs", "violating_runs", "violating_runs_by_invariant", "spurious_rejections", "measures"} <= set(tally)
    assert tally["runs"] == 20 and tally["measures"]["steps_planned"] == 40
    assert (summary.family, summary.workload, summary.seeds) == ("workspace", "tiny", 20)


def test_progress_is_reported_after_each_chunk():
    """progress(done, total, violating_runs) is called after each chunk of seeds, ending at the total."""
    calls = []
    sweeping.sweep(FAMILY, load_workload("tiny"), ["none"], CHUNK_SEEDS + 10, workers=1,
                   progress=lambda done, total, violating: calls.append((done, total)))
    assert calls == [(CHUNK_SEEDS, CHUNK_SEEDS + 10), (CHUNK_SEEDS + 10, CHUNK_SEEDS + 10)]


def test_negative_seed_start_is_refused():
    """A sweep starting below seed 0 raises InputError."""
    with pytest.raises(InputError):
        sweep("seed-fuzz", ["none"], 5, seed_start=-1, workers=1)


def test_effects_sweep_counts_human_exceptions_and_finds_violations():
    """The same sweep runs the effects family: human exceptions are its availability column, and unkeyed retries
    are caught duplicating."""
    workload = load_workload("effects-saga")
    summary, _ = sweeping.sweep(EFFECTS, workload, ["unkeyed-retry", "keyed-fingerprint-reconcile"], 60, workers=1)
    unkeyed = summary.tallies["unkeyed-retry"].to_json()
    assert "human_exceptions" in unkeyed and unkeyed["measures"]["tasks"] == 60
    assert any(label == "unkeyed-retry" and f.invariant == "duplicate_effect"
               for (label, _), f in summary.found.items())
    for (label, _finding), found in summary.found.items():
        replayed = EFFECTS.replay(workload.base, EFFECTS.parse_protocol(label), found.order)
        assert replayed.skipped == frozenset()
        assert found.invariant in {v.invariant for v in EFFECTS.check(replayed.history).safety_violations}
