"""The durable-effects family's transition system over fault lists: a run paused where a fault can strike.

An order of this family is a list of faults, each striking one transition at
one point the first time the task reaches it (:mod:`sim.families.effects.faults`).
The workers' policy runs everything else, deterministically.  So the machine's
events are the faults of the alphabet, and its state is **a run paused at a
read of the fault schedule** (:mod:`sim.families.effects.autorun`): where the
driver asks which faults strike here -- a transition's boundary, a worker about
to reconcile or compensate, a human asked for an approval -- with the faults
taken so far applied.  Time, timeouts, lease expiry and key retention are the
run's own (its agenda holds them as events at their simulated times).

* :meth:`EffectsMachine.step` takes fault ``f`` where the run, continued
  without another fault, first reads ``f``'s point: the run is copied there,
  ``f``'s injector acts, and the copy pauses at that read.  A second fault at
  the same boundary strikes at the same read, after the first, as the list
  order of one boundary's faults does in a replay.
* :meth:`EffectsMachine.why_not` refuses a fault whose point has passed (its
  boundary was read already, or a reconciliation or compensation read found
  no fault of its class), whose point the run never reaches, or that has no
  effect where it strikes (its injector finds nothing to act on).  So the
  machine takes each set of faults in one order, the order they strike in:
  the run it reaches is the run a replay of that order gives, byte for byte
  (the differential test checks it), and orders that only permute faults are
  never tried twice.
* A state is judged by its **completion**: the run continued without another
  fault to its end, and the family's safety checks on its history -- what a
  replay of the order judges.

A state's key is derived from its value: the history so far (the checks read
it), the durable log's and the external system's state, the workers' memories,
the agenda, the processes and the reads already passed -- as two 128-bit
digests (BLAKE2b of the values as marshal's format 2 writes them, the same
in every process), so a key is 32 bytes to keep, hash or send.  Counters that only number things
(event and process numbers) are in it, so two states reached by different
paths merge only where they are the same run.
"""

from __future__ import annotations

import hashlib
import marshal
from typing import Any, Callable, Iterator, Sequence

from sim.core.checks import Violation, run_checks
from sim.core.history import Event
from sim.core.kernel import RunEnd
from sim.core.knobs import Protocol
from sim.core.machine import Machine, Record
from sim.families.effects.agenda import Agenda
from sim.families.effects.autorun import AutoRun
from sim.families.effects.driver import LIVENESS_BUDGET_S
from sim.families.effects.faults import FaultEvent, inject
from sim.families.effects.points import FaultEntry
from sim.families.effects.runtime import Runtime
from sim.families.effects.scenario import RuntimeScenario

#: Kernel steps allowed per task (as :data:`sim.families.effects.runner.MAX_KERNEL_EVENTS_PER_TASK`).
MAX_KERNEL_EVENTS = 5_000
#: The fault classes a one-class read takes (the others strike at a boundary, every fault of it at once).
ONE_CLASS = ("slow_approval", "unprovable", "compensation_fails")
#: A fault whose injector arms it for later (it fires when the retry it changes is dispatched).
ARMED_FOR_LATER = ("retry_changed",)


class EffectsState:
    """A run paused at a read of the fault schedule (or ended), and the reads already passed.

    ``popped``: the boundaries ``(task, transition, point)`` already read -- a fault there can no longer
    strike; ``empty``: one-class reads ``((task, transition, point), class)`` passed without a fault;
    ``took``: the one-class read it is paused at took its fault.  ``end`` is set when no read is left.
    ``history`` is the digest of the history so far, grown from the digest of the state it came from.
    """

    __slots__ = ("run", "popped", "empty", "took", "end", "history", "length", "_judged", "_trace", "_key")

    def __init__(self, run: AutoRun, popped: frozenset, empty: frozenset, took: bool, end: RunEnd | None,
                 history: bytes, length: int):
        self.run, self.popped, self.empty, self.took, self.end = run, popped, empty, took, end
        self.history, self.length = history, length
        self._judged: tuple[Violation, ...] | None = None
        self._trace: tuple[tuple, ...] | None = None  # the reads of its completion: (kind, key, fault class)
        self._key: Any = None

    @property
    def rt(self) -> Runtime:
        return self.run.rt


