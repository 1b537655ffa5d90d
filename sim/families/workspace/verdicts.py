"""The seed's section-10 verdict table ("reject, replay, or compensate"), computed.

Each row of the seed's table is an event order with the verdict the seed
calls correct.  Here each row is one scripted scenario, replayed under every
preset and under one design with the platform's mechanisms on
(:data:`PLATFORM`); a cell shows what happened to the row's step and whether
that is the seed's verdict, and a cell that differs says why.  Nothing in a
cell is typed in: it is read from the replay's history.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from sim.core.history import History
from sim.core.result import run_scenario
from sim.families.workspace.scenario import build_scenario

#: The design the last column replays: every mechanism the seed's verdicts ask for, on.
PLATFORM = "step-dedupe,rev_scope=file,on_reject=replan,checkpoint=per_step,overlap_check=on,pipeline=on"
PRESETS = ("none", "plan", "step", "step-dedupe")
FILES = {"app.py": {"handler": "h0", "helpers": "x0"}}
TWO_STEPS = [{"id": "s1", "path": "app.py", "patch": {"handler": "h1"}},
             {"id": "s2", "path": "app.py", "patch": {"helpers": "x1"}}]
SIBLINGS = [{"id": "s1", "path": "app.py", "patch": {"handler": "h1"}},
            {"id": "s2", "path": "app.py", "patch": {"handler": "h2"}}]


@dataclass(frozen=True)
class Row:
    name: str
    order: str  # the seed's "event order" column
    correct: str  # the seed's "correct verdict"
    why: str  # the seed's "why"
    plan: tuple[dict, ...]
    events: tuple[str, ...]
    step: str  # the step whose fate the row is about
    wanted: str  # the model's spelling of the correct verdict
    holds: Callable[[list[str], bool], bool]  # (the step's verdicts, re-planned?) -> the seed's verdict?


def _rejected_and_replanned(verdicts: list[str], replanned: bool) -> bool:
    return bool(verdicts) and verdicts[0].startswith("rejected:") and replanned


ROWS = (
    Row("stale_step", "step arrives, base_rev < current rev, no overlap", "reject, re-plan from current rev",
        "the plan is stale; the patch is not recoverable", tuple(TWO_STEPS[:1]),
        ("plan", "dispatch s1", "human_edit app.py#handler", "deliver s1", "ack s1", "deliver s1"), "s1",
        "rejected, then re-planned", _rejected_and_replanned),
    Row("journal_holds_key", "step arrives, journal contains (step_id, base_rev)", "replay the stored result",
        "the work is done; the ack is what was lost", tuple(TWO_STEPS[:1]),
        ("plan", "dispatch s1", "deliver s1", "lose_ack s1", "retry s1", "deliver s1"), "s1",
        "applied, then deduped", lambda v, _: v == ["applied", "deduped"]),
    Row("tests_fail", "step applied, tests for touched files fail", "compensate to the checkpoint",
        "fence passed, semantics did not", tuple(TWO_STEPS[:1]),
        ("plan", "dispatch s1", "deliver s1", "ack s1", "tests_fail app.py"), "s1",
        "applied, then compensated", lambda v, _: v == ["applied", "compensated"]),
    Row("replan_current", "new model re-plans mid-session from current rev",
        "accept if re-stamped and preconditions hold", "drift is expected, staleness is not", tuple(TWO_STEPS),
        ("plan", "dispatch s1", "deliver s1", "ack s1", "replan", "dispatch s2", "deliver s2", "ack s2"), "s2",
        "applied", lambda v, _: v == ["applied"]),
    Row("overlapping_siblings", "two steps with overlapping hunks in one plan", "reject the plan at admission",
        "a fence cannot order siblings", tuple(SIBLINGS),
        ("plan", "dispatch s1", "dispatch s2", "deliver s2", "deliver s1", "ack s2", "ack s1"), "plan",
        "rejected:overlap", lambda v, _: v == ["rejected:overlap"]),
)


def _fate(history: History, step: str) -> tuple[list[str], bool]:
    """The verdicts the row's step got, in order, and whether it was re-planned.  For ``plan``: the plan's
    verdict, or (an admitted plan) ``admitted`` and each step's verdicts as ``s1: applied``."""
    verdicts, replanned = [], False
    for event in history:
        if event.get("skipped") or event.event in ("ack", "lose_ack"):
            continue
        if event.event == "rebase" and event.get("step") == step and "stopped" not in event.fields:
            replanned = True
        verdict = event.get("verdict")
        if step == "plan" and event.event == "plan":
            verdicts.append(verdict or "admitted")
        elif verdict is not None and step == "plan":
            verdicts.append(f"{event.get('step')}: {verdict}")
        elif verdict is not None and event.get("step") == step:
            verdicts.append(verdict)
    return verdicts, replanned


