"""The human: an interfering writer who edits a file, or one hunk of it, after the plan was read."""

from __future__ import annotations

from typing import Any, cast

from sim.core.machine import Record
from sim.families.workspace.core import WorkspaceCore
from sim.families.workspace.scenario import Action
from sim.families.workspace.state import State


class Human(WorkspaceCore):
    """A human edit: a write the plan did not foresee (default content ``human-N``)."""

    def why_not_human_edit(self, state: State, event: Action) -> str | None:
        return "human edits are interference after the plan" if state.snapshot is None else None

    def human_edit(self, state: State, event: Action) -> tuple[State, list[Record]]:
        """A human writes a file, or one hunk of it (default content ``human-N``)."""
        edits, path = state.edits + 1, cast(str, event.path)  # a human edit always names its file
        content = event.content if event.content is not None else f"human-{edits}"
        hunks = [event.hunk] if event.hunk else [h for h, _ in self.file(state, path)]
        state = state._replace(edits=edits, **self._written(state, path, tuple((h, content) for h in hunks)))
        fields: dict[str, Any] = dict(path=path, content=content, rev_after=self.rev_of(state, path),
                                      hash_after=self.hash(state, path))
        if self.knobs.rev_scope == "file":
            fields["workspace_rev"] = state.rev
        if event.hunk:
            fields["hunk"] = event.hunk
        record = ("human", "human_edit", fields)
        return state, [record]
