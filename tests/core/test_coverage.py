"""Coverage: goals in a small predicate language over history events, what every sweep reached, and the
sketch of distinct behaviours behind the saturation curve."""

from __future__ import annotations

import random

import pytest

from sim.core.coverage import Coverage, Sketch, parse_goal
from sim.core.errors import ScenarioError
from sim.core.history import History
from sim.registry import FAMILIES
from sim.search.sweep import sweep


def _history(*rows):
    return History.from_dicts([{"actor": "x", **row} for row in rows])


def test_goal_terms_match_values_presence_and_absence():
    """field=value, field!=value, field and !field each hold as written; * is any event."""
    history = _history({"event": "deliver", "verdict": "deduped", "origin": "retry"},
                       {"event": "reconciled", "result": "found", "late": True})
    assert parse_goal("deliver verdict=deduped").reached(history)
    assert not parse_goal("deliver verdict=applied").reached(history)
    assert parse_goal("deliver origin!=dispatch").reached(history)
    assert parse_goal("deliver !preempted origin").reached(history)
    assert not parse_goal("deliver preempted").reached(history)
    assert parse_goal("* late=true").reached(history)
    assert parse_goal("reconciled result=found").reached(history)


@pytest.mark.parametrize("text", ["", "  ", "deliver verdict=", "del#iver", "deliver =x", 3])
def test_a_malformed_goal_is_refused(text):
    """A goal that is not EVENT [TERM ...] is an input error."""
    with pytest.raises(ScenarioError):
        parse_goal(text)


def test_a_workload_declares_goals_and_a_bad_one_names_its_line(tmp_path):
    """[coverage] reach is read with the workload; a malformed goal or key is refused with file:line."""
    base = (tmp_path / "w.toml")
    text = 'format = 1\nname = "w"\nfiles = { "a.py" = "v0" }\nplan = [ { id = "s1", path = "a.py", patch = "v1" } ]\n'
    base.write_text(text + '[coverage]\nreach = ["deliver verdict=deduped"]\n', encoding="utf-8")
    assert [g.text for g in FAMILIES.load_workload(str(base)).coverage] == ["deliver verdict=deduped"]
    base.write_text(text + '[coverage]\nreach = ["deliver verdict="]\n', encoding="utf-8")
    with pytest.raises(ScenarioError) as error:
        FAMILIES.load_workload(str(base))
    assert str(error.value).startswith(f"{base}:6")
    base.write_text(text + '[coverage]\nreached = []\n', encoding="utf-8")
    with pytest.raises(ScenarioError, match="unknown key"):
        FAMILIES.load_workload(str(base))


def test_a_goal_no_order_reaches_is_never_and_a_reachable_one_is_counted():
    """On seed-fuzz: a compensation verdict the workspace model never gives is 'never'; a deduped retry is
    reached in some runs."""
    family, workload = FAMILIES.get("workspace"), FAMILIES.load_workload("seed-fuzz")
    workload.coverage = (parse_goal("deliver verdict=deduped origin=retry"), parse_goal("deliver verdict=compensated"))
    summary, _ = sweep(family, workload, ["step-dedupe"], 500, workers=1)
    coverage = summary.tallies["step-dedupe"].coverage.to_json()
    assert coverage["goals"]["deliver verdict=deduped origin=retry"] > 0
    assert coverage["never"] == ["deliver verdict=compensated"]
    assert coverage["events"]["deliver verdict=applied"] > 0


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_coverage_and_saturation_are_the_same_for_any_worker_count():
    """Counts merge by addition and the sketch by register maxima: one and two workers agree."""
    family, workload = FAMILIES.get("workspace"), FAMILIES.load_workload("tiny")
    one, _ = sweep(family, workload, ["none", "step-dedupe"], 600, workers=1)
    two, _ = sweep(family, workload, ["none", "step-dedupe"], 600, workers=2)
    assert [t.coverage.to_json() for t in one.tallies.values()] == [t.coverage.to_json() for t in two.tallies.values()]
    assert one.saturation == two.saturation
    assert [n for n, _ in one.saturation] == [1, 2, 5, 10, 20, 50, 100, 200, 250, 500, 600]
    counts = [c["none"] for _, c in one.saturation]
    assert counts == sorted(counts) and counts[-1] <= 600


def test_the_sketch_counts_distinct_values_within_its_error_and_merges_in_any_order():
    """Small counts exact, large ones within a few percent; merging is order-free."""
    rng = random.Random(7)
    values = [rng.getrandbits(64) for _ in range(20_000)]
    whole, left, right = Sketch(), Sketch(), Sketch()
    for i, value in enumerate(values):
        whole.add(value)
        (left if i % 2 else right).add(value)
        whole.add(value)  # a repeat changes nothing
    left.merge(right)
    assert left.registers == whole.registers
    assert abs(whole.count() - 20_000) < 0.05 * 20_000
    small = Sketch()
    for value in values[:50]:
        small.add(value)
    assert abs(small.count() - 50) <= 1


def test_a_saved_coverage_reads_back_the_same():
    """A sweep's saved state (plain data) rebuilds the same coverage."""
    import dataclasses

    coverage = Coverage((parse_goal("deliver verdict=deduped"),))
    coverage.add_run(_history({"event": "deliver", "verdict": "deduped"}))
    again = Coverage(**dataclasses.asdict(coverage))
    assert again.to_json() == coverage.to_json()
