"""How one search runs: a single value carried from the command line through the fuzz pipeline to the sweep.

``fencesim fuzz`` builds one :class:`SearchOptions` from its options (or from an interrupted sweep's
state), :func:`sim.search.pipeline.fuzz` reads what it needs (shrinking, advice) and hands the same
value to :func:`sim.search.sweep.run_sweep`, which reads the rest (seeds, workers, backend, resume).
Nothing in between unpacks it into keyword arguments again, so an option added here reaches every layer
that needs it without editing the layers that do not.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

from sim.core.errors import InputError
from sim.search.budget import NO_DEADLINE, Deadline
from sim.search.shrink import SHRINK_SECONDS_MAX
from sim.search.tally import SweepState

#: Where a sweep's chunks run: processes on this machine, or a ``dask.distributed`` cluster.
BACKENDS = ("local", "dask")
#: ``progress(done_seeds, total_seeds, violating_runs)``, called after each sweep chunk.
SweepProgress = Callable[[int, int, int], None]
#: ``shrink_progress(what, events)``, called as each violation starts shrinking.
ShrinkProgress = Callable[[str, int], None]


@dataclass(frozen=True)
class SearchOptions:
    """Every setting of a sweep and of the fuzz pipeline around it (immutable: :meth:`replace` derives one).

    ``seeds`` per protocol, run ``i`` with seed ``seed_start + i``; ``workers`` processes (None: the core
    count); ``deadline`` bounds the whole run; ``backend``/``scheduler`` say where chunks run; ``resume``
    continues an interrupted sweep from its state and ``checkpoint`` receives that state after every chunk;
    ``keep_rows`` keeps one row per run (for a DataFrame).  The pipeline alone reads ``advise`` (run the
    counterfactual advisor on each counterexample), ``shrink_seconds`` (the most one counterexample may
    take to shrink; None: no limit), ``shrink_progress`` and ``proof_depth`` (the events within which the
    advisor proves a fix by exhaustive search: the design's bound; None: its default).
    """

    seeds: int = 1000
    seed_start: int = 0
    workers: int | None = None
    deadline: Deadline = NO_DEADLINE
    backend: str = "local"
    scheduler: str | None = None
    resume: SweepState | None = None
    checkpoint: Callable[[SweepState], None] | None = None
    progress: SweepProgress | None = None
    keep_rows: bool = False
    advise: bool = True
    shrink_seconds: float | None = SHRINK_SECONDS_MAX
    shrink_progress: ShrinkProgress | None = None
    proof_depth: int | None = None

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise InputError(f"unknown backend {self.backend!r}; backends: {', '.join(BACKENDS)}")
        if self.seed_start < 0:
            raise InputError(f"--seed-start must be 0 or more, got {self.seed_start}")

    def replace(self, **changes: Any) -> "SearchOptions":
        """These options with ``changes`` (the pipeline hands the sweep its share of the deadline so)."""
        return dataclasses.replace(self, **changes)
