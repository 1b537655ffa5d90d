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
* a proved-shortest order as long as a baseline entry of the same protocol
  and invariant whose order still violates is *known*: among equally short
  orders, the one the shrinker returns depends on the seed where the sweep
  first saw the violation;
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


def baseline_document(document: dict[str, Any], workload_digest: str | None = None) -> dict[str, Any]:
    """The baseline of a fuzz document: its counterexamples, sorted, and the workload they hold for."""
    entries = sorted(({"protocol": c["protocol"], "invariant": c["invariant"], "events": list(c["events"]),
                       "one_minimal": c["shrink"]["one_minimal"]}
                      for c in document["counterexamples"]), key=_key)
    return {"format": BASELINE_FORMAT, "family": document["family"], "workload": document["workload"],
            "workload_digest": workload_digest, "entries": entries}


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
    """Mark each counterexample known or new; sort the baseline entries no counterexample matched into fixed,
    still violating and not run.  Every counterexample is known or new, and every entry is matched or in
    exactly one of the three lists.

    ``still_violates(entry)`` replays an entry's order under its protocol: True if it still violates its
    invariant, False if not, None if it cannot tell.
    """
    unmatched = list(entries)
    verdicts: dict[int, bool | None] = {}

    def violates(entry: dict[str, Any]) -> bool | None:
        if still_violates is None:
            return None
        if id(entry) not in verdicts:
            verdicts[id(entry)] = still_violates(entry)
        return verdicts[id(entry)]

    def take(entry: dict[str, Any], how: str, example: dict[str, Any]) -> None:
        unmatched.remove(entry)
        example["baseline"] = "known"
        example["baseline_match"] = how

    for example in document["counterexamples"]:
        key = _key(example)
        same_pair = [e for e in unmatched if _key(e)[:2] == key[:2]]
        exact = next((e for e in same_pair if _key(e) == key), None)
        loose = next((e for e in same_pair if not e.get("one_minimal", True)), None)
        if exact is not None:
            take(exact, "order", example)
            continue
        if same_pair and (not example["shrink"]["one_minimal"] or loose is not None):
            take(loose or same_pair[0], "protocol and invariant (an order not shrunk)", example)
            continue
        # equally short orders of one violation: which one the shrinker returns depends on where the sweep
        # first saw it, so a proved-shortest order as short as a baseline entry that still violates is that
        # known violation, not a new one (replayed only when it comes to this)
        as_short = next((e for e in same_pair if len(e["events"]) == len(key[2]) and violates(e)), None) \
            if example["shrink"]["shortest_proved"] else None
        if as_short is not None:
            take(as_short, "protocol, invariant and length (another shortest order)", example)
        else:
            example["baseline"] = "new"
    run = set(document["by_protocol"])
    fixed, still, not_run = [], [], []
    for entry in unmatched:
        if entry["protocol"] not in run:
            not_run.append(entry)
        elif violates(entry) is False:
            fixed.append(entry)
        else:
            still.append(entry)
    return {"file": path, "known": sum(c["baseline"] == "known" for c in document["counterexamples"]),
            "new": sum(c["baseline"] == "new" for c in document["counterexamples"]), "fixed": fixed,
            "still_violating": still, "not_run": not_run}
