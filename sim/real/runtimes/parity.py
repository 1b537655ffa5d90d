"""Parity: the real side plays every transition field and fault class of the model, or says why it cannot.

The model declares its fields and fault classes once and writes them to ``workflow_schema.json``
(:mod:`sim.real.runtimes.model_schema` reads it).  The real side declares, each in one place, what it plays
and what it cannot:

* transition fields: those a worker reads (``worker_kit.TRANSITION_FIELDS``) and those an endpoint of the
  external system reads (``external_system.ENDPOINT_FIELDS``); not applicable, each with its reason:
  ``cells.FIELDS_NOT_APPLICABLE``;
* fault classes: the choreography's plays (``cells.FAULT_PLAYS``, with the points each strikes); not
  applicable, each with its reason: ``cells.NOT_APPLICABLE``.

:func:`problems` lists every way the two sides differ: a field or fault of the model the real side neither
plays nor declares, one it both plays and declares not applicable, one it knows and the model does not, a
reason left empty, a point of the model a played fault does not strike.  A test asserts the list is empty;
a field or fault added to the model alone makes it fail, naming what the real side lacks.
"""

from __future__ import annotations

from sim.real.runtimes import cells, model_schema


def field_problems(schema: model_schema.Schema) -> list[str]:
    """How the real side's transition fields differ from the model's."""
    model = schema.field_names()
    played, unplayable = cells.real_fields(), cells.FIELDS_NOT_APPLICABLE
    out = [f"transition field {name!r}: the real side neither plays it nor declares it not applicable "
           "(FIELDS_NOT_APPLICABLE in sim/real/runtimes/cells.py, with the reason)"
           for name in model if name not in played and name not in unplayable]
    out += [f"transition field {name!r}: the real side plays it and declares it not applicable"
            for name in model if name in played and name in unplayable]
    out += [f"transition field {name!r}: the real side knows it, the model's schema does not"
            for name in (*played, *unplayable) if name not in model]
    out += [f"transition field {name!r}: not applicable without a reason" for name, why in unplayable.items()
            if not why.strip()]
    return out


def fault_problems(schema: model_schema.Schema) -> list[str]:
    """How the real side's fault classes differ from the model's (and where a played one strikes)."""
    model = schema.fault_names()
    played, unplayable = cells.FAULT_PLAYS, cells.NOT_APPLICABLE
    out = [f"fault {name!r}: the real side neither plays it (FAULT_PLAYS) nor declares it not applicable "
           "(NOT_APPLICABLE in sim/real/runtimes/cells.py, with the reason)"
           for name in model if name not in played and name not in unplayable]
    out += [f"fault {name!r}: the real side plays it and declares it not applicable"
            for name in model if name in played and name in unplayable]
    out += [f"fault {name!r}: the real side knows it, the model's registry does not"
            for name in (*played, *unplayable) if name not in model]
    out += [f"fault {name!r}: not applicable without a reason" for name, why in unplayable.items() if not why.strip()]
    for fault in schema.faults:
        if fault.name in played:
            missing = [p for p in fault.points if p not in played[fault.name].points]
            if missing:
                out.append(f"fault {fault.name!r}: the model strikes it at {', '.join(missing)}, the harness does not")
    return out


def problems(schema: model_schema.Schema | None = None) -> list[str]:
    """Every difference between the model's schema (by default the file the model wrote) and the real side."""
    schema = schema or model_schema.load()
    return field_problems(schema) + fault_problems(schema)
