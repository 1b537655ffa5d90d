"""Baselines for CI: violations a team already knows about do not fail the job.

A baseline file (JSON, ``format = 1``) lists minimal counterexamples as
``(protocol, invariant, events)``, with the family and workload it was
written for.  ``fencesim fuzz --write-baseline FILE`` writes the
counterexamples of a run; ``--baseline FILE`` compares a run with it:

* a counterexample whose (protocol, invariant, events) is in the baseline is
  *known*: reported, it does not fail the job;
* one whose shrinking was cut short (a budget), or whose baseline entry was
  not shrunk, is *known* when the baseline holds an entry for its protocol
  and invariant: an unshrunk order cannot be compared, and a budget must not
  turn a known violation red;
* any other is *new* (exit 1);
* a baseline entry not found again is replayed under its protocol: it is
  *fixed* only if its order no longer violates its invariant, *still
  violating* if it does (this sweep did not happen to draw it), and *not run*
  when this run did not fuzz its protocol.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from sim.core.errors import InputError
from sim.core.files import read_text

BASELINE_FORMAT = 1


def _key(entry: dict[str, Any]) -> tuple[str, str, tuple[str, ...]]:
    return entry["protocol"], entry["invariant"], tuple(entry["events"])


def baseline_document(document: dict[str, Any]) -> dict[str, Any]:
    """The baseline of a fuzz document: its counterexamples, sorted."""
    entries = sorted(({"protocol": c["protocol"], "invariant": c["invariant"], "events": list(c["events"]),
                       "one_minimal": c["shrink"]["one_minimal"]}
                      for c in document["counterexamples"]), key=_key)
    return {"format": BASELINE_FORMAT, "family": document["family"], "workload": document["workload"],
            "entries": entries}


def read_baseline(path: str | Path) -> dict[str, Any]:
    """A baseline file (``family``, ``workload``, ``entries``); one clear line on anything malformed."""
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
                or not all(isinstance(e, str) for e in entry["events"])
                or not isinstance(entry.get("one_minimal", True), bool)):
            raise InputError(f"baseline entry {position} needs protocol, invariant and events (strings)", str(path))
    return data


def compare(document: dict[str, Any], entries: list[dict[str, Any]], path: str,
            still_violates: Callable[[dict[str, Any]], bool | None] | None = None) -> dict[str, Any]:
    """Mark each counterexample known or new; sort the baseline entries not found again into fixed, still
    violating and not run.

    ``still_violates(entry)`` replays an entry's order under its protocol: True if it still violates its
    invariant, False if not, None if it cannot be replayed (an event this workload does not know).
    """
    known_keys = {_key(e) for e in entries}
    known_pairs = {(e["protocol"], e["invariant"]) for e in entries}
    loose_pairs = {(e["protocol"], e["invariant"]) for e in entries if not e.get("one_minimal", True)}
    found_keys, found_pairs = set(), set()
    for example in document["counterexamples"]:
        key = _key(example)
        found_keys.add(key)
        found_pairs.add(key[:2])
        if key in known_keys:
            example["baseline"] = "known"
        elif key[:2] in known_pairs and (not example["shrink"]["one_minimal"] or key[:2] in loose_pairs):
            example["baseline"] = "known"  # one side not shrunk: matched by protocol and invariant
        else:
            example["baseline"] = "new"
    run = set(document["by_protocol"])
    fixed, still, not_run = [], [], []
    for entry in entries:
        if _key(entry) in found_keys:
            continue
        if entry["protocol"] not in run:
            not_run.append(entry)
        elif (entry["protocol"], entry["invariant"]) in found_pairs and not all(
                c["shrink"]["one_minimal"] for c in document["counterexamples"]
                if (c["protocol"], c["invariant"]) == (entry["protocol"], entry["invariant"])):
            still.append(entry)  # its pair was found but not shrunk: cannot say it is gone
        elif still_violates is not None and still_violates(entry) is not False:
            still.append(entry)
        else:
            fixed.append(entry)
    return {"file": path, "known": sum(c["baseline"] == "known" for c in document["counterexamples"]),
            "new": sum(c["baseline"] == "new" for c in document["counterexamples"]), "fixed": fixed,
            "still_violating": still, "not_run": not_run}
