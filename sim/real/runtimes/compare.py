"""The model against a real durable runtime, cell by cell of the cruel grid.

For each protocol and each cell -- transition x boundary x fault -- the
model's run (the effects family's replay of that one-fault list) and a real
run (:func:`~sim.real.runtimes.harness.run_real_effects` against DBOS,
Temporal or a user's worker) are compared on what both can observe:

* the effects each logical transition created, and so the duplicates;
* the receipts recorded per transition;
* the compensations run;
* the task's terminal outcome;
* the safety invariants each history violates (the same checks as
  ``fencesim check``);
* the request fingerprints per logical transition, those of the intents
  and of the commits: the model's arguments (a scenario's
  ``[arguments.T]``) must reach the real workers, and both sides must
  hash them alike.

Event order, times, request ids and object numbers are not compared: the
real system numbers its objects in its own commit order and its workers
take their own paths to the same outcome.  A cell the runtime cannot
express is *not applicable*, with the runtime's reason, and never counted
as agreement.  A disagreement keeps both histories, so it can be exported
side by side; a one-fault cell is its own shortest order.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from sim.core.history import History
from sim.core.values import JsonObject

#: Fields of an observation, in the order a disagreement lists them.
OBSERVED = ("effects", "duplicates", "receipts", "compensations", "outcome", "violations", "fingerprints")
#: Events whose ``fingerprint`` is the request's, as each side computed it (the worker's intent, the host's commit).
FINGERPRINTED = ("intent_recorded", "committed")


def observe(family, history: History) -> dict[str, Any]:
    """What a run shows that both the model and a real runtime record."""
    # A record may lack a field (a real runtime's history): it is counted under None, as it always was.
    effects: dict[str | None, list[str | None]] = {}
    receipts: dict[str | None, int] = {}
    compensations: set[str | None] = set()
    outcomes: list[str | None] = []
    fingerprints: dict[str, set[str]] = {}
    for event in history:
        fields = event.fields
        logical = fields.get("logical", fields.get("transition"))
        if event.event in FINGERPRINTED and isinstance(fields.get("fingerprint"), str):
            fingerprints.setdefault(str(logical), set()).add(fields["fingerprint"])
        if event.event == "committed":
            effects.setdefault(logical, [])
            if fields.get("effect") not in effects[logical]:
                effects[logical].append(fields.get("effect"))
        elif event.event == "receipt_recorded":
            receipts[fields.get("transition")] = receipts.get(fields.get("transition"), 0) + 1
        elif event.event == "compensated":
            compensations.add(fields.get("transition"))
        elif event.event == "task_terminal":
            outcomes.append(fields.get("outcome"))
    violated = sorted({v.invariant for v in family.check(history).safety_violations})
    return {"effects": {k: len(v) for k, v in sorted(effects.items())},
            "duplicates": {k: len(v) - 1 for k, v in sorted(effects.items()) if len(v) > 1},
            "receipts": dict(sorted(receipts.items())), "compensations": sorted(compensations),
            "outcome": outcomes, "violations": violated,
            "fingerprints": {k: sorted(v) for k, v in sorted(fingerprints.items())}}


def cell_name(labels: Sequence[str]) -> str:
    """A cell's labels (transition, boundary, fault) written as ``--cell`` takes them: ``fault transition
    boundary``; any other list of labels (a scenario's faults) joined by ``; ``."""
    if len(labels) == 3 and not any(" " in label for label in labels):
        transition, boundary, fault = labels
        return f"{fault} {transition} {boundary}"
    return "; ".join(labels)


#: A comparison's status, in the order the table counts them.
STATUSES = ("agrees", "disagrees", "not_played", "not_applicable", "could_not_judge")


@dataclass
class CellComparison:
    """One cell under one protocol: both observations, or why the runtime cannot play it, or why the run could
    not be judged.

    Its :attr:`status` is one of :data:`STATUSES`: ``agrees`` (every fault it plays struck, and both sides
    observe the same), ``disagrees``, ``not_played`` (no fault of its list was played, or none struck: a healthy
    run proves nothing about the fault, so it never agrees), ``not_applicable`` (the runtime cannot express
    it) and ``could_not_judge`` (the harness's own infrastructure failed: the external system or the runtime's
    server stopped answering, a worker was killed outside the plan, a worker's protocol channel carried a
    log line; never a disagreement)."""

    protocol: str
    labels: tuple[str, ...]  # a cell's (transition, boundary, fault); a seed's: its faults, in order
    model: dict[str, Any] | None = None
    real: dict[str, Any] | None = None
    not_applicable: str | None = None
    seconds: float = 0.0
    kills: int = 0
    freezes: int = 0
    model_history: History | None = field(default=None, repr=False)
    real_history: History | None = field(default=None, repr=False)
    failed: str | None = None  # the real run failed or hung: a disagreement, with its partial history
    seed: int | None = None  # a fuzzed fault list's seed (None: a cell of the cruel grid)
    events: tuple[Any, ...] = field(default=(), repr=False)  # the model's fault events the run played
    struck: int = 0  # how many of the faults struck on the real runtime
    unplayed: tuple[str, ...] = ()  # faults the model never fired and the harness cannot express: left out
    shrunk_to: "CellComparison | None" = field(default=None, repr=False)  # a seed's disagreement, shrunk
    harness_error: str | None = None  # the infrastructure failed: the run could not be judged
    not_played: str | None = None  # no fault was played, or none struck: nothing to judge the fault by
    task: str | None = None  # the workload's task and its [arguments.T]: what explains a fingerprint difference
    arguments: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    kept: str | None = None  # where the real run's folder was kept (--keep-runs)

    @property
    def name(self) -> str:
        """``fault transition boundary`` for a cell, as ``--cell`` takes it; ``seed N`` for a fuzzed list; a
        scenario's faults joined by ``; ``."""
        return cell_name(self.labels) if self.seed is None else f"seed {self.seed}"

    @property
    def applicable(self) -> bool:
        return self.not_applicable is None

    @property
    def judged(self) -> bool:
        """Applicable, and its infrastructure held (the run says something about the runtime)."""
        return self.applicable and self.harness_error is None

    @property
    def agrees(self) -> bool:
        return self.judged and self.not_played is None and self.failed is None and self.model == self.real

    @property
    def disagrees(self) -> bool:
        return self.judged and self.not_played is None and not self.agrees

    @property
    def status(self) -> str:
        if not self.applicable:
            return "not_applicable"
        if self.harness_error is not None:
            return "could_not_judge"
        if self.not_played is not None:
            return "not_played"
        return "agrees" if self.agrees else "disagrees"

    @property
    def violating(self) -> bool:
        """Either side violates a safety invariant (a judged run)."""
        return self.judged and bool((self.model or {}).get("violations") or (self.real or {}).get("violations"))

    def differences(self) -> list[str]:
        if not self.disagrees:
            return []
        if self.failed is not None:
            return [f"the real run failed: {self.failed}"]
        if self.model is None or self.real is None:
            return []
        from sim.real.runtimes.fingerprints import explain

        out = []
        for name in (n for n in OBSERVED if self.model.get(n) != self.real.get(n)):
            if name == "fingerprints":
                out += explain(self.model[name], self.real.get(name, {}), self.task, self.arguments)
            else:
                out.append(f"{name}: model {self.model[name]} / real {self.real.get(name)}")
        return out

    def to_json(self) -> JsonObject:
        out: JsonObject = {"protocol": self.protocol}
        if self.seed is None:
            out["cell"] = self.name
        else:
            out.update(seed=self.seed, faults=list(self.labels))
        out["status"] = self.status
        if not self.applicable:
            out["not_applicable"] = self.not_applicable
            return out
        out.update(agrees=self.agrees, model=self.model, real=self.real, differences=self.differences(),
                   seconds=round(self.seconds, 3), kills=self.kills, freezes=self.freezes)
        if self.harness_error is not None:
            out["could_not_judge"] = self.harness_error
        if self.not_played is not None:
            out["not_played"] = self.not_played
        if self.seed is not None:
            out.update(struck=self.struck, unplayed=list(self.unplayed))
            if self.shrunk_to is not None:
                out["shrunk_to"] = list(self.shrunk_to.labels)
        if self.failed is not None:
            out["failed"] = self.failed
        if self.kept is not None:
            out["kept"] = self.kept
        return out


def compare_cell(family, workload, protocol, cell, runtime: str = "dbos", command: list[str] | None = None,
                 plant: tuple[str, ...] = (), keep: Path | None = None) -> CellComparison:
    """Play one cruel cell in the model and against the real runtime; compare what both observe."""
    return compare_order(family, workload, protocol, tuple(cell.events), tuple(cell.labels), runtime, command, plant,
                         keep=keep)


def run_folder(keep: Path, protocol: str, name: str) -> Path:
    """A new folder under ``keep`` for one run's folder: ``PROTOCOL__CELL`` (a seed's ``__seed_N``, a scenario's
    ``__ITS_FAULTS``), never one that is there already (a second run of the same cell gets ``-2``)."""
    stem = "__".join(re.sub(r"[^A-Za-z0-9]+", "_", part).strip("_").lower()[:100] or "run"
                     for part in (protocol, name))
    folder, number = keep / stem, 1
    while folder.exists() or folder.is_symlink():
        number += 1
        folder = keep / f"{stem}-{number}"
    return folder


def compare_order(family, workload, protocol, events: Sequence[Any], labels: tuple[str, ...],
                  runtime: str = "dbos", command: list[str] | None = None, plant: tuple[str, ...] = (),
                  seed: int | None = None, keep: Path | None = None) -> CellComparison:
    """Play a list of fault events (a cell's one, or a seed's) in the model and on the real runtime; ``keep``:
    a folder under which the real run's folder is kept (:func:`run_folder`)."""
    from sim.real.runtimes.cells import expressible
    from sim.real.runtimes.harness import HarnessError, NotApplicable, RealEffectsError, run_real_effects

    result = CellComparison(protocol.label, labels, seed=seed, events=tuple(events), task=workload.base.task,
                            arguments=dict(getattr(workload.base, "arguments", None) or {}))
    model_run = family.replay(workload.base, protocol, list(events))
    result.model_history = model_run.history
    result.model = observe(family, model_run.history)
    # A fault the model never fired changed nothing there; one the harness cannot express is left out of the
    # real run (listed as unplayed), rather than making the whole list not applicable.
    played = [e for i, e in enumerate(events) if i not in model_run.skipped or expressible(e.fault, runtime)]
    result.unplayed = tuple(str(e) for e in events if e not in played)
    if events and not played:  # e.g. a retry_changed cell: the model never fired it, the harness cannot play it
        result.not_played = (f"no fault was played: the model never fired {', '.join(result.unplayed)} and the "
                             f"harness cannot express it, so a healthy run would prove nothing about it")
        return result
    started = time.monotonic()
    folder = None if keep is None else run_folder(keep, protocol.label, result.name)
    try:
        real = run_real_effects(workload.base.workflow, protocol, [_fault_text(e) for e in played],
                                runtime=runtime, command=command, task=workload.base.task, plant=plant,
                                arguments=getattr(workload.base, "arguments", None), keep=folder)
    except NotApplicable as reason:
        result.not_applicable = str(reason)
        return result
    except HarnessError as error:
        result.seconds = time.monotonic() - started
        result.harness_error, result.real_history = f"could not judge: {error}", error.history
        result.kills, result.freezes = error.kills, error.freezes
        return result
    except RealEffectsError as error:
        result.seconds = time.monotonic() - started
        result.failed, result.real_history = str(error), getattr(error, "history", None)
        result.kills, result.freezes = error.kills, error.freezes
        return result
    finally:
        result.kept = str(folder) if folder is not None and folder.is_dir() else None
    result.seconds = time.monotonic() - started
    result.kills, result.freezes, result.real_history = real.kills, real.freezes, real.history
    result.struck = real.struck
    result.real = observe(family, real.history)
    if played and real.struck == 0 and result.model == result.real:
        # Its point was never reached on the runtime: the run was healthy, which proves nothing about the fault.
        # (Had the sides differed, that would be a disagreement: the fault struck in the model, say.)
        result.not_played = "no fault of the list struck on the runtime (its point was never reached)"
    return result


def _fault_text(event: Any) -> str:
    """A model fault event (``fault``, ``transition``, ``point``) as the harness writes it."""
    return f"{event.fault} {event.transition} {event.point}"


@dataclass
class ConformTable:
    """Every cell compared, per protocol: runs, agreeing, disagreeing, not played, not applicable, could not
    judge, real kills, wall time."""

    runtime: str
    cells: list[CellComparison] = field(default_factory=list)
    unit: str = "cells"  # or "seeds": fuzzed fault lists
    shrunk: list[dict[str, Any]] = field(default_factory=list)  # each disagreement of a seed, shrunk

    def by_protocol(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for cell in self.cells:
            row = out.setdefault(cell.protocol, {self.unit: 0, "applicable": 0, "agreeing": 0, "disagreeing": 0,
                                                 "not_played": 0, "not_applicable": 0, "could_not_judge": 0,
                                                 "violating_model": 0, "violating_real": 0, "kills": 0,
                                                 "freezes": 0, "seconds": 0.0})
            row[self.unit] += 1
            status = cell.status
            row[{"agrees": "agreeing", "disagrees": "disagreeing"}.get(status, status)] += 1
            if cell.applicable:
                row["applicable"] += 1
                row["violating_model"] += bool(cell.judged and (cell.model or {}).get("violations"))
                row["violating_real"] += bool(cell.judged and (cell.real or {}).get("violations"))
                row["kills"] += cell.kills  # a failed or unjudged run's kills happened too
                row["freezes"] += cell.freezes
                row["seconds"] = round(row["seconds"] + cell.seconds, 3)
        return out

    @property
    def disagreements(self) -> list[CellComparison]:
        return [c for c in self.cells if c.disagrees]

    @property
    def unjudged(self) -> list[CellComparison]:
        """The runs whose infrastructure failed (could not judge)."""
        return [c for c in self.cells if c.status == "could_not_judge"]

    def to_json(self) -> JsonObject:
        return {"runtime": self.runtime, "unit": self.unit, "by_protocol": self.by_protocol(),
                "disagreements": [c.to_json() for c in self.disagreements],
                "could_not_judge": [c.to_json() for c in self.unjudged], "shrunk": self.shrunk,
                "not_applicable": sorted({(c.protocol, c.not_applicable) for c in self.cells if not c.applicable}),
                "not_applicable_cells": [{"protocol": c.protocol, "cell": c.name, "reason": c.not_applicable}
                                         for c in self.cells if not c.applicable],
                "violating_cells": [{"protocol": c.protocol, "cell": c.name,
                                     "model": (c.model or {}).get("violations", []),
                                     "real": (c.real or {}).get("violations", [])}
                                    for c in self.cells if c.violating],
                "cells": [c.to_json() for c in self.cells]}


def conform_cells(family, workload, protocols: Sequence[Any], runtime: str = "dbos",
                  command: list[str] | None = None, only: Callable[[Any], bool] | None = None,
                  progress: Callable[[int, int, str], None] | None = None, deadline=None,
                  plant: tuple[str, ...] = (), keep: Path | None = None) -> ConformTable:
    """Every cruel cell of the workload under every protocol (``only`` picks cells), in grid order; ``keep``:
    where each run's folder is kept."""
    cells = [c for c in family.single_faults(workload) if only is None or only(c)]
    table = ConformTable(runtime)
    total = len(cells) * len(protocols)
    for p_index, protocol in enumerate(protocols):
        for c_index, cell in enumerate(cells):
            if deadline is not None and deadline.expired():
                deadline.note("conform")
                return table
            if progress is not None:
                progress(p_index * len(cells) + c_index, total, f"{protocol.label}: {cell_name(cell.labels)}")
            table.cells.append(compare_cell(family, workload, protocol, cell, runtime, command, plant, keep))
    return table


def conform_seeds(family, workload, protocols: Sequence[Any], seeds: Sequence[int], runtime: str = "dbos",
                  command: list[str] | None = None, progress: Callable[[int, int, str], None] | None = None,
                  plant: tuple[str, ...] = (), keep: Path | None = None) -> ConformTable:
    """Each seed's fuzzed fault list (``family.generate``: the lists ``fencesim fuzz`` draws) under every
    protocol, in the model and on the real runtime, compared as the cells are (``keep``: as the cells')."""
    table = ConformTable(runtime, unit="seeds")
    total = len(seeds) * len(protocols)
    for p_index, protocol in enumerate(protocols):
        for s_index, seed in enumerate(seeds):
            events = tuple(family.generate(workload, seed))
            if progress is not None:
                progress(p_index * len(seeds) + s_index, total, f"{protocol.label}: seed {seed}")
            table.cells.append(compare_order(family, workload, protocol, events, tuple(str(e) for e in events),
                                             runtime, command, plant, seed=seed, keep=keep))
    return table
