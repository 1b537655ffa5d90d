"""A plain-Python model of the workspace protocol, with no discrete-event kernel.

It is the baseline of ``bench_fuzz.py``: the same semantics as
``sim.families.workspace`` (docs/workspace.md) for the presets -- fence
none/plan/step with the stamp taken at dispatch, dedupe off/memory/journal
with ``journal_write=atomic``, ``pipeline=off``, no drift or overlap check --
applied event by event in a loop, and the two safety checks the benchmark
compares (``lost_update``, ``duplicate_effect``) computed on the fly.

It consumes the very same orders as the real sweep (``sim.families.workspace.faults.generate``),
so a bare sweep and a fencesim sweep over the same seeds must find the same
number of violating runs.  Files are compared by content, not by hash (the
two are equivalent up to hash collisions).

An event that cannot happen at its point is skipped (no effect), exactly as
the replay does; ``BareRun.skipped`` counts them.
"""

from __future__ import annotations

from sim.core.knobs import Protocol
from sim.families.workspace import FAMILY
from sim.families.workspace.faults import generate

parse_protocol = FAMILY.parse_protocol

SUPPORTED = {"fence": ("none", "plan", "step"), "stamp_at": ("dispatch",), "dedupe": ("off", "memory", "journal"),
             "journal_write": ("atomic",), "drift_check": ("off",), "overlap_check": ("off",), "pipeline": ("off",)}


def check_supported(protocol: Protocol) -> None:
    for knob, values in SUPPORTED.items():
        if protocol.knobs[knob] not in values:
            raise ValueError(f"bare model supports {knob} in {values}, not {protocol.knobs[knob]!r}")


def _model_name(number: int) -> str:
    return f"model-{chr(ord('A') + (number - 1) % 26)}{'' if number <= 26 else number}"


