"""Checkpoints, the verifier's ``tests_fail``, and a bounded journal.

**Checkpoints** (``checkpoint=per_step``).  Before each write of a step the
executor stores a checkpoint of the step's file -- its content just before
the write -- durably, with the write.  ``tests_fail PATH`` is the verifier
finding PATH broken after a step applied: with ``checkpoint=per_step`` the
executor restores the checkpoint of the latest step applied to PATH that
is still in place (a write: rev + 1) and records verdict ``compensated``;
with ``checkpoint=none`` the failure is recorded and nothing can be undone.
A restore writes the whole file back, so anything written to PATH after
that step -- a human's edit -- is destroyed with it; the record carries what
the step left as the truth, and ``lost_update`` catches such a restore.

**A bounded journal** (``journal_gc``).  Keys are dropped (a
``journal_remove`` record each) when the client's answer for a step arrives
(``eager``), when every step of the plan has been answered (``session_end``),
or when its answer arrived *and* a checkpoint proves the step applied
(``after_checkpoint``: the checkpoint records the step's key with the write,
and the executor's dedupe lookup reads that record too).  A retry or
duplicate arriving after its key was dropped is a new step to the executor:
under a fence that lets it through, it is applied again.

The mixin is part of :class:`~sim.families.workspace.machine.WorkspaceMachine`.
"""

from __future__ import annotations

from typing import Any, cast

from sim.core.machine import Record
from sim.families.workspace.core import WorkspaceCore
from sim.families.workspace.scenario import Action
from sim.families.workspace.state import Checkpoint, Label, Message, State, content_hash, hunk_digests, text_of


class CheckpointsAndJournal(WorkspaceCore):
    """Checkpoint per step, restore on a test failure, and the journal's garbage collection."""

    # -- checkpoints --------------------------------------------------------------------------------

    def checkpoint(self, state: State, message: Message, key: tuple[str, int | None], fields: dict[str, Any],
                   changes: dict[str, Any]) -> None:
        """Store the step's checkpoint with its write (and, with journal_gc=after_checkpoint, its key)."""
        step = message.step
        index = self.position[step.path]
        changes["checkpoints"] = state.checkpoints + (
            Checkpoint(step.path, step.step_id, state.files[index], Label(changes["files"][index])),)
        fields["checkpoint"] = "per_step"
        if self.knobs.journal_gc == "after_checkpoint" and self.knobs.dedupe != "off":
            changes["proved"] = state.proved | {key}

    def why_not_tests_fail(self, state: State, event: Action) -> str | None:
        if self.knobs.checkpoint == "per_step":
            for checkpoint in state.checkpoints:
                if checkpoint.path == event.path:
                    return None
        else:
            for step in state.steps:
                if step.path == event.path and step.step_id in state.applied:
                    return None
        return f"no step's write to {event.path} is in place for its tests to blame"

    def tests_fail(self, state: State, event: Action) -> tuple[State, list[Record]]:
        """The verifier finds PATH broken: restore the latest checkpoint of it (checkpoint=per_step)."""
        path = cast(str, event.path)  # a tests_fail always names its file (the parser requires it)
        if self.knobs.checkpoint == "none":
            steps = [s.step_id for s in state.steps if s.path == path and s.step_id in state.applied]
            return state, [("executor", "tests_fail", dict(path=path, steps=steps, checkpoint="none"))]
        index = max(i for i, checkpoint in enumerate(state.checkpoints) if checkpoint.path == path)
        checkpoint = state.checkpoints[index]
        position = self.position[path]
        current, left = state.files[position], checkpoint.left.value
        rewritten = tuple(sorted(name for name, text in current if text != text_of(checkpoint.before, name)))
        files = list(state.files)
        files[position] = checkpoint.before
        changes: dict[str, Any] = dict(files=tuple(files), rev=state.rev + 1,
                                       checkpoints=state.checkpoints[:index] + state.checkpoints[index + 1:])
        if self.knobs.rev_scope == "file":
            revs = list(cast("tuple[int, ...]", state.file_revs))  # set whenever rev_scope=file
            revs[position] += 1
            changes["file_revs"] = tuple(revs)
        state = state._replace(**changes)
        fields = dict(path=path, step=checkpoint.step_id, checkpoint="per_step", verdict="compensated",
                      domain="checkpoint_restore", patch_hunks=list(rewritten),
                      expected_prior_hunks=hunk_digests(left, rewritten), hunks_before=hunk_digests(current, rewritten),
                      expected_prior_hash=content_hash(left), hash_before=content_hash(current),
                      hash_after=content_hash(checkpoint.before), rev_after=self.rev_of(state, path))
        return state, [("executor", "tests_fail", fields)]

    # -- the journal's garbage collection --------------------------------------------------------------

    def collect(self, state: State, step_id: str, done: bool, records: list[Record]) -> State:
        """The client has ``step_id``'s answer (``done``: it will not re-plan the step): drop the keys the
        protocol's ``journal_gc`` says may go now."""
        if self.knobs.dedupe == "off":
            return state
        name = "journal" if self.knobs.dedupe == "journal" else "memory"
        store = getattr(state, name)
        if self.knobs.journal_gc == "eager":
            dropped = {key for key in store if key[0] == step_id}
        elif self.knobs.journal_gc == "after_checkpoint":
            dropped = {key for key in store if key[0] == step_id and key in state.proved}
        else:  # session_end
            if state.session is None:
                return state
            session = state.session | {step_id} if done else state.session
            if not self.order.keys() <= session | state.refused:
                return state._replace(session=session)
            dropped, state = set(store), state._replace(session=None)
        if not dropped:
            return state
        for key in sorted(dropped):
            records.append(("executor", "journal_remove", dict(step=key[0], journal_key=f"{key[0]}@{key[1]}",
                                                               journal_gc=self.knobs.journal_gc)))
        return state._replace(**{name: store - dropped})
