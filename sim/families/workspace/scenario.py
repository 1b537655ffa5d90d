"""Scripted workspace scenarios: the data, the event vocabulary, the loader.

A scripted scenario and an exported counterexample are the same kind of
file, so a counterexample replays with no seed.  Loading validates
everything up front and reports ``file:line: what is wrong; what is
allowed`` (see ``docs/formats.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sim.core.errors import ProtocolError, ScenarioError
from sim.core.expect import Expectation, dump_expect, parse_expect
from sim.core.files import Source
from sim.core.values import JsonObject, name_from_path, name_problem, shown, text_problem
from sim.core.values import kind as kind_of
from sim.core.workload import did_you_mean
from sim.families.workspace.content import WHOLE_FILE_HUNK, Hunks
from sim.families.workspace.knobs import TABLE

#: The workspace event vocabulary (docs/workspace.md).
EVENT_NAMES = (
    "plan",
    "replan",
    "dispatch",
    "deliver",
    "ack",
    "lose_ack",
    "preempt",
    "retry",
    "duplicate",
    "human_edit",
    "tests_fail",
    "settle",
)
#: Events the model records that no order names: the client's re-plan after a rejection, a dropped journal key.
HISTORY_ONLY_EVENTS = ("rebase", "journal_remove")
PREEMPT_POINTS = ("before_write", "after_write", "after_journal")
STEP_EVENTS = ("dispatch", "deliver", "ack", "lose_ack", "retry", "duplicate")


@dataclass(frozen=True)
class Action:
    """One event of a scripted order, parsed.  ``str(action)`` gives it back."""

    kind: str
    step: str | None = None
    point: str | None = None  # preempt point, or "stale" for replan
    path: str | None = None
    hunk: str | None = None
    content: str | None = None

    def __str__(self) -> str:
        if self.kind in STEP_EVENTS:
            return f"{self.kind} {self.step}"
        if self.kind in ("preempt", "replan"):
            return f"{self.kind} {self.point}" if self.point else self.kind
        if self.kind == "human_edit":
            target = f"{self.path}#{self.hunk}" if self.hunk else self.path
            return f"human_edit {target} {self.content}" if self.content is not None else f"human_edit {target}"
        if self.kind == "tests_fail":
            return f"tests_fail {self.path}"
        return self.kind


@dataclass(frozen=True)
class StepSpec:
    """A planned step: which file, which hunks, what they become."""

    step_id: str
    path: str
    patch: Hunks


@dataclass
class WorkspaceScenario:
    """Everything needed to replay an event order on the workspace family."""

    name: str
    files: dict[str, Hunks]
    plan: list[StepSpec]
    events: list[Action]
    replan: list[StepSpec] = field(default_factory=list)
    description: str = ""
    protocol: str | None = None
    expect: dict[str, Expectation] = field(default_factory=dict)
    path: Path | None = None
    meta: JsonObject = field(default_factory=dict)  # invariant, seed, commit of exports
    family: str = "workspace"

    def step_ids(self) -> list[str]:
        return [s.step_id for s in self.plan]

    def with_events(self, events: list[Action]) -> "WorkspaceScenario":
        return WorkspaceScenario(
            self.name, self.files, self.plan, list(events), self.replan,
            self.description, self.protocol, self.expect, self.path, dict(self.meta),
        )


def parse_action(text: str, files: dict[str, Hunks], step_ids: list[str], place: str = "events") -> Action:
    """Parse one event string; raise ScenarioError naming what is allowed."""
    problem = text_problem(text, "an event") if isinstance(text, str) else (
        f"an event must be a string, not {kind_of(text)} {shown(text)}")
    if problem:
        raise ScenarioError(f"{place}: {problem}")
    words = text.split()
    if not words:
        raise ScenarioError(f"{place}: empty event")
    kind, args = words[0], words[1:]
    if kind not in EVENT_NAMES:
        raise ScenarioError(f"{place}: unknown event {shown(kind)}{did_you_mean(kind, EVENT_NAMES)}; "
                            f"events: {', '.join(EVENT_NAMES)}")
    if kind in ("plan", "settle"):
        _no_args(kind, args, place)
        return Action(kind)
    if kind == "tests_fail":
        if len(args) != 1 or args[0] not in files:
            given = shown(" ".join(args)) if args else "nothing"
            raise ScenarioError(f"{place}: 'tests_fail' takes one path (one of {', '.join(files)}), not {given}"
                                f"{did_you_mean(args[0], files) if len(args) == 1 else ''}")
        return Action("tests_fail", path=args[0])
    if kind == "replan":
        if not args:
            return Action("replan")
        if args == ["stale"]:
            return Action("replan", point="stale")
        raise ScenarioError(f"{place}: 'replan' takes nothing or 'stale', not {shown(' '.join(args))}")
    if kind == "preempt":
        if not args:
            return Action("preempt")
        if len(args) == 1 and args[0] in PREEMPT_POINTS:
            return Action("preempt", point=args[0])
        raise ScenarioError(f"{place}: 'preempt' takes nothing or one of {', '.join(PREEMPT_POINTS)}, not "
                            f"{shown(' '.join(args))}")
    if kind in STEP_EVENTS:
        if len(args) != 1:
            raise ScenarioError(f"{place}: {kind!r} takes one step id (one of {', '.join(step_ids)})")
        if args[0] not in step_ids:
            raise ScenarioError(f"{place}: unknown step {shown(args[0])}{did_you_mean(args[0], step_ids)}; "
                                f"steps: {', '.join(step_ids)}")
        return Action(kind, step=args[0])
    # human_edit PATH[#HUNK] [CONTENT]
    if not args:
        raise ScenarioError(f"{place}: 'human_edit' needs a path (one of {', '.join(files)})")
    target = args[0]
    path, _, hunk = target.partition("#")
    if path not in files:
        raise ScenarioError(f"{place}: unknown path {shown(path)}{did_you_mean(path, files)}; files: "
                            f"{', '.join(files)}")
    if hunk and hunk not in files[path]:
        raise ScenarioError(f"{place}: {path} has no hunk {shown(hunk)}; hunks: {', '.join(files[path])}")
    content = " ".join(args[1:]) if len(args) > 1 else None
    return Action("human_edit", path=path, hunk=hunk or None, content=content)


def _no_args(kind: str, args: list[str], place: str) -> None:
    if args:
        raise ScenarioError(f"{place}: {kind!r} takes no arguments, got {shown(' '.join(args))}")


def _path_problem(path: Any, what: str = "a file path") -> str | None:
    """A path is a name an event can spell: no white space, no '#' (``human_edit PATH#HUNK``)."""
    problem = name_problem(path, what)
    if problem is None and "#" in path:
        problem = f"{what} {shown(path)} holds '#', which separates a path from a hunk in events"
    return problem


def _content(value: Any, what: str) -> Hunks | None:
    """A file's content or a patch: a string (the whole file) or a non-empty table of hunk = string."""
    if isinstance(value, str):
        return {WHOLE_FILE_HUNK: value}
    if isinstance(value, dict) and value and all(isinstance(v, str) for v in value.values()):
        for hunk in value:
            problem = _path_problem(hunk, "a hunk name")
            if problem:
                raise ScenarioError(f"{what}: {problem}")
        return dict(value)
    return None


def _files(raw: Any, loc) -> dict[str, Hunks]:
    if not isinstance(raw, dict) or not raw:
        raise ScenarioError("'files' must be a table of path = content (a string or a table of hunks), not "
                            f"{kind_of(raw)}", loc("files"))
    files: dict[str, Hunks] = {}
    for path, content in raw.items():
        problem = _path_problem(path)
        if problem:
            raise ScenarioError(f"[files]: {problem}", loc(path))
        try:
            hunks = _content(content, f"file {path!r}")
        except ScenarioError as error:
            raise ScenarioError(error.message, loc(path)) from None
        if hunks is None:
            raise ScenarioError(f"file {path!r}: content must be a string or a table of hunk = string, not "
                                f"{kind_of(content)} {shown(content)}", loc(path))
        files[path] = hunks
    return files


def _step_loc(loc, key: str):
    """Locate a step by its ``id = "..."`` after the ``key`` line (not by any mention of it)."""
    return lambda step_id: loc(f'"{step_id}"', key)


def _steps(raw: Any, key: str, files: dict[str, Hunks], loc_any) -> list[StepSpec]:
    loc = _step_loc(loc_any, key)
    if not isinstance(raw, list):
        raise ScenarioError(f"{key!r} must be a list of {{ id, path, patch }} tables, not {kind_of(raw)}", loc(key))
    steps: list[StepSpec] = []
    seen: set[str] = set()
    for position, item in enumerate(raw):
        if not isinstance(item, dict):
            raise ScenarioError(f"{key}[{position}] must be a table {{ id, path, patch }}, not {kind_of(item)}",
                                loc(key))
        unknown = sorted(set(item) - {"id", "path", "patch"})
        missing = [k for k in ("id", "path", "patch") if k not in item]
        if unknown or missing:
            what = (f"unknown key(s) {', '.join(shown(k) for k in unknown[:5])}"
                    f"{did_you_mean(unknown[0], ('id', 'path', 'patch'))}" if unknown
                    else f"missing {', '.join(missing)}")
            needle = item.get("id") if isinstance(item.get("id"), str) else key
            raise ScenarioError(f"{key}[{position}]: {what}; a step has id, path, patch", loc(needle))
        step_id, path, patch = item["id"], item["path"], item["patch"]
        problem = name_problem(step_id, "id")
        if problem:
            raise ScenarioError(f"{key}[{position}]: {problem}; an id is a word such as s1", loc(key))
        if step_id in seen:
            raise ScenarioError(f"{key}: step id {step_id!r} appears twice", loc(step_id))
        seen.add(step_id)
        if not isinstance(path, str) or path not in files:
            shown_path = shown(path) if isinstance(path, str) else f"{kind_of(path)} {shown(path)}"
            guess = did_you_mean(path, files) if isinstance(path, str) else ""
            raise ScenarioError(f"step {step_id!r}: unknown path {shown_path}{guess}; path is one of the files: "
                                f"{', '.join(files)}", loc(step_id))
        try:
            patch = _content(patch, f"step {step_id!r}")
        except ScenarioError as error:
            raise ScenarioError(error.message, loc(step_id)) from None
        if patch is None:
            raise ScenarioError(f"step {step_id!r}: patch must be a string or a table of hunk = string, not "
                                f"{kind_of(item['patch'])} {shown(item['patch'])}", loc(step_id))
        for hunk in patch:
            if hunk not in files[path]:
                raise ScenarioError(
                    f"step {step_id!r}: {path} has no hunk {shown(hunk)}; hunks: {', '.join(files[path])}", loc(step_id)
                )
        steps.append(StepSpec(step_id, path, dict(patch)))
    return steps


TOP_KEYS = (
    "format", "family", "name", "description", "protocol", "files", "plan", "replan", "events",
    "expect", "invariant", "seed", "commit", "workload", "minimal", "lasso",
)
META_KEYS = ("invariant", "seed", "commit", "workload", "minimal", "lasso")


def _events(raw_events: list[Any], files: dict[str, Hunks], ids: list[str], source: Source) -> list[Action]:
    """The order's events, parsed; a long order repeats a few events, and each distinct text is parsed once
    (an Action is immutable, so its repeats share it)."""
    events = []
    parsed: dict[str, Action] = {}
    for position, raw in enumerate(raw_events):
        action = parsed.get(raw) if type(raw) is str else None
        if action is None:
            try:
                action = parse_action(raw, files, ids, f"event {position + 1}")
            except ScenarioError as error:
                needle = raw if isinstance(raw, str) else "events"
                place = source.where(f'"{needle}"', "events")
                if place == source.path:
                    place = source.where(f"'{needle}'", "events")
                raise ScenarioError(error.message, place) from None
            if type(raw) is str:
                parsed[raw] = action
        events.append(action)
    return events


def build_scenario(data: JsonObject, source: Source | str = "<scenario>") -> WorkspaceScenario:
    """Validate a parsed workspace scenario table and build the scenario."""
    if not isinstance(source, Source):
        source = Source(str(source))

    def loc(needle: str, after: str | None = None) -> str:
        if after is not None:
            for candidate in (f"id = {needle}", needle, needle.replace('"', "'")):
                if source.line_of(candidate, after):
                    return source.where(candidate, after)
            return source.path
        return source.where(needle)

    for key in data:
        if key not in TOP_KEYS:
            raise ScenarioError(f"unknown key {shown(key)}{did_you_mean(key, TOP_KEYS)}; keys: {', '.join(TOP_KEYS)}",
                                loc(key))
    for required in ("files", "plan", "events"):
        if required not in data:
            raise ScenarioError(f"missing required key {required!r}", source.path)
    files = _files(data["files"], loc)
    plan = _steps(data["plan"], "plan", files, loc)
    if not plan:
        raise ScenarioError("'plan' needs at least one step", loc("plan"))
    replan = _steps(data.get("replan", []), "replan", files, loc)
    ids = [s.step_id for s in plan]
    for step in replan:
        if step.step_id not in ids:
            raise ScenarioError(f"replan step {step.step_id!r} is not a step of the plan ({', '.join(ids)})",
                                loc("replan"))
    raw_events = data["events"]
    if not isinstance(raw_events, list):
        raise ScenarioError(f"'events' must be a list of strings, not {kind_of(raw_events)}", loc("events"))
    events = _events(raw_events, files, ids, source)
    name = data.get("name", name_from_path(source.path))
    problem = name_problem(name, "'name'", spaces=True)
    if problem:
        raise ScenarioError(problem, loc("name"))
    assert isinstance(name, str), "name_problem passed a name that is not a string"
    description = data.get("description", "")
    problem = text_problem(description, "'description'")
    if problem:
        raise ScenarioError(problem, loc("description"))
    assert isinstance(description, str), "text_problem passed a description that is not a string"
    protocol = data.get("protocol")
    if protocol is not None and not isinstance(protocol, str):
        raise ScenarioError(f"'protocol' must be a string such as \"step-dedupe\", not {kind_of(protocol)}",
                            loc("protocol"))
    from sim.families.workspace.checks import SAFETY_INVARIANTS

    expect = parse_expect(data.get("expect", {}), ids, SAFETY_INVARIANTS, source)
    for label in [protocol, *expect] if protocol is not None else list(expect):
        try:
            TABLE.parse(label)
        except ProtocolError as error:
            raise ScenarioError(str(error), loc("protocol") if label == protocol else source.where_key(label)) from None
    meta = {k: data[k] for k in META_KEYS if k in data}
    return WorkspaceScenario(
        name=name, files=files, plan=plan, events=events, replan=replan,
        description=description, protocol=protocol, expect=dict(expect),
        path=Path(source.path), meta=meta,
    )


def scenario_to_dict(scenario: WorkspaceScenario) -> JsonObject:
    """The TOML table of a scenario (for export); always writes ``format``."""

    def hunks_out(hunks: Hunks):
        return hunks[WHOLE_FILE_HUNK] if list(hunks) == [WHOLE_FILE_HUNK] else dict(hunks)

    out: JsonObject = {"format": 1, "family": "workspace", "name": scenario.name}
    if scenario.description:
        out["description"] = scenario.description
    if scenario.protocol:
        out["protocol"] = scenario.protocol
    for key in META_KEYS:
        if key in scenario.meta:
            out[key] = scenario.meta[key]
    out["files"] = {p: hunks_out(h) for p, h in scenario.files.items()}
    out["plan"] = [{"id": s.step_id, "path": s.path, "patch": hunks_out(s.patch)} for s in scenario.plan]
    if scenario.replan:
        out["replan"] = [{"id": s.step_id, "path": s.path, "patch": hunks_out(s.patch)} for s in scenario.replan]
    out["events"] = [str(e) for e in scenario.events]
    if scenario.expect:
        out["expect"] = dump_expect(scenario.expect)
    return out
