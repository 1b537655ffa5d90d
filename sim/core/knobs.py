"""Protocol knobs, presets, and the parser of protocol strings.

A protocol is a preset, knobs, or both, comma-separated:
``step-dedupe``, ``fence=step,dedupe=memory``,
``step-dedupe,journal_write=after_write``.  Knobs override the preset
whatever their position.  Each family declares a :class:`KnobTable`; the
parser is shared and knows no family.

Every knob value carries a *rank*: how much protection it gives, higher is
stronger, equal ranks are alternatives (``stamp_at=plan`` and
``stamp_at=dispatch``).  The advisor walks these ranks and never proposes
a value ranked below the design's own (it never drops a mechanism), and
the quality suite enumerates every value ranked below the strongest as a
weakening that some shipped workload must catch.

A family declares each knob once, as a field of a typed dataclass
(:mod:`sim.core.mechanisms`), and the table is read from it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence, TypeAlias

from sim.core.errors import ProtocolError
from sim.core.footprint import NOTHING, Access, FootprintError
from sim.core.values import shown
from sim.core.workload import did_you_mean

#: A numeric knob's unit, in the docs' words.
UNIT_WORDS = {"s": "seconds"}


#: A knob's value as a protocol holds it: a choice (a string), a number or a flag.
KnobValue: TypeAlias = "str | int | float | bool | None"

@dataclass(frozen=True)
class Knob:
    """One knob of a family.

    ``values`` lists the allowed strings (``None`` for a numeric knob, parsed
    by ``convert``).  ``ranks`` gives each string value its strength; for a
    numeric knob the value itself is its rank and ``ladder`` lists the values
    the advisor may propose.  ``follows`` names another knob whose value this
    one takes when the protocol does not set it (runtime ``approval`` follows
    ``compensation``).
    """

    name: str
    values: tuple[str, ...] | None
    default: Any
    meaning: str  # its Markdown cell in the docs' knob table (KnobTable.docs_table)
    ranks: Mapping[str, int] = field(default_factory=dict)
    convert: Callable[[str], Any] | None = None
    ladder: tuple[Any, ...] = ()
    follows: str | None = None
    unit: str = ""
    #: value -> event kind -> what that value adds to the event's reads and writes (``sim.core.footprint``).
    footprint: Mapping[Any, Mapping[str, Access]] = field(default_factory=dict)
    #: ``fired(event, seen, values)``: whether this event shows the knob's (non-default) mechanism changing what
    #: happened; ``seen`` is the family's running view of the history so far, ``values`` the typed protocol.
    fired: Callable[[Any, Any, Any], bool] | None = None
    #: Why the mechanism may never have acted on a workload: ``silent(workload, values) -> str``.
    silent: Callable[[Any, Any], str] | None = None

    def parse(self, text: str) -> Any:
        if self.values is not None:
            if text not in self.values:
                raise ProtocolError(
                    f"knob {self.name!r} has no value {shown(text)}{did_you_mean(text, self.values)}; allowed: "
                    f"{', '.join(self.values)}"
                )
            return text
        assert self.convert is not None
        try:
            value = self.convert(text)
        except (ValueError, OverflowError):
            raise ProtocolError(f"knob {self.name!r} needs a number, not {shown(text)}") from None
        if isinstance(value, float) and not math.isfinite(value):
            raise ProtocolError(f"knob {self.name!r} must be a finite number, not {shown(text)}")
        if value < 0:
            raise ProtocolError(f"knob {self.name!r} must not be negative, got {shown(text)}")
        return value

    def rank(self, value: Any) -> float:
        if self.values is None:
            return float(value)
        return self.ranks.get(value, 0)

    def candidates(self) -> tuple[Any, ...]:
        """Values the advisor may try for this knob."""
        return self.values if self.values is not None else self.ladder

    def weakenings(self) -> tuple[Any, ...]:
        """Values ranked below this knob's strongest value (what a planted bug may set)."""
        if self.values is None:
            return tuple(v for v in self.ladder if v < self.default)
        top = max(self.ranks.get(v, 0) for v in self.values)
        return tuple(v for v in self.values if self.ranks.get(v, 0) < top)

    def show(self, value: Any) -> str:
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        return str(value)

    def values_doc(self) -> str:
        """The docs' "Values (rank)" cell: each value with its rank, weakest first (equal ranks in the order
        the ranks are declared); a numeric knob's unit and the ladder the advisor tries."""
        if self.values is None:
            unit = f" of {UNIT_WORDS.get(self.unit, self.unit)}" if self.unit else ""
            return (f"a number{unit} (its rank is its value; the advisor tries "
                    f"{', '.join(self.show(v) for v in self.ladder)})")
        declared = {value: position for position, value in enumerate(self.ranks)}
        ordered = sorted(self.values, key=lambda v: (self.rank(v), declared.get(v, len(declared))))
        return ", ".join(f"`{value}` ({self.show(self.rank(value))})" for value in ordered)

    def default_doc(self) -> str:
        """The docs' "Default" cell: the default, or the knob it follows."""
        if self.follows is not None:
            return f"follows `{self.follows}`"
        return self.show(self.default) if self.values is None else f"`{self.show(self.default)}`"


