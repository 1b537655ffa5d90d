"""The registry of families: explicit, built by whoever assembles the program.

No family registers itself on import.  The program's registry
(:mod:`sim.registry`) lists the shipped families in one place; a test or a
user can build another with their own family added.  Files name their
family (``family = "effects"``); a file without one is the registry's
default family.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from sim.core.coverage import parse_coverage
from sim.core.errors import HistoryError, ScenarioError
from sim.core.family import Family
from sim.core.files import Source, read_toml
from sim.core.history import invalid_lines
from sim.core.reconcile import contradicted, reconcile
from sim.core.schema import HistorySchema, validate
from sim.core.values import JsonObject, shown
from sim.core.workload import Workload, did_you_mean, parse_telemetry, resolve_workload

#: Keys only a design file has, and keys only a workload has (``[faults]`` as a table, ``[limits]``).
DESIGN_KEYS = ("protocols", "scenarios", "seeds")
WORKLOAD_TABLES = ("faults", "limits")


def file_kind(data: JsonObject) -> str:
    """``design``, ``workload`` or ``scenario``: what a parsed TOML file is, by the keys only that kind has."""
    if any(key in data for key in DESIGN_KEYS) or isinstance(data.get("workload"), dict):
        return "design"
    if isinstance(data.get("faults"), dict) or isinstance(data.get("limits"), dict):
        return "workload"
    return "scenario"


#: What to do with each kind of file (the command that reads it).
USE = {"design": "review it with 'fencesim review --design {path}'",
       "workload": "fuzz it with 'fencesim fuzz --workload {path}' (or name it in a design's workload key)",
       "scenario": "replay it with 'fencesim run {path}'"}


def other_file_kind(data: JsonObject, source: Source, expected: str) -> ScenarioError | None:
    """The error for a file of another kind than ``expected`` (a design given where a workload is
    expected...), naming the key that tells, or None."""
    found = file_kind(data)
    if found == expected or (expected == "workload" and found == "scenario"):
        return None  # a scenario's keys are a workload's: the workload loader says what is missing
    tell = next((k for k in (*DESIGN_KEYS, "workload", *WORKLOAD_TABLES) if k in data), None)
    return source.error(f"this is a {found} file, not a {expected} ('{tell}' is a {found}'s key): "
                        f"{USE[found].format(path=source.path)}", tell)


class Registry:
    """Families by name and alias; the first one is the default for files that name none.

    ``schemas`` gives a family's :class:`~sim.core.schema.HistorySchema` by family name, for families
    that do not declare one as ``history_schema`` themselves.
    """

    def __init__(self, families: Iterable[Family], schemas: Mapping[str, HistorySchema] | None = None):
        self.families: tuple[Family, ...] = tuple(families)
        self._schemas = dict(schemas or {})
        self._by_name: dict[str, Family] = {}
        for family in self.families:
            for name in (family.name, *family.aliases):
                if name in self._by_name:
                    raise ValueError(f"two families are called {name!r}")
                self._by_name[name] = family

    def with_family(self, family: Family) -> "Registry":
        return Registry((*self.families, family), self._schemas)

    @property
    def default(self) -> Family:
        return self.families[0]

    def names(self) -> list[str]:
        return [f.name for f in self.families]

    def get(self, name: object) -> Family:
        if not isinstance(name, str) or name not in self._by_name:
            guess = did_you_mean(name, self._by_name) if isinstance(name, str) else ""
            hint = "" if isinstance(name, str) else " (a family is named by a string)"
            raise ScenarioError(f"unknown family {shown(name)}{guess}{hint}; families: {', '.join(self.names())}")
        return self._by_name[name]

    def family_of(self, data: JsonObject, source: Source) -> Family:
        name = data.get("family", self.default.name)
        try:
            return self.get(name)
        except ScenarioError as error:
            raise source.error(error.message, "family") from None

    def load_scenario(self, path) -> Any:
        """Load a scenario file of any registered family."""
        data, source = read_toml(path, "scenario file")
        wrong = other_file_kind(data, source, "scenario")
        if wrong:
            raise wrong
        return self.family_of(data, source).load_scenario(data, source)

    def load_workload(self, name_or_path: str) -> Workload:
        """Load a workload by name (``scenarios/workloads/NAME.toml``) or path."""
        data, source = read_toml(resolve_workload(name_or_path), "workload file")
        wrong = other_file_kind(data, source, "workload")
        if wrong:
            raise wrong
        return self.workload_from(data, source)

    def workload_from(self, data: JsonObject, source: Source) -> Workload:
        """A workload from a parsed table: its family reads the rest, the registry reads ``[coverage]``."""
        data = dict(data)
        goals = parse_coverage(data.pop("coverage"), source) if "coverage" in data else ()
        telemetry = data.pop("telemetry", None)
        workload = self.family_of(data, source).load_workload(data, source)
        workload.coverage = goals
        if telemetry is not None:
            workload.telemetry = parse_telemetry(telemetry, workload, source)
        return workload

    def family_for(self, thing: Any) -> Family:
        """The family of a scenario or workload object (by its ``family`` attribute)."""
        return self.get(getattr(thing, "family", self.default.name))

    def history_family(self, history, name: str | None) -> Family:
        """The family to judge a history: the one named (refused if the events are another family's), else
        the one whose event names the history uses."""
        if name is None:
            return self.infer_history_family(history)
        chosen = self.get(name)
        names = [e.event for e in history]
        own = sum(1 for n in names if n in chosen.history_events)
        others = [(sum(1 for n in names if n in f.history_events), f.name) for f in self.families if f is not chosen]
        best = max(others, default=(0, ""))
        if own == 0 and best[0] > 0:
            raise HistoryError(f"this history's events are those of the {best[1]} family; the {chosen.name} "
                               f"family's checks cannot judge it (give --family {best[1]}, or leave it out)")
        return chosen

    def infer_history_family(self, history) -> Family:
        """The family whose event names the history uses most; refuse a history no family claims."""
        names = [e.event for e in history]
        scores = sorted(((sum(1 for n in names if n in f.history_events), i) for i, f in enumerate(self.families)),
                        reverse=True)
        best, index = scores[0]
        if best == 0 or (len(scores) > 1 and scores[1][0] == best):
            raise HistoryError("cannot tell which family wrote this history (its event names match none, or "
                               f"several equally); give --family ({', '.join(self.names())})")
        return self.families[index]

    # -- reading a history ----------------------------------------------------------------------------

    def schema(self, family: Family) -> HistorySchema:
        return self._schemas.get(family.name) or HistorySchema.of(family)

    def history_problems(self, history, family: Family) -> list[tuple[int, str]]:
        """``(line, what is wrong)`` for every event the family cannot judge: an unknown event name or one
        of another family, a value or shape the family never records, a field of the wrong type."""
        foreign = {name: other.name for other in self.families if other is not family
                   for name in self.schema(other).events}
        problems = validate(history, family.name, self.schema(family), foreign)
        positions = {event.index: position for position, event in enumerate(history)}
        named = {line for line, _ in problems}  # a line the schema already refused is not told twice
        problems += [(line, text) for line, text in ((history.line_of(positions.get(index, 0)), text)
                                                     for index, text in family.validate_history(history))
                     if line not in named]
        return sorted(problems, key=lambda problem: problem[0])

    def judge_history(self, history, name: str | None = None, where: str = "history"):
        """``(family, CheckReport)``: the family's checks over a history it can judge; a history holding
        what the family never records is refused (HistoryError naming each line), never passed."""
        family = self.history_family(history, name)
        problems = self.history_problems(history, family)
        if problems:
            raise invalid_lines(where, problems)
        contradictions = reconcile(history, self.schema(family).facts)
        if contradictions:
            raise contradicted(where, history, contradictions)
        return family, family.check(history)
