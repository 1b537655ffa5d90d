"""The human: an interfering writer who edits a file, or one hunk of it, after the plan was read."""

from __future__ import annotations

from typing import Any

from sim.core.machine import Record
from sim.families.workspace.core import WorkspaceCore
from sim.families.workspace.scenario import Action
from sim.families.workspace.state import State, content_hash, patched

#: Edits remembered by a machine (each a few hundred bytes, sharing its contents with the states).
EDIT_CACHE_ENTRIES = 100_000


class Human(WorkspaceCore):
    """A human edit: a write the plan did not foresee (default content ``human-N``)."""

    def why_not_human_edit(self, state: State, event: Action) -> str | None:
        return "human edits are interference after the plan" if state.snapshot is None else None

    def human_edit(self, state: State, event: Action) -> tuple[State, list[Record]]:
        """A human writes a file, or one hunk of it (default content ``human-N``).  The most frequent event of
        exhaustive search (every file and hunk, in every state after the plan), so the content it leaves and its
        hash are computed once per (content before, hunk, text)."""
        edits, path = state.edits + 1, event.path
        assert path is not None  # a human edit always names its file (the parser requires it)
        content = event.content if event.content is not None else f"human-{edits}"
        index = self.position[path]
        before = state.files[index]
        edited = self._edited.get((before, event.hunk, content))
        if edited is None:  # a pure function of the three: computed once (a search makes the same edit often)
            # a whole-file edit replaces every hunk's text in place, as patching each would
            written = patched(before, ((event.hunk, content),)) if event.hunk else \
                tuple([(h, content) for h, _ in before])
            edited = (written, content_hash(written))
            if len(self._edited) < EDIT_CACHE_ENTRIES:
                self._edited[(before, event.hunk, content)] = edited
        after, hash_after = edited
        files, rev, revs = self._wrote(state, index, after)
        fields: dict[str, Any]
        if revs is None:  # the state built directly, not from a dict of changes (the most frequent step)
            state = state._replace(edits=edits, files=files, rev=rev)
            fields = dict(path=path, content=content, rev_after=rev, hash_after=hash_after)
        else:
            state = state._replace(edits=edits, files=files, rev=rev, file_revs=revs)
            fields = dict(path=path, content=content, rev_after=revs[index], hash_after=hash_after, workspace_rev=rev)
        if event.hunk:
            fields["hunk"] = event.hunk
        return state, [("human", "human_edit", fields)]
