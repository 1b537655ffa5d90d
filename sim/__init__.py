"""fencesim: a deterministic fault-injection simulator and counterexample
finder for the protocols that apply coding-agent work.

The Python API (the command line is a thin face over the same functions):

>>> import sim
>>> scenario = sim.load_scenario("scenarios/seed/concurrent_edit.toml")  # doctest: +SKIP
>>> result = sim.run_scenario(scenario, "none")                          # doctest: +SKIP
>>> result.outcome, [v.invariant for v in result.violations]             # doctest: +SKIP
('applied', ['lost_update'])
"""

from sim.errors import FencesimError, InputError, ProtocolError, ScenarioError
from sim.history import Event, History
from sim.protocol import Protocol, WORKSPACE_PRESETS, parse_protocol, presets
from sim.replay import replay, run_scenario
from sim.scenario import Action, WorkspaceScenario, load_scenario, parse_action

PRESETS = presets("workspace")

__all__ = [
    "Action", "Event", "FencesimError", "History", "InputError", "PRESETS", "Protocol", "ProtocolError",
    "ScenarioError", "WORKSPACE_PRESETS", "WorkspaceScenario", "compute_matrix", "check_history",
    "load_scenario", "parse_action", "parse_protocol", "presets", "replay", "run_scenario",
]


def compute_matrix():
    """The seed's verdict table from the model, the seed code's answers and their differences."""
    from sim.matrix import compute_matrix as _compute

    return _compute()


def check_history(history, family: str = "workspace"):
    """Run a family's checks over a History (or a path to JSON lines); returns a CheckReport."""
    from sim.checks.base import run_checks

    if not isinstance(history, History):
        history = History.read(history)
    if family == "runtime":
        from sim.runtime import RUNTIME_CHECKS as specs
    else:
        from sim.checks.workspace import WORKSPACE_CHECKS as specs
    return run_checks(specs, history)