class BareRun:
    """One run's state: workspace, planner, client, network, executor -- plain attributes."""

    __slots__ = (
        "fence", "dedupe", "files", "rev", "journal", "memory", "plan_specs", "replan_specs",
        "snapshot", "snapshot_rev", "model_number", "steps", "order", "sent", "in_flight", "answers",
        "verdict_steps", "armed", "edits", "applied_steps", "lost_update", "duplicate_effect", "skipped",
    )

    def __init__(self, base, fence: str, dedupe: str):
        self.fence = fence
        self.dedupe = dedupe
        self.files = {p: dict(h) for p, h in base.files.items()}
        self.rev = 0
        self.journal: dict = {}
        self.memory: dict = {}
        self.plan_specs = base.plan
        self.replan_specs = {s.step_id: s for s in base.replan}
        self.snapshot = None
        self.snapshot_rev = 0
        self.model_number = 1
        # step_id -> (path, patch, claimed_rev, claimed_pre (file content), truth (hunk -> text))
        self.steps: dict = {}
        self.order: list[str] = []
        self.sent: dict = {}  # step_id -> (stamped_rev, stamped_pre, step)
        self.in_flight: list = []  # [(step_id, message)], oldest first
        self.answers: list[str] = []  # step ids with an answer on its way back
        self.verdict_steps: set[str] = set()
        self.armed = None
        self.edits = 0
        self.applied_steps: set[str] = set()
        self.lost_update = 0
        self.duplicate_effect = 0
        self.skipped = 0

    # -- planner / router -------------------------------------------------
    def plan(self) -> bool:
        if self.snapshot is not None:
            return False
        files = self.files
        self.snapshot = {p: dict(h) for p, h in files.items()}
        self.snapshot_rev = self.rev
        view = {p: dict(h) for p, h in files.items()}
        for offset, spec in enumerate(self.plan_specs):
            before = view[spec.path]
            self.steps[spec.step_id] = (spec.path, spec.patch, self.rev + offset, before,
                                        {h: before.get(h, "") for h in spec.patch})
            self.order.append(spec.step_id)
            after = dict(before)
            after.update(spec.patch)
            view[spec.path] = after
        return True

    def replan(self, stale: bool) -> bool:
        if self.snapshot is None:
            return False
        self.model_number += 1
        model = _model_name(self.model_number)
        snapshot = self.snapshot
        view = {p: dict(h) for p, h in (snapshot if stale else self.files).items()}
        for step_id in self.order:
            if step_id in self.sent:
                continue
            spec = self.replan_specs.get(step_id)
            if spec is not None:
                path, patch = spec.path, spec.patch
            else:
                path, old_patch = self.steps[step_id][0], _spec(self.plan_specs, step_id).patch
                patch = {h: f"{c}~{model}" for h, c in old_patch.items()}
            before = view[path]
            self.steps[step_id] = (path, patch, self.snapshot_rev, snapshot[path],
                                   {h: before.get(h, "") for h in patch})
            after = dict(before)
            after.update(patch)
            view[path] = after
        return True

    # -- client -----------------------------------------------------------
    def dispatch(self, step_id: str) -> bool:
        if not self.order or step_id in self.sent:
            return False
        position = self.order.index(step_id)
        if position > 0:
            previous = self.order[position - 1]
            if previous not in self.sent or previous not in self.verdict_steps:
                return False
        step = self.steps[step_id]
        fence = self.fence
        if fence == "none":
            stamp_rev, stamp_pre = step[2], step[3]
        elif fence == "plan":
            stamp_rev, stamp_pre = self.snapshot_rev, step[3]
        else:  # step, stamped at dispatch
            stamp_rev, stamp_pre = self.rev, dict(self.files[step[0]])
        message = (stamp_rev, stamp_pre, step)
        self.sent[step_id] = message
        self.in_flight.append((step_id, message))
        return True

    def retry(self, step_id: str) -> bool:
        message = self.sent.get(step_id)
        if message is None:
            return False
        self.in_flight.append((step_id, message))
        return True

    # -- network ----------------------------------------------------------
    def duplicate(self, step_id: str) -> bool:
        for sid, message in self.in_flight:
            if sid == step_id:
                self.in_flight.append((sid, message))
                return True
        return False

    def deliver(self, step_id: str) -> bool:
        in_flight = self.in_flight
        for i, (sid, message) in enumerate(in_flight):
            if sid == step_id:
                del in_flight[i]
                self._apply(step_id, message)
                return True
        return False

    def answer(self, step_id: str) -> bool:  # ack and lose_ack: the client learns nothing it acts on
        answers = self.answers
        if step_id in answers:
            answers.remove(step_id)
            return True
        return False

    # -- executor ---------------------------------------------------------
    def preempt(self, point) -> bool:
        if self.snapshot is None:
            return False
        if point is None:
            self.memory = {}
            return True
        if self.armed is not None:
            return False
        self.armed = point
        return True

    def _apply(self, step_id: str, message) -> None:
        stamp_rev, stamp_pre, (path, patch, _claimed_rev, _claimed_pre, truth) = message
        current = self.files[path]
        dedupe = self.dedupe
        store = self.journal if dedupe == "journal" else self.memory if dedupe == "memory" else None
        key = (step_id, stamp_rev)
        fenced = self.fence != "none"
        if store is not None and key in store:
            applied = False
        elif fenced and (stamp_rev != self.rev or stamp_pre != current):
            applied = False
        else:
            applied = True
        armed = self.armed
        if not applied:
            answered = True
            if armed is not None:
                self.armed = None
                self.memory = {}
                answered = False
                if armed == "before_write":
                    return  # the message is used up before any verdict
            self.verdict_steps.add(step_id)
            if answered:
                self.answers.append(step_id)
            return
        if armed == "before_write":
            self.armed = None
            self.memory = {}
            return
        # the write, checked against its author's truth (lost_update) and earlier writes (duplicate_effect)
        for h, text in truth.items():
            if current.get(h, "") != text:
                self.lost_update += 1
                break
        if step_id in self.applied_steps:
            self.duplicate_effect += 1
        self.applied_steps.add(step_id)
        after = dict(current)
        after.update(patch)
        self.files[path] = after
        self.rev += 1
        if store is not None:
            store[key] = "applied"
        self.verdict_steps.add(step_id)
        if armed is not None:  # after_write / after_journal: write and key kept (atomic), no answer
            self.armed = None
            self.memory = {}
            return
        self.answers.append(step_id)

    # -- human ------------------------------------------------------------
    def human_edit(self, path: str, hunk, content) -> bool:
        if self.snapshot is None:
            return False
        self.edits += 1
        text = content if content is not None else f"human-{self.edits}"
        after = dict(self.files[path])
        for h in ([hunk] if hunk else list(after)):
            after[h] = text
        self.files[path] = after
        self.rev += 1
        return True

    # -- one event of the vocabulary -------------------------------------
    def step(self, action) -> bool:
        kind = action.kind
        if kind == "deliver":
            done = self.deliver(action.step)
        elif kind == "dispatch":
            done = self.dispatch(action.step)
        elif kind == "ack" or kind == "lose_ack":
            done = self.answer(action.step)
        elif kind == "human_edit":
            done = self.human_edit(action.path, action.hunk, action.content)
        elif kind == "preempt":
            done = self.preempt(action.point)
        elif kind == "retry":
            done = self.retry(action.step)
        elif kind == "duplicate":
            done = self.duplicate(action.step)
        elif kind == "replan":
            done = self.replan(action.point == "stale")
        elif kind == "plan":
            done = self.plan()
        else:
            raise ValueError(f"unknown event {kind!r}")
        if not done:
            self.skipped += 1
        return done


def _spec(specs, step_id: str):
    for spec in specs:
        if spec.step_id == step_id:
            return spec
    raise KeyError(step_id)


def run_events(workload, protocol: Protocol, events) -> BareRun:
    """Apply an order to a fresh bare model and return it (violation counters included)."""
    run = BareRun(workload.base, protocol.knobs["fence"], protocol.knobs["dedupe"])
    step = run.step
    for action in events:
        step(action)
    return run


def bare_sweep(workload, protocol: Protocol | str, seeds: int, seed_start: int = 0) -> dict[str, int]:
    """Generate and run every seed; count runs violating each invariant (as the real sweep tallies them)."""
    if not isinstance(protocol, Protocol):
        protocol = parse_protocol(protocol)
    check_supported(protocol)
    base, fence, dedupe = workload.base, protocol.knobs["fence"], protocol.knobs["dedupe"]
    lost = dup = 0
    for seed in range(seed_start, seed_start + seeds):
        run = BareRun(base, fence, dedupe)
        step = run.step
        for action in generate(workload, seed):
            step(action)
        lost += run.lost_update > 0
        dup += run.duplicate_effect > 0
    return {"runs": seeds, "lost_update": lost, "duplicate_effect": dup}
