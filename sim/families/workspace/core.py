"""What every part of the workspace machine shares: the protocol read once, the plan, and how the state is read.

:class:`WorkspaceCore` holds the attributes a (scenario, protocol) fixes --
the typed knob values, the files' positions,
the plan's steps -- and the small readers every transition uses.  Each actor's
transitions are a mixin of their own (:mod:`~sim.families.workspace.planner`,
:mod:`~sim.families.workspace.client`, :mod:`~sim.families.workspace.network`,
:mod:`~sim.families.workspace.human`, :mod:`~sim.families.workspace.executor`,
:mod:`~sim.families.workspace.recovery`, :mod:`~sim.families.workspace.checkpoints`);
where one calls another across concerns, the seam is declared here, once, with
its contract, and :class:`~sim.families.workspace.machine.WorkspaceMachine`
composes them.
"""

from __future__ import annotations

import abc
from typing import Any, cast

from sim.core.footprint import Part, keyed, named_parts
from sim.core.knobs import Protocol
from sim.core.machine import Machine, Record
from sim.families.workspace.knobs import WorkspaceKnobs
from sim.families.workspace.scenario import Action, StepSpec, WorkspaceScenario
from sim.families.workspace.state import (
    Answer,
    Content,
    Label,
    Message,
    State,
    Step,
    assert_consistent,
    content_hash,
    content_of,
    hunk_digests,
    patched,
)

#: The actor that performs each kind of event (a skipped event is recorded under it).
ACTORS = {"plan": "planner", "replan": "router", "dispatch": "client", "retry": "client", "preempt": "executor",
          "human_edit": "human", "deliver": "network", "duplicate": "network", "ack": "network",
          "lose_ack": "network", "tests_fail": "executor", "settle": "network"}

#: The per-file revisions' type (``State.file_revs``: set whenever rev_scope=file).
Revs = tuple[int, ...]


