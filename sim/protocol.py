"""Protocol knobs and presets, parsed from their string form.

A protocol is a preset, knobs, or both, comma-separated:
``step-dedupe``, ``fence=step,dedupe=memory``,
``step-dedupe,journal_write=after_write``.  Knobs override the preset
whatever their position.  Each family (workspace, runtime) declares its own
knob table; the parser is shared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from sim.errors import ProtocolError


@dataclass(frozen=True)
class Knob:
    """A knob: its allowed values (strings), or a converter for numeric knobs."""

    name: str
    values: tuple[str, ...] | None
    default: Any
    meaning: str
    convert: Callable[[str], Any] | None = None

    def parse(self, text: str) -> Any:
        if self.values is not None:
            if text not in self.values:
                raise ProtocolError(
                    f"knob {self.name!r} has no value {text!r}; allowed: {', '.join(self.values)}"
                )
            return text
        assert self.convert is not None
        try:
            value = self.convert(text)
        except ValueError:
            raise ProtocolError(f"knob {self.name!r} needs a number, not {text!r}") from None
        if value < 0:
            raise ProtocolError(f"knob {self.name!r} must not be negative, got {text!r}")
        return value


@dataclass(frozen=True)
class Family:
    """The knob table and presets of one model family."""

    name: str
    knobs: tuple[Knob, ...]
    presets: Mapping[str, Mapping[str, Any]]

    def knob(self, name: str) -> Knob:
        for knob in self.knobs:
            if knob.name == name:
                return knob
        raise ProtocolError(
            f"unknown knob {name!r} for the {self.name} family; "
            f"knobs: {', '.join(k.name for k in self.knobs)}"
        )

    def defaults(self) -> dict[str, Any]:
        return {k.name: k.default for k in self.knobs}


class Protocol:
    """Resolved knob values of one family, with the label the user wrote.

    >>> p = parse_protocol("step-dedupe,journal_write=after_write")
    >>> p.fence, p.dedupe, p.journal_write
    ('step', 'journal', 'after_write')
    """

    __slots__ = ("family", "label", "knobs")

    def __init__(self, family: str, label: str, knobs: dict[str, Any]):
        object.__setattr__(self, "family", family)
        object.__setattr__(self, "label", label)
        object.__setattr__(self, "knobs", dict(knobs))

    def __getattr__(self, name: str) -> Any:
        knobs = object.__getattribute__(self, "knobs")
        if name in knobs:
            return knobs[name]
        raise AttributeError(name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a Protocol is immutable; build another with with_knobs()")

    def with_knobs(self, **knobs: Any) -> "Protocol":
        spec = FAMILIES[self.family]
        merged = dict(self.knobs)
        for name, value in knobs.items():
            knob = spec.knob(name)
            merged[name] = knob.parse(str(value)) if knob.values is not None else value
        extra = ",".join(f"{k}={v}" for k, v in knobs.items())
        return Protocol(self.family, f"{self.label},{extra}" if extra else self.label, merged)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Protocol) and (self.family, self.knobs) == (other.family, other.knobs)

    def __hash__(self) -> int:
        return hash((self.family, tuple(sorted((k, str(v)) for k, v in self.knobs.items()))))

    def __repr__(self) -> str:
        return f"Protocol({self.label!r})"

    def describe(self) -> str:
        """Every knob and its value, in table order: ``fence=step,stamp_at=dispatch,...``."""
        spec = FAMILIES[self.family]
        return ",".join(f"{k.name}={self.knobs[k.name]}" for k in spec.knobs)


WORKSPACE = Family(
    name="workspace",
    knobs=(
        Knob("fence", ("none", "plan", "step"), "none", "what is checked at apply"),
        Knob(
            "stamp_at",
            ("dispatch", "plan", "apply"),
            "dispatch",
            "for fence=step: rev and hash read at dispatch, the planner's claims, or read at apply",
        ),
        Knob("dedupe", ("off", "memory", "journal"), "off", "where (step_id, base_rev) keys live"),
        Knob(
            "journal_write",
            ("atomic", "after_write"),
            "atomic",
            "after_write leaves a window where a preemption keeps the patch and loses its key",
        ),
        Knob("drift_check", ("off", "reject"), "off", "at dispatch, reject a step whose claimed pre-hash is not current"),
        Knob("overlap_check", ("off", "on"), "off", "reject at admission a plan whose sibling steps share a hunk"),
        Knob("pipeline", ("off", "on"), "off", "on: dispatch ahead; the network may reorder"),
    ),
    presets={
        "none": {"fence": "none", "dedupe": "off"},
        "plan": {"fence": "plan", "dedupe": "off"},
        "step": {"fence": "step", "dedupe": "off"},
        "step-dedupe": {"fence": "step", "dedupe": "journal"},
    },
)

#: Every family's knob table, by name.  The runtime family registers itself here.
FAMILIES: dict[str, Family] = {"workspace": WORKSPACE}

#: The workspace presets, in the seed table's row order.
WORKSPACE_PRESETS = tuple(WORKSPACE.presets)


def register_family(family: Family) -> None:
    FAMILIES[family.name] = family


def parse_protocol(text: str, family: str = "workspace") -> Protocol:
    """Parse ``preset``, ``knob=value,...`` or both into a :class:`Protocol`.

    Raises :class:`ProtocolError` (one line, listing what is allowed) on an
    unknown preset, knob or value.
    """
    if family not in FAMILIES:
        raise ProtocolError(f"unknown model family {family!r}; families: {', '.join(FAMILIES)}")
    spec = FAMILIES[family]
    label = ",".join(part.strip() for part in str(text).split(",") if part.strip())
    if not label:
        raise ProtocolError(
            f"empty protocol; give a preset ({', '.join(spec.presets)}) or knobs such as "
            f"{spec.knobs[0].name}={spec.knobs[0].values[0] if spec.knobs[0].values else 0}"
        )
    knobs = spec.defaults()
    overrides: dict[str, Any] = {}
    presets_seen = 0
    for part in label.split(","):
        if "=" in part:
            name, _, value = part.partition("=")
            name, value = name.strip(), value.strip()
            knob = spec.knob(name)
            if name in overrides:
                raise ProtocolError(f"knob {name!r} is given twice in {label!r}")
            overrides[name] = knob.parse(value)
        else:
            if part not in spec.presets:
                raise ProtocolError(
                    f"unknown {family} preset {part!r}; presets: {', '.join(spec.presets)} "
                    f"(or knobs: {', '.join(k.name for k in spec.knobs)})"
                )
            presets_seen += 1
            if presets_seen > 1:
                raise ProtocolError(f"more than one preset in {label!r}; give one preset and knobs")
            knobs.update(spec.presets[part])
    knobs.update(overrides)
    return Protocol(family, label, knobs)


def presets(family: str = "workspace") -> dict[str, Protocol]:
    """The family's presets as parsed protocols, in table order."""
    return {name: parse_protocol(name, family) for name in FAMILIES[family].presets}
