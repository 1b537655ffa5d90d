"""Replaying an event order on the workspace family.

A director process walks the order, one event per unit of simulated time,
and hands each to the actor that performs it; an event that cannot happen
at its point is recorded as ``skipped`` and has no effect, so one script
replays under every protocol.  A run is a pure function of (scenario,
protocol, order): same inputs, same history bytes.
"""

from __future__ import annotations

from typing import Any, Iterable

from sim.checks.base import run_checks
from sim.history import History
from sim.kernel import Kernel, RunEnd
from sim.models.workspace import Command, World
from sim.protocol import Protocol, parse_protocol
from sim.result import RunResult
from sim.scenario import Action, WorkspaceScenario

#: Limits of one replay: kernel events and simulated time.
MAX_KERNEL_EVENTS = 200_000


def replay(scenario: WorkspaceScenario, protocol: Protocol, events: Iterable[Action] | None = None,
           max_kernel_events: int = MAX_KERNEL_EVENTS) -> tuple[History, RunEnd]:
    """Run ``events`` (default: the scenario's own) and return the history."""
    world, end = replay_world(scenario, protocol, events, max_kernel_events)
    return world.history, end


def replay_world(scenario: WorkspaceScenario, protocol: Protocol, events: Iterable[Action] | None = None,
                 max_kernel_events: int = MAX_KERNEL_EVENTS) -> tuple[World, RunEnd]:
    """As :func:`replay`, but return the actors' final state too (for state-space search)."""
    actions = list(scenario.events if events is None else events)
    kernel = Kernel(seed=0)
    world = World(kernel, protocol, scenario.files, scenario.plan, scenario.replan)
    env = kernel.env

    def director():
        # The actor (and, for a delivery, the executor after it) acts at this
        # time; SimPy runs every event of time t before the timeout to t + 1.
        for action in actions:
            world.actor_for(action).inbox.put(Command(action))
            yield env.timeout(1)

    kernel.process(director())
    end = kernel.run(max_events=max_kernel_events, max_time_s=len(actions) + 1)
    if end.reason == "time_limit":  # the actors idle on their inboxes: the order is done
        end = RunEnd("completed", end.time, end.kernel_events)
    return world, end


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


def run_scenario(scenario, protocol: Protocol | str | None = None) -> RunResult:
    """Replay a scenario under a protocol; return verdicts, history and check results.

    >>> import sim
    >>> s = sim.load_scenario("scenarios/seed/concurrent_edit.toml")  # doctest: +SKIP
    >>> r = sim.run_scenario(s, "none")  # doctest: +SKIP
    >>> [v.invariant for v in r.violations]  # doctest: +SKIP
    ['lost_update']
    """
    if getattr(scenario, "family", "workspace") == "runtime":
        from sim.runtime import run_runtime_scenario

        if not isinstance(protocol, Protocol):
            protocol = parse_protocol(protocol or scenario.protocol or "keyed-fingerprint-reconcile", "runtime")
        return run_runtime_scenario(scenario, protocol)
    if not isinstance(protocol, Protocol):
        protocol = parse_protocol(protocol or scenario.protocol or "step-dedupe")
    from sim.checks.workspace import WORKSPACE_CHECKS

    history, end = replay(scenario, protocol)
    report = run_checks(WORKSPACE_CHECKS, history)
    return RunResult(
        scenario=scenario.name, family="workspace", protocol=protocol, history=history,
        verdicts=verdicts_of(history), checks=report, end=end,
        expect=scenario.expect.get(protocol.label), outcome=outcome_of(history),
    )
