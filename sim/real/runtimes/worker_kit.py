"""What every real worker needs, whatever its runtime: the workflow as data, keys and fingerprints, the
external system's HTTP client, the JSON-lines channel to the harness, and the worker's policy.

Standard library only: a worker process imports this file and its runtime, nothing of the model.
``docs/real-runtimes.md`` is the protocol a team implements to put its own worker under the same faults.

**The channel.**  Requests come on stdin, records go to stdout, one JSON object per line.  Every
``event`` and ``point`` record waits for the harness's ``{"op": "continue"}`` before the worker goes
on: that is where the harness may SIGKILL or SIGSTOP the worker instead, so every kill point is a
record.  An ``event`` is sent only once what it reports is durable in the runtime's own store
(``intent_recorded`` after the intent step committed, ``receipt_recorded`` after the call step's
output committed), and only by the process that made it durable: a step replayed from the store
during recovery reports nothing again.

**The policy** (:class:`TaskPolicy`) is the effects family's worker policy as real code paths over a
durable runtime: steps whose outputs are checkpointed (:class:`StepCall`, run by :class:`StepBodies`),
messages from humans (:class:`Recv`), and the runtime's own fence.  Per transition: approval for an
irreversible step, intent (key, fingerprint), dispatch (a durable record of the attempt before the request
leaves), the call, then the receipt -- or, with no answer, a timeout recorded as ``failed`` or ``unknown``,
reconciliation by key then by task marker, a retry under the same key, a human.  A call executed by a
process that did not record its dispatch is *in doubt*: its request may have left before that process
died, so it is not sent again blindly but recorded as a timeout (``in_doubt_on_resume``), exactly as the
model's resumed worker does.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import queue
import socket
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import urlencode, urlparse

#: Dispatches of one transition before the worker gives up and aborts the task (the model's MAX_ATTEMPTS).
MAX_ATTEMPTS = 5
#: Seconds the worker waits for an answer from the external system before it stops waiting (a timeout).
ACK_TIMEOUT_DEFAULT_S = 5.0
#: Seconds the worker waits for the harness's ``continue`` after a record before it calls the harness gone.
CHANNEL_TIMEOUT_S = 300.0
#: Seconds the worker waits for a human's approval (approval=on) or resolution before it aborts the task.
HUMAN_WAIT_LIMIT_S = 120.0
#: With approval=off, seconds the worker waits for an approval it asked for before it goes ahead.
APPROVAL_GRACE_S = 5.0
#: Failed compensations of one transition retried before the task closes failed.
MAX_COMPENSATION_TRIES = 3
FINGERPRINT_HEX_DIGITS = 12
HEAD_HEX_DIGITS = 7
DEFAULT_TENANT = "acme"
#: Bugs a reference worker can be told to carry (``plant`` in the start request), for testing the tests:
#: the receipt recorded before the external call returns; a retry that makes a new key; reconciliation
#: skipped after a timeout recorded unknown.
PLANTED_BUGS = ("receipt_before_call", "new_key_on_retry", "skip_reconcile")
#: Knobs a worker reads (the harness resolves presets and followers before it sends them).
KNOBS = ("idempotency", "on_timeout", "reconcile", "compensation", "approval", "checkpoint", "receipt_check",
         "lease_fence")


def fingerprint_of(arguments: dict[str, Any]) -> str:
    """``hash(canonical arguments)``: sha256 of sorted compact JSON, 12 hex digits (the model's and the server's)."""
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:FINGERPRINT_HEX_DIGITS]


def default_head(task: str) -> str:
    """The head commit a task's work sits on when nothing says otherwise (the model's rule)."""
    return hashlib.sha256(task.encode("utf-8")).hexdigest()[:HEAD_HEX_DIGITS]


@dataclass(frozen=True)
class Transition:
    """One transition as plain data: the workflow format's fields (``keys`` already resolved)."""

    name: str
    effect_class: str
    object_kind: str
    compensation: str | None = None
    keys: bool = True
    reconcile_by: str = "key"
    logical: str = ""
    approval: bool = False
    postcondition: bool = False

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Transition":
        return cls(name=data["name"], effect_class=data["class"], object_kind=data["object"],
                   compensation=data.get("compensation"), keys=bool(data.get("keys", True)),
                   reconcile_by=data.get("reconcile_by", "key"), logical=data.get("logical") or data["name"],
                   approval=bool(data.get("approval", False)), postcondition=bool(data.get("postcondition", False)))


