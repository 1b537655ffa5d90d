"""A family's transition system: one state value, guards written once, one step function.

A *machine* is what a family gives exhaustive search and the law suite
(:mod:`sim.testing`) so they can drive its model directly, without a
discrete-event kernel per explored state -- the way a model checker drives
a model's ``init / actions / next_state``:

* :meth:`Machine.initial` -- the state before the first event;
* :meth:`Machine.why_not` -- the guard: why ``event`` cannot happen in
  ``state`` (a sentence), or ``None`` when it can.  Written once: the
  family's SimPy actors ask it before they act (and record the event as
  ``skipped`` with that reason), and exhaustive search asks it to skip
  events that would have no effect;
* :meth:`Machine.step` -- the transition: the next state and the history
  records the event produces, as ``(actor, event, fields)``.  Called only
  when :meth:`why_not` is ``None``;
* :meth:`Machine.key` -- what decides the future, derived from the state
  value (never listed by hand beside it): exhaustive search merges states
  with equal keys;
* :meth:`Machine.parts` -- the state as the parts its footprints name
  (:mod:`sim.core.footprint`).

A state is a value: immutable, hashable, compared by content.  Snapshot and
restore are the value itself.  Fields that only label the history (copy
counters, incarnation numbers) may be kept apart from the key by the family,
as long as it says so in one place (the workspace family keeps them in its
``Trace``).

``Skipped`` is the one way an event is refused in every family: a guard's
reason travels in it from wherever the refusal is found to the code that
records the event as skipped.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterable, Mapping, Sequence

from sim.core.footprint import Part, named_parts
from sim.core.history import History

#: One history record a transition produces: (actor, event name, fields); the driver stamps index and time.
Record = tuple[str, str, dict[str, Any]]


class Skipped(Exception):
    """The event cannot happen here under this protocol; it has no effect (``str()`` is the reason)."""

    @property
    def reason(self) -> str:
        return str(self)


class Machine(abc.ABC):
    """The transition system of one (scenario, protocol) of a family (see the module docstring)."""

    @abc.abstractmethod
    def initial(self) -> Any:
        """The state before the first event."""

    @abc.abstractmethod
    def why_not(self, state: Any, event: Any) -> str | None:
        """Why ``event`` cannot happen in ``state``, or None when it can."""

    @abc.abstractmethod
    def step(self, state: Any, event: Any) -> tuple[Any, Sequence[Record]]:
        """The state after ``event`` and the records it produces (precondition: ``why_not`` is None)."""

    def resolve(self, event: Any) -> tuple[Callable[[Any, Any], str | None], Callable[[Any, Any], Any]]:
        """The guard and the step of one event, as functions of ``(state, event)`` (a search that tries one
        event in many states looks them up once; the default is :meth:`why_not` and :meth:`step`)."""
        return self.why_not, self.step

    def enabled(self, state: Any, events: Sequence[Any]) -> list[int]:
        """The positions in ``events`` of those that can happen in ``state`` (default: each guard asked).  A
        family may enumerate them faster from the state, as a TLA+ next-state relation does; the law suite's
        ``enabled_exact`` checks it agrees with :meth:`why_not`."""
        return [i for i, event in enumerate(events) if self.why_not(state, event) is None]

    def disabled_by(self, state: Any, event: Any) -> Sequence[Part] | None:
        """For an event its guard refuses in ``state``: parts one false condition of the guard reads (an event
        can be enabled only by an event writing one of them), or None (default: any part it reads).  Persistent
        sets (``explore --reduce``) grow from it; the law suite's ``footprint`` checks that the named parts hold
        the guard's verdict (states equal in them answer the event alike)."""
        return None

    def successors(self, state: Any, events: Sequence[Any]) -> list[tuple[int, Any]]:
        """Every event of ``events`` that can happen in ``state``, by position, with the state after it -- in one
        call, as TLA+'s ``Next`` is written: a machine may compute the actions' shared conditions once for all
        of them (exhaustive search judging states by their predicates asks this, not each guard).  Default:
        :meth:`enabled`, then :meth:`advance` for each; the law suite's ``enabled_exact`` holds an override to
        :meth:`why_not` and :meth:`advance`."""
        return [(i, self.advance(state, events[i])) for i in self.enabled(state, events)]

    def starts(self, event: Any) -> bool:
        """Whether ``event`` chooses one of several initial states (TLA+'s ``Init`` with more than one state:
        one vote vector each).  A machine with such events has one place to start from, :meth:`initial`, in which
        only they are enabled and where nothing else is; exhaustive search then counts the states they lead to
        as its initial states (depth 0), and :meth:`initial` as no state at all -- as TLC counts a spec.  An order
        still begins with its starting event, so a replay knows where it starts.  Default: no such events."""
        return False

    def advance(self, state: Any, event: Any) -> Any:
        """The state after ``event``, when no record of it is wanted (exhaustive search judging states by
        state predicates alone); the default is :meth:`step`'s state.  A family may make it cheaper."""
        return self.step(state, event)[0]

    def along(self, state: Any, events: Sequence[Any]) -> Any:
        """The state after ``events`` taken in turn from ``state``, each one able to happen where it is taken (a
        path exhaustive search found; default: :meth:`advance` each).  A machine may take a path in one pass."""
        for event in events:
            state = self.advance(state, event)
        return state

    def state_after(self, events: Sequence[Any]) -> Any:
        """The state after an order as the family's replay plays it (default: each event that can happen, in
        turn; an event that cannot has no effect).  A machine whose events take effect in another order than
        listed (the effects family's faults strike where the run reaches their points) puts them in that order."""
        state = self.initial()
        for event in events:
            if self.why_not(state, event) is None:
                state = self.advance(state, event)
        return state

    def judge(self, state: Any, findings: bool) -> frozenset[str]:
        """What ``state`` violates, judged by the machine itself: invariant names, or (``findings``) finding names
        (``invariant @ where``).  Offered by a machine whose states are judged by what follows them (the effects
        family judges a run paused where a fault can strike by the run continued to its end); a machine that
        does not override it is judged by its checks' state predicates."""
        raise NotImplementedError(f"{type(self).__name__} judges its states by the checks' state predicates")

    #: Whether :func:`drive` plays the family's replay of an order (records stamped one event a time unit): a
    #: machine whose events strike a timed run (the effects family's faults) is held to its replay by a
    #: differential test instead.
    drives_replay = True
    #: Whether exhaustive search keeps an encoded layer entry (past the search's encode mark) as the state's number
    #: and verdict, rebuilt by :meth:`along` from the search's root when the next depth expands it, instead of
    #: pickled whole: for a state that costs more to pickle than to rebuild once more per expansion (the effects
    #: family's paused run, whose expansion runs it to its end anyway).  Read where states are judged by the
    #: machine or by state predicates; a family judged by folds over history records keeps pickling.
    rebuilt_by_order = False
    #: Whether states are trees of values with no reference cycles (exhaustive search then turns the cyclic
    #: garbage collector off, which only costs time); a machine whose states hold cycles keeps it on.
    acyclic_states = True

    def key(self, state: Any) -> Hashable:
        """What decides the future of ``state`` (default: the whole value)."""
        return state

    def check_state(self, state: Any) -> None:
        """Assert the state value's own consistency (counters that match what they count, a step in one of
        two sets that exclude each other, unique keys), raising ``AssertionError`` with what broke.  A state
        that breaks it would be merged, judged and counted wrongly, so exhaustive search calls it on a sample
        of each layer (never per successor: it may cost a scan of the state).  Default: nothing to check."""
        return None

    def parts(self, state: Any) -> Mapping[Part, Any]:
        """The state as parts, for footprints (:mod:`sim.core.footprint`): ``{(field, key): value}``, together
        determining :meth:`key` (the law suite checks it).  Default: each field of a named-tuple state whole; a
        family whose footprints name keys (``files[path]``) splits those fields by key."""
        return named_parts(state)

    def skip_record(self, event: Any, reason: str) -> Record | None:
        """The history record of an event that could not happen (default: a ``skipped`` event; None: none)."""
        return ("script", "skipped", {"line": str(event), "reason": reason})

    def perform(self, state: Any, event: Any) -> tuple[Any, Sequence[Record]]:
        """Guard and step in one: raises :class:`Skipped` with the guard's reason."""
        reason = self.why_not(state, event)
        if reason is not None:
            raise Skipped(reason)
        return self.step(state, event)


@dataclass
class Driven:
    """A run driven on the machine directly: its final state, history and skipped positions."""

    state: Any
    history: History
    skipped: frozenset[int]


def drive(machine: Machine, events: Iterable[Any], state: Any = None, history: History | None = None,
          start: int = 0) -> Driven:
    """Play ``events`` on the machine with no kernel: event ``i`` happens at time ``start + i``, as in a
    replay.  Given the ``state`` and ``history`` a run of ``start`` events ended with, it continues that run.

    The law suite compares it with the family's SimPy replay, byte for byte.
    """
    state = machine.initial() if state is None else state
    history = History() if history is None else History(history)
    skipped = set()
    for position, event in enumerate(events, start):
        reason = machine.why_not(state, event)
        if reason is not None:
            skipped.add(position)
            record = machine.skip_record(event, reason)
            records: Sequence[Record] = [] if record is None else [record]
        else:
            state, records = machine.step(state, event)
        for actor, name, fields in records:
            history.add(position, actor, name, fields)
    return Driven(state, history, frozenset(skipped))
