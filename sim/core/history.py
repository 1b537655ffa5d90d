"""Append-only, typed run histories and their JSON-lines form.

The history is the only output of a run: checks read it, reports count it,
exported counterexamples replay to it.  Each event has four fixed fields --
``index``, ``time``, ``actor``, ``event`` -- and any number of named fields
(``step``, ``verdict``, ``stamped_base_rev``...).  Fields that do not apply
are absent, never ``null``: a check that needs a missing field reports
``not_evaluable`` instead of passing.

Serialisation is canonical (fixed fields first, the rest sorted, no spaces),
so the same run gives the same bytes in every process.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Iterator

from sim.core.errors import HistoryError

FIXED_FIELDS = ("index", "time", "actor", "event")


class Event:
    """One event of a history.  Read fields with ``event.get(name)`` or ``event[name]``."""

    __slots__ = ("index", "time", "actor", "event", "fields")

    def __init__(self, index: int, time: float, actor: str, event: str, fields: dict[str, Any]):
        self.index = index
        self.time = time
        self.actor = actor
        self.event = event
        self.fields = fields

    def get(self, name: str, default: Any = None) -> Any:
        if name in FIXED_FIELDS:
            return getattr(self, name)
        return self.fields.get(name, default)

    def __getitem__(self, name: str) -> Any:
        if name in FIXED_FIELDS:
            return getattr(self, name)
        return self.fields[name]

    def __contains__(self, name: str) -> bool:
        return name in FIXED_FIELDS or name in self.fields

    def __reduce__(self):
        return (Event, (self.index, self.time, self.actor, self.event, self.fields))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "index": self.index,
            "time": self.time,
            "actor": self.actor,
            "event": self.event,
        }
        for key in sorted(self.fields):
            out[key] = self.fields[key]
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"), ensure_ascii=False)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Event) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return f"Event({self.to_json()})"


def plain_time(time: float) -> float | int:
    """Write integral times as integers so histories read naturally."""
    return int(time) if float(time).is_integer() else time


class History:
    """An append-only list of events.

    >>> h = History()
    >>> h.append(0, "client", "dispatch", step="s1", verdict=None).to_json()
    '{"index":0,"time":0,"actor":"client","event":"dispatch","step":"s1"}'
    """

    def __init__(self, events: Iterable[Event] = ()):
        self._events: list[Event] = list(events)

    def append(self, time: float, actor: str, event: str, **fields: Any) -> Event:
        return self.add(time, actor, event, fields)

    def add(self, time: float, actor: str, event: str, fields: dict[str, Any]) -> Event:
        """``append`` for a fields dict the history may keep (the model's records: no copy when no field is None)."""
        if None in fields.values():
            fields = {k: v for k, v in fields.items() if v is not None}
        record = Event(len(self._events), time if type(time) is int else plain_time(time), actor, event, fields)
        self._events.append(record)
        return record

    def __iter__(self) -> Iterator[Event]:
        return iter(self._events)

    def __len__(self) -> int:
        return len(self._events)

    def __getitem__(self, index: int) -> Event:
        return self._events[index]

    @property
    def events(self) -> list[Event]:
        return list(self._events)

    def to_dicts(self) -> list[dict[str, Any]]:
        return [e.to_dict() for e in self._events]

    def to_jsonl(self) -> str:
        return "".join(e.to_json() + "\n" for e in self._events)

    @classmethod
    def from_dicts(cls, rows: Iterable[Any], where: str = "history", lines: list[int] | None = None) -> "History":
        """Build a history from plain objects; every invalid row is reported (up to a limit) in one error."""
        events, problems = [], []
        for position, row in enumerate(rows):
            line = lines[position] if lines else position + 1
            try:
                events.append(_event(row, position))
            except ValueError as error:
                problems.append((line, str(error)))
        if problems:
            raise invalid_lines(where, problems)
        return cls(events)

    @classmethod
    def from_jsonl(cls, text: str, where: str = "history") -> "History":
        rows, lines, problems = [], [], []
        for line_number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
                lines.append(line_number)
            except json.JSONDecodeError as error:
                problems.append((line_number, f"not JSON ({error.msg})"))
            except RecursionError:
                problems.append((line_number, "JSON nested too deeply"))
        if len(rows) > MAX_HISTORY_EVENTS:
            raise HistoryError(f"{len(rows)} events; the limit of a history is {MAX_HISTORY_EVENTS}", where)
        try:
            history = cls.from_dicts(rows, where, lines)
        except HistoryError as error:
            if not problems:
                raise
            problems += error.problems
            history = None
        if problems:
            raise invalid_lines(where, sorted(problems))
        return history

    @classmethod
    def read(cls, path: str | Path) -> "History":
        from sim.core.files import read_text
        from sim.core.errors import ScenarioError

        try:
            text = read_text(path, "history file (JSON lines)")
        except ScenarioError as error:
            raise HistoryError(error.message, error.where) from None
        return cls.from_jsonl(text, str(path))


#: Limits on a history a user gives: events, and invalid lines listed in one error.
MAX_HISTORY_EVENTS = 10_000_000
MAX_PROBLEMS_SHOWN = 20
TIME_LIMIT = 1e15


def _event(row: Any, position: int) -> Event:
    if not isinstance(row, dict):
        raise ValueError("not a JSON object")
    missing = [f for f in ("actor", "event") if f not in row]
    if missing:
        raise ValueError(f"lacks {', '.join(missing)}; every event needs at least 'actor' and 'event'")
    actor, name = row["actor"], row["event"]
    if not isinstance(actor, str) or not isinstance(name, str):
        raise ValueError("'actor' and 'event' must be strings")
    index, time = row.get("index", position), row.get("time", position)
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < 2 ** 63:
        raise ValueError(f"'index' must be a whole number from 0, not {index!r}")
    if not isinstance(time, (int, float)) or isinstance(time, bool) or not -TIME_LIMIT < time < TIME_LIMIT:
        raise ValueError(f"'time' must be a finite number of seconds, not {time!r}")
    fields = {k: v for k, v in row.items() if k not in FIXED_FIELDS and v is not None}
    return Event(index, time, actor, name, fields)


def invalid_lines(where: str, problems: list[tuple[int, str]]) -> HistoryError:
    """One error naming every invalid line (the first MAX_PROBLEMS_SHOWN of them)."""
    if len(problems) == 1:
        (line, text), = problems
        error = HistoryError(text, f"{where}:{line}")
        error.problems = problems
        return error
    shown = "; ".join(f"line {line}: {text}" for line, text in problems[:MAX_PROBLEMS_SHOWN])
    more = f" (and {len(problems) - MAX_PROBLEMS_SHOWN} more)" if len(problems) > MAX_PROBLEMS_SHOWN else ""
    error = HistoryError(f"{len(problems)} invalid line(s): {shown}{more}", where)
    error.problems = problems
    return error
