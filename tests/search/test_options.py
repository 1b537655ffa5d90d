"""One options value from the command line through the pipeline to the sweep."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

import sim
from sim.core.errors import InputError
from sim.search import pipeline
from sim.search.options import SearchOptions
from sim.search.sweep import run_sweep, sweep

FAMILY = sim.family("workspace")


def test_the_pipeline_and_the_sweep_take_one_options_value():
    """Neither unpacks the options into keyword arguments again: each takes (family, workload, protocols,
    options) and nothing else."""
    for function in (pipeline.fuzz, run_sweep):
        assert list(inspect.signature(function).parameters) == ["family", "workload", "protocols", "options"]


def test_every_option_reaches_the_sweep():
    """What the options say is what the sweep does: seeds, seed start, rows, progress and checkpoints."""
    calls, states = [], []
    options = SearchOptions(30, seed_start=7, workers=1, keep_rows=True,
                            progress=lambda done, total, violating: calls.append((done, total)),
                            checkpoint=states.append)
    summary, rows = run_sweep(FAMILY, sim.load_workload("tiny"), ["none"], options)
    assert (summary.seed_start, summary.seeds_done) == (7, 30)
    assert rows is not None and [r["seed"] for r in rows] == list(range(7, 37))
    assert calls == [(30, 30)] and [s.seeds_done for s in states] == [30]


def test_the_notebook_call_builds_the_same_options():
    workload = sim.load_workload("tiny")
    one, _ = sweep(FAMILY, workload, ["none"], 40, 3, 1)
    two, _ = run_sweep(FAMILY, workload, ["none"], SearchOptions(40, 3, 1))
    assert one.tallies["none"].to_json() == two.tallies["none"].to_json()


def test_the_pipeline_reads_its_own_options_and_passes_the_rest_on():
    """advise=False means no advice; shrink_progress hears each violation; the sweep ran options.seeds."""
    heard = []
    result = pipeline.fuzz(FAMILY, sim.load_workload("tiny"), ["none"], SearchOptions(
        20, workers=1, advise=False, shrink_progress=lambda what, length: heard.append(what)))
    assert result.summary.seeds_done == 20 and result.counterexamples
    assert all(example.advice is None for example in result.counterexamples)
    assert heard == [f"none / {example.finding}" for example in result.counterexamples]


def test_options_are_checked_when_made_and_immutable():
    with pytest.raises(InputError, match="unknown backend 'ray'"):
        SearchOptions(10, backend="ray")
    with pytest.raises(InputError, match="--seed-start must be 0 or more"):
        SearchOptions(10, seed_start=-1)
    options = SearchOptions(10)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.seeds = 20  # type: ignore[misc]
    assert options.replace(seeds=20).seeds == 20 and options.seeds == 10
