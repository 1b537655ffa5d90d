"""What a worker is told: the workflow as data, the protocol, keys and fingerprints (standard library only)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

#: Dispatches of one transition before the worker gives up and aborts the task (the model's MAX_ATTEMPTS).
MAX_ATTEMPTS = 5
#: Seconds the worker waits for an answer from the external system before it stops waiting (a timeout).
ACK_TIMEOUT_DEFAULT_S = 5.0
#: The model's default timeout class, in its simulated seconds: a transition of that class waits exactly
#: ``ack_timeout_s`` real seconds, a transition of another class in proportion (``WorkerConfig.wait_s``).
TIMEOUT_CLASS_DEFAULT_S = 10.0
#: Bounds on one wait, in real seconds: never so short that a healthy request times out on a loaded machine,
#: never so long that a held request costs minutes (a limit on everything).
WAIT_FLOOR_S = 1.0
WAIT_CEILING_S = 30.0
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


#: The transition fields a worker reads, as the workflow's tables name them, and the attribute each becomes;
#: with ``logical``, what the harness sends for each transition.  A field it does not know is refused.
TRANSITION_FIELDS = {"name": "name", "class": "effect_class", "object": "object_kind", "compensation": "compensation",
                     "keys": "keys", "reconcile_by": "reconcile_by", "approval": "approval", "timeout_s": "timeout_s",
                     "postcondition": "postcondition"}


@dataclass(frozen=True)
class Transition:
    """One transition as plain data: the workflow format's fields (defaults already resolved by the harness)."""

    name: str
    effect_class: str
    object_kind: str
    compensation: str | None = None
    keys: bool = True
    reconcile_by: str = "key"
    logical: str = ""
    approval: bool = False
    postcondition: bool = False
    timeout_s: float = TIMEOUT_CLASS_DEFAULT_S

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Transition":
        unknown = sorted(set(data) - set(TRANSITION_FIELDS) - {"logical"})
        if unknown:  # a field this worker would not act on is refused, never ignored
            raise ValueError(f"transition {data.get('name')}: this worker does not know the field {unknown[0]!r}; "
                             f"fields: {', '.join(TRANSITION_FIELDS)}")
        return cls(name=data["name"], effect_class=data["class"], object_kind=data["object"],
                   compensation=data.get("compensation"), keys=bool(data.get("keys", True)),
                   reconcile_by=data.get("reconcile_by", "key"), logical=data.get("logical") or data["name"],
                   approval=bool(data.get("approval", False)), postcondition=bool(data.get("postcondition", False)),
                   timeout_s=float(data.get("timeout_s", TIMEOUT_CLASS_DEFAULT_S)))


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
    timeout_default_s: float = TIMEOUT_CLASS_DEFAULT_S  # the model's seconds that ack_timeout_s stands for
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
                   timeout_default_s=float(start.get("timeout_default_s", TIMEOUT_CLASS_DEFAULT_S)),
                   recover=list(start.get("recover", [])), plant=frozenset(start.get("plant", ())),
                   runtime=dict(start.get("runtime", {})))

    def arguments_of(self, transition: Transition) -> dict[str, Any]:
        """The durable arguments of a transition: the task marker, the head, and what the workflow adds."""
        out = {"task": self.task, "transition": transition.logical, "head": default_head(self.task)}
        out.update(self.arguments.get(transition.logical, {}))
        return out

    def head_of(self, transition: Transition) -> str:
        """The commit a transition's work sits on: its arguments' ``head``, else the task's default."""
        return str(self.arguments_of(transition)["head"])

    def wait_s(self, transition: Transition) -> float:
        """Real seconds to wait for a transition's answer: ``ack_timeout_s`` for the default timeout class,
        in proportion for another (``timeout_s`` is the model's), within WAIT_FLOOR_S and WAIT_CEILING_S."""
        scaled = self.ack_timeout_s * transition.timeout_s / self.timeout_default_s
        return min(max(scaled, min(self.ack_timeout_s, WAIT_FLOOR_S)), max(self.ack_timeout_s, WAIT_CEILING_S))

    def key_of(self, transition: Transition, generation: int) -> str:
        """``idempotency_key = tenant + task + transition + attempt_generation``."""
        return f"{self.tenant}:{self.task}:{transition.name}:{generation}"
