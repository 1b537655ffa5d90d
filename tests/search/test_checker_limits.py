"""Exhaustive search's bounds: no fixed depth cap, a state limit in all, a memory limit, a layer that spills to
disk and reads back the same; each stop says what was and was not proved."""

from __future__ import annotations

import json

import pytest

import sim
from sim.search import layers
from sim.search.exhaustive import ExploreOptions, explore
from sim.search.layers import Layer
from sim.search.visited import Visited, collision_probability

FAMILY = sim.family("workspace")


def _tiny():
    return sim.load_workload("tiny")


def test_a_layer_that_spills_reads_back_its_entries_in_order(monkeypatch):
    """Past the spill mark a layer writes its entries to disk in chunks and yields them back, each once."""
    monkeypatch.setattr(layers, "SPILL_BYTES", 10_000)
    layer = Layer(spill_bytes=1)
    entries = [(i, ("state", i), frozenset({"x"} if i % 7 else ())) for i in range(3 * layers.MEMORY_CHECK_EVERY + 5)]
    for entry in entries:
        layer.append(entry)
    assert layer.spilled_chunks >= 2 and len(layer) == len(entries)
    layer.check()
    assert list(layer) == entries


@pytest.mark.parametrize("count", [0, 1, layers.ENCODE_CHUNK - 1, layers.ENCODE_CHUNK, 3 * layers.ENCODE_CHUNK + 5])
def test_a_layer_that_encodes_its_entries_reads_them_back_equal_and_in_order(count):
    """Past ``encode_past`` entries a layer keeps them pickled, a chunk at a time: it yields back entries equal
    to the ones appended, in order, and counts them all; its sample is its first and its last entry."""
    layer = Layer(encode_past=0)
    entries = [(i, ("state", i, None, frozenset({i % 3})), frozenset({"x"} if i % 7 else ())) for i in range(count)]
    for entry in entries:
        layer.append(entry)
    layer.check()
    assert layer.encoded == count - count % layers.ENCODE_CHUNK and len(layer.kept) == count % layers.ENCODE_CHUNK
    assert layer.sample() == ([entries[0], entries[-1]] if entries else [])
    assert list(layer) == entries and list(layer) == []


@pytest.mark.parametrize("mark, encoded", [(1, True), (1 << 62, False)], ids=["past-the-mark", "below-it"])
def test_a_layer_with_an_encode_mark_encodes_once_the_memory_passes_it(monkeypatch, mark, encoded):
    """A layer given an encode mark keeps its entries as objects, however many (no ``ENCODE_PAST``), until a
    memory reading passes the mark; from there on it encodes them, and reads them all back in order."""
    monkeypatch.setattr(layers, "ENCODE_PAST", layers.ENCODE_CHUNK)
    layer = Layer(spill_bytes=1 << 62, encode_bytes=mark)
    entries = [(i, ("state", i), frozenset()) for i in range(layers.MEMORY_CHECK_EVERY + 3)]
    layer.extend(entries[:2])
    assert layer.encoded == 0  # no reading yet
    for entry in entries[2:]:
        layer.append(entry)
    layer.check()
    assert (layer.encoded > 0) is encoded and layer.spilled_chunks == 0
    assert list(layer) == entries


@pytest.mark.parametrize("family, workload, label, options", [
    ("workspace", "tiny", "plan", {"max_events": 7}),
    ("workspace", "tiny", "none", {"max_events": 6, "reduce": True}),
    ("workspace", "three-files", "step-dedupe", {"max_events": 5}),
    ("effects", "effects-saga", "keyed-fingerprint-reconcile", {"max_events": 2, "max_states": 400}),
])
@pytest.mark.parametrize("resident", [1 << 35, 1 << 62], ids=["encoded", "spilled"])
def test_a_search_whose_layers_are_encoded_finds_the_same(monkeypatch, family, workload, label, options, resident):
    """Keeping every layer encoded (in memory, or written to disk) changes where its states wait, not what the
    search finds: the same counts, depths, shortest lengths and orders (the effects family's states, paused runs
    rebuilt by their orders, included)."""
    searched = sim.family(family)

    def run():
        return explore(searched, sim.load_workload(workload), searched.parse_protocol(label),
                       ExploreOptions(**options, memory_limit=1 << 42)).to_json()

    plain = run()
    encode, write = Layer._encode, Layer._write
    encoded: list[int] = []
    written: list[int] = []
    monkeypatch.setattr(Layer, "_encode", lambda self: encoded.append(len(self.kept)) or encode(self))
    monkeypatch.setattr(Layer, "_write", lambda self: written.append(len(self.sizes)) or write(self))
    # every layer reads the memory often and finds it past its encode mark (1 GiB; past its spill mark, 2 TiB,
    # too, in the second case, where each chunk encoded is written out): the search's own memory reading, which
    # would stop it, is not the layers'
    monkeypatch.setattr(layers, "MEMORY_CHECK_EVERY", 16)
    monkeypatch.setattr(layers, "resident_bytes", lambda: resident)
    monkeypatch.setattr(layers, "SPILL_BYTES", 1)
    assert run() == plain
    assert sum(encoded) > 0, "no layer was encoded: the test checked nothing"
    assert (sum(written) > 0) is (resident > 1 << 41), "a layer spilled below its spill mark, or none above it"


