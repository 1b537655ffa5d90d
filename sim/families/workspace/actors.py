"""The workspace family's actors other than the executor: Planner, Router, Client,
Human, Network -- each a SimPy process performing commands from its inbox.

The replay driver (:mod:`sim.families.workspace.replay`) feeds every actor
the events of the order.  An actor that cannot perform a command at this
point under this protocol raises :class:`Skipped` with the reason, and
nothing changes.  Stamps travel in the message, so a preemption cannot lose
what a fence checks; the message also carries the author's truth (the
content it really expected to replace) for the history only -- no actor
decides on it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

import simpy

from sim.core.kernel import Kernel
from sim.families.workspace.content import Hunks, applied, file_hash
from sim.families.workspace.scenario import StepSpec


@dataclass(frozen=True)
class PlannedStep:
    """A step as the planner emitted it: claims, and the author's truth."""

    step_id: str
    path: str
    patch: Hunks
    claimed_base_rev: int
    claimed_pre_hash: str
    truth: Hunks  # the content of the patched hunks the author expected to replace
    truth_hash: str  # hash of the whole file the author expected
    model: str
    replanned: str | None = None  # None, "replan" or "replan stale"


@dataclass(frozen=True)
class StepMessage:
    """What the client sends: the planned step plus its stamp."""

    step: PlannedStep
    stamped_base_rev: int | None
    stamped_pre_hash: str | None
    origin: str  # "dispatch", "retry", "duplicate"
    copy: int  # 1 for the dispatch, then counts every copy sent


@dataclass(frozen=True)
class Answer:
    step_id: str
    verdict: str


@dataclass
class Command:
    """An event of the order, handed to the actor that performs it.

    The actor performs it at the simulated time it is handed over; the
    driver moves time on only after that, so no completion event is needed.
    """

    action: Any


class Skipped(Exception):
    """The event cannot happen here under this protocol; it has no effect."""


class Actor:
    """A SimPy process that performs commands from its inbox in order."""

    name = "actor"

    def __init__(self, kernel: Kernel, world):
        self.kernel = kernel
        self.world = world
        self.inbox = simpy.Store(kernel.env)
        kernel.process(self._loop())

    def _loop(self):
        while True:
            command = yield self.inbox.get()
            try:
                self.perform(command.action)
            except Skipped as skipped:
                self.world.record_skip(self.name, command.action, str(skipped))

    def perform(self, action) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


class Planner(Actor):
    """Reads a snapshot and emits steps; its model can be swapped silently."""

    name = "planner"

    def __init__(self, kernel, world):
        super().__init__(kernel, world)
        self.model_number = 1
        self.snapshot: dict[str, Hunks] | None = None
        self.snapshot_rev: int | None = None

    @property
    def model(self) -> str:
        return f"model-{chr(ord('A') + (self.model_number - 1) % 26)}{'' if self.model_number <= 26 else self.model_number}"

    def perform(self, action) -> None:
        assert action.kind == "plan", action
        if self.snapshot is not None:
            raise Skipped("the plan was already made")
        self._plan()

    def _plan(self) -> None:
        world = self.world
        ws = world.workspace
        self.snapshot = {p: dict(h) for p, h in ws.files.items()}
        self.snapshot_rev = ws.rev
        view = {p: dict(h) for p, h in ws.files.items()}
        steps = []
        for offset, spec in enumerate(world.plan_specs):
            before = view[spec.path]
            steps.append(
                PlannedStep(
                    spec.step_id, spec.path, spec.patch,
                    claimed_base_rev=self.snapshot_rev + offset,
                    claimed_pre_hash=file_hash(before),
                    truth={h: before.get(h, "") for h in spec.patch},
                    truth_hash=file_hash(before),
                    model=self.model,
                )
            )
            view[spec.path] = applied(before, spec.patch)
        overlap = _overlaps(steps) if world.protocol.overlap_check == "on" else []
        verdict = "rejected:overlap" if overlap else None
        world.history.append(
            self.kernel.now, self.name, "plan",
            model=self.model, snapshot_rev=self.snapshot_rev, plan_base_rev=self.snapshot_rev,
            steps=[s.step_id for s in steps], pipeline=world.protocol.pipeline,
            overlap=[list(pair) for pair in overlap] or None, verdict=verdict,
            domain="stale_plan" if verdict else None,
        )
        world.client.receive_plan(steps, self.snapshot_rev, rejected=bool(overlap))

    def replan(self, stale: bool) -> None:
        """A new model re-plans the undispatched steps (called by the Router, never by the executor)."""
        world = self.world
        self.model_number += 1
        remaining = world.client.undispatched()
        base = self.snapshot if stale else world.workspace.files
        view = {p: dict(h) for p, h in base.items()}
        replacements = {s.step_id: s for s in world.replan_specs}
        kind = "replan stale" if stale else "replan"
        steps = []
        for old in remaining:
            spec = replacements.get(old.step_id) or StepSpec(
                old.step_id, old.path, {h: f"{c}~{self.model}" for h, c in world.spec_of(old.step_id).patch.items()}
            )
            before = view[spec.path]
            steps.append(
                PlannedStep(
                    spec.step_id, spec.path, spec.patch,
                    claimed_base_rev=self.snapshot_rev,
                    claimed_pre_hash=file_hash(self.snapshot[spec.path]),
                    truth={h: before.get(h, "") for h in spec.patch},
                    truth_hash=file_hash(before),
                    model=self.model,
                    replanned=kind,
                )
            )
            view[spec.path] = applied(before, spec.patch)
        world.history.append(
            self.kernel.now, "router", "replan",
            stale=True if stale else None, model=self.model, steps=[s.step_id for s in steps],
            claimed_base_rev=self.snapshot_rev,
        )
        world.client.receive_replan(steps)


