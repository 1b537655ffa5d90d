"""Findings of two runs compared: what is new, what is still there, what is gone -- and why it is gone.

``fencesim diff A.json B.json`` reads two documents fencesim wrote, both ``fuzz --json`` documents or both
reviews' ``results.json``, and compares their findings (:mod:`sim.core.findings`).  A finding is keyed by where
it was found (the review's design, else the workload), its protocol and its name (``invariant @ where``); its
order is shown, never compared: among equally short orders the one a run exports may differ, and a finding is
the same bug whichever it shows.

A finding of A that B lacks is only *fixed* when B swept its protocol over every seed A did: runs are
deterministic, so the same seeds would have drawn it again.  Swept over other seeds it is *not drawn* (gone
from this sample, not shown fixed: replay its order, or compare with a baseline, to tell), and where B did not
sweep its protocol at all it is *not run*.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from sim.core.errors import InputError
from sim.core.files import read_text, strict_json
from sim.core.findings import finding_id
from sim.core.records import json_int, json_objects, json_text, json_texts
from sim.core.values import JsonObject, JsonValue
from sim.report.results import DesignRow, Lasso, LivenessRow, ReviewDocument

#: How deep a document is searched for counterexamples, and how many it may hold (limits on everything).
MAX_DEPTH = 12
MAX_FINDINGS = 100_000
#: Where a liveness lasso's prefix ends and its cycle begins, among a finding's events.
FOREVER = "(then forever)"


@dataclass(frozen=True)
class Finding:
    scope: str  # the design or workload it was found on
    protocol: str
    name: str  # invariant @ where, or "property (liveness)"
    events: tuple[str, ...]
    exhaustive: bool = False  # a liveness lasso: found by a search of every behaviour, not drawn by a seed

    @property
    def key(self) -> tuple[str, str, str]:
        return self.scope, self.protocol, self.name

    def words(self) -> str:
        events = " ; ".join(self.events) or "(no fault needed)"
        scope = f"{self.scope}: " if self.scope else ""
        count = len([e for e in self.events if e != FOREVER])
        return f"{scope}{self.name} under {self.protocol} ({count} event{'' if count == 1 else 's'}: {events})"


def _read(path: str | Path) -> JsonObject:
    """One run document, parsed; a file that is not such a document is an :class:`InputError`."""
    text = read_text(path, "run document")
    try:
        data = strict_json(text)
    except ValueError as error:
        raise InputError(f"{path}: not JSON ({error})") from None
    if not isinstance(data, dict) or not _is_run(data):
        raise InputError(f"{path}: not a fencesim run (a fuzz --json document or a review's results.json)")
    return data


def _findings(found: list[Finding], path: str) -> list[Finding]:
    """The findings of one document, within the limit."""
    if len(found) > MAX_FINDINGS:
        raise InputError(f"{path}: more than {MAX_FINDINGS:,} findings")
    return found


def _is_run(data: JsonObject) -> bool:
    return "counterexamples" in data or isinstance(data.get("designs"), list)


def _walk(value: JsonValue, scope: str, depth: int, path: str) -> Iterator[Finding]:
    """The counterexamples of a ``fuzz --json`` document, wherever it nests them (its workload is their scope)."""
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
            scope = json_text(value.get(key))
            break
    examples = value.get("counterexamples")
    if "counterexamples" in value and not isinstance(examples, list):  # findings unread would pass blind
        raise InputError(f"{path}: 'counterexamples' must be a list of counterexamples, not "
                         f"{type(examples).__name__}")
    for position, example in enumerate(examples if isinstance(examples, list) else ()):
        yield _finding(example, scope, f"{path}: counterexamples[{position}]")
    for key, item in value.items():
        if key != "counterexamples" and isinstance(item, (dict, list)):
            yield from _walk(item, scope, depth + 1, path)


def _finding(example: JsonValue, scope: str, where: str) -> Finding:
    if not isinstance(example, dict) or not isinstance(example.get("protocol"), str) \
            or not isinstance(example.get("invariant"), str):
        raise InputError(f"{where} must be an object with a protocol and an invariant")
    name = example.get("finding")
    if not isinstance(name, str):
        name = finding_id(json_text(example.get("invariant")), json_text(example.get("where")))
    events = example.get("events", [])
    if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
        raise InputError(f"{where}.events must be a list of events (strings)")
    return Finding(scope, json_text(example.get("protocol")), name, tuple(json_texts(events)))


def _review_findings(review: ReviewDocument, judged: set[tuple[str, str]]) -> Iterator[Finding]:
    """A review's findings: each design's counterexamples, then the lassos of its Liveness section (each
    (design, protocol) whose liveness it judged gathered in ``judged``)."""
    for design in review.designs:
        for example in design.counterexamples:
            yield Finding(design.name, example.protocol, example.finding or finding_id(example.invariant,
                                                                                       example.where or ""),
                          example.events)
        for row in _liveness_rows(design):
            judged.add((design.name, row.protocol))
            for name, verdict in row.properties.items():
                if verdict.status == "violated":
                    lasso = verdict.lasso or Lasso()
                    yield Finding(design.name, row.protocol, f"{name} (liveness)",
                                  (*lasso.prefix, FOREVER, *lasso.cycle), exhaustive=True)


def _liveness_rows(design: DesignRow) -> list[LivenessRow]:
    """A review's liveness results: one row per protocol judged (``sim.app.review_liveness``)."""
    return [LivenessRow.from_json(row, f"designs[{design.name}].sections.liveness[{position}]")
            for section in design.sections for position, row in enumerate(json_objects(section.get("liveness")))]


