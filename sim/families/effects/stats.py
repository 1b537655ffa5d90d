"""The ratio estimator of a mean over events (reconciliation latency, recovery point).

``sum(y) / sum(x)`` over tasks with its delta-method normal interval; counts
and shares use the exact intervals of :mod:`sim.core.stats`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

Z_95 = float(stats.norm.ppf(0.975))


def ratio_estimate(numerator: np.ndarray, denominator: np.ndarray) -> tuple[float, float, float]:
    """``(value, ci_low, ci_high)`` of ``sum(numerator) / sum(denominator)`` over tasks."""
    n = len(numerator)
    total = float(denominator.sum())
    if n == 0 or total == 0:
        return (math.nan, math.nan, math.nan)
    ratio = float(numerator.sum()) / total
    if n < 2:
        return (ratio, math.nan, math.nan)
    residual = numerator - ratio * denominator
    mean_denominator = total / n
    half = Z_95 * float(residual.std(ddof=1)) / (math.sqrt(n) * mean_denominator)
    return (ratio, ratio - half, ratio + half)
