"""Playing faults of the cruel grid against a real worker and the real external system.

:func:`run_real_effects` starts, in a fresh temporary folder, the external system
(:mod:`sim.real.external_system`) and a worker process of a durable runtime (DBOS by default), runs
one task of the workflow, strikes it with the faults at their points, and returns the recorded history in
the effects family's vocabulary, ready for ``fencesim check``.

The harness is three rooms: the run's actors -- processes, the record protocol, the queue, the lease
supervisor and the humans (:mod:`sim.real.runtimes.cell_run`); the faults' choreography, one play per fault
class (:mod:`sim.real.runtimes.choreography`, named in :data:`sim.real.runtimes.cells.FAULT_PLAYS`); and the
record, every event in the order of the run's shared clock (:mod:`sim.real.runtimes.recorder`).  It never
sleeps to synchronise, and every wait is bounded (``RECORD_TIMEOUT_S``, ``STARTUP_TIMEOUT_S``,
``RUN_TIMEOUT_S``).  A real run's wall clock is measured (``RealEffectsRun.seconds``) but never recorded, so
re-recording a cell gives the same bytes.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from sim.core.history import History
from sim.core.values import JsonObject
from sim.real import external_system
from sim.real.runtimes import model_schema, worker_kit
from sim.real.runtimes.cell_run import RUN_TIMEOUT_S, CellRun
from sim.real.runtimes.cells import (
    BOUNDARIES,
    CRUEL_FAULTS,
    FAULT_POINTS,
    FENCES,
    NOT_APPLICABLE,
    REAL_POINTS,
    SAGA,
    TASK_DEFAULT,
    CellFault,
    NotApplicable,
    check_applicable,
    check_order,
    resolve_protocol,
    workflow_data,
)
from sim.real.runtimes.choreography import Choreography
from sim.real.runtimes.processes import (
    HarnessError,
    RealEffectsError,
    dbos_command,
    temporal_command,
    temporal_program,
)
from sim.real.runtimes.recorder import SERVER_EVENTS, SERVER_FIELDS

#: The public names, for a caller that imports everything from here.
__all__ = ["ACK_TIMEOUT_S", "BOUNDARIES", "CRUEL_FAULTS", "FAULT_POINTS", "FENCES", "NOT_APPLICABLE", "REAL_POINTS",
           "RUN_TIMEOUT_S", "SAGA", "SERVER_EVENTS", "SERVER_FIELDS", "CellFault", "CellRun", "Choreography",
           "HarnessError", "NotApplicable", "RealEffectsError", "RealEffectsRun", "check_applicable", "check_order",
           "dbos_command", "resolve_protocol", "run_real_effects", "temporal_command", "temporal_program",
           "workflow_data"]

#: Seconds a worker waits for an answer from the external system in harness runs (its timeout: a
#: delayed request or reply costs this much real time, and a healthy request must never take as long).
ACK_TIMEOUT_S = 2.0


@dataclass
class RealEffectsRun:
    """One cell played against a real worker."""

    history: History
    seconds: float
    kills: int  # real SIGKILLs (by the harness and by the external system's hooks)
    freezes: int  # real SIGSTOPs
    workers: list[str]
    runtime: str
    fault: CellFault | None  # the first fault of the run's list (None: a healthy run)
    protocol: JsonObject
    external_log: list[dict] = field(default_factory=list)
    objects: list[dict] = field(default_factory=list)
    faults: tuple[CellFault, ...] = ()  # every fault of the run's list, in the order they were played
    struck: int = 0  # how many of them struck (the others' points were never reached)


def run_real_effects(workflow: Any = "saga", protocol: Any = "keyed-fingerprint-reconcile",
                     fault: CellFault | str | Sequence[CellFault | str] | None = None, *, runtime: str = "dbos",
                     command: list[str] | None = None, task: str = TASK_DEFAULT,
                     tenant: str = worker_kit.DEFAULT_TENANT, keep: Path | None = None,
                     timeout_s: float = RUN_TIMEOUT_S, ack_timeout_s: float = ACK_TIMEOUT_S,
                     plant: tuple[str, ...] = (), arguments: dict[str, JsonObject] | None = None) -> RealEffectsRun:
    """Play one cell, a list of faults, or a healthy run (``fault=None``) against a real worker; return the
    recorded history.

    >>> run = run_real_effects("saga", "unkeyed-retry", "terminate open_pr after_commit")   # doctest: +SKIP
    >>> sim.check_history(run.history, "effects")                                             # doctest: +SKIP

    ``fault`` is one fault (``FAULT TRANSITION BOUNDARY``) or a list of them, played in the model's order
    (:func:`~sim.real.runtimes.cells.check_order` says which lists the harness can express).
    ``plant``: bugs the reference worker carries (``worker_kit.PLANTED_BUGS``), to test what finds them.
    ``arguments``: each transition's canonical arguments (a scenario's ``[arguments.T]``, by logical name): they
    reach the workers, so the intent's fingerprint and the request's are the model's.
    ``keep``: copy the run's folder (the external system's database and request log, the runtime's
    database, every process's log) there afterwards.  Raises :class:`NotApplicable` for a fault or knob
    the runtime cannot express, :class:`RealEffectsError` when a process fails or hangs -- its subclass
    :class:`HarnessError` when the harness's own infrastructure failed (the external system or the runtime's
    server stopped answering, a worker was killed outside the fault plan, a worker's stdout carried a line
    that is no protocol record): then the run could not be judged.  Either carries the partial ``history``
    and the ``kills`` and ``freezes`` made before it.
    """
    label, knobs = resolve_protocol(protocol)
    faults = _fault_list(fault)
    transitions = workflow_data(workflow, knobs)
    check_order(faults, knobs, runtime, [str(t["name"]) for t in transitions])
    reads = [t["name"] for t in transitions if t["class"] == "read"]
    if reads:
        raise NotApplicable(f"{reads[0]} is a read: the external system serves reads (GET /v1/reads/T), but the "
                            "reference workers do not run them yet")
    verified = {f.transition for f in faults if f.fault == "postcondition_fails"}
    transitions = [dict(t, postcondition=True) if t["name"] in verified else t for t in transitions]
    command = command if command is not None else _reference_command(runtime)
    name = workflow if isinstance(workflow, str) else getattr(workflow, "name", "custom")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fencesim-effects-") as tmp:
        root = Path(tmp)
        run = CellRun(root, transitions, knobs, command, task, tenant, started + timeout_s, ack_timeout_s, name,
                      runtime, arguments, _timeout_class_default_s())
        run.plant = tuple(plant)
        choreography = Choreography(run, faults)
        try:
            run.play(choreography.plan())
        except RealEffectsError as error:
            error.history = run.history(run.external.log())  # what happened before it failed
            error.kills, error.freezes = run.kills, run.freezes
            raise
        finally:
            run.close()
            if keep is not None:
                _keep(root, keep)
        log = run.external.log()
        history = run.history(log)
        history.append(len(history), "kernel", "run_ended", reason="completed")
        objects = _objects(root)
    return RealEffectsRun(history, time.monotonic() - started, run.kills, run.freezes, sorted(run.workers), runtime,
                          faults[0] if faults else None, {"label": label, **knobs}, log, objects, faults,
                          choreography.struck_count)


def _keep(root: Path, keep: Path) -> None:
    """Copy the run's folder to ``keep`` (replacing it); what cannot be copied (a socket) is left out, and a
    failed copy never hides the run's own result or error."""
    try:
        if keep.exists():
            shutil.rmtree(keep)
        shutil.copytree(root, keep, symlinks=True)
    except OSError:  # shutil.Error too: the files it could copy are there
        pass


