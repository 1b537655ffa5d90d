"""The network: it delivers the oldest copy of a step in flight, duplicates one, and carries answers back.

A delivery is two parts, as in a run: the network takes the oldest copy in
flight (:meth:`Network.take`) and the executor serves it; an answer reaches
the client (``ack``) or is lost (``lose_ack``).  ``settle`` delivers
everything in flight and every answer, round after round."""

from __future__ import annotations

from typing import cast

from sim.core.machine import Record
from sim.families.workspace.core import WorkspaceCore
from sim.families.workspace.scenario import Action
from sim.families.workspace.state import Message, State

#: Rounds of a ``settle`` event: each delivers every request and then every answer in flight at its start.
SETTLE_ROUNDS_MAX = 8


class Network(WorkspaceCore):
    """Deliveries, duplicates, answers and ``settle``."""

    @staticmethod
    def _oldest_request(state: State, step_id: str) -> int | None:
        for index, message in enumerate(state.requests):
            if message.step.step_id == step_id:
                return index
        return None

    def why_not_deliver(self, state: State, event: Action) -> str | None:
        if self._oldest_request(state, cast(str, event.step)) is None:
            return f"no copy of {event.step} in flight"
        return None

    def take(self, state: State, step_id: str) -> tuple[State, Message]:
        """The network takes the oldest copy of a step in flight (the guard saw one)."""
        index = self._oldest_request(state, step_id)
        assert index is not None  # the guard saw one
        message = state.requests[index]
        return state._replace(requests=state.requests[:index] + state.requests[index + 1:]), message

    def deliver(self, state: State, event: Action) -> tuple[State, list[Record]]:
        assert event.step is not None  # a delivery always names its step (the parser requires it)
        state, message = self.take(state, event.step)
        return self.serve(state, message)

    def why_not_duplicate(self, state: State, event: Action) -> str | None:
        if self._oldest_request(state, cast(str, event.step)) is None:
            return f"no copy of {event.step} in flight to duplicate"
        return None

    def duplicate(self, state: State, event: Action) -> tuple[State, list[Record]]:
        """The network sends the oldest copy in flight once more."""
        step_id = event.step
        assert step_id is not None  # a duplicate always names its step (the parser requires it)
        index = self._oldest_request(state, step_id)
        assert index is not None  # the guard saw one
        original = state.requests[index]
        copies, copy = self._next_copy(state, step_id)
        state = state._replace(requests=state.requests + (original._replace(origin="duplicate", copy=copy),),
                               copies=copies)
        return state, [("network", "duplicate", dict(step=event.step, copy=copy.value))]

    def why_not_answer(self, state: State, event: Action) -> str | None:
        for answer in state.answers:
            if answer.step_id == event.step:
                return None
        return f"no answer for {event.step} on its way back"

    def answer(self, state: State, event: Action) -> tuple[State, list[Record]]:
        """An answer reaches the client (ack) or is lost (lose_ack): either way it leaves the network."""
        answers, index = state.answers, 0
        while answers[index].step_id != event.step:  # a plain loop, cheaper than a generator: a settle takes the first
            index += 1
        answer = answers[index]
        state = state._replace(answers=answers[:index] + answers[index + 1:])
        records: list[Record] = [("network", event.kind, dict(step=event.step, verdict=answer.verdict))]
        if self.knobs.acks_react and event.kind == "ack":  # the client learns the verdict
            state = self.answered(state, answer, records)
        return state, records

    def why_not_settle(self, state: State, event: Action) -> str | None:
        return None if state.requests or state.answers else "nothing in flight to settle"

    def settle(self, state: State, event: Action) -> tuple[State, list[Record]]:
        """The network settles: every request in flight is delivered (oldest first), then every answer reaches
        the client, and again for what the client sent in return, at most SETTLE_ROUNDS_MAX rounds."""
        records: list[Record] = [("network", "settle", dict(requests=len(state.requests),
                                                            answers=len(state.answers)))]
        for _ in range(SETTLE_ROUNDS_MAX):
            if not state.requests and not state.answers:
                break
            for _ in range(len(state.requests)):
                message = state.requests[0]
                state, served = self.serve(state._replace(requests=state.requests[1:]), message)
                records.extend(served)
            for _ in range(len(state.answers)):
                state, answered = self.answer(state, Action("ack", state.answers[0].step_id))
                records.extend(answered)
        return state, records
