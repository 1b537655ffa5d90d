"""Baselines for CI: violations a team already knows about do not fail the job.

A baseline file (JSON, ``format = 1``) lists minimal counterexamples with the
family and workload they were written for.  Entries are matched by meaning,
not spelling: an entry's key is its *normalised* protocol (the preset
expanded, every knob written out, sorted by name: ``step-dedupe`` and
``fence=step,dedupe=journal`` are one protocol), its invariant and its
order (its invariant with where it happens, a *finding*, when the family says where).  ``fencesim fuzz
--write-baseline FILE`` writes the counterexamples
of a run; ``--baseline FILE`` compares a run with it:

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
  *fixed* only if its order no longer violates its invariant, *rare* if it
  does (this sweep did not happen to draw it; the key ``still_violating``, its
  older name, holds the same list), and *not run* when this run did not fuzz
  its protocol;
* a baseline keeps a history of the runs written into it (``runs``: each run's
  findings, the last ``MAX_HISTORY_RUNS``); every finding compared says in how
  many of them it was seen (``seen_in``), so a rare finding reads "seen in 3 of
  12 recorded runs"; each distinct order is replayed
  once, on several processes, within ``BASELINE_MAX_WORK`` -- an entry the
  limit leaves is *unchecked* (neither fixed nor confirmed), so tens of
  thousands of entries are compared in seconds.

The workload is recorded by meaning too (:func:`workload_digest`: the parsed
workload, without its name, description or comments), so an edit that
leaves the parsed workload equal keeps the baseline as it was.  When the
workload did change, every entry of a protocol this run fuzzes is
re-validated by replaying its order on the new workload: still violating
(kept), fixed, or no longer replayable (its events or protocol no longer
read) -- reported per entry, never a refusal of the whole file.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from sim.core.errors import FencesimError, InputError
from sim.core.family import Family
from sim.core.files import json_error_words, read_text, strict_json
from sim.core.findings import finding_id
from sim.core.knobs import Protocol
from sim.core.records import Record, json_int, json_object, json_objects, json_text, json_texts, optional
from sim.core.values import JsonObject
from sim.core.workload import Workload, did_you_mean

BASELINE_FORMAT = 1
#: The most entries a baseline may hold, and events an entry's order may hold (limits on everything).
MAX_BASELINE_ENTRIES = 100_000
MAX_ENTRY_EVENTS = 10_000
KEYS = ("format", "family", "workload", "workload_digest", "entries", "runs")
#: Runs a baseline's history keeps (the most recent): ``--write-baseline`` onto a baseline adds one.
MAX_HISTORY_RUNS = 50
ENTRY_KEYS = ("protocol", "label", "invariant", "events", "one_minimal", "where")

#: Replay work of the bulk replays of one comparison (runs and order events,
#: :func:`sim.search.budget.work_of`; about 5 s on one core): entries past it are reported *unchecked*,
#: neither fixed nor confirmed -- the same entries on every machine.
BASELINE_MAX_WORK = 100_000

#: ``replay(jobs, limited)``: for each (protocol, events) the safety invariants its order violates, or None
#: for a job the replay limit left undone (only when ``limited``).
Replayer = Callable[[Sequence[tuple[Protocol, tuple[Any, ...]]], bool], list[tuple[str, ...] | None]]


@dataclass(frozen=True, slots=True, kw_only=True)
class BaselineEntry(Record):
    """One known counterexample: its normalised protocol (and the label it was found under), its invariant,
    where (for a finding), its order and whether that order was shrunk to a minimal one."""

    protocol: str
    label: str | None = optional()
    invariant: str
    events: tuple[str, ...]
    one_minimal: bool | None = optional()
    where: str | None = optional()

    @property
    def finding(self) -> str:
        return finding_id(self.invariant, self.where or "")


@dataclass(frozen=True, slots=True, kw_only=True)
class BaselineRun(Record):
    """One run written into a baseline: its seeds and the findings it drew (:func:`history_key`)."""

    seed_start: int | None = optional()
    seeds: int | None = optional()
    findings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Baseline(Record):
    """A baseline file (see the module docstring)."""

    format: int = BASELINE_FORMAT
    family: str
    workload: str
    workload_digest: str | None = None
    entries: tuple[BaselineEntry, ...] = ()
    runs: tuple[BaselineRun, ...] = ()


def normalised_protocol(protocol: Protocol) -> str:
    """Every knob of ``protocol`` as ``knob=value``, sorted by name: one spelling per protocol."""
    table = protocol.table
    return ",".join(f"{name}={table.knob(name).show(protocol.knobs[name])}" for name in sorted(protocol.knobs))


def workload_digest(family: Family, workload: Workload) -> str:
    """A short SHA-256 of what a workload *is* (its parsed scenario part, fault classes, weights and limits),
    not of its file: a comment, the description or the key order can change without changing it."""
    scenario = family.dump_scenario(workload.base)
    if isinstance(scenario, dict):
        scenario = {k: v for k, v in scenario.items() if k not in ("name", "description", "protocol", "expect")}
    meaning = {"family": family.name, "scenario": scenario, "classes": list(workload.classes),
               "rates": {k: float(v) for k, v in sorted(workload.rates.items())},
               "per_run_max": workload.per_run_max, "swarm": workload.swarm, "max_events": workload.max_events,
               "extra": workload.extra}
    text = json.dumps(meaning, sort_keys=True, default=str, ensure_ascii=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def history_key(protocol: str, finding: str) -> str:
    """A finding of a baseline's run history: ``normalised protocol | finding``."""
    return f"{protocol} | {finding}"


