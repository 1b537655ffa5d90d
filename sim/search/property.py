"""Property search with Hypothesis: event orders drawn as lists over the
family's alphabet for a workload, with Hypothesis's own shrinker.

Where the seed sweep draws interference into the fault-free order, this
draws any list of events; events that cannot happen have no effect, so
every list is a valid run.  Hypothesis shrinks the list (shorter, then
earlier alphabet entries); the result is then handed to
:func:`sim.search.shrink.shrink` for the same 1-minimal, shortest-proved
contract as the sweep's counterexamples.  Settings are derandomized and use
no example database, so the same call gives the same answer.

>>> from sim.registry import FAMILIES                                     # doctest: +SKIP
>>> workload = FAMILIES.load_workload("tiny")                              # doctest: +SKIP
>>> found = hypothesis_search(FAMILIES.get("workspace"), workload, "none", "lost_update")  # doctest: +SKIP
>>> [str(e) for e in found.events]                                         # doctest: +SKIP
['plan', 'dispatch s1', 'human_edit app.py', 'deliver s1']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from sim.core.errors import InputError
from sim.core.family import Family
from sim.core.knobs import Protocol
from sim.core.workload import Workload
from sim.search.oracle import evaluate
from sim.search.shrink import ShrinkResult, shrink

#: Examples Hypothesis may try before giving up (a limit, like every search here).
HYPOTHESIS_MAX_EXAMPLES = 2_000


@dataclass
class PropertyResult:
    invariant: str
    hypothesis_events: tuple[Any, ...]  # as Hypothesis shrank it, skipped events dropped
    shrunk: ShrinkResult

    @property
    def events(self) -> tuple[Any, ...]:
        return self.shrunk.events


def hypothesis_search(family: Family, workload: Workload, protocol: Protocol | str, invariant: str,
                      max_examples: int = HYPOTHESIS_MAX_EXAMPLES) -> PropertyResult | None:
    """Find an order violating ``invariant`` under ``protocol``, or None within the limit."""
    protocol = family.parse_protocol(protocol)
    if invariant not in family.safety_invariants:
        raise InputError(f"unknown invariant {invariant!r}; invariants: {', '.join(family.safety_invariants)}")

    def violates(events: list[Any]) -> bool:
        return bool(evaluate(family, workload.base, protocol, events, (invariant,)).violated)

    strategy = st.lists(st.sampled_from(family.alphabet(workload)), min_size=1, max_size=workload.max_events)
    config = settings(max_examples=max_examples, derandomize=True, database=None, deadline=None,
                      phases=(Phase.generate, Phase.shrink), suppress_health_check=list(HealthCheck))
    try:
        events = find(strategy, violates, settings=config)
    except NoSuchExample:
        return None
    order = family.replay(workload.base, protocol, events).valid_order()
    return PropertyResult(invariant, order, shrink(family, workload, protocol, order, invariant))
