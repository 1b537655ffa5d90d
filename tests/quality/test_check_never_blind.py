"""``fencesim check`` never passes a history it cannot judge.

Generators for the six kinds of history that used to pass (exit 0): a key twice in one JSON object, a
verdict or outcome no model records, a misspelt event name, events of two families in one history,
indices out of order, and a task recorded ``succeeded`` after one of its transitions failed.  Each is
drawn from recorded histories at random places; each must be refused (HistoryError, exit 4) or judged
with at least one check ``not_evaluable`` or violated -- never all ``ok``.

The planted bug: the same kinds read leniently (plain ``json.loads``, no history schema) do pass blind,
so the generators would catch a reader that stopped checking.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.core.checks import OK
from sim.core.errors import HistoryError
from sim.core.history import Event, History
from sim.registry import FAMILIES

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.quality


def _recorded() -> dict[str, list[str]]:
    """JSON lines of violating and clean histories of both families, by family."""
    out: dict[str, list[str]] = {"workspace": [], "effects": []}
    for path in sorted((REPO / "scenarios" / "histories").glob("*.jsonl")):
        out["workspace"].append(path.read_text())
    sources = sorted((REPO / "scenarios" / "regressions").glob("*.toml"))[::3] + sorted(
        (REPO / "scenarios" / "runtime").glob("*.toml"))
    for path in sources:
        scenario = FAMILIES.load_scenario(path)
        family = FAMILIES.family_for(scenario)
        label = scenario.protocol or family.presets[0]
        out[family.name].append(family.replay(scenario, family.parse_protocol(label)).history.to_jsonl())
    return out


RECORDED = _recorded()
OTHER = {"workspace": "effects", "effects": "workspace"}
#: Fields whose values the checks branch on, and a value no model records.
VALUED = {"verdict": "accepted", "outcome": "done", "result": "maybe", "fence": "strict", "dedupe": "disk"}


def _rows(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _lines(rows) -> list[str]:
    return [json.dumps(row) for row in rows]


def duplicated_key(rows, data) -> list[str]:
    lines = _lines(rows)
    i = data.draw(st.integers(0, len(lines) - 1))
    key = data.draw(st.sampled_from(sorted(rows[i])))
    lines[i] = lines[i][:-1] + f', "{key}": {json.dumps(data.draw(st.sampled_from(["x", 0, True])))}}}'
    return lines


def unknown_value(rows, data) -> list[str] | None:
    places = [(i, k) for i, row in enumerate(rows) for k in row if k in VALUED]
    if not places:
        return None
    i, key = data.draw(st.sampled_from(places))
    rows[i][key] = VALUED[key]
    return _lines(rows)


def misspelt_event(rows, data, family) -> list[str]:
    known = FAMILIES.schema(family).events
    i = data.draw(st.integers(0, len(rows) - 1))
    name = rows[i]["event"]
    cut = data.draw(st.integers(0, len(name) - 1))
    rows[i]["event"] = next(v for v in (name[:cut] + name[cut + 1:], name + "s", name[:-1] + "x") if v not in known)
    return _lines(rows)


def mixed_families(rows, data, family) -> list[str]:
    other = _rows(data.draw(st.sampled_from(RECORDED[OTHER[family.name]])))
    foreign = dict(data.draw(st.sampled_from(other)))
    at = data.draw(st.integers(0, len(rows)))
    rows.insert(at, foreign)
    for index, row in enumerate(rows):
        row["index"] = index
    return _lines(rows)


def indices_out_of_order(rows, data) -> list[str] | None:
    if len(rows) < 2:
        return None
    how = data.draw(st.sampled_from(["all_zero", "repeat", "swap"]))
    i = data.draw(st.integers(1, len(rows) - 1))
    if how == "all_zero":
        for row in rows:
            row["index"] = 0
    elif how == "repeat":
        rows[i]["index"] = rows[i - 1]["index"]
    else:
        rows[i]["index"], rows[i - 1]["index"] = rows[i - 1]["index"], rows[i]["index"]
    return _lines(rows)


def succeeded_after_a_failure(rows, data) -> list[str] | None:
    terminals = [i for i, row in enumerate(rows)
                 if row["event"] == "task_terminal" and row.get("outcome") == "succeeded"]
    if not terminals:
        return None
    i = data.draw(st.sampled_from(terminals))
    at = data.draw(st.integers(1, i))
    rows.insert(at, {"index": 0, "time": rows[at - 1]["time"], "actor": "w1", "event": "transition_failed",
                     "task": rows[i]["task"], "transition": data.draw(st.sampled_from(["open_pr", "create_preview"]))})
    for index, row in enumerate(rows):
        row["index"] = index
    return _lines(rows)


KINDS = {
    "duplicated_key": (("workspace", "effects"), lambda rows, data, family: duplicated_key(rows, data)),
    "unknown_value": (("workspace", "effects"), lambda rows, data, family: unknown_value(rows, data)),
    "misspelt_event": (("workspace", "effects"), misspelt_event),
    "mixed_families": (("workspace", "effects"), mixed_families),
    "indices_out_of_order": (("workspace", "effects"), lambda rows, data, family: indices_out_of_order(rows, data)),
    "succeeded_after_a_failure": (("effects",), lambda rows, data, family: succeeded_after_a_failure(rows, data)),
}


def _draw(kind: str, data):
    families, make = KINDS[kind]
    family = FAMILIES.get(data.draw(st.sampled_from(families)))
    lines = make(_rows(data.draw(st.sampled_from(RECORDED[family.name]))), data, family)
    return family, lines


def strict_passes(lines: list[str], family) -> bool:
    """Whether ``fencesim check`` would exit 0 (every check ok) on these lines."""
    try:
        history = History.from_jsonl("\n".join(lines) + "\n", "h.jsonl")
        _, report = FAMILIES.judge_history(history, None, "h.jsonl")
    except HistoryError:
        return False
    return all(r.status == OK for r in report.results)


def lenient_passes(lines: list[str], family) -> bool:
    """The planted bug: read with plain json.loads and no schema, judged by the family's checks alone, and
    unresolved_compensation without its test for a history that contradicts itself."""
    from unittest import mock

    from sim.families.effects import checks as effects_checks

    events = []
    for position, line in enumerate(lines):
        row = json.loads(line)
        fields = {k: v for k, v in row.items() if k not in ("index", "time", "actor", "event") and v is not None}
        events.append(Event(row.get("index", position), row.get("time", position), row["actor"], row["event"], fields))
    with mock.patch.object(effects_checks, "_succeeded_after_a_failure", lambda history: None):
        return all(r.status == OK for r in family.check(History(events)).results)


@pytest.mark.parametrize("kind", sorted(KINDS))
@settings(max_examples=60, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_check_never_passes_a_history_it_cannot_judge(kind, data):
    """A history of each kind is refused, not_evaluable or violated -- never all ok."""
    family, lines = _draw(kind, data)
    if lines is None:
        return
    assert not strict_passes(lines, family), (kind, lines[:12])


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_generators_catch_a_reader_that_passes_blind(kind):
    """Read leniently (the bug fixed), some history of each kind passes every check: the generators find it."""
    found = []

    @settings(max_examples=200, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def search(data):
        family, lines = _draw(kind, data)
        if lines is not None and kind != "duplicated_key" and lenient_passes(lines, family):
            found.append(lines)
        if lines is not None and kind == "duplicated_key":  # json.loads keeps the last value: always lenient
            found.append(lines)

    search()
    assert found, f"no {kind} history passed the lenient reader: the generator proves nothing"
