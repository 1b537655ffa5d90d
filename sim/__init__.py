"""fencesim: a deterministic fault-injection simulator and counterexample
finder for the protocols that apply coding-agent work.

The Python API (the command line is a thin face over the same functions):

>>> import sim
>>> scenario = sim.load_scenario("scenarios/seed/concurrent_edit.toml")  # doctest: +SKIP
>>> result = sim.run_scenario(scenario, "none")                          # doctest: +SKIP
>>> result.outcome, [v.invariant for v in result.violations]             # doctest: +SKIP
('applied', ['lost_update'])
>>> df = sim.sweep_frame("seed-fuzz", ["none", "step-dedupe"], seeds=200)  # doctest: +SKIP

Families (``sim.FAMILIES``): ``workspace`` (revision-fenced steps, the
default) and ``effects`` (durable keyed effects).  :mod:`sim.figures` draws
every figure of a review from a sweep frame, a fuzz result or a review.
"""

from __future__ import annotations

from typing import Any

from sim.core.errors import FencesimError, HistoryError, InputError, ProtocolError, ScenarioError
from sim.core.history import Event, History
from sim.core.knobs import Protocol

__all__ = [
    "Event", "FAMILIES", "FencesimError", "History", "HistoryError", "InputError", "PRESETS", "Protocol",
    "ProtocolError", "ScenarioError", "check_history", "compute_matrix", "conform_frame", "exposure_frame", "family",
    "figures",
    "fuzz", "load_scenario", "load_workload", "parse_protocol", "review", "run_scenario", "serve", "state_html",
    "sweep_frame", "triage_frame",
]


def __getattr__(name: str) -> Any:
    if name == "FAMILIES":
        from sim.registry import FAMILIES

        return FAMILIES
    if name == "PRESETS":
        return family("workspace").knobs.preset_protocols()
    if name == "figures":
        import importlib

        return importlib.import_module("sim.app.notebook_figures")
    raise AttributeError(f"module 'sim' has no attribute {name!r}")


def family(name: str):
    """A family by name (``workspace``, ``effects``)."""
    from sim.registry import FAMILIES

    return FAMILIES.get(name)


def parse_protocol(text: str, family_name: str = "workspace") -> Protocol:
    """``parse_protocol("step-dedupe,journal_write=after_write")`` -> a Protocol of that family."""
    return family(family_name).parse_protocol(text)


def load_scenario(path) -> Any:
    """Load a scenario file of any family (its ``family`` key says which)."""
    from sim.registry import FAMILIES

    return FAMILIES.load_scenario(path)


def load_workload(name_or_path: str) -> Any:
    """Load a fuzzing workload by name (``scenarios/workloads/NAME.toml``) or path."""
    from sim.registry import FAMILIES

    return FAMILIES.load_workload(name_or_path)


def run_scenario(scenario, protocol: Protocol | str | None = None):
    """Replay a scenario (an object or a path) under a protocol; return a RunResult."""
    from sim.core.result import run_scenario as run
    from sim.registry import FAMILIES

    if not hasattr(scenario, "events"):
        scenario = FAMILIES.load_scenario(scenario)
    return run(FAMILIES.family_for(scenario), scenario, protocol)


def sweep_frame(workload, protocols, seeds: int, seed_start: int = 0, workers: int | None = None):
    """A sweep as a pandas DataFrame, one row per (seed, protocol)."""
    from sim.registry import FAMILIES
    from sim.search.sweep import sweep_frame as frame

    if isinstance(workload, str):
        workload = FAMILIES.load_workload(workload)
    return frame(FAMILIES.family_for(workload), workload, list(protocols), seeds, seed_start, workers)


