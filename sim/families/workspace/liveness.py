"""Honest liveness and the costs of the platform's mechanisms, measured from a run's history.

*Applied* counts the steps a run wrote at least once.  That flatters a
design which clobbers: a step written over content its author never saw, or
written twice, did not do its work.  *Applied safely* counts the steps whose
write replaced exactly what their author expected, once, and was not undone
by a compensation afterwards.  The review's work-done figure and the
advisor's cost read it (``WorkspaceFamily.safe_progress``).

Beside it, per run: what compensation cost (checkpoints stored, restores,
test failures left in place), what the journal held (keys at the end, the
peak -- the seed's "growth control"), what the client's recovery did
(re-plans, dispatches held back), and for every knob whether its non-default
mechanism *acted* (``fired_<knob>`` is 1 when it changed what happened at
least once: the knob table's ``fired`` predicates,
:mod:`sim.families.workspace.knobs`).  Summed over a sweep, the family's
``never_fired`` (read from the knob table) turns the last into the lines a
report prints ("overlap_check=on never fired: no two steps
share a hunk"); which protocols' results are identical is the search's
judgement (``sim.search.pipeline.identical_groups``).  Everything reads event fields only (``docs/workspace.md``).
"""

from __future__ import annotations

from typing import Any, Iterable

from sim.core.history import History
from sim.core.knobs import Protocol
from sim.core.mechanisms import fired_measures
from sim.families.workspace.checks import _replaced_unexpected
from sim.families.workspace.knobs import TABLE, Seen, WorkspaceKnobs


def measures(history: History, protocol: Protocol, state: Any = None) -> dict[str, float]:
    """The run's liveness, mechanism costs and firings (see the module docstring)."""
    # keyed by the records' ``step`` field as read (None for a record without one)
    applied: dict[str | None, int] = {}
    clobbered: set[str | None] = set()
    compensated: set[str | None] = set()
    out: dict[str, float] = dict(verdict_compensated=0, tests_failed=0, tests_failed_kept=0, checkpoints_stored=0,
                                 restores=0, rebases=0, dispatches_held=0, journal_keys_dropped=0)
    keys: set[str | None] = set()
    peak = 0
    values = WorkspaceKnobs.of(protocol)
    happened = [event for event in history if not event.fields.get("skipped")]
    for event in happened:
        name, fields = event.event, event.fields
        if name == "deliver":
            if fields.get("verdict") == "applied":
                step = fields.get("step")
                applied[step] = applied.get(step, 0) + 1
                if _replaced_unexpected(event):
                    clobbered.add(step)
                if "checkpoint" in fields:
                    out["checkpoints_stored"] += 1
            if fields.get("journal_key") and fields.get("dedupe") in ("journal", "memory"):
                keys.add(fields["journal_key"])
                peak = max(peak, len(keys))
            if fields.get("preempted") and fields.get("dedupe") == "memory":
                keys.clear()
        elif name == "preempt" and "point" not in fields and values.dedupe == "memory":
            keys.clear()
        elif name == "journal_remove":
            keys.discard(fields.get("journal_key"))
            out["journal_keys_dropped"] += 1
        elif name == "tests_fail":
            out["tests_failed"] += 1
            if fields.get("verdict") == "compensated":
                out["verdict_compensated"] += 1
                out["restores"] += 1
                compensated.add(fields.get("step"))
            else:
                out["tests_failed_kept"] += 1
        elif name == "rebase" and "stopped" not in fields:
            out["rebases"] += 1
        elif name == "dispatch" and fields.get("held"):
            out["dispatches_held"] += 1
    out["steps_applied_safely"] = sum(1 for step, count in applied.items()
                                      if count == 1 and step not in clobbered and step not in compensated)
    out["steps_compensated"] = len(compensated)
    out["journal_keys_end"] = _keys_held(state, values, len(keys))
    out["journal_keys_peak"] = peak
    out.update(fired_measures(TABLE, happened, values, Seen()))
    return out


def _keys_held(state: Any, values: WorkspaceKnobs, counted: int) -> int:
    """Keys the dedupe store holds when the run ends (the state's own count when there is one)."""
    if state is None:
        return counted
    if values.dedupe == "journal":
        return len(state.journal)
    if values.dedupe == "memory":
        return len(state.memory)
    return 0


def sum_measures(rows: Iterable[dict[str, float]]) -> dict[str, float]:
    """Measures of several runs, summed (what a sweep's tally holds)."""
    total: dict[str, float] = {}
    for row in rows:
        for name, value in row.items():
            total[name] = total.get(name, 0) + value
    return total
