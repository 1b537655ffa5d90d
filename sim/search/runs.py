"""One fuzz run: generate, replay, check, summarise as a flat row."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sim.checks.base import run_checks
from sim.checks.workspace import SAFETY_INVARIANTS, WORKSPACE_CHECKS
from sim.faults import generate
from sim.history import History
from sim.protocol import Protocol
from sim.replay import replay
from sim.scenario import Action
from sim.search.workload import Workload

VERDICTS = ("applied", "deduped", "rejected:stale_rev", "rejected:pre_hash", "rejected:drift", "rejected:overlap")


@dataclass
class RunOutcome:
    """What a sweep keeps of one run (the history is dropped to keep memory flat)."""

    row: dict[str, Any]
    order: tuple[Action, ...]  # the valid order (skipped events dropped)
    violated: tuple[str, ...]  # safety invariants violated, in check order


def valid_order(history: History, order) -> tuple[Action, ...]:
    """The order without the events the replay skipped."""
    # The director performs action i at simulated time i, so a skipped record's time
    # is the index of the action it skipped.
    skipped = {event.time for event in history if event.get("skipped")}
    return tuple(a for i, a in enumerate(order) if i not in skipped)


def evaluate(workload: Workload, protocol: Protocol, events) -> tuple[History, list, Any]:
    history, end = replay(workload.base, protocol, events)
    report = run_checks(WORKSPACE_CHECKS, history)
    return history, report, end


def run_one(workload: Workload, protocol: Protocol, seed: int, index: int) -> RunOutcome:
    schedule = generate(workload, seed)
    history, report, end = evaluate(workload, protocol, schedule.events)
    order = valid_order(history, schedule.events)
    counts = {v: 0 for v in VERDICTS}
    for event in history:
        verdict = event.get("verdict")
        if verdict in counts and event.event not in ("ack", "lose_ack"):
            counts[verdict] += 1
    by_invariant = {name: 0 for name in SAFETY_INVARIANTS}
    for violation in report.safety_violations:
        by_invariant[violation.invariant] += 1
    spurious = len(report.availability_findings)
    row: dict[str, Any] = {
        "run": index, "seed": seed, "protocol": protocol.label, "events": len(order),
        "end": end.reason, "classes": ",".join(schedule.classes),
    }
    row.update({f"verdict_{k.replace(':', '_')}": v for k, v in counts.items()})
    row.update({f"violations_{k}": v for k, v in by_invariant.items()})
    row["spurious_rejections"] = spurious
    row["violated"] = any(by_invariant.values())
    violated = tuple(name for name in SAFETY_INVARIANTS if by_invariant[name])
    return RunOutcome(row, order, violated)