def _overlaps(steps: list[PlannedStep]) -> list[tuple[str, str]]:
    pairs = []
    for i, first in enumerate(steps):
        for second in steps[i + 1:]:
            if first.path == second.path and set(first.patch) & set(second.patch):
                pairs.append((first.step_id, second.step_id))
    return pairs


class Router(Actor):
    """Routes the session to a model; a silent swap makes the new model re-plan.

    The executor is not told: re-planned steps still claim the old plan's
    base rev and pre-hash (the seed's re-plan drift).
    """

    name = "router"

    def perform(self, action) -> None:
        assert action.kind == "replan", action
        if self.world.planner.snapshot is None:
            raise Skipped("no plan to re-plan yet")
        self.world.planner.replan(stale=action.point == "stale")


class Client(Actor):
    """Stamps per protocol, dispatches in plan order, re-sends the same stamped message."""

    name = "client"

    def __init__(self, kernel, world):
        super().__init__(kernel, world)
        self.steps: list[PlannedStep] = []
        self.plan_base_rev: int | None = None
        self.plan_rejected = False
        self.sent: dict[str, StepMessage] = {}
        self.refused: set[str] = set()  # steps refused at dispatch (drift)
        self.copies: dict[str, int] = {}

    def receive_plan(self, steps: list[PlannedStep], base_rev: int, rejected: bool) -> None:
        self.steps = list(steps)
        self.plan_base_rev = base_rev
        self.plan_rejected = rejected

    def receive_replan(self, steps: list[PlannedStep]) -> None:
        by_id = {s.step_id: s for s in steps}
        self.steps = [by_id.get(s.step_id, s) for s in self.steps]

    def undispatched(self) -> list[PlannedStep]:
        return [s for s in self.steps if s.step_id not in self.sent and s.step_id not in self.refused]

    def next_copy(self, step_id: str) -> int:
        self.copies[step_id] = self.copies.get(step_id, 0) + 1
        return self.copies[step_id]

    def perform(self, action) -> None:
        if action.kind == "dispatch":
            self._dispatch(action.step)
        elif action.kind == "retry":
            self._retry(action.step)
        else:  # pragma: no cover
            raise AssertionError(action)

    def _dispatch(self, step_id: str) -> None:
        world = self.world
        if not self.steps:
            raise Skipped("no plan yet")
        if self.plan_rejected:
            raise Skipped("the plan was rejected at admission")
        if step_id in self.sent or step_id in self.refused:
            raise Skipped("already dispatched (a dispatch never repeats)")
        position = [s.step_id for s in self.steps].index(step_id)
        if position > 0:
            previous = self.steps[position - 1].step_id
            if previous not in self.sent and previous not in self.refused:
                raise Skipped(f"steps are dispatched in plan order; {previous} is not dispatched yet")
            if world.protocol.pipeline == "off" and previous not in world.verdict_steps:
                raise Skipped(f"pipeline=off: {previous} has no verdict yet")
        step = self.steps[position]
        ws = world.workspace
        protocol = world.protocol
        current_hash = ws.hash(step.path)
        stamped_rev, stamped_hash = self._stamp(step, ws.rev, current_hash)
        fields = dict(
            step=step_id, path=step.path, model=step.model, replanned=step.replanned,
            claimed_base_rev=step.claimed_base_rev, claimed_pre_hash=step.claimed_pre_hash,
            stamped_base_rev=stamped_rev, stamped_pre_hash=stamped_hash,
            rev=ws.rev, hash_current=current_hash,
        )
        if protocol.drift_check == "reject" and step.claimed_pre_hash != current_hash:
            self.refused.add(step_id)
            world.note_verdict(step_id)
            world.history.append(
                self.kernel.now, self.name, "dispatch", verdict="rejected:drift",
                domain="replan_drift" if step.replanned else "stale_plan",
                **fields, **world.truth_fields(step),
            )
            return
        message = StepMessage(step, stamped_rev, stamped_hash, "dispatch", self.next_copy(step_id))
        self.sent[step_id] = message
        world.history.append(self.kernel.now, self.name, "dispatch", copy=message.copy, **fields)
        world.network.send(message)

    def _stamp(self, step: PlannedStep, rev: int, current_hash: str) -> tuple[int | None, str | None]:
        protocol = self.world.protocol
        if protocol.fence == "none":
            return step.claimed_base_rev, step.claimed_pre_hash
        if protocol.fence == "plan":
            return self.plan_base_rev, step.claimed_pre_hash
        if protocol.stamp_at == "dispatch":
            return rev, current_hash
        if protocol.stamp_at == "plan":
            return step.claimed_base_rev, step.claimed_pre_hash
        return None, None  # stamp_at=apply: the executor reads rev and hash at apply

    def _retry(self, step_id: str) -> None:
        message = self.sent.get(step_id)
        if message is None:
            raise Skipped("nothing to re-send: the step was not dispatched")
        copy = replace(message, origin="retry", copy=self.next_copy(step_id))
        self.world.history.append(
            self.kernel.now, self.name, "retry", step=step_id, copy=copy.copy,
            stamped_base_rev=copy.stamped_base_rev, stamped_pre_hash=copy.stamped_pre_hash,
        )
        self.world.network.send(copy)


