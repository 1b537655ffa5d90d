"""The durable steps a policy asks its runtime for, and what each kind of step does when it runs.

A runtime (DBOS, Temporal) runs a :class:`StepCall` as one of its durable steps and checkpoints its output;
:class:`StepBodies` is the body of each kind of step -- plain data in, plain data out -- and the only code
that touches the outside world.  Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .channel import Channel
from .client import ExternalClient, NoAnswer
from .config import WorkerConfig, fingerprint_of


@dataclass(frozen=True)
class StepCall:
    """A durable step the policy asks for: its name (in order, so a replay finds it), its kind, plain-data
    arguments (a Temporal activity cannot take a closure), and the event it records."""

    name: str
    kind: str
    args: dict


@dataclass(frozen=True)
class Recv:
    """A durable message the policy waits for (a human's approval or resolution), or None after ``timeout_s``."""

    topic: str
    timeout_s: float


class Abort(Exception):
    """The task aborts: compensate what is done, then close."""


#: The history event each kind of step records (what a fenced step was refused).
STEP_EVENTS = {"begin": "resumed", "approval": "approval_requested", "intent": "intent_recorded",
               "dispatch": "dispatched", "checkpoint": "checkpoint_saved", "call": "receipt_recorded",
               "timeout": "timed_out", "reconcile": "reconciled", "receipt": "receipt_recorded",
               "escalate": "human_exception", "verify": "transition_failed", "abort": "transition_failed",
               "compensate": "compensated", "close": "task_terminal", "record": "record"}


def transition_of(call: StepCall) -> str | None:
    """The transition a step belongs to (its name is ``kind:transition[:attempt]``), None for the task's own."""
    parts = call.name.split(":")
    return parts[1] if len(parts) > 1 and parts[0] != "checkpoint" else call.args.get("transition")


class StepBodies:
    """What each kind of step does when it runs, in a DBOS step or a Temporal activity: plain data in, plain
    data out, with ``by`` (the incarnation that ran it).  Only these touch the outside world."""

    def __init__(self, config: WorkerConfig, channel: Channel, client: ExternalClient, me: str,
                 in_doubt: Callable[[dict], bool]):
        self.config, self.channel, self.client, self.me, self.in_doubt = config, channel, client, me, in_doubt
        self.transitions = {t.name: t for t in config.transitions}

    def run(self, kind: str, args: dict) -> dict:
        body = getattr(self, f"do_{kind}", None)
        out = dict(args.get("output", {})) if body is None else body(args)
        return {**out, "by": self.me}

    def do_intent(self, args: dict) -> dict:
        t = self.transitions[args["transition"]]
        self.channel.point("before_intent", t.name)  # inside the step: the intent is not recorded yet
        return {"generation": 1, "key": self.config.key_of(t, 1),
                "fingerprint": fingerprint_of(self.config.arguments_of(t))}

    def do_call(self, args: dict) -> dict:
        t, intent, dispatch = self.transitions[args["transition"]], args["intent"], args["dispatch"]
        if self.in_doubt(dispatch):
            return {"in_doubt": True}  # another attempt recorded this dispatch: its request may have left
        self.channel.point("before_send", t.name)  # inside the call step: its request has not left yet
        send_key = intent["key"] if args["idempotency"] != "none" else None
        body = {"task": self.config.task, "transition": t.name, "logical": t.logical,
                "generation": intent["generation"], "head": self.config.head_of(t),
                "arguments": self.config.arguments_of(t)}
        try:
            answer = self.client.create(t, body, send_key, dispatch["request"], self.config.wait_s(t))
        except NoAnswer as error:
            return {"no_answer": error.reason}
        self.channel.event("response_delivered", task=self.config.task, transition=t.name,
                           request=dispatch["request"], outcome=answer["outcome"], effect=answer["effect"],
                           number=answer["number"])
        return {"response": {k: answer[k] for k in ("outcome", "effect", "number")}}

    def do_reconcile(self, args: dict) -> dict:
        """Query by key, then by task marker and head; prove, disprove, or fail to prove (the model's rules)."""
        t, intent = self.transitions[args["transition"]], args["intent"]
        trusting = args["receipt_check"] == "trusting"
        head = self.config.head_of(t)
        by_key = args["idempotency"] != "none" and t.reconcile_by == "key"
        query = "key" if by_key else "marker"
        if t.reconcile_by == "none":
            return {"result": "unprovable", "query": query}
        try:
            if by_key:
                status, answer = self.client.query(transition=t.name, key=intent["key"])
                objects = answer.get("objects", []) if status == 200 else []
                if objects:
                    obj = objects[0]
                    proven = obj["fingerprint"] == intent["fingerprint"] and obj["head"] == head and obj["open"]
                    return {"result": "found" if trusting or proven else "unprovable", "query": "key",
                            "effect": obj["effect"], "number": obj["number"]}
            status, answer = self.client.query(transition=t.name, task=self.config.task, logical=t.logical)
        except NoAnswer:
            return {"result": "unprovable", "query": query}
        for obj in answer.get("objects", []) if status == 200 else []:
            if trusting or (not obj["foreign"] and obj["generation"] == intent["generation"] and obj["head"] == head
                            and obj["open"]):
                return {"result": "found", "query": "marker", "effect": obj["effect"], "number": obj["number"]}
        return {"result": "not_found", "query": query}

    def do_verify(self, args: dict) -> dict:
        found = self.client.object(args["number"]) or {}
        return {"valid": bool(found.get("valid", False))}

    def do_compensate(self, args: dict) -> dict:
        t = self.transitions[args["transition"]]
        try:
            self.client.close(args["number"], t.compensation, f"{self.config.key_of(t, 1)}:compensate")
        except (NoAnswer, RuntimeError) as error:
            return {"ok": False, "error": str(error)[:200]}
        return {"ok": True}
