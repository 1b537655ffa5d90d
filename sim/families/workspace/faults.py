"""Fault schedules as data: a seed becomes an event order; the alphabet of exhaustive search.

The generator starts from the fault-free order of a workload -- ``plan``,
then for each step ``dispatch``, ``deliver``, ``ack`` -- and inserts
interference drawn from the workload's fault classes at uniformly drawn
positions.  Classes that need a later delivery (``retry``, ``duplicate``)
insert it too.  In swarm mode each seed first draws which classes are on
and their weights.  A workload's ``[faults.targets]`` weighs what a fault
strikes (:mod:`sim.families.workspace.targets`); without it every target is
drawn uniformly, exactly as before targets existed.  With ``settle = true``
the order ends with one ``settle`` event: the network delivers and answers
whatever is still in flight.

Rule for per-run seeds (documented contract): run ``i`` of a sweep that
starts at ``seed_start`` uses seed ``seed_start + i``, and its order depends
only on (workload, seed) -- never on the protocol, the worker count or the
order in which runs finish.  The one ``random.Random(seed)`` is the only
random source.  The raw order may hold events that cannot happen under a
given protocol; the replay skips them and the sweep keeps the order without
them (``Replay.valid_order``), so the orders a sweep reports, shrinks and
exports never contain one.
"""

from __future__ import annotations

import functools
import itertools
import random
from typing import cast

from sim.core.workload import Workload
from sim.families.workspace.scenario import PREEMPT_POINTS, Action
from sim.families.workspace.targets import Targets, targets_of

PREEMPT_CHOICES = (None,) + PREEMPT_POINTS
#: The workspace fault classes (a workload's ``[faults] classes`` picks among them).
FAULT_CLASSES = ("human_edit", "preempt", "lose_ack", "retry", "duplicate", "replan", "replan_stale", "tests_fail")


def base_order(workload: Workload) -> list[Action]:
    return list(_prepared(workload)["base"])


@functools.lru_cache(maxsize=4096)
def _action(kind: str, step: str | None = None, point: str | None = None, path: str | None = None,
            hunk: str | None = None) -> Action:
    """Actions are immutable values: one instance per distinct event, shared by every order."""
    return Action(kind, step=step, point=point, path=path, hunk=hunk)


def _prepared(workload: Workload) -> dict:
    """What every seed of a workload draws from, computed once (generation is on the sweep's hot path)."""
    cached = workload.extra.get("_generation")
    if cached is None:
        base = [_action("plan")]
        for step in workload.base.plan:
            base += [_action("dispatch", step.step_id), _action("deliver", step.step_id), _action("ack", step.step_id)]
        targets = edit_targets(workload)
        weights = [workload.rates[c] for c in workload.classes]
        steps = [s.step_id for s in workload.base.plan]
        weighed = targets_of(workload)
        cached = workload.extra["_generation"] = {
            "base": tuple(base), "steps": steps, "targets": targets,
            "cum_weights": list(itertools.accumulate(weights)),
            "draw": Draw(targets, steps, {s.step_id: s.path for s in workload.base.plan}, weighed),
            "settle": workload.extra.get("settle", False),
        }
    return cached


def edit_targets(workload: Workload) -> list[tuple[str, str | None]]:
    """What a human edit may strike: every file, and every hunk of a file with more than one."""
    return [(path, None) for path in workload.base.files] + [
        (path, hunk) for path, hunks in workload.base.files.items() if len(hunks) > 1 for hunk in hunks
    ]


class Draw:
    """The targets a fault strikes, drawn from the run's random source: uniformly (``rng.choice``, the draws
    of a workload without ``[faults.targets]``), or by the weights the workload gives."""

    def __init__(self, targets: list, steps: list[str], paths: dict[str, str], weighed: Targets | None):
        self.targets, self.steps, self.paths = targets, steps, paths
        self.edit_weights = None if weighed is None or not weighed.edits else list(itertools.accumulate(
            weighed.edits.get(target, 1.0) for target in targets))
        self.step_weight = None if weighed is None or not weighed.steps else {
            step: weighed.steps.get(step, 1.0) for step in steps}
        self.step_weights = None if self.step_weight is None else list(itertools.accumulate(
            self.step_weight[step] for step in steps))

    def edit(self, rng: random.Random) -> tuple[str, str | None]:
        if self.edit_weights is None:
            return rng.choice(self.targets)
        return rng.choices(self.targets, cum_weights=self.edit_weights)[0]

    def step(self, rng: random.Random) -> str:
        if self.step_weights is None:
            return rng.choice(self.steps)
        return rng.choices(self.steps, cum_weights=self.step_weights)[0]

    def ack(self, rng: random.Random, order: list[Action], acks: list[int]) -> int | None:
        if self.step_weight is None:
            return rng.choice(acks)
        weights = [self.step_weight[cast(str, order[i].step)] for i in acks]  # an ack names its step
        if not any(weights):
            return None
        return rng.choices(acks, weights=weights)[0]


