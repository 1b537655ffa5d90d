"""Exhaustive search's bookkeeping is asserted where a broken invariant would print a wrong count or a wrong
proof: each test plants one break (a layer's count, a state's parent, a depth's size, a spilled chunk, a
state's own consistency) and shows the search stops on it instead of answering."""

from __future__ import annotations

import pickle
from array import array

import pytest

import sim
from sim.families.workspace.family import WorkspaceFamily
from sim.families.workspace.machine import WorkspaceMachine
from sim.search import exhaustive, layers, reduction
from sim.search.layers import Layer
from sim.search.visited import Visited, check_counts

FAMILY = sim.family("workspace")


def _explore(max_events=4, family=FAMILY, label="none"):
    return exhaustive.explore(family, sim.load_workload("tiny"), family.parse_protocol(label),
                              exhaustive.ExploreOptions(max_events=max_events))


class _CountsOneMore(Layer):
    """A layer that counts its first entry twice."""

    def append(self, entry):
        super().append(entry)
        if self.count == 1:
            self.count += 1

    def extend(self, entries):
        first = not self.count
        super().extend(entries)
        if first and self.count:
            self.count += 1


class _FromTheRoot(array):
    """A trace that files every state as reached from the initial one."""

    def append(self, value):
        super().append(0)


class _Rooted(Visited):
    def __init__(self, *args):
        super().__init__(*args)
        self.parent = _FromTheRoot("i")


class _LongerThanItsCount(Layer):
    """A layer whose reported size is one more than it found."""

    def __len__(self):
        return self.count + 1


def test_the_search_as_written_passes_its_own_checks():
    """The unplanted search runs through every check, layer after layer, and answers."""
    assert _explore().complete


def test_a_layer_counting_a_state_it_never_numbered_stops_the_search(monkeypatch):
    """A layer's count must be the states the visited set numbered for it: one more is a wrong distinct count."""
    monkeypatch.setattr(exhaustive, "Layer", _CountsOneMore)
    with pytest.raises(AssertionError, match="a layer counted"):
        _explore()


def test_a_state_filed_under_a_parent_two_layers_back_stops_the_search(monkeypatch):
    """Every state of a layer is reached from the layer expanded; a parent further back is a wrong depth, so a
    wrong shortest length."""
    monkeypatch.setattr(exhaustive, "Visited", _Rooted)
    with pytest.raises(AssertionError, match="their depths differ"):
        _explore()


def test_depths_that_do_not_add_up_to_the_distinct_states_stop_the_search(monkeypatch):
    """``distinct_states`` is the sum of ``states_per_depth``: a depth reported one state too large breaks it."""
    monkeypatch.setattr(exhaustive, "Layer", _LongerThanItsCount)
    with pytest.raises(AssertionError, match="but the depths found"):
        _explore()


def test_the_counts_check_names_what_disagrees():
    """The visited set holds the states counted (and the uncounted start of several initial states) -- no more."""
    check_counts(7, [1, 2, 4], 8, 1)
    with pytest.raises(AssertionError, match="the visited set holds 9 states"):
        check_counts(7, [1, 2, 4], 9, 0)


def test_a_trace_parent_numbered_after_its_state_stops_the_order_walk():
    """An order is read back by walking parents, each numbered before its state: one after it is refused."""
    visited = Visited()
    visited.add(visited.mark("root"), -1, -1)
    visited.add(visited.mark("a"), 0, 0)
    visited.parent[1] = 5
    with pytest.raises(AssertionError, match="numbered after it"):
        visited.order(1, ["e"])


def test_a_spilled_chunk_that_reads_back_short_stops_the_layer(monkeypatch):
    """A spilled layer reads back, chunk by chunk, the count it wrote: an entry lost on disk is never skipped
    silently."""
    dumps = pickle.dumps
    monkeypatch.setattr(layers.pickle, "dumps", lambda kept, protocol: dumps(kept[:-1], protocol=protocol))
    monkeypatch.setattr(layers, "SPILL_BYTES", 1)
    layer = Layer(spill_bytes=1)
    for number in range(layers.MEMORY_CHECK_EVERY + 3):
        layer.append((number, None, frozenset()))
    assert layer.spilled_chunks == layers.MEMORY_CHECK_EVERY // layers.ENCODE_CHUNK
    layer.check()  # what was handed to the disk is all counted
    with pytest.raises(AssertionError, match="read back"):
        list(layer)
    layer.close()


def test_an_encoded_chunk_that_reads_back_short_stops_the_layer(monkeypatch):
    """The same for a chunk encoded in memory."""
    dumps = pickle.dumps
    monkeypatch.setattr(layers.pickle, "dumps", lambda kept, protocol: dumps(kept[:-1], protocol=protocol))
    layer = Layer(encode_past=0)
    for number in range(layers.ENCODE_CHUNK):
        layer.append((number, None, frozenset()))
    layer.check()
    with pytest.raises(AssertionError, match="read back"):
        list(layer)


def test_a_layer_whose_count_is_not_what_it_holds_fails_its_check():
    """A layer's count is what it keeps in memory and on disk."""
    layer = Layer()
    layer.append((1, None, frozenset()))
    layer.check()
    layer.count += 1
    with pytest.raises(AssertionError, match="counted 2 entries but holds 1, encoded 0"):
        layer.check()


class _PlanAhead(WorkspaceMachine):
    """A planted bug in the state: the plan claims to be read at a revision the workspace has not reached."""

    def plan(self, state, event):
        after, records = super().plan(state, event)
        return after._replace(snapshot_rev=state.rev + 1), records


def test_a_search_checks_its_layers_states_for_their_own_consistency():
    """Exhaustive search asks the machine to check a sample of each layer: a state value that breaks its own
    invariant stops the search before it is merged, judged and counted."""
    with pytest.raises(AssertionError, match="the plan was read at rev 1"):
        _explore(family=WorkspaceFamily(machine=_PlanAhead))


def test_an_independence_that_is_not_symmetric_is_refused(monkeypatch):
    """Sleep sets leave ``b a`` out for having tried ``a b``: independence that holds one way only would leave out
    an order whose states were never reached."""
    monkeypatch.setattr(reduction, "independent", lambda first, second: first == "reads")
    with pytest.raises(AssertionError, match="independence must be symmetric"):
        reduction.Independence(["reads", "writes"])