class EffectsMachine(Machine):
    """The fault-list transition system of one (scenario, protocol) (see the module docstring)."""

    def __init__(self, scenario: RuntimeScenario, protocol: Protocol, runtime: type[Runtime], checks: Sequence[Any],
                 name_findings: Callable[[Sequence[Violation]], frozenset[str]]):
        self.scenario, self.protocol, self.runtime = scenario, protocol, runtime
        self.safety = [spec for spec in checks if spec.safety]
        self.name_findings = name_findings
        #: How far a run goes: kernel steps and simulated seconds (a liveness check looks further ahead).
        self.max_kernel_events, self.budget_s = MAX_KERNEL_EVENTS, LIVENESS_BUDGET_S
        #: The last state expanded by :meth:`enabled` and its successors by event (:meth:`advance` reads them).
        self._expanded: tuple[EffectsState, dict[Any, EffectsState]] | None = None
        #: The last state completed and its completion (:meth:`violations` judges it without running it again).
        self._completed: tuple[EffectsState, AutoRun] | None = None

    # -- the state before any fault --------------------------------------------------------

    def initial(self) -> EffectsState:
        scenario = self.scenario
        agenda = Agenda()
        rt = self.runtime(None, self.protocol, scenario.workflow, scenario.arguments, scenario.tenant,
                          scenario.next_number)
        run = AutoRun(rt, agenda, pausing=True)
        run.start_task(scenario.task)
        end = run.run(self.max_kernel_events, self.budget_s)
        return EffectsState(run, frozenset(), frozenset(), False, end, _grow(b"", rt.history, 0), len(rt.history))

    # -- where a fault strikes -------------------------------------------------------------

    def targets(self, state: EffectsState, events: Sequence[FaultEvent]) -> dict[int, int | str]:
        """For each event (by position): the read of the state's completion where it strikes (0: the read the
        state is paused at), or why it cannot strike."""
        task = self.scenario.task
        by_key: dict[tuple[str, str, str], list[int]] = {}
        out: dict[int, int | str] = {}
        for position, event in enumerate(events):
            key = (task, event.transition, event.point)
            if key in state.popped or (key, event.fault) in state.empty:
                out[position] = f"its point ({event.transition} {event.point}) has passed in this run"
            else:
                by_key.setdefault(key, []).append(position)
        for index, (kind, key, fault) in enumerate(self.trace(state)):
            if not by_key:
                break
            waiting = by_key.get(key, ())
            if kind == "all":
                for position in waiting:
                    out[position] = index
                by_key.pop(key, None)
            else:
                struck = [p for p in waiting if events[p].fault == fault]
                if not (index == 0 and state.took):
                    for position in struck:
                        out[position] = index
                    if struck:
                        by_key[key] = [p for p in waiting if p not in struck]
        for positions in by_key.values():
            for position in positions:
                out.setdefault(position, f"the run never reaches {events[position].transition} "
                                          f"{events[position].point} after the faults so far")
        return out

    def _successors(self, state: EffectsState, events: Sequence[FaultEvent]) -> dict[int, EffectsState | str]:
        """Every event taken in ``state``: the state after it, or why it cannot happen."""
        targets = self.targets(state, events)
        wanted: dict[int, list[int]] = {}
        out: dict[int, EffectsState | str] = {}
        for position, target in targets.items():
            if isinstance(target, str):
                out[position] = target
            else:
                wanted.setdefault(target, []).append(position)
        if not wanted:
            return out
        last = max(wanted)
        for index, run, popped, empty, took in self._reads(state):
            for position in wanted.get(index, ()):
                out[position] = self._strike(state, run.copy(), events[position], frozenset(popped),
                                             frozenset(empty), took)
            if index == last or run.at_read is None:
                break
        return out

    def _reads(self, state: EffectsState) -> Iterator[tuple[int, AutoRun, set, set, bool]]:
        """The run of ``state`` continued without a fault, paused at each read in turn (the one it is paused at
        first, numbered 0): ``(index, run, popped, empty, took)`` with the reads before it noted as passed -- a
        boundary popped, a one-class read that took no fault empty.  The run is advanced in place past each."""
        run = state.run.copy()
        popped, empty, took, index = set(state.popped), set(state.empty), state.took, 0
        while True:
            yield index, run, popped, empty, took
            if run.at_read is None:
                return
            kind, key, fault, _, _ = run.at_read
            if kind == "all":
                popped.add(key)
            elif not took:
                empty.add((key, fault))
            run.run(self.max_kernel_events, self.budget_s)
            index, took = index + 1, False

    def _strike(self, parent: EffectsState, run: AutoRun, event: FaultEvent, popped: frozenset, empty: frozenset,
                took: bool) -> EffectsState | str:
        """The state after ``event`` strikes at the read ``run`` is paused at (or why it has no effect there)."""
        assert run.at_read is not None
        kind, key, fault, pid, (worker, task, name, request) = run.at_read
        if kind == "one":
            run.strike_one(pid, task, key[1], fault, event)
            took = True
        else:
            entry = FaultEntry(task, key[1], key[2], event.fault, event)
            if inject(run, entry, worker, task, name, request):
                run.fired.append(event)
            elif event.fault not in ARMED_FOR_LATER:
                return f"{event.fault} finds nothing to act on at {event.transition} {event.point} in this run"
        history = run.rt.history
        after = EffectsState(run, popped, empty, took, None, _grow(parent.history, history, parent.length),
                             len(history))
        if event.fault in ARMED_FOR_LATER:  # it fires only if a retry it changes follows: look ahead once
            completion = self.completion(after)
            if event not in completion.fired:
                return f"{event.fault} has no effect: no retry of {event.transition} follows in this run"
            after._judged = self._checked(completion)
        return after

    # -- the contract ----------------------------------------------------------------------

    def enabled(self, state: EffectsState, events: Sequence[Any]) -> list[int]:
        found = self._successors(state, events)
        after = {p: s for p, s in found.items() if isinstance(s, EffectsState)}
        self._expanded = (state, {events[p]: s for p, s in after.items()})
        return sorted(after)

    def why_not(self, state: EffectsState, event: Any) -> str | None:
        found = self._successors(state, [event])[0]
        return found if isinstance(found, str) else None

    def step(self, state: EffectsState, event: Any) -> tuple[EffectsState, list[Record]]:
        after = self.advance(state, event)
        records = [(e.actor, e.event, dict(e.fields)) for e in list(after.rt.history)[state.length:]]
        return after, records

    def advance(self, state: EffectsState, event: Any) -> EffectsState:
        expanded = self._expanded
        if expanded is not None and expanded[0] is state and event in expanded[1]:
            return expanded[1][event]
        found = self._successors(state, [event])[0]
        assert isinstance(found, EffectsState), f"{event} cannot happen here: {found}"
        return found

    drives_replay = False  # its events strike a timed run: tests/families/effects/test_effects_machine.py
    rebuilt_by_order = True  # a paused run pickles to about 1,800 bytes; its expansion runs it to its end anyway

    def along(self, state: EffectsState, events: Sequence[Any]) -> EffectsState:
        """The state after the faults of a path, taken in turn: each where the run, continued from the state
        before it, first reads its point -- what :meth:`advance` takes, without running each state to its end
        to read where its faults strike (:meth:`targets`)."""
        for event in events:
            state = self._first_strike(state, event)
        return state

    def _first_strike(self, state: EffectsState, event: FaultEvent) -> EffectsState:
        """``event`` struck at the first read of the run after ``state`` that :meth:`targets` gives it, the reads
        passed on the way noted as :meth:`_successors` notes them (:meth:`_reads`)."""
        point = (self.scenario.task, event.transition, event.point)
        for index, run, popped, empty, took in self._reads(state):
            if run.at_read is None:
                break
            kind, key, fault, _, _ = run.at_read
            if key == point and (kind == "all" or (fault == event.fault and not (index == 0 and took))):
                after = self._strike(state, run.copy(), event, frozenset(popped), frozenset(empty), took)
                assert isinstance(after, EffectsState), f"{event} on a path of the search cannot strike: {after}"
                return after
        raise AssertionError(f"{event} on a path of the search is never reached: {event.transition} {event.point}")

    def state_after(self, events: Sequence[Any]) -> EffectsState:
        """The state after a fault list as a replay plays it: its faults taken in the order they fire there (one
        the replay does not fire is left out), so a path listed in any order reaches its replay's run."""
        from sim.families.effects.runner import run_faults

        replay = run_faults(self.scenario, self.protocol, tuple(events), self.runtime)
        _, driver = replay.state
        fired = {token: rank for rank, token in enumerate(driver.fired)}
        state = self.initial()
        for position in sorted(range(len(events)), key=lambda i: fired.get(i, len(fired) + i)):
            if position not in replay.skipped and self.why_not(state, events[position]) is None:
                state = self.advance(state, events[position])
        return state

    def key(self, state: EffectsState) -> Any:
        """The history's digest and the digest of every other part (32 bytes: what a search keeps or hashes)."""
        if state._key is None:
            state._key = state.history + hashlib.blake2b(_encoded(_run_key(state)), digest_size=16).digest()
        return state._key

    def check_state(self, state: EffectsState) -> None:
        """Assert the state's own consistency (:meth:`~sim.core.machine.Machine.check_state`): the history the
        key's digest counts is the run's, a run paused at a read is paused in a live process with callbacks still
        to run, the agenda and each worker's view of the log are consistent, and every request is in one place
        at a time -- in flight or answered -- under a number the runtime drew."""
        run, rt = state.run, state.rt
        assert state.length == len(rt.history), f"a state counts {state.length} records of {len(rt.history)}"
        assert (run.at_read is None) == (run.rest is None), "a run paused without a read, or a read not paused at"
        assert state.end is None or run.at_read is None, "a run that ended is paused at a read"
        assert not state.took or (run.at_read is not None and run.at_read[0] == "one"), (
            "a fault taken at a read that takes one fault class, but the run is not paused at one")
        assert run.at_read is None or run.at_read[3] in run.procs, "the run is paused in a process that ended"
        assert all(pid <= run.next_pid for pid in run.procs), f"a process numbered above {run.next_pid}"
        run.agenda.check()
        for memory in rt.workers.values():
            for task, worker_task in memory.tasks.items():
                worker_task.view.check(len(rt.log.records.get(task, ())))
        in_flight = [request.request_id for request in rt.in_flight]
        answered = [request.request_id for request, _, _ in rt.responses]
        numbers = in_flight + answered
        assert len(set(numbers)) == len(numbers), f"a request both in flight and answered, or twice: {numbers}"
        assert all(int(number[1:]) <= rt.request_count for number in numbers), (
            f"a request numbered above the {rt.request_count} drawn: {numbers}")

    # -- judging ---------------------------------------------------------------------------

    def completion(self, state: EffectsState) -> AutoRun:
        """The run of ``state`` continued without another fault, to its end (its history closed); the reads it
        passes are kept on the state (:meth:`trace`)."""
        from sim.families.effects.runner import _finish

        run = state.run.copy()
        end, reads = state.end, []
        while run.at_read is not None or end is None:
            if run.at_read is not None:
                reads.append(run.at_read[:3])
            end = run.run(self.max_kernel_events, self.budget_s)
        _finish(run.rt, end)
        state._trace = tuple(reads)
        self._completed = (state, run)
        return run

    def trace(self, state: EffectsState) -> tuple[tuple, ...]:
        """The reads of the schedule the state's completion passes, in order, the one it is paused at first."""
        if state._trace is None:
            self.completion(state)
        assert state._trace is not None
        return state._trace

    def violations(self, state: EffectsState) -> tuple[Violation, ...]:
        """The safety violations of the state's completion (computed once per state; a completion just run for
        the same state, to show it or read its trace, is judged, not run again)."""
        if state._judged is None:
            completed = self._completed
            run = completed[1] if completed is not None and completed[0] is state else self.completion(state)
            state._judged = self._checked(run)
        return state._judged

    def _checked(self, completion: AutoRun) -> tuple[Violation, ...]:
        return tuple(run_checks(self.safety, completion.rt.history, explain=False).safety_violations)

    def judge(self, state: EffectsState, findings: bool) -> frozenset[str]:
        """What the completion violates: invariants, or findings (``invariant @ where``)."""
        violations = self.violations(state)
        if not violations:
            return frozenset()
        return self.name_findings(violations) if findings else frozenset(v.invariant for v in violations)


