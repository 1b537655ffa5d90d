"""The workspace family's transition system: guards written once, transitions over the state value.

Each event of the vocabulary has a guard (``why_not_<kind>``: why it cannot
happen now, or None) and a transition (``<kind>``: the next state and the
history records); ``ack`` and ``lose_ack`` share ``answer``.  Both are the
documented seam for a planted bug: a subclass overrides one of them (or
:meth:`WorkspaceMachine.die`) and the family takes the class.  The SimPy actors (:mod:`sim.families.workspace.actors`)
perform their events through :meth:`WorkspaceMachine.perform`, and
exhaustive search calls the same guard and step directly.  A delivery is two
parts, as in the run: the network takes the oldest copy in flight
(:meth:`WorkspaceMachine.take`) and the executor serves it
(:meth:`WorkspaceMachine.serve`); :meth:`WorkspaceMachine.step` does both.

At delivery the executor does, in order: dedupe lookup (``deduped``, the
stored result replayed); rev check (``rejected:stale_rev``); hash check
(``rejected:pre_hash``); otherwise write, journal, ``applied``.  The client's
recovery (``on_reject=replan``: held-back dispatches, re-plans after a
rejection) is in :mod:`sim.families.workspace.recovery`; checkpoints, the
verifier's ``tests_fail`` and the journal's garbage collection in
:mod:`sim.families.workspace.checkpoints`.  Every mechanism a knob adds
leaves the states, records and skip reasons of a protocol without it as they
were.  A
preemption armed by ``preempt POINT`` strikes at that point of the next
delivery; the executor never decides a fault.  Stamps travel in the
message, so a preemption cannot lose what a fence checks; the message also
carries the author's truth for the history only -- no transition decides on
it.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, cast

from sim.core.footprint import Part, keyed, named_parts
from sim.core.knobs import Protocol
from sim.core.machine import Machine, Record
from sim.families.workspace.checkpoints import CheckpointsAndJournal
from sim.families.workspace.knobs import WorkspaceKnobs
from sim.families.workspace.recovery import ClientRecovery
from sim.families.workspace.scenario import Action, StepSpec, WorkspaceScenario
from sim.families.workspace.state import (
    Answer,
    Content,
    Label,
    Message,
    State,
    Step,
    content_hash,
    content_of,
    hunk_digests,
    patched,
)

#: Re-plans remembered per machine (a re-plan is a pure function of the files it reads and the steps left).
REPLAN_CACHE_ENTRIES = 65_536
#: The actor that performs each kind of event (a skipped event is recorded under it).
ACTORS = {"plan": "planner", "replan": "router", "dispatch": "client", "retry": "client", "preempt": "executor",
          "human_edit": "human", "deliver": "network", "duplicate": "network", "ack": "network",
          "lose_ack": "network", "tests_fail": "executor", "settle": "network"}
#: Rounds of a ``settle`` event: each delivers every request and then every answer in flight at its start.
SETTLE_ROUNDS_MAX = 8


#: The per-file revisions' type (``State.file_revs``: set whenever rev_scope=file).
Revs = tuple[int, ...]


@functools.lru_cache(maxsize=1024)
def model_name(number: int) -> str:
    """model-A, model-B, ... model-Z, then model-A27, ..."""
    return f"model-{chr(ord('A') + (number - 1) % 26)}{'' if number <= 26 else number}"


def domain_of(message: Message) -> str:
    """The failure domain of a delivery's verdict: lost_ack, duplicate_delivery, replan_drift, stale_plan."""
    if message.origin == "retry":
        return "lost_ack"
    if message.origin == "duplicate":
        return "duplicate_delivery"
    if message.step.replanned:
        return "replan_drift"
    return "stale_plan"


def _overlaps(steps: tuple[Step, ...]) -> list[tuple[str, str]]:
    pairs = []
    for i, first in enumerate(steps):
        names = {h for h, _ in first.patch}
        for second in steps[i + 1:]:
            if first.path == second.path and names & {h for h, _ in second.patch}:
                pairs.append((first.step_id, second.step_id))
    return pairs


