"""Property search with Hypothesis: event orders drawn as lists over the
workload's alphabet, with Hypothesis's own shrinker.

Where the seed sweep draws interference into the fault-free order, this
draws any list of events; events that cannot happen are skipped by the
replay, so every list is a valid run.  Hypothesis shrinks the list (shorter,
then earlier alphabet entries); the result is then handed to
:func:`sim.search.shrink.shrink` for the same 1-minimal, shortest-proved
contract as the sweep's counterexamples.  Settings are derandomized and use
no example database, so the same call gives the same answer.

>>> from sim.search.workload import load_workload
>>> found = hypothesis_search(load_workload("tiny"), "none", "lost_update")  # doctest: +SKIP
>>> [str(e) for e in found.events]                                          # doctest: +SKIP
['plan', 'dispatch s1', 'human_edit app.py', 'deliver s1']
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from sim.checks.base import run_checks
from sim.checks.workspace import WORKSPACE_CHECKS
from sim.protocol import Protocol, parse_protocol
from sim.replay import replay
from sim.scenario import Action
from sim.search.exhaustive import alphabet
from sim.search.runs import valid_order
from sim.search.shrink import ShrinkResult, shrink
from sim.search.workload import Workload

#: Examples Hypothesis may try before giving up (a limit, like every search here).
HYPOTHESIS_MAX_EXAMPLES = 2_000


@dataclass
class PropertyResult:
    invariant: str
    hypothesis_events: tuple[Action, ...]  # as Hypothesis shrank it, skipped events dropped
    shrunk: ShrinkResult

    @property
    def events(self) -> tuple[Action, ...]:
        return self.shrunk.events


def hypothesis_search(workload: Workload, protocol: Protocol | str, invariant: str,
                      max_examples: int = HYPOTHESIS_MAX_EXAMPLES) -> PropertyResult | None:
    """Find an order violating ``invariant`` under ``protocol``, or None within the limit."""
    if not isinstance(protocol, Protocol):
        protocol = parse_protocol(protocol)
    checks = [c for c in WORKSPACE_CHECKS if c.name == invariant]
    if not checks:
        from sim.errors import InputError

        raise InputError(f"unknown invariant {invariant!r}; invariants: {', '.join(c.name for c in WORKSPACE_CHECKS)}")

    def violates(events: list[Action]) -> bool:
        history, _ = replay(workload.base, protocol, events)
        return bool(run_checks(checks, history).safety_violations)

    strategy = st.lists(st.sampled_from(alphabet(workload)), min_size=1, max_size=workload.max_events)
    config = settings(max_examples=max_examples, derandomize=True, database=None, deadline=None,
                      phases=(Phase.generate, Phase.shrink), suppress_health_check=list(HealthCheck))
    try:
        events = find(strategy, violates, settings=config)
    except NoSuchExample:
        return None
    history, _ = replay(workload.base, protocol, events)
    order = valid_order(history, tuple(events))
    return PropertyResult(invariant, order, shrink(workload, protocol, order, invariant))