@dataclass
class WorkerConfig:
    """What the harness's ``start`` request tells a worker."""

    worker: str
    task: str
    tenant: str
    transitions: list[Transition]
    protocol: dict[str, str]
    external: str
    state: str
    workflow: str = "saga"
    workflow_version: int = 1
    arguments: dict[str, dict[str, Any]] = field(default_factory=dict)
    ack_timeout_s: float = ACK_TIMEOUT_DEFAULT_S
    recover: list[str] = field(default_factory=list)
    plant: frozenset[str] = frozenset()
    runtime: dict[str, Any] = field(default_factory=dict)  # what the runtime needs (Temporal: the server's address)

    @classmethod
    def from_start(cls, start: dict[str, Any]) -> "WorkerConfig":
        workflow = start["workflow"]
        protocol = {k: str(v) for k, v in start["protocol"].items()}
        missing = [k for k in KNOBS if k not in protocol]
        if missing:
            raise ValueError(f"the start request's protocol lacks {', '.join(missing)}")
        return cls(worker=start["worker"], task=start["task"], tenant=start.get("tenant", DEFAULT_TENANT),
                   transitions=[Transition.from_dict(t) for t in workflow["transitions"]], protocol=protocol,
                   external=start["external"], state=start["state"], workflow=workflow.get("name", "saga"),
                   workflow_version=int(workflow.get("version", 1)), arguments=start.get("arguments", {}),
                   ack_timeout_s=float(start.get("ack_timeout_s", ACK_TIMEOUT_DEFAULT_S)),
                   recover=list(start.get("recover", [])), plant=frozenset(start.get("plant", ())),
                   runtime=dict(start.get("runtime", {})))

    def arguments_of(self, transition: Transition) -> dict[str, Any]:
        """The durable arguments of a transition: the task marker, the head, and what the workflow adds."""
        out = {"task": self.task, "transition": transition.logical, "head": default_head(self.task)}
        out.update(self.arguments.get(transition.logical, {}))
        return out

    def key_of(self, transition: Transition, generation: int) -> str:
        """``idempotency_key = tenant + task + transition + attempt_generation``."""
        return f"{self.tenant}:{self.task}:{transition.name}:{generation}"


# -- the channel to the harness ---------------------------------------------------------------

class HarnessGone(Exception):
    """The harness stopped answering (stdin closed, or no ``continue`` within CHANNEL_TIMEOUT_S)."""


