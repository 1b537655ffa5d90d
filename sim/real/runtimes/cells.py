"""What one real cell is: a fault at a point of a transition, the workflow and the protocol as plain data,
and what a runtime cannot express (``docs/real-runtimes.md``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sim.core.errors import FencesimError
from sim.core.values import JsonObject
from sim.real import external_system
from sim.real.runtimes import model_schema, worker_kit

TASK_DEFAULT = "task_42"
#: The boundaries between a transition's moments, as the model's schema lists them.
BOUNDARIES = model_schema.load().boundaries
REQUEST_BOUNDARIES = ("after_dispatch", "after_commit")
#: Points only a real worker has (the model's dispatch and its request leave at once, and its receipt is a
#: step after the response): the dispatch record is durable but the request has not left; the response has
#: arrived but the call step's output (the receipt) is not durable yet.
REAL_POINTS = ("dispatch_recorded", "response_received")
#: The seed's "deliberately cruel" faults, as the model's schema marks them.
CRUEL_FAULTS = model_schema.load().cruel_faults()


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


def docs_table() -> str:
    """The Markdown table of the faults the harness plays in ``docs/real-runtimes.md`` (a test checks the page)."""
    lines = ["| fault | at a worker's record | at the external system |", "|---|---|---|"]
    lines += [f"| `{fault}` | {play.at_worker} | {play.at_external} |" for fault, play in FAULT_PLAYS.items()]
    return "\n".join(lines)

#: Faults (and knob values) the harness cannot express, and why.
NOT_APPLICABLE = {
    "retry_changed": "the reference worker never regenerates a request body: a retry resends the recorded one",
    "upgrade": "no second application version is deployed mid-task by this harness yet",
    "slow_approval": "a late approval is a matter of the model's clock; the harness approves when asked",
    "unprovable": "the external system always answers its queries; no hook makes one unprovable yet",
    "compensation_fails": "the external system's close endpoint has no failure hook yet",
    "read_changes": "the reference workers do not run reads yet (a workflow with a read is not applicable)",
}
#: Transition fields of the model the harness cannot play, and why: a transition that declares one (other
#: than its default) is not applicable.  Every other field of the model's schema is played
#: (:func:`real_fields`); a parity test checks that the two cover the schema.
FIELDS_NOT_APPLICABLE: dict[str, str] = {
    "key_retention_s": "the reference external system keeps every key for the one key_retention_s of its config; "
                       "a retention per endpoint is played by the model only",
    "fingerprint": "the reference external system compares fingerprints at every keyed endpoint under "
                   "key+fingerprint; an endpoint that cannot is played by the model only",
}
#: Field values the real side cannot play although it plays the field: (field, why), by a test on the value.
CONDITIONAL_APPROVAL = ("approval", "an approval on a condition of the arguments is played by the model only (the "
                        "reference worker asks for approval or not, per transition)")
#: How each runtime fences a worker that lost its task (so lease_fence=off cannot be expressed on it).
FENCES = {"dbos": "DBOS always fences a stale execution by its owner token",
          "temporal": "Temporal's server always refuses a timed-out attempt's completion",
          "restate": "Restate's server takes one result per journal entry of an invocation"}
#: Fault classes a runtime cannot express, and why (beyond NOT_APPLICABLE, which no runtime expresses).
RUNTIME_NOT_APPLICABLE: dict[tuple[str, str], str] = {
    ("change_owner", "temporal"): "Temporal has no owner to move; an attempt's lease ends only by its timeout (the "
                                  "zombie fault freezes a worker until it does)",
    ("change_owner", "restate"): "Restate has no owner to move: an invocation's retries go to its deployment's one "
                                 "address, which a live worker holds",
    ("zombie", "restate"): "Restate retries an invocation at its deployment's one address: a frozen worker still "
                           "holds it, so no successor can take the task while it sleeps",
}
#: The seed's saga as plain data (the model's ``SAGA_TRANSITIONS``).
SAGA = (
    {"name": "create_branch", "class": "keyed_creation", "object": "branch", "compensation": "delete_branch"},
    {"name": "open_pr", "class": "keyed_creation", "object": "pull_request", "compensation": "close_pr"},
    {"name": "create_preview", "class": "keyed_creation", "object": "preview", "compensation": "destroy_preview"},
    {"name": "publish_release", "class": "irreversible", "object": "release"},
)

class NotApplicable(FencesimError):
    """The runtime cannot express this fault or knob value (the reason says why)."""


class UnplayedFault(FencesimError):
    """A fault class of the model the real harness neither plays nor declares not applicable (a gap in the
    harness: refused, never taken for a pass; the parity test names it first)."""


class UnplayedField(FencesimError):
    """A transition declares a field of the model that the real harness neither plays nor declares not
    applicable: a gap in the harness, refused rather than ignored (the parity test names it first)."""


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

def real_fields() -> tuple[str, ...]:
    """The transition fields the real side plays: those a worker reads and those an endpoint of the external
    system reads (the harness sends each exactly these)."""
    return tuple(dict.fromkeys((*worker_kit.TRANSITION_FIELDS, *external_system.ENDPOINT_FIELDS)))


def workflow_data(spec: Any, knobs: JsonObject, schema: model_schema.Schema | None = None) -> list[JsonObject]:
    """Transitions as plain data, every field the real side plays resolved as the model's schema says.

    ``spec`` is ``"saga"``, a list of saga transition names, a list of transition tables (the fields of the
    model's ``workflow_schema.json``), or a model ``Workflow``.  A field a transition leaves out takes its
    class's default (an irreversible step's ``keys``: the ``irreversible_keys`` knob), as in the model.  A
    declared field the real side cannot play is not applicable (``FIELDS_NOT_APPLICABLE``); one it neither
    plays nor declares is refused (:class:`UnplayedField`): never ignored.
    """
    schema = schema or model_schema.load()
    out = [_resolved(row, knobs, schema) for row in _rows(spec, schema)]
    names = [t["name"] for t in out]
    if len(set(names)) != len(names):
        raise ValueError("a transition is listed twice in the workflow")
    return out


def _rows(spec: Any, schema: model_schema.Schema) -> list[JsonObject]:
    """The transitions as the tables they declare (only what they declare)."""
    if spec is None or spec == "saga":
        return [dict(t) for t in SAGA]
    if hasattr(spec, "transitions"):  # a model Workflow: every field its transitions declare, and their logical
        rows = []
        for t in spec.transitions:
            row = {name: t.declared(name) for name in schema.field_names()}
            rows.append({**{k: v for k, v in row.items() if v is not None}, "logical": t.logical})
        return rows
    if isinstance(spec, (list, tuple)) and all(isinstance(s, str) for s in spec):
        known = {t["name"]: t for t in SAGA}
        unknown = [s for s in spec if s not in known]
        if unknown:
            raise ValueError(f"unknown saga transition {unknown[0]!r}; transitions: {', '.join(known)}")
        return [dict(known[s]) for s in spec]
    return [dict(t) for t in spec]


def _resolved(row: JsonObject, knobs: JsonObject, schema: model_schema.Schema) -> JsonObject:
    """One transition's data: the fields the real side plays, declared or defaulted, and its logical name."""
    name, effect_class = row.get("name"), row.get("class")
    unknown = sorted(set(row) - set(schema.field_names()) - {"logical"})
    if unknown:
        raise ValueError(f"transition {name}: unknown field {unknown[0]!r}; fields: {', '.join(schema.field_names())}")
    if effect_class not in schema.effect_classes:
        raise ValueError(f"transition {name}: unknown class {effect_class!r}")
    played = real_fields()
    out: JsonObject = {}
    for spec in schema.fields:
        default = spec.default_for(effect_class, knobs)
        value = row.get(spec.name)
        declared = value is not None and value != default
        if spec.name in FIELDS_NOT_APPLICABLE:
            if declared:
                raise NotApplicable(f"transition {name} declares {spec.name} = {value!r}: "
                                    f"{FIELDS_NOT_APPLICABLE[spec.name]}")
        elif spec.name == CONDITIONAL_APPROVAL[0] and isinstance(value, str):
            raise NotApplicable(f"transition {name} declares {spec.name} = {value!r}: {CONDITIONAL_APPROVAL[1]}")
        elif spec.name not in played:
            if declared:
                raise UnplayedField(f"transition {name} declares {spec.name} = {value!r}, a field of the model the "
                                    "real harness neither plays nor declares not applicable (FIELDS_NOT_APPLICABLE "
                                    "in sim/real/runtimes/cells.py)")
        else:
            out[spec.name] = default if value is None else value
    out["logical"] = row.get("logical") or name
    return out


