"""The durable workspace and the world of one run: the actors and what they share.

The workspace is the durable truth: ``rev`` (workspace-wide, +1 per write),
the files, and the journal of ``(step_id, base_rev)`` keys persisted with
it.  Executor memory (the ``dedupe=memory`` cache) dies with a preemption.
"""

from __future__ import annotations

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
        self.position = 0  # index in the order of the event being performed
        self.skipped: set[int] = set()
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
