"""The executor: it serves each delivered message behind the fence, with the dedupe store, and can die.

At delivery it does, in order: dedupe lookup (``deduped``, the stored
result replayed); rev check (``rejected:stale_rev``); hash check
(``rejected:pre_hash``); otherwise write, journal, ``applied``.  A
preemption armed by ``preempt POINT`` strikes at that point of the next
delivery (``before_write``, ``after_write``, ``after_journal``); ``preempt``
alone kills it between deliveries.  Its memory (``dedupe=memory``) dies with
it; the workspace and the journal persist.  The executor never decides a
fault: it reads the armed point from the state."""

from __future__ import annotations

from typing import Any, cast

from sim.core.machine import Record
from sim.families.workspace.core import Revs, WorkspaceCore
from sim.families.workspace.scenario import Action
from sim.families.workspace.state import Answer, Label, Message, State, content_hash


def domain_of(message: Message, replan_caused: bool = True) -> str:
    """The failure domain of a delivery's verdict: lost_ack, duplicate_delivery, replan_drift, stale_plan.

    A re-planned step is ``replan_drift`` only where the re-plan is the cause (``replan_caused``: the file, in
    the hunks the first plan patched, is still as that plan read it, so the first plan's step would have met
    what its author expected -- :meth:`WorkspaceCore.replan_caused`); a re-plan before an edit the first plan
    would have overwritten too plays no part, and the finding is the stale plan's."""
    if message.origin == "retry":
        return "lost_ack"
    if message.origin == "duplicate":
        return "duplicate_delivery"
    if message.step.replanned and replan_caused:
        return "replan_drift"
    return "stale_plan"


