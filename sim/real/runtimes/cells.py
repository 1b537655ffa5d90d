"""What one real cell is: a fault at a point of a transition, the workflow and the protocol as plain data,
and what a runtime cannot express (``docs/real-runtimes.md``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sim.core.errors import FencesimError
from sim.real import external_system

TASK_DEFAULT = "task_42"
BOUNDARIES = ("before_intent", "after_intent", "after_dispatch", "after_commit", "after_receipt")
REQUEST_BOUNDARIES = ("after_dispatch", "after_commit")
#: Points only a real worker has (the model's dispatch and its request leave at once, and its receipt is a
#: step after the response): the dispatch record is durable but the request has not left; the response has
#: arrived but the call step's output (the receipt) is not durable yet.
REAL_POINTS = ("dispatch_recorded", "response_received")
CRUEL_FAULTS = ("terminate", "duplicate", "delay_ack", "change_owner")


@dataclass(frozen=True)
class FaultPlay:
    """How the harness strikes one fault class: its points, the choreography's method that plays it, and what
    it does at a worker's record and at the external system (the docs' table)."""

    points: tuple[str, ...]
    play: str
    at_worker: str = ""
    at_external: str = ""


#: The fault classes this harness can strike, each written once.  The others of the model are not applicable
#: (``NOT_APPLICABLE``); a parity test checks that the two cover the model's registry.
FAULT_PLAYS: dict[str, FaultPlay] = {
    "terminate": FaultPlay(BOUNDARIES + REAL_POINTS, "play_terminate", "`SIGKILL` there", "`kill_caller`"),
    "duplicate": FaultPlay(
        BOUNDARIES, "play_duplicate", "the queue redelivers the task to its holder (`deliver`): DBOS returns the "
        "running execution, `redelivery_ignored`", "`duplicate`: a copy of the request"),
    "delay_ack": FaultPlay(
        BOUNDARIES, "play_delay_ack", "the queue's deadline passes: the task is delivered to a new worker, which "
        "finds it held (`lease_busy`) and stops", "`hold`: the request (or its reply) waits until T has settled "
        "(its receipt, an exception, a failure); the worker times out meanwhile"),
    "change_owner": FaultPlay(
        BOUNDARIES + REAL_POINTS, "play_hand_over", "the worker is frozen while a new one recovers the task and "
        "owns it; then the old one goes on and is refused at its next record (`append_refused`), then the new one "
        "goes on", "`hold`, then the same hand-over; the request goes on while the old worker is still frozen (its "
        "answer waits in its socket), then it wakes"),
    "zombie": FaultPlay(
        BOUNDARIES + REAL_POINTS, "play_hand_over", "frozen (`SIGSTOP`) while a new worker recovers the task and "
        "finishes it; then woken (`SIGCONT`)", "`freeze_caller`, then the same"),
    "lose_request": FaultPlay(("after_dispatch",), "play_lost", "", "`drop`"),
    "lose_response": FaultPlay(("after_commit",), "play_lost", "", "`lose_reply`"),
    "timeout": FaultPlay(("after_dispatch",), "play_timeout", "", "`hold` before the store, released after the "
                         "worker's first reconciliation"),
    "postcondition_fails": FaultPlay(
        ("after_receipt",), "play_postcondition", "after T's receipt, the external system marks T's object invalid; "
        "the worker's check finds it and the task aborts"),
    "foreign_object": FaultPlay(("before_intent",), "play_foreign_object", "before T's intent, someone else's "
                                "object with T's marker appears"),
}
#: Where each fault the harness plays may strike.
FAULT_POINTS = {fault: play.points for fault, play in FAULT_PLAYS.items()}
#: Faults (and knob values) the harness cannot express, and why.
NOT_APPLICABLE = {
    "retry_changed": "the reference worker never regenerates a request body: a retry resends the recorded one",
    "upgrade": "no second application version is deployed mid-task by this harness yet",
    "slow_approval": "a late approval is a matter of the model's clock; the harness approves when asked",
    "unprovable": "the external system always answers its queries; no hook makes one unprovable yet",
    "compensation_fails": "the external system's close endpoint has no failure hook yet",
}
#: How each runtime fences a worker that lost its task (so lease_fence=off cannot be expressed on it).
FENCES = {"dbos": "DBOS always fences a stale execution by its owner token",
          "temporal": "Temporal's server always refuses a timed-out attempt's completion"}
#: The seed's saga as plain data (the model's ``SAGA_TRANSITIONS``).
SAGA = (
    {"name": "create_branch", "class": "keyed_creation", "object": "branch", "compensation": "delete_branch"},
    {"name": "open_pr", "class": "keyed_creation", "object": "pull_request", "compensation": "close_pr"},
    {"name": "create_preview", "class": "keyed_creation", "object": "preview", "compensation": "destroy_preview"},
    {"name": "publish_release", "class": "irreversible", "object": "release"},
)

class NotApplicable(FencesimError):
    """The runtime cannot express this fault or knob value (the reason says why)."""


@dataclass(frozen=True)
class CellFault:
    """One fault of a cell: ``terminate open_pr after_commit``."""

    fault: str
    transition: str
    boundary: str

    @classmethod
    def parse(cls, text: str) -> "CellFault":
        words = text.split()
        if len(words) != 3:
            raise ValueError(f"write a fault as 'FAULT TRANSITION BOUNDARY', not {text!r}")
        return cls(*words)

    def __str__(self) -> str:
        return f"{self.fault} {self.transition} {self.boundary}"


# -- the workflow and protocol as data ------------------------------------------------------------

def workflow_data(spec: Any, knobs: dict[str, Any]) -> list[dict[str, Any]]:
    """Transitions as plain data with ``keys`` and ``approval`` resolved.

    ``spec`` is ``"saga"``, a list of saga transition names, a list of transition tables (``name``,
    ``class``, ``object``, ``compensation``, ``keys``, ``reconcile_by``, ``approval``, ``postcondition``),
    or a model ``Workflow``.  ``keys`` defaults by class; an irreversible transition that does not say
    takes the ``irreversible_keys`` knob; ``approval`` defaults to true for an irreversible transition.
    """
    rows: list[dict[str, Any]]
    if spec is None or spec == "saga":
        rows = [dict(t) for t in SAGA]
    elif hasattr(spec, "transitions"):  # a model Workflow; the declared fields it has, it passes on
        rows = []
        for t in spec.transitions:
            row = {"name": t.name, "class": t.effect_class, "object": t.object_kind, "compensation": t.compensation,
                   "logical": t.logical}
            for name in ("keys", "reconcile_by", "approval", "postcondition"):
                if getattr(t, name, None) is not None:
                    row[name] = getattr(t, name)
            rows.append(row)
    elif isinstance(spec, (list, tuple)) and all(isinstance(s, str) for s in spec):
        known = {t["name"]: t for t in SAGA}
        unknown = [s for s in spec if s not in known]
        if unknown:
            raise ValueError(f"unknown saga transition {unknown[0]!r}; transitions: {', '.join(known)}")
        rows = [dict(known[s]) for s in spec]
    else:
        rows = [dict(t) for t in spec]
    out = []
    for row in rows:
        effect_class = row["class"]
        if effect_class not in external_system.EFFECT_CLASSES:
            raise ValueError(f"transition {row['name']}: unknown class {effect_class!r}")
        keys = row.get("keys")
        if keys is None:
            keys = (knobs.get("irreversible_keys") == "on" if effect_class == "irreversible"
                    else external_system.KEYS_BY_CLASS[effect_class])
        out.append({"name": row["name"], "class": effect_class, "object": row.get("object", "object"),
                    "compensation": row.get("compensation"), "keys": bool(keys),
                    "reconcile_by": row.get("reconcile_by", "key"), "logical": row.get("logical") or row["name"],
                    "approval": bool(row.get("approval", effect_class == "irreversible")),
                    "postcondition": bool(row.get("postcondition", False))})
    names = [t["name"] for t in out]
    if len(set(names)) != len(names):
        raise ValueError("a transition is listed twice in the workflow")
    return out


def resolve_protocol(protocol: Any) -> tuple[str, dict[str, Any]]:
    """(label, knobs) from a protocol string, a parsed ``Protocol``, or a dict of knobs (over the family's
    default protocol, keyed-fingerprint-reconcile)."""
    if isinstance(protocol, dict):
        from sim.registry import FAMILIES

        defaults = FAMILIES.get("effects").parse_protocol("keyed-fingerprint-reconcile")
        return ",".join(f"{k}={v}" for k, v in sorted(protocol.items())), {**defaults.knobs, **protocol}
    if isinstance(protocol, str):
        from sim.registry import FAMILIES

        protocol = FAMILIES.get("effects").parse_protocol(protocol)
    return protocol.label, dict(protocol.knobs)


def expressible(fault: str, runtime: str) -> bool:
    """Whether the harness can strike this fault class on this runtime at all (its points aside)."""
    return fault in FAULT_POINTS and not (fault == "change_owner" and runtime == "temporal")


def check_applicable(fault: CellFault | None, knobs: dict[str, Any], runtime: str) -> None:
    """Raise NotApplicable when the runtime cannot express this fault or these knobs."""
    if knobs.get("lease_fence") == "off" and runtime in FENCES:
        raise NotApplicable(f"{FENCES[runtime]}: lease_fence=off cannot be expressed")
    if knobs.get("version_policy") not in (None, "pinned"):
        raise NotApplicable("the reference worker runs one explicit application version (pinned); no upgrade is "
                            "deployed, so other version policies are not exercised")
    if fault is None:
        return
    if fault.fault == "change_owner" and runtime == "temporal":
        raise NotApplicable("change_owner: Temporal has no owner to move; an attempt's lease ends only by its "
                            "timeout (the zombie fault freezes a worker until it does)")
    if fault.fault in NOT_APPLICABLE:
        raise NotApplicable(f"{fault.fault}: {NOT_APPLICABLE[fault.fault]}")
    if fault.fault not in FAULT_POINTS:
        raise ValueError(f"unknown fault {fault.fault!r}; faults: {', '.join(FAULT_POINTS)}")
    if fault.boundary not in FAULT_POINTS[fault.fault]:
        raise ValueError(f"{fault.fault} strikes at {', '.join(FAULT_POINTS[fault.fault])}, not {fault.boundary!r}")


def check_order(faults: tuple[CellFault, ...], knobs: dict[str, Any], runtime: str, transitions: list[str]) -> None:
    """Raise NotApplicable when the harness cannot play this list of faults (each checked as a cell, then the
    list: one fault per transition, and nothing after a zombie, whose successor finishes the task while the
    old worker sleeps); ValueError for a fault that names no transition of the workflow."""
    check_applicable(None, knobs, runtime)
    for fault in faults:
        check_applicable(fault, knobs, runtime)
        if fault.transition not in transitions:
            raise ValueError(f"unknown transition {fault.transition!r} in fault {fault}")
    seen: set[str] = set()
    for position, fault in enumerate(faults):
        if fault.transition in seen:
            raise NotApplicable(f"two faults strike {fault.transition}: the harness plays at most one fault per "
                                "transition in a run (a second would meet a request or step the first one moved)")
        seen.add(fault.transition)
        if fault.fault == "zombie" and position < len(faults) - 1:
            raise NotApplicable("a fault follows a zombie: the zombie's successor finishes the task while the old "
                                "worker sleeps, so the harness strikes nothing after a zombie")
    order = [transitions.index(f.transition) for f in faults]
    if order != sorted(order):
        raise ValueError("the faults of a list must be in the order they strike (by transition)")
