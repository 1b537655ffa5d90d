"""The workspace family's blast radius: the human edits a write destroyed, steps applied twice.

Read from a history's fields only: a delivery applied over content its author did not expect names the
hunks it replaced, and the last earlier write of each such hunk -- a human's edit, or another step's --
is what the customer lost.
"""

from __future__ import annotations

from typing import Any

from sim.core.ledger import Entry


def _target(path: str, hunk: str | None) -> str:
    return path if hunk in (None, "_") else f"{path}#{hunk}"


def _last_write(events: list, before: int, path: str, hunk: str):
    """The latest event before index ``before`` that wrote ``path``'s ``hunk``: a human edit or an applied step."""
    for event in reversed(events[:before]):
        fields = event.fields
        if fields.get("skipped") or fields.get("path") != path:
            continue
        if event.event == "human_edit" and fields.get("hunk") in (None, hunk):
            return event
        applied = event.event == "deliver" and fields.get("verdict") == "applied"
        if applied and hunk in (fields.get("patch_hunks") or ()):
            return event
    return None


def ledger(history) -> list[Entry]:
    """Every human edit overwritten (named, with the step that overwrote it) and every step applied twice."""
    events = list(history)
    out: list[Entry] = []
    applied: dict[str, int] = {}
    for position, event in enumerate(events):
        fields = event.fields
        if event.event != "deliver" or fields.get("verdict") != "applied" or fields.get("skipped"):
            continue
        step, path = fields.get("step"), fields.get("path")
        if step in applied:
            out.append(Entry("step_applied_twice", f"step {step} applied again at event {event.index} (first at "
                             f"event {applied[step]})", "the reviewer of the change: revert the second application",
                             event.index))
        applied.setdefault(step, event.index)
        out.extend(_overwritten(events, position, event, step, path))
    return out


def _overwritten(events: list, position: int, event, step: Any, path: Any) -> list[Entry]:
    before, expected = event.fields.get("hunks_before"), event.fields.get("expected_prior_hunks")
    if not isinstance(before, dict) or not isinstance(expected, dict):
        return []
    out = []
    for hunk in sorted(h for h in expected if before.get(h) != expected.get(h)):
        writer = _last_write(events, position, path, hunk)
        if writer is not None and writer.event == "human_edit":
            what = f"the edit of {_target(path, hunk)} by human at event {writer.index}, overwritten by {step}"
            out.append(Entry("human_edit_overwritten", what, "the human who made the edit: redo or merge it",
                             event.index))
        elif writer is not None and writer.fields.get("step") == step:
            continue  # the step's own earlier write: its second application is the entry
        elif writer is not None:
            what = (f"{writer.fields.get('step')}'s write of {_target(path, hunk)} at event {writer.index}, "
                    f"overwritten by {step}")
            out.append(Entry("step_write_overwritten", what, "the agent: re-plan the overwritten step", event.index))
        else:
            out.append(Entry("content_overwritten", f"{_target(path, hunk)} overwritten by {step} over content its "
                             "author did not expect", "the reviewer: compare with the planned snapshot", event.index))
    return out
