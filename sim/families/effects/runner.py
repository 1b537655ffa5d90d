"""Running the runtime model: scripted replay of a story, and runs of a task under a fault list.

:func:`replay` is the family contract's replay.  A script plays event by
event, then (``recover = true``) lets the system heal: the external system
answers what is in flight, a live lease holder continues, a lost one is
replaced after its lease expires, humans answer approvals and exceptions.
A fault list is run by the workers' policy from the start, each fault
striking at its point.  Either way the run continues for a liveness budget
of simulated time: a task still waiting when it runs out is ``not_finished`` (availability), one left
unfinished when nothing was left to happen is stuck (``no_terminal_outcome``).
"""

from __future__ import annotations

from typing import Any, Iterable

from sim.core.family import Replay
from sim.core.kernel import RunEnd
from sim.core.knobs import Protocol
from sim.core.values import JsonObject
from sim.families.effects.agenda import Agenda
from sim.families.effects.autorun import AutoRun
from sim.families.effects.driver import LIVENESS_BUDGET_S
from sim.families.effects.faults import FaultEvent, FaultSchedule, schedule_for
from sim.families.effects.runtime import Fenced, OperationSkipped, Runtime
from sim.families.effects.scenario import RuntimeScenario, ScriptOp, scheduled_times
from sim.families.effects.workflow import Workflow

#: Kernel steps allowed per task (a run that needs more ends with ``event_limit``).
MAX_KERNEL_EVENTS_PER_TASK = 5_000


def _given(value: str | None, op: ScriptOp) -> str:
    """A word of the event the parser requires for its kind (:func:`~sim.families.effects.scenario.parse_event`)."""
    assert value is not None, f"{op.text!r} was parsed without a word its event requires"
    return value


def apply_op(rt: Runtime, op: ScriptOp, task: str) -> None:
    """Perform one scripted event on the runtime (raises Skipped when it cannot happen, Fenced when the log
    refuses the worker's write)."""
    name = op.name
    if name in ("intent", "dispatch", "retry_changed", "timeout", "reconcile", "receipt", "compensate",
                "request_approval", "escalate", "abort", "close"):
        worker = op.worker or rt.holder(task)
        if worker is None:
            raise rt.refused(op.text, "no lease holder; name the worker with 'by W'", task)
        if name == "close":
            return rt.close(worker, task)
        if name == "retry_changed":
            return rt.dispatch(worker, task, _given(op.transition, op), changed=True)
        return getattr(rt, name)(worker, task, op.transition)
    if name in ("commit", "respond", "lose_response", "lose_request"):
        return getattr(rt, name)(task, op.transition, op.request_id)
    if name == "duplicate_request":
        rt.duplicate_request(task, _given(op.transition, op), op.request_id)
        return None
    if name in ("approve", "resolve", "fail", "foreign_object", "read_changes"):
        return getattr(rt, name)(task, op.transition)
    if name in ("compensation_fails", "unprovable"):
        return rt.arm(task, _given(op.transition, op), name)
    if name == "accept":
        return rt.accept(task)
    if name == "lease":
        return rt.lease(_given(op.worker, op), task)
    if name == "lease_expire":
        return rt.lease_expire(_given(op.worker, op), _given(op.successor, op), task)
    if name == "deliver":
        return rt.deliver(op.worker, task)
    if name == "duplicate":
        return rt.deliver(None, task, duplicate=True)
    if name == "crash":
        return rt.crash(_given(op.worker, op))
    if name == "upgrade":
        return rt.upgrade(int(_given(op.argument, op)))
    raise AssertionError(f"unhandled scripted event {name!r}")


def replay(scenario: RuntimeScenario, protocol: Protocol, events: Iterable[Any] | None = None,
           runtime: type[Runtime] = Runtime) -> Replay:
    """Run the scenario's own order, or ``events``: faults run by the policy, or script operations.

    ``runtime`` is the class of the runtime (a subclass plants a code-level bug for the quality suite)."""
    order = tuple(scenario.events if events is None else events)
    if scenario.faults is not None or all(isinstance(e, FaultEvent) for e in order) and events is not None:
        return run_faults(scenario, protocol, order, runtime)
    return run_script(scenario, protocol, order, runtime)


def run_script(scenario: RuntimeScenario, protocol: Protocol, ops: tuple[ScriptOp, ...] | None = None,
               runtime: type[Runtime] = Runtime) -> Replay:
    """Play a script; an operation that cannot happen is skipped (its position is reported)."""
    ops = tuple(scenario.ops if ops is None else ops)
    agenda = Agenda()
    rt = runtime(agenda, protocol, scenario.workflow, scenario.arguments, scenario.tenant, scenario.next_number)
    times = scheduled_times(list(ops))
    skipped: set[int] = set()
    agenda.steps = 1  # the script runs as one process: its start is the run's first step
    for position, (op, at_s) in enumerate(zip(ops, times)):
        if at_s > agenda.now:
            agenda.skip(at_s - agenda.now)
        try:
            apply_op(rt, op, scenario.task)
        except OperationSkipped as refused:
            rt.record_skip(refused)
            skipped.add(position)
        except Fenced:
            pass  # the log refused the write; the history shows it (append_refused)
    run = AutoRun(rt, agenda)
    if scenario.recover:
        run.recover()
    agenda.ended()  # the script's process returns
    end = run.run(MAX_KERNEL_EVENTS_PER_TASK, (times[-1] if times else 0) + LIVENESS_BUDGET_S)
    assert end is not None, "a run without a pausing schedule never pauses"
    end = _finish(rt, end)
    return Replay(ops, rt.history, end, (rt, None), frozenset(skipped))


def run_faults(scenario: RuntimeScenario, protocol: Protocol, faults: tuple[FaultEvent, ...],
               runtime: type[Runtime] = Runtime) -> Replay:
    """Run the task under the policy; each fault strikes at its point (unfired ones are reported)."""
    rt, run, end = run_autonomous(protocol, scenario.workflow, [scenario.task], schedule_for(scenario.task, faults),
                                     scenario.arguments, scenario.tenant, scenario.next_number, runtime)
    run.scenario = scenario  # what the family's machine is built from (final_state)
    fired = set(run.fired)
    return Replay(faults, rt.history, end, (rt, run), frozenset(i for i in range(len(faults)) if i not in fired))


def _finish(rt: Runtime, end: RunEnd) -> RunEnd:
    """Record the end of the run in the history, so checks on a recorded history know it is complete.

    It is stamped with the time of the last recorded event: timers nobody
    waits for any more (a worker's abandoned ack timeout) leave no event.
    """
    last_s = rt.history[len(rt.history) - 1].time if len(rt.history) else end.time
    rt.history.append(last_s, "kernel", "run_ended", reason=end.reason)
    return end


def run_autonomous(
    protocol: Protocol,
    workflow: Workflow,
    tasks: list[str],
    schedule: FaultSchedule | None = None,
    arguments: dict[str, JsonObject] | None = None,
    tenant: str = "acme",
    next_number: int = 1,
    runtime: type[Runtime] = Runtime,
) -> tuple[Runtime, AutoRun, RunEnd]:
    """Run ``tasks`` (all accepted at time 0) to completion under a fault schedule."""
    agenda = Agenda()
    rt = runtime(agenda, protocol, workflow, arguments, tenant, next_number)
    run = AutoRun(rt, agenda, schedule)
    for task in tasks:
        run.start_task(task)
    end = run.run(MAX_KERNEL_EVENTS_PER_TASK * max(1, len(tasks)), LIVENESS_BUDGET_S)
    assert end is not None, "a run without a pausing schedule never pauses"
    return rt, run, _finish(rt, end)
