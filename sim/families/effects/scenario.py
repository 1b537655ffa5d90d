"""Effects scenario files: scripted stories, and fault lists run by the workers' policy.

An effects scenario is a TOML file with ``family = "effects"`` (``"runtime"``, the
family's former name, is accepted as an alias) and either
``events`` (a script: every operation in order) or ``faults`` (the workers
run the task under their policy and each fault strikes at its point; this
is the form fuzzing exports, and it replays under every protocol)::

    format = 1
    family = "effects"
    name = "pr_lost_response"
    protocol = "keyed-fingerprint-reconcile"   # optional default
    task = "task_42"                            # optional, default "task_1"
    workflow = ["create_branch", "open_pr"]     # "saga" (default), "generic:N" or saga names
    next_number = 812                           # optional: the external system's next object number
    events = [ "09:00:00 accept task_42", "lease w1", "deliver", "intent open_pr", ... ]
    # or: faults = [ "lose_response open_pr after_commit" ]
    recover = true                              # scripts only: after the script, the system heals

    [arguments.open_pr]                          # optional: a transition's canonical arguments
    head = "7ac1e05"

    [expect]                                     # optional: last transition verdict per protocol
    keyed-reconcile = "done:reconciled"

A script event is ``[TIME] NAME ARGS``; TIME is ``HH:MM:SS[.f]`` or
``@SECONDS`` (absolute simulated seconds; an event without one happens a
second after the previous).  Worker operations take ``by W`` (default: the
lease holder); external operations may name a request id (``commit open_pr
r2``; default: the oldest).  A fault is ``FAULT TRANSITION POINT``
(``docs/effects.md`` lists them).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sim.core.errors import ProtocolError, ScenarioError
from sim.core.expect import Expectation, dump_expect, parse_expect
from sim.core.files import Source
from sim.core.values import (
    MAX_NAME_CHARS,
    JsonObject,
    kind,
    name_from_path,
    name_problem,
    plain_problem,
    shown,
    text_problem,
)
from sim.core.workload import did_you_mean
from sim.families.effects.faults import FaultEvent, parse_fault
from sim.families.effects.knobs import FAMILY_NAME, TABLE
from sim.families.effects.workflow import SAGA_TRANSITIONS, Workflow, saga, version_2
from sim.families.effects.workflow_file import check_builtin_upgrade, dump_transition, parse_versions, parse_workflow

#: The family's former name, still accepted in files (``family = "runtime"``) and on the command line.
FAMILY_ALIAS = "runtime"

#: Operations and their argument shapes: T = transition, W = worker, R = optional request id.
WORKER_OPS = ("intent", "dispatch", "retry_changed", "timeout", "reconcile", "receipt", "compensate",
              "request_approval", "escalate", "abort")
EXTERNAL_OPS = ("commit", "respond", "lose_response", "lose_request", "duplicate_request")
TRANSITION_OPS = ("approve", "resolve", "fail", "compensation_fails", "unprovable", "foreign_object", "read_changes")
OTHER_OPS = ("accept", "lease", "lease_expire", "deliver", "duplicate", "crash", "upgrade", "close")
ALL_OPS = WORKER_OPS + EXTERNAL_OPS + TRANSITION_OPS + OTHER_OPS

KNOWN_KEYS = ("format", "family", "name", "description", "protocol", "task", "tenant", "workflow",
              "versions", "arguments", "next_number", "events", "faults", "recover", "expect", "invariant", "seed",
              "commit", "workload", "minimal", "cell", "lasso")
META_KEYS = ("invariant", "seed", "commit", "workload", "minimal", "cell", "lasso")

_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,200}$")
_CLOCK = re.compile(r"^([0-9]{1,2}):([0-5][0-9]):([0-5][0-9](?:\.[0-9]{1,9})?)$")
_SECONDS = re.compile(r"^[0-9]{1,20}(?:\.[0-9]{1,20})?(?:[eE][+-]?[0-9]{1,3})?$")
#: Script times lie below this many simulated seconds (docs/limits.md).
TIME_LIMIT_S = 1e15
#: Longest script event or fault line (a few words).
MAX_EVENT_CHARS = 4 * MAX_NAME_CHARS


@dataclass(frozen=True)
class ScriptOp:
    """One parsed event of a script."""

    time_s: float | None
    name: str
    transition: str | None = None
    worker: str | None = None
    successor: str | None = None
    request_id: str | None = None
    argument: str | None = None
    text: str = ""


@dataclass
class RuntimeScenario:
    """A runtime story: a script (``ops``) or a list of faults (``faults``, not None)."""

    name: str
    protocol: str | None
    expect: dict[str, Expectation]
    path: Path | None
    task: str = "task_1"
    tenant: str = "acme"
    workflow: Workflow = field(default_factory=saga)
    arguments: dict[str, JsonObject] = field(default_factory=dict)
    next_number: int = 1
    ops: list[ScriptOp] = field(default_factory=list)
    faults: list[FaultEvent] | None = None
    recover: bool = True
    description: str = ""
    meta: JsonObject = field(default_factory=dict)
    family: str = FAMILY_NAME

    @property
    def events(self) -> list[Any]:
        """The order the family replays: the faults, or the script's operations."""
        return list(self.faults) if self.faults is not None else list(self.ops)

    def with_events(self, faults) -> "RuntimeScenario":
        """The same task and workflow, run by the policy under these faults."""
        return RuntimeScenario(name=self.name, protocol=self.protocol, expect=dict(self.expect), path=self.path,
                               task=self.task, tenant=self.tenant, workflow=self.workflow, arguments=self.arguments,
                               next_number=self.next_number, ops=[], faults=list(faults), recover=True,
                               description=self.description, meta=dict(self.meta))


