"""Proof before "fix": the advisor calls a candidate a fix only when exhaustive search proves it.

A candidate the seeds found clean may still break on an order no seed drew
(a human edit of another hunk, then a failing test restoring a checkpoint
over it).  So each candidate clean on the sample is searched exhaustively,
breadth first, for the invariant it must remove, within the design's bound
(``max_events``: the review's map bound, else :data:`ADVISOR_PROOF_DEPTH`,
never more than the workload's own order length) and a state budget
(:data:`ADVISOR_PROOF_STATES`, the same on every machine):

* ``proved``: every order of at most ``within_events`` events is clean (the
  bound, or every length when the search exhausted the states);
* ``disproved``: an order of ``shortest_events`` events violates it -- the
  candidate is no fix, whatever the seeds said;
* ``elsewhere``: no order of at most ``within_events`` events shows the
  finding asked about, but another finding of the same invariant remains
  (``remains``: its name, shortest length and order) -- the change removes
  that finding, not the invariant, and is never called proved;
* ``unproved``: the state budget or the run's ``--budget`` stopped the
  search first; orders of at most ``within_events`` events (the depths it
  finished) are clean, the rest is sampling ("no violation in N seeds").
"""

from __future__ import annotations

from typing import Any

from sim.core.family import Family
from sim.core.findings import invariant_of
from sim.core.knobs import Protocol
from sim.core.machine import Machine
from sim.core.workload import Workload
from sim.search.budget import NO_DEADLINE, Deadline
from sim.search.kept import Kept

#: The exhaustive bound of a proof when the design names none (events), and the distinct states one proof
#: may visit (a proof that reaches it is ``unproved``): for a family with a state machine judged by state
#: predicates (the workspace family: about 10 s on one core); for a machine that judges each state by the run
#: that follows it (the effects family, about 1,500 states a second: about 1.5 s, every order of one fault and
#: some of two -- the advisor proves each candidate it verifies, and a fuzz run of effects-saga verifies
#: dozens); and for a family whose every successor is a replay (a few seconds at about 150 states a second).
ADVISOR_PROOF_DEPTH = 6
ADVISOR_PROOF_STATES = 250_000
ADVISOR_PROOF_STATES_JUDGED = 2_000
ADVISOR_PROOF_STATES_REPLAYED = 500


def proof_states(family: Family, workload: Workload, protocol: Protocol) -> int:
    """The state budget of one proof under ``protocol``: larger where states are stepped, not replayed."""
    machine = family.machine(workload.base, protocol)
    if machine is None:
        return ADVISOR_PROOF_STATES_REPLAYED
    judged = type(machine).judge is not Machine.judge
    return ADVISOR_PROOF_STATES_JUDGED if judged else ADVISOR_PROOF_STATES


#: Searches kept for proofs of a machine that judges its states (most recent last).
SHARED_SEARCHES_KEPT = 32
_SHARED = Kept(SHARED_SEARCHES_KEPT)


def shared_search(family: Family, workload: Workload, protocol: Protocol, max_events: int, max_states: int,
                  deadline: Deadline) -> Any:
    """Where a machine judges each state by the run after it (a state costs a run), one search by finding per
    (family, workload, protocol, bound, states) in this process, kept for every proof asked of it -- each
    finding's and invariant's, the advisor's and the review's search of each protocol -- instead of one search
    per question.  What a question reads of it is what a search stopping at its target would answer: breadth
    first, its target's shortest orders are found at the same depth, and the limit cuts the same layer.  None
    (search it alone) for a machine judged by predicates or under a deadline (a budget cuts at a time, not a
    point)."""
    from sim.core.machine import Machine
    from sim.search.exhaustive import ExploreOptions, explore

    if deadline.end is not None:
        return None
    machine = family.machine(workload.base, protocol)
    if machine is None or type(machine).judge is Machine.judge:
        return None
    key = (id(family), id(workload), protocol.label, max_events, max_states)
    options = ExploreOptions(max_events=max_events, max_states=max_states, findings=True)
    return _SHARED.get(key, (family, workload), lambda: explore(family, workload, protocol, options))


def by_invariant(result: Any) -> Any:
    """A search by finding read by invariant: each invariant's shortest length is its findings' least, with their
    orders of that length."""
    import copy

    out = copy.copy(result)
    out.shortest, out.minimal_orders = {}, {}
    for name in sorted(result.minimal_orders):
        whole, depth = invariant_of(name), result.shortest[name]
        if whole not in out.shortest or depth < out.shortest[whole]:
            out.shortest[whole], out.minimal_orders[whole] = depth, []
        if depth == out.shortest[whole]:
            known = out.minimal_orders[whole]
            out.minimal_orders[whole] = known + [o for o in result.minimal_orders[name] if o not in known]
    return out