def _draw_classes(workload: Workload, rng: random.Random) -> tuple[tuple[str, ...], list[float]]:
    """The classes on in this run and their weights (swarm mode draws both per seed)."""
    if not workload.swarm:
        return workload.classes, workload.weights()
    on = tuple(c for c in workload.classes if rng.random() < 0.5) or (rng.choice(workload.classes),)
    return on, [rng.random() + 0.05 for _ in on]


def generate(workload: Workload, seed: int) -> tuple[Action, ...]:
    """The event order of one run (before protocol-dependent skips are dropped)."""
    rng = random.Random(seed)
    prepared = _prepared(workload)
    classes, weights = _draw_classes(workload, rng)
    cum_weights = list(itertools.accumulate(weights)) if workload.swarm else prepared["cum_weights"]
    order = list(prepared["base"])
    draw = prepared["draw"]
    settle = prepared["settle"]
    room = workload.max_events - 1 if settle else workload.max_events  # a settle event closes the order
    count = rng.randint(1, workload.per_run_max)
    for _ in range(count):
        if len(order) >= room - 1:
            break
        kind = rng.choices(classes, cum_weights=cum_weights)[0]
        _insert(kind, order, rng, draw)
    order = order[:room]
    if settle:
        order.append(_action("settle"))
    return tuple(order)


def _insert(kind: str, order: list[Action], rng: random.Random, draw: Draw) -> None:
    anywhere = rng.randint(1, len(order))
    if kind == "human_edit":
        path, hunk = draw.edit(rng)
        order.insert(anywhere, _action("human_edit", path=path, hunk=hunk))
    elif kind == "preempt":
        order.insert(anywhere, _action("preempt", point=rng.choice(PREEMPT_CHOICES)))
    elif kind in ("replan", "replan_stale"):
        order.insert(anywhere, _action("replan", point="stale" if kind == "replan_stale" else None))
    elif kind == "lose_ack":
        acks = [i for i, a in enumerate(order) if a.kind == "ack"]
        if acks:
            i = draw.ack(rng, order, acks)
            if i is not None:
                order[i] = _action("lose_ack", order[i].step)
    elif kind in ("retry", "duplicate"):
        step = draw.step(rng)
        dispatched = next(i for i, a in enumerate(order) if a.kind == "dispatch" and a.step == step)
        first = rng.randint(dispatched + 1, len(order))
        order.insert(first, _action(kind, step))
        order.insert(rng.randint(first + 1, len(order)), _action("deliver", step))
    elif kind == "tests_fail":  # the verifier, some time after the step's first delivery
        step = draw.step(rng)
        delivered = next(i for i, a in enumerate(order) if a.kind == "deliver" and a.step == step)
        order.insert(rng.randint(delivered + 1, len(order)), _action("tests_fail", path=draw.paths[step]))
    else:  # pragma: no cover - the workload loader refuses unknown classes
        raise AssertionError(kind)


def alphabet(workload: Workload, steps: int | None = None) -> list[Action]:
    """Every event the workload can produce, in a fixed order (optionally for its first ``steps`` steps).

    A target ``[faults.targets]`` weighs 0 is never struck, so its events are left out."""
    classes = set(workload.classes)
    weighed = targets_of(workload)
    struck = (lambda step: True) if weighed is None else weighed.strikes_step
    events = [Action("plan")]
    for step in workload.base.plan[:steps]:
        sid = step.step_id
        events += [Action("dispatch", sid), Action("deliver", sid), Action("ack", sid)]
        if ("lose_ack" in classes or "preempt" in classes) and struck(sid):
            events.append(Action("lose_ack", sid))
        if "retry" in classes and struck(sid):
            events.append(Action("retry", sid))
        if "duplicate" in classes and struck(sid):
            events.append(Action("duplicate", sid))
    if "human_edit" in classes:
        for path, hunks in workload.base.files.items():
            for hunk in (None, *hunks) if len(hunks) > 1 else (None,):
                if weighed is None or weighed.strikes_edit(path, hunk):
                    events.append(Action("human_edit", path=path, hunk=hunk))
    if "preempt" in classes:
        events += [Action("preempt")] + [Action("preempt", point=p) for p in PREEMPT_POINTS]
    if "replan" in classes:
        events.append(Action("replan"))
    if "replan_stale" in classes:
        events.append(Action("replan", point="stale"))
    if "tests_fail" in classes:
        events += [Action("tests_fail", path=path) for path in workload.base.files]
    if workload.extra.get("settle"):
        events.append(Action("settle"))
    return events
