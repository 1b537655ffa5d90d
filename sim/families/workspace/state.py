"""The whole state of a workspace run as one value.

A run's state is a :class:`State`: an immutable tuple of everything the run
holds -- the durable workspace, the planner's view, the client's progress,
the executor's memory and armed crash, the messages in flight.  A transition
builds a new one (``_replace``), so a snapshot is the value itself and
restoring is handing it back, and the state *is* the key exhaustive search
merges on: a field added to it is in the key without anyone listing it.

Some values only label the history -- which copy of a message this is,
which incarnation of the executor answered, the model that wrote a step,
the whole-file hash its author saw -- and never decide what happens.  They
travel in the state wrapped in a :class:`Label`, which equals every other
label: the type of the field is the one place that says "not part of what
tells two states apart".

Contents are values too: a file is a tuple of ``(hunk, text)`` pairs in the
file's own hunk order; the workspace's files are a tuple aligned with the
scenario's file order (the machine knows each path's position).
"""

from __future__ import annotations

import functools
from typing import Any, Mapping, NamedTuple

from sim.families.workspace.content import HASH_CACHE_ENTRIES, file_hash, hunk_hash

#: A file's content: (hunk, text) pairs in the file's hunk order.
Content = tuple[tuple[str, str], ...]


def content_of(hunks: Mapping[str, str]) -> Content:
    return tuple(hunks.items())


@functools.lru_cache(maxsize=HASH_CACHE_ENTRIES)
def content_hash(content: Content) -> str:
    """The whole-file hash of a content (the same digest as :func:`content.file_hash`)."""
    return file_hash(dict(content))


def text_of(content: Content, hunk: str) -> str:
    """The text of one hunk ("" for a hunk the file does not have)."""
    for name, text in content:
        if name == hunk:
            return text
    return ""


def patched(content: Content, patch: Content) -> Content:
    """The content after a patch replaces the hunks it names (new hunk names go last)."""
    out = dict(content)
    out.update(patch)
    return tuple(out.items())


def hunk_digests(content: Content, names: tuple[str, ...]) -> dict[str, str]:
    """Hashes of the named hunks, in the order given (a new dict each call: records own their fields)."""
    return dict(_hunk_digests(content, names))