def test_an_effects_layer_keeps_each_encoded_entry_as_its_number_and_verdict(monkeypatch):
    """An encoded entry of the effects family is the state's number and verdict (a few bytes, not the 1,780 of
    a pickled run); the layer reads back states with the keys the search found."""
    searched = sim.family("effects")
    loaded, protocol = sim.load_workload("effects-saga"), searched.parse_protocol("keyed")
    sizes: list[float] = []
    read: list[tuple] = []
    iterate = Layer.__iter__

    def watched(self):
        if self.codec is not None and self.encoded:
            sizes.append(self.encoded_bytes() / self.encoded)
            read.extend(iterate(self))
            return iter(read)
        return iterate(self)

    monkeypatch.setattr(Layer, "__iter__", watched)
    monkeypatch.setattr(layers, "MEMORY_CHECK_EVERY", 16)
    monkeypatch.setattr(layers, "resident_bytes", lambda: 1 << 35)
    explore(searched, loaded, protocol, ExploreOptions(max_events=2, max_states=300, memory_limit=1 << 42))
    assert sizes and max(sizes) < 200
    machine = searched.machine(loaded.base, protocol)
    events = searched.alphabet(loaded)
    root = machine.initial()
    reached = [machine.key(machine.advance(root, events[i])) for i in machine.enabled(root, events)]
    assert [machine.key(state) for _, state, _ in read] == reached[:len(read)] and len(read) > 100


def test_a_layer_with_a_codec_writes_what_it_shrinks_and_reads_what_it_grows():
    """A codec's ``shrink`` writes each chunk and its ``grow`` reads it back: in order, each entry once; the
    sample rebuilds its two entries only."""
    grown: list[int] = []

    def grow(chunk):
        grown.append(len(chunk))
        return [(number, ("state", number), found) for number, found in chunk]

    layer = Layer(encode_past=0, codec=(lambda chunk: [(number, found) for number, _, found in chunk], grow))
    entries = [(i, ("state", i), frozenset({"x"} if i % 7 else ())) for i in range(3 * layers.ENCODE_CHUNK + 5)]
    layer.extend(entries)
    assert layer.encoded == 3 * layers.ENCODE_CHUNK
    assert layer.sample() == [entries[0], entries[-1]] and grown == [1]
    assert list(layer) == entries and grown == [1] + [layers.ENCODE_CHUNK] * 3


def test_a_search_whose_layers_spill_finds_the_same(monkeypatch):
    write = Layer._write
    """Spilling changes where a layer waits, not what the search finds."""
    plain = explore(FAMILY, _tiny(), FAMILY.parse_protocol("none"), ExploreOptions(max_events=7)).to_json()
    monkeypatch.setattr(layers, "resident_bytes", lambda: 1 << 62)  # every layer past its mark
    monkeypatch.setattr(layers, "SPILL_BYTES", 1)  # every chunk encoded written out, the memory read often
    monkeypatch.setattr(layers, "MEMORY_CHECK_EVERY", 64)
    written = []
    monkeypatch.setattr(Layer, "_write", lambda self: written.append(1) or write(self))
    spilled = explore(FAMILY, _tiny(), FAMILY.parse_protocol("none"),
                      ExploreOptions(max_events=7, memory_limit=1 << 63)).to_json()
    assert spilled == plain and written


def test_the_memory_limit_stops_a_search_that_then_proves_nothing():
    """A limit below what the process already holds stops the search at its first reading."""
    result = explore(FAMILY, _tiny(), FAMILY.parse_protocol("plan"), ExploreOptions(max_events=9, memory_limit=1))
    assert (result.complete, result.reason, result.proved_absent) == (False, "memory_limit", [])


