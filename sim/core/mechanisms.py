"""Each knob declared once, with everything it implies: the family's typed knob values.

A family's knobs are the fields of one frozen dataclass (a :class:`Knobs`
subclass, each field made with :func:`knob`): the field's type gives the
values (``Literal["none", "plan", "step"]``, or a number), and the field
carries the rest of the *mechanism* -- default, meaning, ranks, its
footprint (what each of its values makes each kind of event read and write,
:mod:`sim.core.footprint`), a ``fired`` predicate over history events (the
mechanism changed what happened) and a ``silent`` reason (why it may never
have acted).  :func:`knob_table` reads the family's
:class:`~sim.core.knobs.KnobTable` from the dataclass, so the parser, the
advisor, liveness (:func:`fired_measures`, :func:`never_fired_lines`), the
docs' tables and exhaustive search's independence all read one
declaration; and a family reads a protocol as that dataclass
(``WorkspaceKnobs.of(protocol).fence``), so a misspelt knob or value fails
``mypy``, not a run.

    >>> @dataclass(frozen=True)                                               # doctest: +SKIP
    ... class MyKnobs(Knobs):
    ...     guard: Literal["off", "on"] = knob("off", "check the revision at apply", ranks={"off": 0, "on": 1})
    >>> TABLE = knob_table(MyKnobs, family="mine", presets={"safe": {"guard": "on"}})   # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Mapping, Sequence, TypeVar

from sim.core.footprint import Access
from sim.core.knobs import Knob, KnobTable, Protocol

#: Where :func:`knob` keeps a field's declaration in the dataclass field's metadata.
KNOB_METADATA = "fencesim.knob"


@dataclass(frozen=True)
class _Declared:
    meaning: str
    ranks: Mapping[str, int]
    convert: Callable[[str], Any] | None
    ladder: tuple[Any, ...]
    follows: str | None
    unit: str
    footprint: Mapping[Any, Mapping[str, Access]]
    fired: Callable[[Any, Any, Any], bool] | None
    silent: Callable[[Any, Any], str] | None


def knob(default: Any, meaning: str, *, ranks: Mapping[str, int] | None = None,
         convert: Callable[[str], Any] | None = None, ladder: tuple[Any, ...] = (), follows: str | None = None,
         unit: str = "", footprint: Mapping[Any, Mapping[str, Access]] | None = None,
         fired: Callable[[Any, Any, Any], bool] | None = None,
         silent: Callable[[Any, Any], str] | None = None) -> Any:
    """A knob, declared as a field of a :class:`Knobs` dataclass (its values come from the field's type);
    ``meaning`` is its Markdown cell in the docs' knob table (:meth:`~sim.core.knobs.KnobTable.docs_table`)."""
    declared = _Declared(meaning, dict(ranks or {}), convert, tuple(ladder), follows, unit, dict(footprint or {}),
                         fired, silent)
    return field(default=default, metadata={KNOB_METADATA: declared})


def _knob_of(name: str, hint: Any, default: Any, declared: _Declared) -> Knob:
    values: tuple[str, ...] | None
    if typing.get_origin(hint) is typing.Literal:
        values = tuple(typing.get_args(hint))
    elif hint in (int, float):
        values = None
    else:
        raise TypeError(f"knob {name!r}: its type must be a Literal of strings or a number, not {hint!r}")
    convert = declared.convert if declared.convert is not None or values is not None else hint
    return Knob(name, values, default, declared.meaning, declared.ranks, convert, declared.ladder, declared.follows,
                declared.unit, declared.footprint, declared.fired, declared.silent)


KnobsT = TypeVar("KnobsT", bound="Knobs")


class Knobs:
    """Base of a family's typed knob values: a frozen dataclass, one field per knob (made with :func:`knob`).

    A family reads a protocol through it -- ``WorkspaceKnobs.of(protocol).fence`` -- so ``mypy`` knows every
    knob's name and values."""

    table: ClassVar[KnobTable]

    @classmethod
    def of(cls: type[KnobsT], protocol: Protocol) -> KnobsT:
        """The protocol's knob values as this dataclass (built once per protocol, as its table's own dataclass:
        a family extended with a knob of its own reads the extended values through the base class too)."""
        typed = protocol.typed
        if not isinstance(typed, cls):
            made = protocol.table.values_type
            typed = (made if made is not None and issubclass(made, cls) else cls)(**protocol.knobs)
            object.__setattr__(protocol, "typed", typed)
        return typed

    @classmethod
    def defaults(cls: type[KnobsT]) -> KnobsT:
        """Every knob at the default its field declares, typed: ``EffectsKnobs.defaults().key_retention`` is a
        float and ``WorkspaceKnobs.defaults().dedupe == "journl"`` fails ``mypy``.  Read a default here, never
        type it again.  (A knob that ``follows`` another shows its own declared default; a protocol that sets
        neither resolves it from the one it follows, :meth:`~sim.core.knobs.KnobTable.resolve`.)"""
        return cls()


def knob_table(values_type: type[Knobs], family: str, presets: Mapping[str, Mapping[str, Any]],
               events: Mapping[str, Access] | None = None, label_presets: tuple[str, ...] | None = None) -> KnobTable:
    """The table of a :class:`Knobs` dataclass: one knob per field, in field order (see the module doc); the
    dataclass's ``table`` is set to it."""
    hints = typing.get_type_hints(values_type)
    knobs = []
    for spec in dataclasses.fields(typing.cast(Any, values_type)):
        declared = spec.metadata.get(KNOB_METADATA)
        if declared is None:
            raise TypeError(f"{values_type.__name__}.{spec.name} is not declared with knob()")
        knobs.append(_knob_of(spec.name, hints[spec.name], spec.default, declared))
    table = KnobTable(family, tuple(knobs), presets, label_presets, events, values_type)
    table.check()
    values_type.table = table
    return table


# -- did a mechanism act? ------------------------------------------------------------------------------------


def fired_measures(table: KnobTable, events: Sequence[Any], values: Any, seen: Any) -> dict[str, int]:
    """``fired_<knob>`` for every knob with a ``fired`` predicate (table order): 1 when some event shows the
    mechanism acting.  ``seen`` is the family's running view of the history (``seen.feed(event)`` after the
    predicates looked at each event)."""
    waiting = [(knob.name, knob.fired) for knob in table.knobs if knob.fired is not None]
    fired = dict.fromkeys((name for name, _ in waiting), 0)
    for event in events:
        if waiting:
            still = []
            for name, predicate in waiting:
                if predicate(event, seen, values):
                    fired[name] = 1
                else:
                    still.append((name, predicate))
            waiting = still
        seen.feed(event)
    return {f"fired_{name}": value for name, value in fired.items()}


def never_fired_lines(table: KnobTable, workload: Any, protocol: Protocol, values: Any,
                      measures: Mapping[str, float]) -> list[dict[str, str]]:
    """The protocol's non-default mechanisms whose ``fired_<knob>`` summed to 0, each with its ``silent``
    reason: ``[{"knob", "value", "line"}]`` (``overlap_check=on never fired: no two steps share a hunk``)."""
    out = []
    for knob in table.knobs:
        if knob.fired is None:
            continue
        value = protocol.knobs[knob.name]
        if value == knob.default or measures.get(f"fired_{knob.name}", 0):
            continue
        why = knob.silent(workload, values) if knob.silent is not None else "it never acted"
        out.append({"knob": knob.name, "value": knob.show(value),
                    "line": f"{knob.name}={knob.show(value)} never fired: {why}"})
    return out
