"""Liveness properties and the fairness they are judged under, declared once per family beside its checks.

A safety check says nothing bad happened in a run; a *liveness property*
says something good eventually happens, on every behaviour the system can
take when it is treated fairly.  A family declares both in one place, its
:meth:`~sim.core.family.Family.liveness` (a :class:`LivenessModel`), and
``fencesim explore --liveness`` judges them on the machine's state graph
(:mod:`sim.search.liveness`).

Two shapes of property, over the machine's states:

* :class:`Eventually` -- ``<>goal``: every fair behaviour reaches a state
  where ``goal`` holds (TLA+'s ``<>P``);
* :class:`LeadsTo` -- each item a state has *pending* is eventually no
  longer pending (``pending(i) ~> ~pending(i)`` for every item ``i``: every
  planned step is eventually applied or refused).  What is pending may read
  a *carry*: a value the property keeps beside the state and updates from
  each transition's ``(before, event, after, records)`` -- a property over a
  transition, as a TLA+ spec keeps a history variable (which requests still
  wait for their ack, when the state itself forgets a lost ack the moment
  it is lost).

Fairness, stated per event (:attr:`LivenessModel.role`), in the state (and
carry) it is taken in:

* ``fault`` -- the world's interference: finitely many.  Never required to
  happen and never part of a cycle; the search is bounded by how many
  faults a behaviour has, and after the last one only the system acts.
* ``fair`` -- the system's own actions and whoever must answer (a retry on
  timeout, recovery, reconcile, lease expiry, a human answering an
  approval): weakly fair -- an event of one fairness *group* that stays
  enabled forever is eventually taken (TLA+'s ``WF``).  An assumption can
  be dropped by name (``explore --unfair human``): its events may then
  wait forever.
* ``free`` -- may happen any number of times, and need not happen.

A family's group is usually its event (``WF`` per process and step, as a
PlusCal ``fair process`` is written per process); a model may group several
events under one name (:attr:`LivenessModel.group`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Sequence

from sim.core.machine import Record

#: The roles an event can have in a state (see the module docstring).
ROLES = ("fault", "fair", "free")


@dataclass(frozen=True)
class Eventually:
    """``<>goal``: every fair behaviour reaches a state where ``goal(state, carry)`` holds."""

    name: str
    goal: Callable[[Any, Any], bool]
    doc: str = ""


@dataclass(frozen=True)
class LeadsTo:
    """Every item ``pending(state, carry)`` names is eventually no longer pending (``pending(i) ~> ~pending(i)``)."""

    name: str
    pending: Callable[[Any, Any], frozenset]
    doc: str = ""


Property = Eventually | LeadsTo


def _no_carry(carry: Any, before: Any, event: Any, after: Any, records: Sequence[Record]) -> Any:
    return carry


def _never_cut(state: Any) -> str | None:
    return None


@dataclass(frozen=True)
class LivenessModel:
    """What a family's liveness is judged on: its properties, and the role and fairness group of each event.

    ``role(state, carry, event)`` is one of :data:`ROLES`; ``group(event)`` names the weak-fairness unit an
    event belongs to (default: the event itself); ``assumption(event)`` names the fairness assumption a
    ``fair`` event rests on, which the user may drop (``explore --unfair NAME``); ``assumptions`` says in a
    sentence each what they are.  ``carry`` is what the model keeps beside the machine's state (a history
    variable): it starts as ``start`` and each transition updates it, ``update(carry, before, event, after,
    records)``; it must be hashable, and it is part of what the search merges on.

    A model may judge on a machine of its own (``machine``: the family's, extended -- default the family's)
    with events of the system's beside the family's alphabet (``events``); ``cut(state)`` says why a state
    cannot be followed further (a run stopped by a horizon), or None: such a state is left unexpanded, and a
    property its failure could reach through it is not decided.
    """

    properties: tuple[Property, ...]
    role: Callable[[Any, Any, Any], str]
    assumption: Callable[[Any], str]
    assumptions: dict[str, str] = field(default_factory=dict)
    group: Callable[[Any], Hashable] = lambda event: event
    start: Hashable = None
    update: Callable[[Any, Any, Any, Any, Sequence[Record]], Any] = _no_carry
    machine: Any = None
    events: tuple = ()
    cut: Callable[[Any], str | None] = _never_cut

    def __post_init__(self) -> None:
        names = [p.name for p in self.properties]
        if len(set(names)) != len(names):
            raise ValueError(f"liveness property names repeat: {names}")

    @property
    def carries(self) -> bool:
        return self.update is not _no_carry

    def next(self, machine: Any, state: Any, carry: Any, event: Any) -> tuple[Any, Any]:
        """The state and carry after ``event`` (its records are built only when the carry reads them)."""
        if not self.carries:
            return machine.advance(state, event), carry
        after, records = machine.step(state, event)
        return after, self.update(carry, state, event, after, records)
