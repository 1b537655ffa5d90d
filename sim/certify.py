"""Certify a workflow under a durable engine: per transition, exactly once within N events, or the proved-shortest
order that repeats or loses its effect, with the smallest change its endpoint can take.

The engine is one of the effects family's engine presets (``sim.families.effects.knobs.ENGINE_PRESETS``); the
user's own knobs come after it.  One exhaustive search (:func:`sim.search.exhaustive.explore`) judges two
invariants per transition T, both read from the history as the family's checks are:

* ``repeats:T`` -- the family's ``duplicate_effect``, for T alone;
* ``lost:T`` -- T was dispatched and the task closed without T's receipt: its effect happened and the task
  recorded it as failed (``lost_success``), or T was given up and its effect never happened.

Absence within N events is proved when the search is complete (no limit stopped it).  A proposed change is a
knob change the search checked (it clears the finding within the same bound), or -- when no knob can, because
the endpoint takes no key and cannot be queried -- a change of the endpoint itself, said to be unchecked.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from sim.core.checks import CheckResult, CheckSpec, Violation
from sim.core.errors import InputError
from sim.families.effects import FAMILY as EFFECTS
from sim.families.effects import checks as effects_checks
from sim.families.effects.knobs import ENGINES, EffectsKnobs
from sim.search.budget import NO_DEADLINE, Deadline
from sim.search.exhaustive import ExhaustiveResult, explore

#: Events searched when ``--max-events`` is not given.
CERTIFY_DEPTH_DEFAULT = 3

EXACTLY_ONCE = "exactly once"
REPEATS = "repeats"
AT_MOST_ONCE = "at most once: can be lost"
BOTH = "repeats and can be lost"
NOT_PROVED = "not proved"


@dataclass
class Answer:
    """One transition's answer: its verdict, the shortest order of each finding, and the change proposed."""

    transition: str
    verdict: str
    within: int | None  # events within which the verdict is proved
    repeats: tuple[Any, ...] | None = None
    lost: tuple[Any, ...] | None = None
    change: str | None = None  # knobs after the engine (checked by the search), or an endpoint change
    change_checked: bool = False
    exported: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"transition": self.transition, "verdict": self.verdict,
                               "within_events": self.within if self.within is not None else "all"}
        if self.repeats is not None:
            out["repeats"] = [str(e) for e in self.repeats]
        if self.lost is not None:
            out["lost"] = [str(e) for e in self.lost]
        if self.change is not None:
            out["change"] = self.change
            out["change_checked"] = self.change_checked
        if self.exported:
            out["exported"] = list(self.exported)
        return out


@dataclass
class Certificate:
    engine: str
    extra: str
    protocol: Any
    max_events: int
    answers: list[Answer]
    complete: bool
    states: int

    def to_json(self) -> dict[str, Any]:
        return {"engine": self.engine, "protocol": self.protocol.label, "knobs_after_engine": self.extra,
                "max_events": self.max_events, "complete": self.complete, "distinct_states": self.states,
                "transitions": [a.to_json() for a in self.answers]}


def engine_protocol(engine: str, extra: str = "") -> Any:
    """The engine's preset with the user's knobs after it; an unknown engine is an input error."""
    if engine not in ENGINES:
        raise InputError(f"unknown engine {engine!r}; engines: {', '.join(ENGINES)}")
    return EFFECTS.parse_protocol(f"{engine},{extra}" if extra else engine)


def _for(transition: str, result: CheckResult) -> list:
    return [v for v in result.violations if v.step == transition]


def _repeats(transition: str) -> Callable[[Any], CheckResult]:
    def check(history: Any) -> CheckResult:
        found = effects_checks.duplicate_effect(history)
        if found.status == "not_evaluable":
            return found
        return CheckResult.from_violations(f"repeats:{transition}", [
            Violation(f"repeats:{transition}", v.event_index, v.step, v.detail, v.domain)
            for v in _for(transition, found)])
    return check


def _lost(transition: str) -> Callable[[Any], CheckResult]:
    def check(history: Any) -> CheckResult:
        events = list(history)
        mine = [e for e in events if e.get("transition") == transition]
        closed = next((e for e in events if e.event == "task_terminal"), None)
        if closed is None or not any(e.event == "dispatched" for e in mine) or any(
                e.event == "receipt_recorded" for e in mine):
            return CheckResult.from_violations(f"lost:{transition}", [])
        committed = [e.get("effect") for e in mine if e.event == "committed"]
        detail = (f"{', '.join(committed)} committed, but the task closed without {transition}'s receipt"
                  if committed else f"{transition} was given up: the task closed and its effect never happened")
        return CheckResult.from_violations(f"lost:{transition}", [
            Violation(f"lost:{transition}", closed.index, transition, detail, domain="lost_ack")])
    return check


def _certifying_family(transitions: list[str]) -> Any:
    """The effects family judging only the per-transition invariants (a copy: the family itself is unchanged)."""
    specs = []
    for name in transitions:
        specs.append(CheckSpec(f"repeats:{name}", _repeats(name), True,
                               f"{name}'s effect committed twice", requires={"committed": effects_checks.COMMITTED}))
        specs.append(CheckSpec(f"lost:{name}", _lost(name), True, f"{name} closed without its receipt",
                               requires={"receipt_recorded": ("transition",), "dispatched": ("transition",)}))
    family = copy.copy(EFFECTS)
    family.checks = tuple(specs)  # an instance attribute shadows the class's
    return family


