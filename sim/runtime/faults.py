"""Fault schedules as data, and the seeded generator for exposure runs.

A schedule is a list of entries ``{"task", "transition", "boundary",
"fault"}``.  The driver takes each entry at most once, at the point it names;
deleting any entry still gives a valid run (the fault just does not happen).
Models never draw random numbers: :func:`exposure_schedule` turns a seed and
the rates into entries, and that is the only place randomness enters.

Seeds per task.  Task ``i`` of a simulation with master seed ``m`` draws from
``numpy.random.default_rng(numpy.random.SeedSequence([m, i]))`` -- independent
of batching, process and order, so a task's faults are the same in every run
and under every preset (common random numbers make presets comparable).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

#: The seed's cruel-grid boundaries and faults, in order.
BOUNDARIES = ("before_intent", "after_intent", "after_dispatch", "after_commit", "after_receipt")
CRUEL_FAULTS = ("terminate", "duplicate", "delay_ack", "change_owner")
#: Faults the exposure generator draws.
EXPOSURE_FAULTS = ("lose_request", "lose_response", "terminate", "unprovable")
#: Points that are not moments of a transition: where the reconciler and compensations read faults.
EXTRA_POINTS = ("reconcile", "compensate")
ALL_FAULTS = CRUEL_FAULTS + ("lose_request", "lose_response", "unprovable", "compensation_fails")


@dataclass(frozen=True)
class FaultEntry:
    task: str
    transition: str
    boundary: str
    fault: str

    def to_dict(self) -> dict[str, str]:
        return {"task": self.task, "transition": self.transition, "boundary": self.boundary, "fault": self.fault}


class FaultSchedule:
    """Entries looked up by (task, transition, boundary); each is used once, in list order."""

    def __init__(self, entries: Iterable[FaultEntry]):
        self.entries = list(entries)
        self._pending: dict[tuple[str, str, str], list[str]] = {}
        for entry in self.entries:
            if entry.boundary not in BOUNDARIES + EXTRA_POINTS:
                raise ValueError(f"unknown fault point {entry.boundary!r}")
            if entry.fault not in ALL_FAULTS:
                raise ValueError(f"unknown fault {entry.fault!r}")
            self._pending.setdefault((entry.task, entry.transition, entry.boundary), []).append(entry.fault)

    def take_all(self, task: str, transition: str, boundary: str) -> list[str]:
        return self._pending.pop((task, transition, boundary), [])

    def take(self, task: str, transition: str, boundary: str, fault: str) -> bool:
        faults = self._pending.get((task, transition, boundary))
        if not faults or fault not in faults:
            return False
        faults.remove(fault)
        return True

    def __len__(self) -> int:
        return len(self.entries)


@dataclass(frozen=True)
class ExposureRates:
    """The probabilities the generator draws with (the worked example's by default).

    ``ambiguous_rate``: a request's acknowledgement does not arrive (timeout or
    worker loss).  ``committed_rate``: an ambiguous request had committed.
    ``reconcile_rate``: a reconciliation can prove the outcome.
    ``worker_loss_share``: of the ambiguous requests, the share where the
    worker itself is lost (crashes after dispatch; a replacement resumes
    after the lease expires) rather than timing out.
    """

    ambiguous_rate: float = 0.041
    committed_rate: float = 0.60
    reconcile_rate: float = 0.997
    worker_loss_share: float = 0.5


def task_rng(master_seed: int, task_index: int) -> np.random.Generator:
    """The documented per-task stream: ``SeedSequence([master_seed, task_index])``."""
    return np.random.default_rng(np.random.SeedSequence([int(master_seed), int(task_index)]))


def exposure_schedule(task: str, transitions: list[str], rates: ExposureRates, rng: np.random.Generator) -> list[FaultEntry]:
    """One task's faults: four uniforms per transition, drawn whatever their use (stable streams).

    Faults strike a transition's first request only; a retry is healthy, so
    the simulated counts compare with the worked example's arithmetic, which
    counts each logical request once.
    """
    draws = rng.random((len(transitions), 4))
    entries: list[FaultEntry] = []
    for name, (ambiguous, committed, lost, provable) in zip(transitions, draws):
        if ambiguous >= rates.ambiguous_rate:
            continue
        if lost < rates.worker_loss_share:
            entries.append(FaultEntry(task, name, "after_dispatch", "terminate"))
        if committed >= rates.committed_rate:
            entries.append(FaultEntry(task, name, "after_dispatch", "lose_request"))
        elif lost >= rates.worker_loss_share:
            entries.append(FaultEntry(task, name, "after_commit", "lose_response"))
        if provable >= rates.reconcile_rate:
            entries.append(FaultEntry(task, name, "reconcile", "unprovable"))
    return entries


def schedule_rows(entries: Iterable[FaultEntry]) -> list[dict[str, Any]]:
    return [entry.to_dict() for entry in entries]
