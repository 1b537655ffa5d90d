"""The runtime family: durable keyed effects of long-running agent tasks (seed 004).

Importing this package registers the family's knob table and presets with
:mod:`sim.protocol`.  The public surface:

* :func:`load_runtime_scenario`, :func:`run_runtime_scenario` -- scripted stories;
* :data:`RUNTIME_CHECKS` -- the invariants, pure functions over a history;
* :mod:`sim.runtime.cruel` -- the seed's "deliberately cruel" grid;
* :mod:`sim.runtime.exposure` -- the worked example's arithmetic and its simulation.
"""

from sim.runtime.protocol import RUNTIME, RUNTIME_PRESETS, parse_runtime_protocol  # noqa: F401  (registers)
from sim.checks.runtime import RUNTIME_CHECKS  # noqa: E402
from sim.runtime.scenario import RuntimeScenario, load_runtime_scenario  # noqa: E402
from sim.runtime.runner import run_runtime_scenario, run_autonomous  # noqa: E402

__all__ = [
    "RUNTIME",
    "RUNTIME_PRESETS",
    "RUNTIME_CHECKS",
    "RuntimeScenario",
    "load_runtime_scenario",
    "parse_runtime_protocol",
    "run_runtime_scenario",
    "run_autonomous",
]