def baseline_document(document: JsonObject, protocols: Mapping[str, Protocol], digest: str | None,
                      previous: Baseline | None = None) -> Baseline:
    """The baseline of a fuzz document: its counterexamples keyed by normalised protocol, sorted, and the
    workload they hold for.  ``protocols`` maps the document's labels to their protocols.  ``previous``: the
    baseline being replaced, for the same family and workload -- its run history goes on, with this run added."""
    entries = [BaselineEntry(protocol=normalised_protocol(protocols[json_text(c.get("protocol"))]),
                             label=json_text(c.get("protocol")), invariant=json_text(c.get("invariant")),
                             events=tuple(json_texts(c.get("events"))),
                             one_minimal=json_object(c.get("shrink")).get("one_minimal") is True,
                             where=json_text(c.get("where")) or None)
               for c in json_objects(document.get("counterexamples"))]
    entries.sort(key=_order)
    this_run = BaselineRun(seed_start=json_int(document.get("seed_start")), seeds=json_int(document.get("seeds")),
                           findings=tuple(sorted({history_key(e.protocol, e.finding) for e in entries})))
    same = previous is not None and (previous.family, previous.workload) == (document.get("family"),
                                                                           document.get("workload"))
    runs = [*(previous.runs if same and previous is not None else ()), this_run][-MAX_HISTORY_RUNS:]
    carried = carried_entries(previous, entries, digest) if same and previous is not None else []
    return Baseline(family=json_text(document.get("family")), workload=json_text(document.get("workload")),
                    workload_digest=digest, entries=tuple(sorted(entries + carried, key=_order)), runs=tuple(runs))


def _order(entry: BaselineEntry) -> tuple[str, str, str, tuple[str, ...]]:
    return entry.protocol, entry.invariant, entry.where or "", entry.events


def carried_entries(previous: Baseline, entries: Sequence[BaselineEntry], digest: str | None
                    ) -> list[BaselineEntry]:
    """The entries of the baseline being replaced whose finding this run did not draw (under their protocol):
    kept, so a finding seen in an earlier run stays known -- *rare* until a run with the baseline shows it
    fixed.  None when the workload changed since (an old entry would no longer be re-validated)."""
    if previous.workload_digest != digest:
        return []
    drawn = {(e.protocol, e.finding) for e in entries}
    kept, seen = [], set()
    for entry in previous.entries:
        key = (entry.protocol, entry.finding)
        if key not in drawn and key not in seen:
            seen.add(key)
            kept.append(entry)
    return kept


