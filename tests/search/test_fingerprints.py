"""The visited set's table of fingerprints (``sim/search/_fingerprints.c``): it holds what a Python set of the
same integers holds, through every growth, in at most 16 bytes a fingerprint; a search finds the same with it
and with the Python set that stands in where it did not compile; and a table that takes one fingerprint for
new twice stops the search."""

from __future__ import annotations

import random
import shutil
import sysconfig
from pathlib import Path

import pytest

import sim
from sim.search import visited
from sim.search.exhaustive import STATE_LIMIT_MAX, ExploreOptions, explore
from sim.search.visited import TRACE_STATES_MAX, Visited

FAMILY = sim.family("workspace")
LOW, HIGH = -(1 << 63), (1 << 63) - 1


def _table():
    if visited.TABLE is None:
        pytest.skip("the C table is not built here (pip install -e . builds it)")
    return visited.TABLE()


def test_the_table_is_built_where_a_compiler_and_the_headers_are():
    """``pip install -e .`` builds the extension wherever it can: a search without it takes six times the memory."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    headers = Path(sysconfig.get_paths()["include"], "Python.h")
    if shutil.which(compiler) is None or not headers.exists():
        pytest.skip("no C compiler or no Python headers here: the Python set stands in")
    assert visited.TABLE is not None, "sim/search/_fingerprints.c is not built: pip install -e . (or make setup)"


def test_the_table_holds_what_a_python_set_holds():
    """Random 64-bit values, the ends of the range, 0 (kept apart from the empty slots) and values given again:
    ``add`` says new exactly when the set did not hold it, and membership and size agree after."""
    table, plain = _table(), set()
    rng = random.Random(7)
    values = [rng.randint(LOW, HIGH) for _ in range(20_000)] + [0, 0, -1, 1, LOW, HIGH, LOW, HIGH]
    values += [rng.randint(-50, 50) for _ in range(500)]  # small values: many given again, sequential hashes
    values += rng.sample(values, 3_000)  # equal values: each must be found, not added again
    for value in values:
        assert table.add(value) is (value not in plain), value
        plain.add(value)
        assert value in table
    assert len(table) == len(plain)
    assert all((value in table) is (value in plain) for value in [rng.randint(LOW, HIGH) for _ in range(5_000)])
    assert 0 in table and 2 ** 62 + 12345 not in table


def test_the_table_survives_its_growths_within_16_bytes_a_fingerprint():
    """Every fingerprint is still found after each growth, and the table never takes more than 16 bytes a
    fingerprint, just after a growth included (grown by half at three quarters full)."""
    table = _table()
    rng = random.Random(11)
    values = [rng.randint(LOW, HIGH) | 1 for _ in range(60_000)]
    capacity, growths = table.capacity, 0
    for count, value in enumerate(values, 1):
        assert table.add(value)
        assert table.table_bytes <= 16 * count
        if table.capacity != capacity:
            growths, capacity = growths + 1, table.capacity
            assert all(v in table for v in values[:count:97]) and len(table) == count
    assert growths > 20 and all(value in table for value in values)
    assert not any(table.add(value) for value in values[::7])
    assert table.table_bytes / len(table) >= 8 / 0.75 - 1e-9


def test_the_table_refuses_what_is_no_64_bit_integer():
    """A fingerprint is a 64-bit signed integer: a larger one or a string is an error, not a silent wrap."""
    table = _table()
    with pytest.raises(OverflowError):
        table.add(HIGH + 1)
    with pytest.raises(TypeError):
        table.add("key")
    assert len(table) == 0


def test_the_visited_set_reports_the_table_s_bytes():
    """``bytes_per_state`` is the table's slots and the trace (5 bytes: a 32-bit parent, an 8-bit event)."""
    _table()
    seen = Visited(alphabet=40)
    for number in range(1_000):
        seen.add(seen.mark(("state", number)), number - 1, number % 40)
    assert seen.compact and seen.set_bytes_per_state() == seen.seen.table_bytes / 1_000 <= 16
    assert seen.bytes_per_state() == pytest.approx(seen.set_bytes_per_state() + 5)


def test_the_trace_numbers_more_states_than_the_search_may_find():
    """The trace's 32-bit parents number every state a search may count (and the one past its limit)."""
    assert STATE_LIMIT_MAX + 2 <= TRACE_STATES_MAX
    assert Visited(alphabet=127).event.typecode == "b" and Visited(alphabet=128).event.typecode == "h"


@pytest.mark.parametrize("family, workload, label, options", [
    ("workspace", "tiny", "plan", {"max_events": 7}),
    ("workspace", "tiny", "none", {"max_events": 6, "symmetry": True}),
    ("workspace", "tiny", "plan", {"max_events": 6, "reduce": True}),
    ("workspace", "three-files", "step-dedupe", {"max_events": 5}),
    ("effects", "effects-saga", "keyed-fingerprint-reconcile", {"max_events": 1}),
])
def test_a_search_finds_the_same_with_the_table_and_with_the_python_set(monkeypatch, family, workload, label,
                                                                         options):
    """The Python set that stands in where the extension did not compile gives the same counts, depths, shortest
    lengths and orders, byte for byte."""
    _table()

    searched = sim.family(family)

    def run():
        return explore(searched, sim.load_workload(workload), searched.parse_protocol(label),
                       ExploreOptions(**options)).to_json()

    compact = run()
    monkeypatch.setattr(visited, "TABLE", None)
    assert run() == compact


class _SaysNewTwice:
    """A planted bug: a table that takes its hundredth fingerprint for new once more when it is given again."""

    def __init__(self):
        self.held, self.table_bytes, self.again = set(), 0, None

    def add(self, value):
        if value in self.held:
            if value == self.again:
                self.again = None
                return True
            return False
        self.held.add(value)
        if len(self.held) == 100:
            self.again = value
        return True

    def __contains__(self, value):
        return value in self.held

    def __len__(self):
        return len(self.held)


def test_a_table_that_takes_a_fingerprint_for_new_twice_stops_the_search(monkeypatch):
    """A state numbered twice is one distinct state counted twice: the layer's check finds the visited set
    holding fewer states than its trace numbers."""
    monkeypatch.setattr(visited, "TABLE", _SaysNewTwice)
    with pytest.raises(AssertionError, match="the visited set holds"):
        explore(FAMILY, sim.load_workload("tiny"), FAMILY.parse_protocol("plan"), ExploreOptions(max_events=7))
