"""Certify a workflow under a durable engine: per transition, exactly once within N events, or the proved-shortest
order that repeats or loses its effect, with the smallest change its endpoint can take.

The engine is one of the effects family's engine presets (``sim.families.effects.knobs.ENGINE_PRESETS``); the
user's own knobs come after it.  One exhaustive search (:func:`sim.search.exhaustive.explore`) judges two
invariants per transition T, both read from the history as the family's checks are:

* ``repeats:T`` -- the family's ``duplicate_effect``, for T alone;
* ``lost:T`` -- the family's ``lost_success`` for T alone (an effect of T committed and the task recorded T as
  failed, or did it again), or T was dispatched and the task closed without T's receipt (T was given up and its
  effect never happened, or happened unrecorded).

Absence within N events is proved when the search is complete (no limit stopped it).  Each finding's order is
then replayed and judged again against both invariants and the family's own checks: a verdict names every
invariant its orders show (an order that repeats a notification and records the first as failed is ``repeats
and can be lost``), and ``shows`` lists what ``fencesim run`` of that order reports at T.  A proposed change is a
knob change the search proves clears every invariant T shows within the same bound; when no knob can, each
option the endpoint itself could declare (``key_retention_s``, ``keys``, ``reconcile_by``, ``class``) is searched
the same way, and the first that clears it is named; when none does, the endpoint change is said unchecked.

:func:`transition_answers` is the one function that answers per transition under any preset of the family --
``certify`` calls it under an engine, the review's reliability-class table
(:mod:`sim.app.reliability_classes`) under each class -- so the two cannot disagree.  Its searches are kept
per (workload, protocol, bound) in this process and shared by every question asked of them.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from sim.core.checks import CheckResult, CheckSpec, Violation
from sim.core.errors import InputError
from sim.core.values import JsonObject
from sim.families.effects import FAMILY as EFFECTS
from sim.families.effects import checks as effects_checks
from sim.families.effects.knobs import ENGINES, EffectsKnobs
from sim.report.results import CertifyDocument, TransitionAnswer
from sim.search.budget import NO_DEADLINE, Deadline
from sim.search.exhaustive import MAX_STATES_DEFAULT, ExhaustiveResult, ExploreOptions, explore
from sim.search.kept import Kept

#: Events searched when ``--max-events`` is not given.
CERTIFY_DEPTH_DEFAULT = 3

EXACTLY_ONCE = "exactly once"
REPEATS = "repeats"
AT_MOST_ONCE = "at most once: can be lost"
BOTH = "repeats and can be lost"
NOT_PROVED = "not proved"
#: The invariants certify judges per transition, in the order a verdict names them.
KINDS = ("repeats", "lost")


@dataclass
class Answer:
    """One transition's answer: its verdict, the shortest order of each finding, what each order shows when
    replayed, and the change proposed."""

    transition: str
    verdict: str
    within: int | None  # events within which the verdict is proved
    repeats: tuple[Any, ...] | None = None
    lost: tuple[Any, ...] | None = None
    change: str | None = None  # knobs after the engine (checked by the search), or an endpoint change
    change_checked: bool = False
    exported: list[str] = field(default_factory=list)
    #: per finding's order (``repeats``, ``lost``): the invariants of certify its replay violates ...
    violates: dict[str, list[str]] = field(default_factory=dict)
    #: ... and the family's safety invariants its replay shows at the transition (what ``fencesim run`` reports)
    shows: dict[str, list[str]] = field(default_factory=dict)
    change_endpoint: bool = False  # the change is an option of the endpoint itself, not a knob

    def kinds(self) -> list[str]:
        """Every invariant of certify this transition was seen to violate."""
        return [kind for kind in KINDS if getattr(self, kind) is not None]

    def document(self) -> TransitionAnswer:
        """The answer as the Engine table and ``fencesim certify --json`` give it."""
        return TransitionAnswer(
            transition=self.transition, verdict=self.verdict,
            within_events=self.within if self.within is not None else "all",
            repeats=None if self.repeats is None else tuple(str(e) for e in self.repeats),
            lost=None if self.lost is None else tuple(str(e) for e in self.lost),
            violates={kind: tuple(found) for kind, found in self.violates.items()} if self.violates else None,
            shows={kind: tuple(found) for kind, found in self.shows.items()},
            change=self.change, change_checked=self.change_checked, change_endpoint=self.change_endpoint,
            exported=tuple(self.exported) or None)


@dataclass
class Certificate:
    engine: str
    extra: str
    protocol: Any
    max_events: int
    answers: list[Answer]
    complete: bool
    states: int
    reason: str = "bound_reached"  # why the engine's search ended (ExhaustiveResult.reason): "state_limit" when cut

    def document(self) -> CertifyDocument:
        """The certificate as the review's Engine table and ``fencesim certify --json`` give it."""
        return CertifyDocument(engine=self.engine, protocol=self.protocol.label, knobs_after_engine=self.extra,
                               max_events=self.max_events, complete=self.complete, distinct_states=self.states,
                               transitions=tuple(a.document() for a in self.answers))

    def to_json(self) -> JsonObject:
        return self.document().to_json()


