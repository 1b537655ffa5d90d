"""The client: it dispatches the plan's steps in order, stamps each per the protocol, and retries.

A dispatch never repeats (it never re-stamps); with ``pipeline=off`` a step
goes only once the previous one has a verdict.  The stamp holds what the
fence will check: the planner's claims (``fence=none``, ``fence=plan`` with the
plan's base), or per ``stamp_at`` for ``fence=step``.  ``drift_check=reject``
refuses at dispatch a step whose claimed pre-hash is not current (with
``drift_scope=hunk``: a hunk it replaces).  A retry re-sends the same stamped
message."""

from __future__ import annotations

from typing import Any, cast

from sim.core.machine import Record
from sim.families.workspace.core import Revs, WorkspaceCore
from sim.families.workspace.scenario import Action
from sim.families.workspace.state import Content, Message, State, Step, content_hash, hunk_digests, patched


class Client(WorkspaceCore):
    """The client: ``dispatch`` (stamp and send, or refuse for drift) and ``retry``."""

    def why_not_dispatch(self, state: State, event: Action) -> str | None:
        """In plan order, once; with pipeline=off only after the previous step's verdict.

        The steps dispatched or refused are always the first ``len(sent) + len(refused)`` of the plan (a
        dispatch waits for its predecessor's), so where a step stands is one comparison.
        """
        if not state.steps:
            return "no plan yet"
        if state.plan_rejected:
            return "the plan was rejected at admission"
        step_id = cast(str, event.step)  # a step event always names its step (the parser requires it)
        done = len(state.sent) + len(state.refused)
        position = self.order[step_id]
        if position < done:
            return "already dispatched (a dispatch never repeats)"
        if position > done:
            reason = f"steps are dispatched in plan order; {state.steps[position - 1].step_id} is not dispatched yet"
        elif (position > 0 and self.knobs.pipeline == "off"
              and state.steps[position - 1].step_id not in state.verdict_steps):
            reason = f"pipeline=off: {state.steps[position - 1].step_id} has no verdict yet"
        else:
            return None
        if self.knobs.on_reject == "replan":  # the client holds the dispatch back until it may go
            return f"{step_id} is already held back" if step_id in state.held else None
        return reason

    def blocked(self, state: State, step_id: str) -> str | None:
        """Why a step the client means to send may not go yet (an earlier step is not sent, or has no verdict
        under pipeline=off), or None."""
        done = len(state.sent) + len(state.refused)
        position = self.order[step_id]
        if position > done:
            return f"{state.steps[position - 1].step_id} is not dispatched yet"
        if (position > 0 and self.knobs.pipeline == "off"
                and state.steps[position - 1].step_id not in state.verdict_steps):
            return f"pipeline=off: {state.steps[position - 1].step_id} has no verdict yet"
        return None

    def stamp(self, state: State, step: Step, current_hash: str) -> tuple[int | None, str | None]:
        """The stamp per fence: none and plan carry claims (plan: its base rev), step per ``stamp_at``."""
        if self.knobs.fence == "none":
            return step.claimed_base_rev, step.claimed_pre_hash
        if self.knobs.fence == "plan":
            if self.knobs.rev_scope == "file":
                return cast(Revs, state.snapshot_revs)[self.position[step.path]], step.claimed_pre_hash
            return state.plan_base_rev, step.claimed_pre_hash
        if self.knobs.stamp_at == "dispatch":
            if self.knobs.rev_scope == "file" and self.knobs.pipeline == "on":
                return self.chained_stamp(state, step, current_hash)
            return self.rev_of(state, step.path), current_hash
        if self.knobs.stamp_at == "plan":
            return step.claimed_base_rev, step.claimed_pre_hash
        return None, None  # stamp_at=apply: the executor reads rev and hash at apply

    def chained_stamp(self, state: State, step: Step, current_hash: str) -> tuple[int, str]:
        """rev_scope=file, pipeline=on: the revision and hash the step's file will have once the plan's
        earlier steps on it that are sent and still without a verdict have applied (what the client sent
        is what it expects to land first); with none in flight, the file's as read now."""
        content, pending = self.file(state, step.path), 0
        for earlier in state.steps[:self.order[step.step_id]]:
            if (earlier.path == step.path and earlier.step_id not in state.verdict_steps
                    and state.sent_message(earlier.step_id) is not None):
                content, pending = patched(content, earlier.patch), pending + 1
        if not pending:
            return self.rev_of(state, step.path), current_hash
        return self.rev_of(state, step.path) + pending, content_hash(content)

    def dispatch(self, state: State, event: Action) -> tuple[State, list[Record]]:
        """The client stamps the step per the protocol and sends it (or refuses it for drift); with
        on_reject=replan a dispatch that may not go yet is held back instead of skipped."""
        step_id = cast(str, event.step)
        if self.knobs.on_reject == "replan":
            waiting = self.blocked(state, step_id)
            if waiting is not None:
                return self.hold(state, step_id, waiting)
            state, records = self.send(state, state.steps[self.order[step_id]])
            return self.release(state, records), records
        return self.send(state, state.steps[self.order[step_id]])

    def send(self, state: State, step: Step, round_: int = 0, **shown: Any) -> tuple[State, list[Record]]:
        """Stamp ``step`` and send it, or refuse it for drift (``round_``: the client's re-plans of it so far;
        ``shown``: extra fields of the record)."""
        current_hash = self.hash(state, step.path)
        stamped_rev, stamped_hash = self.stamp(state, step, current_hash)
        fields = dict(step=step.step_id, path=step.path, model=step.model.value,
                      claimed_base_rev=step.claimed_base_rev, claimed_pre_hash=step.claimed_pre_hash,
                      rev=self.rev_of(state, step.path), hash_current=current_hash, **shown)
        if self.knobs.rev_scope == "file":
            fields["workspace_rev"] = state.rev
        if round_:
            fields["rebased"] = round_
        if step.replanned is not None:
            fields["replanned"] = step.replanned
        if stamped_rev is not None:
            fields["stamped_base_rev"] = stamped_rev
        if stamped_hash is not None:
            fields["stamped_pre_hash"] = stamped_hash
        if self.knobs.drift_check == "reject" and self.drifted(state, step, current_hash, fields):
            caused = step.replanned is not None and self.replan_caused(state, step)
            fields.update(verdict="rejected:drift", domain="replan_drift" if caused else "stale_plan",
                          **self.truth_fields(state, step))
            state = state._replace(refused=state.refused | {step.step_id},
                                   verdict_steps=state.verdict_steps | {step.step_id})
            records: list[Record] = [("client", "dispatch", fields)]
            if self.knobs.on_reject == "replan":
                state = self.rebase(state, step.step_id, "rejected:drift", records)
            return state, records
        copies, copy = self._next_copy(state, step.step_id)
        message = Message(step, stamped_rev, stamped_hash, "dispatch", copy, round_)
        fields["copy"] = copy.value
        sent = state.sent
        if round_:  # a re-plan's dispatch replaces the step's earlier message
            sent = tuple(entry for entry in sent if entry[0] != step.step_id)
        return state._replace(sent=sent + ((step.step_id, message),), requests=state.requests + (message,),
                              copies=copies), [("client", "dispatch", fields)]

    def drifted(self, state: State, step: Step, current_hash: str, fields: dict[str, Any]) -> bool:
        """drift_check=reject: the step's claimed pre-hash is not the file's current hash -- or, with
        drift_scope=hunk, a hunk the step replaces is not as the step claims (the record shows the claims)."""
        if self.knobs.drift_scope == "file":
            return step.claimed_pre_hash != current_hash
        names, expected = step.shown.value
        snapshot = cast("tuple[Content, ...]", state.snapshot)  # a step exists only once the plan was read
        claimed = expected if step.replanned is None else hunk_digests(snapshot[self.position[step.path]], names)
        fields.update(drift_scope="hunk", claimed_pre_hunks=dict(claimed))
        return claimed != hunk_digests(self.file(state, step.path), names)

    def why_not_retry(self, state: State, event: Action) -> str | None:
        if state.sent_message(cast(str, event.step)) is None:
            return "nothing to re-send: the step was not dispatched"
        return None

    def retry(self, state: State, event: Action) -> tuple[State, list[Record]]:
        """The client re-sends the same stamped message (no re-stamp)."""
        step_id = event.step
        assert step_id is not None  # a retry always names its step (the parser requires it)
        copies, copy = self._next_copy(state, step_id)
        sent = state.sent_message(step_id)
        assert sent is not None  # the guard saw it sent
        message = sent._replace(origin="retry", copy=copy)
        record = ("client", "retry", dict(step=step_id, copy=copy.value, stamped_base_rev=message.stamped_base_rev,
                                          stamped_pre_hash=message.stamped_pre_hash))
        return state._replace(requests=state.requests + (message,), copies=copies), [record]