def parse_time(token: str) -> float | None:
    """``@SECONDS`` (plain decimal, below TIME_LIMIT_S) or ``HH:MM:SS[.f]``; None if neither."""
    if token.startswith("@"):
        if not _SECONDS.match(token[1:]):
            return None
        value = float(token[1:])
        return value if math.isfinite(value) and 0 <= value < TIME_LIMIT_S else None
    match = _CLOCK.match(token)
    if match:
        return int(match.group(1)) * 3600 + int(match.group(2)) * 60 + float(match.group(3))
    return None


def _transition(token: str, transitions: list[str]) -> str:
    if token not in transitions:
        raise ValueError(f"unknown transition {shown(token)}{did_you_mean(token, transitions)}; transitions: "
                         f"{', '.join(transitions)}")
    return token


def _worker(token: str) -> str:
    if not _NAME.match(token):
        raise ValueError(f"bad worker name {shown(token)}; a worker is named by letters, digits, _ . -")
    return token


def _request(token: str) -> str:
    if not _NAME.match(token):
        raise ValueError(f"bad request id {shown(token)}; a request id is such as r2")
    return token


def parse_event(text: str, transitions: list[str], task: str) -> ScriptOp:
    """Parse one event line; raise ValueError with what is wrong and what is allowed."""
    tokens = text.split()
    if not tokens:
        raise ValueError("empty event")
    time_s = parse_time(tokens[0])
    if time_s is not None or tokens[0].startswith("@"):
        if time_s is None and _SECONDS.match(tokens[0][1:]):
            raise ValueError(f"time {shown(tokens[0])} is past the limit of simulated time (10^15 s)")
        if time_s is None:
            raise ValueError(f"bad time {shown(tokens[0])}; write @SECONDS (a number of seconds) or HH:MM:SS")
        tokens = tokens[1:]
    if not tokens:
        raise ValueError("a time with no event")
    name, args = tokens[0], tokens[1:]
    if name not in ALL_OPS:
        raise ValueError(f"unknown event {shown(name)}{did_you_mean(name, ALL_OPS)}; events: {', '.join(ALL_OPS)}")

    def transition(token: str) -> str:
        return _transition(token, transitions)

    def arity(low: int, high: int) -> None:
        if not low <= len(args) <= high:
            raise ValueError(f"{name!r} takes {low}{'' if low == high else f' to {high}'} argument(s), got {len(args)}")

    if name in WORKER_OPS:
        if len(args) == 3 and args[1] == "by":
            return ScriptOp(time_s, name, transition(args[0]), worker=_worker(args[2]), text=text)
        arity(1, 1)
        return ScriptOp(time_s, name, transition(args[0]), text=text)
    if name in EXTERNAL_OPS:
        arity(1, 2)
        return ScriptOp(time_s, name, transition(args[0]), request_id=_request(args[1]) if len(args) == 2 else None,
                        text=text)
    if name in TRANSITION_OPS:
        arity(1, 1)
        return ScriptOp(time_s, name, transition(args[0]), text=text)
    if name == "accept":
        arity(1, 1)
        if args[0] != task:
            raise ValueError(f"this scenario's task is {task!r}, not {shown(args[0])}")
        return ScriptOp(time_s, name, argument=args[0], text=text)
    if name in ("lease", "crash"):
        arity(1, 1)
        return ScriptOp(time_s, name, worker=_worker(args[0]), text=text)
    if name == "lease_expire":
        if len(args) != 3 or args[1] != "->":
            raise ValueError("write 'lease_expire W -> W2'")
        return ScriptOp(time_s, name, worker=_worker(args[0]), successor=_worker(args[2]), text=text)
    if name == "deliver":
        arity(0, 1)
        return ScriptOp(time_s, name, worker=_worker(args[0]) if args else None, text=text)
    if name == "close":
        if len(args) == 2 and args[0] == "by":
            return ScriptOp(time_s, name, worker=_worker(args[1]), text=text)
        arity(0, 0)
        return ScriptOp(time_s, name, text=text)
    if name == "upgrade":
        arity(1, 1)
        if args[0] != "2":
            raise ValueError("only 'upgrade 2' is modelled (version 1 -> 2)")
        return ScriptOp(time_s, name, argument=args[0], text=text)
    arity(0, 0)  # duplicate
    return ScriptOp(time_s, name, text=text)


