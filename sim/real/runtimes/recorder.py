"""The record of one real run: every record the harness takes, and the external system's log, as one history.

The harness takes a ticket on the run's shared clock (:class:`~sim.real.external_store.Clock`) when it
receives a worker's record or records an actor's event itself; the external system takes one when it
records a commit.  The history is every record sorted by ticket, in the effects family's vocabulary, with
``time`` the event's position: a real run's wall clock is never recorded, so re-recording a cell gives the
same bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sim.core.history import History
from sim.real.external_system import Clock

#: Server log records that become history events, with their actor and new name.
SERVER_EVENTS = {"committed": ("git", "committed"), "deduplicated": ("git", "deduplicated"),
                 "rejected": ("git", "rejected"), "request_duplicated": ("network", "request_duplicated"),
                 "reply_lost": ("network", "response_lost"), "request_dropped": ("network", "request_lost"),
                 "foreign_created": ("git", "foreign_created")}
#: Fields of those records the history keeps (the model's fields; the log keeps the rest).
SERVER_FIELDS = {"committed": ("task", "transition", "logical", "generation", "request", "key", "fingerprint",
                               "effect", "number", "head", "effect_class", "compensation"),
                 "deduplicated": ("task", "transition", "logical", "generation", "request", "key", "fingerprint",
                                  "effect", "number", "head", "stored_fingerprint"),
                 "rejected": ("task", "transition", "logical", "generation", "request", "key", "fingerprint",
                              "effect", "number", "head", "stored_fingerprint", "reason"),
                 "request_duplicated": ("task", "transition", "request", "original"),
                 "reply_lost": ("task", "transition", "request", "worker", "reason", "effect"),
                 "request_dropped": ("task", "transition", "request"),
                 "foreign_created": ("task", "transition", "effect", "number", "head")}


class Recorder:
    """The harness's rows, each with its ticket; :meth:`history` merges them with the external system's log."""

    def __init__(self, clock_path: Path):
        self.clock = Clock(clock_path)
        self.rows: list[tuple[int, str, str, dict]] = []

    def record(self, actor: str, event: str, **fields: Any) -> None:
        """One event of ``actor``, now (absent fields are left out, never written as null)."""
        self.rows.append((self.clock.tick(), actor, event, {k: v for k, v in fields.items() if v is not None}))

    def history(self, log: list[dict]) -> History:
        """Every row and every log record that is a history event, in ticket order."""
        rows = list(self.rows)
        for line in log:
            mapped = SERVER_EVENTS.get(line["event"])
            if mapped is not None:
                actor, event = mapped
                fields = {k: line[k] for k in SERVER_FIELDS[line["event"]] if k in line}
                rows.append((line["seq"], actor, event, fields))
            elif line["event"] == "caller_killed":
                rows.append((line["seq"], line.get("worker") or "worker", "crashed", {}))
        rows.sort(key=lambda row: row[0])
        history = History()
        for position, (_, actor, event, fields) in enumerate(rows):
            history.append(position, actor, event, **fields)
        return history

    def close(self) -> None:
        self.clock.close()
