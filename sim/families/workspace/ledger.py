"""The workspace family's blast radius: the human edits a write (or a checkpoint restore) destroyed, steps
applied twice.

Read from a history's fields only: a delivery applied over content its author did not expect names the
hunks it replaced, and the last earlier write of each such hunk -- a human's edit, or another step's --
is what the customer lost.
"""

from __future__ import annotations

from typing import Any

from sim.core.ledger import Entry


def _target(path: str, hunk: str | None) -> str:
    return path if hunk in (None, "_") else f"{path}#{hunk}"


def replaced_hunks(event) -> list[str]:
    """The hunks a write replaced other than its author expected, sorted (none when the history has no hunks)."""
    before, expected = event.fields.get("hunks_before"), event.fields.get("expected_prior_hunks")
    if not isinstance(before, dict) or not isinstance(expected, dict):
        return []
    return sorted(h for h in expected if before.get(h) != expected.get(h))


def last_write(events: list, before: int, path: str, hunk: str | None):
    """The latest event before position ``before`` that wrote ``path``'s ``hunk`` (None: any part of the file):
    a human edit or an applied step."""
    for event in reversed(events[:before]):
        fields = event.fields
        if fields.get("skipped") or fields.get("path") != path:
            continue
        if event.event == "human_edit" and (hunk is None or fields.get("hunk") in (None, hunk)):
            return event
        applied = event.event == "deliver" and fields.get("verdict") == "applied"
        if applied and (hunk is None or hunk in (fields.get("patch_hunks") or ())):
            return event
    return None


def ledger(history) -> list[Entry]:
    """Every human edit overwritten (named, with the step that overwrote it) and every step applied twice."""
    events = list(history)
    out: list[Entry] = []
    applied: dict[str, int] = {}
    for position, event in enumerate(events):
        fields = event.fields
        if event.event == "tests_fail" and fields.get("verdict") == "compensated":  # a restore writes the file
            out.extend(_overwritten(events, position, event, fields.get("step"), fields.get("path"),
                                    f"restoring {fields.get('step')}'s checkpoint"))
            continue
        if event.event != "deliver" or fields.get("verdict") != "applied" or fields.get("skipped"):
            continue
        step, path = fields.get("step"), fields.get("path")
        if step in applied:
            out.append(Entry("step_applied_twice", f"step {step}",
                             f"applied again at event {event.index} (first at event {applied[step]})",
                             "the reviewer of the change", "revert the second application", event.index))
        applied.setdefault(step, event.index)
        out.extend(_overwritten(events, position, event, step, path))
    return out


def _overwritten(events: list, position: int, event, step: Any, path: Any, by: str | None = None) -> list[Entry]:
    """What one write (a delivery, or ``by``: a checkpoint restore) destroyed, hunk by hunk."""
    out = []
    by = by or str(step)
    for hunk in replaced_hunks(event):
        writer = last_write(events, position, path, hunk)
        target = _target(path, hunk)
        if writer is not None and writer.event == "human_edit":
            out.append(Entry("human_edit_overwritten", target,
                             f"edited by human at event {writer.index}, overwritten by {by}",
                             "the human who made the edit", "redo or merge it", event.index))
        elif writer is not None and writer.fields.get("step") == step and by == str(step):
            continue  # the step's own earlier write: its second application is the entry
        elif writer is not None:
            out.append(Entry("step_write_overwritten", target,
                             f"written by {writer.fields.get('step')} at event {writer.index}, overwritten by {by}",
                             "the agent", "re-plan the overwritten step", event.index))
        else:
            out.append(Entry("content_overwritten", target,
                             f"overwritten by {by} over content its author did not expect",
                             "the reviewer", "compare with the planned snapshot", event.index))
    return out
