"""Fault schedules as data: a seed becomes an event order; the alphabet of exhaustive search.

The generator starts from the fault-free order of a workload -- ``plan``,
then for each step ``dispatch``, ``deliver``, ``ack`` -- and inserts
interference drawn from the workload's fault classes at uniformly drawn
positions.  Classes that need a later delivery (``retry``, ``duplicate``)
insert it too.  In swarm mode each seed first draws which classes are on
and their weights.

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
from sim.core.workload import Workload
from sim.families.workspace.scenario import PREEMPT_POINTS, Action

PREEMPT_CHOICES = (None,) + PREEMPT_POINTS
#: The workspace fault classes (a workload's ``[faults] classes`` picks among them).
FAULT_CLASSES = ("human_edit", "preempt", "lose_ack", "retry", "duplicate", "replan", "replan_stale")


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
        targets = [(path, None) for path in workload.base.files] + [
            (path, hunk) for path, hunks in workload.base.files.items() if len(hunks) > 1 for hunk in hunks
        ]
        weights = [workload.rates[c] for c in workload.classes]
        cached = workload.extra["_generation"] = {
            "base": tuple(base), "steps": [s.step_id for s in workload.base.plan], "targets": targets,
            "cum_weights": list(itertools.accumulate(weights)),
        }
    return cached


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
    steps, targets = prepared["steps"], prepared["targets"]
    count = rng.randint(1, workload.per_run_max)
    for _ in range(count):
        if len(order) >= workload.max_events - 1:
            break
        kind = rng.choices(classes, cum_weights=cum_weights)[0]
        _insert(kind, order, rng, steps, targets)
    return tuple(order[: workload.max_events])


def _insert(kind: str, order: list[Action], rng: random.Random, steps, targets) -> None:
    anywhere = rng.randint(1, len(order))
    if kind == "human_edit":
        path, hunk = rng.choice(targets)
        order.insert(anywhere, _action("human_edit", path=path, hunk=hunk))
    elif kind == "preempt":
        order.insert(anywhere, _action("preempt", point=rng.choice(PREEMPT_CHOICES)))
    elif kind in ("replan", "replan_stale"):
        order.insert(anywhere, _action("replan", point="stale" if kind == "replan_stale" else None))
    elif kind == "lose_ack":
        acks = [i for i, a in enumerate(order) if a.kind == "ack"]
        if acks:
            i = rng.choice(acks)
            order[i] = _action("lose_ack", order[i].step)
    elif kind in ("retry", "duplicate"):
        step = rng.choice(steps)
        dispatched = next(i for i, a in enumerate(order) if a.kind == "dispatch" and a.step == step)
        first = rng.randint(dispatched + 1, len(order))
        order.insert(first, _action(kind, step))
        order.insert(rng.randint(first + 1, len(order)), _action("deliver", step))
    else:  # pragma: no cover - the workload loader refuses unknown classes
        raise AssertionError(kind)


def alphabet(workload: Workload, steps: int | None = None) -> list[Action]:
    """Every event the workload can produce, in a fixed order (optionally for its first ``steps`` steps)."""
    classes = set(workload.classes)
    events = [Action("plan")]
    for step in workload.base.plan[:steps]:
        sid = step.step_id
        events += [Action("dispatch", sid), Action("deliver", sid), Action("ack", sid)]
        if "lose_ack" in classes or "preempt" in classes:
            events.append(Action("lose_ack", sid))
        if "retry" in classes:
            events.append(Action("retry", sid))
        if "duplicate" in classes:
            events.append(Action("duplicate", sid))
    if "human_edit" in classes:
        for path, hunks in workload.base.files.items():
            events.append(Action("human_edit", path=path))
            if len(hunks) > 1:
                events += [Action("human_edit", path=path, hunk=h) for h in hunks]
    if "preempt" in classes:
        events += [Action("preempt")] + [Action("preempt", point=p) for p in PREEMPT_POINTS]
    if "replan" in classes:
        events.append(Action("replan"))
    if "replan_stale" in classes:
        events.append(Action("replan", point="stale"))
    return events
