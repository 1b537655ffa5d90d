"""Replaying an event order on the workspace family, and reading a run back.

A director process walks the order, one event per unit of simulated time,
and hands each to the actor that performs it; an event that cannot happen
at its point is recorded as ``skipped`` and has no effect, so one script
replays under every protocol.  A run is a pure function of (scenario,
protocol, order): same inputs, same history bytes.
"""

from __future__ import annotations

from typing import Any, Iterable

from sim.core.family import Replay
from sim.core.history import History
from sim.core.kernel import END_COMPLETED, END_TIME_LIMIT, Kernel, RunEnd
from sim.core.knobs import Protocol
from sim.families.workspace.actors import Command
from sim.families.workspace.scenario import Action, WorkspaceScenario
from sim.families.workspace.world import Snapshot, World

#: Kernel events one replay may take.
MAX_KERNEL_EVENTS = 2_000_000


def replay(scenario: WorkspaceScenario, protocol: Protocol, events: Iterable[Action] | None = None,
           max_kernel_events: int = MAX_KERNEL_EVENTS) -> Replay:
    """Run ``events`` (default: the scenario's own); the final World is ``Replay.state``."""
    actions = tuple(scenario.events if events is None else events)
    world = World(Kernel(seed=0), protocol, scenario.files, scenario.plan, scenario.replan)
    return _direct(world, (), actions, max_kernel_events)


def resume(scenario: WorkspaceScenario, protocol: Protocol, prefix: tuple[Action, ...], snap: Snapshot,
           events: Iterable[Action], max_kernel_events: int = MAX_KERNEL_EVENTS) -> Replay:
    """Continue from a snapshot taken after ``prefix``: the same history bytes as replaying
    ``prefix + events`` from the start, at the cost of ``events`` alone."""
    world = World.restore(protocol, scenario.files, scenario.plan, scenario.replan, snap)
    return _direct(world, tuple(prefix), tuple(events), max_kernel_events)


def play(world: World, events: Iterable[Action], max_kernel_events: int = MAX_KERNEL_EVENTS) -> Replay:
    """Play ``events`` on a world built by the caller (say, one whose workspace is a real repository and
    whose executor is a real process): the same director, one event per unit of time."""
    return _direct(world, (), tuple(events), max_kernel_events)


def _direct(world: World, prefix: tuple[Action, ...], actions: tuple[Action, ...], max_kernel_events: int) -> Replay:
    kernel, env = world.kernel, world.kernel.env
    offset = len(prefix)

    def director():
        # The actor (and, for a delivery, the executor after it) acts at this
        # time; SimPy runs every event of time t before the timeout to t + 1.
        for position, action in enumerate(actions, start=offset):
            world.position = position
            world.actor_for(action).inbox.put(Command(action))
            yield env.timeout(1)

    kernel.process(director())
    end = kernel.run(max_events=max_kernel_events, max_time_s=offset + len(actions) + 1)
    if end.reason == END_TIME_LIMIT:  # the actors idle on their inboxes: the order is done
        end = RunEnd(END_COMPLETED, end.time, end.kernel_events)
    return Replay(prefix + actions, world.history, end, world, frozenset(world.skipped))


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


def state_key(world: World) -> str:
    """Everything that decides what can happen next, as a deterministic string.

    Steps already applied are part of it, since a second application is a
    violation only because of the first.
    """
    ws, client, executor, planner = world.workspace, world.client, world.executor, world.planner
    applied = sorted({e.get("step") for e in world.history if e.event == "deliver" and e.get("verdict") == "applied"})
    return repr((
        ws.rev, sorted((p, sorted(h.items())) for p, h in ws.files.items()), sorted(ws.journal),
        sorted(executor.memory), executor.crashes.armed, client.plan_rejected,
        [(s.step_id, sorted(s.patch.items()), s.claimed_base_rev, s.claimed_pre_hash, sorted(s.truth.items()),
          s.replanned) for s in client.steps],
        sorted((k, m.stamped_base_rev, m.stamped_pre_hash) for k, m in client.sent.items()), sorted(client.refused),
        planner.snapshot_rev, planner.model_number, world.human.edits,
        [(m.step.step_id, m.origin, m.stamped_base_rev, m.stamped_pre_hash, sorted(m.step.patch.items()),
          sorted(m.step.truth.items())) for m in world.requests.in_flight],
        [(a.step_id, a.verdict) for a in world.answers.in_flight],
        sorted(world.verdict_steps), applied,
    ))


def enabled(snap: Snapshot, action: Action, pipeline: str) -> bool:
    """Whether ``action`` takes effect in the state ``snap`` records (the actors' skip rules, read
    from the snapshot so exhaustive search need not run an event that would be skipped).  A test
    checks it against the replay on random orders."""
    kind, planned = action.kind, snap.planner_snapshot is not None
    if kind == "plan":
        return not planned
    if kind in ("replan", "human_edit"):
        return planned
    if kind == "preempt":
        return planned and (action.point is None or snap.armed is None)
    if kind in ("deliver", "duplicate"):
        return any(m.step.step_id == action.step for m in snap.requests)
    if kind in ("ack", "lose_ack"):
        return any(a.step_id == action.step for a in snap.answers)
    if kind == "retry":
        return action.step in snap.sent
    if kind == "dispatch":
        if not snap.steps or snap.plan_rejected or action.step in snap.sent or action.step in snap.refused:
            return False
        ids = [s.step_id for s in snap.steps]
        position = ids.index(action.step)
        if position == 0:
            return True
        previous = ids[position - 1]
        if previous not in snap.sent and previous not in snap.refused:
            return False
        return pipeline != "off" or previous in snap.verdict_steps
    return True