def engine_protocol(engine: str, extra: str = "") -> Any:
    """The engine's preset with the user's knobs after it; an unknown engine is an input error."""
    if engine not in ENGINES:
        raise InputError(f"unknown engine {engine!r}; engines: {', '.join(ENGINES)}")
    return EFFECTS.parse_protocol(_label(engine, extra))


def _label(base: str, knobs: str) -> str:
    return f"{base},{knobs}" if knobs else base


def _for(transition: str, result: CheckResult) -> list:
    return [v for v in result.violations if v.step == transition]


class _Once:
    """The family's check of one history, run once for every transition judged on it (a state's checks all read
    the same history, one transition after another)."""

    def __init__(self) -> None:
        self.history: Any = None
        self.length = -1
        self.results: dict[str, CheckResult] = {}

    def __call__(self, check: Callable[[Any], CheckResult], history: Any) -> CheckResult:
        if history is not self.history or len(history) != self.length:
            self.history, self.length, self.results = history, len(history), {}
        name = check.__name__
        if name not in self.results:
            self.results[name] = check(history)
        return self.results[name]


def _plain(check: Callable[[Any], CheckResult], history: Any) -> CheckResult:
    return check(history)


def _repeats(transition: str, once: Callable[..., CheckResult] = _plain) -> Callable[[Any], CheckResult]:
    def check(history: Any) -> CheckResult:
        found = once(effects_checks.duplicate_effect, history)
        if found.status == "not_evaluable":
            return found
        return CheckResult.from_violations(f"repeats:{transition}", [
            Violation(f"repeats:{transition}", v.event_index, v.step, v.detail, v.domain)
            for v in _for(transition, found)])
    return check


def _lost(transition: str, once: Callable[..., CheckResult] = _plain) -> Callable[[Any], CheckResult]:
    def check(history: Any) -> CheckResult:
        found = once(effects_checks.lost_success, history)
        if found.status == "not_evaluable":
            return found
        violations = [Violation(f"lost:{transition}", v.event_index, v.step, v.detail, v.domain)
                      for v in _for(transition, found)]
        events = list(history)
        mine = [e for e in events if e.get("transition") == transition]
        closed = next((e for e in events if e.event == "task_terminal"), None)
        if not violations and closed is not None and any(e.event == "dispatched" for e in mine) and not any(
                e.event == "receipt_recorded" for e in mine):
            committed = [e.get("effect") for e in mine if e.event == "committed"]
            detail = (f"{', '.join(committed)} committed, but the task closed without {transition}'s receipt"
                      if committed else f"{transition} was given up: the task closed and its effect never happened")
            violations.append(Violation(f"lost:{transition}", closed.index, transition, detail, domain="lost_ack"))
        return CheckResult.from_violations(f"lost:{transition}", violations)
    return check


_LOST_SPEC = next(spec for spec in effects_checks.CHECKS if spec.name == "lost_success")
#: What ``lost:T`` reads: what ``lost_success`` reads, and the transition of each receipt and dispatch.
_LOST_REQUIRES = {**dict(_LOST_SPEC.requires), "receipt_recorded": ("task", "effect", "transition"),
                  "dispatched": ("transition",)}


