"""``[expect]``: what a scenario says must happen, per protocol, and whether it did.

Each key of ``[expect]`` is a protocol (as the command line spells it); its
value is either the expected *outcome* (the last verdict, as a string) or a
table::

    [expect."step-dedupe"]
    outcome = "deduped"                 # the last verdict
    s2 = "rejected:stale_rev"           # the last verdict of step (or transition) s2
    violations = []                     # exactly these safety invariants, in any order

A run whose outcome, step verdicts or violations differ does not meet its
expectation.  ``fencesim run``'s one rule: it exits 1 when a run violates a safety invariant its entry does not
declare (an entry without ``violations`` declares none) or does not meet its entry, and 0 when every violation
was declared and every expectation met (``RunResult.passes``).  An entry is the expectation of the protocol its
label names, however that protocol is spelt on the command line (:func:`expectation_for`); an entry for a
protocol that was not run is warned about, by label (:func:`labels_not_run`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from sim.core.errors import ScenarioError
from sim.core.values import JsonObject, kind, shown
from sim.core.workload import did_you_mean


@dataclass(frozen=True)
class Expectation:
    outcome: str | None = None
    steps: dict[str, str] = field(default_factory=dict)
    violations: tuple[str, ...] | None = None

    def describe(self) -> str:
        parts = [f"outcome {self.outcome}"] if self.outcome is not None else []
        parts += [f"{step} {verdict}" for step, verdict in self.steps.items()]
        if self.violations is not None:
            parts.append(f"violations [{', '.join(self.violations)}]")
        return "; ".join(parts)

    def mismatches(self, outcome: str | None, verdicts: list[dict[str, Any]], violated: Iterable[str]) -> list[str]:
        """What differs from the expectation, in words (empty: it is met)."""
        out = []
        if self.outcome is not None and outcome != self.outcome:
            out.append(f"outcome {outcome}, expected {self.outcome}")
        last: dict[str, str] = {}
        for verdict in verdicts:
            last[str(verdict.get("step"))] = verdict["verdict"]
        for step, expected in self.steps.items():
            if last.get(step) != expected:
                out.append(f"{step} {last.get(step, 'no verdict')}, expected {expected}")
        if self.violations is not None and sorted(set(violated)) != sorted(self.violations):
            out.append(f"violations [{', '.join(sorted(set(violated)))}], expected [{', '.join(self.violations)}]")
        return out


def parse_expect(raw: Any, steps: Iterable[str], invariants: Iterable[str], source) -> dict[str, Expectation]:
    """Validate an ``[expect]`` table (protocols are checked by the caller); errors carry file:line."""
    if not isinstance(raw, dict):
        raise source.error(f"[expect] maps a protocol to a verdict string or a table, not {kind(raw)}", "expect")
    steps, invariants = set(steps), tuple(invariants)
    out = {}
    for label, value in raw.items():
        if isinstance(value, str):
            out[label] = Expectation(outcome=value)
            continue
        if not isinstance(value, dict):
            raise source.error(f"[expect] {shown(label)}: give a verdict string or a table (outcome, violations, "
                               f"steps), not {kind(value)}", label)
        outcome = value.get("outcome")
        if outcome is not None and not isinstance(outcome, str):
            raise source.error(f"[expect] {shown(label)}: outcome must be a verdict string, not {kind(outcome)}", label)
        violations = value.get("violations")
        if violations is not None:
            if not isinstance(violations, list) or not all(isinstance(v, str) for v in violations):
                raise source.error(f"[expect] {shown(label)}: violations must be a list of invariant names, not "
                                   f"{shown(violations)}", label)
            unknown = [v for v in violations if v not in invariants]
            if unknown:
                raise source.error(f"[expect] {shown(label)}: unknown invariant {shown(unknown[0])}"
                                   f"{did_you_mean(unknown[0], invariants)}; invariants: {', '.join(invariants)}",
                                   label)
            violations = tuple(sorted(set(violations)))
        step_verdicts = {}
        for key, verdict in value.items():
            if key in ("outcome", "violations"):
                continue
            if key not in steps:
                raise ScenarioError(f"[expect] {shown(label)}: {shown(key)} is not a step of this scenario "
                                    f"({', '.join(sorted(steps))}) nor outcome/violations", source.where(label))
            if not isinstance(verdict, str):
                raise source.error(f"[expect] {shown(label)}: the verdict of {key} must be a string, not "
                                   f"{kind(verdict)}", label)
            step_verdicts[key] = verdict
        out[label] = Expectation(outcome, step_verdicts, violations)
    return out


def expectation_for(expect: dict[str, Expectation], protocol: Any,
                    parse: Callable[[str], Any]) -> Expectation | None:
    """The entry of ``expect`` for ``protocol``: the one its label names, else one whose label is the same
    protocol spelt otherwise (every knob alike: ``step-dedupe`` and ``fence=step,dedupe=journal``); ``parse``
    turns a label into a protocol."""
    if protocol.label in expect:
        return expect[protocol.label]
    return next((entry for label, entry in expect.items() if parse(label) == protocol), None)


def labels_not_run(expect: dict[str, Expectation], protocols: Iterable[Any], parse: Callable[[str], Any]) -> list[str]:
    """The labels of ``expect`` whose protocol is none of ``protocols`` (the runs made), in the file's order."""
    ran = list(protocols)
    return [label for label in expect
            if not any(label == p.label for p in ran) and parse(label) not in ran]


def dump_expect(expect: dict[str, Expectation]) -> JsonObject:
    out: JsonObject = {}
    for label, expectation in expect.items():
        if not expectation.steps and expectation.violations is None and expectation.outcome is not None:
            out[label] = expectation.outcome
            continue
        table: JsonObject = {}
        if expectation.outcome is not None:
            table["outcome"] = expectation.outcome
        table.update(expectation.steps)
        if expectation.violations is not None:
            table["violations"] = list(expectation.violations)
        out[label] = table
    return out
