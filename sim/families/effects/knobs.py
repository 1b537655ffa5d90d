"""The durable-effects family's knobs and presets (names are part of the interface).

Family name ``effects`` in files and on the command line (``runtime`` is accepted as an alias).  Ranks say how
much protection a value gives (higher is stronger); the advisor never
proposes a lower rank than the design's own, and every value below a knob's
top rank is a weakening the quality suite plants.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from sim.core.mechanisms import Knobs, knob, knob_table

FAMILY_NAME = "effects"

#: Default retention of idempotency keys at the external system: one week.
KEY_RETENTION_DEFAULT_S = 7 * 24 * 3600.0
#: Retentions the advisor may propose, and a short one a planted bug may set.
KEY_RETENTION_LADDER_S = (5.0, 30.0, KEY_RETENTION_DEFAULT_S)

# -- when a mechanism acted, from the history's events (liveness: fired_<knob>, "never fired") --------------


def _keys_fired(event: Any, seen: Any, values: Any) -> bool:
    """A key found the effect it had made (deduplicated), or (with fingerprints) refused other arguments."""
    return event.event in ("deduplicated", "rejected")


def _unknown_fired(event: Any, seen: Any, values: Any) -> bool:
    return event.event == "timed_out" and event.fields.get("outcome") == "unknown"


def _reconcile_fired(event: Any, seen: Any, values: Any) -> bool:
    return event.event == "reconciled"


def _keys_silent(workload: Any, values: Any) -> str:
    return "no request was sent twice under one key"


def _timeout_silent(workload: Any, values: Any) -> str:
    return "no transition timed out"


def _reconcile_silent(workload: Any, values: Any) -> str:
    if values.on_timeout != "unknown":
        return "on_timeout=failed leaves no outcome unknown to reconcile"
    return "no outcome was left unknown"


def _delivery_fired(event: Any, seen: Any, values: Any) -> bool:
    """At most once: a transition whose outcome was not recorded was given up instead of dispatched again."""
    return event.event == "transition_failed" and event.fields.get("reason") == "at_most_once"


def _delivery_silent(workload: Any, values: Any) -> str:
    return "every dispatched transition's outcome was recorded: nothing was given up"


class NoHistory:
    """The effects predicates read each event alone: nothing of the history before it is kept."""

    def feed(self, event: Any) -> None:
        """Nothing to remember."""


@dataclass(frozen=True)
class EffectsKnobs(Knobs):
    """One durable-effects protocol's knob values, typed (``EffectsKnobs.of(protocol)``): each knob declared once."""

    idempotency: Literal["none", "key", "key+fingerprint"] = knob(
        "none", "`none`: every request is new. `key`: the Git host returns the existing effect for a known key, "
        "whatever the arguments. `key+fingerprint`: and rejects a known key with other arguments",
        ranks={"none": 0, "key": 1, "key+fingerprint": 2}, fired=_keys_fired, silent=_keys_silent)
    on_timeout: Literal["failed", "unknown"] = knob(
        "failed", "what a timed-out transition is recorded as", ranks={"failed": 0, "unknown": 1},
        fired=_unknown_fired, silent=_timeout_silent)
    reconcile: Literal["on", "off"] = knob(
        "off", "query the Git host before re-dispatching an unknown outcome", ranks={"off": 0, "on": 1},
        fired=_reconcile_fired, silent=_reconcile_silent)
    compensation: Literal["on", "off"] = knob(
        "on", "run compensations for committed reversible effects when a task aborts", ranks={"off": 0, "on": 1})
    approval: Literal["on", "off"] = knob(
        "on", "`on`: the worker waits for a human's approval before an irreversible transition. `off`: it asks, then "
        "goes ahead when no one answered within the 600 s grace period",
        ranks={"off": 0, "on": 1}, follows="compensation")
    checkpoint: Literal["verified", "optimistic"] = knob(
        "verified", "save a checkpoint after the receipt, or right after dispatch",
        ranks={"optimistic": 0, "verified": 1})
    version_policy: Literal["pinned", "replay", "migrate", "none"] = knob(
        "pinned", "how a task resumes after an upgrade: its own version; replay under the new code if the recorded "
        "transitions are a prefix of the new workflow (else a `replay_divergence` and it stays); a recorded migration "
        "(`migrated`, with the renames); or the new code, unannounced",
        ranks={"none": 0, "pinned": 1, "replay": 1, "migrate": 1})
    lease_fence: Literal["on", "off"] = knob(
        "on", "the log refuses appends from a worker whose lease expired", ranks={"off": 0, "on": 1})
    receipt_check: Literal["validated", "trusting"] = knob(
        "validated",
        "for reconciliation: `validated` accepts an object found by key only if it has the fingerprint the intent "
        "recorded and the expected head and is still open (by marker: not foreign, same generation, same head, open); "
        "`trusting` accepts any object found by key or carrying the task's marker",
        ranks={"trusting": 0, "validated": 1})
    irreversible_keys: Literal["off", "on"] = knob(
        "off", "`on`: irreversible endpoints honour idempotency keys too. `off`: they take none, so only approval, "
        "reconciliation and the lease fence protect them", ranks={"off": 0, "on": 1})
    ledger_dedupe: Literal["key", "off"] = knob(
        "key", "`key`: an `append` is deduplicated at the ledger by its idempotency key. `off`: the ledger takes no "
        "key, so a repeated append is a second entry", ranks={"off": 0, "key": 1})
    pin_reads: Literal["on", "off"] = knob(
        "on", "`on`: a read's receipt records the version and content hash it observed and later steps act on that. "
        "`off`: a worker that lost what it read reads again (`observed` with `reread: true`) and acts on the world as "
        "it is now", ranks={"off": 0, "on": 1})
    delivery: Literal["at_least_once", "at_most_once"] = knob(
        "at_least_once", "`at_least_once`: a transition whose outcome was not recorded (timed out, in doubt after a "
        "restart, not found) is dispatched again. `at_most_once`: no transition is dispatched twice; an outcome not "
        "recorded fails the transition (`transition_failed`, reason `at_most_once`) and the task aborts -- an effect "
        "that happened may then be recorded as failed (`lost_success`) or left stranded, and one that did not happen "
        "is given up. The engine presets set it ([docs/engines.md](engines.md))",
        ranks={"at_least_once": 1, "at_most_once": 1}, fired=_delivery_fired, silent=_delivery_silent)
    key_retention: float = knob(
        KEY_RETENTION_DEFAULT_S, "simulated seconds the Git host keeps a key; a retry after that is a new request",
        convert=float, ladder=KEY_RETENTION_LADDER_S, unit="s")


