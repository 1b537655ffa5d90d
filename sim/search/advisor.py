"""The counterfactual advisor: which weakest protocol removes a violation, at what cost.

Each minimal counterexample is replayed under every combination of the
workspace knobs (``pipeline`` and ``overlap_check`` kept as in the protocol
under test).  Among the combinations under which the counterexample shows
no safety violation at all, the advisor ranks by *strength* -- how many
mechanisms are on (a fence, dedupe, durable dedupe, atomic journal writes,
drift check; see :func:`strength`) -- and then by the spurious rejections
each costs on the same workload, measured by a sample sweep.  A candidate
whose sample sweep still finds a safety violation is reported as such: the
advice is what the search measured, not a claim of safety.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from sim.checks.base import run_checks
from sim.checks.workspace import WORKSPACE_CHECKS
from sim.protocol import Protocol, parse_protocol
from sim.replay import replay
from sim.search.workload import Workload

#: Seeds of the sample sweep that prices each candidate, and how many candidates are priced.
ADVISOR_SAMPLE_SEEDS = 200
ADVISOR_CANDIDATES_PRICED = 6


def knob_combinations(base: Protocol) -> list[Protocol]:
    out = []
    for fence in ("none", "plan", "step"):
        stamps = ("dispatch", "plan", "apply") if fence == "step" else ("dispatch",)
        for stamp_at, dedupe, drift in itertools.product(stamps, ("off", "memory", "journal"), ("off", "reject")):
            writes = ("atomic", "after_write") if dedupe == "journal" else ("atomic",)
            for journal_write in writes:
                label = (f"fence={fence},stamp_at={stamp_at},dedupe={dedupe},journal_write={journal_write},"
                         f"drift_check={drift},overlap_check={base.overlap_check},pipeline={base.pipeline}")
                out.append(parse_protocol(short_label(parse_protocol(label))))
    return out


def short_label(protocol: Protocol) -> str:
    """A preset plus only the knobs that differ from it (``step-dedupe,drift_check=reject``)."""
    from sim.protocol import WORKSPACE

    best = None
    for name, knobs in WORKSPACE.presets.items():
        merged = WORKSPACE.defaults() | dict(knobs)
        diff = [f"{k.name}={protocol.knobs[k.name]}" for k in WORKSPACE.knobs if merged[k.name] != protocol.knobs[k.name]]
        if best is None or len(diff) < len(best):
            best = [name] + diff
    return ",".join(best)


def strength(protocol: Protocol) -> int:
    """How many mechanisms a protocol turns on (lower is weaker, cheaper to run)."""
    score = 0
    score += protocol.fence != "none"
    score += protocol.fence == "step" and protocol.stamp_at == "dispatch"
    score += protocol.dedupe != "off"
    score += protocol.dedupe == "journal"
    score += protocol.dedupe == "journal" and protocol.journal_write == "atomic"
    score += protocol.drift_check == "reject"
    return score


@dataclass
class Advice:
    protocol: str
    invariant: str
    events: list[str]
    removed_by: list[str]  # every combination under which the counterexample is clean
    recommended: str | None
    recommended_strength: int | None
    spurious_rejections_per_run: float | None
    sample_safety_violations: int | None
    priced: list[dict]

    def to_json(self) -> dict:
        return self.__dict__.copy()


def _clean_under(workload: Workload, protocol: Protocol, events) -> bool:
    history, _ = replay(workload.base, protocol, events)
    return not run_checks(WORKSPACE_CHECKS, history).safety_violations


def advise(workload: Workload, protocol: Protocol, invariant: str, events, sample_seeds: int = ADVISOR_SAMPLE_SEEDS,
           workers: int = 1) -> Advice:
    """Replay ``events`` under every combination; price the weakest ones on the workload."""
    from sim.search.sweep import sweep

    candidates = [p for p in knob_combinations(protocol) if _clean_under(workload, p, events)]
    candidates.sort(key=lambda p: (strength(p), p.label))
    priced = []
    for candidate in candidates[:ADVISOR_CANDIDATES_PRICED]:
        summary, _ = sweep(workload, [candidate], sample_seeds, workers=workers)
        tally = summary.tallies[candidate.label]
        priced.append({
            "protocol": candidate.label, "strength": strength(candidate),
            "spurious_rejections_per_run": round(tally.spurious_rejections / max(1, tally.runs), 4),
            "sample_violating_runs": tally.violating_runs,
        })
    safe = [p for p in priced if p["sample_violating_runs"] == 0]
    if safe:
        best = min(safe, key=lambda p: (p["strength"], p["spurious_rejections_per_run"], p["protocol"]))
    else:
        best = priced[0] if priced else None
    return Advice(
        protocol=protocol.label, invariant=invariant, events=[str(e) for e in events],
        removed_by=[p.label for p in candidates],
        recommended=best["protocol"] if best else None,
        recommended_strength=best["strength"] if best else None,
        spurious_rejections_per_run=best["spurious_rejections_per_run"] if best else None,
        sample_safety_violations=best["sample_violating_runs"] if best else None,
        priced=priced,
    )
