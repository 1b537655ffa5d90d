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
least once).  Summed over a sweep, :func:`never_fired` turns the last into
the lines a report prints ("overlap_check=on never fired: no two steps
share a hunk"); which protocols' results are identical is the search's
judgement (``sim.search.pipeline.identical_groups``).  Everything reads event fields only (``docs/workspace.md``).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from sim.core.history import History
from sim.core.knobs import Protocol
from sim.core.workload import Workload
from sim.families.workspace.checks import _replaced_unexpected

#: The knobs whose firing is measured, in knob-table order.
MEASURED_KNOBS = ("fence", "stamp_at", "dedupe", "journal_write", "drift_check", "overlap_check", "pipeline",
                  "rev_scope", "drift_scope", "on_reject", "checkpoint", "journal_gc")


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
    fired = _Firing(protocol)
    for event in history:
        if event.fields.get("skipped"):
            continue
        name, fields = event.event, event.fields
        fired.feed(event)
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
        elif name == "preempt" and "point" not in fields and protocol.dedupe == "memory":
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
    out["journal_keys_end"] = _keys_held(state, protocol, len(keys))
    out["journal_keys_peak"] = peak
    out.update(fired.result())
    return out


def _keys_held(state: Any, protocol: Protocol, counted: int) -> int:
    """Keys the dedupe store holds when the run ends (the state's own count when there is one)."""
    if state is None:
        return counted
    if protocol.dedupe == "journal":
        return len(state.journal)
    if protocol.dedupe == "memory":
        return len(state.memory)
    return 0


class _Firing:
    """Whether each non-default mechanism acted, from the events as they come."""

    def __init__(self, protocol: Protocol):
        self.protocol = protocol
        self.fired = dict.fromkeys(MEASURED_KNOBS, 0)
        self.dispatch_rev: dict[str, Any] = {}
        self.dispatch_workspace_rev: dict[str, Any] = {}
        self.verdicts: set[str] = set()
        self.order: list[str] = []

    def feed(self, event) -> None:
        name, fields, fired = event.event, event.fields, self.fired
        verdict = fields.get("verdict")
        if name == "plan":
            self.order = list(fields.get("steps", []))
            if verdict == "rejected:overlap":
                fired["overlap_check"] = 1
        elif name == "dispatch" and not fields.get("held"):
            step = fields.get("step")
            if verdict == "rejected:drift":
                fired["drift_check"] = 1
            elif fields.get("drift_scope") == "hunk" and fields.get("claimed_pre_hash") != fields.get("hash_current"):
                fired["drift_scope"] = 1  # the whole-file check would have refused it
            if "stamped_base_rev" in fields and self.protocol.fence == "step" and (
                    fields["stamped_base_rev"] != fields.get("rev")
                    or fields.get("stamped_pre_hash") != fields.get("hash_current")):
                fired["stamp_at"] = 1  # stamped with the claims, not with what the client read
            if fields.get("released") or fields.get("rebased"):
                fired["on_reject"] = 1
            position = self.order.index(step) if step in self.order else 0
            if position > 0 and self.order[position - 1] not in self.verdicts:
                fired["pipeline"] = 1
            self.dispatch_rev[step] = fields.get("rev")
            self.dispatch_workspace_rev[step] = fields.get("workspace_rev")
            if verdict is not None:
                self.verdicts.add(step)
        elif name == "deliver":
            step = fields.get("step")
            if verdict is not None:
                self.verdicts.add(step)
            if verdict == "deduped":
                fired["dedupe"] = 1
            elif verdict in ("rejected:stale_rev", "rejected:pre_hash"):
                fired["fence"] = 1
            if (self.protocol.stamp_at == "apply" and self.protocol.fence == "step"
                    and step in self.dispatch_rev and fields.get("rev_at_apply") != self.dispatch_rev[step]):
                fired["stamp_at"] = 1  # the rev at apply is not the one the client read
            if verdict == "applied" and fields.get("preempted") == "after_write" and fields.get("dedupe") != "off" \
                    and self.protocol.journal_write == "after_write":
                fired["journal_write"] = 1
            if (fields.get("rev_scope") == "file" and verdict not in (None, "rejected:stale_rev")
                    and fields.get("workspace_rev") != self.dispatch_workspace_rev.get(step)):
                fired["rev_scope"] = 1  # another file moved the workspace since the dispatch
        elif name == "rebase" and "stopped" not in fields:
            fired["on_reject"] = 1
        elif name == "tests_fail" and verdict == "compensated":
            fired["checkpoint"] = 1
        elif name == "journal_remove":
            fired["journal_gc"] = 1

    def result(self) -> dict[str, int]:
        return {f"fired_{knob}": value for knob, value in self.fired.items()}


def never_fired(workload: Workload, protocol: Protocol, measures: Mapping[str, float]) -> list[dict[str, str]]:
    """The protocol's non-default mechanisms whose ``fired_<knob>`` summed to 0 over the runs, each with why."""
    out = []
    for knob in protocol.table.knobs:
        if knob.name not in MEASURED_KNOBS:
            continue
        value = protocol.knobs[knob.name]
        if value == knob.default or measures.get(f"fired_{knob.name}", 0):
            continue
        setting = f"{knob.name}={knob.show(value)}"
        out.append({"knob": knob.name, "value": knob.show(value),
                    "line": f"{setting} never fired: {_why_silent(workload, protocol, knob.name)}"})
    return out


def _why_silent(workload: Workload, protocol: Protocol, knob: str) -> str:
    """Why a mechanism may never have acted on this workload, as specifically as the workload tells."""
    base, classes = workload.base, set(workload.classes)
    hunked = any(len(hunks) > 1 for hunks in base.files.values())
    if knob == "overlap_check":
        from sim.families.workspace.machine import _overlaps
        from sim.families.workspace.state import Label, Step

        steps = tuple(Step(s.step_id, s.path, tuple(s.patch.items()), 0, "", (), None, Label(None), Label(None),
                           Label(None))
                      for s in base.plan)
        return "no two steps share a hunk" if not _overlaps(steps) else "no plan was rejected"
    if knob == "rev_scope":
        return "the workspace has one file" if len(base.files) == 1 else \
            "no step was applied while another file moved the workspace"
    if knob == "drift_scope":
        if protocol.drift_check != "reject":
            return "drift_check=off: there is no drift check to scope"
        return "every file is one hunk" if not hunked else "no step passed that the whole-file check would refuse"
    if knob == "checkpoint":
        return "the workload draws no tests_fail" if "tests_fail" not in classes else "no test failed after a write"
    if knob == "journal_gc":
        return "dedupe=off keeps no keys" if protocol.dedupe == "off" else "no key was dropped"
    if knob == "journal_write":
        if protocol.dedupe == "off":
            return "dedupe=off stores no keys"
        return "the workload draws no preempt" if "preempt" not in classes else \
            "no preemption struck between a write and its key"
    if knob == "on_reject":
        return "no rejection reached the client and no dispatch was held back"
    if knob == "pipeline":
        return "no step was dispatched before the previous one had a verdict"
    if knob == "dedupe":
        return "no delivery was deduped"
    if knob == "fence":
        return "no delivery was rejected by the fence"
    if knob == "stamp_at":
        return "the stamp always equalled what the client read at dispatch" if protocol.fence == "step" else \
            f"fence={protocol.fence}: stamp_at applies to fence=step only"
    if knob == "drift_check":
        return "no step's claimed pre-hash differed from the file's at dispatch"
    return "it never acted"  # pragma: no cover - every measured knob has a reason above


def sum_measures(rows: Iterable[dict[str, float]]) -> dict[str, float]:
    """Measures of several runs, summed (what a sweep's tally holds)."""
    total: dict[str, float] = {}
    for row in rows:
        for name, value in row.items():
            total[name] = total.get(name, 0) + value
    return total
