"""The planner and the router: the plan read from a snapshot, and a silent model swap that re-plans.

A plan is a pure function of the files it reads (cached per machine); a
re-plan emits the undispatched steps again from another model, claiming the
old plan's base and pre-hash -- the seed's re-plan drift, which the executor
is not told of.  ``overlap_check=on`` rejects at admission a plan whose
sibling steps share a hunk."""

from __future__ import annotations

import functools

from sim.core.machine import Record
from sim.families.workspace.core import WorkspaceCore
from sim.families.workspace.scenario import Action
from sim.families.workspace.state import Content, State, Step, content_hash, content_of

#: Re-plans remembered per machine (a re-plan is a pure function of the files it reads and the steps left).
REPLAN_CACHE_ENTRIES = 65_536


@functools.lru_cache(maxsize=1024)
def model_name(number: int) -> str:
    """model-A, model-B, ... model-Z, then model-A27, ..."""
    return f"model-{chr(ord('A') + (number - 1) % 26)}{'' if number <= 26 else number}"


def _overlaps(steps: tuple[Step, ...]) -> list[tuple[str, str]]:
    pairs = []
    for i, first in enumerate(steps):
        names = {h for h, _ in first.patch}
        for second in steps[i + 1:]:
            if first.path == second.path and names & {h for h, _ in second.patch}:
                pairs.append((first.step_id, second.step_id))
    return pairs


class Planner(WorkspaceCore):
    """The planner (``plan``) and the router (``replan``)."""

    def why_not_plan(self, state: State, event: Action) -> str | None:
        return "the plan was already made" if state.snapshot is not None else None

    def plan(self, state: State, event: Action) -> tuple[State, list[Record]]:
        inputs = (state.files, state.rev, state.model_number, state.file_revs)
        planned = self._planned.get(inputs)
        if planned is None:
            planned = self._planned[inputs] = self._plan_steps(*inputs)
        steps, overlap = planned
        verdict = "rejected:overlap" if overlap else None
        record = ("planner", "plan", dict(
            model=model_name(state.model_number), snapshot_rev=state.rev, plan_base_rev=state.rev,
            steps=[s.step_id for s in steps], pipeline=self.knobs.pipeline,
            overlap=[list(pair) for pair in overlap] or None, verdict=verdict, domain="stale_plan" if verdict else None,
            snapshot_revs=self.revs_shown(state.file_revs)))
        return state._replace(snapshot=state.files, snapshot_rev=state.rev, steps=steps, plan_base_rev=state.rev,
                              plan_rejected=bool(overlap), snapshot_revs=state.file_revs), [record]

    def _plan_steps(self, files: tuple[Content, ...], rev: int, model_number: int,
                    file_revs: tuple[int, ...] | None = None) -> tuple[tuple[Step, ...], list[tuple[str, str]]]:
        """The plan read from these files (a pure function of them, so computed once): steps and overlaps.

        A step claims the rev its file will have once the plan's earlier steps applied: the workspace's rev
        plus its position, or (rev_scope=file) its file's rev plus the earlier steps on that file."""
        model = model_name(model_number)
        view = {path: dict(content) for path, content in zip(self.paths, files)}
        earlier = dict.fromkeys(self.paths, 0)
        steps = []
        for offset, spec in enumerate(self.plan_specs):
            before = view[spec.path]
            before_hash = content_hash(tuple(before.items()))
            if file_revs is None:
                claimed = rev + offset
            else:
                claimed = file_revs[self.position[spec.path]] + earlier[spec.path]
                earlier[spec.path] += 1
            steps.append(self.new_step(spec.step_id, spec.path, content_of(spec.patch), claimed,
                                       before_hash, tuple((h, before.get(h, "")) for h in spec.patch), None,
                                       before_hash, model))
            before = dict(before)
            before.update(spec.patch)
            view[spec.path] = before
        overlap = _overlaps(tuple(steps)) if self.knobs.overlap_check == "on" else []
        return tuple(steps), overlap

    def why_not_replan(self, state: State, event: Action) -> str | None:
        return "no plan to re-plan yet" if state.snapshot is None else None

    def replan(self, state: State, event: Action) -> tuple[State, list[Record]]:
        """A new model re-plans the undispatched steps; they still claim the old plan's base and pre-hash.

        The executor is not told (the seed's re-plan drift)."""
        stale = event.point == "stale"
        done = len(state.sent) + len(state.refused)
        # undispatched: the plan's steps from ``done`` on (a state's steps are the plan's, in order: check_state)
        remaining = self.plan_ids[done:]
        # the guard (why_not_replan) admits a re-plan only once the plan was read, so its snapshot is set
        snapshot, snapshot_rev = state.snapshot, state.snapshot_rev
        assert snapshot is not None and snapshot_rev is not None
        base = snapshot if stale else state.files
        inputs = (stale, state.model_number, base, snapshot, snapshot_rev, done, state.snapshot_revs)
        replanned = self._replanned.get(inputs)
        if replanned is None:
            steps_by_id = self._replan_steps(stale, state.model_number, base, snapshot, snapshot_rev, remaining,
                                             state.snapshot_revs)
            replanned = (tuple(steps_by_id), tuple(steps_by_id.values()))
            if len(self._replanned) < REPLAN_CACHE_ENTRIES:
                self._replanned[inputs] = replanned
        ids, new_steps = replanned
        number = state.model_number + 1
        record = ("router", "replan", dict(stale=True if stale else None, model=model_name(number),
                                           steps=list(ids), claimed_base_rev=snapshot_rev,
                                           snapshot_revs=self.revs_shown(state.snapshot_revs)))
        # the re-planned steps are the undispatched ones, in plan order (``_replan_steps`` keys them in that order)
        return state._replace(model_number=number, steps=state.steps[:done] + new_steps), [record]

    def _replan_steps(self, stale: bool, model_number: int, base: tuple[Content, ...], snapshot: tuple[Content, ...],
                      snapshot_rev: int, remaining: tuple[str, ...],
                      snapshot_revs: tuple[int, ...] | None = None) -> dict[str, Step]:
        """The steps a new model emits for the remaining ones (a pure function of its inputs, so cached).

        They claim the old plan's base: its rev (rev_scope=file: the file's rev at the plan) and the old
        snapshot's hash of the file."""
        model = model_name(model_number + 1)
        kind = "replan stale" if stale else "replan"
        view = {path: dict(content) for path, content in zip(self.paths, base)}
        replanned: dict[str, Step] = {}
        for step_id in remaining:
            spec = self.replan_specs.get(step_id)
            patch = content_of(spec.patch) if spec is not None else tuple(
                (h, f"{c}~{model}") for h, c in self.specs[step_id].patch.items())
            path = spec.path if spec is not None else self.specs[step_id].path
            before = view[path]
            claimed = snapshot_rev if snapshot_revs is None else snapshot_revs[self.position[path]]
            replanned[step_id] = self.new_step(
                step_id, path, patch, claimed, content_hash(snapshot[self.position[path]]),
                tuple((h, before.get(h, "")) for h, _ in patch), kind, content_hash(tuple(before.items())), model)
            before = dict(before)
            before.update(patch)
            view[path] = before
        return replanned
