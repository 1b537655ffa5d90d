"""The family contract: what a protocol family gives the search, the reports and the CLI.

A *family* is one kind of system under test -- the revision-fenced
workspace, the durable-effects runtime, or a user's own protocol.
Everything above the models (sweeps, shrinking, exhaustive search, the
advisor, export, CI outputs, the command line) sees a family only through
this interface, the way a model checker sees a model only through its
``init / actions / next_state / properties``: the search never looks inside
a model and a model never knows how it is searched.

The contract has three parts, each a base class of :class:`Family`:
:class:`Model` (what the search needs), :class:`Codec` (files) and
:class:`Presentation` (how reports show it); each lists its required and
optional members.  In the order a fuzz run uses them:

* identity: ``name`` (spelled in files and on the command line), ``aliases``,
  ``title``; the knob table ``knobs`` with its presets;
* files: :meth:`load_scenario` / :meth:`dump_scenario` (a scenario and an
  exported counterexample are the same kind of file), :meth:`load_workload`;
* orders: an *event* is a hashable value whose ``str()`` is its line in a
  scenario file; :meth:`generate` turns ``(workload, seed)`` into an order
  that depends on nothing else; :meth:`alphabet` lists every event the
  workload can produce (for exhaustive search);
* runs: :meth:`replay` is a pure function of ``(scenario, protocol,
  events)``; an event that cannot happen at its point has no effect and is
  reported in :attr:`Replay.skipped`, so deleting any event of an order
  still gives a valid run -- the property shrinking needs;
* judgement: ``checks`` (pure functions over the history; safety checks
  fail a run, availability checks are counted), :meth:`measure` (liveness
  and other per-run numbers), :meth:`claims` (the family's published claims,
  judged by a sweep's counts);
* search aids: :meth:`machine` (the model as a transition system over one
  state value, with guards written once: exhaustive search drives it
  directly), :meth:`state_key` (two orders with equal keys have the same
  future, so exhaustive search merges them), :meth:`footprint` (what an event
  reads and writes, declared in the knob table; :meth:`independent` is derived
  from it), :meth:`symmetry` (interchangeable parts: ``explore --symmetry``
  keeps one state per orbit), :meth:`alphabets` (smaller alphabets tried
  first when tightening a counterexample), the knob ranks the advisor walks;
* presentation: ``lanes`` (timeline columns), :meth:`describe` (a history
  event as a timeline cell), :meth:`counterexample` (a scenario file for a
  minimal order), :meth:`single_faults` (the cells of a single-fault grid).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any, Hashable, Iterable, Mapping, Sequence, runtime_checkable
from typing import Protocol as TypingProtocol

from sim.core.checks import CheckReport, CheckSpec, run_checks
from sim.core.footprint import Footprint, independent, resolve
from sim.core.history import Event, History
from sim.core.kernel import RunEnd
from sim.core.knobs import KnobTable, Protocol
from sim.core.ledger import Entry
from sim.core.liveness import LivenessModel
from sim.core.machine import Machine
from sim.core.mechanisms import never_fired_lines
from sim.core.symmetry import Symmetry
from sim.core.values import JsonObject, cut, shown
from sim.core.workload import Workload


@dataclass
class Replay:
    """One run: its history, why it ended, the model's final state, and which
    events of the order had no effect (by position in ``events``)."""

    events: tuple[Any, ...]
    history: History
    end: RunEnd
    state: Any = None
    skipped: frozenset[int] = frozenset()

    def valid_order(self) -> tuple[Any, ...]:
        """The order without the events that had no effect."""
        return tuple(e for i, e in enumerate(self.events) if i not in self.skipped)

    @property
    def last_skipped(self) -> bool:
        return bool(self.events) and (len(self.events) - 1) in self.skipped


@dataclass(frozen=True)
class ReviewPlan:
    """What ``fencesim review`` reviews for a family by default: the seed's designs.

    ``workload`` is a workload name; ``protocols`` the presets and the
    weakened variants the seed discusses; ``scenarios`` glob patterns (from
    the repository root) of scripted scenarios replayed for the verdict matrix.
    """

    title: str
    workload: str
    protocols: tuple[str, ...]
    scenarios: tuple[str, ...] = ()
    seeds: int = 1000


@dataclass
class Cell:
    """One cell of a single-fault grid: its labels (row..., column) and its order."""

    labels: tuple[str, ...]
    events: tuple[Any, ...]


@dataclass(frozen=True)
class StateTable:
    """One table of a run's state, as the explorer shows it (``fencesim serve``): a title, columns, rows of text."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@runtime_checkable
class Scenario(TypingProtocol):
    """What every family's scenario offers the layers above: a name and its own order of events.

    A family's scenario class has more -- files, a plan, a workflow -- that only the family reads; the
    search, the reports and the CLI read only these."""

    name: str
    events: Any