class Channel:
    """JSON lines to and from the harness; :meth:`emit` waits for ``continue``, :meth:`tell` does not."""

    def __init__(self, inp=None, out=None):
        self.inp = inp or sys.stdin
        self.out = out or sys.stdout
        self.write_lock = threading.Lock()
        self.emit_lock = threading.Lock()  # one record awaiting its continue at a time
        self.continues: queue.Queue = queue.Queue()
        self.handlers: dict[str, Callable[[dict], None]] = {}

    def tell(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        with self.write_lock:
            self.out.write(line + "\n")
            self.out.flush()

    def emit(self, record: dict[str, Any]) -> None:
        """Send a record and wait for the harness's continue (the harness may kill the worker instead)."""
        with self.emit_lock:
            self.tell(record)
            try:
                answer = self.continues.get(timeout=CHANNEL_TIMEOUT_S)
            except queue.Empty:
                raise HarnessGone(f"no continue within {CHANNEL_TIMEOUT_S:.0f} s") from None
            if answer is None:
                raise HarnessGone("the harness closed the channel")

    def event(self, event: str, **fields: Any) -> None:
        self.emit({"kind": "event", "event": event, **{k: v for k, v in fields.items() if v is not None}})

    def point(self, point: str, transition: str) -> None:
        self.emit({"kind": "point", "point": point, "transition": transition})

    def read_request(self) -> dict[str, Any] | None:
        line = self.inp.readline()
        if not line:
            return None
        request = json.loads(line)
        if not isinstance(request, dict) or not isinstance(request.get("op"), str):
            raise ValueError(f"a request must be an object with an 'op', not {line[:120]!r}")
        return request

    def serve(self) -> None:
        """Read requests until stdin closes or ``stop``: ``continue`` wakes the record waiting, other ops go to
        their handlers (on this thread)."""
        while True:
            request = self.read_request()
            if request is None or request["op"] == "stop":
                self.continues.put(None)
                return
            if request["op"] == "continue":
                self.continues.put(True)
                continue
            handler = self.handlers.get(request["op"])
            if handler is None:
                self.tell({"kind": "error", "message": f"unknown request {request['op']!r}"})
                continue
            handler(request)


# -- the external system's client ---------------------------------------------------------------

class NoAnswer(Exception):
    """No answer from the external system: a timeout, a closed connection, a refused connection."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class ExternalClient:
    """HTTP to the external system; one connection per request, a timeout on every one."""

    def __init__(self, base_url: str, worker: str, timeout_s: float):
        url = urlparse(base_url)
        if url.hostname is None:
            raise ValueError(f"the external system's address {base_url!r} names no host")
        self.host, self.port = url.hostname, url.port
        self.worker = worker
        self.timeout_s = timeout_s

    def _call(self, method: str, path: str, body: dict | None = None,
              headers: dict[str, str] | None = None) -> tuple[int, dict]:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
        try:
            data = json.dumps(body).encode("utf-8") if body is not None else None
            sent = {"Content-Type": "application/json", "Fencesim-Worker": self.worker, **(headers or {})}
            connection.request(method, path, body=data, headers=sent)
            response = connection.getresponse()
            payload = json.loads(response.read() or b"{}")
            return response.status, payload
        except socket.timeout:
            raise NoAnswer("timeout") from None
        except (ConnectionError, http.client.HTTPException, OSError) as error:
            raise NoAnswer(type(error).__name__) from None
        finally:
            connection.close()

    def create(self, transition: Transition, body: dict, key: str | None, request: str) -> dict:
        headers = {"Fencesim-Request": request}
        if key is not None:
            headers["Idempotency-Key"] = key
        status, payload = self._call("POST", f"/v1/objects/{transition.object_kind}", body, headers)
        if status not in (200, 201, 409):
            raise RuntimeError(f"the external system refused {transition.name}: {status} {payload}")
        return payload

    def query(self, **params: str) -> tuple[int, dict]:
        return self._call("GET", "/v1/objects?" + urlencode(sorted(params.items())))

    def object(self, number: int) -> dict | None:
        status, payload = self._call("GET", f"/v1/objects/{number}")
        return payload if status == 200 else None

    def close(self, number: int, compensation: str | None, key: str | None) -> dict:
        headers = {"Idempotency-Key": key} if key else {}
        status, payload = self._call("POST", f"/v1/objects/{number}/close", {"compensation": compensation}, headers)
        if status != 200:
            raise RuntimeError(f"closing #{number} failed: {status} {payload}")
        return payload


# -- the durable runtime a policy runs on ------------------------------------------------------

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
                "generation": intent["generation"], "head": default_head(self.config.task),
                "arguments": self.config.arguments_of(t)}
        try:
            answer = self.client.create(t, body, send_key, dispatch["request"])
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
        head = default_head(self.config.task)
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


def serve_worker(make_runtime: Callable[[WorkerConfig, Channel], Any], runtime_name: str,
                 channel: Channel | None = None) -> int:
    """The main loop every reference worker shares: read ``start``, build the runtime, serve requests."""
    channel = channel or Channel()
    try:
        start = channel.read_request()
        if start is None or start["op"] != "start":
            sys.stderr.write('the first request must be {"op": "start", ...}\n')
            return 4
        config = WorkerConfig.from_start(start)
        unknown = sorted(config.plant - set(PLANTED_BUGS))
        if unknown:
            raise ValueError(f"unknown planted bug {unknown[0]!r}; bugs: {', '.join(PLANTED_BUGS)}")
        os.makedirs(config.state, exist_ok=True)
        runtime = make_runtime(config, channel)
        channel.tell({"kind": "ready", "worker": config.worker, "runtime": runtime_name, "pid": os.getpid(),
                      **runtime.recovered()})
        channel.serve()
        runtime.shutdown()
    except Exception as error:  # the harness reports it; the run has no verdict
        channel.tell({"kind": "error", "message": f"{type(error).__name__}: {error}"[:500]})
        return 3
    return 0
