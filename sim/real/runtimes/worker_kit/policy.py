"""The effects family's worker policy as real code paths over a durable runtime (standard library only)."""

from __future__ import annotations

from typing import Any, Callable

from .channel import Channel
from .config import (
    APPROVAL_GRACE_S,
    HUMAN_WAIT_LIMIT_S,
    MAX_ATTEMPTS,
    MAX_COMPENSATION_TRIES,
    Transition,
    WorkerConfig,
)
from .steps import Abort, Recv, StepCall


class TaskPolicy:
    """The effects family's worker policy, as a generator of durable steps (see the module).

    It yields a :class:`StepCall` and receives ``(output, fresh)`` -- ``fresh`` when this process ran the
    step, so it reports it -- or yields a :class:`Recv` and receives the message; it returns ``(outcome,
    recorded)``.  A runtime drives it: :func:`drive` for a synchronous one (DBOS), an ``async`` loop for
    Temporal.  Events go to the harness from here, only for fresh steps.
    """

    def __init__(self, config: WorkerConfig, channel: Channel):
        self.config, self.channel = config, channel
        self.knobs = config.protocol
        self.requests = 0  # dispatches in this execution of the task, replayed ones included: r1, r2, ...
        self.done: dict[str, dict] = {}  # transition -> {"effect", "number"} once its receipt is recorded
        self.checkpointed: list[str] = []

    # -- records -------------------------------------------------------------------------------

    def step(self, name: str, kind: str, **args: Any):
        out, fresh = yield StepCall(name, kind, args)
        return out, fresh

    def record(self, name: str, **output: Any):
        """A step that only records what the policy decided."""
        return (yield from self.step(name, "record", output=output))

    def event(self, fresh: bool, event: str, **fields: Any) -> None:
        if fresh:
            self.channel.event(event, task=self.config.task, **fields)

    # -- the task ------------------------------------------------------------------------------

    def run(self):
        """Run the task to its terminal outcome (``succeeded``, ``compensated`` or ``failed``); ``recorded`` is
        True when this process recorded it (False: it replayed another execution's records to the end)."""
        begin, first = yield from self.record("begin")
        self.channel.event("resumed", task=self.config.task, workflow_version=self.config.workflow_version,
                           first=first)
        aborted = False
        for transition in self.config.transitions:
            try:
                yield from self.transition(transition)
            except Abort:
                aborted = True
                break
        outcome = "succeeded"
        if aborted:
            outcome = (yield from self.compensate()) if self.knobs["compensation"] == "on" else "failed"
        out, fresh = yield from self.record("close", outcome=outcome)
        self.event(fresh, "task_terminal", outcome=out["outcome"])
        return out["outcome"], fresh

    def transition(self, t: Transition):
        if t.effect_class == "irreversible" and t.approval:
            yield from self.approve(t)
        intent, fresh = yield from self.step(f"intent:{t.name}", "intent", transition=t.name)
        self.event(fresh, "intent_recorded", transition=t.name, logical=t.logical, generation=intent["generation"],
                   key=intent["key"], fingerprint=intent["fingerprint"], effect_class=t.effect_class)
        for attempt in range(1, MAX_ATTEMPTS + 1):
            if (yield from self.attempt(t, intent, attempt)):
                yield from self.verify(t)
                return
        yield from self.abort(t, "retries_exhausted")

    def abort(self, t: Transition, reason: str):
        out, fresh = yield from self.record(f"abort:{t.name}", reason=reason)
        self.event(fresh, "transition_failed", transition=t.name, reason=out["reason"])
        raise Abort(t.name)

    def approve(self, t: Transition):
        out, fresh = yield from self.record(f"approval:{t.name}")
        self.event(fresh, "approval_requested", transition=t.name)
        approval_on = self.knobs["approval"] == "on"
        answer = yield Recv(f"approve:{t.name}", HUMAN_WAIT_LIMIT_S if approval_on else APPROVAL_GRACE_S)
        if answer is None and approval_on:
            yield from self.abort(t, "approval_timeout")

    def attempt(self, t: Transition, intent: dict, attempt: int):
        """One dispatch of T and what follows it; True once T has its receipt."""
        self.requests += 1
        if "new_key_on_retry" in self.config.plant and attempt > 1:  # planted: the retry is a new request
            intent = dict(intent, key=self.config.key_of(t, attempt))
        dispatch, fresh = yield from self.record(f"dispatch:{t.name}:{attempt}", request=f"r{self.requests}")
        self.event(fresh, "dispatched", transition=t.name, attempt=attempt, request=dispatch["request"],
                   key=intent["key"], fingerprint=intent["fingerprint"])
        if "receipt_before_call" in self.config.plant:  # planted: the receipt before the call has returned
            early, fresh = yield from self.record(f"receipt:{t.name}:{attempt}:early",
                                                  effect=f"{t.object_kind}#pending")
            self.event(fresh, "receipt_recorded", transition=t.name, effect=early["effect"], receipt=early["effect"],
                       source="response", request=dispatch["request"])
        if self.knobs["checkpoint"] == "optimistic":
            yield from self.checkpoint(t.name, f"{t.name}:{attempt}")
        call, fresh = yield from self.step(f"call:{t.name}:{attempt}", "call", transition=t.name, intent=intent,
                                           dispatch=dispatch, idempotency=self.knobs["idempotency"])
        response = call.get("response")
        if response is not None and response["outcome"] != "rejected":
            self.event(fresh, "receipt_recorded", transition=t.name, effect=response["effect"],
                       receipt=response["effect"], source="response", request=dispatch["request"])
            return (yield from self.receipted(t, response))
        if response is not None:  # a fingerprint conflict: only a human can say what is true
            return (yield from self.escalate(t, attempt, "fingerprint_conflict"))
        if call.get("in_doubt") and self.knobs["checkpoint"] == "optimistic" and t.name in self.checkpointed:
            self.done[t.name] = {}  # the checkpoint says done: a resuming worker trusts it
            return True
        reason = "in_doubt_on_resume" if call.get("in_doubt") else "no_response"
        timed, fresh = yield from self.record(f"timeout:{t.name}:{attempt}", outcome=self.knobs["on_timeout"],
                                              reason=reason)
        self.event(fresh, "timed_out", transition=t.name, outcome=timed["outcome"], reason=timed["reason"])
        if timed["outcome"] == "failed" or self.knobs["reconcile"] == "off" or "skip_reconcile" in self.config.plant:
            return False  # dispatch again under the same key (a blind retry)
        found, fresh = yield from self.step(f"reconcile:{t.name}:{attempt}", "reconcile", transition=t.name,
                                            intent=intent, idempotency=self.knobs["idempotency"],
                                            receipt_check=self.knobs["receipt_check"])
        self.event(fresh, "reconciled", transition=t.name, result=found["result"], query=found["query"],
                   effect=found.get("effect"), number=found.get("number"))
        if found["result"] == "found":
            receipt, fresh = yield from self.record(f"receipt:{t.name}:{attempt}", effect=found["effect"])
            self.event(fresh, "receipt_recorded", transition=t.name, effect=receipt["effect"],
                       receipt=receipt["effect"], source="reconciliation")
            return (yield from self.receipted(t, found))
        if found["result"] == "unprovable":
            return (yield from self.escalate(t, attempt, "unprovable"))
        return False  # not found: dispatch again

    def receipted(self, t: Transition, evidence: dict):
        self.done[t.name] = {"effect": evidence["effect"], "number": evidence["number"]}
        if self.knobs["checkpoint"] == "verified":
            yield from self.checkpoint(None, t.name)
        return True

    def checkpoint(self, extra: str | None, label: str):
        completed = list(self.done) + ([extra] if extra and extra not in self.done else [])
        out, fresh = yield from self.record(f"checkpoint:{label}", completed=completed)
        self.checkpointed = list(out["completed"])
        self.event(fresh, "checkpoint_saved", completed=out["completed"], workflow_version=self.config.workflow_version)

    def escalate(self, t: Transition, attempt: int, reason: str):
        out, fresh = yield from self.record(f"escalate:{t.name}:{attempt}", reason=reason)
        self.event(fresh, "human_exception", transition=t.name, reason=out["reason"])
        answer = yield Recv(f"resolve:{t.name}", HUMAN_WAIT_LIMIT_S)
        if answer is None:
            yield from self.abort(t, "human_timeout")
        if answer.get("outcome") == "found":  # the human recorded the receipt
            self.done[t.name] = {"effect": answer["effect"], "number": answer.get("number")}
            if self.knobs["checkpoint"] == "verified":
                yield from self.checkpoint(None, f"{t.name}:human:{attempt}")
            return True
        return False  # not found: dispatch again

    def verify(self, t: Transition):
        """A transition with a postcondition is checked at the external system after its receipt."""
        number = self.done.get(t.name, {}).get("number")
        if not t.postcondition or not number:
            return
        out, fresh = yield from self.step(f"verify:{t.name}", "verify", number=number)
        if out["valid"]:
            return
        if fresh:
            self.channel.emit({"kind": "event", "event": "transition_failed", "actor": "verifier",
                               "task": self.config.task, "transition": t.name, "reason": "postcondition_failed"})
        raise Abort(t.name)

    def compensate(self):
        """Undo every done transition that has a compensation, latest first; ``compensated`` or ``failed``."""
        for t in reversed(self.config.transitions):
            receipt = self.done.get(t.name)
            if t.compensation is None or not receipt or receipt.get("number") is None:
                continue
            for attempt in range(1, MAX_COMPENSATION_TRIES + 1):
                out, fresh = yield from self.step(f"compensate:{t.name}:{attempt}", "compensate", transition=t.name,
                                                  number=receipt["number"])
                if out["ok"]:
                    self.event(fresh, "compensated", transition=t.name, compensation=t.compensation,
                               effect=receipt["effect"])
                    break
                self.event(fresh, "compensation_failed", transition=t.name, compensation=t.compensation,
                           effect=receipt["effect"])
            else:
                return "failed"
        return "compensated"


def drive(policy: TaskPolicy, step: Callable[[StepCall], tuple[dict, bool]], recv: Callable[[Recv], Any]):
    """Run a policy on a synchronous runtime: each step and message through the runtime's own calls."""
    running = policy.run()
    answer: Any = None
    while True:
        try:
            request = running.send(answer)
        except StopIteration as finished:
            return finished.value
        answer = step(request) if isinstance(request, StepCall) else recv(request)