def exposure_frame(workload=None, protocols=None, tasks: int | None = None, seeds: int = 2_000, seed: int = 0):
    """Simulated exposure (``fencesim exposure --simulate``) as a long DataFrame (preset, metric, value, ci_low,
    ci_high), scaled to ``tasks`` tasks (default: the workload's ``[telemetry]`` tasks_per_month, else 10,000):
    of an effects workload's own workflow (a name or file; at the rates of its ``[telemetry]`` when it has
    one), or without one of the seed's worked example (generic:7)."""
    from sim.families.effects.exposure import simulated_table
    from sim.families.effects.exposure_workflow import telemetry_tasks
    from sim.registry import FAMILIES

    base, loaded = None, None
    if workload is not None:
        loaded = FAMILIES.load_workload(workload) if isinstance(workload, str) else workload
        if FAMILIES.family_for(loaded).name != "effects":
            raise InputError(f"exposure_frame needs an effects workload, not a {FAMILIES.family_for(loaded).name} one")
        base = loaded.base
    telemetry = (loaded.telemetry if loaded is not None else None) or {}
    tasks = tasks or telemetry_tasks(telemetry) or 10_000
    options: dict[str, Any] = {"presets": list(protocols) if protocols else None, "seeds": seeds, "tasks": tasks,
                               "master_seed": seed}
    if base is not None:
        options.update(workflow=base.workflow, arguments=base.arguments,
                       transitions=len(base.workflow.side_effecting()))
        if telemetry:  # the rates measured in production, as ``fencesim exposure --workload`` takes them
            from sim.families.effects.exposure_draws import ExposureRates

            default = ExposureRates()
            options["rates"] = ExposureRates(
                telemetry.get("ambiguous_share", default.ambiguous_rate),
                telemetry.get("committed_share", default.committed_rate),
                telemetry.get("reconciled_share", default.reconcile_rate),
                telemetry.get("worker_loss_share", default.worker_loss_share))
    return simulated_table(**options)


def conform_frame(workload, protocols=("step-dedupe",), seeds: int = 50, seed_start: int = 0, workers: int = 1,
                  executor: str | None = None):
    """Model versus the real executor (``fencesim conform``) as a pandas DataFrame, one row per (protocol,
    seed): deliveries compared and agreeing, each side's violations, real crashes, seconds, differences.
    ``executor``: a command line for your own executor (default: the reference git + SQLite one)."""
    import pandas as pd

    from sim.real.conform import run_seeds
    from sim.real.driver import parse_command
    from sim.registry import FAMILIES

    if isinstance(workload, str):
        workload = FAMILIES.load_workload(workload)
    family = FAMILIES.family_for(workload)
    if family.name != "workspace":
        raise InputError(f"conform drives a real executor of the workspace family, not {family.name}")
    parsed = [family.parse_protocol(p) for p in ([protocols] if isinstance(protocols, str) else protocols)]
    results = run_seeds(family, workload, parsed, list(range(seed_start, seed_start + seeds)), workers,
                        parse_command(executor))
    rows = [dict(r.__dict__, agree=r.agree, differences="; ".join(r.differences)) for p in parsed
            for r in results[p.label]]
    return pd.DataFrame(rows)


def fuzz(workload, protocols, seeds: int = 1000, seed_start: int = 0, workers: int | None = None,
         advise: bool = True):
    """Sweep, shrink and advise (no files written); returns a FuzzResult."""
    from sim.registry import FAMILIES
    from sim.search.options import SearchOptions
    from sim.search.pipeline import fuzz as run

    if isinstance(workload, str):
        workload = FAMILIES.load_workload(workload)
    return run(FAMILIES.family_for(workload), workload, list(protocols),
               SearchOptions(seeds, seed_start, workers, advise=advise))


def review(designs=None, seeds: int | None = None, budget_s: float | None = None, workers: int | None = None):
    """A design review (``ReviewResult``): ``designs``, one ``DesignReview`` each -- its ``row`` (a typed
    :class:`~sim.report.results.DesignRow`: ``row.protocols``, ``row.counterexamples``, ``row.matrix``...; its
    ``to_json()`` is its entry of ``results.json``), the family and workload it ran on and its counterexamples'
    runs, which :mod:`sim.figures` draws from; ``to_json()`` is what ``fencesim review`` writes as
    ``results.json`` (without the folder's meta).  ``designs``: design files (default: the seeds' designs).

    >>> results = sim.review(seeds=200)                     # doctest: +SKIP
    >>> [d.name for d in results.designs]                   # doctest: +SKIP
    ['seed-fuzz', 'effects-saga']
    """
    from sim.app.designs import default_designs, load_design
    from sim.app.reviewing import run_review

    if isinstance(designs, (str, bytes)) or hasattr(designs, "__fspath__"):
        designs = [designs]
    chosen = [load_design(path, seeds) for path in designs] if designs else default_designs(seeds)
    return run_review(chosen, budget_s, workers)


