"""Intervals for what a sweep counts, from SciPy's special functions with SciPy's own formulas.

* A share of runs (violating runs over runs, steps applied over steps
  planned): the Wilson score interval -- the formula and the normal quantile
  (``scipy.special.ndtri``) ``scipy.stats.binomtest(...).proportion_ci(
  method="wilson")`` uses -- which stays inside [0, 1] and behaves at 0 and
  at n.
* A count of events over a period (duplicate effects per 10,000 tasks):
  the exact Poisson interval (Garwood), from the chi-square quantiles
  ``chi2.ppf(alpha/2, 2k) / 2`` and ``chi2.ppf(1 - alpha/2, 2k + 2) / 2``,
  where ``chi2.ppf(q, df)`` is SciPy's ``2 * gammaincinv(df / 2, q)``;
  never below zero.

The same floats as ``scipy.stats`` (tests/core/test_stats.py compares them over a grid of counts), without
importing ``scipy.stats``: that import alone takes about a second, paid by every command that reports an
interval.  The report names the method beside every interval (``METHODS``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import ModuleType

from sim.core.records import Record

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

    def rounded(self, digits: int = 6) -> Share:
        """The interval as documents give it (:meth:`to_json`'s numbers)."""
        return Share(value=round(self.value, digits), low=round(self.low, digits), high=round(self.high, digits))


@dataclass(frozen=True, slots=True, kw_only=True)
class Share(Record):
    """An interval as a document gives it: ``{value, low, high}``, rounded (NaN for a share of nothing)."""

    value: float
    low: float
    high: float


def _special() -> ModuleType:
    """``scipy.special``, imported on first use (a command that reports no interval never pays for it)."""
    from scipy import special

    return special


def share(successes: int, trials: int, confidence: float = CONFIDENCE) -> Interval:
    """``successes / trials`` with its Wilson interval (0 trials: a share of nothing, all NaN).

    SciPy's two-sided Wilson interval without continuity correction (``_binom_wilson_conf_int``), step by
    step, so the floats are the same."""
    if trials <= 0:
        return Interval(math.nan, math.nan, math.nan)
    k, n = int(successes), int(trials)
    if not 0 <= k <= n:
        raise ValueError(f"a share needs 0 <= successes <= trials, not {k} of {n}")
    p = k / n
    z = _special().ndtri(0.5 + 0.5 * confidence)
    denom = 2 * (n + z**2)
    center = (2 * n * p + z**2) / denom
    q = 1 - p
    delta = z / denom * math.sqrt(4 * n * p * q + z**2)
    low = 0.0 if k == 0 else center - delta
    high = 1.0 if k == n else center + delta
    return Interval(successes / trials, float(low), float(high))


def _chi2_ppf(q: float, df: int) -> float:
    """``scipy.stats.chi2.ppf(q, df)`` as SciPy computes it."""
    return 2 * _special().gammaincinv(df / 2, q)


def count(events: int, exposure: float = 1.0, scale: float = 1.0, confidence: float = CONFIDENCE) -> Interval:
    """A Poisson count's rate per ``exposure`` units, scaled (e.g. per 10,000 tasks), with its exact interval."""
    alpha = 1 - confidence
    low = 0.0 if events == 0 else _chi2_ppf(alpha / 2, 2 * events) / 2
    high = _chi2_ppf(1 - alpha / 2, 2 * events + 2) / 2
    factor = scale / exposure if exposure else 0.0
    return Interval(events * factor, float(low) * factor, float(high) * factor)


def clopper_pearson(x: int, n: int, alpha: float) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of a share ``x / n`` at level ``alpha`` (``scipy.stats.beta``,
    imported on first use)."""
    from scipy import stats

    low = 0.0 if x == 0 else float(stats.beta.ppf(alpha / 2, x, n - x + 1))
    high = 1.0 if x == n else float(stats.beta.isf(alpha / 2, x + 1, n - x))
    return low, high


def garwood(total: int, n: int, alpha: float) -> tuple[float, float]:
    """The exact Poisson (Garwood) interval of a mean ``total / n`` at level ``alpha`` (``scipy.stats.chi2``)."""
    from scipy import stats

    low = 0.0 if total == 0 else float(stats.chi2.ppf(alpha / 2, 2 * total)) / 2 / n
    return low, float(stats.chi2.isf(alpha / 2, 2 * total + 2)) / 2 / n
