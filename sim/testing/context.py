"""What every law of the suite shares: the family under test, its protocol, the orders drawn, the failure."""

from __future__ import annotations

from typing import Any, Sequence

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from sim.core.family import Family, Replay
from sim.core.history import History
from sim.core.knobs import Protocol
from sim.core.workload import Workload

#: Defaults of the suite: examples Hypothesis draws per law, the longest order drawn, the walk that finds
#: orders with equal state keys (its depth and the replays it may spend), continuations tried per pair.
EXAMPLES_DEFAULT = 60
ORDER_EVENTS_MAX = 16
WALK_DEPTH_DEFAULT = 4
ORDERS_KEPT_PER_KEY = 3
PAIRS_CHECKED_MAX = 400
FUTURE_EVENTS_MAX = 3
#: Steps the walk and the pairs may take: driving the machine one event, or one replay without it.
MACHINE_STEPS_MAX = 60_000
REPLAY_STEPS_MAX = 1_500


class LawBroken(AssertionError):
    """A family breaks one of the laws (the message names it, the protocol and the orders)."""

    def __init__(self, law: str, protocol: str, detail: str):
        self.law, self.protocol = law, protocol
        super().__init__(f"law {law!r} broken under {protocol}: {detail}")


class LawContext:
    """One (family, workload, protocol) under test, with the order strategy the laws draw from."""

    def __init__(self, family: Family, workload: Workload, protocol: Protocol, examples: int, walk_depth: int):
        self.family, self.workload, self.protocol = family, workload, protocol
        self.base = workload.base
        self.alphabet = list(family.alphabet(workload))
        self.examples, self.walk_depth = examples, walk_depth
        self.machine = family.machine(self.base, protocol)
        self.steps_max = REPLAY_STEPS_MAX if self.machine is None else MACHINE_STEPS_MAX
        self.settings = settings(max_examples=examples, deadline=None, derandomize=True, database=None,
                                 suppress_health_check=list(HealthCheck))

    def replay(self, events: Sequence[Any]) -> Replay:
        return self.family.replay(self.base, self.protocol, tuple(events))

    def key(self, replay: Replay) -> Any:
        """The state key exhaustive search merges on: the machine's, or the family's for a replay."""
        if self.machine is None:
            return self.family.state_key(replay)
        return self.machine.key(self.family.final_state(replay))

    def violated(self, replay: Replay, since: int = 0) -> set[str]:
        return self.violated_in(replay.history, since)

    def violated_in(self, history: History, since: int = 0) -> set[str]:
        return {v.invariant for v in self.family.check(history).safety_violations
                if v.event_index is None or v.event_index >= since}

    def judged_by_states(self) -> bool:
        """Whether every safety check has a state predicate (exhaustive search then judges states, not orders)."""
        safety = [spec for spec in self.family.checks if spec.safety]
        return bool(safety) and self.machine is not None and all(spec.state is not None for spec in safety)

    def broken(self, law: str, detail: str) -> LawBroken:
        return LawBroken(law, self.protocol.label, detail)

    def orders(self) -> st.SearchStrategy:
        """Orders the family's own generator draws, edited by inserting and deleting events."""
        family, workload, alphabet = self.family, self.workload, self.alphabet

        @st.composite
        def edited(draw):
            order = list(family.generate(workload, draw(st.integers(min_value=0, max_value=10_000))))
            for _ in range(draw(st.integers(min_value=0, max_value=4))):
                if order and draw(st.booleans()):
                    del order[draw(st.integers(min_value=0, max_value=len(order) - 1))]
                else:
                    order.insert(draw(st.integers(min_value=0, max_value=len(order))), draw(st.sampled_from(alphabet)))
            return order[:ORDER_EVENTS_MAX]

        return edited()


def _text(events: Sequence[Any]) -> str:
    return "[" + ", ".join(str(e) for e in events) + "]"

