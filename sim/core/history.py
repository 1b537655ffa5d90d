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
import math
from pathlib import Path
from typing import Any, Iterable, Iterator

from sim.core.errors import HistoryError
from sim.core.values import INTEGER_LIMIT, MAX_NESTING, JsonObject, JsonValue, cut, kind, name_problem, shown

FIXED_FIELDS = ("index", "time", "actor", "event")
#: The same names as a set: a field is looked up in it once per read (millions of times in a search's checks).
_FIXED = frozenset(FIXED_FIELDS)


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
        if name in _FIXED:
            return getattr(self, name)
        return self.fields.get(name, default)

    def __getitem__(self, name: str) -> Any:
        if name in _FIXED:
            return getattr(self, name)
        return self.fields[name]

    def __contains__(self, name: str) -> bool:
        return name in _FIXED or name in self.fields

    def __reduce__(self):
        return (Event, (self.index, self.time, self.actor, self.event, self.fields))

    def to_dict(self) -> JsonObject:
        out: JsonObject = {
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

    A history read from a file knows the line of each event (:meth:`line_of`), so an error about an
    event names its line.
    """

    def __init__(self, events: Iterable[Event] = (), lines: list[int] | None = None):
        self._events: list[Event] = list(events)
        self._lines = lines

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

    def line_of(self, position: int) -> int:
        """The file line of the event at ``position`` (its position + 1 when not read from a file)."""
        return self._lines[position] if self._lines else position + 1

    def to_dicts(self) -> list[JsonObject]:
        return [e.to_dict() for e in self._events]

    def to_jsonl(self) -> str:
        return "".join(e.to_json() + "\n" for e in self._events)

    @classmethod
    def from_dicts(cls, rows: Iterable[Any], where: str = "history", lines: list[int] | None = None) -> "History":
        """Build a history from plain objects; every invalid row is reported (up to a limit) in one error.

        Indices must increase from one event to the next (an event's index is its number in the run)."""
        events, problems = [], []
        previous = -1
        for position, row in enumerate(rows):
            line = lines[position] if lines else position + 1
            try:
                event = _event(row, position)
            except ValueError as error:
                problems.append((line, str(error)))
                continue
            if event.index <= previous:
                problems.append((line, f"index {event.index} after index {previous}: indices must increase from "
                                       "one event to the next (each is the event's number in the run)"))
            previous = max(previous, event.index)
            events.append(event)
        if problems:
            raise invalid_lines(where, problems)
        return cls(events, list(lines) if lines else None)

    @classmethod
    def from_jsonl(cls, text: str, where: str = "history") -> "History":
        """Parse JSON lines strictly: a key twice in one object, NaN or Infinity, a number beyond 64 bits or
        nesting beyond MAX_NESTING is an invalid line (Python's json module would accept the first two)."""
        if text.startswith("\ufeff"):
            raise HistoryError("the file starts with a byte-order mark (U+FEFF), which JSON lines do not allow; "
                               "save it as UTF-8 without a BOM", f"{where}:1")
        rows: list[Any] = []
        lines: list[int] = []
        problems: list[tuple[int, str]] = []
        # Lines end at "\n" only (and "\r\n"): U+2028, U+0085 and the other breaks str.splitlines() knows are
        # text inside a JSON string, not the end of an event.
        for line_number, line in enumerate(text.split("\n"), start=1):
            line = line[:-1] if line.endswith("\r") else line
            if not line.strip():
                continue
            if len(rows) >= MAX_HISTORY_EVENTS:
                raise HistoryError(f"more than {MAX_HISTORY_EVENTS} events; the limit of a history is "
                                   f"{MAX_HISTORY_EVENTS}", where)
            try:
                row = _DECODER.decode(line)
            except json.JSONDecodeError as error:
                problems.append((line_number, f"not JSON ({error.msg}, column {error.colno})"))
                continue
            except _BadValue as error:
                problems.append((line_number, str(error)))
                continue
            except RecursionError:
                problems.append((line_number, "JSON nested too deeply"))
                continue
            depth = _depth_problem(row)
            if depth:
                problems.append((line_number, depth))
                continue
            rows.append(row)
            lines.append(line_number)
            if len(problems) > MAX_PROBLEMS_KEPT:
                break
        try:
            history = cls.from_dicts(rows, where, lines)
        except HistoryError as error:
            if not problems:
                raise
            raise invalid_lines(where, sorted(problems + error.problems)) from None
        if problems:
            raise invalid_lines(where, sorted(problems))
        return history

    @classmethod
    def read(cls, path: str | Path) -> "History":
        from sim.core.errors import ScenarioError
        from sim.core.files import read_text

        try:
            text = read_text(path, "history file (JSON lines)")
        except ScenarioError as error:
            raise HistoryError(error.message, error.where) from None
        return cls.from_jsonl(text, str(path))


#: Limits on a history a user gives: events, and invalid lines listed in one error.
MAX_HISTORY_EVENTS = 10_000_000
MAX_PROBLEMS_SHOWN = 20
#: Lines named for one fault, and characters of one fault's description, in an error.
MAX_LINES_NAMED = 10
MAX_PROBLEM_CHARS = 400
#: Reading stops after this many invalid lines (a file of garbage is not parsed to its end).
MAX_PROBLEMS_KEPT = 1_000
TIME_LIMIT = 1e15
#: Digits of the longest integer a history may hold (|n| < 2^63 has at most 19).
_MAX_INTEGER_DIGITS = 19


class _BadValue(ValueError):
    """A JSON value fencesim refuses although the json module would read it."""


def _integer(text: str) -> int:
    digits = text.lstrip("-")
    if len(digits) > _MAX_INTEGER_DIGITS or not -INTEGER_LIMIT < int(text) < INTEGER_LIMIT:
        raise _BadValue(f"an integer of {len(digits)} digits; integers in a history are at most 2^63 - 1 in size")
    return int(text)


def _number(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _BadValue(f"the number {text[:40]} is too large (numbers in a history are finite)")
    return value


def _constant(text: str) -> Any:
    raise _BadValue(f"{text} is not JSON (numbers in a history are finite)")


def _object(pairs: list[tuple[str, JsonValue]]) -> JsonObject:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for twice, _ in pairs:
            if twice in seen:
                break
            seen.add(twice)
        raise _BadValue(f"key {shown(twice)} appears twice in one object; give each field once")
    return out


_DECODER = json.JSONDecoder(object_pairs_hook=_object, parse_int=_integer, parse_float=_number,
                            parse_constant=_constant)


def _depth_problem(row: Any) -> str | None:
    """Nesting beyond MAX_NESTING (checked without recursion)."""
    stack = [(row, 0)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_NESTING:
            return f"lists and objects nested more than {MAX_NESTING} deep"
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values() if isinstance(v, (dict, list)))
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value if isinstance(v, (dict, list)))
    return None


#: Actor and event names already found valid (a history repeats a few names many times).
_GOOD_NAMES: set[str] = set()


def _name_problem(value: Any, field_name: str) -> str | None:
    if type(value) is str and value in _GOOD_NAMES:
        return None
    problem = name_problem(value, f"'{field_name}'", spaces=True)
    if problem is None and len(_GOOD_NAMES) < 10_000:
        _GOOD_NAMES.add(value)
    return problem


def _event(row: Any, position: int) -> Event:
    if not isinstance(row, dict):
        raise ValueError(f"not a JSON object but {kind(row)}; each line holds one event object")
    actor: Any = row.get("actor")  # null is absent (docs/formats.md); any other value is checked below
    name: Any = row.get("event")
    missing = [f for f, value in (("actor", actor), ("event", name)) if value is None]
    if missing:
        raise ValueError(f"lacks {', '.join(missing)}; every event needs at least 'actor' and 'event'")
    for field_name, value in (("actor", actor), ("event", name)):
        problem = _name_problem(value, field_name)
        if problem:
            raise ValueError(problem)
    index, time = row.get("index"), row.get("time")
    index = position if index is None else index
    time = position if time is None else time
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < 2 ** 63:
        raise ValueError(f"'index' must be a whole number from 0, not {shown(index)}")
    if not isinstance(time, (int, float)) or isinstance(time, bool) or not -TIME_LIMIT < time < TIME_LIMIT:
        raise ValueError(f"'time' must be a number of seconds within 10^15, not {shown(time)}")
    fields = {k: v for k, v in row.items() if v is not None and k not in FIXED_FIELDS}
    return Event(index, time, actor, name, fields)


def invalid_lines(where: str, problems: list[tuple[int, str]]) -> HistoryError:
    """One error naming every invalid line: lines with the same fault are named together, and at most
    MAX_PROBLEMS_SHOWN faults are spelt out (the rest are counted)."""
    if len(problems) == 1:
        (line, text), = problems
        error = HistoryError(cut(text, MAX_PROBLEM_CHARS), f"{where}:{line}")
        error.problems = problems
        return error
    lines_by_text: dict[str, list[int]] = {}
    for line, text in problems:
        lines_by_text.setdefault(text, []).append(line)
    shown_parts = []
    for text, lines in list(lines_by_text.items())[:MAX_PROBLEMS_SHOWN]:
        named = ", ".join(str(line) for line in lines[:MAX_LINES_NAMED])
        if len(lines) > MAX_LINES_NAMED:
            named += f" and {len(lines) - MAX_LINES_NAMED} more"
        shown_parts.append(f"line{'s' if len(lines) > 1 else ''} {named}: {cut(text, MAX_PROBLEM_CHARS)}")
    rest = len(lines_by_text) - MAX_PROBLEMS_SHOWN
    more = f" (and {rest} other fault(s))" if rest > 0 else ""
    error = HistoryError(f"{len(problems)} invalid line(s): {'; '.join(shown_parts)}{more}", where)
    error.problems = problems
    return error