class Model(abc.ABC):
    """The model: identity, knobs, orders, runs and their judgement -- all the search needs.

    Required: :meth:`generate`, :meth:`alphabet`, :meth:`replay`, :meth:`state_key`, :meth:`verdicts`,
    and the attributes ``name``, ``knobs`` and ``checks``.  Optional (each with a safe default):
    :meth:`machine` with :meth:`final_state`, :meth:`footprint_kind` and :meth:`footprint_keys` (with
    footprints in the knob table), :meth:`alphabets`, :meth:`measure`,
    :meth:`claims`, :meth:`outcome`, :meth:`effect_ledger`, :meth:`fault_count`."""

    name: str = ""
    aliases: tuple[str, ...] = ()
    title: str = ""
    knobs: KnobTable
    fault_classes: tuple[str, ...] = ()
    checks: tuple[CheckSpec, ...] = ()
    #: The protocol a scenario without one runs under.
    default_protocol: str = ""
    #: Liveness: the :meth:`measure` names of (work done, work planned) -- the share of planned
    #: steps applied, of tasks completed.  A protocol that does nothing is flagged by it.
    progress: tuple[str, str] | None = None
    #: Honest liveness: the :meth:`measure` names of (work done safely, work planned) -- work that did what
    #: its author meant, once -- reported beside :attr:`progress`, and what the advisor's cost and the work-done
    #: figure read when set (None: the family does not tell them apart; they read :attr:`progress`).
    safe_progress: tuple[str, str] | None = None

    def parse_protocol(self, text: str | Protocol) -> Protocol:
        if isinstance(text, Protocol):
            return text
        return self.knobs.parse(text)

    @property
    def presets(self) -> tuple[str, ...]:
        return tuple(self.knobs.presets)

    @property
    def safety_invariants(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.checks if c.safety)

    @property
    def availability_columns(self) -> tuple[str, ...]:
        return tuple(c.column for c in self.checks if not c.safety)

    def progress_share(self, measures: dict[str, float]) -> float | None:
        """Work done over work planned, from summed measures (None if the family has no such measure)."""
        if self.progress is None:
            return None
        done, planned = (measures.get(name, 0) for name in self.progress)
        return done / planned if planned else None

    def safe_progress_share(self, measures: dict[str, float]) -> float | None:
        """Work done safely over work planned (:attr:`safe_progress`), from summed measures (None if the family
        does not tell work done safely apart, or nothing was planned)."""
        if self.safe_progress is None:
            return None
        done, planned = (measures.get(name, 0) for name in self.safe_progress)
        return done / planned if planned else None

    def check(self, history: History, only: Sequence[str] | None = None, explain: bool = True) -> CheckReport:
        """Every check (or those named) over ``history``; ``explain=False``: without the facts of other events
        (:func:`sim.core.checks.run_checks`), for counting."""
        specs = self.checks if only is None else [c for c in self.checks if c.name in only]
        return run_checks(specs, history, explain)

    @abc.abstractmethod
    def generate(self, workload: Workload, seed: int) -> tuple[Any, ...]:
        """The order of run ``seed``: a pure function of (workload, seed)."""

    @abc.abstractmethod
    def alphabet(self, workload: Workload) -> list[Any]:
        """Every event the workload can produce, in a fixed order."""

    def alphabets(self, workload: Workload) -> list[list[Any]]:
        """Alphabets to search for a shorter order, smallest first; the last is the whole one."""
        return [self.alphabet(workload)]

    @abc.abstractmethod
    def replay(self, scenario: Any, protocol: Protocol, events: Iterable[Any] | None = None) -> Replay:
        """Run ``events`` (default: the scenario's own) under ``protocol``."""

    def machine(self, scenario: Any, protocol: Protocol) -> Machine | None:
        """The family's transition system for one (scenario, protocol), or None (see :mod:`sim.core.machine`).

        With a machine, exhaustive search drives the model directly -- no kernel per explored state,
        guards asked before an event is tried -- and the law suite checks that it agrees with
        :meth:`replay` byte for byte.  Without one, every candidate order is replayed.
        """
        return None

    def liveness(self, workload: Workload, protocol: Protocol) -> LivenessModel | None:
        """The family's liveness properties and the fairness they are judged under (:mod:`sim.core.liveness`), or
        None (default: none declared; ``explore --liveness`` then says so).  Judged on :meth:`machine`'s states."""
        return None

    def final_state(self, replay: Replay) -> Any:
        """The machine state a replay ended in (for a family with a :meth:`machine`)."""
        raise NotImplementedError(f"the {self.name} family has no machine")

    def footprint(self, workload: Workload, protocol: Protocol, event: Any) -> Footprint | None:
        """What ``event`` reads and writes under ``protocol``, from the knob table's declarations (its kind's
        footprint and what each knob value adds), or None when the family declares none (:mod:`sim.core.footprint`).
        Not meant to be overridden: declare footprints in the knob table, and say which kind an event is
        (:meth:`footprint_kind`) and which keys fill its templates (:meth:`footprint_keys`)."""
        if self.knobs.events is None:
            return None
        declared = self.knobs.access(protocol, self.footprint_kind(event))
        return resolve(declared, self.footprint_keys(workload, event), event)

    def footprint_kind(self, event: Any) -> str:
        """The kind of event whose footprint ``event`` has (default: its ``kind`` attribute)."""
        return str(event.kind)

    def footprint_keys(self, workload: Workload, event: Any) -> Mapping[str, Iterable[str]]:
        """The keys that fill ``event``'s footprint templates: ``{"step": ["s1"], "path": ["app.py"]}``
        (default: none, so only whole parts can be named)."""
        return {}

    def independent(self, workload: Workload, protocol: Protocol, first: Any, second: Any) -> bool:
        """Whether two events commute, derived from their footprints (neither writes what the other reads or
        writes); False for a family that declares none.  Exhaustive search then tries one of their two orders,
        and the law suite checks every such claim on every state within a small depth."""
        return independent(self.footprint(workload, protocol, first), self.footprint(workload, protocol, second))

    def symmetry(self, workload: Workload) -> Symmetry | None:
        """The workload's interchangeable parts, or None (the default: none declared).  ``fencesim explore
        --symmetry`` then keeps one state per orbit (see :mod:`sim.core.symmetry`, and the law suite's
        ``symmetric`` law, which checks the declaration)."""
        return None

    def never_fired(self, workload: Any, protocol: Any, measures: Mapping[str, float]) -> list[dict[str, str]]:
        """The protocol's non-default mechanisms that never acted on the workload, given its runs' measures
        summed: ``[{"knob", "value", "line"}]`` (a report prints ``line``).  Read from the knob table: each knob
        with a ``fired`` predicate whose ``fired_<knob>`` measure (:func:`sim.core.mechanisms.fired_measures`, in
        :meth:`measure`) summed to 0, with its ``silent`` reason."""
        parsed = self.parse_protocol(protocol)
        kind = self.knobs.values_type
        values = kind.of(parsed) if kind is not None else parsed  # type: ignore[attr-defined]
        return never_fired_lines(self.knobs, workload, parsed, values, measures)

    @abc.abstractmethod
    def state_key(self, replay: Replay) -> Hashable:
        """Everything that decides what can happen next (exhaustive search merges equal keys)."""

    def measure(self, replay: Replay) -> dict[str, float]:
        """Per-run numbers beside the checks (liveness: steps applied, tasks completed...)."""
        return {}

    def claims(self, tallies: dict[str, dict], protocols: Sequence[Protocol]) -> list[dict]:
        """The family's published claims that apply to the protocols swept, judged by the counts."""
        return []

    @abc.abstractmethod
    def verdicts(self, replay: Replay) -> list[dict[str, Any]]:
        """``{"event_index", "step", "verdict"}`` for every verdict of the run (``step``: the step,
        transition or client the verdict is about)."""

    def outcome(self, replay: Replay) -> str | None:
        """The verdict a scenario's ``[expect]`` compares with (default: the last one)."""
        verdicts = self.verdicts(replay)
        return verdicts[-1]["verdict"] if verdicts else None

    def effect_ledger(self, history: History) -> list[Entry]:
        """What a run did to the world, named, and who must act (the blast radius; sim.core.ledger)."""
        return []

    def fault_count(self, workload: Workload, order: Sequence[Any]) -> int:
        """How many events of an order are faults (default: every event, as in a fault list)."""
        return len(order)

    def where(self, scenario: Any, violation: Any) -> str:
        """Where a violation happens, the second half of its finding (:mod:`sim.core.findings`), e.g. the
        transition and the kind of object it broke.  Default "": a family that does not say where has one
        finding per invariant (a violation's ``step`` says who or what it names, which need not be a
        different bug: two symmetric clients losing an update are one finding, not two)."""
        return ""

    def actor(self, event: Any) -> str:
        """Who makes an input event happen (the planner, the network, a human...): the lane it is drawn in, and
        what the exported order keeps together (fewest changes of actor).  Default: one actor for all."""
        return "world"