def _why_not(row: Row, protocol, verdicts: list[str], replanned: bool) -> str:
    """Why a cell is not the seed's verdict, from the protocol's knobs and what happened."""
    knobs = protocol.knobs
    if row.name == "stale_step":
        if not verdicts or not verdicts[0].startswith("rejected:"):
            return "fence=none: the stale step is applied over the human's edit"
        return "rejected, but on_reject=stop: the client stops instead of re-planning from the current rev"
    if row.name == "journal_holds_key":
        if knobs["dedupe"] == "off":
            return ("dedupe=off: nothing remembers the key, so the retry is " +
                    ("applied again" if knobs["fence"] == "none" else "rejected as stale (finished work refused)"))
        return "the stored result was not replayed"
    if row.name == "tests_fail":
        return "checkpoint=none: the failure is recorded and nothing can be undone"
    if row.name == "replan_current":
        if knobs["fence"] == "plan":
            return "fence=plan: the plan's base rev is stale once s1 applied; only a per-step stamp re-stamps"
        return "the re-planned step was not accepted"
    return "overlap_check=off: the plan is admitted and the fence cannot order the siblings"


def mapped(row: Row, base: Any) -> dict[str, Any] | str:
    """``row`` as a scenario table on a workload's own files and plan (``base``: its scenario): the row's
    first step is the workload's first step that patches hunks (else its first step), ``app.py`` its file and
    ``#handler`` its hunk; the row's second step a step of the same file, of another hunk (or, for the
    sibling row, of the same hunk).  A string says why the row cannot be built on this workload."""
    if base is None:
        return {"name": row.name, "files": FILES, "plan": list(row.plan), "events": list(row.events)}
    steps = list(base.plan)
    first = next((s for s in steps if isinstance(s.patch, dict) and len(base.files[s.path]) > 1), steps[0])
    hunk = next(iter(first.patch)) if isinstance(first.patch, dict) else None
    hunk = None if hunk == "_" else hunk  # a whole-file patch
    chosen = [first]
    if len(row.plan) > 1:
        same_hunk = row.plan[1]["patch"].keys() == row.plan[0]["patch"].keys()
        second = next((s for s in steps if s is not first and s.path == first.path
                       and (hunk in s.patch) == same_hunk), None)
        if second is None:
            return (f"no second step of {first.path} " + ("on the same hunk" if same_hunk else "on another hunk")
                    + f" in workload {base.name}")
        chosen.append(second)
    names = {"s1": chosen[0].step_id, **({"s2": chosen[1].step_id} if len(chosen) > 1 else {})}
    place = first.path + (f"#{hunk}" if hunk else "")

    def event(text: str) -> str:
        words = text.replace("app.py#handler", place).replace("app.py", first.path).split(" ")
        return " ".join(names.get(w, w) for w in words)

    return {"name": row.name, "files": dict(base.files), "events": [event(e) for e in row.events],
            "plan": [{"id": s.step_id, "path": s.path, "patch": s.patch} for s in chosen]}


def _cell(row: Row, label: str, base: Any = None) -> dict[str, Any]:
    from sim.families.workspace import FAMILY

    table = mapped(row, base)
    if isinstance(table, str):
        return {"protocol": label, "verdict": "not expressible", "verdicts": [], "replanned": False,
                "matches": True, "violations": [], "why": table, "expressible": False}
    scenario = build_scenario(table)
    step = {"s1": table["plan"][0]["id"], "s2": table["plan"][-1]["id"]}.get(row.step, row.step)
    protocol = FAMILY.parse_protocol(label)
    result = run_scenario(FAMILY, scenario, protocol)
    verdicts, replanned = _fate(result.history, step)
    shown = ", then ".join(verdicts) or "no verdict"
    if replanned:
        shown += " (re-planned)"
    cell: dict[str, Any] = {"protocol": label, "verdict": shown, "verdicts": verdicts, "replanned": replanned,
                            "matches": row.holds(verdicts, replanned),
                            "violations": sorted({v.invariant for v in result.violations})}
    if not cell["matches"]:
        cell["why"] = _why_not(row, protocol, verdicts, replanned)
    return cell


def verdict_table(protocols: tuple[str, ...] = (*PRESETS, PLATFORM), base: Any = None,
                  platform: str | None = PLATFORM) -> dict[str, Any]:
    """The ``fencesim matrix --table verdicts --json`` document: one entry per row of the seed's table, each
    replayed under ``protocols`` -- on the seed's own two-hunk file, or on a workload's files and plan
    (``base``: its scenario; see :func:`mapped`).  ``platform``: the column shown as the platform."""
    rows: list[dict[str, Any]] = []
    for row in ROWS:
        table = mapped(row, base)
        cells = [_cell(row, label, base) for label in protocols]
        rows.append({"row": row.name, "event_order": row.order, "correct_verdict": row.correct, "why": row.why,
                     "expected": row.wanted, "step": row.step,
                     "events": list(table["events"]) if isinstance(table, dict) else [],
                     **({} if isinstance(table, dict) else {"not_expressible": table}),
                     "cells": cells})
    differing = sum(1 for row in rows for cell in row["cells"] if not cell["matches"])
    return {"table": "verdicts", "protocols": list(protocols), "platform": platform, "rows": rows,
            "cells_differing": differing, "workload": None if base is None else base.name}
