"""Intervals for what a sweep counts, from SciPy (never by hand).

* A share of runs (violating runs over runs, steps applied over steps
  planned): the Wilson score interval (``scipy.stats.binomtest(...).
  proportion_ci(method="wilson")``), which stays inside [0, 1] and behaves
  at 0 and at n.
* A count of events over a period (duplicate effects per 10,000 tasks):
  the exact Poisson interval (Garwood), from the chi-square quantiles
  ``chi2.ppf(alpha/2, 2k) / 2`` and ``chi2.ppf(1 - alpha/2, 2k + 2) / 2``;
  never below zero.

The report names the method beside every interval (``METHODS``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import ModuleType

CONFIDENCE = 0.95
METHODS = {
    "share": "Wilson score interval, 95% (scipy.stats.binomtest)",
    "count": "exact Poisson (Garwood) interval, 95% (scipy.stats.chi2)",
}


@dataclass(frozen=True)
class Interval:
    value: float
    low: float
    high: float

    def to_json(self, digits: int = 6) -> dict[str, float]:
        return {"value": round(self.value, digits), "low": round(self.low, digits), "high": round(self.high, digits)}


def _scipy_stats() -> ModuleType:
    """``scipy.stats``, imported on first use: it takes about a second to import, and a command that reports
    no interval (``fencesim run``) never pays for it."""
    from scipy import stats

    return stats


def share(successes: int, trials: int, confidence: float = CONFIDENCE) -> Interval:
    """``successes / trials`` with its Wilson interval (0 trials: a share of nothing, all NaN)."""
    if trials <= 0:
        return Interval(math.nan, math.nan, math.nan)
    test = _scipy_stats().binomtest(int(successes), int(trials))
    ci = test.proportion_ci(confidence_level=confidence, method="wilson")
    return Interval(successes / trials, float(ci.low), float(ci.high))


def count(events: int, exposure: float = 1.0, scale: float = 1.0, confidence: float = CONFIDENCE) -> Interval:
    """A Poisson count's rate per ``exposure`` units, scaled (e.g. per 10,000 tasks), with its exact interval."""
    alpha = 1 - confidence
    chi2 = _scipy_stats().chi2
    low = 0.0 if events == 0 else chi2.ppf(alpha / 2, 2 * events) / 2
    high = chi2.ppf(1 - alpha / 2, 2 * events + 2) / 2
    factor = scale / exposure if exposure else 0.0
    return Interval(events * factor, float(low) * factor, float(high) * factor)
