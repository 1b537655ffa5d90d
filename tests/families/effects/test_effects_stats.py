"""The ratio estimator of a mean over events (stats.py)."""

from __future__ import annotations

import math

import numpy as np

from sim.families.effects.stats import Z_95, ratio_estimate


def test_ratio_estimate_is_the_ratio_of_sums_with_an_interval_around_it():
    """A ratio is sum(numerator) / sum(denominator) with a 95% delta-method interval around it."""
    value, low, high = ratio_estimate(np.array([1.0, 3.0, 2.0]), np.array([2.0, 2.0, 2.0]))
    assert value == 1.0 and low < value < high
    assert math.isclose(value - low, high - value)
    assert math.isclose(Z_95, 1.959963984540054)


def test_ratio_estimate_of_nothing_is_nan():
    """A zero denominator gives NaN everywhere; one task gives a value without an interval."""
    assert all(math.isnan(x) for x in ratio_estimate(np.array([1.0]), np.array([0.0])))
    value, low, high = ratio_estimate(np.array([3.0]), np.array([2.0]))
    assert value == 1.5 and math.isnan(low) and math.isnan(high)
