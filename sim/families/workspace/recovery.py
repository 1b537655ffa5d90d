"""The client's recovery (``on_reject=replan``): held-back dispatches, and re-planning after a rejection.

With ``on_reject=stop`` (the default) the client does nothing by itself: a
``dispatch`` that may not go yet is skipped, a rejected step stays rejected.
With ``on_reject=replan`` it recovers, as the seed's verdict table asks
("reject, re-plan from current rev"):

* a ``dispatch S`` that may not go yet -- an earlier step is not sent, or,
  under ``pipeline=off``, has no verdict -- is *held back* (recorded with
  ``held``) instead of skipped, and sent (``released``) in the transition
  where it may go, so pipelined and non-pipelined clients are asked to do
  the same work;
* when the answer to its latest dispatch of a step reaches the client
  (``ack``) with a rejection -- or the client itself refuses the step for
  drift -- the planner re-plans that step and every step after it not yet
  sent from the *current* workspace (a ``rebase`` record: new claims, the
  current content as the truth, the executor told of the new base), and the
  client sends the re-planned step at once.  A run re-plans at most
  :data:`MAX_REPLANS` times; after that the client stops as with
  ``on_reject=stop``.

A re-plan redoes work the client believes failed: a step whose rejection
answered a retry of a write that had in fact landed is applied again, and
without a dedupe store that is a ``duplicate_effect``.  The mixin is part of
:class:`~sim.families.workspace.machine.WorkspaceMachine`.
"""

from __future__ import annotations

from typing import cast

from sim.core.machine import Record
from sim.families.workspace.core import WorkspaceCore
from sim.families.workspace.state import Answer, State, Step, content_hash, content_of

#: Re-plans the client makes in one run with on_reject=replan (a limit: docs/limits.md).
MAX_REPLANS = 3


class ClientRecovery(WorkspaceCore):
    """Held-back dispatches and re-plans after a rejection (see the module docstring)."""

    def hold(self, state: State, step_id: str, waiting: str) -> tuple[State, list[Record]]:
        """The client holds a dispatch back until it may go (kept in plan order)."""
        held = tuple(sorted(state.held + (step_id,), key=self.order.__getitem__))
        return state._replace(held=held), [("client", "dispatch", dict(step=step_id, held=True, waiting=waiting))]

    def release(self, state: State, records: list[Record]) -> State:
        """Send every held-back dispatch that may go now, in plan order (their records join ``records``)."""
        while state.held:
            step_id = state.held[0]
            if self.blocked(state, step_id) is not None:
                break
            state = state._replace(held=state.held[1:])
            state, sent = self.send(state, state.steps[self.order[step_id]], released=True)
            records.extend(sent)
        return state

    def answered(self, state: State, answer: Answer, records: list[Record]) -> State:
        """The client has an answer: the executor may drop keys (journal_gc), and a rejection of the client's
        latest dispatch of the step makes it re-plan (on_reject=replan)."""
        wants = False
        if self.knobs.on_reject == "replan" and answer.verdict.startswith("rejected:"):
            message = state.sent_message(answer.step_id)
            wants = message is not None and message.round == answer.round
        if self.knobs.journal_gc != "never":
            state = self.collect(state, answer.step_id, not (wants and state.replans < MAX_REPLANS), records)
        if wants:
            state = self.rebase(state, answer.step_id, answer.verdict, records)
        return state

    def rebase(self, state: State, step_id: str, verdict: str, records: list[Record]) -> State:
        """Re-plan ``step_id`` and the steps after it not yet sent from the current workspace, and send it."""
        if state.replans >= MAX_REPLANS:
            records.append(("planner", "rebase", dict(step=step_id, after=verdict, replans=state.replans,
                                                      stopped=f"max_replans ({MAX_REPLANS}) reached")))
            return state
        position = self.order[step_id]
        done = len(state.sent) + len(state.refused)
        ids = (step_id,) + tuple(s.step_id for s in state.steps[max(position + 1, done):])
        rebased = self._rebased_steps(state, ids)
        number = state.replans + 1
        state = state._replace(
            steps=tuple(rebased.get(s.step_id, s) for s in state.steps), snapshot=state.files,
            snapshot_rev=state.rev, plan_base_rev=state.rev, snapshot_revs=state.file_revs, replans=number,
            refused=state.refused - {step_id}, verdict_steps=state.verdict_steps - {step_id})
        records.append(("planner", "rebase", dict(
            step=step_id, after=verdict, steps=list(ids), model=rebased[step_id].model.value, replans=number,
            snapshot_rev=state.rev, snapshot_revs=self.revs_shown(state.file_revs))))
        state, sent = self.send(state, state.steps[position], number)
        records.extend(sent)
        return state

    def _rebased_steps(self, state: State, ids: tuple[str, ...]) -> dict[str, Step]:
        """The steps re-planned from the current workspace: their claims are current and so is their truth."""
        view = {path: dict(content) for path, content in zip(self.paths, state.files)}
        earlier = dict.fromkeys(self.paths, 0)
        model = state.steps[self.order[ids[0]]].model.value
        out = {}
        for offset, step_id in enumerate(ids):
            old = state.steps[self.order[step_id]]
            before = view[old.path]
            before_hash = content_hash(content_of(before))
            if self.knobs.rev_scope == "file":
                claimed = cast("tuple[int, ...]", state.file_revs)[self.position[old.path]] + earlier[old.path]
                earlier[old.path] += 1
            else:
                claimed = state.rev + offset
            out[step_id] = self.new_step(step_id, old.path, old.patch, claimed, before_hash,
                                         tuple((h, before.get(h, "")) for h, _ in old.patch), None, before_hash,
                                         model)
            before = dict(before)
            before.update(old.patch)
            view[old.path] = before
        return out
