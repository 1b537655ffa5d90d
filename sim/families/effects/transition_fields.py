"""The fields of a transition table, as data: one entry per field, and everything else follows from it.

A user's workflow is a list of transition tables (``docs/effects.md``)::

    { name = "post_slack", class = "irreversible", object = "announcement", keys = false, reconcile_by = "none" }

Each field is declared once, here (:data:`FIELDS`): its kind of value, the values it allows, what a table
that leaves it out declares, the default its endpoint assumes per effect class, the classes that refuse it
(with the reason), and its line in the docs.  From that entry:

* the parser (:func:`sim.families.effects.workflow_file.parse_table`) checks the field and keeps it;
* the dumper (:func:`sim.families.effects.workflow_file.dump_transition`) writes it back;
* a version 2 that renames a transition keeps it (``dataclasses.replace``: every field travels);
* the docs' table of fields (:func:`docs_table`) is generated from it, and a test checks ``docs/effects.md``;
* the schema the real harness reads (``workflow_schema.json``, :mod:`sim.families.effects.workflow_schema`)
  carries it, so the real side -- which imports nothing of the model -- resolves its default and either
  plays it or says why it cannot, and a parity test fails while it does neither.

The first four fields are the transition's identity and are attributes of
:class:`~sim.families.effects.workflow.Transition`; every other field is an *option* of its endpoint, kept in
``Transition.options`` and read with ``transition.option(name)``.  Adding a field is therefore one entry in
:data:`FIELDS` plus its behaviour where the model acts on it (``docs/adding-a-family.md``, "Adding a
transition field").

The module reads :data:`FIELDS` at call time (``transition_fields.FIELDS``), so a test can plant a field in
the table alone and watch it reach the parser, the dumper, renames, the docs and the schema.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Mapping, TypeVar

from sim.core.values import JsonObject
from sim.families.effects import conditions

T = TypeVar("T")

EFFECT_CLASSES = ("idempotent", "keyed_creation", "append", "irreversible", "read")
#: What an endpoint can be queried by when an outcome is unknown: by key (then by task marker), by task marker
#: only, or not at all (an unknown outcome then goes to a human).
RECONCILE_BY = ("key", "marker", "none")
#: Simulated seconds a worker waits for a response when its transition declares no timeout class.
ACK_TIMEOUT_S = 10.0
#: The longest timeout class a transition may declare (a day of simulated time; a limit on everything).
MAX_TIMEOUT_S = 86_400.0
#: The longest key retention a transition may declare (30 days of simulated time).
MAX_KEY_RETENTION_S = 30 * 86_400.0
#: A transition's (or a compensation's) name, and an external object kind.
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.\-]{1,200}$")
KIND_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
#: The kinds of value a field may take (``gate``: true, false, or a condition on the transition's arguments,
#: :mod:`sim.families.effects.conditions`).
KINDS = ("name", "kind", "choice", "flag", "seconds", "gate")
#: A refusal of whatever value is given (rather than of one value).
ANY_VALUE = "any"


@dataclass(frozen=True)
class FollowsKnob:
    """A default a knob decides: the value for each of the knob's values (``otherwise`` when it is not set)."""

    knob: str
    values: tuple[tuple[str, Any], ...]
    otherwise: Any

    def value(self, knobs: Mapping[str, Any]) -> Any:
        chosen = knobs.get(self.knob)
        return dict(self.values).get(chosen, self.otherwise) if isinstance(chosen, str) else self.otherwise

    def to_json(self) -> JsonObject:
        return {"knob": self.knob, "values": dict(self.values), "otherwise": self.otherwise}


@dataclass(frozen=True)
class Refusal:
    """A class that refuses the field: any value given (``value = ANY_VALUE``) or one value; ``message`` is
    the error after ``{label}`` (the transition), saying why."""

    effect_class: str
    message: str
    value: Any = ANY_VALUE

    def refuses(self, effect_class: str, value: Any) -> bool:
        return effect_class == self.effect_class and (self.value == ANY_VALUE or value == self.value)


