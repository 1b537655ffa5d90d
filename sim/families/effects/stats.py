"""Confidence intervals for per-task samples (normal approximation, 95%).

Counts are estimated as ``scale * mean`` of per-task counts; ratios (a mean
over events, such as reconciliation latency) with the ratio estimator
``sum(y) / sum(x)`` and its delta-method variance.  With thousands of tasks
the normal quantile is accurate; no SciPy needed.
"""

from __future__ import annotations

import math

import numpy as np

Z_95 = 1.959963984540054


def count_estimate(per_task: np.ndarray, scale: float) -> tuple[float, float, float]:
    """``(value, ci_low, ci_high)`` of ``scale * mean(per_task)``."""
    n = len(per_task)
    if n == 0:
        return (math.nan, math.nan, math.nan)
    mean = float(per_task.mean())
    half = Z_95 * float(per_task.std(ddof=1)) / math.sqrt(n) if n > 1 else math.nan
    return (scale * mean, scale * (mean - half), scale * (mean + half))


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
