"""The durable workspace and the world of one run: the actors and what they share.

The workspace is the durable truth: ``rev`` (workspace-wide, +1 per write),
the files, and the journal of ``(step_id, base_rev)`` keys persisted with
it.  Executor memory (the ``dedupe=memory`` cache) dies with a preemption.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sim.core.history import History
from sim.core.kernel import Kernel
from sim.core.knobs import Protocol
from sim.families.workspace.actors import Actor, Client, Human, Network, PlannedStep, Planner, Router, StepMessage
from sim.families.workspace.content import Hunks, applied, file_hash, hunk_hashes
from sim.families.workspace.executor import Executor
from sim.families.workspace.scenario import StepSpec


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


@dataclass
class Snapshot:
    """A world between two events, as plain data (see :meth:`World.snapshot`)."""

    now: float
    rev: int
    files: dict
    journal: dict
    model_number: int
    planner_snapshot: dict | None
    snapshot_rev: int | None
    steps: list
    plan_base_rev: int | None
    plan_rejected: bool
    sent: dict
    refused: set
    copies: dict
    memory: dict
    incarnation: int
    armed: str | None
    edits: int
    verdict_steps: set
    skipped: set
    history: list
    requests: list
    answers: list


class World:
    """The actors of one run and the state they share (workspace, history)."""

    def __init__(self, kernel: Kernel, protocol: Protocol, files: dict[str, Hunks],
                 plan: list[StepSpec], replan: list[StepSpec], workspace: Any = None, executor: Any = Executor):
        """``workspace`` and ``executor`` replace the model's own (a real workspace on disk and a proxy
        for a real executor process play the same order through the same planner, client and network)."""
        self.kernel = kernel
        self.protocol = protocol
        self.history = History()
        self.workspace = Workspace(files) if workspace is None else workspace
        self.plan_specs = plan
        self.replan_specs = replan
        self.verdict_steps: set[str] = set()
        self.position = 0  # index in the order of the event being performed
        self.skipped: set[int] = set()
        self.requests = kernel.channel("client->executor")
        self.answers = kernel.channel("executor->client")
        self.planner = Planner(kernel, self)
        self.router = Router(kernel, self)
        self.client = Client(kernel, self)
        self.executor = executor(kernel, self)
        self.human = Human(kernel, self)
        self.network = Network(kernel, self)

    def snapshot(self) -> "Snapshot":
        """Everything a later event can read, as plain data (the SimPy processes are not kept: between
        events every actor waits on its inbox, so a fresh set of processes is the same state)."""
        ws, planner, client, executor = self.workspace, self.planner, self.client, self.executor
        return Snapshot(
            now=self.kernel.now, rev=ws.rev, files={p: dict(h) for p, h in ws.files.items()},
            journal=dict(ws.journal), model_number=planner.model_number,
            planner_snapshot=None if planner.snapshot is None else {p: dict(h) for p, h in planner.snapshot.items()},
            snapshot_rev=planner.snapshot_rev, steps=list(client.steps), plan_base_rev=client.plan_base_rev,
            plan_rejected=client.plan_rejected, sent=dict(client.sent), refused=set(client.refused),
            copies=dict(client.copies), memory=dict(executor.memory), incarnation=executor.incarnation,
            armed=executor.crashes.armed, edits=self.human.edits, verdict_steps=set(self.verdict_steps),
            skipped=set(self.skipped), history=list(self.history.events),
            requests=list(self.requests.in_flight), answers=list(self.answers.in_flight),
        )

    @classmethod
    def restore(cls, protocol: Protocol, files: dict[str, Hunks], plan: list[StepSpec], replan: list[StepSpec],
                snap: "Snapshot") -> "World":
        """A live world in the state a snapshot recorded, at its simulated time."""
        world = cls(Kernel(seed=0, start_time=snap.now), protocol, files, plan, replan)
        ws = world.workspace
        ws.rev, ws.files, ws.journal = snap.rev, {p: dict(h) for p, h in snap.files.items()}, dict(snap.journal)
        planner = world.planner
        planner.model_number, planner.snapshot_rev = snap.model_number, snap.snapshot_rev
        planner.snapshot = None if snap.planner_snapshot is None else {p: dict(h) for p, h in snap.planner_snapshot.items()}
        client = world.client
        client.steps, client.plan_base_rev, client.plan_rejected = list(snap.steps), snap.plan_base_rev, snap.plan_rejected
        client.sent, client.refused, client.copies = dict(snap.sent), set(snap.refused), dict(snap.copies)
        executor = world.executor
        executor.memory, executor.incarnation = dict(snap.memory), snap.incarnation
        executor.crashes.armed = snap.armed
        world.human.edits = snap.edits
        world.verdict_steps, world.skipped = set(snap.verdict_steps), set(snap.skipped)
        world.history = History(snap.history)
        world.requests.in_flight.extend(snap.requests)
        world.answers.in_flight.extend(snap.answers)
        return world

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
        """The failure domain a verdict belongs to: stale_plan, lost_ack, duplicate_delivery, replan_drift."""
        if message.origin == "retry":
            return "lost_ack"
        if message.origin == "duplicate":
            return "duplicate_delivery"
        if message.step.replanned:
            return "replan_drift"
        return "stale_plan"

    def record_skip(self, actor: str, action, reason: str) -> None:
        self.skipped.add(self.position)
        self.history.append(self.kernel.now, actor, action.kind, action=str(action), skipped=True, reason=reason)
