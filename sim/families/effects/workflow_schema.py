"""The schema of the effects family's workflows, as the JSON file a real runtime's harness reads.

``workflow_schema.json`` (beside this module) is written from the model's two registries -- the
transition fields (:data:`sim.families.effects.transition_fields.FIELDS`) and the fault classes
(:data:`sim.families.effects.faults.REGISTRY`) -- so the real side (``sim/real/runtimes``), which imports
nothing of the model, learns every field a transition can declare (its kind, values and default per class)
and every fault class (its points).  A test keeps the committed file equal to :func:`schema_text`; after
changing either registry, write it again with ``write_schema()``.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from sim.families.effects import faults, transition_fields
from sim.families.effects.knobs import FAMILY_NAME
from sim.families.effects.points import BOUNDARIES, RECOVERY_POINTS

#: Where the schema lives: beside this module, in the package.
SCHEMA_PATH = Path(__file__).resolve().with_name("workflow_schema.json")
SCHEMA_FORMAT = 1


def schema() -> dict[str, Any]:
    """The schema as data: the effect classes, the points, every transition field and every fault class."""
    return {
        "format": SCHEMA_FORMAT,
        "family": FAMILY_NAME,
        "written_by": "sim.families.effects.workflow_schema.write_schema() from the model's tables; do not edit",
        "effect_classes": list(transition_fields.EFFECT_CLASSES),
        "boundaries": list(BOUNDARIES),
        "recovery_points": list(RECOVERY_POINTS),
        "fields": [entry.to_json() for entry in transition_fields.FIELDS],
        "faults": [fault.to_json() for fault in faults.REGISTRY],
    }


def schema_text() -> str:
    """The file's bytes: the same tables give the same text (no timestamps, fixed order)."""
    return json.dumps(schema(), indent=1, ensure_ascii=False) + "\n"


def write_schema(path: Path = SCHEMA_PATH) -> Path:
    """Write the schema to ``path`` (a temporary name first, then renamed over it)."""
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            out.write(schema_text())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path