@dataclass(frozen=True)
class TransitionField:
    """One field of a transition table.

    ``attribute`` names the :class:`~sim.families.effects.workflow.Transition` attribute of an identity field
    (None: an option of the endpoint).  ``absent`` is what a table that leaves the field out declares (None:
    nothing); ``default`` is what the endpoint assumes when nothing is declared, ``by_class`` overriding it
    for some classes (a :class:`FollowsKnob` when a knob decides).  ``problem`` and ``missing`` are the
    messages for a bad or a missing value, with the placeholders ``{label}`` (the transition), ``{where}``
    (the list), ``{key}``, ``{value}``, ``{shown}``, ``{guess}`` and ``{values}``."""

    name: str
    kind: str
    doc: str
    default_doc: str
    values_doc: str = ""
    attribute: str | None = None
    values: tuple[str, ...] = ()
    required: bool = False
    absent: Any = None
    default: Any = None
    by_class: tuple[tuple[str, Any], ...] = ()
    refused: tuple[Refusal, ...] = ()
    problem: str = ""
    missing: str = ""
    maximum_s: float = MAX_TIMEOUT_S  # the largest value of a ``seconds`` field

    def __post_init__(self) -> None:
        assert self.kind in KINDS, f"field {self.name}: unknown kind {self.kind!r}"
        assert (self.kind == "choice") == bool(self.values), f"field {self.name}: only a choice has values"

    def default_for(self, effect_class: str, knobs: Mapping[str, Any] | None = None) -> Any:
        """What the endpoint assumes when the transition declares nothing (``knobs``: the protocol's)."""
        value = dict(self.by_class).get(effect_class, self.default)
        return value.value(knobs or {}) if isinstance(value, FollowsKnob) else value

    def check(self, value: Any) -> bool:
        """Whether ``value`` (not None) is of this field's kind."""
        if self.kind == "flag":
            return isinstance(value, bool)
        if self.kind == "seconds":
            return (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                    and 0 < value <= self.maximum_s)
        if self.kind == "gate":
            return isinstance(value, bool) or conditions.parse(value) is not None
        if not isinstance(value, str):
            return False
        if self.kind == "choice":
            return value in self.values
        return bool((NAME_PATTERN if self.kind == "name" else KIND_PATTERN).match(value))

    def stored(self, value: Any) -> Any:
        """The value as the transition keeps it (seconds as a float)."""
        return float(value) if self.kind == "seconds" else value

    def shown_values(self) -> str:
        """The docs' "Values" cell."""
        if self.values_doc:
            return self.values_doc
        if self.kind == "flag":
            return "`true`, `false`"
        if self.kind == "gate":
            return '`true`, `false`, or a condition `"ARGUMENT OP NUMBER"`'
        return ", ".join(f"`{v}`" for v in self.values)

    def to_json(self) -> JsonObject:
        """The field as the schema the real harness reads writes it."""
        out: JsonObject = {"name": self.name, "kind": self.kind, "required": self.required,
                               "default": self.default, "doc": self.doc}
        if self.values:
            out["values"] = list(self.values)
        if self.kind == "seconds":
            out["range"] = [0, self.maximum_s]
        if self.kind == "gate":
            out["condition"] = conditions.PATTERN.pattern
        if self.by_class:
            out["by_class"] = {c: v.to_json() if isinstance(v, FollowsKnob) else v for c, v in self.by_class}
        if self.refused:
            out["refused_by"] = [{"class": r.effect_class, "value": r.value,
                                  "reason": r.message.replace("{label}", "the transition")} for r in self.refused]
        return out


_FLAG = "{label}: {key} must be true or false, not {value}"

