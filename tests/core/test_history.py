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
    assert line == ('{"index":0,"time":0,"actor":"client","event":"dispatch",'
                    '"claimed_base_rev":0,"copy":1,"step":"s1"}\n')


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
    lines = _run_history(seed_dir).to_jsonl().splitlines()
    assert len(lines) > 1
    for line in lines:
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


# -- strict reading: what json.loads would accept but a history may not hold ------------------------------

def _line_error(text: str) -> HistoryError:
    with pytest.raises(HistoryError) as caught:
        History.from_jsonl(text, "run.jsonl")
    return caught.value


def test_a_key_twice_in_one_line_is_refused():
    """A duplicated JSON key (the second value would silently win) is an invalid line."""
    error = _line_error('{"actor":"a","event":"e","verdict":"applied","verdict":"rejected:stale_rev"}\n')
    assert error.where == "run.jsonl:1" and "'verdict' appears twice" in error.message


def test_a_five_thousand_digit_integer_is_refused_in_one_line():
    """An integer beyond 64 bits (5,000 digits: json would raise ValueError) is an invalid line."""
    error = _line_error('{"actor":"a","event":"e","copy":' + "9" * 5000 + "}\n")
    assert error.where == "run.jsonl:1" and "5000 digits" in error.message and len(error.message) < 200


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_numbers_are_refused(value):
    """NaN, Infinity and numbers that overflow to infinity are not JSON a history may hold."""
    error = _line_error('{"actor":"a","event":"e","time":' + value + "}\n")
    assert error.where == "run.jsonl:1"


def test_deep_nesting_is_refused():
    """A field nested past MAX_NESTING is an invalid line, not a recursion error."""
    error = _line_error('{"actor":"a","event":"e","x":' + "[" * 40 + "]" * 40 + "}\n")
    assert "nested more than" in error.message


def test_null_fixed_fields_are_absent():
    """index and time written as null take their defaults (null is absent, docs/formats.md)."""
    history = History.from_jsonl('{"index":null,"time":null,"actor":"a","event":"e"}\n')
    assert (history[0].index, history[0].time) == (0, 0)


def test_indices_must_increase():
    """Events whose indices do not increase (all 0) are refused, each line named."""
    text = "".join('{"index":0,"actor":"a","event":"e"}\n' for _ in range(4))
    error = _line_error(text)
    assert error.problems == [(line, error.problems[0][1]) for line in (2, 3, 4)]
    assert "lines 2, 3, 4: index 0 after index 0" in error.message


def test_a_byte_order_mark_is_named():
    """A history starting with a BOM is refused with a message that says so."""
    error = _line_error('\ufeff{"actor":"a","event":"e"}\n')
    assert "byte-order mark" in error.message


def test_control_characters_in_actor_are_refused():
    """An actor or event name with a control character is an invalid line (it would break later outputs)."""
    error = _line_error('{"actor":"a\\u0007","event":"e"}\n')
    assert "control" in error.message


def test_read_names_the_line_of_each_event():
    """A history read from text knows each event's line (blank lines counted)."""
    history = History.from_jsonl('{"actor":"a","event":"e"}\n\n{"actor":"a","event":"f"}\n')
    assert [history.line_of(i) for i in range(2)] == [1, 3]


def test_identical_faults_are_named_together_and_cut():
    """Many lines with one fault make one short error naming them together."""
    text = "".join('{"index":0,"actor":"a","event":"e"}\n' for _ in range(40))
    error = _line_error(text)
    assert "and 29 more" in error.message and len(str(error)) < 400