def resolve_protocol(protocol: Any) -> tuple[str, JsonObject]:
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
    return fault in FAULT_POINTS and (fault, runtime) not in RUNTIME_NOT_APPLICABLE


def check_applicable(fault: CellFault | None, knobs: JsonObject, runtime: str,
                     schema: model_schema.Schema | None = None) -> None:
    """Raise NotApplicable when the runtime cannot express this fault or these knobs; ValueError for a fault
    the model does not have or a point it does not strike; UnplayedFault for a fault of the model the
    harness neither plays nor declares not applicable."""
    if knobs.get("lease_fence") == "off" and runtime in FENCES:
        raise NotApplicable(f"{FENCES[runtime]}: lease_fence=off cannot be expressed")
    if knobs.get("version_policy") not in (None, "pinned"):
        raise NotApplicable("the reference worker runs one explicit application version (pinned); no upgrade is "
                            "deployed, so other version policies are not exercised")
    if knobs.get("delivery") == "at_most_once":
        raise NotApplicable("delivery=at_most_once: the reference workers run a step again when its result was not "
                            "recorded (at least once); an at-most-once engine is not among the real runtimes")
    if fault is None:
        return
    if (fault.fault, runtime) in RUNTIME_NOT_APPLICABLE:
        raise NotApplicable(f"{fault.fault}: {RUNTIME_NOT_APPLICABLE[fault.fault, runtime]}")
    schema = schema or model_schema.load()
    if schema.fault(fault.fault) is None:
        raise ValueError(f"unknown fault {fault.fault!r}; faults: {', '.join(schema.fault_names())}")
    if fault.fault in NOT_APPLICABLE:
        raise NotApplicable(f"{fault.fault}: {NOT_APPLICABLE[fault.fault]}")
    if fault.fault not in FAULT_PLAYS:
        raise UnplayedFault(f"{fault.fault} is a fault of the model the real harness neither plays (FAULT_PLAYS) nor "
                            "declares not applicable (NOT_APPLICABLE in sim/real/runtimes/cells.py)")
    if fault.boundary not in FAULT_POINTS[fault.fault]:
        raise ValueError(f"{fault.fault} strikes at {', '.join(FAULT_POINTS[fault.fault])}, not {fault.boundary!r}")


def check_order(faults: tuple[CellFault, ...], knobs: JsonObject, runtime: str, transitions: list[str]) -> None:
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
