"""The smallest reliability class each transition needs, proved by the search ``fencesim certify`` runs (not read
off its effect class).

The seed's four reliability classes (:data:`~sim.families.effects.knobs.RELIABILITY_CLASSES`, smallest
first) are presets.  Under each, :func:`sim.app.certifying.transition_answers` -- the one function ``certify`` answers
with -- searches every order of at most :func:`classes_depth` events and says, per side-effecting transition,
whether it happens exactly once (``repeats:T`` and ``lost:T`` proved absent) or the shortest order that repeats
or loses it, replayed and judged by the family's checks.  A transition's smallest class is the first under
which it is exactly once.  For a transition exactly once under none, the table gives what certify proves under
the largest class: the smallest knob change that clears it (``irreversible_keys=on``), else the option of the
endpoint itself that does (``keys = true``), else the endpoint change, unchecked -- so the table and certify
cannot disagree (:func:`disagreements` reads one against the other).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sim.core.values import JsonObject
from sim.families.effects.knobs import RELIABILITY_CLASSES

if TYPE_CHECKING:
    from sim.app.certifying import Answer

#: The deepest bound of the table's searches: one search per class, and one per change proposed, each judging
#: every transition (a bound of 1 is every single fault, as the cruel grid; the table is a section of every
#: effects review).
CLASSES_DEPTH_MAX = 1


def classes_depth(workload: Any) -> int:
    """The events each of the table's searches covers."""
    return max(1, min(CLASSES_DEPTH_MAX, workload.max_events))


@dataclass
class ClassFinding:
    """One transition: the smallest class under which it is exactly once (None: none is), what each smaller
    class shows, and -- when no class is clean -- the change certify proves under the largest."""

    transition: str
    smallest: str | None
    within: int
    violated: dict[str, list[str]] = field(default_factory=dict)  # class -> the family's invariants its orders show
    verdict: dict[str, str] = field(default_factory=dict)  # class -> certify's verdict, where not exactly once
    example: dict[str, str] = field(default_factory=dict)  # class -> the shortest order that shows it
    change: str | None = None
    change_checked: bool = False
    change_endpoint: bool = False

    def to_json(self) -> JsonObject:
        return {"transition": self.transition, "smallest_class": self.smallest, "within_events": self.within,
                "violated": self.violated, "verdict": self.verdict, "example": self.example,
                "change": self.change, "change_checked": self.change_checked,
                "change_endpoint": self.change_endpoint}


def class_answers(workload: Any, classes: tuple[str, ...] = RELIABILITY_CLASSES,
                  max_events: int | None = None) -> dict[str, dict[str, Answer]]:
    """Class -> transition -> certify's answer under that class (:func:`sim.app.certifying.transition_answers`); a
    change is proposed under the largest class only (where no smaller class is clean, it is the table's)."""
    return _certify_answers(workload, classes, classes_depth(workload) if max_events is None else max_events)


def smallest_classes(family: Any, workload: Any, classes: tuple[str, ...] = RELIABILITY_CLASSES,
                     max_events: int | None = None) -> list[ClassFinding]:
    """Per side-effecting transition of the workload's workflow, in order: the smallest class under which
    certify proves it exactly once (``family``: the effects family, whose certify answers)."""
    from sim.app.certifying import EXACTLY_ONCE

    depth = classes_depth(workload) if max_events is None else max_events
    answers = class_answers(workload, classes, depth)
    findings = []
    for name in answers[classes[0]]:
        finding = ClassFinding(name, None, depth)
        for label in classes:
            answer = answers[label][name]
            if answer.verdict == EXACTLY_ONCE:
                finding.smallest = label
                break
            finding.verdict[label] = answer.verdict
            finding.violated[label] = sorted({i for shown in answer.shows.values() for i in shown})
            order = answer.repeats if answer.repeats is not None else answer.lost
            finding.example[label] = _order_words(order)
        else:
            last = answers[classes[-1]][name]
            finding.change, finding.change_checked = last.change, last.change_checked
            finding.change_endpoint = last.change_endpoint
        findings.append(finding)
    return findings


