"""The laws every protocol family keeps, as a suite a family's author runs on their own family.

    >>> from sim.testing import check_family                        # doctest: +SKIP
    >>> check_family(MY_FAMILY, my_workload)                          # doctest: +SKIP

Each law is what a part of fencesim relies on; a family that breaks one gets
wrong answers from that part, silently.  :func:`check_family` runs them all
(Hypothesis draws and shrinks the orders of most; the three exhaustive ones
visit every state within a depth) and raises :class:`LawBroken`
naming the law, the protocol and the smallest orders that show it:

1. ``deterministic`` -- an order replays to the same history bytes, skipped
   events and end every time (sweeps, shrinking and exported counterexamples
   rely on it);
2. ``deletion`` -- deleting any event of a valid order still gives a run
   (shrinking deletes events);
3. ``machine_replay`` -- for a family with a :meth:`~sim.core.family.Family.machine`:
   driving the machine directly gives the replay's history bytes and
   skipped events, and continuing from the state a prefix ended in gives the
   rest of the run (exhaustive search drives the machine, fuzzing replays);
4. ``enabled_exact`` -- for a family with a machine: the machine's guard lets
   an event through exactly when the replay takes it (an event the guard
   refuses is never tried by exhaustive search, so a wrong refusal hides
   behaviour), and its ``enabled()`` and ``successors()`` agree with its
   guard and ``advance()``;
5. ``footprint`` -- for a family that declares footprints: the machine's
   parts determine its key, an event changes only the parts it declares
   written, and two states equal in every part it declares read answer it
   alike -- on every state within ``footprint_depth`` events (exhaustive
   search derives independence from the footprints);
6. ``independent_commute`` -- two events independent by their footprints
   neither enable nor disable each other and reach the same state key and
   violations in either order, on every state within the depth (exhaustive
   search tries one order);
7. ``state_invariants`` -- for safety checks with a state predicate (or a
   predicate on steps, ``transition``): the predicate and the history check
   agree along every order within the depth (exhaustive search judges states
   and steps by the predicates);
8. ``equal_keys_equal_futures`` -- orders with the same state key (found by
   a bounded walk that keeps several orders per key) answer every next
   event alike -- the same skip, records, verdicts and new violations --
   and reach equal keys again, followed for a few events (exhaustive search
   merges them: an unsound key makes "proved absent" wrong);
9. ``symmetric`` -- for a workload whose family declares interchangeable
   parts (:meth:`~sim.core.family.Model.symmetry`): renaming the parts in an
   order skips the same events, violates the same invariants and ends in the
   same orbit (the same canonical key); and orders with one canonical key
   answer every next event alike up to some renaming -- the same skip and new
   violations, children again in one orbit -- followed for a few events
   (``explore --symmetry`` keeps one state per orbit);
10. ``parse_event`` -- ``parse_event(str(e)) == e`` for every event
   (``--resume`` and baselines read orders back from text).
"""

from __future__ import annotations

from typing import Callable, Sequence

from sim.core.family import Family
from sim.core.knobs import Protocol
from sim.core.workload import Workload
from sim.testing import reachable, sampled
from sim.testing.context import EXAMPLES_DEFAULT, WALK_DEPTH_DEFAULT, LawBroken, LawContext
from sim.testing.reachable import FOOTPRINT_DEPTH_DEFAULT

__all__ = ["LAWS", "LawBroken", "check_family", "default_protocols"]

LAWS = ("deterministic", "deletion", "machine_replay", "enabled_exact", "footprint", "independent_commute",
        "state_invariants", "equal_keys_equal_futures", "symmetric", "parse_event")