class Executor(WorkspaceCore):
    """Serving a message (checks, write, journal, answer) and preemptions."""

    def why_not_preempt(self, state: State, event: Action) -> str | None:
        if state.snapshot is None:
            return "preemption is interference after the plan"
        if event.point is not None and state.armed is not None:
            return f"a preemption at {state.armed} is already armed"
        return None

    def dying(self, state: State) -> dict[str, Any]:
        """What the executor's death changes: its memory is lost, the next incarnation starts on the
        persisted workspace.  (The documented seam for a planted bug in what survives a crash.)"""
        return dict(memory=frozenset(), incarnation=Label(state.incarnation.value + 1))

    def die(self, state: State) -> State:
        return state._replace(**self.dying(state))

    def preempt(self, state: State, event: Action) -> tuple[State, list[Record]]:
        if event.point is None:
            state = self.die(state)
            return state, [("executor", "preempt", dict(incarnation=state.incarnation.value))]
        return state._replace(armed=event.point), [("executor", "preempt", dict(point=event.point))]

    def serve(self, state: State, message: Message) -> tuple[State, list[Record]]:
        """The executor serves one delivered message (see the module docstring for the order of checks)."""
        step, knobs = message.step, self.knobs
        file_scope = knobs.rev_scope == "file"
        rev_at_apply = cast(Revs, state.file_revs)[self.position[step.path]] if file_scope else state.rev
        hash_before = self.hash(state, step.path)
        stamped_rev, stamped_hash = message.stamped_base_rev, message.stamped_pre_hash
        if knobs.fence == "step" and knobs.stamp_at == "apply":
            stamped_rev, stamped_hash = rev_at_apply, hash_before
        key = (step.step_id, stamped_rev)
        store = state.journal if knobs.dedupe == "journal" else state.memory if knobs.dedupe == "memory" else None
        fields: dict[str, Any] = dict(
            step=step.step_id, path=step.path, origin=message.origin, copy=message.copy.value,
            model=step.model.value, fence=knobs.fence, dedupe=knobs.dedupe,
            claimed_base_rev=step.claimed_base_rev, rev_at_apply=rev_at_apply, hash_before=hash_before,
            incarnation=state.incarnation.value, **self.truth_fields(state, step))
        if step.replanned is not None:
            fields["replanned"] = step.replanned
        if stamped_rev is not None:
            fields["stamped_base_rev"] = stamped_rev
        if stamped_hash is not None:
            fields["stamped_pre_hash"] = stamped_hash
        if file_scope:
            fields.update(rev_scope="file", workspace_rev=state.rev)
        if message.round:
            fields["rebased"] = message.round
        if store is not None and (key in store or (knobs.checkpoints_dedupe and key in state.proved)):
            verdict: str | None = "deduped"
            if key not in store:
                fields["deduped_by"] = "checkpoint"
        elif knobs.fence != "none" and stamped_rev != rev_at_apply:
            verdict = "rejected:stale_rev"
        elif knobs.fence != "none" and stamped_hash != hash_before:
            verdict = "rejected:pre_hash"
        else:
            return self._apply(state, message, key, fields)
        changes: dict[str, Any] = {}
        point = state.armed
        if point is not None:  # armed for this delivery: the executor dies here, with its decision unsent
            changes.update(self.dying(state), armed=None)
            fields["preempted"] = point
            if point == "before_write":
                verdict = None  # the message is used up before any decision is answered
        return self.finish(state, message, verdict, fields, changes)

    def _apply(self, state: State, message: Message, key: tuple[str, int | None],
               fields: dict[str, Any]) -> tuple[State, list[Record]]:
        """Write, journal (atomically or after the write), answer -- or die at the armed point."""
        step, knobs = message.step, self.knobs
        if state.armed == "before_write":
            fields["preempted"] = "before_write"
            return self.finish(state, message, None, fields, dict(self.dying(state), armed=None))
        changes = self._written(state, step.path, step.patch)
        index = self.position[step.path]
        fields["hash_after"] = content_hash(changes["files"][index])
        fields["rev_after"] = changes["file_revs"][index] if knobs.rev_scope == "file" else changes["rev"]
        if knobs.checkpoint == "per_step":
            self.checkpoint(state, message, key, fields, changes)
        keeps = knobs.dedupe != "off"
        if keeps and knobs.journal_write == "atomic":
            self._remember(state, key, fields, changes)
        for point in ("after_write", "after_journal"):
            if point == "after_journal" and keeps and knobs.journal_write == "after_write":
                self._remember(state, key, fields, changes)
            if state.armed == point:
                changes.update(self.dying(state), armed=None)
                if knobs.dedupe == "memory":
                    fields.pop("journal_key", None)  # memory died with the executor
                fields["preempted"] = point
                break
        return self.finish(state, message, "applied", fields, changes)

    def _remember(self, state: State, key: tuple[str, int | None], fields: dict[str, Any],
                  changes: dict[str, Any]) -> None:
        fields["journal_key"] = f"{key[0]}@{key[1]}"
        if self.knobs.dedupe == "journal":
            changes["journal"] = state.journal | {key}
        else:
            changes["memory"] = state.memory | {key}

    def finish(self, state: State, message: Message, verdict: str | None, fields: dict[str, Any],
               changes: dict[str, Any] | None = None) -> tuple[State, list[Record]]:
        """Record a delivery (with the state ``changes`` it made); answer it unless the executor died."""
        changes = {} if changes is None else changes
        step_id = message.step.step_id
        if verdict is not None:
            if "domain" not in fields:  # a driver that mirrored a real write already judged it before the write
                fields["domain"] = domain_of(message, self.replan_caused(state, message.step))
            fields["verdict"] = verdict
            changes["verdict_steps"] = state.verdict_steps | {step_id}
            if verdict == "applied":
                changes["applied"] = state.applied | {step_id}
            if "preempted" not in fields:
                changes["answers"] = state.answers + (Answer(step_id, verdict, message.round),)
        state = state._replace(**changes) if changes else state
        records: list[Record] = [("executor", "deliver", fields)]
        if state.held and verdict is not None and self.knobs.on_reject == "replan":
            state = self.release(state, records)
        return state, records