def load_runtime_scenario(data: dict, source: Source) -> RuntimeScenario:
    """Validate a parsed effects scenario; every mistake raises ScenarioError with ``file:line``."""
    for key in data:
        if key not in KNOWN_KEYS:
            raise source.error(f"unknown key {shown(key)}{did_you_mean(key, KNOWN_KEYS)}; effects scenario keys: "
                               f"{', '.join(KNOWN_KEYS)}", key)
    if data.get("family", FAMILY_NAME) not in (FAMILY_NAME, FAMILY_ALIAS):
        raise source.error(f"family must be {FAMILY_NAME!r} here, not {shown(data.get('family'))}", "family")
    base = _common(data, source)
    if "events" in data and "faults" in data:
        raise source.error("give either events (a script) or faults (run by the policy), not both", "faults")
    if "faults" in data:
        base.faults = _faults(data["faults"], base.workflow, source)
        if "recover" in data:
            raise source.error("recover belongs to scripts; a fault list always runs to the end", "recover")
        return base
    events = data.get("events")
    if not isinstance(events, list) or not events or not all(isinstance(e, str) for e in events):
        raise source.error(f"events must be a non-empty list of strings (or give faults instead), not "
                           f"{_what(events)}", "events")
    transitions = base.workflow.names() + [n for n in version_2(base.workflow).names()
                                           if n not in base.workflow.names()]
    clock = None
    for event in events:
        try:
            op = _script_event(event, transitions, base.task)
        except ValueError as error:
            raise source.error(f"event {shown(event)}: {error}", f'"{event}"', "events") from None
        if op.time_s is not None and clock is not None and op.time_s < clock:
            raise source.error(f"event {shown(event)} goes back in time (after {clock:g} s)", f'"{event}"', "events")
        clock = op.time_s if op.time_s is not None else (0.0 if clock is None else clock + 1.0)
        base.ops.append(op)
    recover = data.get("recover", True)
    if not isinstance(recover, bool):
        raise source.error(f"recover must be true or false, not {_what(recover)}", "recover")
    base.recover = recover
    return base


def _what(value: Any) -> str:
    return f"{kind(value)} {shown(value)}"


def _script_event(text: str, transitions: list[str], task: str) -> ScriptOp:
    """One script line, refused when it holds control characters or is longer than a few words."""
    problem = text_problem(text, "the event")
    if problem:
        raise ValueError(problem)
    if len(text) > MAX_EVENT_CHARS:
        raise ValueError(f"longer than {MAX_EVENT_CHARS} characters; an event is a few words")
    return parse_event(text, transitions, task)


def _common(data: dict, source: Source) -> RuntimeScenario:
    """Everything but the order: name, task, workflow, arguments, protocol, [expect]."""
    name = data.get("name", name_from_path(source.path))
    problem = name_problem(name, "name", spaces=True)
    if problem:
        raise source.error(problem, "name")
    description = data.get("description", "")
    problem = text_problem(description, "description")
    if problem:
        raise source.error(problem, "description")
    task = data.get("task", "task_1")
    if not isinstance(task, str) or not _NAME.match(task):
        raise source.error(f"task must be a simple name (letters, digits, _ . -), not {_what(task)}", "task")
    tenant = data.get("tenant", "acme")
    if not isinstance(tenant, str) or not _NAME.match(tenant):
        raise source.error(f"tenant must be a simple name (letters, digits, _ . -), not {_what(tenant)}", "tenant")
    workflow = parse_workflow(data.get("workflow"), source)
    if "versions" in data:
        workflow = parse_versions(data["versions"], workflow, source)
    check_builtin_upgrade(workflow, source)
    protocol = data.get("protocol")
    if protocol is not None and not isinstance(protocol, str):
        raise source.error(f"protocol must be a string such as \"keyed-reconcile\", not {_what(protocol)}",
                           "protocol")
    arguments = _arguments(data.get("arguments", {}), workflow, source)
    next_number = data.get("next_number", 1)
    if not isinstance(next_number, int) or isinstance(next_number, bool) or not 1 <= next_number <= 10**9:
        raise source.error("next_number must be a whole number from 1 to 1000000000", "next_number")
    from sim.families.effects.checks import SAFETY_INVARIANTS

    names = workflow.names() + [n for n in version_2(workflow).names() if n not in workflow.names()]
    expect = parse_expect(data.get("expect", {}), names, SAFETY_INVARIANTS, source)
    for label in ([protocol] if protocol is not None else []) + list(expect):
        try:
            TABLE.parse(label)
        except ProtocolError as error:
            raise ScenarioError(str(error), source.where_key(label) if label != protocol
                                else source.where("protocol")) from None
    meta = {k: data[k] for k in META_KEYS if k in data}
    return RuntimeScenario(
        name=name, protocol=protocol, expect=dict(expect), path=Path(source.path), task=task, tenant=tenant,
        workflow=workflow, arguments=arguments, next_number=next_number, description=description, meta=meta,
    )