@functools.lru_cache(maxsize=HASH_CACHE_ENTRIES)
def _hunk_digests(content: Content, names: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    return tuple((name, hunk_hash(text_of(content, name))) for name in names)


#: What tells two steps apart, in order (the rest of a step only labels the history).
_STEP_IDENTITY = ("step_id", "path", "patch", "claimed_base_rev", "claimed_pre_hash", "truth", "replanned")
_STEP_FIELDS = _STEP_IDENTITY + ("truth_hash", "model", "shown")


class Step(str):
    """A step as the planner emitted it: its claims, and the author's truth (for the history only).

    A state holds its steps several times over -- in its plan, in the messages sent and in flight -- and is
    hashed once per candidate in exhaustive search, where a run has a few hundred distinct steps among hundreds
    of thousands of states.  So a step *is* the text of what tells it apart (``repr`` of its first seven
    fields): it compares and hashes as that string, whose hash is computed once and kept by the interpreter,
    and its fields are attributes.  The last three (``truth_hash``, ``model``, ``shown``) are Labels: not in
    the text, so never telling two steps apart, as in every other value of the state.
    """

    step_id: str
    path: str
    patch: Content
    claimed_base_rev: int
    claimed_pre_hash: str
    truth: Content  # the content of the patched hunks the author expected to replace
    replanned: str | None  # None, "replan" or "replan stale"
    truth_hash: Label  # hash of the whole file the author expected (the history's expected_prior_hash)
    model: Label  # the model that planned the step
    shown: Label  # what every record of the step shows: (sorted patch hunks, their expected hashes)

    def __new__(cls, step_id: str, path: str, patch: Content, claimed_base_rev: int, claimed_pre_hash: str,
                truth: Content, replanned: str | None, truth_hash: Label, model: Label, shown: Label) -> "Step":
        step = str.__new__(cls, repr((step_id, path, patch, claimed_base_rev, claimed_pre_hash, truth, replanned)))
        step.__dict__.update(step_id=step_id, path=path, patch=patch, claimed_base_rev=claimed_base_rev,
                             claimed_pre_hash=claimed_pre_hash, truth=truth, replanned=replanned,
                             truth_hash=truth_hash, model=model, shown=shown)
        return step

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (Step, tuple(self.__dict__[name] for name in _STEP_FIELDS))

    def __repr__(self) -> str:
        return "Step(" + ", ".join(f"{name}={self.__dict__[name]!r}" for name in _STEP_FIELDS) + ")"

    def _replace(self, **changes: Any) -> "Step":
        fields = {name: self.__dict__[name] for name in _STEP_FIELDS}
        fields.update(changes)
        return Step(**fields)


class Message(NamedTuple):
    """What the client sends: the planned step plus its stamp."""

    step: Step
    stamped_base_rev: int | None
    stamped_pre_hash: str | None
    origin: str  # "dispatch", "retry", "duplicate"
    copy: Label  # 1 for the dispatch, then counts every copy of the step sent
    round: int = 0  # how many times the client re-planned the step before this dispatch (on_reject=replan)


class Answer(NamedTuple):
    step_id: str
    verdict: str
    round: int = 0  # the re-plan round of the message answered (the client reacts only to its latest)


class Checkpoint(NamedTuple):
    """A per-step checkpoint (``checkpoint=per_step``): the step's file as it was just before the step wrote it."""

    path: str
    step_id: str
    before: Content  # what a restore writes back
    left: Label  # the file as the step left it (the history's truth for the restore)


class Label:
    """A value carried only to label the history: every Label equals every other, so it never tells two
    states apart (``value`` is what the history shows)."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Label)

    def __hash__(self) -> int:
        return LABEL_HASH

    def __repr__(self) -> str:
        return f"Label({self.value!r})"

    def __reduce__(self) -> tuple[type[Label], tuple[Any]]:
        return (Label, (self.value,))


#: What every Label hashes to.
LABEL_HASH = 0x1ABE1
# A state is hashed and compared once per candidate in exhaustive search, and most of its Labels sit inside
# its steps and messages.  Two built-in callables stand in for the methods above, so the interpreter answers
# without running Python code: a builtin bound method is not rebound to the instance, it is called with the
# other operand only -- ``Label.__instancecheck__(other)`` is ``isinstance(other, Label)`` and
# ``LABEL_HASH.__index__()`` is ``LABEL_HASH``.  Same results as the methods (tests/families check them).
Label.__eq__ = Label.__instancecheck__  # type: ignore[assignment,method-assign]  # see above: same result
Label.__hash__ = LABEL_HASH.__index__  # type: ignore[assignment,method-assign]  # see above: same result


def _with_fast_replace(cls: Any) -> None:
    """Give a NamedTuple a ``_replace`` without the generic machinery (a transition builds several states per
    event): the positions and the class are the closure's, so a call is one copy and one store per change."""
    positions = {name: i for i, name in enumerate(cls._fields)}
    new = tuple.__new__

    def _replace(self: Any, **changes: Any) -> Any:
        items = [*self]  # a display, a little cheaper than list(self)
        for name, value in changes.items():
            items[positions[name]] = value
        return new(cls, items)

    cls._replace = _replace


class State(NamedTuple):
    """Everything a run holds between two events (see the module docstring)."""

    rev: int  # workspace-wide, +1 per write
    files: tuple[Content, ...]  # aligned with the scenario's files
    journal: frozenset[tuple[str, int]]  # (step_id, base_rev) keys persisted with the workspace
    memory: frozenset[tuple[str, int]]  # dedupe=memory keys: die with a preemption
    model_number: int
    snapshot: tuple[Content, ...] | None  # the files the plan was read from (None: no plan yet)
    snapshot_rev: int | None
    steps: tuple[Step, ...]  # the client's steps, in plan order
    plan_base_rev: int | None
    plan_rejected: bool
    sent: tuple[tuple[str, Message], ...]  # step -> the stamped message of its dispatch, in dispatch order
    refused: frozenset[str]  # steps refused at dispatch (drift)
    verdict_steps: frozenset[str]  # steps with a verdict (pipeline=off waits for it)
    applied: frozenset[str]  # steps applied at least once (a second application is a duplicate)
    armed: str | None  # a preemption armed for the next delivery
    edits: int  # human edits so far (the default content of the next is human-N)
    requests: tuple[Message, ...]  # client -> executor, oldest first
    answers: tuple[Answer, ...]  # executor -> client, oldest first
    copies: Label  # copies sent so far of each step, in plan order
    incarnation: Label  # the executor's, +1 per preemption
    # -- the mechanisms below stay at their first value unless their knob is set (so a protocol without them
    #    has exactly the states it had before they existed)
    file_revs: tuple[int, ...] | None = None  # rev_scope=file: each file's revision, aligned with files
    snapshot_revs: tuple[int, ...] | None = None  # rev_scope=file: the files' revisions the plan was read at
    held: tuple[str, ...] = ()  # on_reject=replan: dispatches held back until they may go, in plan order
    replans: int = 0  # on_reject=replan: re-plans the client made (at most MAX_REPLANS)
    checkpoints: tuple[Checkpoint, ...] = ()  # checkpoint=per_step: not yet restored, oldest first
    proved: frozenset[tuple[str, int]] = frozenset()  # journal_gc=after_checkpoint: keys the checkpoints prove
    session: frozenset[str] | None = frozenset()  # journal_gc=session_end: steps answered; None once it ended

    def sent_message(self, step_id: str) -> Message | None:
        for sid, message in self.sent:
            if sid == step_id:
                return message
        return None


_with_fast_replace(State)
_with_fast_replace(Message)



#: Where an armed preemption may strike (``preempt POINT``).
ARMED_POINTS = (None, "before_write", "after_write", "after_journal")


def assert_consistent(state: State, plan: tuple[str, ...], paths: tuple[str, ...], file_scope: bool) -> None:
    """Assert the state's own consistency (:meth:`~sim.core.machine.Machine.check_state`), for a scenario whose
    plan's steps and files are ``plan`` and ``paths``.  Each assertion is a fact a guard or a proof relies on:
    the client's dispatch guard reads where a step stands from ``len(sent) + len(refused)`` alone, the fence
    compares revisions that every write moves together, the executor and the checks read step sets that
    never name a step outside the plan."""
    assert len(state.files) == len(paths), f"{len(state.files)} files in a state of a scenario with {len(paths)}"
    if file_scope:
        revs = state.file_revs
        assert revs is not None and len(revs) == len(paths), f"rev_scope=file with file revisions {revs}"
        assert state.rev == sum(revs), (
            f"workspace rev {state.rev} is not the sum of the files' revisions {revs}: every write adds one to both")
    else:
        assert state.file_revs is None, f"file revisions {state.file_revs} without rev_scope=file"
    planned = state.snapshot is not None
    assert (state.snapshot_rev is not None) == (state.plan_base_rev is not None) == planned, (
        f"snapshot, snapshot_rev and plan_base_rev are set together: {state.snapshot_rev}, {state.plan_base_rev}")
    if planned:
        assert state.snapshot_rev <= state.rev and state.plan_base_rev <= state.rev, (  # type: ignore[operator]
            f"the plan was read at rev {state.snapshot_rev} (base {state.plan_base_rev}), after rev {state.rev}")
    ids = tuple(step.step_id for step in state.steps)
    assert ids == (plan if planned else ()), f"the state's steps {ids} are not the plan's {plan}"
    sent = [step_id for step_id, _ in state.sent]
    dispatched = set(sent)
    assert len(dispatched) == len(sent), f"a step sent twice in {sent}: a re-plan's dispatch replaces its message"
    assert all(step_id == message.step.step_id for step_id, message in state.sent), "a sent message filed wrongly"
    assert not dispatched & state.refused, f"steps both sent and refused: {sorted(dispatched & state.refused)}"
    done = len(sent) + len(state.refused)
    assert dispatched | state.refused == set(ids[:done]), (
        f"the steps sent or refused ({sorted(dispatched | state.refused)}) are not the plan's first {done}")
    assert state.refused <= state.verdict_steps, "a step refused at dispatch has that refusal as its verdict"
    assert state.verdict_steps <= set(ids) and state.applied <= set(ids), "a verdict or a write of no step"
    assert len(set(state.held)) == len(state.held) and not set(state.held) & (dispatched | state.refused), (
        f"held-back dispatches {state.held} repeat or were already sent")
    in_flight: dict[str, int] = {}
    for message in state.requests:
        in_flight[message.step.step_id] = in_flight.get(message.step.step_id, 0) + 1
    assert set(in_flight) <= dispatched, f"copies in flight of steps never sent: {sorted(set(in_flight) - dispatched)}"
    assert {answer.step_id for answer in state.answers} <= dispatched, "an answer to a step never sent"
    copies = state.copies.value
    assert all(count <= copies[plan.index(step_id)] for step_id, count in in_flight.items()), (
        f"more copies in flight ({in_flight}) than were sent ({copies})")
    for store in (state.journal, state.memory, state.proved):
        assert all(key[0] in ids for key in store), f"a dedupe key of no step of the plan in {sorted(store)}"
    assert all(c.step_id in state.applied and c.path in paths for c in state.checkpoints), (
        "a checkpoint of a step never applied")
    assert state.session is None or state.session <= set(ids), f"session {state.session} names no step"
    assert state.armed in ARMED_POINTS, f"a preemption armed at {state.armed!r}"
    assert state.replans >= 0 and state.edits >= 0 and state.model_number >= 1, "a counter went below its start"
