"""The workspace family's actors as SimPy processes around one state value.

Planner, router, client, human, network and executor are each a SimPy
process that performs its events of the order at their times (event ``i``
of an order happens at simulated time ``i``): it asks the machine's guard
(:meth:`~sim.families.workspace.machine.WorkspaceMachine.why_not`) and
either records the event as ``skipped`` with the guard's reason, or applies
the machine's transition to the world's state and records what it produced.
A delivery crosses two of them: the network takes the oldest copy in flight
and hands it to the executor's own inbox, which serves it at the same
simulated time.  An actor's process exists only once it has work.  The actors hold no state of their
own: everything is in
:attr:`World.state`, so the same transitions drive exhaustive search.

A real executor takes the executor's seat (:class:`Executor` is the seat;
``sim.real.driver`` fills it with a proxy for a real process).
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence, cast

from sim.core.history import History
from sim.core.kernel import Kernel
from sim.core.machine import Record
from sim.families.workspace.machine import ACTORS, WorkspaceMachine
from sim.families.workspace.scenario import Action
from sim.families.workspace.state import Message, State


class World:
    """The actors of one run, the state they share and the history they write."""

    def __init__(self, kernel: Kernel, machine: WorkspaceMachine, state: State | None = None,
                 seats: Mapping[str, Callable[["World", str], "Actor"]] | None = None):
        """``seats`` replaces actors by name (a real executor's proxy takes the ``executor`` seat, a human
        who edits real files the ``human`` seat).  An actor's process starts when it first has work."""
        self.kernel = kernel
        self.machine = machine
        self.state: State = machine.initial() if state is None else state
        self.history = History()
        self.position = 0  # index in the order of the event being performed
        self.skipped: set[int] = set()
        self.kinds: dict[str, Callable[[World, str], Actor]] = {
            "planner": Actor, "router": Actor, "client": Actor, "human": Actor, "network": Network,
            "executor": Executor, **(seats or {})}
        self.actors: dict[str, Actor] = {}

    def actor(self, name: str) -> "Actor":
        actor = self.actors.get(name)
        if actor is None:
            actor = self.actors[name] = self.kinds[name](self, name)
        return actor

    @property
    def executor(self) -> "Executor":
        return self.actor("executor")  # type: ignore[return-value]

    def play(self, actions: Sequence[Action]) -> None:
        """Give every actor its events of the order; event ``i`` happens at time ``i``."""
        timelines: dict[str, list[tuple[int, Action]]] = {}
        for position, action in enumerate(actions):
            timelines.setdefault(ACTORS[action.kind], []).append((position, action))
        for name, timeline in timelines.items():
            self.kernel.process(self.actor(name).act(timeline))

    def record(self, records: Sequence[Record]) -> None:
        now, add = self.kernel.now, self.history.add
        for actor, event, fields in records:
            add(now, actor, event, fields)

    def record_skip(self, action: Action, reason: str) -> None:
        self.skipped.add(self.position)
        self.record([self.machine.skip_record(action, reason)])


class Actor:
    """A SimPy process that performs its events of the order at their times, through the machine."""

    def __init__(self, world: World, name: str):
        self.world = world
        self.name = name

    def act(self, timeline: Sequence[tuple[int, Action]]):
        """The actor's process: wait for each of its events' times, then perform it."""
        env, world = self.world.kernel.env, self.world
        for position, action in timeline:
            if position > env.now:
                yield env.timeout(position - env.now)
            world.position = position
            self.perform(action)

    def perform(self, action: Action) -> None:
        world = self.world
        reason = world.machine.why_not(world.state, action)
        if reason is not None:
            world.record_skip(action, reason)
            return
        world.state, records = world.machine.step(world.state, action)
        world.record(records)


class Network(Actor):
    """Carries requests and answers; a delivery hands the oldest copy in flight to the executor."""

    def perform(self, action: Action) -> None:
        if action.kind != "deliver":
            super().perform(action)
            return
        world = self.world
        reason = world.machine.why_not(world.state, action)
        if reason is not None:
            world.record_skip(action, reason)
            return
        world.state, message = world.machine.take(world.state, cast(str, action.step))  # a delivery names its step
        world.executor.requests.put(message)


class Executor(Actor):
    """The executor's seat: serves each message the network delivers (at once, in its own process), and
    takes preemptions from the order.

    A real executor's proxy overrides :meth:`serve` (and may extend :meth:`perform` for a preemption).
    """

    def __init__(self, world: World, name: str = "executor"):
        super().__init__(world, name)
        self.requests = world.kernel.mailbox()
        world.kernel.process(self._serve_loop())

    def _serve_loop(self):
        requests = self.requests
        while True:
            message = yield requests.get()
            self.serve(message)

    def serve(self, message: Message) -> None:
        world = self.world
        world.state, records = world.machine.serve(world.state, message)
        world.record(records)
