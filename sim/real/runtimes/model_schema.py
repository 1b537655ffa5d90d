"""The effects family's workflow schema, read from the JSON file the model writes.

``sim/families/effects/workflow_schema.json`` lists every field a transition table may declare (its kind,
values and default per effect class) and every fault class of the model (its points).  The real side reads
that file -- data, not the model's code, so it stays independent of the model (an import-linter contract
keeps it so) -- to resolve a transition's defaults exactly as the model does, to refuse a field or a fault
it cannot play, and to check, in a parity test, that it plays or declares not applicable everything the
model has (:mod:`sim.real.runtimes.parity`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

#: The schema the model writes (``sim.families.effects.workflow_schema.write_schema``).
SCHEMA_FILE = Path(__file__).resolve().parents[2] / "families" / "effects" / "workflow_schema.json"
SCHEMA_FORMAT = 1


@dataclass(frozen=True)
class FieldSpec:
    """One transition field as the schema declares it."""

    name: str
    kind: str
    required: bool
    default: Any
    by_class: Mapping[str, Any]
    values: tuple[str, ...]
    doc: str

    def default_for(self, effect_class: str, knobs: Mapping[str, Any]) -> Any:
        """What the endpoint assumes when a transition declares nothing (a knob may decide, as the model's)."""
        value = self.by_class.get(effect_class, self.default)
        if isinstance(value, dict) and "knob" in value:
            chosen = knobs.get(value["knob"])
            return value["values"].get(chosen, value["otherwise"]) if isinstance(chosen, str) else value["otherwise"]
        return value


@dataclass(frozen=True)
class FaultSpec:
    """One fault class of the model: where it may strike."""

    name: str
    points: tuple[str, ...]
    applies_to: str
    doc: str
    cruel: bool = False


@dataclass(frozen=True)
class Schema:
    """The model's declarations the real side reads."""

    effect_classes: tuple[str, ...]
    boundaries: tuple[str, ...]
    fields: tuple[FieldSpec, ...]
    faults: tuple[FaultSpec, ...]

    def cruel_faults(self) -> tuple[str, ...]:
        """The seed's "deliberately cruel" faults, in the model's order."""
        return tuple(f.name for f in self.faults if f.cruel)

    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def fault_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.faults)

    def field(self, name: str) -> FieldSpec | None:
        return next((f for f in self.fields if f.name == name), None)

    def fault(self, name: str) -> FaultSpec | None:
        return next((f for f in self.faults if f.name == name), None)


def parse(data: dict[str, Any]) -> Schema:
    """A schema from its JSON data; ValueError when it is not a schema this side can read."""
    if not isinstance(data, dict) or data.get("format") != SCHEMA_FORMAT:
        raise ValueError(f"the workflow schema must be format {SCHEMA_FORMAT}, not {data.get('format')!r}")
    fields = tuple(FieldSpec(f["name"], f["kind"], bool(f.get("required")), f.get("default"), f.get("by_class", {}),
                             tuple(f.get("values", ())), f.get("doc", "")) for f in data["fields"])
    faults = tuple(FaultSpec(f["name"], tuple(f["points"]), f.get("applies_to", ""), f.get("doc", ""),
                             bool(f.get("cruel"))) for f in data["faults"])
    return Schema(tuple(data["effect_classes"]), tuple(data["boundaries"]), fields, faults)


@lru_cache(maxsize=8)
def load(path: Path = SCHEMA_FILE) -> Schema:
    """The schema in ``path`` (by default the model's), read once per process."""
    return parse(json.loads(path.read_text(encoding="utf-8")))