def _certifying_family(transitions: list[str]) -> Any:
    """The effects family judging only the per-transition invariants (a copy: the family itself is unchanged)."""
    once = _Once()
    specs = []
    for name in transitions:
        specs.append(CheckSpec(f"repeats:{name}", _repeats(name, once), True,
                               f"{name}'s effect committed twice", requires={"committed": effects_checks.COMMITTED}))
        specs.append(CheckSpec(f"lost:{name}", _lost(name, once), True,
                               f"{name} recorded as failed, done again or closed without its receipt",
                               requires=_LOST_REQUIRES))
    family = copy.copy(EFFECTS)
    family.checks = tuple(specs)  # an instance attribute shadows the class's
    return family


def _transitions(workload: Any) -> list[Any]:
    return [t for t in workload.base.workflow.transitions if not t.is_read]


#: ``progress(depth, max_events, distinct states)`` of the search running (see :func:`sim.search.exhaustive.explore`).
Progress = Callable[[int, int, int], None]

#: Searches kept in this process (most recent last): certify's, each candidate's, the class table's.
SEARCHES_KEPT = 32
_SEARCHES = Kept(SEARCHES_KEPT)


def _search(family: Any, workload: Any, protocol: Any, depth: int, deadline: Deadline,
            progress: Progress | None = None, anchor: Any = None, tag: tuple = (),
            max_states: int = MAX_STATES_DEFAULT) -> ExhaustiveResult:
    """One search per (workload, protocol, bound, state limit, invariants judged) in this process, kept for
    every question asked of it (``anchor``: the workload a changed endpoint's copy was made from; ``tag``: what
    was changed).  A search under a deadline is its own: a budget cuts at a time, not a point."""
    if deadline.end is not None:
        return explore(family, workload, protocol, ExploreOptions(max_events=depth, max_states=max_states,
                                                                  deadline=deadline), progress)
    owner = anchor if anchor is not None else workload
    key = (id(owner), tag, protocol.label, depth, max_states, tuple(spec.name for spec in family.checks))
    options = ExploreOptions(max_events=depth, max_states=max_states)
    return _SEARCHES.get(key, (owner,), lambda: explore(family, workload, protocol, options, progress))


def _first(result: ExhaustiveResult, invariant: str) -> tuple[Any, ...] | None:
    orders = result.minimal_orders.get(invariant)
    return min(orders, key=lambda o: [str(e) for e in o]) if orders else None


def _key_knobs(transition: Any, values: EffectsKnobs) -> str | None:
    """The knobs that make the transition's endpoint deduplicate by key ("" already does; None: it cannot)."""
    if transition.keys is False or transition.effect_class not in ("keyed_creation", "append", "irreversible"):
        return None
    knobs = []
    if values.idempotency == "none":
        knobs.append("idempotency=key")
    if transition.effect_class == "irreversible" and transition.keys is None and values.irreversible_keys == "off":
        knobs.append("irreversible_keys=on")
    if transition.effect_class == "append" and values.ledger_dedupe == "off":
        knobs.append("ledger_dedupe=key")
    return ",".join(knobs)


def _reconcile_knobs(transition: Any, values: EffectsKnobs) -> str | None:
    return ("on_timeout=unknown,reconcile=on" if transition.queried_by != "none" and values.reconcile == "off"
            else None)


def _candidates(transition: Any, values: EffectsKnobs) -> list[str]:
    """Knob changes that could make the transition exactly once, fewest knobs first -- only those its endpoint
    can take: a key where it honours keys, reconciliation where it can be queried, and (under an at-most-once
    engine) a retry where a key or a query keeps it from repeating."""
    key = _key_knobs(transition, values)
    reconcile = _reconcile_knobs(transition, values)
    retry = "delivery=at_least_once" if values.delivery == "at_most_once" and (
        key is not None or transition.queried_by != "none") else None
    parts = [p for p in (key, reconcile, retry) if p]
    out = set()
    for mask in range(1, 1 << len(parts)):
        out.add(",".join(p for i, p in enumerate(parts) if mask >> i & 1))
    return sorted(out, key=lambda c: (c.count("=") , c))