def check_family(family: Family, workload: Workload, protocols: Sequence[str | Protocol] | None = None,
                 laws: Sequence[str] = LAWS, examples: int = EXAMPLES_DEFAULT,
                 walk_depth: int = WALK_DEPTH_DEFAULT,
                 footprint_depth: int = FOOTPRINT_DEPTH_DEFAULT) -> dict[str, str]:
    """Check every law on ``workload`` under each protocol (default: :func:`default_protocols` -- every value of
    every knob one at a time, and the presets).

    Returns law -> ``"held"`` or ``"not applicable: why"``; raises :class:`LawBroken` on the first law
    broken.  Deterministic: Hypothesis is derandomized and the walks are breadth first.  ``footprint_depth`` is
    the depth to which ``footprint`` and ``independent_commute`` visit every state.
    """
    unknown = sorted(set(laws) - set(LAWS))
    if unknown:
        raise ValueError(f"unknown law(s) {', '.join(unknown)}; laws: {', '.join(LAWS)}")
    chosen = [family.parse_protocol(p) for p in (protocols or default_protocols(family))]
    has_machine = family.machine(workload.base, chosen[0]) is not None
    declares = family.knobs.events is not None
    graphs: dict[Protocol, reachable.Reachable] = {}  # the states within footprint_depth, per protocol
    outcome: dict[str, str] = {}
    for law in laws:
        if law in ("machine_replay", "enabled_exact") and not has_machine:
            outcome[law] = "not applicable: the family has no machine (every candidate is replayed)"
            continue
        if law == "machine_replay" and not family.machine(workload.base, chosen[0]).drives_replay:  # type: ignore[union-attr]
            outcome[law] = ("not applicable: the machine's events strike a timed run, so driving it one event a "
                            "time unit is not its replay (a differential test holds the two together)")
            continue
        if law == "symmetric" and family.symmetry(workload) is None:
            outcome[law] = "not applicable: the family declares no interchangeable parts in this workload"
            continue
        if law in ("footprint", "independent_commute") and not declares:
            outcome[law] = "not applicable: the family declares no footprints (no two of its events are independent)"
            continue
        if law == "state_invariants" and not any(spec.state or spec.transition for spec in family.checks
                                                 if spec.safety):
            outcome[law] = "not applicable: no safety check has a state predicate"
            continue
        for protocol in chosen:
            ctx = LawContext(family, workload, protocol, examples, walk_depth)
            if law in EXHAUSTIVE_LAWS:
                _exhaustive(law, ctx, graphs, footprint_depth)
            else:
                _LAW_FUNCTIONS[law](ctx)
        outcome[law] = "held"
    return outcome


def default_protocols(family: Family) -> list[Protocol]:
    """The protocols :func:`check_family` checks by default: the family's default protocol, every other value
    of every knob set alone on it (a numeric knob: its ladder), then the presets not already listed."""
    base = family.parse_protocol(family.default_protocol or family.presets[0])
    chosen = [base]
    for knob in family.knobs.knobs:
        for value in knob.candidates():
            if value != base.knobs[knob.name]:
                chosen.append(base.with_knobs(**{knob.name: value}))
    chosen += [family.parse_protocol(name) for name in family.presets]
    return [p for i, p in enumerate(chosen) if p not in chosen[:i]]


#: The laws that visit every state within ``footprint_depth`` (:mod:`sim.testing.reachable`).
EXHAUSTIVE_LAWS = ("footprint", "independent_commute", "state_invariants")


def _exhaustive(law: str, ctx: LawContext, graphs: dict[Protocol, reachable.Reachable], depth: int) -> None:
    if ctx.machine is None:
        raise ctx.broken(law, "the family declares footprints or state predicates but has no machine, so they cannot "
                         "be checked against its states: give it a machine, or declare none")
    graph = graphs.get(ctx.protocol)
    if graph is None:
        graph = graphs[ctx.protocol] = reachable.Reachable(ctx, depth)
    if law == "footprint":
        reachable.footprint_law(ctx, graph)
    elif law == "state_invariants":
        reachable.state_law(ctx, graph)
    else:
        reachable.commute_law(ctx, graph)


_LAW_FUNCTIONS: dict[str, Callable[[LawContext], None]] = {
    "deterministic": sampled._deterministic, "deletion": sampled._deletion, "machine_replay": sampled._machine_replay,
    "enabled_exact": sampled._enabled_exact, "equal_keys_equal_futures": sampled._equal_futures,
    "symmetric": sampled._symmetric, "parse_event": sampled._parse_event,
}