def disagreements(findings: list[ClassFinding], workload: Any,
                  classes: tuple[str, ...] = RELIABILITY_CLASSES) -> list[str]:
    """Each row of the table that ``certify`` under the same class and bound would not write: a smallest class
    certify does not prove exactly once, a verdict it does not give, a change it does not propose.  Empty when
    the table was derived from certify's proofs, as :func:`smallest_classes` derives it."""
    from sim.app.certifying import EXACTLY_ONCE

    out = []
    depth = findings[0].within if findings else classes_depth(workload)
    answers = _certify_answers(workload, classes, depth)
    for name in answers[classes[0]]:
        finding = next((f for f in findings if f.transition == name), None)
        if finding is None:
            out.append(f"{name}: certify answers it, the table has no row")
            continue
        for label in classes:
            answer = answers[label][name]
            said = EXACTLY_ONCE if finding.smallest == label else finding.verdict.get(label)
            if said is not None and said != answer.verdict:
                out.append(f"{name} under {label}: the table says {said!r}, certify {answer.verdict!r}")
        last = answers[classes[-1]][name]
        if finding.smallest is None and (finding.change, finding.change_checked) != (last.change,
                                                                                    last.change_checked):
            out.append(f"{name}: the table proposes {finding.change!r}, certify under {classes[-1]} {last.change!r}")
    return out


def _certify_answers(workload: Any, classes: tuple[str, ...], depth: int) -> dict[str, dict[str, Answer]]:
    """What ``fencesim certify`` answers under each class (its searches are the ones the table read: kept)."""
    from sim.app.certifying import transition_answers

    return {label: {a.transition: a for a in transition_answers(workload, label, depth,
                                                                 propose=label == classes[-1])[0]}
            for label in classes}


def _smallest_cell(finding: ClassFinding) -> str:
    if finding.smallest is not None:
        return finding.smallest
    if finding.change is None:
        return "none of the four"
    how = "proved by the search" if finding.change_checked else "unchecked"
    if finding.change_endpoint:
        return f"none of the four; under {RELIABILITY_CLASSES[-1]}: {finding.change} ({how})"
    return f"none of the four; {RELIABILITY_CLASSES[-1]},{finding.change} ({how})"


def _order_words(order: Any) -> str:
    return "; ".join(str(e) for e in order) if order else "with no fault"


def classes_section(family: Any, workload: Any) -> JsonObject:
    """The review's section: one row per side-effecting transition, its declared class and the smallest class
    under which certify proves it exactly once."""
    findings = smallest_classes(family, workload)
    workflow = workload.base.workflow
    depth = classes_depth(workload)
    rows = []
    for finding in findings:
        transition = workflow.get(finding.transition)
        smaller = "; ".join(f"{c}: {finding.verdict[c]}" + (f" ({', '.join(v)})" if v else "")
                            + f" (e.g. {finding.example[c]})"
                            for c, v in finding.violated.items())
        rows.append([finding.transition, transition.effect_class, _smallest_cell(finding), smaller or "—"])
    return {
        "title": "The smallest reliability class per transition (by search)",
        "text": ("Under each of the seed's reliability classes, smallest first (" + ", ".join(RELIABILITY_CLASSES)
                 + f"), every order of at most {depth} event(s) of this workload was searched exhaustively, as "
                 "`fencesim certify` searches (the same function answers both), and each transition was judged "
                 "exactly once, repeated or lost. A transition's class below is the smallest under which it is "
                 f"exactly once within {depth} event(s): found by the search, not read off its effect class. "
                 "Where no class is, the change certify proves under the largest is given (a knob, else an "
                 "option of the endpoint itself), or the endpoint change, unchecked. Reads create nothing and "
                 "are not listed."),
        "table": {"headers": ["transition", "effect class", "smallest clean class", "violated under smaller classes"],
                  "rows": rows},
        "analytic": {}, "metrics": {}, "methods": {}, "unit": "", "not_simulated": [],
        "findings": [f.to_json() for f in findings],
        # what this section shows violated, per protocol (the review settles the claims against it)
        "violations": [{"protocol": label, "invariant": name,
                        "where": f"{finding.transition} within {depth} event(s) ({finding.example[label]})"}
                       for finding in findings for label, names in finding.violated.items() for name in names],
    }
