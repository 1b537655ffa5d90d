"""The seed's verdict table, computed by the model, beside the seed code's answers.

Every cell of ``table`` comes from replaying ``scenarios/seed/<name>.toml``
under the row's preset; nothing is typed in.  ``SEED_TABLE`` is the seed
article's printed table, kept only to compare against (``docs/workspace.md``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from sim.core.files import read_toml
from sim.core.result import run_scenario
from sim.families.workspace.seedcode import ROWS, seed_code_table

SEED_SCENARIOS = ("concurrent_edit", "preemption_retry", "replan_drift")
#: Table row -> fencesim preset (the fixture's rows; see docs/workspace.md).
ROW_PRESETS = {"fence=none": "none", "fence=plan": "plan", "fence=step": "step", "dedupe on": "step-dedupe"}

#: The seed article's printed table, to compare the model's against.
SEED_TABLE = {
    "fence=none": {"concurrent_edit": "applied", "preemption_retry": "applied twice", "replan_drift": "applied"},
    "fence=plan": {"concurrent_edit": "rejected:stale_rev", "preemption_retry": "rejected:stale_rev",
                   "replan_drift": "rejected:stale_rev"},
    "fence=step": {"concurrent_edit": "rejected:stale_rev", "preemption_retry": "rejected:stale_rev",
                   "replan_drift": "applied"},
    "dedupe on": {"concurrent_edit": "rejected:stale_rev", "preemption_retry": "deduped", "replan_drift": "applied"},
}

_WHY = {
    ("fence=step", "concurrent_edit"): "the seed code's stamp() re-reads rev and hash at apply time, so the step "
    "fence compares the workspace with itself and accepts the write over the human's edit "
    "(fencesim stamps at dispatch; the seed code is fence=step,stamp_at=apply)",
    ("dedupe on", "concurrent_edit"): "same stamp() at apply: the fence is vacuous, so dedupe on applies over the "
    "human's edit too",
    ("fence=step", "preemption_retry"): "the retry is re-stamped with the current rev by the fresh executor, so the "
    "fence passes and s1 is written a second time (fencesim's client re-sends the same stamped message)",
    ("dedupe on", "preemption_retry"): "re-stamping at apply changes the dedupe key from (s1, 0) to (s1, 1), so the "
    "journal misses and s1 is written twice",
    ("fence=plan", "replan_drift"): "the seed code calls ex.plan(ws.rev) on the re-plan, telling the executor of the "
    "re-route: the rev check passes and the hash check rejects (fencesim's re-routing is invisible to the executor, "
    "whose plan base stays 0)",
}


def seed_dir() -> Path:
    here = Path.cwd() / "scenarios" / "seed"
    if here.is_dir():
        return here
    return Path(__file__).resolve().parents[3] / "scenarios" / "seed"


def model_table(directory: Path | None = None) -> dict[str, dict[str, str | None]]:
    """Each cell: the outcome of replaying the seed scenario under the row's preset."""
    from sim.families.workspace import FAMILY

    directory = directory or seed_dir()
    scenarios = {name: FAMILY.load_scenario(*read_toml(directory / f"{name}.toml")) for name in SEED_SCENARIOS}
    return {
        row: {name: run_scenario(FAMILY, scenarios[name], preset).outcome for name in SEED_SCENARIOS}
        for row, preset in ROW_PRESETS.items()
    }


def compute_matrix(directory: Path | None = None) -> dict[str, Any]:
    """The ``fencesim matrix --json`` document: table, seed_code, differences, footnotes."""
    table = model_table(directory)
    seed_code = seed_code_table()
    differences = []
    for row in ROWS:
        for name in SEED_SCENARIOS:
            if table[row][name] != seed_code[row][name]:
                differences.append({
                    "row": row, "scenario": name, "table": table[row][name],
                    "seed_code": seed_code[row][name],
                    "why": _WHY.get((row, name), "not explained: the models disagree here unexpectedly"),
                })
    everywhere = seed_code_table(dedupe_everywhere=True)
    footnotes = []
    for row in ROWS:
        for name in SEED_SCENARIOS:
            if everywhere[row][name] != seed_code[row][name] and everywhere[row][name] != table[row][name]:
                footnotes.append(
                    f"run with the fixture's default dedupe=True everywhere, row {row} {name} says "
                    f"{everywhere[row][name]!r} instead of {table[row][name]!r}"
                )
    return {
        "table": table,
        "seed_code": seed_code,
        "differences": differences,
        "matches_seed_table": table == SEED_TABLE,
        "footnotes": footnotes,
    }


def matrix_frame(document: dict[str, Any] | None = None) -> pd.DataFrame:
    """The matrix as a DataFrame: one row per (row, scenario), model vs seed code."""
    document = document or compute_matrix()
    rows = []
    for row in ROWS:
        for name in SEED_SCENARIOS:
            rows.append({
                "row": row, "scenario": name, "model": document["table"][row][name],
                "seed_table": SEED_TABLE[row][name], "seed_code": document["seed_code"][row][name],
            })
    return pd.DataFrame(rows)