def _declare(transition: Any, name: str, value: Any) -> Any:
    """The transition with its endpoint declaring ``name = value`` (None: not declared)."""
    options = tuple((k, v) for k, v in transition.options if k != name)
    return dataclasses.replace(transition, options=options + (((name, value),) if value is not None else ()))


def _endpoint_options(transition: Any, values: EffectsKnobs) -> list[tuple[str, Any, str]]:
    """The options the endpoint itself could declare that a knob cannot, least change first: (the option as the
    workflow table writes it, the transition declaring it, the knobs it needs)."""
    retry = ",delivery=at_least_once" if values.delivery == "at_most_once" else ""  # a lost one is tried again
    out = []
    retention = transition.key_retention_s
    if retention is not None and retention < values.key_retention:
        out.append((f"key_retention_s = {values.key_retention:g} (it declares {retention:g}: a retry comes after "
                    "its key is forgotten)", _declare(transition, "key_retention_s", None), retry.strip(",")))
    if transition.keys is False and transition.effect_class in ("keyed_creation", "append", "irreversible"):
        keyed = _declare(transition, "keys", True)
        out.append(("keys = true", keyed, ((_key_knobs(keyed, values) or "") + retry).strip(",")))
    if transition.queried_by == "none":
        queried = _declare(transition, "reconcile_by", "key")
        out.append(('reconcile_by = "key"', queried, ((_reconcile_knobs(queried, values) or "") + retry).strip(",")))
    if transition.effect_class != "idempotent":
        out.append(('class = "idempotent"', dataclasses.replace(transition, effect_class="idempotent"),
                    retry.strip(",")))
    return out


def _with_endpoint(workload: Any, changed: Any) -> Any:
    """A copy of the workload whose workflow has ``changed`` in place of the transition of its name."""
    workflow = workload.base.workflow
    base = copy.copy(workload.base)
    base.workflow = dataclasses.replace(workflow, transitions=tuple(
        changed if t.name == changed.name else t for t in workflow.transitions))
    out = copy.copy(workload)
    out.base = base
    return out


def transition_answers(workload: Any, base: str, max_events: int, deadline: Deadline = NO_DEADLINE,
                       propose: bool = True, progress: Progress | None = None,
                       max_states: int = MAX_STATES_DEFAULT) -> tuple[list[Answer], ExhaustiveResult]:
    """Per side-effecting transition of an effects workload, under the preset or protocol ``base``: exactly once
    within ``max_events`` events, or the shortest order of each invariant it violates (each replayed and judged
    against every invariant), with the smallest change the search proves clears them all (``propose``); and the
    search itself.  ``certify`` and the reliability-class table both read their answers here."""
    protocol = EFFECTS.parse_protocol(base)
    transitions = _transitions(workload)
    family = _certifying_family([t.name for t in transitions])
    result = _search(family, workload, protocol, max_events, deadline, progress, max_states=max_states)
    proved = set(result.proved_absent)
    within = result.proved_within if result.proved_within is not None else max_events
    answers = []
    for t in transitions:
        answer = Answer(t.name, NOT_PROVED, None, _first(result, f"repeats:{t.name}"), _first(result, f"lost:{t.name}"))
        _judge_orders(answer, workload, protocol)
        clean = {f"{kind}:{t.name}" for kind in KINDS} <= proved and not answer.kinds()
        answer.verdict = _verdict(clean, answer.kinds())
        answer.within = within if answer.verdict != NOT_PROVED else None
        if propose and answer.verdict in (REPEATS, BOTH, AT_MOST_ONCE):
            _propose(answer, t, workload, base, max_events, deadline, progress, family, max_states)
        answers.append(answer)
    return answers, result


def _verdict(clean: bool, kinds: list[str]) -> str:
    if clean:
        return EXACTLY_ONCE
    return {("repeats", "lost"): BOTH, ("repeats",): REPEATS, ("lost",): AT_MOST_ONCE}.get(tuple(kinds), NOT_PROVED)