def triage_frame(review):
    """The triage of a review as a pandas DataFrame: per design, its findings ranked by expected incidents x
    blast radius, one row each (design, rank, finding, protocol, counterexample, rate, rate_source,
    rate_detail, blast, blast_source, score).  ``review``: what :func:`review` returns, a ``results.json``
    document, or the path of a ``results.json`` or of the report folder holding it.

    >>> sim.triage_frame(sim.review("scenarios/designs/usage-charge.toml", seeds=40))   # doctest: +SKIP
    """
    from pathlib import Path

    from sim.report.results import ReviewDocument, read_results
    from sim.report.triage import triage_frame as frame

    if isinstance(review, (str, Path)):
        designs = read_results(review).designs
    elif isinstance(review, dict):
        designs = ReviewDocument.from_json(review, "the review").designs
    else:
        designs = tuple(design.row for design in review.designs)
    return frame(designs)


def check_history(history, family_name: str | None = None):
    """Run a family's checks over a History (or a path to JSON lines); returns a CheckReport."""
    from sim.registry import FAMILIES

    if not isinstance(history, History):
        history = History.read(history)
    chosen = FAMILIES.get(family_name) if family_name else FAMILIES.infer_history_family(history)
    return chosen.check(history)


def compute_matrix():
    """The seed's verdict table from the model, the seed code's answers and their differences."""
    from sim.families.workspace.matrix import compute_matrix as compute

    return compute()


def serve(design=None, workload=None, protocols=(), scenarios=(), review=None, port: int = 0, out=None):
    """Start the explorer of ``fencesim serve`` in the background (on 127.0.0.1; ``port`` 0: a free one) and
    return it: ``.url`` to open, ``.stop()`` to end it.  The arguments are the command's options (``scenarios``
    a list of files; ``out`` the folder "export this path" writes into; without it nothing is written).

    >>> app = sim.serve(scenarios=["scenarios/regressions/seed_fuzz_none_lost_update.toml"])  # doctest: +SKIP
    >>> app.url                                                                                # doctest: +SKIP
    'http://127.0.0.1:41771/'
    """
    from pathlib import Path

    from sim.app.serving import explorer_for
    from sim.report.outputs import check_output_dir
    from sim.webapp.server import Running

    if out is not None:
        check_output_dir(out, "out")
    if isinstance(scenarios, (str, bytes)) or hasattr(scenarios, "__fspath__"):
        scenarios = [scenarios]
    if isinstance(protocols, str):
        protocols = [protocols]
    explorer = explorer_for(design, workload, list(protocols), list(scenarios), review)
    return Running(explorer, Path(out) if out is not None else None, port)


class StateHTML(str):
    """HTML text that a notebook shows as HTML."""

    def _repr_html_(self) -> str:
        return str(self)


def state_html(scenario, protocol: Protocol | str | None = None, events=None) -> StateHTML:
    """The state a run ends in, as the explorer's HTML tables: ``scenario`` (a loaded scenario or a path) replayed
    under ``protocol`` (default: its own, else its family's default), through ``events`` (default: its own; event
    texts or events).

    >>> sim.state_html("scenarios/seed/concurrent_edit.toml", "none")                # doctest: +SKIP
    """
    from sim.registry import FAMILIES
    from sim.webapp.pages import state_html as render

    if isinstance(scenario, (str, bytes)) or hasattr(scenario, "__fspath__"):
        scenario = FAMILIES.load_scenario(scenario)
    chosen = FAMILIES.family_for(scenario)
    parsed = chosen.parse_protocol(protocol or scenario.protocol or chosen.default_protocol)
    order = None if events is None else [chosen.parse_event(scenario, e) if isinstance(e, str) else e
                                         for e in events]
    replay = chosen.replay(scenario, parsed, order)
    return StateHTML(render(chosen.state_tables(scenario, parsed, replay)))
