"""Running the runtime model: scripted replay of a scenario, and autonomous runs under a schedule.

``run_runtime_scenario`` plays a script event by event, then (``recover =
true``) lets the system heal: the external system answers what is in
flight, a live lease holder continues, a lost one is replaced after its
lease expires, humans answer approvals and exceptions.  After the script
the run continues for a liveness budget of simulated time; every task must
then be terminal (the ``no_terminal_outcome`` check).
"""

from __future__ import annotations

from typing import Any

from sim.checks.base import run_checks
from sim.checks.runtime import RUNTIME_CHECKS
from sim.kernel import Kernel, RunEnd
from sim.protocol import Protocol
from sim.result import RunResult
from sim.runtime.driver import LIVENESS_BUDGET_S, AutoDriver
from sim.runtime.engine import Runtime
from sim.runtime.faults import FaultSchedule
from sim.runtime.scenario import RuntimeScenario, ScriptOp, scheduled_times
from sim.runtime.workflow import Workflow

#: Kernel steps allowed per task (a run that needs more ends with ``event_limit``).
MAX_KERNEL_EVENTS_PER_TASK = 5_000


def apply_op(rt: Runtime, op: ScriptOp, task: str) -> str:
    """Perform one scripted event on the runtime."""
    name = op.name
    if name in ("intent", "dispatch", "retry_changed", "timeout", "reconcile", "receipt", "compensate",
                "request_approval", "escalate", "abort", "close"):
        worker = op.worker or rt.holder(task)
        if worker is None:
            rt._line(op.text)
            return rt._skip(op.text, "no lease holder; name the worker with 'by W'", task)
        if name == "close":
            return rt.close(worker, task)
        if name == "retry_changed":
            return rt.dispatch(worker, task, op.transition, changed=True)
        return getattr(rt, name)(worker, task, op.transition)
    if name in ("commit", "respond", "lose_response", "lose_request"):
        return getattr(rt, name)(task, op.transition, op.request_id)
    if name == "duplicate_request":
        result = rt.duplicate_request(task, op.transition, op.request_id)
        return result if isinstance(result, str) else "ok"
    if name in ("approve", "resolve", "fail", "foreign_object"):
        return getattr(rt, name)(task, op.transition)
    if name in ("compensation_fails", "unprovable"):
        return rt.arm(task, op.transition, name)
    if name == "accept":
        return rt.accept(task)
    if name == "lease":
        return rt.lease(op.worker, task)
    if name == "lease_expire":
        return rt.lease_expire(op.worker, op.successor, task)
    if name == "deliver":
        return rt.deliver(op.worker, task)
    if name == "duplicate":
        return rt.deliver(None, task, duplicate=True)
    if name == "crash":
        return rt.crash(op.worker)
    if name == "upgrade":
        return rt.upgrade(int(op.argument))
    raise AssertionError(f"unhandled scripted event {name!r}")


def run_runtime_scenario(scenario: RuntimeScenario, protocol: Protocol) -> RunResult:
    """Replay a runtime scenario under ``protocol``; return history, verdicts and checks."""
    kernel = Kernel(seed=0)
    rt = Runtime(kernel.env, protocol, scenario.workflow, scenario.arguments, scenario.tenant, scenario.next_number)
    times = scheduled_times(scenario.ops)

    def play():
        for op, at_s in zip(scenario.ops, times):
            if at_s > kernel.env.now:
                yield kernel.env.timeout(at_s - kernel.env.now)
            apply_op(rt, op, scenario.task)
        if scenario.recover:
            AutoDriver(rt).recover()

    kernel.process(play())
    end = kernel.run(max_events=MAX_KERNEL_EVENTS_PER_TASK, max_time_s=(times[-1] if times else 0) + LIVENESS_BUDGET_S)
    end = _finish(rt, end)
    checks = run_checks(RUNTIME_CHECKS, rt.history)
    return RunResult(
        scenario=scenario.name, family="runtime", protocol=protocol, history=rt.history,
        verdicts=list(rt.verdicts), checks=checks, end=end, expect=scenario.expect.get(protocol.label),
    )


def _finish(rt: Runtime, end: RunEnd) -> RunEnd:
    """Record the end of the run in the history, so checks on a recorded history know it is complete.

    It is stamped with the time of the last recorded event: timers nobody
    waits for any more (a worker's abandoned ack timeout) leave no event, so
    a script replaying the run ends at the same time.
    """
    last_s = rt.history[len(rt.history) - 1].time if len(rt.history) else end.time
    rt.history.append(last_s, "kernel", "run_ended", reason=end.reason)
    return end


def run_autonomous(
    protocol: Protocol,
    workflow: Workflow,
    tasks: list[str],
    schedule: FaultSchedule | None = None,
    arguments: dict[str, dict[str, Any]] | None = None,
    record_trace: bool = True,
) -> tuple[Runtime, RunEnd]:
    """Run ``tasks`` (all accepted at time 0) to completion under a fault schedule."""
    kernel = Kernel(seed=0)
    rt = Runtime(kernel.env, protocol, workflow, arguments, record_trace=record_trace)
    driver = AutoDriver(rt, schedule)
    for task in tasks:
        driver.start_task(task)
    end = kernel.run(max_events=MAX_KERNEL_EVENTS_PER_TASK * max(1, len(tasks)), max_time_s=LIVENESS_BUDGET_S)
    return rt, _finish(rt, end)