#: Every field of a transition table, in the order tables are checked and written back.
FIELDS: tuple[TransitionField, ...] = (
    TransitionField(
        "name", "name", "the transition; named once in the workflow", "required",
        values_doc="letters, digits, `_ . -` (at most 200)", attribute="name", required=True,
        problem="a transition of {where} needs a name: letters, digits, _ . - (at most 200), not {value}",
        missing="a transition of {where} needs a name: letters, digits, _ . - (at most 200), not {value}"),
    TransitionField(
        "class", "choice", "its effect class (next section)", "required", attribute="effect_class",
        values=EFFECT_CLASSES, required=True,
        problem="{label}: unknown class {shown}{guess}; classes: {values}",
        missing="{label} needs a class: one of {values}"),
    TransitionField(
        "object", "kind", "the external kind; effects are named `object#number` (`lockfile@vN` for a read)",
        "`object`", values_doc="a lower-case name (`pull_request`)", attribute="object_kind", absent="object",
        default="object",
        problem='{label}: object must be a lower-case name such as "pull_request" (letters, digits and _), not '
                "{value}"),
    TransitionField(
        "compensation", "name",
        "the action that undoes it; refused on an `irreversible` step (no honest inverse) and on a `read` "
        "(nothing to undo)", "none", values_doc="a name", attribute="compensation",
        refused=(Refusal("irreversible", "{label} is irreversible: it has no honest inverse, so it takes no "
                         "compensation (protect it with approval and reconciliation instead; a step that can be "
                         "undone is a keyed_creation or an append)"),
                 Refusal("read", "{label} is a read: it creates nothing, so there is nothing to compensate")),
        problem="{label}: compensation must be the name of the compensating action, not {value}"),
    TransitionField(
        "keys", "flag",
        "whether the endpoint honours idempotency keys. `keyed_creation`: `true`; `append`: `true` (then the "
        "ledger decides, `ledger_dedupe`); `irreversible`: what the `irreversible_keys` knob says. `keys = "
        "false` means **no** protocol makes a repeated request the same effect. `keys = true` on a `read` is "
        "refused", "by class", default=False,
        by_class=(("keyed_creation", True), ("append", True),
                  ("irreversible", FollowsKnob("irreversible_keys", (("on", True), ("off", False)), False))),
        refused=(Refusal("read", "{label} is a read: a read creates nothing, so no idempotency key can deduplicate "
                         "it (write keys = false or leave it out)", True),),
        problem=_FLAG),
    TransitionField(
        "reconcile_by", "choice",
        "what the external system can be queried by when an outcome is unknown: by key then by task marker; by "
        "marker only; or nothing -- then reconciliation proves nothing (`query: none`, result `unprovable`) and "
        "the outcome goes to a human, never to a blind retry (unless the protocol has `reconcile=off`). Refused "
        "on a `read`", "`key`", values=RECONCILE_BY, default="key",
        refused=(Refusal("read", "{label} is a read: a read is repeated, never reconciled, so it takes no "
                         "reconcile_by"),),
        problem="{label}: reconcile_by must be one of {values} (what the external system can be queried by), not "
                "{value}{guess}"),
    TransitionField(
        "approval", "gate",
        "whether a human approves it before its intent: always, never, or when a condition on its arguments holds "
        "(`\"amount_cents > 10000\"`: one argument of `[arguments.T]`, one of `> >= < <= == !=`, a number; an "
        "argument absent or not a number means approval). The `approval` knob still decides whether the worker "
        "waits; `unapproved_irreversible` judges only the effects whose approval was due", "`true` for "
        "`irreversible`, else `false`", default=False, by_class=(("irreversible", True),),
        problem="{label}: approval must be true, false or a condition such as \"amount_cents > 10000\" (an "
                "argument, one of > >= < <= == !=, a number), not {value}"),
    TransitionField(
        "timeout_s", "seconds",
        "its timeout class: how long a worker waits for its response; a delayed request or a slow commit "
        "arrives as far past this wait as past the default", "10 (`ACK_TIMEOUT_S`)",
        values_doc="seconds, above 0, at most 86,400", default=ACK_TIMEOUT_S,
        problem="{label}: timeout_s must be a number of seconds above 0 and at most 86,400, not {value}"),
    TransitionField(
        "key_retention_s", "seconds",
        "how long this endpoint keeps an idempotency key (a payments API: 86,400); a request under a key older "
        "than that is a new request. Overrides the `key_retention` knob for this transition. Refused on a `read` "
        "(it takes no key)", "the `key_retention` knob", values_doc="seconds, above 0, at most 2,592,000",
        refused=(Refusal("read", "{label} is a read: it takes no idempotency key, so it keeps none"),),
        problem="{label}: key_retention_s must be a number of seconds above 0 and at most 2,592,000, not {value}",
        maximum_s=MAX_KEY_RETENTION_S),
    TransitionField(
        "fingerprint", "flag",
        "whether the endpoint compares a request's fingerprint with the one stored under its key: only then does "
        "`idempotency=key+fingerprint` refuse a reused key with other arguments; `false` answers with the stored "
        "object, as under `key` (and the advisor never proposes `key+fingerprint` for it). Refused on a `read`",
        "`true`", default=True,
        refused=(Refusal("read", "{label} is a read: it takes no key, so it compares no fingerprint"),),
        problem=_FLAG),
    TransitionField(
        "postcondition", "flag", "whether a verifier checks it (only then can `postcondition_fails` strike it)",
        "`false`", absent=False, default=False, problem=_FLAG),
)


def field_names() -> tuple[str, ...]:
    return tuple(f.name for f in FIELDS)


def by_name(name: str) -> TransitionField:
    for entry in FIELDS:
        if entry.name == name:
            return entry
    raise KeyError(name)


def default(name: str, kind: type[T], effect_class: str = "", knobs: Mapping[str, Any] | None = None) -> T:
    """The default field ``name`` declares -- what its endpoint assumes when a transition leaves it out -- for
    ``effect_class`` where the class decides (and ``knobs`` where a knob does), as a ``kind``: code reads a
    default here, never types it again (``default("reconcile_by", str)`` is ``"key"``)."""
    value = by_name(name).default_for(effect_class, knobs)
    if not isinstance(value, kind):
        raise TypeError(f"transition field {name!r} declares the default {value!r}, not a {kind.__name__}")
    return value


def identity_fields() -> tuple[TransitionField, ...]:
    """The fields that are attributes of a transition (the rest are options of its endpoint)."""
    return tuple(f for f in FIELDS if f.attribute is not None)


def docs_table() -> str:
    """The Markdown table of fields in ``docs/effects.md`` (a test checks the page holds it verbatim)."""
    lines = ["| Field | Values | Default | Meaning |", "|---|---|---|---|"]
    lines += [f"| `{f.name}` | {f.shown_values()} | {f.default_doc} | {f.doc} |" for f in FIELDS]
    return "\n".join(lines)