#: The durable engines as presets (``--engine``, a design's ``engine =``): what each engine decides itself --
#: whether a transition whose outcome was not recorded is dispatched again, what a timeout means, when a result
#: is journaled, whether a stale worker's records are refused, what a changed workflow replays.  What the user
#: decides (keys, reconciliation, compensation, approval) is left to the protocol; docs/engines.md cites each
#: engine's documentation and says what a preset cannot express.
_JOURNALED = {"on_timeout": "failed", "reconcile": "off", "checkpoint": "verified", "lease_fence": "on",
              "pin_reads": "on"}
ENGINE_PRESETS: dict[str, dict[str, str]] = {
    "temporal": {**_JOURNALED, "delivery": "at_least_once", "version_policy": "replay"},
    "dbos": {**_JOURNALED, "delivery": "at_least_once", "version_policy": "pinned"},
    "step-functions-standard": {**_JOURNALED, "delivery": "at_most_once", "version_policy": "pinned"},
    "step-functions-express-async": {**_JOURNALED, "delivery": "at_least_once", "version_policy": "pinned"},
    "step-functions-express-sync": {**_JOURNALED, "delivery": "at_most_once", "version_policy": "pinned"},
    "durable-task": {**_JOURNALED, "delivery": "at_least_once", "version_policy": "replay"},
    "inngest": {**_JOURNALED, "delivery": "at_least_once", "version_policy": "replay"},
    "restate": {**_JOURNALED, "delivery": "at_least_once", "version_policy": "pinned"},
}
#: The engines, in the order tables list them.
ENGINES: tuple[str, ...] = tuple(ENGINE_PRESETS)
#: The engines whose documentation promises at-least-once execution of a step (a step may run twice).
AT_LEAST_ONCE_ENGINES: tuple[str, ...] = tuple(
    name for name, values in ENGINE_PRESETS.items() if values["delivery"] == "at_least_once")

