"""Workflows: the ordered transitions of a task, with their effect classes and endpoint assumptions.

A transition's *effect class* (the seed's table) decides how it recovers:
``idempotent`` (repeat after confirming the target), ``keyed_creation``
(return the existing object for the same key), ``append`` (deduplicated at
the ledger boundary), ``irreversible`` (approval, stronger preconditions,
no compensation) and ``read`` (observes the outside world and creates
nothing; what it saw may change between attempts).  ``logical`` is the
transition's identity across workflow versions: version 2 may rename a
transition, it stays the same logical step, so checks group effects by it.

A transition may also declare what its endpoint can do (a user's workflow
written as tables, :mod:`sim.families.effects.workflow_file`): its *options*,
the fields of :mod:`sim.families.effects.transition_fields` that are not its
identity -- whether it honours idempotency ``keys``, what it can be queried by
(``reconcile_by``), whether it needs a human's ``approval``, its timeout class
(``timeout_s``), whether a verifier checks its ``postcondition``, and any
field added to that table.  An option not declared takes the default of its
class (and, for the keys of an irreversible step, the ``irreversible_keys``
knob): the seed's saga and ``generic:N`` declare nothing, so they behave as
they always did.  Parsing a workflow from a file is
:func:`sim.families.effects.workflow_file.parse_workflow`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

from sim.core.errors import ScenarioError
from sim.families.effects import conditions, transition_fields
from sim.families.effects.transition_fields import EFFECT_CLASSES, RECONCILE_BY

__all__ = ["EFFECT_CLASSES", "MAX_TRANSITIONS", "RECONCILE_BY", "SAGA_TRANSITIONS", "Transition", "Workflow",
           "generic", "saga", "version_2"]

#: The largest workflow (``generic:N`` or a list of transitions): a limit on everything.
MAX_TRANSITIONS = 100


@dataclass(frozen=True)
class Transition:
    """One logical step: its identity, and ``options``, the fields its endpoint declares (in table order; a
    field left out is not declared).  Copy one with ``dataclasses.replace``: every field travels."""

    name: str
    effect_class: str
    object_kind: str
    compensation: str | None
    logical: str
    options: tuple[tuple[str, Any], ...] = ()

    def option(self, name: str) -> Any:
        """What the endpoint declares for option ``name`` (None: not declared)."""
        for key, value in self.options:
            if key == name:
                return value
        return None

    def declared(self, name: str) -> Any:
        """The value of any table field (identity or option) as this transition holds it."""
        entry = transition_fields.by_name(name)
        return getattr(self, entry.attribute) if entry.attribute is not None else self.option(name)

    @property
    def keys(self) -> bool | None:
        return self.option("keys")

    @property
    def reconcile_by(self) -> str | None:
        return self.option("reconcile_by")

    @property
    def approval(self) -> bool | str | None:
        """True, False, a condition on the arguments (``"amount_cents > 10000"``), or None (not declared)."""
        return self.option("approval")

    @property
    def key_retention_s(self) -> float | None:
        return self.option("key_retention_s")

    @property
    def fingerprint(self) -> bool | None:
        return self.option("fingerprint")

    @property
    def compares_fingerprints(self) -> bool:
        """Whether the endpoint compares fingerprints under a key (declared, else the field's default: yes)."""
        return self.fingerprint is not False

    @property
    def timeout_s(self) -> float | None:
        return self.option("timeout_s")

    @property
    def postcondition(self) -> bool | None:
        return self.option("postcondition")

    @property
    def is_read(self) -> bool:
        return self.effect_class == "read"

    @property
    def needs_approval(self) -> bool:
        """Whether a human may have to approve it before its intent: declared ``true`` or a condition (which
        may hold), else its class's default (every irreversible step)."""
        if self.approval is not None:
            return self.approval is not False
        return transition_fields.default("approval", bool, self.effect_class)

    def approval_needed(self, arguments: Mapping[str, Any]) -> bool:
        """Whether a human must approve it before its intent, for these arguments (a condition is evaluated
        on them: :mod:`sim.families.effects.conditions`)."""
        return conditions.gate_holds(self.approval, transition_fields.default("approval", bool, self.effect_class),
                                     arguments)

    @property
    def verified(self) -> bool:
        """Whether a verifier checks its postcondition (so ``postcondition_fails`` can strike it).  The
        built-in workflows declare nothing: every step of theirs is checked."""
        return self.postcondition is not False

    @property
    def queried_by(self) -> str:
        return self.reconcile_by or transition_fields.default("reconcile_by", str)

    def honours_keys(self, irreversible_keys: bool, ledger_dedupe: str) -> bool:
        """Whether the endpoint deduplicates a request by its idempotency key (when the protocol sends keys).

        ``keyed_creation``: unless it declares ``keys = false``.  ``append``: only at a ledger that
        deduplicates (``ledger_dedupe=key``), and unless it declares ``keys = false``.  ``irreversible``:
        as declared, else as the ``irreversible_keys`` knob says.  ``idempotent`` needs no key (repeating it
        creates nothing new) and a ``read`` creates nothing."""
        if self.effect_class == "keyed_creation":
            return self.keys is not False
        if self.effect_class == "append":
            return self.keys is not False and ledger_dedupe == "key"
        if self.effect_class == "irreversible":
            return self.keys if self.keys is not None else irreversible_keys
        return False


@dataclass(frozen=True)
class Workflow:
    """One version of a workflow: transitions in order.

    ``renamed`` and ``inserted`` say how a version 2 differs from version 1; ``declared_upgrade`` is the
    version 2 a scenario declares (``[versions.2]``), if any; ``spec`` is the workflow as the file wrote it
    (kept to write it back; None for the built-in forms)."""

    name: str
    version: int
    transitions: tuple[Transition, ...]
    renamed: tuple[tuple[str, str], ...] = ()  # (old name, new name) relative to version 1
    inserted: tuple[str, ...] = ()  # transitions version 2 adds
    declared_upgrade: "Workflow | None" = None
    spec: Any = field(default=None, compare=False, hash=False)

    def names(self) -> list[str]:
        return [t.name for t in self.transitions]

    def get(self, name: str) -> Transition | None:
        for transition in self.transitions:
            if transition.name == name:
                return transition
        return None

    def index(self, name: str) -> int:
        return self.names().index(name)

    def side_effecting(self) -> list[Transition]:
        """The transitions that mutate the outside world (every one but the reads)."""
        return [t for t in self.transitions if not t.is_read]

    def reads_before(self, name: str) -> list[Transition]:
        """The reads earlier in the workflow than ``name``: what a step acts on."""
        out = []
        for transition in self.transitions:
            if transition.name == name:
                break
            if transition.is_read:
                out.append(transition)
        return out


#: The seed's saga (T1..T4 with C1..C3; T4 has no honest inverse).
SAGA_TRANSITIONS = (
    Transition("create_branch", "keyed_creation", "branch", "delete_branch", "create_branch"),
    Transition("open_pr", "keyed_creation", "pull_request", "close_pr", "open_pr"),
    Transition("create_preview", "keyed_creation", "preview", "destroy_preview", "create_preview"),
    Transition("publish_release", "irreversible", "release", None, "publish_release"),
)

#: Renames that version 2 applies (a renamed state: same logical step, new name).
VERSION_2_RENAMES = {"open_pr": "open_pull_request"}


def saga(names: list[str] | None = None) -> Workflow:
    """The default saga, or the sub-sequence of it named by ``names``."""
    if names is None:
        return Workflow("saga", 1, SAGA_TRANSITIONS)
    known = {t.name: t for t in SAGA_TRANSITIONS}
    return Workflow("saga", 1, tuple(known[n] for n in names))


def generic(count: int) -> Workflow:
    """The worked example's workflow: ``count`` keyed transitions t1..tN with compensations."""
    if count < 1:
        raise ScenarioError(f"a workflow needs at least one transition, not {count}")
    transitions = tuple(
        Transition(f"t{i}", "keyed_creation", "object", f"undo_t{i}", f"t{i}") for i in range(1, count + 1)
    )
    return Workflow(f"generic:{count}", 1, transitions)


def version_2(workflow: Workflow) -> Workflow:
    """The upgraded workflow: the one the scenario declares, else the built-in upgrade.

    The built-in upgrade inserts a check ``verify_<name>`` (idempotent) before the first irreversible
    transition (or the last one, if none is irreversible) and renames the second transition
    (``open_pr`` -> ``open_pull_request``, otherwise ``<name>_v2``).
    """
    if workflow.declared_upgrade is not None:
        return workflow.declared_upgrade
    transitions = list(workflow.transitions)
    renamed: list[tuple[str, str]] = []
    if len(transitions) >= 2:
        old = transitions[1]
        new_name = VERSION_2_RENAMES.get(old.name, f"{old.name}_v2")
        transitions[1] = dataclasses.replace(old, name=new_name)
        renamed.append((old.name, new_name))
    gate = next((i for i, t in enumerate(transitions) if t.effect_class == "irreversible"), len(transitions) - 1)
    target = transitions[gate]
    check = Transition(f"verify_{target.name}", "idempotent", "check", None, f"verify_{target.logical}")
    transitions.insert(gate, check)
    return Workflow(workflow.name, 2, tuple(transitions), tuple(renamed), (check.name,))
