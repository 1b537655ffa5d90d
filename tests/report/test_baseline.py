"""Baselines by meaning (sim.report.baseline): normalised protocols, the workload's meaning, per-entry
re-validation, strict reading, and a baseline of tens of thousands of entries compared in seconds."""

from __future__ import annotations

import json
import time

import pytest

import sim
from sim.core.errors import InputError
from sim.report.baseline import (
    BASELINE_MAX_WORK,
    Baseline,
    compare,
    normalised_protocol,
    prepare,
    read_baseline,
    workload_digest,
)
from sim.search.budget import work_of
from sim.search.pipeline import replay_orders

WORKSPACE = sim.family("workspace")
EFFECTS = sim.family("effects")


def test_a_preset_and_its_knobs_normalise_to_one_protocol():
    """step-dedupe and fence=step,dedupe=journal are one key; the knobs are written out, sorted."""
    one = normalised_protocol(WORKSPACE.parse_protocol("step-dedupe"))
    assert one == normalised_protocol(WORKSPACE.parse_protocol("fence=step,dedupe=journal"))
    assert one == normalised_protocol(WORKSPACE.parse_protocol("dedupe=journal,fence=step"))
    names = [part.split("=")[0] for part in one.split(",")]
    assert names == sorted(names) and len(names) == len(WORKSPACE.knobs.knobs)


def test_the_workload_digest_is_of_its_meaning(tmp_path):
    """A comment or a new description leaves the digest; a changed limit changes it."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "scenarios" / "workloads" / "tiny.toml").read_text()
    paths = {}
    for name, body in (("same", text), ("comment", "# hello\n" + text.replace('description = """',
                                                                               'description = """New. ')),
                       ("changed", text.replace("max_events = 40", "max_events = 39"))):
        paths[name] = tmp_path / f"{name}.toml"
        paths[name].write_text(body)
    digest = {name: workload_digest(WORKSPACE, sim.load_workload(str(path))) for name, path in paths.items()}
    assert digest["same"] == digest["comment"] != digest["changed"]


@pytest.mark.parametrize("document, needle", [
    ("[]", "not a baseline"), ('{"format": 1, "entries": [], "family": "workspace", "workload": "t", "x": 1}',
                               "unknown key 'x'"),
    ('{"format": 1, "entries": [{"protocol": "none"}], "family": "workspace", "workload": "t"}', "entry 0"),
    ('{"format": 1, "entries": [{"protocol": "none", "invariant": "lost_update", "events": [1]}], '
     '"family": "workspace", "workload": "t"}', "events must be a list of strings"),
    ('{"format": 1, "entries": [], "family": 7, "workload": "t"}', "family must be a string"),
    ('{"format": 1, "entries": [], "family": "workspace", "workload": "t", "workload_digest": ' + "9" * 5000 + "}",
     "not a baseline"),
    ('{"format": 1, "entries": [{"protocol": "none", "invariant": "lost_update", "events": [], '
     '"one_minimal": "yes"}], "family": "workspace", "workload": "t"}', "one_minimal"),
])
def test_a_malformed_baseline_is_one_line(tmp_path, document, needle):
    path = tmp_path / "b.json"
    path.write_text(document)
    with pytest.raises(InputError) as caught:
        read_baseline(path)
    assert needle in str(caught.value) and "\n" not in str(caught.value)


def _document(protocols, examples=()):
    return {"counterexamples": list(examples), "by_protocol": {p: {} for p in protocols}}


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_a_33000_entry_baseline_is_compared_within_seconds():
    """Every entry is read, matched and (not being found again) replayed; identical orders are replayed once,
    the rest on two processes within the replay limit (what it leaves is reported unchecked, every entry
    counted once), for 33,000 entries of the slower family."""
    workload = sim.load_workload("effects-saga")
    spellings = ["keyed", "keyed-fingerprint-reconcile,lease_fence=off", "unkeyed-retry"]
    entries = []
    for seed in range(33_000):
        order = [str(e) for e in EFFECTS.generate(workload, seed % 11_000)]
        entries.append({"protocol": spellings[seed % 3], "invariant": "duplicate_effect", "events": order})
    known = Baseline.from_json({"format": 1, "family": EFFECTS.name, "workload": workload.name,
                                "workload_digest": "other", "entries": entries})
    run = {normalised_protocol(EFFECTS.parse_protocol(p)) for p in spellings[:2]}

    spent = [0]

    def replayer(jobs, limited=True):
        results = replay_orders(EFFECTS, workload.base, jobs, 2, BASELINE_MAX_WORK - spent[0] if limited else None)
        spent[0] += sum(work_of(1, len(e)) for (_, e), r in zip(jobs, results) if r is not None)
        return results

    started = time.monotonic()
    prepared = prepare(known, EFFECTS, workload, "b.json", workload_digest(EFFECTS, workload), run, replayer)
    compared = compare(_document(spellings[:2]), prepared, lambda label: normalised_protocol(
        EFFECTS.parse_protocol(label)), replayer)
    elapsed = time.monotonic() - started
    counted = (len(compared["fixed"]) + len(compared["still_violating"]) + len(compared["not_run"])
               + len(compared["not_replayable"]) + len(compared["unchecked"]))
    assert counted == len(entries) and len(compared["not_run"]) == 11_000
    one = max(work_of(1, len(e["events"])) for e in entries)  # the limit is looked at before each replay
    assert 0 < spent[0] <= BASELINE_MAX_WORK + one, "the replays stay within the named replay limit"
    del elapsed  # speed is measured by benchmarks, never asserted here


def test_the_replay_limit_stops_at_the_same_entry_on_every_machine():
    """The baseline's replays are bounded by work (runs and events), not seconds: one process or two, the same
    jobs are replayed and the same ones left."""
    workload = sim.load_workload("tiny")
    protocol = WORKSPACE.parse_protocol("none")
    jobs = [(protocol, tuple(WORKSPACE.generate(workload, seed))) for seed in range(600)]
    one = replay_orders(WORKSPACE, workload.base, jobs, 1, max_work=6_000)
    two = replay_orders(WORKSPACE, workload.base, jobs, 2, max_work=6_000)
    assert one == two and None in one and one[0] is not None
    done = [events for (_, events), result in zip(jobs, one) if result is not None]
    assert sum(work_of(1, len(events)) for events in done) <= 6_000


def test_entries_equal_but_spelled_differently_are_matched():
    """A counterexample under fence=step,dedupe=journal matches the entry written for step-dedupe."""
    workload = sim.load_workload("seed-fuzz")
    events = ["plan", "dispatch s1", "human_edit app.py", "deliver s1"]
    known = Baseline.from_json({"format": 1, "family": "workspace", "workload": "seed-fuzz", "workload_digest": None,
                                "entries": [{"protocol": "step-dedupe", "invariant": "lost_update", "events": events}]})
    label = "fence=step,dedupe=journal"
    key = normalised_protocol(WORKSPACE.parse_protocol(label))
    replayer = lambda jobs, limited=True: replay_orders(WORKSPACE, workload.base, jobs, 1)  # noqa: E731
    prepared = prepare(known, WORKSPACE, workload, "b.json", None, {key}, replayer)
    example = {"protocol": label, "invariant": "lost_update", "events": events,
               "shrink": {"one_minimal": True, "shortest_proved": True}}
    compared = compare(_document([label], [example]), prepared, lambda _: key, replayer)
    assert compared["known"] == 1 and compared["new"] == 0 and example["baseline_match"] == "order"
    assert json.dumps(compared)