def _judge_orders(answer: Answer, workload: Any, protocol: Any) -> None:
    """Replay each finding's order and judge it against every invariant of certify and the family's checks: an
    order that repeats the effect and records it as failed is both (a search stopped early may have found only
    one: the order is then the witness of the other too)."""
    for kind in KINDS:
        order = getattr(answer, kind)
        if order is None:
            continue
        history = EFFECTS.replay(workload.base, protocol, list(order)).history
        answer.violates[kind] = [k for k in KINDS if (_repeats if k == "repeats" else _lost)(answer.transition)(
            history).violations]
        answer.shows[kind] = sorted({v.invariant for v in EFFECTS.check(history, explain=False).safety_violations
                                     if v.step == answer.transition})
        for other in answer.violates[kind]:
            if getattr(answer, other) is None:
                setattr(answer, other, order)


def _proved(result: ExhaustiveResult, transition: str) -> list[str]:
    return [kind for kind in KINDS if f"{kind}:{transition}" in result.proved_absent]


def _propose(answer: Answer, transition: Any, workload: Any, base: str, max_events: int, deadline: Deadline,
             progress: Progress | None, family: Any, max_states: int = MAX_STATES_DEFAULT) -> None:
    """The smallest knob change the search proves clears every invariant of the transition (a change that clears
    one and not the other is no fix: it is named with what it leaves), else the first option of the endpoint
    itself the search proves does, else the endpoint change, unchecked.  ``family`` judges every transition:
    a change's search serves every transition it is tried for."""
    values = EffectsKnobs.of(EFFECTS.parse_protocol(base))
    candidates = _candidates(transition, values)
    partial = ""
    cut: list[str] = []  # the changes whose search a limit stopped: undecided, never "none clears it"
    for candidate in candidates:
        searched = _search(family, workload, EFFECTS.parse_protocol(_label(base, candidate)), max_events, deadline,
                           progress, max_states=max_states)
        cleared = _proved(searched, transition.name)
        if not searched.complete and len(cleared) < len(KINDS):
            cut.append(candidate)
        if len(cleared) == len(KINDS):
            answer.change, answer.change_checked = candidate, True
            return
        if not partial and any(kind in cleared for kind in answer.kinds()):
            left = [kind for kind in KINDS if kind not in cleared]
            partial = f"; {candidate} clears {' and '.join(cleared)} but not {' and '.join(left)}"
    knobs = (f"no knob the endpoint of {transition.name} can take clears it within {max_events} events (tried: "
             f"{'; '.join(candidates)}{partial})" if candidates else "")
    own = _certifying_family([transition.name])
    options = _endpoint_options(transition, values)
    for option, changed, needs in options:
        result = _search(own, _with_endpoint(workload, changed), EFFECTS.parse_protocol(_label(base, needs)),
                         max_events, deadline, progress, anchor=workload, tag=(transition.name, option),
                         max_states=max_states)
        cleared = _proved(result, transition.name)
        if not result.complete and len(cleared) < len(KINDS):
            cut.append(option)
        if len(cleared) == len(KINDS):
            answer.change = (f"the endpoint of {transition.name} must change: {option}"
                             + (f" with {needs}" if needs else "") + (f"; {knobs}" if knobs else ""))
            answer.change_checked = answer.change_endpoint = True
            return
    tried = (f"; the endpoint options {', '.join(o for o, _, _ in options)} were searched too and none clears it "
             f"within {max_events} events" if options else "")
    if cut:  # a search a limit stopped decides nothing: say so instead of "none clears it"
        knobs = (f"not decided: a limit stopped the search of {'; '.join(cut)} before it cleared or broke "
                 f"{transition.name} within {max_events} events (run certify without --budget to decide)")
        tried = ""
    answer.change = (f"{knobs}; " if knobs else "") + _endpoint_change(
        transition, lost_only=answer.verdict == AT_MOST_ONCE) + tried


def _endpoint_change(transition: Any, lost_only: bool) -> str:
    if lost_only:
        return (f"no knob: {transition.name} is at most once here -- its endpoint takes no key and cannot be "
                "queried, so a retry could repeat it; exactly once needs an endpoint that takes a key "
                "(keys = true) or can be queried (reconcile_by)")
    return (f"the endpoint of {transition.name} must change: it takes no idempotency key and cannot be queried; "
            "declare keys = true (an endpoint that deduplicates by key) or make it idempotent "
            "(class = \"idempotent\")")


