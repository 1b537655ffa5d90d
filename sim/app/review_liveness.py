"""The review's Liveness section: each protocol's liveness properties under fairness (``explore --liveness``).

One row per protocol and property: ``holds`` within the review's fault bound
(:data:`REVIEW_LIVENESS_FAULTS`), ``violated`` with its lasso (the prefix, then
what repeats forever), or ``not decided`` with what cut the graph.  A family
that declares no liveness (or a design of scripts, which has no machine) has
no such section.  Each search is bounded (:data:`REVIEW_LIVENESS_STATES`) and
stops at the review's budget; what the budget cut is a line of Not covered,
with the command that completes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from sim.app.designs import Design
from sim.app.review_cuts import Cut, review_command, workload_argument
from sim.core.family import Family
from sim.core.knobs import Protocol
from sim.core.values import JsonObject
from sim.core.workload import Workload
from sim.report.results import LivenessRow, LivenessVerdict
from sim.search.budget import Deadline

#: The faults a behaviour may have in the review's liveness check, and the states each protocol's graph may hold.
REVIEW_LIVENESS_FAULTS = 1
REVIEW_LIVENESS_STATES = 200_000
TITLE = "Liveness under fairness"


@dataclass(frozen=True, slots=True)
class LivenessSection:
    """The review's Liveness section: its text, its table's rows, and each protocol's verdicts."""

    text: str
    rows: tuple[tuple[str, str, str, str], ...]
    results: tuple[LivenessRow, ...]

    def to_json(self) -> JsonObject:
        """The section as a family's section is written (title, text, table...), its results under
        ``liveness``."""
        return {"title": TITLE, "text": self.text,
                "table": {"headers": ["protocol", "property", "answer", "lasso: prefix, then forever"],
                          "rows": [list(row) for row in self.rows]},
                "analytic": {}, "metrics": {}, "methods": {}, "unit": "", "not_simulated": [], "findings": [],
                "violations": [], "liveness": [result.to_json() for result in self.results]}


def liveness_section(family: Family, workload: Workload, protocols: Sequence[Protocol], deadline: Deadline,
                     where: str | None, progress: Callable[[str], None] | None = None) -> LivenessSection | None:
    """The section (a family section's shape: title, text, table), or None where there is no liveness.
    ``where`` is what ``-w`` takes to name the workload (None: it is written inside the design file)."""
    from sim.search.liveness import check_liveness

    if any(family.liveness(workload, p) is None for p in protocols):
        return None
    rows, results = [], []
    for p in protocols:
        if progress is not None:
            progress(p.label)
        result = check_liveness(family, workload, p, REVIEW_LIVENESS_FAULTS, max_states=REVIEW_LIVENESS_STATES,
                                deadline=deadline)
        results.append(LivenessRow(
            protocol=p.label, max_faults=result.max_faults, states=result.states, edges=result.edges,
            complete=result.complete, exhausted=result.exhausted, end=result.reason, unfair=tuple(result.unfair),
            faults_acted=tuple(result.acted),
            properties={name: LivenessVerdict.from_json(v.to_json(), name) for name, v in result.verdicts.items()}))
        for name, verdict in result.verdicts.items():
            rows.append((p.label, name, _status(verdict), _lasso(verdict)))
    model = family.liveness(workload, protocols[0])
    assert model is not None
    assumptions = "; ".join(f"{name}: {sentence}" for name, sentence in sorted(model.assumptions.items()))
    faults = f"{REVIEW_LIVENESS_FAULTS} fault{'s' if REVIEW_LIVENESS_FAULTS != 1 else ''}"
    text = (f"Every behaviour with at most {faults} was searched (after the last fault only the system acts), "
            f"and each property judged under fairness -- {assumptions}. A violation is a lasso: the events of the "
            "prefix, then what repeats forever (nothing, when no event the system must take is left)."
            + (f" `{_command(where, protocols)}` searches deeper." if where is not None else ""))
    return LivenessSection(text, tuple(rows), tuple(results))


def _status(verdict: Any) -> str:
    if verdict.status == "violated":
        return "violated" + (f" ({verdict.item} stays pending)" if verdict.item is not None else "")
    return verdict.status + (f" ({verdict.note})" if verdict.note else "")


def _lasso(verdict: Any) -> str:
    if verdict.status != "violated":
        return "—"
    prefix = " ; ".join(map(str, verdict.prefix)) or "(the initial state)"
    cycle = " ; ".join(map(str, verdict.cycle)) if verdict.cycle else "nothing"
    return f"{prefix} ⟶ forever: {cycle}"


def _command(where: str, protocols: Sequence[Protocol]) -> str:
    return (f"fencesim explore -w {where} --depth 1 --liveness --max-faults {REVIEW_LIVENESS_FAULTS + 1} "
            + " ".join(f"-p {p.label!r}" if "," in p.label else f"-p {p.label}" for p in protocols))


def liveness_cut(design: Design, section: LivenessSection | None, budget_name: str) -> list[Cut]:
    """The section's protocols whose graph the budget cut (or the whole section, when it never ran)."""
    if section is None:
        return []
    cut = [r.protocol for r in section.results if r.end == budget_name]
    if not cut:
        return []
    workload = workload_argument(design)
    command = review_command(design) if workload is None else _command(workload, design.protocols)
    return [Cut(section="liveness", title="the liveness section", command=command,
                left_out=f"{len(cut)} of {len(section.results)} protocols not decided (the budget stopped their "
                         "search)")]
