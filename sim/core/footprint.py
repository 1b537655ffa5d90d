"""What an event reads and writes, declared once as data; independence derived from it.

A run's state is made of *parts*: a field of the state value, or one key of
a keyed field (a file of the workspace, a dedupe journal's entries for one
step, one client's read).  A family's machine lists them
(:meth:`sim.core.machine.Machine.parts`); its knob table declares, for each
kind of event and for each knob value that changes what the event does, the
parts the event *reads* (its guard and its effect depend on nothing else)
and *writes* (it changes nothing else) -- an :class:`Access` of templates
such as ``rev``, ``files[path]``, ``journal[step]``, ``*`` (every part),
where ``path`` and ``step`` are filled in from the event itself
(:meth:`sim.core.family.Model.footprint_keys`).

Two events are *independent* when neither writes a part the other reads or
writes (:func:`independent`); exhaustive search then tries one of their two
orders.  Nothing else makes two events independent: no family writes
independence by hand, so a mechanism added with a new read cannot leave a
stale claim behind.  Whether a declaration is true is not taken on trust: the
law suite (:mod:`sim.testing`) checks every footprint against the machine on
every state reachable within a small depth -- a part changed but not
declared written, an outcome that differs between two states equal in every
part declared read -- and every derived commutation, exhaustively.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from sim.core.errors import InputError

#: The part name that stands for every part (``*`` in a template).
ALL = "*"

#: One part of a state: (field, key) -- key None for a whole field (or, in a declaration, every key of it).
Part = tuple[str, "str | None"]

_TEMPLATE = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*|\*)(?:\[(?P<key>[A-Za-z_][A-Za-z0-9_]*|\*)\])?$")


class FootprintError(InputError):
    """A footprint declaration that cannot be read or resolved (a family author's mistake: one line, exit 4)."""


@dataclass(frozen=True)
class Access:
    """The parts one kind of event reads and writes, as templates (``rev``, ``files[path]``, ``*``)."""

    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for template in (*self.reads, *self.writes):
            if not _TEMPLATE.match(template):
                raise FootprintError(f"footprint template {template!r} is not NAME, NAME[KEY] or *")

    def __or__(self, other: "Access") -> "Access":
        return Access(tuple(dict.fromkeys(self.reads + other.reads)),
                      tuple(dict.fromkeys(self.writes + other.writes)))


def access(reads: str = "", writes: str = "") -> Access:
    """An :class:`Access` from space-separated templates: ``access("sent", "requests")``."""
    return Access(tuple(reads.split()), tuple(writes.split()))


#: An access that touches nothing.
NOTHING = Access()


@dataclass(frozen=True)
class Footprint:
    """The parts one event reads and writes, resolved (keys filled in from the event)."""

    reads: frozenset[Part]
    writes: frozenset[Part]

    def conflicts(self, other: "Footprint") -> bool:
        """Read/write or write/write on a part both may touch."""
        return (_meets(self.writes, other.reads | other.writes) or _meets(other.writes, self.reads))

    def declares_read(self, part: Part) -> bool:
        return any(covers(declared, part) for declared in self.reads)

    def declares_written(self, part: Part) -> bool:
        return any(covers(declared, part) for declared in self.writes)


def independent(first: Footprint | None, second: Footprint | None) -> bool:
    """Whether two events commute by their footprints (an event with no footprint commutes with none)."""
    return first is not None and second is not None and not first.conflicts(second)


def covers(declared: Part, part: Part) -> bool:
    """Whether a declared part includes a part of a state (a whole field includes each of its keys)."""
    name, key = declared
    if name == ALL:
        return True
    return name == part[0] and (key is None or key == part[1])


def overlaps(first: Part, second: Part) -> bool:
    """Whether two declared parts may name the same piece of state."""
    if ALL in (first[0], second[0]):
        return True
    return first[0] == second[0] and (first[1] is None or second[1] is None or first[1] == second[1])


def _meets(one: Iterable[Part], other: Iterable[Part]) -> bool:
    others = tuple(other)
    return any(overlaps(a, b) for a in one for b in others)


def resolve(declared: Access, keys: Mapping[str, Iterable[str]], event: Any = None) -> Footprint:
    """The footprint of one event: each template's key filled in from ``keys`` (placeholder -> the event's
    keys: ``{"step": ["s1"], "path": ["app.py"]}``); ``NAME[*]`` and ``NAME`` are the whole field."""
    return Footprint(frozenset(_parts(declared.reads, keys, event)), frozenset(_parts(declared.writes, keys, event)))


def _parts(templates: tuple[str, ...], keys: Mapping[str, Iterable[str]], event: Any) -> list[Part]:
    out: list[Part] = []
    for template in templates:
        match = _TEMPLATE.match(template)
        assert match is not None  # Access checked every template
        name, placeholder = match["name"], match["key"]
        if placeholder is None or placeholder == ALL:
            out.append((name, None))
            continue
        if placeholder not in keys:
            raise FootprintError(f"footprint {template!r} of {event} names [{placeholder}], which the event does not "
                                 f"give (it gives: {', '.join(sorted(keys)) or 'nothing'})")
        out.extend((name, str(key)) for key in keys[placeholder])
    return out


def shown_part(part: Part) -> str:
    """A part as the laws and docs write it: ``rev``, ``files[app.py]``."""
    return part[0] if part[1] is None else f"{part[0]}[{part[1]}]"


def named_parts(state: Any) -> dict[Part, Any]:
    """Every field of a named-tuple state as a whole part (what a machine's default ``parts`` returns)."""
    fields = getattr(state, "_fields", None)
    if fields is None:
        return {("state", None): state}
    return {(name, None): getattr(state, name) for name in fields}


def keyed(name: str, items: Iterable[tuple[str, Any]]) -> dict[Part, Any]:
    """The parts of one keyed field: ``{(name, key): value}``."""
    return {(name, str(key)): value for key, value in items}
