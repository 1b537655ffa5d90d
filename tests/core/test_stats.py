"""Intervals for what a sweep counts (sim.core.stats): Wilson shares and exact Poisson counts."""

from __future__ import annotations

import math

import pytest

from sim.core.stats import METHODS, Interval, count, share


def test_share_is_the_proportion_with_a_wilson_interval_inside_zero_one():
    """A share is successes / trials with a Wilson interval that stays within [0, 1], even at 0 and n."""
    half = share(5, 10)
    assert half.value == 0.5 and 0 < half.low < 0.5 < half.high < 1
    none, every = share(0, 20), share(20, 20)
    assert none.low == 0.0 and 0 < none.high < 1
    assert every.high == pytest.approx(1.0) and 0 < every.low < 1


def test_share_of_no_trials_is_nan():
    """A share of nothing has no value and no interval."""
    assert all(math.isnan(x) for x in (share(0, 0).value, share(0, 0).low, share(0, 0).high))


def test_count_is_scaled_with_an_exact_poisson_interval_never_below_zero():
    """A count is scaled by scale / exposure; its Garwood interval starts at 0 for no events."""
    zero = count(0, exposure=100, scale=10_000)
    assert zero.value == 0.0 and zero.low == 0.0 and zero.high == pytest.approx(3.688879 * 100, rel=1e-5)
    some = count(10, exposure=1.0)
    assert some.value == 10 and some.low == pytest.approx(4.795389, rel=1e-5)
    assert some.high == pytest.approx(18.390356, rel=1e-5)


def test_interval_to_json_rounds_and_methods_are_named():
    """An interval serialises as value/low/high rounded; the report names each method."""
    assert Interval(1 / 3, 0.0, 1.0).to_json(3) == {"value": 0.333, "low": 0.0, "high": 1.0}
    assert "Wilson" in METHODS["share"] and "Poisson" in METHODS["count"]


def test_the_floats_are_scipy_stats_own_over_a_grid_of_counts():
    """The intervals skip importing scipy.stats (a second per command) yet give its floats exactly: Wilson
    from binomtest(...).proportion_ci(method="wilson"), Garwood from chi2.ppf."""
    from scipy import stats

    for n in (1, 2, 3, 7, 20, 50, 99, 150, 300, 1000, 2000, 10_000, 123_457):
        for k in sorted({0, 1, 2, n // 3, n // 2, n - 1, n} & set(range(n + 1))):
            ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
            got = share(k, n)
            assert (got.low, got.high) == (float(ci.low), float(ci.high)), (k, n)
    for events in (0, 1, 2, 3, 5, 10, 37, 120, 1000, 98_765):
        for exposure, scale in ((1.0, 1.0), (2000, 10_000), (300, 40_000)):
            got = count(events, exposure, scale)
            alpha = 1 - 0.95  # as the intervals were computed with scipy.stats
            low = 0.0 if events == 0 else stats.chi2.ppf(alpha / 2, 2 * events) / 2
            high = stats.chi2.ppf(1 - alpha / 2, 2 * events + 2) / 2
            factor = scale / exposure
            assert (got.low, got.high) == (float(low) * factor, float(high) * factor), events


def test_a_share_of_more_successes_than_trials_is_refused():
    with pytest.raises(ValueError, match="0 <= successes <= trials"):
        share(5, 3)
