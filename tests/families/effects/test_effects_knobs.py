"""The effects family's knob table: the four presets of the design's table, and irreversible_keys."""

from __future__ import annotations

import pytest

from sim.families.effects.knobs import (
    FAMILY_NAME,
    KEY_RETENTION_DEFAULT_S,
    PRESETS,
    TABLE,
    EffectsKnobs,
)

#: Every knob the presets leave alone, at its default (read from the table: a knob added there is here too).
DEFAULTS = {name: value for name, value in TABLE.resolve({}).items()
            if name not in ("idempotency", "on_timeout", "reconcile")}


@pytest.mark.parametrize(("preset", "idempotency", "on_timeout", "reconcile"), [
    ("unkeyed-retry", "none", "failed", "off"), ("keyed", "key", "failed", "off"),
    ("keyed-reconcile", "key", "unknown", "on"), ("keyed-fingerprint-reconcile", "key+fingerprint", "unknown", "on")])
def test_preset_resolves_to_design_knobs(preset, idempotency, on_timeout, reconcile):
    """Each preset sets keys, the timeout outcome and reconciliation; every other knob keeps its default."""
    protocol = TABLE.parse(preset)
    assert protocol.knobs == {"idempotency": idempotency, "on_timeout": on_timeout, "reconcile": reconcile,
                              **DEFAULTS}


def test_presets_run_from_least_to_most_careful():
    """The presets are listed in the design table's order, and the family is called 'effects'."""
    assert PRESETS == ("unkeyed-retry", "keyed", "keyed-reconcile", "keyed-fingerprint-reconcile")
    assert FAMILY_NAME == TABLE.family == "effects"


def test_irreversible_keys_is_off_by_default_and_on_is_stronger():
    """irreversible_keys defaults to off (irreversible endpoints take no key); on ranks above off."""
    knob = TABLE.knob("irreversible_keys")
    assert knob.default == "off" and knob.rank("on") > knob.rank("off")
    assert TABLE.parse("keyed-fingerprint-reconcile,irreversible_keys=on").knobs["irreversible_keys"] == "on"
    assert knob.weakenings() == ("off",)


def test_key_retention_default_is_a_week():
    """Keys are kept a week unless the protocol says otherwise."""
    assert KEY_RETENTION_DEFAULT_S == 7 * 24 * 3600.0 == EffectsKnobs.defaults().key_retention


def test_the_presets_leave_the_other_knobs_at_their_defaults():
    """The presets set keys, the timeout outcome and reconciliation only; approval follows compensation."""
    assert DEFAULTS["approval"] == DEFAULTS["compensation"] == "on"
    assert DEFAULTS["ledger_dedupe"] == "key" and DEFAULTS["delivery"] == "at_least_once"
