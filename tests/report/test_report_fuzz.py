"""A fuzz run as files and a document (sim.report.fuzz): every counterexample exported, and the --json
document with the family's invariants and availability columns."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import sim
from sim.families.workspace import FAMILY
from sim.report.fuzz import export_all, fuzz_document
from sim.search.options import SearchOptions
from sim.search.pipeline import fuzz


@functools.cache
def _result():
    return fuzz(FAMILY, sim.load_workload("tiny"), ["none", "plan"], SearchOptions(60, workers=1, advise=True))


def test_export_all_writes_three_files_per_counterexample(tmp_path):
    """Each counterexample gets its scenario, timeline and pytest file, and an entry describing it."""
    entries = export_all(_result(), tmp_path)
    assert len(entries) == len(_result().counterexamples) >= 2
    for entry in entries:
        for key in ("file", "timeline", "pytest"):
            assert Path(entry[key]).exists()
        assert entry["replay"] == f"fencesim run {entry['file']}"
        assert entry["violating_events"] and entry["shrink"]["one_minimal"]
        assert {"recommended", "changes", "changes_needed", "sample_violating_runs"} <= set(entry["advice"])
    assert len(list(tmp_path.iterdir())) == 3 * len(entries)


def test_exported_scenarios_replay_their_violation(tmp_path):
    """Every exported scenario violates its invariant when replayed under its own protocol."""
    entries = export_all(_result(), tmp_path)
    assert entries, "the tiny workload under none has counterexamples to export"
    for entry in entries:
        result = sim.run_scenario(sim.load_scenario(entry["file"]))
        assert entry["invariant"] in [v.invariant for v in result.violations]
        assert [str(e) for e in sim.load_scenario(entry["file"]).events] == entry["events"]


def test_fuzz_document_has_the_documented_keys(tmp_path):
    """The document names the family, workload, seeds, invariants and availability columns, and the tallies."""
    document = fuzz_document(_result(), export_all(_result(), tmp_path))
    assert {"family", "workload", "seed_start", "seeds", "invariants", "availability", "runs", "violating_runs",
            "violating_runs_by_invariant", "by_protocol", "counterexamples", "claims"} <= set(document)
    assert (document["family"], document["workload"], document["runs"]) == ("workspace", "tiny", 120)
    assert document["invariants"] == list(FAMILY.safety_invariants)
    assert document["availability"] == ["spurious_rejections"]
    assert set(document["by_protocol"]) == {"none", "plan"}
    json.dumps(document)