class Codec(abc.ABC):
    """Files: scenarios, workloads, events as text, exported counterexamples, recorded histories.

    Required: :meth:`load_scenario`, :meth:`dump_scenario`, :meth:`load_workload`, :meth:`parse_event`
    (``--resume``, ``--baseline`` and the exports read events back from text) and :meth:`counterexample`.
    Optional: ``history_events``, ``history_schema`` and ``field_types`` (what a recorded history may hold)."""

    #: Event names this family's histories hold (``fencesim check`` infers a history's family from them).
    history_events: frozenset[str] = frozenset()
    #: What a recorded history of the family may hold -- events, values, shapes (checked when one is read);
    #: None: only ``history_events`` is checked.
    history_schema: Any = None
    #: The types of the event fields the checks read (a recorded history is checked against them).
    field_types: Mapping[str, tuple[type, ...]] = {}

    @abc.abstractmethod
    def load_scenario(self, data: JsonObject, source) -> Any:
        """Validate a parsed scenario table; raise ScenarioError with file:line."""

    @abc.abstractmethod
    def dump_scenario(self, scenario: Any) -> dict[str, Any]:
        """The TOML table of a scenario; always writes ``format`` and ``family``."""

    @abc.abstractmethod
    def load_workload(self, data: JsonObject, source) -> Workload:
        """Validate a parsed workload table (a scenario without events plus [faults], [limits])."""

    @abc.abstractmethod
    def parse_event(self, scenario: Any, text: str) -> Any:
        """The event a line of a scenario file names (``str(event)`` gives it back); raise ScenarioError."""

    @abc.abstractmethod
    def counterexample(self, workload: Workload, protocol: Protocol, invariant: str, events: Sequence[Any],
                       meta: dict[str, Any]) -> Any:
        """A scenario holding a minimal order, replayable with no seed."""

    def validate_history(self, history: History) -> list[tuple[int, str]]:
        """(event index, what is wrong) for every field of a known name with the wrong type."""
        problems = []
        for event in history:
            for name, value in event.fields.items():
                allowed = self.field_types.get(name)
                if allowed and (not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed)):
                    kinds = " or ".join(dict.fromkeys(JSON_KINDS.get(t, t.__name__) for t in allowed))
                    problems.append((event.index, f"'{name}' must be {kinds}, not {shown(value, 60)}"
                                     f" ({json_kind(value)})"))
        return problems


