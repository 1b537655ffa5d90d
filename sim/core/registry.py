"""The registry of families: explicit, built by whoever assembles the program.

No family registers itself on import.  The program's registry
(:mod:`sim.registry`) lists the shipped families in one place; a test or a
user can build another with their own family added.  Files name their
family (``family = "runtime"``); a file without one is the registry's
default family.
"""

from __future__ import annotations

from typing import Any, Iterable

from sim.core.errors import HistoryError, ScenarioError
from sim.core.family import Family
from sim.core.files import Source, read_toml
from sim.core.workload import Workload, did_you_mean, resolve_workload


class Registry:
    """Families by name and alias; the first one is the default for files that name none."""

    def __init__(self, families: Iterable[Family]):
        self.families: tuple[Family, ...] = tuple(families)
        self._by_name: dict[str, Family] = {}
        for family in self.families:
            for name in (family.name, *family.aliases):
                if name in self._by_name:
                    raise ValueError(f"two families are called {name!r}")
                self._by_name[name] = family

    def with_family(self, family: Family) -> "Registry":
        return Registry((*self.families, family))

    @property
    def default(self) -> Family:
        return self.families[0]

    def names(self) -> list[str]:
        return [f.name for f in self.families]

    def get(self, name: str) -> Family:
        if not isinstance(name, str) or name not in self._by_name:
            raise ScenarioError(f"unknown family {name!r}{did_you_mean(name, self._by_name)}; "
                                f"families: {', '.join(self.names())}")
        return self._by_name[name]

    def family_of(self, data: dict[str, Any], source: Source) -> Family:
        name = data.get("family", self.default.name)
        try:
            return self.get(name)
        except ScenarioError as error:
            raise source.error(error.message, "family") from None

    def load_scenario(self, path) -> Any:
        """Load a scenario file of any registered family."""
        data, source = read_toml(path, "scenario file")
        return self.family_of(data, source).load_scenario(data, source)

    def load_workload(self, name_or_path: str) -> Workload:
        """Load a workload by name (``scenarios/workloads/NAME.toml``) or path."""
        data, source = read_toml(resolve_workload(name_or_path), "workload file")
        return self.family_of(data, source).load_workload(data, source)

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
