"""The exposure simulations' fault draws: four (or five) uniforms per transition of one task.

Exposure simulations follow the sweeps' seed convention: task ``i`` of a
simulation with seed ``m`` draws from ``random.Random(m + i)`` --
independent of batching, process and order, so a task's faults are the same
under every protocol (common random numbers make protocols comparable).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from sim.families.effects.points import FaultEntry


@dataclass(frozen=True)
class ExposureRates:
    """The probabilities the exposure generator draws with (the worked example's by default).

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
    #: A healthy request the network also delivers twice (at-least-once delivery).  0 (the worked example's)
    #: draws nothing, so the streams of the default are unchanged; above 0, a fifth uniform per transition.
    duplicate_rate: float = 0.0


def task_rng(seed: int) -> random.Random:
    """The random source of one simulated task: ``random.Random(seed)`` (seed = seed_start + task index)."""
    return random.Random(seed)


def exposure_schedule(task: str, transitions: list[str], rates: ExposureRates,
                      rng: random.Random) -> list[FaultEntry]:
    """One task's faults: four uniforms per transition, drawn whatever their use (stable streams).

    Faults strike a transition's first request only; a retry is healthy, so
    the simulated counts compare with the worked example's arithmetic, which
    counts each logical request once.
    """
    width = 5 if rates.duplicate_rate > 0 else 4
    draws = [[rng.random() for _ in range(width)] for _ in transitions]
    entries: list[FaultEntry] = []
    for name, (ambiguous, committed, lost, provable, *copied) in zip(transitions, draws):
        if ambiguous >= rates.ambiguous_rate:
            if copied and copied[0] < rates.duplicate_rate:
                entries.append(FaultEntry(task, name, "after_dispatch", "duplicate"))
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