def _arguments(raw: Any, workflow: Workflow, source: Source) -> dict[str, JsonObject]:
    """``[arguments.T]``: per transition of the workflow, a table of plain values (they enter the
    transition's fingerprint as canonical JSON)."""
    if not isinstance(raw, dict) or not all(isinstance(v, dict) for v in raw.values()):
        raise source.error("arguments must be a table of tables, one per transition ([arguments.open_pr])",
                           "arguments")
    for transition, values in raw.items():
        if workflow.get(transition) is None:
            raise source.error(f"arguments for unknown transition {shown(transition)}"
                               f"{did_you_mean(transition, workflow.names())}; transitions: "
                               f"{', '.join(workflow.names())}", transition, "arguments")
        for key, value in values.items():
            problem = plain_problem(value)
            if problem:
                raise source.error(f"[arguments.{transition}] {key}: {problem}", key, "arguments")
    return raw


def _faults(raw: Any, workflow: Workflow, source: Source) -> list[FaultEvent]:
    if not isinstance(raw, list):
        raise source.error(f"faults must be a list of strings 'FAULT TRANSITION POINT', not {_what(raw)}", "faults")
    out = []
    for item in raw:
        needle = f'"{item}"' if isinstance(item, str) else "faults"
        problem = (text_problem(item, "a fault") if isinstance(item, str)
                   else f"a fault must be a string, not {_what(item)}")
        if problem is None and len(item) > MAX_EVENT_CHARS:
            problem = f"longer than {MAX_EVENT_CHARS} characters; a fault is three words"
        if problem:
            raise source.error(f"fault {shown(item)}: {problem}", needle, "faults")
        try:
            out.append(parse_fault(item, workflow))
        except ValueError as error:
            raise source.error(f"fault {shown(item)}: {error}", needle, "faults") from None
    return out


def dump_scenario(scenario: RuntimeScenario) -> JsonObject:
    """The TOML table of a scenario (for export); always writes ``format`` and ``family``."""
    out: JsonObject = {"format": 1, "family": FAMILY_NAME, "name": scenario.name}
    if scenario.description:
        out["description"] = scenario.description
    if scenario.protocol:
        out["protocol"] = scenario.protocol
    for key in META_KEYS:
        if key in scenario.meta:
            out[key] = scenario.meta[key]
    out["task"] = scenario.task
    if scenario.tenant != "acme":
        out["tenant"] = scenario.tenant
    workflow = scenario.workflow
    saga_names = [t.name for t in SAGA_TRANSITIONS]
    if workflow.spec is not None:
        out["workflow"] = workflow.spec
    elif workflow.name.startswith("generic:"):
        out["workflow"] = workflow.name
    elif workflow.names() == saga_names:
        out["workflow"] = "saga"
    elif all(t in SAGA_TRANSITIONS for t in workflow.transitions):
        out["workflow"] = workflow.names()
    else:  # a workflow built in code: its transitions as tables, every field they declare
        out["workflow"] = [dump_transition(t) for t in workflow.transitions]
    if workflow.declared_upgrade is not None:
        out["versions"] = {"2": workflow.declared_upgrade.spec}
    if scenario.next_number != 1:
        out["next_number"] = scenario.next_number
    if scenario.faults is not None:
        out["faults"] = [str(f) for f in scenario.faults]
    else:
        out["events"] = [op.text for op in scenario.ops]
        out["recover"] = scenario.recover
    if scenario.arguments:
        out["arguments"] = {k: dict(v) for k, v in scenario.arguments.items()}
    if scenario.expect:
        out["expect"] = dump_expect(scenario.expect)
    return out


def scheduled_times(ops: list[ScriptOp]) -> list[float]:
    """The simulated time of each event: its own, or one second after the previous."""
    times: list[float] = []
    for op in ops:
        if op.time_s is not None:
            times.append(op.time_s)
        else:
            times.append(0.0 if not times else times[-1] + 1.0)
    return times
