"""Replaying an event order on the workspace family, and reading a run back.

Each actor performs its events of the order at their times, one event per
unit of simulated time; an event that cannot happen
at its point is recorded as ``skipped`` and has no effect, so one script
replays under every protocol.  A run is a pure function of (scenario,
protocol, order): same inputs, same history bytes.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from sim.core.family import Replay
from sim.core.history import History
from sim.core.kernel import END_COMPLETED, END_TIME_LIMIT, Kernel, RunEnd
from sim.core.knobs import Protocol
from sim.families.workspace.actors import Actor, World
from sim.families.workspace.machine import WorkspaceMachine
from sim.families.workspace.scenario import Action, WorkspaceScenario

#: Kernel events one replay may take.
MAX_KERNEL_EVENTS = 2_000_000


def replay(scenario: WorkspaceScenario, protocol: Protocol, events: Iterable[Action] | None = None,
           max_kernel_events: int = MAX_KERNEL_EVENTS, machine: WorkspaceMachine | None = None) -> Replay:
    """Run ``events`` (default: the scenario's own); the final World is ``Replay.state``."""
    actions = tuple(scenario.events if events is None else events)
    world = World(Kernel(seed=0), machine or WorkspaceMachine(scenario, protocol))
    return _direct(world, actions, max_kernel_events)


def play(world: World, events: Iterable[Action], max_kernel_events: int = MAX_KERNEL_EVENTS) -> Replay:
    """Play ``events`` on a world built by the caller (say, one whose executor seat holds a proxy for a real
    process): the same director, one event per unit of time."""
    return _direct(world, tuple(events), max_kernel_events)


def world_for(scenario: WorkspaceScenario, protocol: Protocol,
              seats: Mapping[str, Callable[[World, str], Actor]] | None = None,
              machine: type[WorkspaceMachine] = WorkspaceMachine) -> World:
    """A fresh world for a scenario, with the caller's actors in the seats it names."""
    return World(Kernel(seed=0), machine(scenario, protocol), seats=seats)


def _direct(world: World, actions: tuple[Action, ...], max_kernel_events: int) -> Replay:
    world.play(actions)
    end = world.kernel.run(max_events=max_kernel_events, max_time_s=len(actions) + 1)
    if end.reason == END_TIME_LIMIT:  # the actors idle on their inboxes: the order is done
        end = RunEnd(END_COMPLETED, end.time, end.kernel_events)
    return Replay(actions, world.history, end, world, frozenset(world.skipped))


def verdicts_of(history: History) -> list[dict[str, Any]]:
    """Every verdict of the run: deliveries, drift rejections at dispatch, overlap at plan."""
    out = []
    for event in history:
        verdict = event.get("verdict")
        if verdict is None or event.event in ("ack", "lose_ack"):
            continue
        out.append({"event_index": event.index, "step": event.get("step"), "verdict": verdict})
    return out


def outcome_of(history: History) -> str | None:
    """The verdict of the last delivery, written as the seed's table writes it.

    The executor never says "applied twice": a step's second application is
    written so here, as in the matrix and the ``[expect]`` tables.
    """
    applied: dict[str, int] = {}
    last = None
    for event in history:
        verdict = event.get("verdict")
        if verdict is None or event.event in ("ack", "lose_ack"):
            continue
        step = event.get("step")
        if verdict == "applied" and event.event == "deliver":
            applied[step] = applied.get(step, 0) + 1
            last = "applied twice" if applied[step] > 1 else "applied"
        else:
            last = verdict
    return last
