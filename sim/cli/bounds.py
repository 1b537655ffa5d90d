"""The bound of every numeric option of every command, enforced before the command runs.

One table, read by the command line when it builds its commands (:func:`sim.cli.app._main`): a value outside
its bound, ``nan`` or an infinity is a usage error (exit 4, one line naming the option and its range) before
any work -- a pool of 100,000 worker processes, ``list(range(2**63))`` or a simulation of a billion tasks
never starts.  A test keeps the table complete (every int or float option of every command is in it) and
``docs/limits.md`` in step with it.

Where a search module already names a limit (``MAX_SEEDS``, ``MAP_DEPTH_MAX``...) the bound is that constant:
declared once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

#: Worker processes of any command: past this a machine gains nothing and a process limit is met.
WORKERS_MAX = 64
#: Wall-clock seconds of a budget (about 115 days): past this a budget bounds nothing.
BUDGET_MAX_S = 10_000_000.0
#: Real runs of one ``conform`` (each is a real executor's run).
CONFORM_SEEDS_MAX = 100_000
#: The first seed of a sweep: seed_start + seeds stays within 64 bits.
SEED_START_MAX = 2 ** 62
#: Tasks of the analytic exposure (arithmetic only) and simulated tasks of ``exposure --simulate``.
EXPOSURE_TASKS_MAX = 10 ** 12
EXPOSURE_SIMULATED_TASKS_MAX = 1_000_000
#: The longest bound of ``certify --max-events`` (each event multiplies the states searched).
CERTIFY_DEPTH_MAX = 12


@dataclass(frozen=True)
class Bound:
    """The range an option's value must fall in (both ends included; ``above_low``: the low end excluded)."""

    low: float
    high: float
    above_low: bool = False

    def problem(self, value: float) -> str | None:
        if isinstance(value, float) and not math.isfinite(value):
            return f"{value} is not a finite number"
        if value > self.high or value < self.low or (self.above_low and value == self.low):
            if self.above_low:
                return (f"{_number(value)} is out of range: more than {_number(self.low)} and at most "
                        f"{_number(self.high)}")
            return f"{_number(value)} is out of range: from {_number(self.low)} to {_number(self.high)}"
        return None


def _number(value: float) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        value = int(value)
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


_WORKERS, _BUDGET, _SEED_START = Bound(1, WORKERS_MAX), Bound(0, BUDGET_MAX_S, above_low=True), Bound(0, SEED_START_MAX)


def _conform() -> dict[str, Bound]:
    from sim.real.conform import CONFORM_SHRINK_SECONDS_MAX

    return {"--seeds": Bound(1, CONFORM_SEEDS_MAX), "--seed-start": _SEED_START, "--workers": _WORKERS,
            "--shrink-seconds": Bound(0, CONFORM_SHRINK_SECONDS_MAX, above_low=True)}


def _exposure() -> dict[str, Bound]:
    from sim.families.effects.workflow import MAX_TRANSITIONS

    return {"--tasks": Bound(1, EXPOSURE_TASKS_MAX), "--transitions": Bound(1, MAX_TRANSITIONS),
            "--seeds": Bound(2, EXPOSURE_SIMULATED_TASKS_MAX), "--seed": _SEED_START}


def _explore() -> dict[str, Bound]:
    from sim.search.exhaustive import STATE_LIMIT_MAX
    from sim.search.liveness import MAX_FAULTS_MAX

    return {"--workers": _WORKERS, "--budget": _BUDGET, "--state-limit": Bound(1, STATE_LIMIT_MAX),
            "--memory-limit": Bound(0.05, 4096.0), "--max-faults": Bound(0, MAX_FAULTS_MAX)}


def _fuzz() -> dict[str, Bound]:
    from sim.search.exhaustive import EXHAUSTIVE_DEPTH_MAX
    from sim.search.sweep import MAX_SEEDS

    return {"--seeds": Bound(1, MAX_SEEDS), "--seed-start": _SEED_START, "--workers": _WORKERS, "--budget": _BUDGET,
            "--shrink-seconds": _BUDGET, "--max-events": Bound(1, EXHAUSTIVE_DEPTH_MAX)}


def _incidents() -> dict[str, Bound]:
    from sim.search.incidents import SEEDS_MAX as INCIDENT_SEEDS_MAX

    return {"--plans": Bound(1, EXPOSURE_SIMULATED_TASKS_MAX), "--seeds": Bound(1, INCIDENT_SEEDS_MAX),
            "--seed-start": _SEED_START}


def _review() -> dict[str, Bound]:
    from sim.app.designs import SEEDS_LIMIT

    return {"--budget": _BUDGET, "--seeds": Bound(1, SEEDS_LIMIT), "--workers": _WORKERS}


def _map() -> dict[str, Bound]:
    from sim.app.designs import SEEDS_LIMIT
    from sim.search.lattice import MAP_DEPTH_MAX

    return {"--max-events": Bound(1, MAP_DEPTH_MAX), "--seeds": Bound(0, SEEDS_LIMIT), "--workers": _WORKERS,
            "--budget": _BUDGET}


#: command -> the bounds of its options, built on first use from the limits the search modules name (a command
#: imports the modules of its own limits only).
_BY_COMMAND: dict[str, Callable[[], dict[str, Bound]]] = {
    "conform": _conform, "cruel": lambda: {"--budget": _BUDGET}, "exposure": _exposure, "explore": _explore,
    "fuzz": _fuzz, "incidents": _incidents, "review": _review, "map": _map,
    "certify": lambda: {"--max-events": Bound(1, CERTIFY_DEPTH_MAX), "--budget": _BUDGET},
    "serve": lambda: {"--port": Bound(0, 65535)},
}
_TABLES: dict[str, dict[str, Bound]] = {}


def _of_command(command: str) -> dict[str, Bound]:
    table = _TABLES.get(command)
    if table is None:
        builder = _BY_COMMAND.get(command)
        table = _TABLES[command] = builder() if builder is not None else {}
    return table


def bounds() -> dict[tuple[str, str], Bound]:
    """``(command, option) -> Bound`` for every numeric option (each command's built once: it imports the
    search's limits)."""
    return {(command, option): bound for command in _BY_COMMAND for option, bound in _of_command(command).items()}


def numeric(param: Any) -> bool:
    """Whether a Typer parameter takes an int or a float."""
    return getattr(getattr(param, "type_descriptor", None), "annotation", None) in (int, float)


def bound_of(command: str, param: Any) -> Bound | None:
    """The bound of one option of one command (its longest name, as the table keys it)."""
    table = _of_command(command)
    for name in getattr(param, "opts", ()):
        found = table.get(name)
        if found is not None:
            return found
    return None


def checked(process_value: Callable, bound: Callable[[], Bound | None], param: Any,
            error: Callable[..., Exception]) -> Callable:
    """``process_value`` of a numeric option, refusing (``error``: the command line's usage error) a value
    outside the bound ``bound()`` gives -- asked only when a value comes, so ``--help`` never imports the search
    modules that name the limits -- or nan and infinities where no bound is known."""

    def process(ctx, value):
        number = process_value(ctx, value)
        if isinstance(number, (int, float)) and not isinstance(number, bool):
            limit = bound()
            problem = limit.problem(number) if limit is not None else Bound(-math.inf, math.inf).problem(number)
            if problem:
                raise error(problem, ctx=ctx, param=param)
        return number

    return process