def read_baseline(path: str | Path) -> Baseline:
    """A baseline file, every field checked; one clear line (exit 4) on anything malformed."""
    text = read_text(path, "baseline file")
    try:
        data = strict_json(text)
    except (ValueError, RecursionError) as error:
        reason = json_error_words(error)
        raise InputError(f"not a baseline (JSON): {reason}", str(path)) from None
    if not isinstance(data, dict) or data.get("format") != BASELINE_FORMAT or not isinstance(data.get("entries"),
                                                                                            list):
        raise InputError(f"not a baseline of format {BASELINE_FORMAT} (write one with --write-baseline)", str(path))
    for key in data:
        if key not in KEYS:
            raise InputError(f"unknown key {key!r} in a baseline{did_you_mean(key, KEYS)}; keys: {', '.join(KEYS)}",
                             str(path))
    for key in ("family", "workload"):
        if not isinstance(data.get(key), str):
            raise InputError(f"a baseline's {key} must be a string, not {_shown(data.get(key))}", str(path))
    if data.get("workload_digest") is not None and not isinstance(data["workload_digest"], str):
        raise InputError("a baseline's workload_digest must be a string or null", str(path))
    if len(data["entries"]) > MAX_BASELINE_ENTRIES:
        raise InputError(f"a baseline holds {len(data['entries'])} entries; the limit is {MAX_BASELINE_ENTRIES}",
                         str(path))
    for position, entry in enumerate(data["entries"]):
        problem = _entry_problem(entry)
        if problem:
            raise InputError(f"baseline entry {position}: {problem}", str(path))
    problem = _runs_problem(data.get("runs", []))
    if problem:
        raise InputError(f"a baseline's runs {problem}", str(path))
    try:
        return Baseline.from_json(data)
    except InputError as error:  # what the checks above let through but the record does not read
        raise InputError(f"not a baseline: {error.message}", str(path)) from None


def _runs_problem(runs: Any) -> str | None:
    if not isinstance(runs, list):
        return f"must be a list of runs, not {_shown(runs)}"
    if len(runs) > MAX_HISTORY_RUNS:
        return f"hold {len(runs)} runs; the limit is {MAX_HISTORY_RUNS}"
    for position, run in enumerate(runs):
        if not isinstance(run, dict) or not isinstance(run.get("findings"), list) or not all(
                isinstance(f, str) and len(f) <= 20_000 for f in run["findings"]):
            return f"item {position} must be an object whose findings are a list of strings, not {_shown(run)}"
        for key in run:
            if key not in ("seed_start", "seeds", "findings"):
                return f"item {position} has an unknown key {key!r}; keys: seed_start, seeds, findings"
        for key in ("seed_start", "seeds"):
            if run.get(key) is not None and (not isinstance(run[key], int) or isinstance(run[key], bool)):
                return f"item {position}: {key} must be an integer, not {_shown(run[key])}"
    return None


def seen_in(runs: Sequence[BaselineRun], key: str) -> dict[str, int]:
    """In how many of a baseline's recorded runs a finding (:func:`history_key`) was seen."""
    return {"seen_in": sum(key in run.findings for run in runs), "runs": len(runs)}



def _shown(value: Any) -> str:
    text = json.dumps(value)[:60] if isinstance(value, (str, int, float, list, dict, bool)) or value is None \
        else type(value).__name__
    return text


