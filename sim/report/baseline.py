"""Baselines for CI: violations a team already knows about do not fail the job.

A baseline file (JSON, ``format = 1``) lists minimal counterexamples as
``(protocol, invariant, events)``.  ``fencesim fuzz --write-baseline FILE``
writes the counterexamples of a run; ``--baseline FILE`` compares a run
with it: a counterexample in the baseline is *known* (reported, does not
fail the job), one that is not is *new* (exit 1), and a baseline entry the
run did not find again is reported as *fixed*.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sim.core.errors import InputError
from sim.core.files import read_text

BASELINE_FORMAT = 1


def _key(entry: dict[str, Any]) -> tuple[str, str, tuple[str, ...]]:
    return entry["protocol"], entry["invariant"], tuple(entry["events"])


def baseline_document(document: dict[str, Any]) -> dict[str, Any]:
    """The baseline of a fuzz document: its counterexamples, sorted."""
    entries = sorted(({"protocol": c["protocol"], "invariant": c["invariant"], "events": list(c["events"])}
                      for c in document["counterexamples"]), key=_key)
    return {"format": BASELINE_FORMAT, "family": document["family"], "workload": document["workload"],
            "entries": entries}


def read_baseline(path: str | Path) -> list[dict[str, Any]]:
    """The entries of a baseline file; one clear line on anything malformed."""
    text = read_text(path, "baseline file")
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as error:
        raise InputError(f"not a baseline (JSON): {error}", str(path)) from None
    if not isinstance(data, dict) or data.get("format") != BASELINE_FORMAT or not isinstance(data.get("entries"), list):
        raise InputError(f"not a baseline of format {BASELINE_FORMAT} (write one with --write-baseline)", str(path))
    for position, entry in enumerate(data["entries"]):
        if (not isinstance(entry, dict) or not isinstance(entry.get("protocol"), str)
                or not isinstance(entry.get("invariant"), str) or not isinstance(entry.get("events"), list)
                or not all(isinstance(e, str) for e in entry["events"])):
            raise InputError(f"baseline entry {position} needs protocol, invariant and events (strings)", str(path))
    return data["entries"]


def compare(document: dict[str, Any], entries: list[dict[str, Any]], path: str) -> dict[str, Any]:
    """Mark each counterexample known or new; list the baseline entries not found again (fixed)."""
    known_keys = {_key(e) for e in entries}
    found_keys = set()
    for example in document["counterexamples"]:
        key = _key(example)
        found_keys.add(key)
        example["baseline"] = "known" if key in known_keys else "new"
    fixed = [e for e in entries if _key(e) not in found_keys]
    return {"file": path, "known": sum(c["baseline"] == "known" for c in document["counterexamples"]),
            "new": sum(c["baseline"] == "new" for c in document["counterexamples"]), "fixed": fixed}