def _record(event: Event) -> tuple:
    return event.time, event.actor, event.event, event.fields


def _grow(history: bytes, events: Any, start: int) -> bytes:
    """The history's digest: the one before it and the records from ``start`` on, hashed (BLAKE2b, 128 bits)."""
    added = tuple(_record(events[i]) for i in range(start, len(events)))
    if not added:
        return history
    return hashlib.blake2b(history + _encoded(added), digest_size=16).digest()


def _encoded(value: Any) -> bytes:
    """Plain values (tuples, strings, numbers, dicts in their order) as bytes that tell apart what ``repr``
    does (1, 1.0 and True; a list and a tuple) and depend on nothing else: marshal's format 2, which has no
    references to objects met before (a later format's would tell apart two equal values by the objects they
    share), so the bytes are the same in every process, whatever the hash seed; two to four times faster than ``repr``.
    A value marshal cannot write (an object of a class of its own) is written by ``repr``."""
    try:
        return marshal.dumps(value, 2)
    except ValueError:
        return b"r" + repr(value).encode()


def _run_key(state: EffectsState) -> tuple:
    run, rt = state.run, state.rt
    agenda = run.agenda
    memory = tuple(
        (name, m.alive, tuple(
            (task, wt.epoch, wt.version, wt.fenced, tuple(sorted((n, e.source, e.outcome, e.effect, e.request_id,
                                                                   e.version, e.content_hash)
                                                                  for n, e in wt.evidence.items())),
             tuple(sorted((rid, a.eid) for rid, a in wt.waiting.items())), tuple(sorted(wt.observations.items())),
             _view_key(wt.view))
            for task, wt in sorted(m.tasks.items())))
        for name, m in sorted(rt.workers.items()))
    external = rt.external
    return (
        tuple(sorted(state.popped)), tuple(sorted(state.empty)), state.took, _read_key(run.at_read),
        state.end is not None,
        agenda.now, agenda.steps, agenda.counter, tuple(agenda.queue),
        tuple(sorted((eid, None if r[0] is None else tuple(r[0]), r[1], r[2]) for eid, r in agenda.events.items())),
        tuple(sorted((pid, p.key()) for pid, p in run.procs.items())), run.next_pid,
        None if run.rest is None else tuple(run.rest),
        tuple(sorted((rid, tuple(sorted(flags))) for rid, flags in run.request_flags.items())),
        tuple(sorted(run.notices.items())), tuple(sorted(run.humans_started)), tuple(sorted(run.paused.items())),
        memory, tuple(sorted((t, tuple(lease)) for t, lease in rt.leases.items())),
        tuple(sorted(rt.deliveries.items())),
        tuple(r.request_id for r in rt.in_flight), tuple((r.request_id, outcome) for r, outcome, _ in rt.responses),
        tuple(sorted((k, len(v)) for k, v in rt.armed.items())), tuple(sorted(rt.last_dispatch_s.items())),
        tuple(sorted(rt.abort_s.items())), tuple(sorted(rt.checkpoint_s.items())), rt.request_count, rt.code_version,
        external.next_number, tuple((o.number, o.open) for o in external.objects),
        tuple(sorted((k, o.number, at, kept) for k, (o, at, kept) in external.keys.items())),
        tuple(sorted(external.read_versions.items())),
    )


def _read_key(at_read: tuple | None) -> tuple | None:
    if at_read is None:
        return None
    kind, key, fault, pid, (worker, task, name, request) = at_read
    return kind, key, fault, pid, worker, task, name, None if request is None else request.request_id


def _view_key(view) -> tuple:
    return (view.version, view.aborted, view.terminal, tuple(sorted(view.approved)),
            tuple(sorted(view.approval_requested.items())), view.records,
            tuple((n, tuple(getattr(tv, s) for s in type(tv).__slots__)) for n, tv in view.transitions.items()))
