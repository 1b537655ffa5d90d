"""The runtime family's knob table and presets (DESIGN.md section 4).

Knob names, values and preset names are part of the interface: scenario
files, ``--protocol`` strings and exported counterexamples spell them so.
The table is registered with :mod:`sim.protocol` when :mod:`sim.runtime` is
imported, so ``parse_protocol("keyed-reconcile", "runtime")`` works.
"""

from __future__ import annotations

from sim.protocol import Family, Knob, Protocol, parse_protocol, register_family

FAMILY_NAME = "runtime"

#: Default retention of idempotency keys at the external system: one week.
KEY_RETENTION_DEFAULT_S = 7 * 24 * 3600.0

RUNTIME = Family(
    name=FAMILY_NAME,
    knobs=(
        Knob(
            "idempotency",
            ("none", "key", "key+fingerprint"),
            "none",
            "none: every request is new; key: the external system returns the existing effect for a "
            "known key; key+fingerprint: and rejects a known key with other arguments",
        ),
        Knob("on_timeout", ("failed", "unknown"), "failed", "what a timed-out transition is recorded as"),
        Knob("reconcile", ("on", "off"), "off", "query the external system before re-dispatching an unknown outcome"),
        Knob("compensation", ("on", "off"), "on", "run compensations for committed reversible effects when a task aborts"),
        Knob(
            "approval",
            ("on", "off"),
            "on",
            "a human approves an irreversible transition before its intent (default: same as compensation)",
        ),
        Knob("checkpoint", ("verified", "optimistic"), "verified", "checkpoint after the receipt, or right after dispatch"),
        Knob(
            "version_policy",
            ("pinned", "replay", "migrate", "none"),
            "pinned",
            "how a task resumes after the workflow changed: its own version, replay under the new "
            "code, a recorded migration, or the new code unannounced",
        ),
        Knob("lease_fence", ("on", "off"), "on", "the event log refuses appends from a worker whose lease expired"),
        Knob(
            "receipt_check",
            ("validated", "trusting"),
            "validated",
            "validated: a receipt must match the key, fingerprint and head; trusting: any matching-looking object",
        ),
        Knob(
            "key_retention",
            None,
            KEY_RETENTION_DEFAULT_S,
            "simulated seconds the external system keeps a key; a retry after that is a new request",
            convert=float,
        ),
    ),
    presets={
        "unkeyed-retry": {"idempotency": "none", "on_timeout": "failed", "reconcile": "off"},
        "keyed": {"idempotency": "key", "on_timeout": "failed", "reconcile": "off"},
        "keyed-reconcile": {"idempotency": "key", "on_timeout": "unknown", "reconcile": "on"},
        "keyed-fingerprint-reconcile": {"idempotency": "key+fingerprint", "on_timeout": "unknown", "reconcile": "on"},
    },
)

#: The presets in the order of the design's table (least to most careful).
RUNTIME_PRESETS = tuple(RUNTIME.presets)

register_family(RUNTIME)


def parse_runtime_protocol(text: str) -> Protocol:
    """Parse a runtime protocol string (preset, knobs or both)."""
    return parse_protocol(text, FAMILY_NAME)


def approval_on(protocol: Protocol) -> bool:
    """Whether the approval gate is on.

    The design says approval defaults to the value of ``compensation``; the
    knob table can only hold one default, so an approval the label does not
    set explicitly follows ``compensation``.
    """
    explicit = any(part.strip().startswith("approval=") for part in protocol.label.split(","))
    if explicit:
        return protocol.approval == "on"
    return protocol.compensation == "on"