@dataclass
class Run:
    """A run's findings, its kind (``fuzz`` or ``review``) and what it swept: (scope, protocol) -> (first seed,
    runs)."""

    path: str
    kind: str
    findings: list[Finding]
    swept: dict[tuple[str, str], tuple[int, int]]
    judged: set[tuple[str, str]] = field(default_factory=set)  # (design, protocol) whose liveness was judged


def read_run(path: str | Path) -> Run:
    """One run document: its findings and what it swept; an :class:`InputError` for anything else, and for a
    document whose findings cannot all be read (a list of counterexamples, or a review's design, of another
    type): a finding left unread would be compared as gone."""
    data = _read(path)
    swept: dict[tuple[str, str], tuple[int, int]] = {}
    judged: set[tuple[str, str]] = set()
    if isinstance(data.get("designs"), list):
        try:
            review = ReviewDocument.from_json(data)
            found = list(_review_findings(review, judged))
        except InputError as error:
            raise InputError(f"{path}: {error.message} (a review whose findings cannot all be read cannot be "
                             "compared)") from None
        for design in review.designs:
            for row in design.protocols:
                swept[(design.name, row.protocol)] = (0, row.runs)  # a review's sweeps start at seed 0
        return Run(str(path), "review", _findings(found, str(path)), swept, judged)
    by_protocol = data.get("by_protocol")
    for label, tally in (by_protocol.items() if isinstance(by_protocol, dict) else ()):
        runs = tally.get("runs") if isinstance(tally, dict) else None
        swept[(json_text(data.get("workload")), label)] = (_int(data.get("seed_start")), _int(runs))
    return Run(str(path), "fuzz", _findings(list(_walk(data, "", 0, str(path))), str(path)), swept, judged)


def _int(value: JsonValue) -> int:
    return json_int(value) or 0


@dataclass
class Comparison:
    new: list[Finding]
    still: list[Finding]
    fixed: list[Finding]
    not_drawn: list[Finding]
    not_run: list[Finding]

    def to_json(self) -> JsonObject:
        def rows(found: list[Finding]) -> list[JsonObject]:
            return [{"scope": f.scope, "protocol": f.protocol, "finding": f.name, "events": list(f.events)}
                    for f in found]

        return {"new": rows(self.new), "still": rows(self.still), "fixed": rows(self.fixed),
                "not_drawn": rows(self.not_drawn), "not_run": rows(self.not_run)}


def compare(before: Run, after: Run) -> Comparison:
    """``after`` against ``before``, each list in the order of its document (a finding once)."""
    if before.kind != after.kind:
        raise InputError(f"{before.path} is a {_kind_words(before.kind)} and {after.path} a "
                         f"{_kind_words(after.kind)}: compare two runs of one kind")
    old = {f.key: f for f in before.findings}
    new = {f.key: f for f in after.findings}
    gone: dict[str, list[Finding]] = {"fixed": [], "not_drawn": [], "not_run": []}
    for key, finding in old.items():
        if key not in new:
            gone[_why_gone(finding, before, after)].append(finding)
    return Comparison([f for k, f in new.items() if k not in old], [f for k, f in new.items() if k in old],
                      gone["fixed"], gone["not_drawn"], gone["not_run"])


def _why_gone(finding: Finding, before: Run, after: Run) -> str:
    if finding.exhaustive:  # a lasso gone from a liveness check of every behaviour is fixed
        return "fixed" if finding.key[:2] in after.judged else "not_run"
    then, now = before.swept.get(finding.key[:2]), after.swept.get(finding.key[:2])
    if now is None or now[1] == 0:
        return "not_run"
    if then is None:
        return "not_drawn"
    covers = now[0] <= then[0] and now[0] + now[1] >= then[0] + then[1]
    return "fixed" if covers else "not_drawn"


def _kind_words(kind: str) -> str:
    return "review's results.json" if kind == "review" else "fuzz --json document"