#: A field type in the words of JSON (a history is JSON lines).
JSON_KINDS: dict[type, str] = {str: "a string", int: "a whole number", float: "a number", bool: "true or false",
                               dict: "an object", list: "a list", type(None): "null"}


def json_kind(value: Any) -> str:
    """What a JSON value is, in the words of JSON."""
    return next((words for kind_, words in JSON_KINDS.items() if type(value) is kind_), type(value).__name__)


class Presentation:
    """How the reports show the family: timeline columns, event cells, single-fault grids, review
    sections.  Nothing here is required; every member has a default."""

    lanes: tuple[str, ...] = ()
    #: The seed's designs, reviewed by ``fencesim review`` without ``--design``.
    review_plan: ReviewPlan | None = None
    #: Labels of a single-fault grid's cell, outermost first.
    grid_labels: tuple[str, ...] = ()

    def describe(self, event: Event) -> str:
        """A history event as a timeline cell."""
        text = event.event
        if event.get("verdict"):
            text += f" -> {event['verdict']}"
        return text

    def is_fault(self, event: Event) -> bool:
        """Whether a history event is an injected fault (timelines mark it)."""
        return False

    def single_faults(self, workload: Workload) -> list[Cell]:
        """The cells of a single-fault grid over the workload (empty if the family has none)."""
        return []

    def state_tables(self, scenario: Any, protocol: Protocol, replay: Replay) -> list[StateTable]:
        """The state a replay ended in, as tables (``fencesim serve`` and ``sim.state_html``).  Default: the
        machine's parts (:meth:`~sim.core.machine.Machine.parts`) grouped by field, one table per field; a
        family without a machine shows none.  A family may show its state in its own words."""
        machine = getattr(self, "machine", lambda *_: None)(scenario, protocol)
        if machine is None:
            return []
        grouped: dict[str, list[tuple[str, ...]]] = {}
        for (name, key), value in machine.parts(self.final_state(replay)).items():  # type: ignore[attr-defined]
            grouped.setdefault(str(name), []).append(("" if key is None else str(key), cut(repr(value), 200)))
        return [StateTable(name, ("part", "value"), tuple(rows)) for name, rows in grouped.items()]

    def review_sections(self, workload: Workload, protocols: Sequence[Protocol], seeds: int) -> list[dict]:
        """Family-specific sections of a review, as data the report renders generically.

        Each is ``{"title", "text", "metrics": {protocol: {metric: {value, ci_low, ci_high}}},
        "reference": {metric: value}, "plot": [metric, ...], "methods": {metric: method}, "unit": str}``.
        """
        return []


class Family(Model, Codec, Presentation):
    """A protocol family: its :class:`Model`, its :class:`Codec` and its :class:`Presentation`
    (see the module docstring for the whole contract)."""