@dataclass(frozen=True)
class KnobTable:
    """The knobs and presets of one family, in table order."""

    family: str
    knobs: tuple[Knob, ...]
    presets: Mapping[str, Mapping[str, Any]]
    #: The presets a built protocol's shortest label may start from (None: every preset).  Presets outside it
    #: can be named but never relabel a protocol spelt otherwise.
    label_presets: tuple[str, ...] | None = None
    #: Event kind -> what it reads and writes whatever the knobs say (None: the family declares no footprints,
    #: so no two of its events are independent).  Each knob's ``footprint`` adds to it.
    events: Mapping[str, Access] | None = None
    #: The family's typed knob values (a ``sim.core.mechanisms.Knobs`` dataclass) when the table was read from one.
    values_type: type | None = None

    def __reduce__(self) -> Any:
        """A table read from a typed dataclass (:mod:`sim.core.mechanisms`) travels by reference to it (its knobs
        carry functions)."""
        if self.values_type is not None and getattr(self.values_type, "table", None) is self:
            return (_table_of, (self.values_type,))
        return super().__reduce__()

    def check(self) -> None:
        """Refuse a table that contradicts itself: presets and footprints naming unknown knobs, values or
        event kinds, a default outside the values, a knob following an unknown one."""
        names = self.names()
        for preset, given in self.presets.items():
            if preset in names:  # a protocol's text could not say which is meant: explore refuses it as a knob
                raise ValueError(f"preset {preset!r} has the name of a knob; name the preset otherwise")
            for name, value in given.items():
                knob = self.knob(name)
                if knob.values is not None and value not in knob.values:
                    raise ValueError(f"preset {preset!r} sets {name}={value!r}, not a value of the knob")
        for knob in self.knobs:
            if knob.values is not None and knob.default not in knob.values:
                raise ValueError(f"knob {knob.name!r}: default {knob.default!r} is not among {knob.values}")
            if knob.follows is not None and knob.follows not in names:
                raise ValueError(f"knob {knob.name!r} follows {knob.follows!r}, which is no knob")
            for value, kinds in knob.footprint.items():
                if knob.values is not None and value not in knob.values:
                    raise ValueError(f"knob {knob.name!r}: footprint of {value!r}, which is not a value of it")
                unknown = sorted(set(kinds) - set(self.events or ()))
                if unknown:
                    raise ValueError(f"knob {knob.name!r}={value}: footprint of event kind(s) {', '.join(unknown)} "
                                     "the table declares no footprint for")

    def footprint_rows(self) -> list[tuple[str, str, str, str]]:
        """The footprints as rows (for the docs): ``(when, event kind, reads, writes)`` -- every kind with every
        knob at its default (``when`` empty), then what each knob value adds, in table order."""
        rows = [("", kind, " ".join(declared.reads), " ".join(declared.writes))
                for kind, declared in (self.events or {}).items()]
        for knob in self.knobs:
            for value, kinds in knob.footprint.items():
                rows += [(f"{knob.name}={knob.show(value)}", kind, " ".join(added.reads), " ".join(added.writes))
                         for kind, added in kinds.items()]
        return rows

    def docs_table(self) -> str:
        """The Markdown table of knobs in the family's docs page (a test checks the page holds it verbatim):
        every knob in table order with its values and ranks, its default and its meaning as declared."""
        lines = ["| Knob | Values (rank) | Default | Meaning |", "|---|---|---|---|"]
        lines += [f"| `{k.name}` | {k.values_doc()} | {k.default_doc()} | {k.meaning} |" for k in self.knobs]
        return "\n".join(lines)

    def footprint_docs_table(self) -> str:
        """The Markdown table of footprints in the family's docs page (a test checks the page holds it
        verbatim): :meth:`footprint_rows`, ``always`` for an event kind's own footprint, ``--`` for nothing."""
        def parts(names: str) -> str:
            return ", ".join(f"`{name}`" for name in names.split()) or "--"

        lines = ["| When | Event | Reads | Writes |", "|---|---|---|---|"]
        lines += [f"| {f'`{when}`' if when else 'always'} | `{kind}` | {parts(reads)} | {parts(writes)} |"
                  for when, kind, reads, writes in self.footprint_rows()]
        return "\n".join(lines)

    def access(self, protocol: "Protocol", kind: str) -> Access:
        """What one kind of event reads and writes under ``protocol``: its own footprint and what each knob's
        value adds (precondition: the table declares footprints)."""
        cache = protocol.accesses
        found = cache.get(kind)
        if found is None:
            events = self.events or {}
            if kind not in events:
                raise FootprintError(f"the {self.family} family declares no footprint for events of kind {kind!r} "
                                     f"(declared: {', '.join(events)})")
            found = events[kind]
            for knob in self.knobs:
                found = found | knob.footprint.get(protocol.knobs[knob.name], {}).get(kind, NOTHING)
            cache[kind] = found
        return found

    def knob(self, name: str) -> Knob:
        for knob in self.knobs:
            if knob.name == name:
                return knob
        raise ProtocolError(
            f"unknown knob {shown(name)}{did_you_mean(name, self.names())} for the {self.family} family; "
            f"knobs: {', '.join(k.name for k in self.knobs)}"
        )

    def names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.knobs)

    def resolve(self, given: Mapping[str, Any]) -> dict[str, KnobValue]:
        """Every knob's value: the given ones, then followed knobs, then defaults."""
        out: dict[str, KnobValue] = {}
        for knob in self.knobs:
            if knob.name in given:
                out[knob.name] = given[knob.name]
            elif knob.follows is None:
                out[knob.name] = knob.default
        for knob in self.knobs:
            if knob.name not in out:
                out[knob.name] = out[knob.follows] if knob.follows in out else knob.default
        return out

    def parse(self, text: str) -> "Protocol":
        """Parse ``preset``, ``knob=value,...`` or both.

        Raises :class:`ProtocolError` (one line, listing what is allowed) on an
        unknown preset, knob or value, an empty part, or a knob given twice.
        """
        raw = str(text)
        parts = [part.strip() for part in raw.split(",")]
        if not raw.strip():
            first = self.knobs[0]
            example = f"{first.name}={first.values[0] if first.values else first.default}"
            raise ProtocolError(
                f"empty protocol; give a preset ({', '.join(self.presets)}) or knobs such as {example}"
            )
        if any(not part for part in parts):
            raise ProtocolError(f"empty part in protocol {shown(raw)}; separate presets and knobs by single commas")
        label = ",".join(parts)
        given: dict[str, KnobValue] = {}
        preset: str | None = None
        for part in parts:
            if "=" in part:
                name, _, value = part.partition("=")
                name, value = name.strip(), value.strip()
                knob = self.knob(name)
                if name in given:
                    raise ProtocolError(f"knob {name!r} is given twice in {shown(label)}")
                given[name] = knob.parse(value)
            else:
                if part in self.names():
                    raise ProtocolError(f"{part!r} is a knob, not a preset: give it a value, "
                                        f"{part}={'|'.join(map(str, self.knob(part).candidates()))}")
                if part not in self.presets:
                    guess = did_you_mean(part, [*self.presets, *self.names()])
                    raise ProtocolError(
                        f"unknown {self.family} preset {shown(part)}{guess}; presets: {', '.join(self.presets)} "
                        f"(or knobs: {', '.join(k.name for k in self.knobs)}, as knob=value)"
                    )
                if preset is not None:
                    raise ProtocolError(f"more than one preset in {shown(label)}; give one preset and knobs")
                preset = part
        explicit = dict(self.presets[preset]) if preset else {}
        explicit.update(given)
        return Protocol(self, label, self.resolve(explicit), frozenset(explicit))

    def preset_protocols(self) -> dict[str, "Protocol"]:
        """The presets as parsed protocols, in table order."""
        return {name: self.parse(name) for name in self.presets}

    def build(self, knobs: Mapping[str, Any]) -> "Protocol":
        """A protocol with exactly these knob values, labelled by its shortest spelling."""
        resolved = self.resolve(knobs)
        explicit = frozenset(k for k in knobs)
        probe = Protocol(self, "", resolved, explicit)
        return Protocol(self, self.short_label(probe), resolved, explicit)

    def short_label(self, protocol: "Protocol") -> str:
        """A preset plus only the knobs that differ from it (``step-dedupe,drift_check=reject``)."""
        best: list[str] | None = None
        for name, preset in self.presets.items():
            if self.label_presets is not None and name not in self.label_presets:
                continue
            merged = self.resolve(dict(preset))
            diff = [f"{k.name}={k.show(protocol.knobs[k.name])}" for k in self.knobs
                    if merged[k.name] != protocol.knobs[k.name]]
            if best is None or len(diff) + 1 < len(best):
                best = [name] + diff
        return ",".join(best or [])


