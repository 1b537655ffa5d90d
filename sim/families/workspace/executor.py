"""The executor of the workspace family: applies steps behind the fence, with dedupe,
preemptible at three points; and the crash injector it consults.

At delivery the executor does, in order: dedupe lookup (``deduped``, the
stored result replayed); rev check (``rejected:stale_rev``); hash check
(``rejected:pre_hash``); otherwise write, journal, ``applied``.  It never
decides a fault: the crash injector, armed by a ``preempt POINT`` event of
the order, says whether it dies at a point.
"""

from __future__ import annotations

from typing import Any

from sim.families.workspace.actors import Actor, Answer, Skipped, StepMessage
from sim.families.workspace.injectors import CrashInjector


class ExecutorSeat(Actor):
    """What every executor of the workspace family shares, the model's or a real one behind a proxy: it takes
    messages as the network delivers them, takes preemptions from the order, and records each delivery.

    A subclass gives ``_deliver(message)``, ``_die()`` (a crash now), ``_armed()`` and ``_arm(point)`` (a
    crash at a named point of the next delivery).
    """

    name = "executor"

    def __init__(self, kernel, world):
        super().__init__(kernel, world)
        self.incarnation = 1
        kernel.process(self._serve(world.requests))

    def _serve(self, requests):
        """Apply each message the network delivers, as it arrives."""
        while True:
            message = yield requests.inbox.get()
            self._deliver(message)

    def perform(self, action) -> None:
        if action.kind != "preempt":  # pragma: no cover
            raise AssertionError(action)
        if self.world.planner.snapshot is None:
            raise Skipped("preemption is interference after the plan")
        if action.point is None:
            self._die()
            self.world.history.append(self.kernel.now, self.name, "preempt", incarnation=self.incarnation)
            return
        if self._armed() is not None:
            raise Skipped(f"a preemption at {self._armed()} is already armed")
        self._arm(action.point)
        self.world.history.append(self.kernel.now, self.name, "preempt", point=action.point)

    def _finish(self, message: StepMessage, verdict: str | None, fields: dict[str, Any]) -> None:
        """Record a delivery; answer it unless the executor died during it."""
        world = self.world
        if verdict is not None:
            fields["domain"] = world.domain_of(message, verdict)
            world.note_verdict(message.step.step_id)
        world.history.append(self.kernel.now, self.name, "deliver", verdict=verdict, **fields)
        if verdict is not None and "preempted" not in fields:
            world.network.answer(Answer(message.step.step_id, verdict))

    def _deliver(self, message: StepMessage) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _die(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _armed(self) -> str | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _arm(self, point: str) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


class Executor(ExecutorSeat):
    """Applies steps behind the fence, with dedupe; preemptible at three points."""

    def __init__(self, kernel, world):
        self.memory: dict[tuple[str, int], str] = {}  # dedupe=memory: dies with a preemption
        self.crashes = CrashInjector()
        super().__init__(kernel, world)

    def _armed(self) -> str | None:
        return self.crashes.armed

    def _arm(self, point: str) -> None:
        self.crashes.arm(point)

    def _die(self) -> None:
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
                self._die()
                fields["preempted"] = point
                if point == "before_write":
                    verdict = None  # the message is used up before any decision is answered
            self._finish(message, verdict, fields)
            return
        if self.crashes.fires("before_write"):
            self._die()
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
            self._die()
            if protocol.dedupe == "memory" and "journal_key" in fields:
                del fields["journal_key"]  # memory died with the executor
            self._finish(message, verdict, dict(fields, preempted="after_write"))
            return
        if store is not None and not atomic:
            store[key] = "applied"
            fields["journal_key"] = f"{step.step_id}@{stamped_rev}"
        if self.crashes.fires("after_journal"):
            self._die()
            if protocol.dedupe == "memory":
                fields.pop("journal_key", None)
            self._finish(message, verdict, dict(fields, preempted="after_journal"))
            return
        self._finish(message, verdict, fields)
