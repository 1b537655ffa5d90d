"""Histories: append-only events, canonical JSON lines, errors that point at file:line."""

from __future__ import annotations

import json

import pytest

import sim
from sim.core.errors import HistoryError, InputError
from sim.core.history import Event, History, plain_time


def _run_history(seed_dir):
    return sim.run_scenario(sim.load_scenario(seed_dir / "preemption_retry.toml"), "step-dedupe").history


def test_jsonl_round_trip_gives_identical_bytes(seed_dir):
    """to_jsonl -> from_jsonl -> to_jsonl reproduces a simulated history byte for byte."""
    text = _run_history(seed_dir).to_jsonl()
    assert History.from_jsonl(text).to_jsonl() == text


def test_jsonl_round_trip_preserves_events(seed_dir):
    """Events read back from JSON lines compare equal to the events written."""
    history = _run_history(seed_dir)
    assert History.from_jsonl(history.to_jsonl()).events == history.events


def test_jsonl_is_one_canonical_object_per_line():
    """Each line is one compact JSON object with the fixed fields first and the rest sorted."""
    history = History()
    history.append(0, "client", "dispatch", step="s1", copy=1, claimed_base_rev=0)
    line = history.to_jsonl()
    assert line == '{"index":0,"time":0,"actor":"client","event":"dispatch","claimed_base_rev":0,"copy":1,"step":"s1"}\n'


def test_none_fields_are_absent():
    """A field given as None is left out of the event and its JSON, never written as null."""
    history = History()
    event = history.append(1.0, "executor", "deliver", step="s1", verdict=None, journal_key=None)
    assert "verdict" not in event and "journal_key" not in event
    assert "null" not in history.to_jsonl()
    assert "verdict" not in json.loads(history.to_jsonl())


def test_none_fields_are_absent_when_read_from_dicts():
    """A null in a recorded history is treated as an absent field."""
    history = History.from_dicts([{"actor": "executor", "event": "deliver", "verdict": None}])
    assert "verdict" not in history[0]


def test_simulated_history_never_writes_null(seed_dir):
    """No field of a simulated run's JSON lines is null."""
    for line in _run_history(seed_dir).to_jsonl().splitlines():
        assert None not in json.loads(line).values()


def test_append_numbers_events_consecutively():
    """append gives indexes 0, 1, 2... in order of appending."""
    history = History()
    for number in range(4):
        history.append(number, "human", "human_edit", path="app.py")
    assert [e.index for e in history] == [0, 1, 2, 3]


def test_events_property_is_a_copy():
    """Changing the list returned by .events does not change the history (append-only)."""
    history = History()
    history.append(0, "planner", "plan")
    history.events.clear()
    assert len(history) == 1


def test_integral_times_are_written_as_integers():
    """A simulated time of 3.0 is written as 3 and 2.5 stays 2.5."""
    history = History()
    history.append(3.0, "a", "e")
    history.append(2.5, "a", "e")
    assert [json.loads(line)["time"] for line in history.to_jsonl().splitlines()] == [3, 2.5]


def test_plain_time_is_public_and_keeps_fractions():
    """plain_time turns an integral float into an int and leaves other times alone."""
    assert plain_time(3.0) == 3 and isinstance(plain_time(3.0), int)
    assert plain_time(2.5) == 2.5 and isinstance(plain_time(2.5), float)


def test_event_reads_fixed_and_named_fields():
    """An event answers get/[]/in for its four fixed fields and its named fields alike."""
    event = Event(4, 2, "client", "dispatch", {"step": "s1"})
    assert (event.get("index"), event["actor"], event.get("step"), event.get("absent", "x")) == (4, "client", "s1", "x")
    assert "event" in event and "step" in event and "absent" not in event
    with pytest.raises(KeyError):
        event["absent"]


def test_malformed_json_line_raises_history_error_with_file_and_line():
    """A line that is not JSON raises HistoryError whose where is 'file:line' (blank lines counted)."""
    text = '{"actor":"a","event":"e"}\n\n{oops\n'
    with pytest.raises(HistoryError) as caught:
        History.from_jsonl(text, "run.jsonl")
    assert caught.value.where == "run.jsonl:3"
    assert isinstance(caught.value, InputError)


def test_read_malformed_file_names_path_and_line(tmp_path):
    """History.read of a corrupt file names the file and the line in the error."""
    path = tmp_path / "h.jsonl"
    path.write_text('{"actor":"a","event":"e"}\n{"actor": \n', encoding="utf-8")
    with pytest.raises(HistoryError) as caught:
        History.read(path)
    assert caught.value.where == f"{path}:2"


def test_read_missing_file_raises_history_error(tmp_path):
    """A history file that does not exist raises HistoryError, not OSError."""
    with pytest.raises(HistoryError):
        History.read(tmp_path / "absent.jsonl")


def test_event_without_actor_raises_history_error():
    """An event lacking 'actor' raises HistoryError naming the missing field."""
    with pytest.raises(HistoryError, match="actor"):
        History.from_dicts([{"event": "deliver"}])


def test_event_without_actor_names_file_and_line():
    """A JSON line lacking 'actor' is reported at file:line like a line that is not JSON."""
    text = '{"actor":"a","event":"e"}\n\n{"event":"deliver"}\n'
    with pytest.raises(HistoryError) as caught:
        History.from_jsonl(text, "run.jsonl")
    assert caught.value.where == "run.jsonl:3"


def test_non_integer_index_raises_history_error():
    """A recorded event whose index is not an integer is an input error (HistoryError)."""
    with pytest.raises(HistoryError):
        History.from_jsonl('{"index":"x","actor":"a","event":"e"}\n', "run.jsonl")


def test_non_numeric_time_raises_history_error():
    """A recorded event whose time is not a number is an input error at its line."""
    with pytest.raises(HistoryError) as caught:
        History.from_jsonl('{"time":"noon","actor":"a","event":"e"}\n', "run.jsonl")
    assert caught.value.where == "run.jsonl:1"