def refuse_duplicates(protocols: Sequence["Protocol"], option: str = "--protocol") -> None:
    """Refuse a protocol named twice, literally or spelt otherwise (``step-dedupe`` and
    ``fence=step,dedupe=journal`` set every knob alike: they are one protocol)."""
    for position, protocol in enumerate(protocols):
        same = next((p for p in protocols[:position] if p == protocol), None)
        if same is None:
            continue
        if same.label == protocol.label:
            raise ProtocolError(f"{option} names {same.label!r} more than once; give each protocol once")
        raise ProtocolError(f"{option} {protocol.label!r} is the same protocol as {same.label!r} (every knob "
                            "the same); give each protocol once")


class Protocol:
    """Resolved knob values of one family, with the label the user wrote.

    >>> from sim.families.workspace.knobs import TABLE, WorkspaceKnobs  # a family reads it typed
    >>> p = TABLE.parse("step-dedupe,journal_write=after_write")
    >>> p.knobs["fence"], WorkspaceKnobs.of(p).dedupe, WorkspaceKnobs.of(p).journal_write
    ('step', 'journal', 'after_write')
    """

    __slots__ = ("table", "label", "knobs", "explicit", "typed", "accesses")

    table: KnobTable
    label: str
    knobs: dict[str, KnobValue]
    explicit: frozenset[str]
    typed: Any  # the family's Knobs value, built on first use (Knobs.of)
    accesses: dict[str, Access]  # event kind -> its access under this protocol (KnobTable.access)

    def __init__(self, table: KnobTable, label: str, knobs: dict[str, KnobValue],
                 explicit: frozenset[str] = frozenset()):
        object.__setattr__(self, "table", table)
        object.__setattr__(self, "label", label)
        object.__setattr__(self, "knobs", dict(knobs))
        object.__setattr__(self, "explicit", frozenset(explicit))
        object.__setattr__(self, "typed", None)
        object.__setattr__(self, "accesses", {})

    @property
    def family(self) -> str:
        return self.table.family

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a Protocol is immutable; build another with with_knobs()")

    def __getstate__(self) -> tuple[Any, ...]:
        return (self.table, self.label, self.knobs, self.explicit)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        for name, value in zip(self.__slots__, state):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "typed", None)
        object.__setattr__(self, "accesses", {})

    def with_knobs(self, **knobs: Any) -> "Protocol":
        """This protocol with some knobs changed; the label says which."""
        given = {k: self.knobs[k] for k in self.explicit}
        for name, value in knobs.items():
            given[name] = self.table.knob(name).parse(self.table.knob(name).show(value))
        kept = [part for part in self.label.split(",") if part.partition("=")[0] not in knobs]
        extra = [f"{k}={self.table.knob(k).show(v)}" for k, v in knobs.items()]
        return Protocol(self.table, ",".join(kept + extra), self.table.resolve(given), frozenset(given))

    def changes_from(self, other: "Protocol") -> dict[str, KnobValue]:
        """Knobs whose value differs from ``other``'s, with this protocol's value."""
        return {k.name: self.knobs[k.name] for k in self.table.knobs if self.knobs[k.name] != other.knobs[k.name]}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Protocol) and (self.family, self.knobs) == (other.family, other.knobs)

    def __hash__(self) -> int:
        return hash((self.family, tuple(sorted((k, str(v)) for k, v in self.knobs.items()))))

    def __repr__(self) -> str:
        return f"Protocol({self.label!r})"

    def describe(self) -> str:
        """Every knob and its value, in table order: ``fence=step,stamp_at=dispatch,...``."""
        return ",".join(f"{k.name}={k.show(self.knobs[k.name])}" for k in self.table.knobs)


def _table_of(values_type: Any) -> KnobTable:
    table: KnobTable = values_type.table
    return table
