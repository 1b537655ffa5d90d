"""The workspace family: Workspace, Planner, Router, Client, Executor, Human,
Network -- the seed's protocol made precise (DESIGN section 2).

Each actor is a SimPy process reading commands from its inbox; the replay
driver (``sim.replay``) feeds it the scripted or generated event order.  An
actor that cannot perform a command at this point under this protocol
answers ``skipped`` with the reason, and nothing changes.  The executor
consults a crash injector at each preemption point; it never decides a
fault itself.

Stamps travel in the message, so a preemption cannot lose what a fence
checks.  The message also carries the author's truth (the content it really
expected to replace) for the history only: no actor decides on it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

import simpy

from sim.history import History
from sim.kernel import Kernel
from sim.models.content import Hunks, applied, file_hash, hunk_hashes
from sim.protocol import Protocol
from sim.scenario import StepSpec


class Workspace:
    """Durable state: rev (workspace-wide, +1 per write), files, and the journal."""

    def __init__(self, files: dict[str, Hunks]):
        self.rev = 0
        self.files: dict[str, Hunks] = {p: dict(h) for p, h in files.items()}
        self.journal: dict[tuple[str, int], str] = {}

    def hash(self, path: str) -> str:
        return file_hash(self.files[path])

    def write(self, path: str, patch: Hunks) -> None:
        self.files[path] = applied(self.files[path], patch)
        self.rev += 1


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

    def __init__(self, kernel: Kernel, world: "World"):
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
        self.answers: dict[str, list[str]] = {}

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

    def receive_answer(self, answer: Answer) -> None:
        self.answers.setdefault(answer.step_id, []).append(answer.verdict)


class CrashInjector:
    """Fault injector for the executor: a preemption armed for the next delivery."""

    def __init__(self):
        self.armed: str | None = None

    def arm(self, point: str) -> None:
        self.armed = point

    def fires(self, point: str) -> bool:
        if self.armed == point:
            self.armed = None
            return True
        return False


class Executor(Actor):
    """Applies steps behind the fence, with dedupe; preemptible at three points."""

    name = "executor"

    def __init__(self, kernel, world):
        super().__init__(kernel, world)
        self.memory: dict[tuple[str, int], str] = {}  # dedupe=memory: dies with a preemption
        self.incarnation = 1
        self.crashes = CrashInjector()
        kernel.process(self._serve(world.requests))

    def _serve(self, requests):
        """Apply each message the network delivers, as it arrives."""
        while True:
            message = yield requests.inbox.get()
            self._deliver(message)

    def perform(self, action) -> None:
        if action.kind == "preempt":
            if self.world.planner.snapshot is None:
                raise Skipped("preemption is interference after the plan")
            if action.point is None:
                self._die("now")
                self.world.history.append(self.kernel.now, self.name, "preempt", incarnation=self.incarnation)
            else:
                if self.crashes.armed is not None:
                    raise Skipped(f"a preemption at {self.crashes.armed} is already armed")
                self.crashes.arm(action.point)
                self.world.history.append(self.kernel.now, self.name, "preempt", point=action.point)
        else:  # pragma: no cover
            raise AssertionError(action)

    def _die(self, point: str) -> None:
        self.memory = {}
        self.incarnation += 1

    def _store(self) -> dict[tuple[str, int], str] | None:
        dedupe = self.world.protocol.dedupe
        if dedupe == "journal":
            return self.world.workspace.journal
        if dedupe == "memory":
            return self.memory
        return None

    def _deliver(self, message: StepMessage) -> None:
        world = self.world
        protocol = world.protocol
        ws = world.workspace
        step = message.step
        rev_at_apply = ws.rev
        hash_before = ws.hash(step.path)
        stamped_rev, stamped_hash = message.stamped_base_rev, message.stamped_pre_hash
        if protocol.fence == "step" and protocol.stamp_at == "apply":
            stamped_rev, stamped_hash = rev_at_apply, hash_before
        key = (step.step_id, stamped_rev)
        store = self._store()
        fields: dict[str, Any] = dict(
            step=step.step_id, path=step.path, origin=message.origin, copy=message.copy,
            model=step.model, replanned=step.replanned, fence=protocol.fence, dedupe=protocol.dedupe,
            claimed_base_rev=step.claimed_base_rev, stamped_base_rev=stamped_rev,
            stamped_pre_hash=stamped_hash, rev_at_apply=rev_at_apply, hash_before=hash_before,
            incarnation=self.incarnation,
            **world.truth_fields(step),
        )
        if store is not None and key in store:
            verdict = "deduped"
        elif protocol.fence != "none" and stamped_rev != rev_at_apply:
            verdict = "rejected:stale_rev"
        elif protocol.fence != "none" and stamped_hash != hash_before:
            verdict = "rejected:pre_hash"
        else:
            verdict = "applied"
        if verdict != "applied":
            point = self.crashes.armed
            if point is not None:
                self.crashes.fires(point)
                self._die(point)
                fields["preempted"] = point
                if point == "before_write":
                    verdict = None  # the message is used up before any decision is answered
            self._finish(message, verdict, fields)
            return
        if self.crashes.fires("before_write"):
            self._die("before_write")
            self._finish(message, None, dict(fields, preempted="before_write"))
            return
        ws.write(step.path, step.patch)
        fields["hash_after"] = ws.hash(step.path)
        fields["rev_after"] = ws.rev
        atomic = protocol.journal_write == "atomic"
        if store is not None and atomic:
            store[key] = "applied"
            fields["journal_key"] = f"{step.step_id}@{stamped_rev}"
        if self.crashes.fires("after_write"):
            self._die("after_write")
            if protocol.dedupe == "memory" and "journal_key" in fields:
                del fields["journal_key"]  # memory died with the executor
            self._finish(message, verdict, dict(fields, preempted="after_write"))
            return
        if store is not None and not atomic:
            store[key] = "applied"
            fields["journal_key"] = f"{step.step_id}@{stamped_rev}"
        if self.crashes.fires("after_journal"):
            self._die("after_journal")
            if protocol.dedupe == "memory":
                fields.pop("journal_key", None)
            self._finish(message, verdict, dict(fields, preempted="after_journal"))
            return
        self._finish(message, verdict, fields)

    def _finish(self, message: StepMessage, verdict: str | None, fields: dict[str, Any]) -> None:
        world = self.world
        if verdict is not None:
            fields["domain"] = world.domain_of(message, verdict)
            world.note_verdict(message.step.step_id)
        world.history.append(self.kernel.now, self.name, "deliver", verdict=verdict, **fields)
        if verdict is not None and "preempted" not in fields:
            world.network.answer(Answer(message.step.step_id, verdict))


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
            if action.kind == "ack":
                world.client.receive_answer(answer)
            world.history.append(self.kernel.now, self.name, action.kind, step=step_id, verdict=answer.verdict)
        else:  # pragma: no cover
            raise AssertionError(action)


class World:
    """The actors of one run and the state they share (workspace, history)."""

    def __init__(self, kernel: Kernel, protocol: Protocol, files: dict[str, Hunks],
                 plan: list[StepSpec], replan: list[StepSpec]):
        self.kernel = kernel
        self.protocol = protocol
        self.history = History()
        self.workspace = Workspace(files)
        self.plan_specs = plan
        self.replan_specs = replan
        self.verdict_steps: set[str] = set()
        self.requests = kernel.channel("client->executor")
        self.answers = kernel.channel("executor->client")
        self.planner = Planner(kernel, self)
        self.router = Router(kernel, self)
        self.client = Client(kernel, self)
        self.executor = Executor(kernel, self)
        self.human = Human(kernel, self)
        self.network = Network(kernel, self)

    def spec_of(self, step_id: str) -> StepSpec:
        for spec in self.plan_specs:
            if spec.step_id == step_id:
                return spec
        raise KeyError(step_id)

    def note_verdict(self, step_id: str) -> None:
        self.verdict_steps.add(step_id)

    def actor_for(self, action) -> Actor:
        kind = action.kind
        if kind == "plan":
            return self.planner
        if kind == "replan":
            return self.router
        if kind in ("dispatch", "retry"):
            return self.client
        if kind == "preempt":
            return self.executor
        if kind == "human_edit":
            return self.human
        return self.network

    def truth_fields(self, step: PlannedStep) -> dict[str, Any]:
        current = self.workspace.files[step.path]
        return dict(
            expected_prior_hash=step.truth_hash,
            patch_hunks=sorted(step.patch),
            expected_prior_hunks={h: v for h, v in sorted(hunk_hashes(step.truth, step.patch).items())},
            hunks_before={h: v for h, v in sorted(hunk_hashes(current, step.patch).items())},
        )

    def domain_of(self, message: StepMessage, verdict: str) -> str:
        """The seed's failure domain a verdict belongs to (section 4)."""
        if message.origin == "retry":
            return "lost_ack"
        if message.origin == "duplicate":
            return "duplicate_delivery"
        if message.step.replanned:
            return "replan_drift"
        return "stale_plan"

    def record_skip(self, actor: str, action, reason: str) -> None:
        self.history.append(self.kernel.now, actor, action.kind, action=str(action), skipped=True, reason=reason)