def _entry_problem(entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return f"must be an object with {', '.join(ENTRY_KEYS[:4])}, not {_shown(entry)}"
    for key in entry:
        if key not in ENTRY_KEYS:
            return f"unknown key {key!r}{did_you_mean(key, ENTRY_KEYS)}; keys: {', '.join(ENTRY_KEYS)}"
    for key in ("protocol", "invariant"):
        if not isinstance(entry.get(key), str) or not entry[key] or len(entry[key]) > 10_000:
            return f"{key} must be a non-empty string, not {_shown(entry.get(key))}"
    if "where" in entry and (not isinstance(entry["where"], str) or len(entry["where"]) > 10_000):
        return f"where must be a string, not {_shown(entry['where'])}"
    if "label" in entry and not isinstance(entry["label"], str):
        return f"label must be a string, not {_shown(entry['label'])}"
    events = entry.get("events")
    if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
        return f"events must be a list of strings, not {_shown(events)}"
    if len(events) > MAX_ENTRY_EVENTS:
        return f"holds {len(events)} events; the limit is {MAX_ENTRY_EVENTS}"
    if not isinstance(entry.get("one_minimal", True), bool):
        return f"one_minimal must be true or false, not {_shown(entry['one_minimal'])}"
    return None


@dataclass
class Known:
    """One baseline entry, read: its normalised key and its parsed order."""

    entry: BaselineEntry
    protocol: str  # normalised
    parsed: Protocol
    events: tuple[Any, ...]

    @property
    def key(self) -> tuple[str, str, tuple[str, ...]]:
        return self.protocol, self.entry.finding, self.entry.events


@dataclass
class Prepared:
    """A baseline read against this run's workload: entries still standing, and those the workload's
    change settled (fixed) or left unreadable (``not_replayable``: entry and reason)."""

    path: str
    runs: list[BaselineRun] = field(default_factory=list)
    known: list[Known] = field(default_factory=list)
    fixed: list[BaselineEntry] = field(default_factory=list)
    not_replayable: list[JsonObject] = field(default_factory=list)
    workload_changed: bool = False
    violated: dict[tuple[str, tuple[str, ...]], tuple[str, ...] | None] = field(default_factory=dict)

    def replay(self, replayer: Replayer, items: Sequence[Known], limited: bool = True) -> None:
        """Replay the orders of ``items`` not replayed yet (each distinct order once); ``limited``: within the
        replay limit (what it leaves undone stays unknown)."""
        todo: dict[tuple[str, tuple[str, ...]], Known] = {}
        for item in items:
            key = (item.protocol, item.key[2])
            if self.violated.get(key) is None and key not in todo:
                todo[key] = item
        if todo:
            results = replayer([(item.parsed, item.events) for item in todo.values()], limited)
            self.violated.update(zip(todo, results))

    def status(self, item: Known) -> bool | None:
        """True if the entry's order still violates its invariant, False if not, None if not replayed."""
        violated = self.violated.get((item.protocol, item.key[2]))
        return None if violated is None else item.entry.invariant in violated


def prepare(known: Baseline, family: Family, workload: Workload, path: str, digest: str | None,
            run_protocols: set[str], replayer: Replayer) -> Prepared:
    """Read each entry against this workload (see the module docstring); refuse only another family's or
    another workload's baseline (exit 4).  ``run_protocols``: the normalised protocols this run fuzzes."""
    for key, written, name in (("family", known.family, family.name), ("workload", known.workload, workload.name)):
        if written != name:
            raise InputError(f"--baseline {path} was written for {key} {written!r}; this run fuzzes "
                             f"{name!r} (write one for it with --write-baseline)")
    prepared = Prepared(path, list(known.runs), workload_changed=known.workload_digest != digest)
    protocols: dict[str, Protocol | str] = {}
    for entry in known.entries:
        try:
            if entry.protocol not in protocols:
                try:
                    protocols[entry.protocol] = family.parse_protocol(entry.protocol)
                except FencesimError as error:
                    protocols[entry.protocol] = str(error)
            parsed = protocols[entry.protocol]
            if isinstance(parsed, str):
                raise InputError(parsed)
            if entry.invariant not in family.safety_invariants:
                raise InputError(f"unknown invariant {entry.invariant!r}; invariants: "
                                 f"{', '.join(family.safety_invariants)}")
            events = tuple(family.parse_event(workload.base, text) for text in entry.events)
        except (FencesimError, ValueError, KeyError, TypeError) as error:
            prepared.not_replayable.append({**entry.to_json(), "reason": str(error)[:300]})
            continue
        prepared.known.append(Known(entry, normalised_protocol(parsed), parsed, events))
    if prepared.workload_changed:
        ours = [item for item in prepared.known if item.protocol in run_protocols]
        prepared.replay(replayer, ours)
        prepared.fixed = [item.entry for item in ours if prepared.status(item) is False]
        prepared.known = [item for item in prepared.known if prepared.status(item) is not False
                          or item.protocol not in run_protocols]
    return prepared


def compare(document: JsonObject, prepared: Prepared, normalise: Callable[[str], str],
            replayer: Replayer) -> JsonObject:
    """Mark each counterexample known or new; sort the baseline entries no counterexample matched into fixed,
    rare (still violating, not drawn this time) and not run.  Every counterexample is known or new, and every
    entry is matched or in exactly one list.  ``normalise(label)`` gives a document label's normalised protocol."""
    by_pair: dict[tuple[str, str], list[Known]] = {}
    for item in prepared.known:
        by_pair.setdefault(item.key[:2], []).append(item)
    taken: set[int] = set()

    def take(item: Known, how: str, example: JsonObject) -> None:
        taken.add(id(item))
        example["baseline"] = "known"
        example["baseline_match"] = how

    examples = json_objects(document.get("counterexamples"))
    for example in examples:
        finding = example.get("finding")
        key = (normalise(json_text(example.get("protocol"))),
               finding if isinstance(finding, str) else json_text(example.get("invariant")),
               tuple(json_texts(example.get("events"))))
        if prepared.runs:
            example["baseline_history"] = seen_in(prepared.runs, history_key(*key[:2]))
        same_pair = [item for item in by_pair.get(key[:2], []) if id(item) not in taken]
        exact = next((item for item in same_pair if item.key == key), None)
        loose = next((item for item in same_pair if item.entry.one_minimal is False), None)
        shrink = json_object(example.get("shrink"))
        if exact is not None:
            take(exact, "order", example)
            continue
        if same_pair and (not shrink.get("one_minimal") or loose is not None):
            take(loose or same_pair[0], "protocol and invariant (an order not shrunk)", example)
            continue
        # equally short orders of one violation: which one the shrinker returns depends on where the sweep
        # first saw it, so a proved-shortest order as short as a baseline entry that still violates is that
        # known violation, not a new one (replayed only when it comes to this)
        as_short = [item for item in same_pair if len(item.events) == len(key[2])] \
            if shrink.get("shortest_proved") else []
        prepared.replay(replayer, as_short, limited=False)
        match = next((item for item in as_short if prepared.status(item)), None)
        if match is not None:
            take(match, "protocol, invariant and length (another shortest order)", example)
        else:
            example["baseline"] = "new"
    run = {normalise(label) for label in json_object(document.get("by_protocol"))}
    unmatched = [item for item in prepared.known if id(item) not in taken]
    prepared.replay(replayer, [item for item in unmatched if item.protocol in run])
    fixed, still, not_run, unchecked = list(prepared.fixed), [], [], []
    for item in unmatched:
        status = prepared.status(item)
        if item.protocol not in run:
            not_run.append(item.entry)
        elif status is None:
            unchecked.append(item.entry)
        elif status:
            still.append({**item.entry.to_json(), **(seen_in(prepared.runs, history_key(item.protocol, item.key[1]))
                                                     if prepared.runs else {})})
        else:
            fixed.append(item.entry)
    return {"file": prepared.path, "known": sum(c.get("baseline") == "known" for c in examples),
            "new": sum(c.get("baseline") == "new" for c in examples), "fixed": [e.to_json() for e in fixed],
            "rare": still, "still_violating": still, "runs_recorded": len(prepared.runs),
            "not_run": [e.to_json() for e in not_run], "not_replayable": prepared.not_replayable,
            "unchecked": [e.to_json() for e in unchecked], "workload_changed": prepared.workload_changed}