def depth_within(workload: Any, engine: str, extra: str, max_events: int, max_states: int) -> int:
    """The deepest bound up to ``max_events`` whose search is expected to stay within ``max_states`` distinct
    states: an order of this family is a set of faults, nearly every set its own state, so with ``n`` states one
    fault deep, ``d`` faults deep is about the sum of C(n, k) for k up to d (one search of one event tells n)."""
    base = _label(engine, extra)
    family = _certifying_family([t.name for t in _transitions(workload)])
    first = _search(family, workload, EFFECTS.parse_protocol(base), 1, NO_DEADLINE, max_states=max_states)
    singles = first.states_per_depth[1] if len(first.states_per_depth) > 1 else 0
    depth = 1
    while depth < max_events and sum(math.comb(singles, k) for k in range(depth + 2)) <= max_states:
        depth += 1
    return depth


def certify(workload: Any, engine: str, extra: str = "", max_events: int = CERTIFY_DEPTH_DEFAULT,
            deadline: Deadline = NO_DEADLINE, propose: bool = True, progress: Progress | None = None,
            max_states: int = MAX_STATES_DEFAULT) -> Certificate:
    """Answer, per transition of an effects workload, whether it happens exactly once under the engine
    (``progress`` follows each search, the engine's and each proposed change's; ``max_states`` bounds each)."""
    if EFFECTS.name != getattr(workload.base, "family", EFFECTS.name):
        raise InputError(f"certify reads effects workloads; {workload.name} is a {workload.base.family} workload")
    protocol = engine_protocol(engine, extra)
    answers, result = transition_answers(workload, _label(engine, extra), max_events, deadline, propose, progress,
                                         max_states)
    return Certificate(engine, extra, protocol, max_events, answers, result.complete, result.distinct_states,
                       result.reason)


def export_answers(certificate: Certificate, workload: Any, out_dir: Path) -> list[Path]:
    """Write each finding's order as a scenario ``fencesim run`` replays (with its timeline): nothing of the
    user's is replaced (a file of that name is refused before anything is written)."""
    from sim.core.files import write_files_atomically
    from sim.report.export import scenario_toml, slug, timeline
    from sim.report.outputs import check_output_names

    files: dict[Path, str] = {}
    protocol = certificate.protocol
    for answer in certificate.answers:
        for kind, order in (("repeats", answer.repeats), ("lost", answer.lost)):
            if order is None:
                continue
            name = slug(f"certify__{certificate.engine}__{answer.transition}__{kind}")
            shows = answer.shows.get(kind)
            meta = {"name": name, "invariant": f"{kind}:{answer.transition}", "workload": workload.name,
                    "engine": certificate.engine, "minimal": True,
                    "description": (f"fencesim certify: under {certificate.engine} this order "
                                    f"{'repeats' if kind == 'repeats' else 'loses'} the effect of "
                                    f"{answer.transition} (proved shortest within {certificate.max_events} events)"
                                    + (f"; replayed, it shows {', '.join(shows)}" if shows else ""))}
            scenario = EFFECTS.counterexample(workload, protocol, meta["invariant"], order, meta)
            replay = EFFECTS.replay(scenario, protocol)
            check_output_names(out_dir, (f"{name}.toml", f"{name}.timeline.txt"), "--export")
            files[out_dir / f"{name}.toml"] = scenario_toml(EFFECTS, scenario)
            files[out_dir / f"{name}.timeline.txt"] = timeline(EFFECTS, replay.history)
            answer.exported.append(str(out_dir / f"{name}.toml"))
    if files:
        write_files_atomically(files)
    return sorted(p for p in files if p.suffix == ".toml")


def judge(scenario: Any, protocol: Any, invariant: str) -> bool:
    """Whether a replayed scenario shows ``invariant`` (``repeats:T`` or ``lost:T``): how a test proves an exported
    answer replays."""
    kind, _, transition = invariant.partition(":")
    check = (_repeats if kind == "repeats" else _lost)(transition)
    return bool(check(EFFECTS.replay(scenario, protocol).history).violations)