def _reference_command(runtime: str) -> list[str]:
    """The command line of the reference worker of a runtime (DBOS, Temporal or Restate)."""
    if runtime not in ("dbos", "temporal", "restate"):
        raise ValueError(f"no reference worker for runtime {runtime!r}; give command=")
    if runtime == "restate":
        from sim.real.runtimes.restate_server import restate_command

        return restate_command()
    return dbos_command() if runtime == "dbos" else temporal_command()


def _timeout_class_default_s() -> float | None:
    """The model's default timeout class (its schema's ``timeout_s``), which a worker's ``ack_timeout_s`` stands for."""
    spec = model_schema.load().field("timeout_s")
    return None if spec is None else float(spec.default)


def _fault_list(fault: CellFault | str | Sequence[CellFault | str] | None) -> tuple[CellFault, ...]:
    if fault is None:
        return ()
    if isinstance(fault, (str, CellFault)):
        fault = [fault]
    return tuple(CellFault.parse(f) if isinstance(f, str) else f for f in fault)


def _objects(root: Path) -> list[dict]:
    """The external system's objects at the end, read from its database."""
    import sqlite3

    path = root / "external" / external_system.DATABASE_FILE
    db = sqlite3.connect(path)
    try:
        rows = db.execute("SELECT number, kind, task, transition, open FROM objects ORDER BY number").fetchall()
    finally:
        db.close()
    return [{"number": n, "effect": f"{k}#{n}", "task": t, "transition": tr, "open": bool(o)}
            for n, k, t, tr, o in rows]