TABLE = knob_table(
    EffectsKnobs, family=FAMILY_NAME,
    presets={
        "unkeyed-retry": {"idempotency": "none", "on_timeout": "failed", "reconcile": "off"},
        "keyed": {"idempotency": "key", "on_timeout": "failed", "reconcile": "off"},
        "keyed-reconcile": {"idempotency": "key", "on_timeout": "unknown", "reconcile": "on"},
        "keyed-fingerprint-reconcile": {"idempotency": "key+fingerprint", "on_timeout": "unknown", "reconcile": "on"},
        # The seed's four reliability classes ("use the smallest reliability class the effect requires"), each
        # the mechanisms it turns on; every knob is set, so a class means the same whatever the defaults.
        "ephemeral-call": {"idempotency": "none", "on_timeout": "failed", "reconcile": "off", "compensation": "off",
                           "approval": "off", "checkpoint": "optimistic", "version_policy": "none",
                           "lease_fence": "off", "receipt_check": "trusting", "ledger_dedupe": "off",
                           "pin_reads": "off", "irreversible_keys": "off",
                           "delivery": "at_least_once"},
        "restartable-job": {"idempotency": "key", "on_timeout": "unknown", "reconcile": "off", "compensation": "off",
                            "approval": "off", "checkpoint": "verified", "version_policy": "pinned",
                            "lease_fence": "on", "receipt_check": "validated", "ledger_dedupe": "key",
                            "pin_reads": "on", "irreversible_keys": "off",
                           "delivery": "at_least_once"},
        "durable-workflow": {"idempotency": "key+fingerprint", "on_timeout": "unknown", "reconcile": "on",
                             "compensation": "off", "approval": "off", "checkpoint": "verified",
                             "version_policy": "pinned", "lease_fence": "on", "receipt_check": "validated",
                             "ledger_dedupe": "key", "pin_reads": "on", "irreversible_keys": "off",
                           "delivery": "at_least_once"},
        "governed-saga": {"idempotency": "key+fingerprint", "on_timeout": "unknown", "reconcile": "on",
                          "compensation": "on", "approval": "on", "checkpoint": "verified", "version_policy": "pinned",
                          "lease_fence": "on", "receipt_check": "validated", "ledger_dedupe": "key",
                          "pin_reads": "on", "irreversible_keys": "off",
                           "delivery": "at_least_once"},
        **{name: dict(values) for name, values in ENGINE_PRESETS.items()},
    },
    # A protocol spelt by knobs is labelled from the four protocol presets only, as it always was.
    label_presets=("unkeyed-retry", "keyed", "keyed-reconcile", "keyed-fingerprint-reconcile"),
)


#: The seed's four protocol presets, in the order of the design's table (least to most careful): what a command
#: runs when it is given no protocol.
assert TABLE.label_presets is not None
PRESETS: tuple[str, ...] = TABLE.label_presets
#: The seed's four reliability classes, smallest first (presets too; a review finds the smallest each
#: transition needs).
RELIABILITY_CLASSES = ("ephemeral-call", "restartable-job", "durable-workflow", "governed-saga")
