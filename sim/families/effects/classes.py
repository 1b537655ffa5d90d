"""The smallest reliability class each transition needs, found by search (not read off its effect class).

The seed's four reliability classes (:data:`~sim.families.effects.knobs.RELIABILITY_CLASSES`, smallest
first) are presets.  Under each, every cell of the single-fault grid of the workload (every transition x
boundary x fault class that can strike there, as ``fencesim cruel``) runs once; each safety violation is
charged to the transition it names (else to the transition the cell struck).  A transition's smallest class
is the first under which nothing is charged to it; a transition violated under all four needs more than any
protocol (its endpoint must change).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sim.families.effects.knobs import RELIABILITY_CLASSES


@dataclass
class ClassFinding:
    """One transition: the smallest clean class (None: none is), and what each smaller class violates."""

    transition: str
    smallest: str | None
    violated: dict[str, list[str]] = field(default_factory=dict)  # class -> invariants charged to it
    example: dict[str, str] = field(default_factory=dict)  # class -> one cell (fault) that shows it

    def to_json(self) -> dict:
        return {"transition": self.transition, "smallest_class": self.smallest, "violated": self.violated,
                "example": self.example}


def smallest_classes(family, workload, classes: tuple[str, ...] = RELIABILITY_CLASSES) -> list[ClassFinding]:
    """Per transition of the workload's workflow, in order: the smallest class with no violation at it."""
    names = workload.base.workflow.names()
    charged = {c: _charged(family, workload, c, names) for c in classes}
    findings = []
    for name in names:
        finding = ClassFinding(name, None)
        for label in classes:
            invariants, example = charged[label].get(name, (set(), ""))
            if not invariants:
                finding.smallest = label
                break
            finding.violated[label] = sorted(invariants)
            finding.example[label] = example
        findings.append(finding)
    return findings


def _charged(family, workload, label: str, names: list[str]) -> dict[str, tuple[set[str], str]]:
    """Transition -> (invariants violated at it, the first cell showing one) under one class."""
    protocol = family.parse_protocol(label)
    out: dict[str, tuple[set[str], str]] = {}
    for cell in family.single_faults(workload):
        report = family.check(family.replay(workload.base, protocol, cell.events).history)
        for violation in report.safety_violations:
            name = violation.step if violation.step in names else cell.labels[0]
            invariants, example = out.setdefault(name, (set(), str(cell.events[0])))
            invariants.add(violation.invariant)
    return out


def classes_section(family, workload) -> dict:
    """The review's section: one row per transition, its declared class and the smallest clean class."""
    findings = smallest_classes(family, workload)
    workflow = workload.base.workflow
    rows = []
    for finding in findings:
        transition = workflow.get(finding.transition)
        smaller = "; ".join(f"{c}: {', '.join(v)} (e.g. {finding.example[c]})" for c, v in finding.violated.items())
        rows.append([finding.transition, transition.effect_class,
                     finding.smallest or "none of the four: the endpoint itself must change", smaller or "—"])
    return {
        "title": "The smallest reliability class per transition (by search)",
        "text": ("Under each of the seed's reliability classes, smallest first (" + ", ".join(RELIABILITY_CLASSES)
                 + "), every single fault of this workload at every boundary of every transition ran once, and "
                 "each violation was charged to the transition it names. A transition's class below is the "
                 "smallest under which no violation is charged to it: found by the search, not read off its "
                 "effect class."),
        "table": {"headers": ["transition", "effect class", "smallest clean class", "violated under smaller classes"],
                  "rows": rows},
        "analytic": {}, "metrics": {}, "methods": {}, "unit": "", "not_simulated": [],
        "findings": [f.to_json() for f in findings],
        # what this section shows violated, per protocol (the review settles the claims against it)
        "violations": [{"protocol": label, "invariant": name,
                        "where": f"{finding.transition} under a single fault ({finding.example[label]})"}
                       for finding in findings for label, names in finding.violated.items() for name in names],
    }
