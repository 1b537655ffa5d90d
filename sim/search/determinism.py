"""Determinism, checked: the history bytes of sample runs, compared across processes.

A run is a pure function of (workload, protocol, seed).  ``digests`` gives
the sha256 of each sample run's history (JSON lines); the command line
computes them again in a fresh interpreter with another ``PYTHONHASHSEED``
and compares.  A difference is a bug in fencesim, never the user's.
"""

from __future__ import annotations

import hashlib
from typing import Sequence

from sim.core.family import Family
from sim.core.workload import Workload

#: Seeds checked per protocol by ``fuzz --check-determinism`` (the first ones, and every counterexample's).
SAMPLE_SEEDS = 25


def digests(family: Family, workload: Workload, protocols: Sequence[str], seeds: Sequence[int]) -> dict[str, str]:
    """``"protocol seed" -> sha256 of the run's history bytes``."""
    out = {}
    for label in protocols:
        protocol = family.parse_protocol(label)
        for seed in seeds:
            history = family.replay(workload.base, protocol, family.generate(workload, seed)).history
            out[f"{label} {seed}"] = hashlib.sha256(history.to_jsonl().encode("utf-8")).hexdigest()
    return out
