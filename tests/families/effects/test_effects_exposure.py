"""Exposure (exposure.py): the worked example exactly, and the model measuring the same quantities."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from sim.core.errors import InputError
from sim.families.effects import FAMILY
from sim.families.effects.exposure import (
    NOT_EXERCISED,
    analytic,
    analytic_json,
    analytic_table,
    check_exercised,
    simulate,
    simulated_json,
    simulated_table,
)
from sim.families.effects.faults import ExposureRates

ROOT = Path(__file__).resolve().parents[3]


def test_analytic_defaults_are_the_seeds_numbers():
    """70,000 / 2,870 / 1,722 / 2,861.39 / 8.61 shown as 9."""
    assert analytic_json() == {"requests": 70000, "ambiguous": 2870, "already_committed": 1722,
                               "auto_reconciled": 2861.39, "human_exceptions": 8.61, "human_exceptions_rounded": 9}


def test_analytic_is_exact_with_other_rates():
    """Other rates give the same arithmetic, with no rounding on the way."""
    values = analytic(tasks=333, transitions=3, ambiguous_rate="0.1", committed_rate="0.5", reconcile_rate="0.99")
    assert values["ambiguous"] == Decimal("99.9")
    assert values["already_committed"] == Decimal("49.95")
    assert values["human_exceptions"] == Decimal("0.999")
    assert values["human_exceptions_rounded"] == 1


def test_rounding_is_half_up():
    """x.5 human exceptions round up, not to even."""
    assert analytic(tasks=1, transitions=1, ambiguous_rate="1", reconcile_rate="0.5")["human_exceptions_rounded"] == 1
    assert analytic(tasks=5, transitions=1, ambiguous_rate="1", reconcile_rate="0.5")["human_exceptions_rounded"] == 3


def test_analytic_rejects_rates_above_one():
    """A percentage written as 4.1 is refused with a hint."""
    with pytest.raises(InputError):
        analytic(ambiguous_rate="4.1")


def test_analytic_table_is_a_dataframe():
    """The notebook face returns a DataFrame."""
    table = analytic_table()
    assert list(table["quantity"])[:2] == ["requests", "ambiguous"]


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_simulation_is_deterministic_for_a_master_seed():
    """Two simulations with the same master seed give identical metrics."""
    first = simulate(presets=["unkeyed-retry", "keyed-reconcile"], seeds=300, master_seed=11,
                     rates=ExposureRates(ambiguous_rate=0.2))
    second = simulate(presets=["unkeyed-retry", "keyed-reconcile"], seeds=300, master_seed=11,
                      rates=ExposureRates(ambiguous_rate=0.2))
    assert simulated_table(first).equals(simulated_table(second))


SIMULATE = """
import json, sys
from sim.families.effects.exposure import simulate, simulated_json
from sim.families.effects.faults import ExposureRates
print(json.dumps(simulated_json(simulate(presets=["unkeyed-retry"], seeds=200, master_seed=5,
                                          rates=ExposureRates(ambiguous_rate=0.3))), sort_keys=True))
"""


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_simulation_identical_across_processes():
    """Another process with another hash seed measures the same numbers."""
    outputs = [subprocess.run([sys.executable, "-c", SIMULATE], capture_output=True, check=True, cwd=ROOT,
                              env=dict(os.environ, PYTHONHASHSEED=h)).stdout for h in ("0", "99")]
    assert outputs[0] == outputs[1]


UNEXERCISED = {"compensation": "off", "approval": "off", "version_policy": "none", "lease_fence": "off",
               "receipt_check": "trusting", "irreversible_keys": "on", "ledger_dedupe": "off", "pin_reads": "off"}


@pytest.mark.parametrize("knob", sorted(UNEXERCISED))
def test_simulation_refuses_knobs_it_does_not_exercise(knob):
    """A protocol setting a knob the worked example never exercises is refused, naming the knob and why."""
    protocol = FAMILY.parse_protocol(f"keyed-reconcile,{knob}={UNEXERCISED[knob]}")
    with pytest.raises(InputError, match=knob) as caught:
        check_exercised(protocol)
    assert NOT_EXERCISED[knob] in str(caught.value)
    with pytest.raises(InputError):
        simulate(presets=[protocol.label], seeds=2)


def test_not_exercised_knobs_are_the_documented_eight():
    """compensation, approval, version_policy, lease_fence, receipt_check, irreversible_keys, ledger_dedupe and
    pin_reads are refused for the worked example."""
    assert set(NOT_EXERCISED) == set(UNEXERCISED)
    check_exercised(FAMILY.parse_protocol("keyed-fingerprint-reconcile,key_retention=3600"))


def test_simulated_json_turns_nan_into_null():
    """A metric with nothing to measure (no compensation without aborts) is null in JSON, not NaN."""
    document = simulated_json(simulate(presets=["keyed-reconcile"], seeds=20, master_seed=1))
    assert document["keyed-reconcile"]["compensation_age_s"]["value"] is None
    assert set(document["keyed-reconcile"]["duplicate_effects"]) == {"value", "ci_low", "ci_high"}


@pytest.mark.slow
def test_worked_example_in_the_model():
    """2,500 tasks at the worked example's rates, scaled to its 10,000: the model and the arithmetic confirm
    each other (the two presets the claims are about; the intervals are 95% ones on 2,500 tasks)."""
    result = simulate(presets=["unkeyed-retry", "keyed-fingerprint-reconcile"], seeds=2_500, tasks=10_000)
    expected = analytic_json()
    unkeyed = result["unkeyed-retry"]["duplicate_effects"]
    assert unkeyed["value"] > 0
    assert unkeyed["ci_low"] <= expected["already_committed"] <= unkeyed["ci_high"]
    safe = result["keyed-fingerprint-reconcile"]
    assert safe["duplicate_effects"]["value"] == 0
    human = safe["human_exceptions"]
    ambiguous = safe["ambiguous"]["value"]
    assert human["ci_low"] <= 0.003 * ambiguous <= human["ci_high"]
    assert not math.isnan(safe["reconciliation_latency_s"]["value"])