class Human(Actor):
    """An interfering writer: edits a file, or one hunk of it."""

    name = "human"

    def __init__(self, kernel, world):
        super().__init__(kernel, world)
        self.edits = 0

    def perform(self, action) -> None:
        if self.world.planner.snapshot is None:
            raise Skipped("human edits are interference after the plan")
        self.edits += 1
        content = action.content if action.content is not None else f"human-{self.edits}"
        ws = self.world.workspace
        hunks = [action.hunk] if action.hunk else list(ws.files[action.path])
        ws.write(action.path, {h: content for h in hunks})
        self.world.history.append(
            self.kernel.now, self.name, "human_edit", path=action.path, hunk=action.hunk,
            content=content, rev_after=ws.rev, hash_after=ws.hash(action.path),
        )


class Network(Actor):
    """Delivers, duplicates and loses messages; carries answers back."""

    name = "network"

    def __init__(self, kernel, world):
        super().__init__(kernel, world)
        self.requests = world.requests
        self.answers = world.answers

    def send(self, message: StepMessage) -> None:
        self.requests.send(message)

    def answer(self, answer: Answer) -> None:
        self.answers.send(answer)

    def perform(self, action) -> None:
        step_id = action.step
        of_step: Callable[[Any], bool] = lambda m: m.step.step_id == step_id  # noqa: E731
        answer_of: Callable[[Any], bool] = lambda a: a.step_id == step_id  # noqa: E731
        world = self.world
        if action.kind == "deliver":
            if self.requests.deliver(of_step) is None:
                raise Skipped(f"no copy of {step_id} in flight")
        elif action.kind == "duplicate":
            copy = self.requests.duplicate(
                of_step, lambda m: replace(m, origin="duplicate", copy=world.client.next_copy(step_id))
            )
            if copy is None:
                raise Skipped(f"no copy of {step_id} in flight to duplicate")
            world.history.append(self.kernel.now, self.name, "duplicate", step=step_id, copy=copy.copy)
        elif action.kind in ("ack", "lose_ack"):
            answer = self.answers.drop(answer_of)
            if answer is None:
                raise Skipped(f"no answer for {step_id} on its way back")
            world.history.append(self.kernel.now, self.name, action.kind, step=step_id, verdict=answer.verdict)
        else:  # pragma: no cover
            raise AssertionError(action)