def _transitions(workload: Any) -> list[Any]:
    return [t for t in workload.base.workflow.transitions if not t.is_read]


#: ``progress(depth, max_events, distinct states)`` of the search running (see :func:`sim.search.exhaustive.explore`).
Progress = Callable[[int, int, int], None]


def _search(family: Any, workload: Any, protocol: Any, depth: int, deadline: Deadline,
            progress: Progress | None = None) -> ExhaustiveResult:
    return explore(family, workload, protocol, depth, deadline=deadline, progress=progress)


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


def _candidates(transition: Any, values: EffectsKnobs) -> list[str]:
    """Knob changes that could make the transition exactly once, fewest knobs first -- only those its endpoint
    can take: a key where it honours keys, reconciliation where it can be queried, and (under an at-most-once
    engine) a retry where a key or a query keeps it from repeating."""
    key = _key_knobs(transition, values)
    reconcile = ("on_timeout=unknown,reconcile=on" if transition.queried_by != "none" and values.reconcile == "off"
                 else None)
    retry = "delivery=at_least_once" if values.delivery == "at_most_once" and (
        key is not None or transition.queried_by != "none") else None
    parts = [p for p in (key, reconcile, retry) if p]
    out = set()
    for mask in range(1, 1 << len(parts)):
        out.add(",".join(p for i, p in enumerate(parts) if mask >> i & 1))
    return sorted(out, key=lambda c: (c.count("=") , c))


def _endpoint_change(transition: Any, lost_only: bool) -> str:
    if lost_only:
        return (f"no knob: {transition.name} is at most once here -- its endpoint takes no key and cannot be "
                "queried, so a retry could repeat it; exactly once needs an endpoint that takes a key "
                "(keys = true) or can be queried (reconcile_by)")
    return (f"the endpoint of {transition.name} must change: it takes no idempotency key and cannot be queried; "
            "declare keys = true (an endpoint that deduplicates by key) or make it idempotent "
            "(class = \"idempotent\")")


def certify(workload: Any, engine: str, extra: str = "", max_events: int = CERTIFY_DEPTH_DEFAULT,
            deadline: Deadline = NO_DEADLINE, propose: bool = True, progress: Progress | None = None) -> Certificate:
    """Answer, per transition of an effects workload, whether it happens exactly once under the engine
    (``progress`` follows each search, the engine's and each proposed change's)."""
    if EFFECTS.name != getattr(workload.base, "family", EFFECTS.name):
        raise InputError(f"certify reads effects workloads; {workload.name} is a {workload.base.family} workload")
    protocol = engine_protocol(engine, extra)
    transitions = _transitions(workload)
    family = _certifying_family([t.name for t in transitions])
    result = _search(family, workload, protocol, max_events, deadline, progress)
    proved = set(result.proved_absent)
    within = result.proved_within if result.proved_within is not None else max_events
    answers = []
    searched: dict[str, ExhaustiveResult] = {}  # a candidate change's search serves every transition it is tried for
    for t in transitions:
        repeats, lost = _first(result, f"repeats:{t.name}"), _first(result, f"lost:{t.name}")
        clean = {f"repeats:{t.name}", f"lost:{t.name}"} <= proved
        verdict = (EXACTLY_ONCE if clean else BOTH if repeats and lost else REPEATS if repeats
                   else AT_MOST_ONCE if lost else NOT_PROVED)
        answer = Answer(t.name, verdict, within if verdict != NOT_PROVED else None, repeats, lost)
        if propose and verdict in (REPEATS, BOTH, AT_MOST_ONCE):
            _propose(answer, t, workload, engine, extra, max_events, deadline, progress, (family, searched))
        answers.append(answer)
    return Certificate(engine, extra, protocol, max_events, answers, result.complete, result.distinct_states)


def _propose(answer: Answer, transition: Any, workload: Any, engine: str, extra: str, max_events: int,
             deadline: Deadline, progress: Progress | None = None,
             shared: tuple[Any, dict[str, ExhaustiveResult]] | None = None) -> None:
    """The smallest knob change the search shows makes the transition exactly once, else the endpoint change.
    ``shared``: the family judging every transition and the searches of the changes already tried (a change's
    search judges every transition at once: the same states, so the same answer for each)."""
    values = EffectsKnobs.of(engine_protocol(engine, extra))
    family, searched = shared if shared is not None else (_certifying_family([transition.name]), {})
    for candidate in _candidates(transition, values):
        knobs = f"{extra},{candidate}" if extra else candidate
        result = searched.get(knobs)
        if result is None:
            result = searched[knobs] = _search(family, workload, engine_protocol(engine, knobs), max_events,
                                               deadline, progress)
        if {f"repeats:{transition.name}", f"lost:{transition.name}"} <= set(result.proved_absent):
            answer.change, answer.change_checked = candidate, True
            return
    if _candidates(transition, values):
        answer.change = (f"no knob the endpoint of {transition.name} can take clears it within {max_events} events "
                         f"(tried: {'; '.join(_candidates(transition, values))})")
    else:
        answer.change = _endpoint_change(transition, lost_only=answer.verdict == AT_MOST_ONCE)


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
            meta = {"name": name, "invariant": f"{kind}:{answer.transition}", "workload": workload.name,
                    "engine": certificate.engine, "minimal": True,
                    "description": (f"fencesim certify: under {certificate.engine} this order "
                                    f"{'repeats' if kind == 'repeats' else 'loses'} the effect of "
                                    f"{answer.transition} (proved shortest within {certificate.max_events} events)")}
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
