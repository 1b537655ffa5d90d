"""Blast radius: what a run did to the world, in the customer's words, and who must act.

A counterexample names an order of events; a design review asks what the
customer sees afterwards -- the human edit that vanished, the step applied
twice, the pull request opened twice, the preview nobody deletes -- and who
cleans up.  A family turns a history into a ledger of such *entries*, read
from event fields only (like a check, so it works on a recorded history
too).  A sweep's ledgers aggregate into rates per 10,000 plans or tasks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from sim.core import stats
from sim.core.values import JsonObject

#: Runs the rates of a review are scaled to.
PER_RUNS = 10_000


@dataclass(frozen=True)
class Entry:
    """One thing the run did to the world, as data: the object, what happened to it, who must act and what
    they can do; ``what`` and ``who_acts`` are the two sentences a report prints, made from them."""

    kind: str  # e.g. "human_edit_overwritten", "step_applied_twice", "object_duplicated"
    object: str  # the thing, as its owner names it: "api/handlers.py#auth", "step s1", "email#2"
    happened: str  # "edited by human at event 2, overwritten by s1"
    who: str  # "the human who made the edit"
    can_do: str  # "redo or merge it"
    event_index: int | None = None

    @property
    def what(self) -> str:
        return f"{self.object} {self.happened}"

    @property
    def who_acts(self) -> str:
        return f"{self.who}: {self.can_do}"

    def to_json(self) -> JsonObject:
        out: JsonObject = {"kind": self.kind, "object": self.object, "happened": self.happened,
                               "who": self.who, "can_do": self.can_do, "what": self.what, "who_acts": self.who_acts}
        if self.event_index is not None:
            out["event_index"] = self.event_index
        return out


@dataclass
class LedgerTally:
    """Entries of many runs counted per kind, with an exact Poisson interval per ``PER_RUNS`` runs."""

    runs: int = 0
    counts: dict[str, int] = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        self.counts = dict(self.counts or {})

    def add(self, entries: Iterable[Entry]) -> None:
        self.runs += 1
        for entry in entries:
            self.counts[entry.kind] = self.counts.get(entry.kind, 0) + 1

    def to_json(self, per: int = PER_RUNS) -> JsonObject:
        return {"runs": self.runs, "per_runs": per,
                "kinds": {kind: {"count": count, "rate": stats.count(count, self.runs, per).to_json(3)}
                          for kind, count in sorted(self.counts.items())},
                "method": stats.METHODS["count"]}
