"""The faults' choreography: what the harness does, and waits for, to strike each fault of a run at its point.

A fault class's play (named in :data:`sim.real.runtimes.cells.FAULT_PLAYS`) is a generator: it first yields
how many extra worker processes it needs (they are spawned warm before the run starts), then the conditions
it waits for, acting on the run (:class:`~sim.real.runtimes.cell_run.CellRun`) between them.  Where a fault
strikes, per boundary of transition T:

* ``before_intent``: the worker's ``before_intent`` point, inside T's intent step (nothing recorded yet);
* ``after_intent``: the worker's ``intent_recorded`` record (the intent step committed);
* ``after_dispatch``: the external system, T's first request, before storing it (dispatched, not committed);
* ``after_commit``: the external system, after storing it, before replying (committed, no receipt);
* ``after_receipt``: the worker's ``checkpoint_saved`` after T's receipt (``checkpoint=verified``; the
  receipt itself with ``optimistic``): the model's boundary comes after the receipt operation, which
  saves the checkpoint;
* ``dispatch_recorded`` and ``response_received`` (real only): the worker's ``before_send`` point and its
  ``response_delivered`` record.

The faults of a list are played one after another, in list order (the model's order: by transition, then by
point).  Until a fault strikes, the run may also end: then its point was never reached, and neither was any
later fault's (the model skips them too).
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

from sim.real.runtimes.cell_run import CellRun, Condition, Trap
from sim.real.runtimes.cells import FAULT_PLAYS, REQUEST_BOUNDARIES, CellFault

Plan = Iterator[Any]


class Choreography:
    """The faults of one run, played against it one after another."""

    def __init__(self, run: CellRun, faults: tuple[CellFault, ...]):
        self.run = run
        self.faults = faults
        self.current: CellFault | None = None  # the fault whose choreography runs now
        self.fault_index = 0  # its position in the list, from 1 (it names the external system's hooks)
        self.struck_count = 0

    @property
    def struck(self) -> CellFault:
        """The fault being played (only its choreography asks, and a healthy run has none)."""
        if self.current is None:
            raise RuntimeError("this run plays no fault")
        return self.current

    @property
    def caught(self) -> tuple[str, dict]:
        """(worker, record) the trap caught; asked only once a trap's condition has held."""
        if self.run.trapped is None:
            raise RuntimeError("no worker record was trapped")
        return self.run.trapped

    def plan(self) -> Plan:
        """The faults' steps: first how many extra workers they need, then the conditions they wait for."""
        plans = []
        for index, fault in enumerate(self.faults, start=1):
            self.current, self.fault_index = fault, index
            play: Callable[[str, bool], Plan] = getattr(self, FAULT_PLAYS[fault.fault].play)
            plan = play(fault.transition, fault.boundary in REQUEST_BOUNDARIES)
            plans.append((index, fault, plan, next(plan)))
        yield sum(needed for *_, needed in plans)
        for index, fault, plan, _ in plans:
            self.current, self.fault_index, self.run.trapped = fault, index, None
            first = next(plan, None)
            if first is None:
                continue
            yield lambda first=first: first() or self.run.done_by is not None
            if not first():  # the run ended before this fault's point: it never strikes, nor do the later ones
                self.run.trap = None
                return
            self.struck_count += 1
            yield from plan
        self.current = None

    # -- where a fault strikes ----------------------------------------------------------------------

    def trigger(self) -> Trap:
        """The worker record where the fault's boundary is (for the boundaries the worker reports)."""
        name, boundary = self.struck.transition, self.struck.boundary
        if boundary == "before_intent":
            return lambda s, r: (r.get("kind") == "point" and r.get("point") == "before_intent"
                                 and r.get("transition") == name)
        if boundary == "after_intent":
            return lambda s, r: r.get("event") == "intent_recorded" and r.get("transition") == name
        if boundary == "dispatch_recorded":  # inside the call step, before its request leaves
            return lambda s, r: (r.get("kind") == "point" and r.get("point") == "before_send"
                                 and r.get("transition") == name)
        if boundary == "response_received":  # inside the call step, its output (the receipt) not yet durable
            return lambda s, r: r.get("event") == "response_delivered" and r.get("transition") == name
        receipted: set[str] = set()
        optimistic = self.run.knobs["checkpoint"] == "optimistic"

        def after_receipt(source: str, record: dict) -> bool:
            if record.get("event") == "receipt_recorded" and record.get("transition") == name:
                receipted.add(source)
                return optimistic
            return (record.get("event") == "checkpoint_saved" and source in receipted
                    and name in record.get("completed", ()))

        return after_receipt

    def arm(self, action: str, stage: str | None = None) -> str:
        """Arm the external system's hook for T's first request; its id names the fault's place in the list."""
        hook = f"f{self.fault_index}"
        stage = stage or ("before_store" if self.struck.boundary == "after_dispatch" else "after_store")
        self.run.external.control("arm", id=hook, transition=self.struck.transition, nth=1, stage=stage,
                                  action=action)
        return hook

    # -- the plays ------------------------------------------------------------------------------------

    def play_foreign_object(self, name: str, at_request: bool) -> Plan:
        yield 0
        run = self.run
        yield run.trap_at(self.trigger())
        run.external.control("foreign", task=run.task, transition=name, logical=run.by_name[name]["logical"],
                             head="f0e1a2b", generation=1, arguments={})
        run.resume(self.caught[0])

    def play_postcondition(self, name: str, at_request: bool) -> Plan:
        """After T's receipt, its object is made invalid; the worker's check finds it."""
        yield 0
        run = self.run
        yield run.trap_at(lambda s, r: r.get("event") == "receipt_recorded" and r.get("transition") == name)
        effect = self.caught[1]["effect"]
        run.external.control("invalidate", number=next(o["number"] for o in run.external.objects()
                                                      if o["effect"] == effect))
        run.resume(self.caught[0])

    def play_lost(self, name: str, at_request: bool) -> Plan:
        yield 0
        yield self.run.request_done(self.arm("drop" if self.struck.fault == "lose_request" else "lose_reply"))

    def play_timeout(self, name: str, at_request: bool) -> Plan:
        """The request commits just after the worker gave up and reconciled (or retried)."""
        yield 0
        run = self.run
        hook = self.arm("hold", "before_store")
        yield run.hook_seen(hook, "held")
        yield run.trap_at(lambda s, r: r.get("transition") == name and r.get("event") in (
            "reconciled", "dispatched", "human_exception", "transition_failed")
            and not (r.get("event") == "dispatched" and r.get("attempt") == 1))
        run.external.control("release", hook=hook)
        yield run.request_done(hook)
        run.resume(self.caught[0])

    def play_terminate(self, name: str, at_request: bool) -> Plan:
        """SIGKILL, then (once the struck request is settled) the lease supervisor's successor."""
        yield 1
        run = self.run
        if at_request:
            hook = self.arm("kill_caller")
            yield run.hook_seen(hook, "caller_killed")
            victim = next(h["worker"] for h in run.hooks
                          if h.get("event") == "caller_killed" and h.get("hook") == hook)
            yield lambda: victim in run.exited
            yield run.request_done(hook)
        else:
            yield run.trap_at(self.trigger())
            victim = self.caught[0]
            run.kill(victim)
        if victim == run.holder:
            run.recover(victim)

    def play_duplicate(self, name: str, at_request: bool) -> Plan:
        """A copy of the request, or a redelivery of the task to the worker that runs it."""
        yield 0
        run = self.run
        if at_request:
            yield run.request_done(self.arm("duplicate"))
            return
        yield run.trap_at(self.trigger())
        source = self.caught[0]
        run.deliver_record(source, duplicate=True)
        run.workers[source].send({"op": "deliver"})
        yield run.reply_from(source, "deliver")
        if [r for r in run.replies[source] if r.get("op") == "deliver"][-1]["result"] == "ignored":
            run.record(source, "redelivery_ignored", task=run.task, reason="already running the task")
        run.resume(source)

    def play_delay_ack(self, name: str, at_request: bool) -> Plan:
        """A request or reply held until T has settled; or the queue's deadline passing (a redelivery elsewhere)."""
        yield 0 if at_request else 1
        run = self.run
        if at_request:
            hook = self.arm("hold")
            yield run.hook_seen(hook, "held")
            run.holding = True
            yield run.trap_at(lambda s, r: (r.get("transition") == name and r.get("event") in (
                "receipt_recorded", "human_exception", "transition_failed")) or r.get("event") == "task_terminal")
            run.external.control("release", hook=hook)
            yield run.request_done(hook)
            run.resolve_deferred()  # the person looks once the held request has settled
            run.resume(self.caught[0])
            return
        yield run.trap_at(self.trigger())
        source, other = self.caught[0], run.next_worker()
        run.deliver_record(other)
        run.launch(other, recover=[])
        run.workers[other].send({"op": "deliver"})
        yield run.reply_from(other, "deliver")
        result = [r for r in run.replies[other] if r.get("op") == "deliver"][-1]
        if result["result"] == "busy":
            run.record(other, "lease_busy", task=run.task, holder=result.get("holder") or source)
        run.workers[other].stop()
        yield lambda: other in run.exited
        run.resume(source)

    def play_hand_over(self, name: str, at_request: bool) -> Plan:
        """The lease moves while its holder still lives: frozen while a successor recovers the task (and, for a
        zombie, finishes it), then woken; the successor goes on once the old one's stale execution has ended."""
        zombie = self.struck.fault == "zombie"
        yield 1
        run = self.run
        hook = None
        if at_request:
            hook = self.arm("freeze_caller" if zombie else "hold")
            yield run.hook_seen(hook, "caller_frozen" if zombie else "held")
            if zombie:
                yield run.request_done(hook)
            old = run.holder
        else:
            yield run.trap_at(self.trigger())
            old = self.caught[0]
        if not (at_request and zombie):
            run.freeze(old)  # so its runtime cannot take the task back while the lease moves
        successor = run.next_worker()
        run.grant(successor, expired=old, zombie=True)
        if not zombie:
            run.held.add(successor)
        run.launch(successor, recover=[old])
        if zombie:
            yield lambda: run.done_by == successor  # the successor finished while the old one slept
        else:
            yield lambda: successor in run.pending  # the successor owns the task now
        if hook is not None and not zombie:
            # Released while the old worker is still frozen: its reply waits in its socket, so whether its
            # client's timer ran out during the hand-over cannot decide what it reads when it wakes.
            run.external.control("release", hook=hook)
            yield run.request_done(hook)
        yield from self._wake(old, successor, at_request)

    def _wake(self, old: str, successor: str, at_request: bool) -> Iterator[Condition]:
        """Thaw the old worker, let its stale execution end, then let the successor go on."""
        run = self.run
        mark = len(run.replies.get(old, []))
        run.thaw(old)
        in_step = at_request
        if run.trapped is not None and run.trapped[0] == old:
            record = run.trapped[1]
            in_step = record.get("kind") == "point" or record.get("event") == "response_delivered"
            run.resume(old)
        yield run.settled(old, mark, in_step)
        run.resume(successor)
