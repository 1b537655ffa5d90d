"""Findings of two runs compared: what is new, what is still there, what is gone.

``fencesim diff A.json B.json`` reads two documents fencesim wrote -- a ``fuzz --json`` document or a review's
``results.json`` -- and compares their findings (:mod:`sim.core.findings`).  A finding is keyed by where it was
found (the review's design, else the workload), its protocol and its name (``invariant @ where``); its order
is shown, never compared: among equally short orders the one a run exports may differ, and a finding is the
same bug whichever it shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from sim.core.errors import InputError
from sim.core.files import read_text, strict_json
from sim.core.findings import finding_id

#: How deep a document is searched for counterexamples, and how many it may hold (limits on everything).
MAX_DEPTH = 12
MAX_FINDINGS = 100_000


@dataclass(frozen=True)
class Finding:
    scope: str  # the design or workload it was found on
    protocol: str
    name: str  # invariant @ where
    events: tuple[str, ...]

    @property
    def key(self) -> tuple[str, str, str]:
        return self.scope, self.protocol, self.name

    def words(self) -> str:
        events = " ; ".join(self.events) or "(no fault needed)"
        scope = f"{self.scope}: " if self.scope else ""
        return f"{scope}{self.name} under {self.protocol} ({len(self.events)} events: {events})"


def read_findings(path: str | Path) -> list[Finding]:
    """The findings of one document; a file that is not such a document is an :class:`InputError`."""
    text = read_text(path, "run document")
    try:
        data = strict_json(text)
    except ValueError as error:
        raise InputError(f"{path}: not JSON ({error})") from None
    if not isinstance(data, dict) or not _is_run(data):
        raise InputError(f"{path}: not a fencesim run (a fuzz --json document or a review's results.json)")
    found = list(_walk(data, "", 0, str(path)))
    if len(found) > MAX_FINDINGS:
        raise InputError(f"{path}: more than {MAX_FINDINGS:,} findings")
    return found


def _is_run(data: dict) -> bool:
    return "counterexamples" in data or isinstance(data.get("designs"), list)


def _walk(value: Any, scope: str, depth: int, path: str) -> Iterator[Finding]:
    if depth > MAX_DEPTH:
        return
    if isinstance(value, list):
        for item in value:
            yield from _walk(item, scope, depth + 1, path)
        return
    if not isinstance(value, dict):
        return
    for key in ("design", "name", "workload"):
        if isinstance(value.get(key), str) and ("counterexamples" in value or key == "design"):
            scope = value[key]
            break
    examples = value.get("counterexamples")
    if isinstance(examples, list):
        for position, example in enumerate(examples):
            yield _finding(example, scope, f"{path}: counterexamples[{position}]")
    for key, item in value.items():
        if key != "counterexamples" and isinstance(item, (dict, list)):
            yield from _walk(item, scope, depth + 1, path)


def _finding(example: Any, scope: str, where: str) -> Finding:
    if not isinstance(example, dict) or not isinstance(example.get("protocol"), str) \
            or not isinstance(example.get("invariant"), str):
        raise InputError(f"{where} must be an object with a protocol and an invariant")
    name = example.get("finding")
    if not isinstance(name, str):
        place = example.get("where", "")
        name = finding_id(example["invariant"], place if isinstance(place, str) else "")
    events = example.get("events", [])
    if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
        raise InputError(f"{where}.events must be a list of events (strings)")
    return Finding(scope, example["protocol"], name, tuple(events))


@dataclass
class Comparison:
    new: list[Finding]
    still: list[Finding]
    fixed: list[Finding]

    def to_json(self) -> dict[str, Any]:
        def rows(found: list[Finding]) -> list[dict[str, Any]]:
            return [{"scope": f.scope, "protocol": f.protocol, "finding": f.name, "events": list(f.events)}
                    for f in found]

        return {"new": rows(self.new), "still": rows(self.still), "fixed": rows(self.fixed)}


def compare(before: list[Finding], after: list[Finding]) -> Comparison:
    """``after`` against ``before``, each list in the order of its document (a finding once)."""
    old = {f.key: f for f in before}
    new = {f.key: f for f in after}
    return Comparison([f for k, f in new.items() if k not in old], [f for k, f in new.items() if k in old],
                      [f for k, f in old.items() if k not in new])