def test_the_state_limit_counts_states_in_all():
    """The limit is on distinct states over the whole search, the initial one included."""
    result = explore(FAMILY, _tiny(), FAMILY.parse_protocol("plan"), ExploreOptions(max_events=9, max_states=500))
    assert not result.complete and result.reason == "state_limit" and result.distinct_states == 501


def test_no_depth_cap_and_depth_max_run_until_a_limit(cli):
    """--depth 20 and --depth max are taken; on the workspace family (human edits make the states endless) the
    state limit ends them, and they say so."""
    done = cli("explore", "-w", "tiny", "-p", "plan", "--depth", "max", "--state-limit", "2000", "--json")
    (result,) = json.loads(done.stdout)["protocols"]
    assert done.returncode == 0 and result["max_events"] == "max" and result["end"] == "state_limit"
    assert result["proved_absent"] == [] and "--state-limit raises it" in done.stderr
    assert cli("explore", "-w", "tiny", "-p", "plan", "--depth", "20", "--state-limit", "500").returncode == 0


@pytest.mark.parametrize("bad", ["nan", "0", "-1", "5000", "lots"])
def test_a_memory_limit_out_of_range_is_one_line_and_exit_4(cli, bad):
    """--memory-limit takes 0.05 to 4,096 GB."""
    done = cli("explore", "--memory-limit", bad)
    assert done.returncode == 4 and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_the_trace_gives_back_each_state_s_first_order():
    """The visited set keeps a parent and an event per state: orders are read back from it."""
    visited = Visited()
    events = ["a", "b", "c"]
    root = visited.add(visited.mark("s0"), -1, -1)
    one = visited.add(visited.mark("s1"), root, 2)
    two = visited.add(visited.mark("s2"), one, 0)
    assert visited.add(visited.mark("s1"), two, 1) is None
    assert visited.order(two, events) == ("c", "a") and visited.order(root, events) == ()


def test_the_collision_estimate_is_tlc_s():
    """n * (g - n) / 2**64: no chance with nothing generated twice, about 1e-7 at three million of seven."""
    assert collision_probability(1000, 1000) == 0.0
    assert collision_probability(3_000_000, 7_000_000) == pytest.approx(3e6 * 4e6 / 2 ** 64)


def test_fingerprints_and_exact_keys_find_the_same():
    """--exact keeps the keys: the same result, with no chance of a collision."""
    fingerprinted = explore(FAMILY, _tiny(), FAMILY.parse_protocol("none"), ExploreOptions(max_events=6)).to_json()
    exact = explore(FAMILY, _tiny(), FAMILY.parse_protocol("none"), ExploreOptions(max_events=6, exact=True)).to_json()
    assert exact.pop("collision_probability") == 0.0
    fingerprinted.pop("collision_probability")
    assert exact == fingerprinted


def test_workers_read_a_layer_a_few_chunks_at_a_time():
    """With worker processes a layer is read as they take tasks (entries kept encoded are decoded a few chunks
    ahead of the expansion, not all at once), and each entry comes back with its own successors, in order (a
    search replaying each candidate, which workers expand)."""
    from sim.search.expansion import Expansion
    from sim.search.pool import EXPAND_CHUNK, Expander

    loaded, protocol = _tiny(), FAMILY.parse_protocol("step")
    expansion = Expansion(FAMILY, loaded, protocol, list(FAMILY.alphabet(loaded)), accelerate=False, canonical=None)
    orders = [(), tuple(FAMILY.alphabet(loaded)[:1])]
    entries = [(n, orders[n % 2], frozenset()) for n in range(1, 48 * EXPAND_CHUNK + 4)]
    read: list[int] = []

    class Counted(Layer):
        def __len__(self) -> int:
            return len(entries)

        def __iter__(self):
            for entry in entries:
                read.append(entry[0])
                yield entry

    with Expander(expansion, 2) as expander:
        assert expander.pool is not None
        outcomes = expander.map(Counted(), 1, {})
        given = [next(outcomes)]
        # how far ahead the layer is read depends on which worker answers first (a worker that answers takes the
        # next chunk while the other still works on the one whose results are due), never the whole layer first
        assert len(read) < len(entries)
        given += list(outcomes)
    assert [entry for entry, _ in given] == entries
    for entry, (successors, _) in given[:2]:
        assert [s[2] for s in successors] == [s[2] for s in expansion.expand(entry[1], entry[2], 1, 0)[0]]
