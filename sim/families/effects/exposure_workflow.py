"""The exposure arithmetic of a user's workflow, with the simulation's semantics (one exposure model).

The seed's worked example (:func:`sim.families.effects.exposure.analytic`) multiplies tasks by transitions
and applies three rates to every request alike.  A user's workflow is not alike: a read creates nothing and
is never ambiguous in the model's fault draws, an endpoint that cannot be queried (``reconcile_by =
"none"``) sends every ambiguous request to a human, an approval is a human's work that is not an exception.
:func:`workflow_analytic` counts what the simulation (:mod:`sim.families.effects.exposure_simulation`)
counts, the same way:

* ``requests``: each side-effecting transition's first request per task; reads are counted apart
  (``reads``), on both sides;
* ``ambiguous``, ``already_committed``: the rates applied to those requests;
* ``auto_reconciled`` / ``human_exceptions``: per transition -- a queryable endpoint's ambiguous requests are
  proved at the reconcile rate (the rest go to a human), an unqueryable one's all go to a human;
* ``approvals``: tasks x the transitions whose approval is due for the scenario's arguments.

Where the arithmetic still cannot follow the model, :func:`differences` says why, one line per reason.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Mapping

from sim.core.errors import InputError
from sim.families.effects.workflow import Workflow

#: The telemetry keys that set the exposure rates (``[telemetry]`` of a workload or a design), and the
#: exposure parameter each sets.
TELEMETRY_RATES = {"ambiguous_share": "ambiguous_rate", "committed_share": "committed_rate",
                   "reconciled_share": "reconcile_rate"}
TELEMETRY_TASKS = "tasks_per_month"


def decimal_number(value: Any, name: str) -> Decimal:
    """``value`` as an exact Decimal, finite and not negative (else one clear InputError)."""
    try:
        number = Decimal(str(value))
    except Exception:
        raise InputError(f"{name} must be a number, not {value!r}") from None
    if not number.is_finite() or number < 0:
        raise InputError(f"{name} must be a finite number >= 0, not {value!r}")
    return number


def decimal_rate(value: Any, name: str) -> Decimal:
    """A rate: a fraction from 0 to 1, exact."""
    rate = decimal_number(value, name)
    if rate > 1:
        raise InputError(f"{name} is a fraction between 0 and 1 (0.041 for 4.1%), not {rate}")
    return rate


def _transition_arguments(arguments: Mapping[str, Mapping[str, Any]] | None, transition) -> Mapping[str, Any]:
    return (arguments or {}).get(transition.logical, {})


def workflow_analytic(workflow: Workflow, tasks: Any, ambiguous_rate: Any, committed_rate: Any,
                      reconcile_rate: Any, arguments: Mapping[str, Mapping[str, Any]] | None = None
                      ) -> dict[str, Decimal | int]:
    """The exposure of ``workflow`` by exact arithmetic, counted as the simulation counts it.

    >>> from sim.families.effects.workflow_file import parse_tables
    >>> flow = parse_tables([{"name": "read", "class": "read"},
    ...                      {"name": "mail", "class": "irreversible", "keys": False, "reconcile_by": "none",
    ...                       "approval": False}], "f.toml:1")
    >>> a = workflow_analytic(flow, 1000, "0.1", "0.5", "0.9")
    >>> a["requests"], a["reads"], a["ambiguous"], a["human_exceptions"], a["approvals"]
    (Decimal('1000'), Decimal('1000'), Decimal('100.0'), Decimal('100.0'), Decimal('0'))
    """
    count = decimal_number(tasks, "tasks")
    ambiguous_share, committed_share, reconcile_share = (
        decimal_rate(ambiguous_rate, "ambiguous_rate"), decimal_rate(committed_rate, "committed_rate"),
        decimal_rate(reconcile_rate, "reconcile_rate"))
    side_effecting = workflow.side_effecting()
    requests = count * len(side_effecting)
    ambiguous = requests * ambiguous_share
    auto, human = Decimal(0), Decimal(0)
    for transition in side_effecting:
        share = count * ambiguous_share
        if transition.queried_by == "none":
            human += share
        else:
            auto += share * reconcile_share
            human += share * (1 - reconcile_share)
    approvals = sum(1 for t in workflow.transitions
                    if t.approval_needed(_transition_arguments(arguments, t)))
    return {
        "requests": requests,
        "reads": count * (len(workflow.transitions) - len(side_effecting)),
        "ambiguous": ambiguous,
        "already_committed": ambiguous * committed_share,
        "auto_reconciled": auto,
        "human_exceptions": human,
        "human_exceptions_rounded": int(human.to_integral_value(rounding=ROUND_HALF_UP)),
        "approvals": count * approvals,
    }


def differences(workflow: Workflow, arguments: Mapping[str, Mapping[str, Any]] | None = None) -> list[str]:
    """Why this workflow's arithmetic is not the worked example's, and where it still differs from the model."""
    out = []
    reads = [t.name for t in workflow.transitions if t.is_read]
    if reads:
        out.append(f"reads ({', '.join(reads)}) are counted apart from requests, in the arithmetic and the "
                   "simulation alike: a read creates nothing and no fault draw makes it ambiguous")
    unqueryable = [t.name for t in workflow.side_effecting() if t.queried_by == "none"]
    if unqueryable:
        out.append(f"{', '.join(unqueryable)} cannot be queried (reconcile_by = \"none\"): every ambiguous request "
                   "of it goes to a human, none is reconciled automatically")
    gated = [t.name for t in workflow.transitions if t.approval_needed(_transition_arguments(arguments, t))]
    if gated:
        out.append(f"approvals count the human approvals of {', '.join(gated)} (due for these arguments), "
                   "work that is not an exception")
    keyless = [t.name for t in workflow.side_effecting() if t.keys is False]
    idempotent = [t.name for t in workflow.side_effecting() if t.effect_class == "idempotent"]
    if keyless:
        takes = "takes" if len(keyless) == 1 else "take"
        out.append(f"{', '.join(keyless)} {takes} no key (keys = false): under any protocol a retry of an already "
                   "committed request is a duplicate, so the simulated duplicates there do not fall with keys")
    if idempotent:
        out.append(f"{', '.join(idempotent)} {_is(idempotent)} idempotent: a repeat creates nothing new, so their "
                   "already "
                   "committed requests are counted in already_committed but never duplicate in the simulation")
    out.append("the simulation draws ambiguous requests at these rates (with worker losses, lost responses and "
               "unprovable outcomes among them) and network duplicates only at a duplicate rate (none unless one "
               "is given): a transition the sweep shows duplicating under its duplicate fault can read 0 "
               "duplicate_effects in this table; the sweep's counts and blast radius say how often it does")
    out.append("human_exceptions and auto_reconciled assume the protocol reconciles (reconcile=on, "
               "on_timeout=unknown), as the worked example does; under a protocol without reconciliation the "
               "simulation sends no one to a human and retries blindly instead")
    return out


def telemetry_rates(telemetry: Mapping[str, float] | None) -> dict[str, str]:
    """The exposure rates a ``[telemetry]`` table sets (only those it gives), as exact decimal text."""
    return {rate: repr(float(telemetry[key])) for key, rate in TELEMETRY_RATES.items()
            if telemetry and key in telemetry}


def telemetry_tasks(telemetry: Mapping[str, float] | None) -> int | None:
    """Tasks per period from ``[telemetry]`` (None: it gives none)."""
    if not telemetry or TELEMETRY_TASKS not in telemetry:
        return None
    return int(Decimal(str(telemetry[TELEMETRY_TASKS])).to_integral_value(rounding=ROUND_HALF_UP))


def outside_reasons(workflow: Workflow, quantity: str, check: str, above: bool) -> list[str]:
    """Why a simulated figure of ``check`` can miss the arithmetic's ``quantity`` for this workflow (``above``:
    the arithmetic lies above the interval).  Reasons of the workflow's semantics first, then of the count."""
    out = []
    side_effecting = workflow.side_effecting()
    idempotent = [t.name for t in side_effecting if t.effect_class == "idempotent"]
    reads = [t.name for t in workflow.transitions if t.is_read]
    if quantity == "already_committed" and above and idempotent:
        out.append(f"{', '.join(idempotent)} {_is(idempotent)} idempotent: a repeat of a committed request "
                   "creates nothing, so "
                   f"{check} finds no duplicate there while the arithmetic counts their committed requests")
    if quantity == "ambiguous" and above and reads:
        out.append(f"a timeout of a read ({', '.join(reads)}) is not judged by {check}, and the arithmetic "
                   "counts no read either, but a task that stops early sends fewer requests")
    if not above:
        out.append(f"{check} counts every violation it finds: a request ambiguous again after a retry or a "
                   "human's decision, or delivered twice, counts more than once, while the arithmetic counts "
                   "each logical request once")
    else:
        out.append("a task that aborts or stops early sends fewer requests than the arithmetic's tasks x "
                   "transitions")
    out.append("the interval is a 95% simultaneous interval of a sample: a figure outside it by chance is "
               "expected in about 1 of 20 comparisons; more --seeds narrow it")
    return out


def _is(names: list[str]) -> str:
    return "is" if len(names) == 1 else "are"
