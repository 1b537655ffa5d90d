"""Workflows: the ordered transitions of a task, with their effect classes.

A transition's *effect class* (the seed's table) decides how it recovers:
``idempotent`` (repeat after confirming the target), ``keyed_creation``
(return the existing object for the same key), ``append`` (deduplicated at
the ledger boundary) and ``irreversible`` (approval, stronger preconditions,
no compensation).  ``logical`` is the transition's identity across workflow
versions: version 2 may rename a transition, it stays the same logical step,
so checks group effects by it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sim.core.errors import ScenarioError
from sim.core.values import kind, shown
from sim.core.workload import did_you_mean

EFFECT_CLASSES = ("idempotent", "keyed_creation", "append", "irreversible")
#: The largest ``generic:N`` workflow (a limit on everything).
MAX_TRANSITIONS = 100


@dataclass(frozen=True)
class Transition:
    name: str
    effect_class: str
    object_kind: str
    compensation: str | None
    logical: str


@dataclass(frozen=True)
class Workflow:
    """One version of a workflow: transitions in order."""

    name: str
    version: int
    transitions: tuple[Transition, ...]
    renamed: tuple[tuple[str, str], ...] = ()  # (old name, new name) relative to version 1

    def names(self) -> list[str]:
        return [t.name for t in self.transitions]

    def get(self, name: str) -> Transition | None:
        for transition in self.transitions:
            if transition.name == name:
                return transition
        return None

    def index(self, name: str) -> int:
        return self.names().index(name)


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
    """The upgraded workflow: a safety check before the irreversible step and one renamed state.

    The check ``verify_<name>`` (idempotent) is inserted before the first
    irreversible transition (or the last one, if none is irreversible); the
    second transition is renamed (``open_pr`` -> ``open_pull_request``,
    otherwise ``<name>_v2``).
    """
    transitions = list(workflow.transitions)
    renamed: list[tuple[str, str]] = []
    if len(transitions) >= 2:
        old = transitions[1]
        new_name = VERSION_2_RENAMES.get(old.name, f"{old.name}_v2")
        transitions[1] = Transition(new_name, old.effect_class, old.object_kind, old.compensation, old.logical)
        renamed.append((old.name, new_name))
    gate = next((i for i, t in enumerate(transitions) if t.effect_class == "irreversible"), len(transitions) - 1)
    target = transitions[gate]
    check = Transition(f"verify_{target.name}", "idempotent", "check", None, f"verify_{target.logical}")
    transitions.insert(gate, check)
    return Workflow(workflow.name, 2, tuple(transitions), tuple(renamed))


def parse_workflow(spec, where: str) -> Workflow:
    """A scenario's ``workflow`` value: ``"saga"``, ``"generic:N"`` or a list of saga transition names."""
    if spec is None or spec == "saga":
        return saga()
    if isinstance(spec, str) and spec.startswith("generic:"):
        count = spec.split(":", 1)[1]
        if not _COUNT.fullmatch(count) or not 1 <= int(count) <= MAX_TRANSITIONS:
            raise ScenarioError(f"workflow {shown(spec)}: 'generic:N' needs a whole number N from 1 to "
                                f"{MAX_TRANSITIONS}", where)
        return generic(int(count))
    if isinstance(spec, list) and spec and all(isinstance(n, str) for n in spec):
        known = [t.name for t in SAGA_TRANSITIONS]
        for name in spec:
            if name not in known:
                raise ScenarioError(f"unknown transition {shown(name)}{did_you_mean(name, known)} in workflow; "
                                    f"transitions: {', '.join(known)}", where)
        if len(set(spec)) != len(spec):
            raise ScenarioError("a transition is listed twice in workflow", where)
        return saga(list(spec))
    raise ScenarioError(
        f"workflow must be \"saga\", \"generic:N\" or a list of transition names, not {kind(spec)} {shown(spec)}", where
    )


#: N of ``generic:N``: plain decimal digits, no more than the limit has.
_COUNT = re.compile(f"[0-9]{{1,{len(str(MAX_TRANSITIONS))}}}")