class WorkspaceCore(Machine):
    """The attributes and readers every workspace transition shares, and the seams between concerns."""

    def __init__(self, scenario: WorkspaceScenario, protocol: Protocol):
        self.scenario, self.protocol = scenario, protocol
        self.knobs = WorkspaceKnobs.of(protocol)  # every transition reads the protocol here, typed
        self.paths = tuple(scenario.files)
        self.position = {path: i for i, path in enumerate(self.paths)}
        self.plan_specs: list[StepSpec] = list(scenario.plan)
        self.replan_specs = {spec.step_id: spec for spec in scenario.replan}
        self.specs = {spec.step_id: spec for spec in self.plan_specs}
        self.order = {spec.step_id: i for i, spec in enumerate(self.plan_specs)}
        self.plan_ids = tuple(self.order)
        self._replanned: dict[tuple, tuple[tuple[str, ...], tuple[Step, ...]]] = {}  # inputs -> (ids, steps)
        self._planned: dict[tuple, tuple[tuple[Step, ...], list[tuple[str, str]]]] = {}
        #: (a file's content, the hunk edited or None, the text written) -> (the content after, its hash)
        self._edited: dict[tuple[Content, str | None, str], tuple[Content, str]] = {}

    # -- the contract (what exhaustive search and the law suite read) --------------------------------------

    def initial(self) -> State:
        files = tuple(content_of(self.scenario.files[path]) for path in self.paths)
        return State(rev=0, files=files, journal=frozenset(), memory=frozenset(), model_number=1, snapshot=None,
                     snapshot_rev=None, steps=(), plan_base_rev=None, plan_rejected=False, sent=(),
                     refused=frozenset(), verdict_steps=frozenset(), applied=frozenset(), armed=None, edits=0,
                     requests=(), answers=(), copies=Label((0,) * len(self.plan_specs)), incarnation=Label(1),
                     file_revs=(0,) * len(self.paths) if self.knobs.rev_scope == "file" else None)

    def parts(self, state: State) -> dict[Part, Any]:
        """The state's fields as parts, those the footprints key split: ``files`` and ``file_revs`` by path;
        ``journal``, ``memory`` and ``proved`` (keys) and ``refused``, ``verdict_steps``, ``applied`` (steps) by
        step (``sim.families.workspace.knobs``)."""
        out = named_parts(state)
        for name in ("files", "file_revs"):
            values = out.pop((name, None))
            out.update(keyed(name, zip(self.paths, values if values is not None else (None,) * len(self.paths))))
        for name in ("journal", "memory", "proved"):
            keys = out.pop((name, None))
            out.update(keyed(name, ((step, frozenset(k for k in keys if k[0] == step)) for step in self.order)))
        for name in ("refused", "verdict_steps", "applied"):
            steps = out.pop((name, None))
            out.update(keyed(name, ((step, step in steps) for step in self.order)))
        return out

    def check_state(self, state: State) -> None:
        assert_consistent(state, self.plan_ids, self.paths, self.knobs.rev_scope == "file")

    def skip_record(self, event: Action, reason: str) -> Record:
        return (ACTORS[event.kind], event.kind, dict(action=str(event), skipped=True, reason=reason))

    # -- reading the state ---------------------------------------------------------------------------------

    def file(self, state: State, path: str) -> Content:
        return state.files[self.position[path]]

    def hash(self, state: State, path: str) -> str:
        return content_hash(state.files[self.position[path]])

    def rev_of(self, state: State, path: str) -> int:
        """The revision a step on ``path`` is stamped with and fenced by: the workspace's, or (rev_scope=file)
        the file's own."""
        return cast(Revs, state.file_revs)[self.position[path]] if self.knobs.rev_scope == "file" else state.rev

    def _written(self, state: State, path: str, patch: Content) -> dict[str, Any]:
        """The changes of a write: the file patched, rev + 1 (and, with rev_scope=file, the file's rev + 1)."""
        index = self.position[path]
        files, rev, revs = self._wrote(state, index, patched(state.files[index], patch))
        return dict(files=files, rev=rev) if revs is None else dict(files=files, rev=rev, file_revs=revs)

    def _wrote(self, state: State, index: int, content: Content) -> tuple[tuple[Content, ...], int, Revs | None]:
        """A write that leaves the file at ``index`` holding ``content``: the files, the rev (+ 1) and, with
        rev_scope=file, the files' revs (the written one + 1; None with one workspace rev).  The one rule of a
        write, for the executor's (:meth:`_written`) and the human's, which builds its state from it directly."""
        files = state.files[:index] + (content,) + state.files[index + 1:]
        if self.knobs.rev_scope == "file":
            revs = list(cast(Revs, state.file_revs))
            revs[index] += 1
            return files, state.rev + 1, tuple(revs)
        return files, state.rev + 1, None

    def revs_shown(self, revs: tuple[int, ...] | None) -> dict[str, int] | None:
        """Per-file revisions as the history shows them (None, so left out, with one workspace rev)."""
        return None if revs is None else dict(zip(self.paths, revs))

    def replan_caused(self, state: State, step: Step) -> bool:
        """Is a re-planned step's outcome the re-plan's doing?  Yes when the file, in the hunks the first plan's
        step patched, is as that plan expected it there (its snapshot and the plan's earlier steps of the file:
        that step would have met what its author expected); no when it changed since (a stale plan, whatever
        the re-plan did).  True for a step never re-planned.  Reads ``snapshot`` and ``files[path]`` (the
        deliver's and a drift check's footprints)."""
        if step.replanned is None or state.snapshot is None:
            return True
        spec = self.specs.get(step.step_id)
        if spec is None or spec.path != step.path:  # a re-plan that moved the step to another file caused it
            return True
        names = tuple(sorted(spec.patch))
        position = self.position[spec.path]
        expected = state.snapshot[position]  # the file as the first plan expected it at this step: its snapshot
        for earlier in self.plan_specs[:self.order[step.step_id]]:  # and the plan's earlier steps of the file
            if earlier.path == spec.path:
                expected = patched(expected, content_of(earlier.patch))
        return hunk_digests(expected, names) == hunk_digests(state.files[position], names)

    def truth_fields(self, state: State, step: Step) -> dict[str, Any]:
        names, expected = step.shown.value
        return dict(expected_prior_hash=step.truth_hash.value, patch_hunks=list(names),
                    expected_prior_hunks=dict(expected),
                    hunks_before=hunk_digests(self.file(state, step.path), names))

    def new_step(self, step_id: str, path: str, patch: Content, claimed_base_rev: int, claimed_pre_hash: str,
                 truth: Content, replanned: str | None, truth_hash: str, model: str) -> Step:
        names = tuple(sorted(h for h, _ in patch))
        return Step(step_id, path, patch, claimed_base_rev, claimed_pre_hash, truth, replanned, Label(truth_hash),
                    Label(model), Label((names, hunk_digests(truth, names))))

    def _next_copy(self, state: State, step_id: str) -> tuple[Label, Label]:
        """(the copy counters after one more copy of the step, that copy's number)."""
        copies = state.copies.value
        index = self.order[step_id]
        copy = copies[index] + 1
        return Label(copies[:index] + (copy,) + copies[index + 1:]), Label(copy)

    # -- the seams between concerns (each implemented by one mixin) -------------------------------------------

    @abc.abstractmethod
    def send(self, state: State, step: Step, round_: int = 0, **shown: Any) -> tuple[State, list[Record]]:
        """The client stamps ``step`` and sends it, or refuses it for drift (:mod:`~sim.families.workspace.client`)."""

    @abc.abstractmethod
    def blocked(self, state: State, step_id: str) -> str | None:
        """Why a step the client means to send may not go yet, or None (:mod:`~sim.families.workspace.client`)."""

    @abc.abstractmethod
    def serve(self, state: State, message: Message) -> tuple[State, list[Record]]:
        """The executor serves one delivered message (:mod:`~sim.families.workspace.executor`)."""

    @abc.abstractmethod
    def dying(self, state: State) -> dict[str, Any]:
        """What the executor's death changes (:mod:`~sim.families.workspace.executor`)."""

    @abc.abstractmethod
    def answer(self, state: State, event: Action) -> tuple[State, list[Record]]:
        """An answer reaches the client or is lost (:mod:`~sim.families.workspace.network`)."""

    @abc.abstractmethod
    def hold(self, state: State, step_id: str, waiting: str) -> tuple[State, list[Record]]:
        """The client holds a dispatch back (:mod:`~sim.families.workspace.recovery`)."""

    @abc.abstractmethod
    def release(self, state: State, records: list[Record]) -> State:
        """Send every held-back dispatch that may go now (:mod:`~sim.families.workspace.recovery`)."""

    @abc.abstractmethod
    def rebase(self, state: State, step_id: str, verdict: str, records: list[Record]) -> State:
        """Re-plan a rejected step from the current workspace and send it (:mod:`~sim.families.workspace.recovery`)."""

    @abc.abstractmethod
    def answered(self, state: State, answer: Answer, records: list[Record]) -> State:
        """The client has an answer: drop keys, re-plan a rejection (:mod:`~sim.families.workspace.recovery`)."""

    @abc.abstractmethod
    def checkpoint(self, state: State, message: Message, key: tuple[str, int | None], fields: dict[str, Any],
                   changes: dict[str, Any]) -> None:
        """Store the step's checkpoint with its write (:mod:`~sim.families.workspace.checkpoints`)."""

    @abc.abstractmethod
    def collect(self, state: State, step_id: str, done: bool, records: list[Record]) -> State:
        """Drop the dedupe keys the protocol's journal_gc lets go (:mod:`~sim.families.workspace.checkpoints`)."""