class WorkspaceMachine(ClientRecovery, CheckpointsAndJournal, Machine):
    """Planner, router, client, human, network and executor of one (scenario, protocol).

    A planted bug (for the quality suite) is a subclass overriding one transition; the family takes the
    class (``WorkspaceFamily(machine=...)``).
    """

    def __init__(self, scenario: WorkspaceScenario, protocol: Protocol):
        self.scenario, self.protocol = scenario, protocol
        self.knobs = knobs = WorkspaceKnobs.of(protocol)
        self.fence, self.stamp_at, self.dedupe = knobs.fence, knobs.stamp_at, knobs.dedupe
        self.atomic_journal = knobs.journal_write == "atomic"
        self.pipeline_off = knobs.pipeline == "off"
        self.file_scope = knobs.rev_scope == "file"
        self.drift_reject = knobs.drift_check == "reject"
        self.hunk_drift = knobs.drift_scope == "hunk"
        self.recovery = knobs.on_reject == "replan"
        self.per_step = knobs.checkpoint == "per_step"
        self.gc = knobs.journal_gc
        self.acks_react = self.recovery or self.gc != "never"
        self.proof_dedupes = self.per_step and self.gc == "after_checkpoint"
        self.paths = tuple(scenario.files)
        self.position = {path: i for i, path in enumerate(self.paths)}
        self.plan_specs: list[StepSpec] = list(scenario.plan)
        self.replan_specs = {spec.step_id: spec for spec in scenario.replan}
        self.specs = {spec.step_id: spec for spec in self.plan_specs}
        self.order = {spec.step_id: i for i, spec in enumerate(self.plan_specs)}
        self._replanned: dict[tuple, tuple[tuple[str, ...], tuple[Step, ...]]] = {}  # inputs -> (ids, steps)
        self._planned: dict[tuple, tuple[tuple[Step, ...], list[tuple[str, str]]]] = {}
        self._guards: dict[str, Callable[[State, Action], str | None]] = {
            "plan": self.why_not_plan, "replan": self.why_not_replan, "dispatch": self.why_not_dispatch,
            "retry": self.why_not_retry, "human_edit": self.why_not_human_edit, "preempt": self.why_not_preempt,
            "deliver": self.why_not_deliver, "duplicate": self.why_not_duplicate, "ack": self.why_not_answer,
            "lose_ack": self.why_not_answer, "tests_fail": self.why_not_tests_fail, "settle": self.why_not_settle,
        }
        self._steps: dict[str, Callable[[State, Action], tuple[State, list[Record]]]] = {
            "plan": self.plan, "replan": self.replan, "dispatch": self.dispatch, "retry": self.retry,
            "human_edit": self.human_edit, "preempt": self.preempt, "deliver": self.deliver,
            "duplicate": self.duplicate, "ack": self.answer, "lose_ack": self.answer,
            "tests_fail": self.tests_fail, "settle": self.settle,
        }

    # -- the contract --------------------------------------------------------------------------------

    def initial(self) -> State:
        files = tuple(content_of(self.scenario.files[path]) for path in self.paths)
        return State(rev=0, files=files, journal=frozenset(), memory=frozenset(), model_number=1, snapshot=None,
                     snapshot_rev=None, steps=(), plan_base_rev=None, plan_rejected=False, sent=(),
                     refused=frozenset(), verdict_steps=frozenset(), applied=frozenset(), armed=None, edits=0,
                     requests=(), answers=(), copies=Label((0,) * len(self.plan_specs)), incarnation=Label(1),
                     file_revs=(0,) * len(self.paths) if self.file_scope else None)

    def why_not(self, state: State, event: Action) -> str | None:
        return self._guards[event.kind](state, event)

    def resolve(self, event: Action):
        return self._guards[event.kind], self._steps[event.kind]

    def step(self, state: State, event: Action) -> tuple[State, list[Record]]:
        return self._steps[event.kind](state, event)

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

    def skip_record(self, event: Action, reason: str) -> Record:
        return (ACTORS[event.kind], event.kind, dict(action=str(event), skipped=True, reason=reason))

    # -- reading the state -----------------------------------------------------------------------------

    def file(self, state: State, path: str) -> Content:
        return state.files[self.position[path]]

    def hash(self, state: State, path: str) -> str:
        return content_hash(state.files[self.position[path]])

    def rev_of(self, state: State, path: str) -> int:
        """The revision a step on ``path`` is stamped with and fenced by: the workspace's, or (rev_scope=file)
        the file's own."""
        return cast(Revs, state.file_revs)[self.position[path]] if self.file_scope else state.rev

    def _written(self, state: State, path: str, patch: Content) -> dict[str, Any]:
        """The changes of a write: the file patched, rev + 1 (and, with rev_scope=file, the file's rev + 1)."""
        files = list(state.files)
        index = self.position[path]
        files[index] = patched(files[index], patch)
        if self.file_scope:
            revs = list(cast(Revs, state.file_revs))
            revs[index] += 1
            return dict(files=tuple(files), rev=state.rev + 1, file_revs=tuple(revs))
        return dict(files=tuple(files), rev=state.rev + 1)

    def revs_shown(self, revs: tuple[int, ...] | None) -> dict[str, int] | None:
        """Per-file revisions as the history shows them (None, so left out, with one workspace rev)."""
        return None if revs is None else dict(zip(self.paths, revs))

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

    # -- planner and router ----------------------------------------------------------------------------

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
        remaining = tuple([s.step_id for s in state.steps[done:]])  # undispatched
        # the guard (why_not_replan) admits a re-plan only once the plan was read, so its snapshot is set
        snapshot, snapshot_rev = cast("tuple[Content, ...]", state.snapshot), cast(int, state.snapshot_rev)
        base = snapshot if stale else state.files
        inputs = (stale, state.model_number, base, snapshot, snapshot_rev, remaining, state.snapshot_revs)
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

    # -- client ------------------------------------------------------------------------------------------

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
        elif position > 0 and self.pipeline_off and state.steps[position - 1].step_id not in state.verdict_steps:
            reason = f"pipeline=off: {state.steps[position - 1].step_id} has no verdict yet"
        else:
            return None
        if self.recovery:  # the client holds the dispatch back until it may go
            return f"{step_id} is already held back" if step_id in state.held else None
        return reason

    def blocked(self, state: State, step_id: str) -> str | None:
        """Why a step the client means to send may not go yet (an earlier step is not sent, or has no verdict
        under pipeline=off), or None."""
        done = len(state.sent) + len(state.refused)
        position = self.order[step_id]
        if position > done:
            return f"{state.steps[position - 1].step_id} is not dispatched yet"
        if position > 0 and self.pipeline_off and state.steps[position - 1].step_id not in state.verdict_steps:
            return f"pipeline=off: {state.steps[position - 1].step_id} has no verdict yet"
        return None

    def stamp(self, state: State, step: Step, current_hash: str) -> tuple[int | None, str | None]:
        """The stamp per fence: none and plan carry claims (plan: its base rev), step per ``stamp_at``."""
        if self.fence == "none":
            return step.claimed_base_rev, step.claimed_pre_hash
        if self.fence == "plan":
            if self.file_scope:
                return cast(Revs, state.snapshot_revs)[self.position[step.path]], step.claimed_pre_hash
            return state.plan_base_rev, step.claimed_pre_hash
        if self.stamp_at == "dispatch":
            if self.file_scope and not self.pipeline_off:
                return self.chained_stamp(state, step, current_hash)
            return self.rev_of(state, step.path), current_hash
        if self.stamp_at == "plan":
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
        if self.recovery:
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
        if self.file_scope:
            fields["workspace_rev"] = state.rev
        if round_:
            fields["rebased"] = round_
        if step.replanned is not None:
            fields["replanned"] = step.replanned
        if stamped_rev is not None:
            fields["stamped_base_rev"] = stamped_rev
        if stamped_hash is not None:
            fields["stamped_pre_hash"] = stamped_hash
        if self.drift_reject and self.drifted(state, step, current_hash, fields):
            fields.update(verdict="rejected:drift", domain="replan_drift" if step.replanned else "stale_plan",
                          **self.truth_fields(state, step))
            state = state._replace(refused=state.refused | {step.step_id},
                                   verdict_steps=state.verdict_steps | {step.step_id})
            records: list[Record] = [("client", "dispatch", fields)]
            if self.recovery:
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
        if not self.hunk_drift:
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
        step_id = cast(str, event.step)
        copies, copy = self._next_copy(state, step_id)
        message = cast(Message, state.sent_message(step_id))._replace(origin="retry", copy=copy)  # sent: the guard
        record = ("client", "retry", dict(step=step_id, copy=copy.value, stamped_base_rev=message.stamped_base_rev,
                                          stamped_pre_hash=message.stamped_pre_hash))
        return state._replace(requests=state.requests + (message,), copies=copies), [record]

    # -- human -------------------------------------------------------------------------------------------

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
        if self.file_scope:
            fields["workspace_rev"] = state.rev
        if event.hunk:
            fields["hunk"] = event.hunk
        record = ("human", "human_edit", fields)
        return state, [record]

    # -- network -----------------------------------------------------------------------------------------

    @staticmethod
    def _oldest_request(state: State, step_id: str) -> int | None:
        for index, message in enumerate(state.requests):
            if message.step.step_id == step_id:
                return index
        return None

    def why_not_deliver(self, state: State, event: Action) -> str | None:
        if self._oldest_request(state, cast(str, event.step)) is None:
            return f"no copy of {event.step} in flight"
        return None

    def take(self, state: State, step_id: str) -> tuple[State, Message]:
        """The network takes the oldest copy of a step in flight (the guard saw one)."""
        index = cast(int, self._oldest_request(state, step_id))
        message = state.requests[index]
        return state._replace(requests=state.requests[:index] + state.requests[index + 1:]), message

    def deliver(self, state: State, event: Action) -> tuple[State, list[Record]]:
        state, message = self.take(state, cast(str, event.step))
        return self.serve(state, message)

    def why_not_duplicate(self, state: State, event: Action) -> str | None:
        if self._oldest_request(state, cast(str, event.step)) is None:
            return f"no copy of {event.step} in flight to duplicate"
        return None

    def duplicate(self, state: State, event: Action) -> tuple[State, list[Record]]:
        """The network sends the oldest copy in flight once more."""
        step_id = cast(str, event.step)
        original = state.requests[cast(int, self._oldest_request(state, step_id))]  # the guard saw one
        copies, copy = self._next_copy(state, step_id)
        state = state._replace(requests=state.requests + (original._replace(origin="duplicate", copy=copy),),
                               copies=copies)
        return state, [("network", "duplicate", dict(step=event.step, copy=copy.value))]

    def why_not_answer(self, state: State, event: Action) -> str | None:
        for answer in state.answers:
            if answer.step_id == event.step:
                return None
        return f"no answer for {event.step} on its way back"

    def answer(self, state: State, event: Action) -> tuple[State, list[Record]]:
        """An answer reaches the client (ack) or is lost (lose_ack): either way it leaves the network."""
        index = next(i for i, a in enumerate(state.answers) if a.step_id == event.step)
        answer = state.answers[index]
        state = state._replace(answers=state.answers[:index] + state.answers[index + 1:])
        records: list[Record] = [("network", event.kind, dict(step=event.step, verdict=answer.verdict))]
        if self.acks_react and event.kind == "ack":  # the client learns the verdict
            state = self.answered(state, answer, records)
        return state, records

    def why_not_settle(self, state: State, event: Action) -> str | None:
        return None if state.requests or state.answers else "nothing in flight to settle"

    def settle(self, state: State, event: Action) -> tuple[State, list[Record]]:
        """The network settles: every request in flight is delivered (oldest first), then every answer reaches
        the client, and again for what the client sent in return, at most SETTLE_ROUNDS_MAX rounds."""
        records: list[Record] = [("network", "settle", dict(requests=len(state.requests),
                                                            answers=len(state.answers)))]
        for _ in range(SETTLE_ROUNDS_MAX):
            if not state.requests and not state.answers:
                break
            for _ in range(len(state.requests)):
                message = state.requests[0]
                state, served = self.serve(state._replace(requests=state.requests[1:]), message)
                records.extend(served)
            for _ in range(len(state.answers)):
                state, answered = self.answer(state, Action("ack", state.answers[0].step_id))
                records.extend(answered)
        return state, records

    # -- executor ----------------------------------------------------------------------------------------

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
        step = message.step
        rev_at_apply = cast(Revs, state.file_revs)[self.position[step.path]] if self.file_scope else state.rev
        hash_before = self.hash(state, step.path)
        stamped_rev, stamped_hash = message.stamped_base_rev, message.stamped_pre_hash
        if self.fence == "step" and self.stamp_at == "apply":
            stamped_rev, stamped_hash = rev_at_apply, hash_before
        key = (step.step_id, stamped_rev)
        store = state.journal if self.dedupe == "journal" else state.memory if self.dedupe == "memory" else None
        fields: dict[str, Any] = dict(
            step=step.step_id, path=step.path, origin=message.origin, copy=message.copy.value,
            model=step.model.value, fence=self.fence, dedupe=self.dedupe,
            claimed_base_rev=step.claimed_base_rev, rev_at_apply=rev_at_apply, hash_before=hash_before,
            incarnation=state.incarnation.value, **self.truth_fields(state, step))
        if step.replanned is not None:
            fields["replanned"] = step.replanned
        if stamped_rev is not None:
            fields["stamped_base_rev"] = stamped_rev
        if stamped_hash is not None:
            fields["stamped_pre_hash"] = stamped_hash
        if self.file_scope:
            fields.update(rev_scope="file", workspace_rev=state.rev)
        if message.round:
            fields["rebased"] = message.round
        if store is not None and (key in store or (self.proof_dedupes and key in state.proved)):
            verdict: str | None = "deduped"
            if key not in store:
                fields["deduped_by"] = "checkpoint"
        elif self.fence != "none" and stamped_rev != rev_at_apply:
            verdict = "rejected:stale_rev"
        elif self.fence != "none" and stamped_hash != hash_before:
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
        step = message.step
        if state.armed == "before_write":
            fields["preempted"] = "before_write"
            return self.finish(state, message, None, fields, dict(self.dying(state), armed=None))
        changes = self._written(state, step.path, step.patch)
        index = self.position[step.path]
        fields["hash_after"] = content_hash(changes["files"][index])
        fields["rev_after"] = changes["file_revs"][index] if self.file_scope else changes["rev"]
        if self.per_step:
            self.checkpoint(state, message, key, fields, changes)
        keeps = self.dedupe != "off"
        if keeps and self.atomic_journal:
            self._remember(state, key, fields, changes)
        for point in ("after_write", "after_journal"):
            if point == "after_journal" and keeps and not self.atomic_journal:
                self._remember(state, key, fields, changes)
            if state.armed == point:
                changes.update(self.dying(state), armed=None)
                if self.dedupe == "memory":
                    fields.pop("journal_key", None)  # memory died with the executor
                fields["preempted"] = point
                break
        return self.finish(state, message, "applied", fields, changes)

    def _remember(self, state: State, key: tuple[str, int | None], fields: dict[str, Any],
                  changes: dict[str, Any]) -> None:
        fields["journal_key"] = f"{key[0]}@{key[1]}"
        if self.dedupe == "journal":
            changes["journal"] = state.journal | {key}
        else:
            changes["memory"] = state.memory | {key}

    def finish(self, state: State, message: Message, verdict: str | None, fields: dict[str, Any],
               changes: dict[str, Any] | None = None) -> tuple[State, list[Record]]:
        """Record a delivery (with the state ``changes`` it made); answer it unless the executor died."""
        changes = {} if changes is None else changes
        step_id = message.step.step_id
        if verdict is not None:
            fields["domain"] = domain_of(message)
            fields["verdict"] = verdict
            changes["verdict_steps"] = state.verdict_steps | {step_id}
            if verdict == "applied":
                changes["applied"] = state.applied | {step_id}
            if "preempted" not in fields:
                changes["answers"] = state.answers + (Answer(step_id, verdict, message.round),)
        state = state._replace(**changes) if changes else state
        records: list[Record] = [("executor", "deliver", fields)]
        if self.recovery and verdict is not None and state.held:
            state = self.release(state, records)
        return state, records