def proof_bound(workload: Workload, depth: int | None) -> int:
    """The events a proof searches: ``depth`` (the design's bound) or the default, within the workload's
    own order length."""
    return max(1, min(depth or ADVISOR_PROOF_DEPTH, workload.max_events))


def prove(family: Family, workload: Workload, protocol: Protocol, invariant: str, max_events: int,
          deadline: Deadline = NO_DEADLINE, max_states: int | None = None) -> dict[str, Any]:
    """Search every order of at most ``max_events`` events under ``protocol`` for ``invariant`` (the module
    doc says what each status means; ``max_states``: default :func:`proof_states`); JSON values only."""
    from sim.search.exhaustive import ExploreOptions, explore
    from sim.search.oracle import evaluate

    if max_states is None:
        max_states = proof_states(family, workload, protocol)
    target, whole = invariant, invariant_of(invariant)  # an invariant, or one finding of it
    shared = shared_search(family, workload, protocol, max_events, max_states, deadline)
    if shared is not None:
        result = shared if target != whole else by_invariant(shared)
    else:
        result = explore(family, workload, protocol, ExploreOptions(
            max_events=max_events, max_states=max_states, only=target, deadline=deadline, findings=target != whole))
    proof: dict[str, Any] = {"max_events": max_events, "distinct_states": result.distinct_states}
    orders = result.minimal_orders.get(target)
    if orders is None and target != whole and whole in result.minimal_orders:
        # searched by the machine's state predicates, which say which invariant, not where: replay its orders
        orders = [o for o in result.minimal_orders[whole]
                  if target in evaluate(family, workload.base, protocol, o, (whole,)).findings] or None
        if orders is None:
            depth = result.shortest[whole]
            proof.update(status="unproved", within_events=depth - 1,
                         stopped=f"a violation of {whole} elsewhere at {depth} events, which hides this finding "
                                 "from a search of the states")
            return proof
    if orders:
        depth = len(orders[0])
        proof.update(status="disproved", shortest_events=depth, order=[str(event) for event in orders[0]],
                     within_events=depth - 1)
    elif target != whole and _elsewhere(result, target, whole):
        proof.update(_elsewhere(result, target, whole), within_events=_cleared(result, max_events))
    elif result.complete:
        proof.update(status="proved", within_events=max_events, exhausted=result.exhausted)
    else:
        # every depth before the one the limit cut short was searched whole
        proof.update(status="unproved", within_events=max(0, len(result.states_per_depth) - 2),
                     stopped=_limit_words(result.reason, max_states))
    return proof


def _elsewhere(result: Any, target: str, whole: str) -> dict[str, Any]:
    """Where a search for one finding found none but another finding of the same invariant: status
    ``elsewhere`` and that finding's shortest order (the change removes this finding, not the invariant: a proof
    covers the invariant at every where, or says exactly what it covers).  ``{}`` when there is none."""
    others = sorted((result.shortest[name], name) for name in result.minimal_orders
                    if name != target and invariant_of(name) == whole and result.minimal_orders[name])
    if not others:
        return {}
    depth, name = others[0]
    order = result.minimal_orders[name][0]
    return {"status": "elsewhere", "remains": {"finding": name, "shortest_events": depth,
                                               "order": [str(event) for event in order]}}


def _cleared(result: Any, max_events: int) -> int:
    """The events within which a search cleared its target: its bound when complete, else the depths done."""
    return max_events if result.complete else max(0, len(result.states_per_depth) - 2)


def _limit_words(reason: str, max_states: int) -> str:
    return {"state_limit": f"the advisor's proof limit of {max_states:,} states",
            "memory_limit": "the memory limit"}.get(reason, reason)


def dominated(entry: dict[str, Any], others: list[dict[str, Any]]) -> bool:
    """True when another candidate is at least as good as ``entry`` on every count a room weighs -- runs
    violating any safety invariant, availability findings per run, work done safely -- and better on one."""
    mine = _counts(entry)
    for other in others:
        if other is entry:
            continue
        theirs = _counts(other)
        if all(t <= m for t, m in zip(theirs, mine)) and theirs != mine:
            return True
    return False


def _counts(entry: dict[str, Any]) -> tuple[float, float, float]:
    full = entry.get("_full", entry)
    share = full.get("safe_progress_share")
    if share is None:
        share = full.get("progress_share")
    violating = entry.get("violating_runs", entry.get("sample_violating_runs")) or 0
    runs = entry.get("verified_seeds") or entry.get("sample_seeds") or 1
    return (violating / max(1, runs), float(full["availability_per_run"]), -(share or 0.0))
