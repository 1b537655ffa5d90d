"""Expected incidents per period from telemetry rates (``fencesim incidents``; docs/incidents.md).

A workload's ``[telemetry]`` table gives rates measured in production
instead of the generator's per-run counts.  From them this module computes
the expected number of runs (plans or tasks) violating each invariant per
``N`` runs -- a month of work -- with a simultaneous 95% interval, and the
expected number of violations.

Method: stratified importance sampling over the number of faults a run
meets.

* Workspace family: each rate becomes a mean per plan, ``lambda_c`` (a rate
  per file-hour times the files and the hours of a plan, a rate per request
  times the requests of a plan, a rate per session as it is).  The class
  counts are independent Poisson(``lambda_c``), so the total ``K`` is
  Poisson(``Lambda = sum lambda_c``) and, given ``K``, each fault's class is
  drawn with probability ``lambda_c / Lambda`` -- which is what the family's
  own generator does with the ``lambda_c`` as weights.  Stratum ``K = k`` is
  sampled from the generator on the workload with ``per_run_max = k``, keeping
  the orders with exactly ``k`` faults (``Family.fault_count``).
* Effects family: each request (one per transition of the workflow) is
  ambiguous with ``ambiguous_share``; an ambiguous one committed with
  ``committed_share``, lost its worker with ``worker_loss_share``, and its
  reconciliation cannot prove the outcome with ``1 - reconciled_share``.
  Strata are ``(k, u)``: ``k`` ambiguous requests (Binomial), ``u`` of them
  unprovable (Binomial); the ``k`` requests and the ``u`` among them are drawn
  uniformly, the rest per request.  The faults are the family's own events
  (``terminate T after_dispatch``, ``lose_request T after_dispatch``,
  ``lose_response T after_commit``, ``unprovable T reconcile``), read with
  ``Family.parse_event`` -- the mapping the exposure simulation documents.

Rare faults are forced (every sampled run is in a stratum with faults) and
weighted back by the stratum's probability.  The runs' estimate is
``sum_s w_s x_s / n_s`` over the strata, plus the fault-free stratum, which
is one order and is replayed exactly.  Interval: each sampled stratum gets a
Clopper-Pearson interval (runs) or an exact Poisson interval on its total
(violations) at level ``alpha_s = alpha w_s / W`` (Bonferroni: with
probability at least 95% every stratum is inside its interval at once, so the
weighted sums bound the estimand); the probability of the strata not sampled
(the Poisson tail, a stratum the generator could not reach) is added to the
runs' upper bound, and makes the violations' upper bound unknown (``None``).

The orders depend only on (workload, telemetry, seeds, seed_start), never on
the protocol: every protocol replays the same orders (common random numbers).
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

from sim.core.errors import InputError
from sim.core.family import Family
from sim.core.knobs import Protocol
from sim.core.stats import clopper_pearson, garwood
from sim.core.values import JsonObject
from sim.core.workload import Workload

if TYPE_CHECKING:
    import pandas as pd

METHOD = ("stratified importance sampling over the number of faults per run: strata weighted by their "
          "probability under the telemetry rates (Poisson per plan for the workspace family; binomial per "
          "request for the effects family), each stratum's orders forced from the family's own faults "
          "and weighted back")
INTERVAL = ("simultaneous 95%: Clopper-Pearson per stratum (runs) or exact Poisson on the stratum's total "
            "(violations) at level alpha*w_s/W (Bonferroni), weighted and summed; the probability of strata "
            "not sampled is added to the runs' upper bound")
CONFIDENCE = 0.95
#: Runs sampled per protocol, by default, per family (the orders are shared by every protocol): a workspace
#: run costs well under a millisecond, an effects task several, so the workspace family samples five times as many.
SEEDS_DEFAULT = {"workspace": 10_000, "effects": 2_000}
#: Runs sampled per protocol for a family not in ``SEEDS_DEFAULT``.
SEEDS_FALLBACK = 2_000
SEEDS_MAX = 1_000_000
#: Fewest runs of a sampled stratum.
STRATUM_RUNS_MIN = 4
#: Deepest stratum sampled (faults per run), and the tail left unsampled: the smallest ``k`` whose tail
#: P(K > k) is at most ``TAIL_SHARE`` of P(K >= 1).
STRATUM_FAULTS_MAX = 12
TAIL_SHARE = 1e-4
#: The effects family samples every (k, u) stratum when there are at most this many.
EFFECTS_STRATA_MAX = 136
#: Orders the generator is asked for, per order kept, before a stratum is given up (per fault of the stratum).
ATTEMPTS_PER_FAULT = 8
#: Seeds of stratum ``s`` start at ``seed_start + s * STRATUM_SEED_STRIDE``.
STRATUM_SEED_STRIDE = 1_000_003
#: Lowest Bonferroni level of one stratum (keeps the quantiles finite; adds at most 1e-297 to alpha).
ALPHA_FLOOR = 1e-300
PERIOD_DEFAULT = 10_000
#: Per-plan exposure of each workspace telemetry key: the fault class it drives and what its rate is per.
WORKSPACE_RATES = {
    "human_edits_per_file_hour": ("human_edit", "file_hours"),
    "preemptions_per_executor_hour": ("preempt", "executor_hours"),
    "lost_acks_per_request": ("lose_ack", "requests"),
    "retries_per_request": ("retry", "requests"),
    "duplicates_per_request": ("duplicate", "requests"),
    "model_swaps_per_session": ("replan", "sessions"),
    "stale_replans_per_session": ("replan_stale", "sessions"),
    "test_failures_per_session": ("tests_fail", "sessions"),
}


@dataclass(frozen=True)
class Estimate:
    """A per-period figure with its interval; ``high`` is None when the strata not sampled leave it unbounded."""

    value: float
    low: float
    high: float | None

    def to_json(self, digits: int = 6) -> dict[str, float | None]:
        return {"value": round(self.value, digits), "low": round(self.low, digits),
                "high": None if self.high is None else round(self.high, digits)}

    def contains(self, number: float) -> bool:
        return self.low <= number and (self.high is None or number <= self.high)


@dataclass(frozen=True)
class Stratum:
    """One stratum: its faults (class or kind -> count), probability, runs sampled, and whether it is one
    order replayed exactly."""

    faults: dict[str, int]
    probability: float
    runs: int
    exact: bool = False
    attempts: int = 0

    def to_json(self) -> JsonObject:
        return {"faults": dict(self.faults), "probability": float(f"{self.probability:.6g}"), "runs": self.runs,
                "exact": self.exact, "attempts": self.attempts}


@dataclass(frozen=True)
class CheckIncidents:
    """Expected runs violating one check, and its expected violations, per period."""

    check: str
    safety: bool
    runs: Estimate
    violations: Estimate
    not_evaluable_runs: int = 0

    def to_json(self) -> JsonObject:
        return {"safety": self.safety, "runs": self.runs.to_json(), "violations": self.violations.to_json(),
                "not_evaluable_runs": self.not_evaluable_runs}


@dataclass
class IncidentsResult:
    """What :func:`incidents` returns: per protocol and check, the expected incidents per ``period`` runs."""

    workload: str
    family: str
    unit: str
    period: float
    seeds: int
    seed_start: int
    fault_means: dict[str, float]
    strata: list[Stratum]
    tail_probability: float
    protocols: dict[str, dict[str, CheckIncidents]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    method: str = METHOD
    interval: str = INTERVAL

    def to_json(self) -> JsonObject:
        return {
            "workload": self.workload, "family": self.family,
            "period": {"runs": self.period, "unit": self.unit, "per": "month"},
            "seeds": self.seeds, "seed_start": self.seed_start, "method": self.method, "interval": self.interval,
            "fault_means": {k: float(f"{v:.6g}") for k, v in self.fault_means.items()},
            "strata": [s.to_json() for s in self.strata],
            "tail_probability": float(f"{self.tail_probability:.6g}"),
            "protocols": {label: {name: c.to_json() for name, c in checks.items()}
                          for label, checks in self.protocols.items()},
            "notes": list(self.notes),
        }

    def table(self) -> pd.DataFrame:
        return incidents_table(self)


def incidents_table(result: IncidentsResult) -> pd.DataFrame:
    """A long DataFrame: protocol, check, safety, measure (runs | violations), value, low, high (per period)."""
    import pandas as pd
    rows = [{"protocol": label, "check": name, "safety": c.safety, "measure": measure,
             **getattr(c, measure).to_json()}
            for label, checks in result.protocols.items() for name, c in checks.items()
            for measure in ("runs", "violations")]
    return pd.DataFrame(rows, columns=["protocol", "check", "safety", "measure", "value", "low", "high"])


# -- strata -------------------------------------------------------------------------------------------

@dataclass
class _Plan:
    """The strata of a workload: labels, probabilities, the exact order of each exact stratum and the
    sampler (seed -> order or None when the seed's order is not in the stratum) of the others."""

    unit: str
    period: float
    means: dict[str, float]
    labels: list[dict[str, int]]
    weights: list[float]
    exact: dict[int, tuple[Any, ...]]
    samplers: dict[int, Callable[[int], tuple[Any, ...] | None]]
    faults: list[int]
    tail: float
    notes: list[str] = field(default_factory=list)


def _poisson_depth(total: float) -> tuple[int, float]:
    """The deepest stratum sampled for Poisson(``total``) faults, and the tail beyond it."""
    from scipy import stats
    if total <= 0:
        return 0, 0.0
    some = -math.expm1(-total)
    for depth in range(1, STRATUM_FAULTS_MAX + 1):
        tail = float(stats.poisson.sf(depth, total))
        if tail <= TAIL_SHARE * some:
            return depth, tail
    return STRATUM_FAULTS_MAX, float(stats.poisson.sf(STRATUM_FAULTS_MAX, total))


def workspace_means(workload: Workload) -> dict[str, float]:
    """The mean count of each fault class per plan, from the workload's ``[telemetry]``."""
    telemetry = workload.telemetry or {}
    hours = telemetry.get("plan_hours", 1.0)
    exposure = {"file_hours": len(workload.base.files) * hours,
                "executor_hours": telemetry.get("executors", 1.0) * hours,
                "requests": telemetry.get("requests_per_plan", float(len(workload.base.plan))),
                "sessions": 1.0}
    means: dict[str, float] = {}
    for key, (fault_class, unit) in WORKSPACE_RATES.items():
        if telemetry.get(key, 0.0) > 0:
            means[fault_class] = means.get(fault_class, 0.0) + telemetry[key] * exposure[unit]
    return means


def fault_free_order(family: Family, workload: Workload) -> tuple[Any, ...]:
    """The order with no fault: the most common of the first single-fault orders without their faults."""
    single = dataclasses.replace(workload, per_run_max=1, swarm=False, extra={}, telemetry=None)
    stripped: Counter[tuple[Any, ...]] = Counter()
    for seed in range(16):
        order = family.generate(single, seed)
        stripped[tuple(e for e in order if family.fault_count(single, (e,)) == 0)] += 1
    return max(stripped, key=lambda order: (stripped[order], -len(order)))


def _workspace_plan(family: Family, workload: Workload) -> _Plan:
    from scipy import stats
    means = workspace_means(workload)
    total = sum(means.values())
    depth, tail = _poisson_depth(total)
    telemetry = workload.telemetry or {}
    plan = _Plan(unit="plans", period=telemetry.get("plans_per_month", PERIOD_DEFAULT), means=means, labels=[{}],
                 weights=[math.exp(-total)], exact={0: fault_free_order(family, workload)}, samplers={}, faults=[0],
                 tail=tail)
    classes = tuple(c for c in workload.classes if means.get(c, 0) > 0)
    for k in range(1, depth + 1):
        forced = dataclasses.replace(workload, classes=classes, rates={c: means[c] for c in classes},
                                     per_run_max=k, swarm=False, extra={}, telemetry=None)
        plan.labels.append({"faults": k})
        plan.weights.append(float(stats.poisson.pmf(k, total)))
        plan.faults.append(k)
        plan.samplers[k] = _forced_sampler(family, forced, k)
    if tail > 0:
        plan.notes.append(f"runs with more than {depth} faults (probability {tail:.3g}) are not sampled: "
                          "their probability is added to the runs' upper bound")
    return plan


def _forced_sampler(family: Family, forced: Workload, k: int) -> Callable[[int], tuple[Any, ...] | None]:
    def sample(seed: int) -> tuple[Any, ...] | None:
        order = family.generate(forced, seed)
        return order if family.fault_count(forced, order) == k else None

    return sample


def _effects_shares(workload: Workload) -> tuple[float, float, float, float]:
    telemetry = workload.telemetry or {}
    if "ambiguous_share" not in telemetry or "committed_share" not in telemetry:
        raise InputError(f"workload {workload.name!r}: [telemetry] must give ambiguous_share and committed_share")
    return (telemetry["ambiguous_share"], telemetry["committed_share"], telemetry.get("reconciled_share", 1.0),
            telemetry.get("worker_loss_share", 0.5))


def _effects_plan(family: Family, workload: Workload) -> _Plan:
    from scipy import stats
    ambiguous, committed, reconciled, lost = _effects_shares(workload)
    # the requests the shares apply to: every transition but the reads (a read creates nothing; the exposure
    # arithmetic and simulation count reads apart too)
    names = [t.name for t in workload.base.workflow.side_effecting()]
    requests = len(names)
    depth = requests
    if (requests + 1) * (requests + 2) // 2 > EFFECTS_STRATA_MAX:
        depth = next((k for k in range(1, requests + 1) if stats.binom.sf(k, requests, ambiguous)
                      <= TAIL_SHARE * stats.binom.sf(0, requests, ambiguous)), requests)
        depth = min(depth, STRATUM_FAULTS_MAX)
    tail = float(stats.binom.sf(depth, requests, ambiguous))
    means = {"ambiguous": requests * ambiguous, "unprovable": requests * ambiguous * (1 - reconciled)}
    telemetry = workload.telemetry or {}
    plan = _Plan(unit="tasks", period=telemetry.get("tasks_per_month", PERIOD_DEFAULT), means=means, labels=[],
                 weights=[], exact={}, samplers={}, faults=[], tail=tail)
    events = _EffectsEvents(family, workload, names)
    for k in range(depth + 1):
        for u in range(k + 1):
            weight = float(stats.binom.pmf(k, requests, ambiguous) * stats.binom.pmf(u, k, 1 - reconciled))
            if weight <= 0:
                continue  # a share of 0 or 1 rules the stratum out
            index = len(plan.labels)
            plan.labels.append({"ambiguous": k, "unprovable": u})
            plan.weights.append(weight)
            plan.faults.append(k + u)
            if k == 0:
                plan.exact[index] = ()
            else:
                plan.samplers[index] = events.sampler(k, u, committed, lost)
    if tail > 0:
        plan.notes.append(f"tasks with more than {depth} ambiguous requests (probability {tail:.3g}) are not "
                          "sampled: their probability is added to the runs' upper bound")
    return plan


class _EffectsEvents:
    """The effects family's fault events for the per-request outcomes, read once through ``parse_event``."""

    def __init__(self, family: Family, workload: Workload, names: list[str]):
        self.names = names
        self.events = {(fault, name, point): family.parse_event(workload.base, f"{fault} {name} {point}")
                       for name in names for fault, point in (("terminate", "after_dispatch"),
                                                              ("lose_request", "after_dispatch"),
                                                              ("lose_response", "after_commit"),
                                                              ("unprovable", "reconcile"))}

    def sampler(self, k: int, u: int, committed: float, lost: float) -> Callable[[int], tuple[Any, ...]]:
        def sample(seed: int) -> tuple[Any, ...]:
            rng = random.Random(seed)
            chosen = sorted(rng.sample(range(len(self.names)), k))
            unprovable = set(rng.sample(chosen, u))
            order = []
            for index in chosen:
                name, did_commit, worker_lost = self.names[index], rng.random() < committed, rng.random() < lost
                if worker_lost:
                    order.append(self.events["terminate", name, "after_dispatch"])
                if not did_commit:
                    order.append(self.events["lose_request", name, "after_dispatch"])
                elif not worker_lost:
                    order.append(self.events["lose_response", name, "after_commit"])
                if index in unprovable:
                    order.append(self.events["unprovable", name, "reconcile"])
            return tuple(order)

        return sample


def strata_plan(family: Family, workload: Workload) -> _Plan:
    """The strata of a workload with ``[telemetry]`` (refused, one line, without one)."""
    if workload.telemetry is None:
        raise InputError(f"workload {workload.name!r} has no [telemetry] table: give the rates measured in "
                         "production (docs/incidents.md)")
    model = TELEMETRY_MODELS.get(family.name)
    if model is None:
        raise InputError(f"the {family.name} family has no telemetry model (docs/incidents.md)")
    return model(family, workload)


#: How each family's telemetry becomes strata, by family name (the families offer no hook for it yet).
TELEMETRY_MODELS: dict[str, Callable[[Family, Workload], _Plan]] = {"workspace": _workspace_plan,
                                                                   "effects": _effects_plan}


# -- sampling and estimation ----------------------------------------------------------------------------

def _allocation(plan: _Plan, seeds: int) -> dict[int, int]:
    """Runs per sampled stratum: proportional to the square root of its probability (rare strata get more
    runs than their share, the common ones enough), at least ``STRATUM_RUNS_MIN``; none when it has none."""
    roots = {s: math.sqrt(plan.weights[s]) for s in plan.samplers}
    total = sum(roots.values())
    if total <= 0:
        return {s: 0 for s in plan.samplers}
    return {s: max(STRATUM_RUNS_MIN, round(seeds * root / total)) if root > 0 else 0 for s, root in roots.items()}


def draw_orders(plan: _Plan, seeds: int, seed_start: int) -> tuple[dict[int, list[tuple[Any, ...]]], dict[int, int]]:
    """The orders of each sampled stratum and the generator calls it took (stratum ``s``, attempt ``j``: seed
    ``seed_start + s * STRATUM_SEED_STRIDE + j``)."""
    orders: dict[int, list[tuple[Any, ...]]] = {}
    attempts: dict[int, int] = {}
    for stratum, wanted in _allocation(plan, seeds).items():
        sampler, tried = plan.samplers[stratum], 0
        kept: list[tuple[Any, ...]] = []
        limit = wanted * ATTEMPTS_PER_FAULT * max(1, plan.faults[stratum])
        while len(kept) < wanted and tried < limit:
            order = sampler(seed_start + stratum * STRATUM_SEED_STRIDE + tried)
            tried += 1
            if order is not None:
                kept.append(order)
        orders[stratum], attempts[stratum] = kept, tried
    return orders, attempts


@dataclass
class _Tally:
    """Per stratum and check: runs violating, violations, runs not evaluable."""

    runs: dict[tuple[int, str], int] = field(default_factory=Counter)
    violations: dict[tuple[int, str], int] = field(default_factory=Counter)
    not_evaluable: dict[str, int] = field(default_factory=Counter)


def _outcome(family: Family, scenario: Any, protocol: Protocol, order: tuple[Any, ...]) -> tuple[Counter, tuple]:
    replay = family.replay(scenario, protocol, order)
    report = family.check(replay.history)
    counts = Counter(v.invariant for v in (*report.safety_violations, *report.availability_findings))
    return counts, tuple(r.name for r in report.not_evaluable)


def _tally(family: Family, workload: Workload, protocol: Protocol, plan: _Plan,
           orders: dict[int, list[tuple[Any, ...]]]) -> _Tally:
    tally, memo = _Tally(), {}
    every = [(s, [order]) for s, order in plan.exact.items()] + list(orders.items())
    for stratum, stratum_orders in every:
        for order in stratum_orders:
            if order not in memo:
                memo[order] = _outcome(family, workload.base, protocol, order)
            counts, unjudged = memo[order]
            for name, number in counts.items():
                tally.runs[stratum, name] += 1
                tally.violations[stratum, name] += number
            for name in unjudged:
                tally.not_evaluable[name] += 1
    return tally


def _combine(plan: _Plan, tally: _Tally, orders: dict[int, list], check: str, measure: str,
             confidence: float) -> Estimate:
    """The weighted estimate of one check and measure over the strata, with its simultaneous interval."""
    counts = tally.runs if measure == "runs" else tally.violations
    sampled = [s for s in plan.samplers if orders.get(s)]
    missing = plan.tail + sum(plan.weights[s] for s in plan.samplers if not orders.get(s))
    weight_sampled = sum(plan.weights[s] for s in sampled)
    value = low = high = 0.0
    for stratum in plan.exact:
        value += plan.weights[stratum] * counts.get((stratum, check), 0)
    low = high = value
    for stratum in sampled:
        n, x, w = len(orders[stratum]), counts.get((stratum, check), 0), plan.weights[stratum]
        alpha = max(ALPHA_FLOOR, (1 - confidence) * w / weight_sampled) if weight_sampled else ALPHA_FLOOR
        bounds = clopper_pearson(x, n, alpha) if measure == "runs" else garwood(x, n, alpha)
        value, low, high = value + w * x / n, low + w * bounds[0], high + w * bounds[1]
    if measure == "runs":
        return Estimate(value * plan.period, low * plan.period, min(1.0, high + missing) * plan.period)
    return Estimate(value * plan.period, low * plan.period, None if missing > 0 else high * plan.period)


def incidents(family: Family, workload: Workload, protocols: Sequence[Protocol], period: float | None = None,
              seeds: int | None = None, seed_start: int = 0, confidence: float = CONFIDENCE) -> IncidentsResult:
    """Expected runs violating each check (and violations) per ``period`` plans or tasks (default: the
    telemetry's ``plans_per_month`` / ``tasks_per_month``, else 10,000), for each protocol, from ``seeds``
    sampled runs (default: the family's ``SEEDS_DEFAULT``)."""
    if seeds is None:
        seeds = SEEDS_DEFAULT.get(family.name, SEEDS_FALLBACK)
    if not 1 <= seeds <= SEEDS_MAX:
        raise InputError(f"seeds must be from 1 to {SEEDS_MAX:,}, not {seeds}")
    if period is not None and not 0 < period <= 1e12:
        raise InputError(f"the period must be from 1 to 1e12 runs, not {period}")
    plan = strata_plan(family, workload)
    if period is not None:
        plan.period = float(period)
    orders, attempts = draw_orders(plan, seeds, seed_start)
    strata = [Stratum(plan.labels[s], plan.weights[s], 1 if s in plan.exact else len(orders[s]), s in plan.exact,
                      attempts.get(s, 0)) for s in range(len(plan.labels))]
    notes = list(plan.notes) + [f"stratum {plan.labels[s]} could not be sampled in {attempts[s]} generator "
                                "calls: its probability is added to the runs' upper bound"
                                for s in plan.samplers if not orders[s]]
    result = IncidentsResult(workload=workload.name, family=family.name, unit=plan.unit, period=plan.period,
                             seeds=seeds, seed_start=seed_start, fault_means=plan.means, strata=strata,
                             tail_probability=plan.tail, notes=notes)
    checks = [(c.name, c.safety) for c in family.checks]
    for protocol in protocols:
        tally = _tally(family, workload, protocol, plan, orders)
        result.protocols[protocol.label] = {
            name: CheckIncidents(name, safety, _combine(plan, tally, orders, name, "runs", confidence),
                                 _combine(plan, tally, orders, name, "violations", confidence),
                                 tally.not_evaluable.get(name, 0))
            for name, safety in checks}
    return result
