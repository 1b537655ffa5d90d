"""Runtime scenario files: scripted event orders over one task.

A runtime scenario is a TOML file with ``family = "runtime"``::

    format = 1
    family = "runtime"
    name = "pr_lost_response"
    protocol = "keyed-fingerprint-reconcile"   # optional default
    task = "task_42"                            # optional, default "task_1"
    workflow = ["create_branch", "open_pr"]     # "saga" (default), "generic:N" or saga names
    next_number = 812                           # optional: the external system's next object number
    events = [ "09:00:00 accept task_42", "lease w1", "deliver", "intent open_pr", ... ]
    recover = true                              # optional: after the script, the system heals

    [arguments.open_pr]                          # optional: a transition's canonical arguments
    head = "7ac1e05"

    [expect]                                     # optional: last transition verdict per protocol
    keyed-reconcile = "done:reconciled"

Each event is ``[TIME] NAME ARGS``; TIME is ``HH:MM:SS[.f]`` or ``@SECONDS``
(absolute simulated seconds; an event without one happens a second after
the previous).  Worker operations take ``by W`` (default: the lease holder);
external operations may name a request id (``commit open_pr r2``; default:
the oldest).  Exported counterexamples are this same format.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sim.errors import ScenarioError
from sim.protocol import parse_protocol
from sim.runtime.protocol import FAMILY_NAME
from sim.runtime.workflow import Workflow, parse_workflow, version_2
from sim.tomlfile import where

#: Operations and their argument shapes: T = transition, W = worker, R = optional request id.
WORKER_OPS = ("intent", "dispatch", "retry_changed", "timeout", "reconcile", "receipt", "compensate",
              "request_approval", "escalate", "abort")
EXTERNAL_OPS = ("commit", "respond", "lose_response", "lose_request", "duplicate_request")
TRANSITION_OPS = ("approve", "resolve", "fail", "compensation_fails", "unprovable", "foreign_object")
OTHER_OPS = ("accept", "lease", "lease_expire", "deliver", "duplicate", "crash", "upgrade", "close")
ALL_OPS = WORKER_OPS + EXTERNAL_OPS + TRANSITION_OPS + OTHER_OPS

KNOWN_KEYS = ("format", "family", "name", "description", "protocol", "task", "tenant", "workflow",
              "arguments", "next_number", "events", "recover", "expect", "invariant", "seed", "commit",
              "cell", "schedule")

_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")
_CLOCK = re.compile(r"^(\d{1,2}):(\d{2}):(\d{2}(?:\.\d+)?)$")


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
    name: str
    protocol: str | None
    expect: dict[str, str]
    path: Path | None
    task: str = "task_1"
    tenant: str = "acme"
    workflow: Workflow = field(default_factory=lambda: parse_workflow(None, ""))
    arguments: dict[str, dict[str, Any]] = field(default_factory=dict)
    next_number: int = 1
    ops: list[ScriptOp] = field(default_factory=list)
    recover: bool = True
    description: str = ""
    family: str = FAMILY_NAME


def parse_time(token: str) -> float | None:
    if token.startswith("@"):
        try:
            return float(token[1:])
        except ValueError:
            return None
    match = _CLOCK.match(token)
    if match:
        return int(match.group(1)) * 3600 + int(match.group(2)) * 60 + float(match.group(3))
    return None


def parse_event(text: str, transitions: list[str], task: str) -> ScriptOp:
    """Parse one event line; raise ValueError with what is wrong and what is allowed."""
    tokens = text.split()
    if not tokens:
        raise ValueError("empty event")
    time_s = parse_time(tokens[0])
    if time_s is not None or tokens[0].startswith("@"):
        if time_s is None:
            raise ValueError(f"bad time {tokens[0]!r}; write @SECONDS or HH:MM:SS")
        tokens = tokens[1:]
    if not tokens:
        raise ValueError("a time with no event")
    name, args = tokens[0], tokens[1:]
    if name not in ALL_OPS:
        raise ValueError(f"unknown event {name!r}; events: {', '.join(ALL_OPS)}")

    def transition(token: str) -> str:
        if token not in transitions:
            raise ValueError(f"unknown transition {token!r}; transitions: {', '.join(transitions)}")
        return token

    def worker_name(token: str) -> str:
        if not _NAME.match(token):
            raise ValueError(f"bad worker name {token!r}")
        return token

    def arity(low: int, high: int) -> None:
        if not low <= len(args) <= high:
            raise ValueError(f"{name!r} takes {low}{'' if low == high else f' to {high}'} argument(s), got {len(args)}")

    if name in WORKER_OPS:
        if len(args) == 3 and args[1] == "by":
            return ScriptOp(time_s, name, transition(args[0]), worker=worker_name(args[2]), text=text)
        arity(1, 1)
        return ScriptOp(time_s, name, transition(args[0]), text=text)
    if name in EXTERNAL_OPS:
        arity(1, 2)
        return ScriptOp(time_s, name, transition(args[0]), request_id=args[1] if len(args) == 2 else None, text=text)
    if name in TRANSITION_OPS:
        arity(1, 1)
        return ScriptOp(time_s, name, transition(args[0]), text=text)
    if name == "accept":
        arity(1, 1)
        if args[0] != task:
            raise ValueError(f"this scenario's task is {task!r}, not {args[0]!r}")
        return ScriptOp(time_s, name, argument=args[0], text=text)
    if name in ("lease", "crash"):
        arity(1, 1)
        return ScriptOp(time_s, name, worker=worker_name(args[0]), text=text)
    if name == "lease_expire":
        if len(args) != 3 or args[1] != "->":
            raise ValueError("write 'lease_expire W -> W2'")
        return ScriptOp(time_s, name, worker=worker_name(args[0]), successor=worker_name(args[2]), text=text)
    if name == "deliver":
        arity(0, 1)
        return ScriptOp(time_s, name, worker=worker_name(args[0]) if args else None, text=text)
    if name == "close":
        if len(args) == 2 and args[0] == "by":
            return ScriptOp(time_s, name, worker=worker_name(args[1]), text=text)
        arity(0, 0)
        return ScriptOp(time_s, name, text=text)
    if name == "upgrade":
        arity(1, 1)
        if args[0] != "2":
            raise ValueError("only 'upgrade 2' is modelled (version 1 -> 2)")
        return ScriptOp(time_s, name, argument=args[0], text=text)
    arity(0, 0)  # duplicate
    return ScriptOp(time_s, name, text=text)


def load_runtime_scenario(path: Path, data: dict, text: str) -> RuntimeScenario:
    """Validate a runtime scenario read by :func:`sim.tomlfile.read_toml`.

    Every mistake raises :class:`ScenarioError` with ``file:line`` and what is allowed.
    """
    path = Path(path)
    for key in data:
        if key not in KNOWN_KEYS:
            raise ScenarioError(f"unknown key {key!r}; runtime scenario keys: {', '.join(KNOWN_KEYS)}",
                                where(path, text, key))
    if data.get("family", FAMILY_NAME) != FAMILY_NAME:
        raise ScenarioError(f"family must be {FAMILY_NAME!r} here", where(path, text, "family"))
    name = data.get("name", path.stem)
    task = data.get("task", "task_1")
    if not isinstance(task, str) or not _NAME.match(task):
        raise ScenarioError(f"task must be a simple name, not {task!r}", where(path, text, "task"))
    workflow = parse_workflow(data.get("workflow"), where(path, text, "workflow"))
    protocol = data.get("protocol")
    if protocol is not None:
        try:
            parse_protocol(str(protocol), FAMILY_NAME)
        except Exception as error:  # ProtocolError: re-raise with the file position
            raise ScenarioError(str(error), where(path, text, "protocol")) from None
    arguments = data.get("arguments", {})
    if not isinstance(arguments, dict) or not all(isinstance(v, dict) for v in arguments.values()):
        raise ScenarioError("arguments must be a table of tables, one per transition", where(path, text, "arguments"))
    for transition in arguments:
        if workflow.get(transition) is None:
            raise ScenarioError(f"arguments for unknown transition {transition!r}; transitions: "
                                f"{', '.join(workflow.names())}", where(path, text, transition, "arguments"))
    next_number = data.get("next_number", 1)
    if not isinstance(next_number, int) or isinstance(next_number, bool) or next_number < 1:
        raise ScenarioError("next_number must be a positive whole number", where(path, text, "next_number"))
    events = data.get("events")
    if not isinstance(events, list) or not events or not all(isinstance(e, str) for e in events):
        raise ScenarioError("events must be a non-empty list of strings", where(path, text, "events"))
    transitions = workflow.names() + [n for n in version_2(workflow).names() if n not in workflow.names()]
    ops: list[ScriptOp] = []
    clock = None
    for event in events:
        position = where(path, text, f'"{event}"', "events")
        try:
            op = parse_event(event, transitions, task)
        except ValueError as error:
            raise ScenarioError(f"event {event!r}: {error}", position) from None
        if op.time_s is not None and clock is not None and op.time_s < clock:
            raise ScenarioError(f"event {event!r} goes back in time (after {clock:g} s)", position)
        clock = op.time_s if op.time_s is not None else (0.0 if clock is None else clock + 1.0)
        ops.append(op)
    recover = data.get("recover", True)
    if not isinstance(recover, bool):
        raise ScenarioError("recover must be true or false", where(path, text, "recover"))
    expect = data.get("expect", {})
    if not isinstance(expect, dict) or not all(isinstance(v, str) for v in expect.values()):
        raise ScenarioError("[expect] maps protocol labels to verdict strings", where(path, text, "[expect]"))
    for label in expect:
        try:
            parse_protocol(label, FAMILY_NAME)
        except Exception as error:
            raise ScenarioError(f"[expect] {error}", where(path, text, label, "[expect]")) from None
    return RuntimeScenario(
        name=str(name), protocol=None if protocol is None else str(protocol), expect=dict(expect), path=path,
        task=task, tenant=str(data.get("tenant", "acme")), workflow=workflow, arguments=arguments,
        next_number=next_number, ops=ops, recover=recover, description=str(data.get("description", "")),
    )


def scheduled_times(ops: list[ScriptOp]) -> list[float]:
    """The simulated time of each event: its own, or one second after the previous."""
    times: list[float] = []
    for op in ops:
        if op.time_s is not None:
            times.append(op.time_s)
        else:
            times.append(0.0 if not times else times[-1] + 1.0)
    return times
