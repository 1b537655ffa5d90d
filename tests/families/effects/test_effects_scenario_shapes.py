"""Every field of a runtime scenario is checked for its type and shape where it is read: TOML times in
arguments, huge generic:N, script times past 10^15 s, and odd tokens are one clear ScenarioError."""

from __future__ import annotations

import datetime

import pytest

from sim.core.errors import ScenarioError
from sim.core.files import Source
from sim.families.effects.scenario import load_runtime_scenario

SCRIPT = ["accept task_1", "lease w1", "deliver", "intent open_pr", "dispatch open_pr", "commit open_pr",
          "respond open_pr", "receipt open_pr", "close"]


def _data(**changes):
    data = {"family": "effects", "workflow": ["open_pr"], "events": list(SCRIPT)}
    data.update(changes)
    return data


def _refused(data) -> ScenarioError:
    with pytest.raises(ScenarioError) as caught:
        load_runtime_scenario(data, Source("x.toml", ""))
    return caught.value


def test_a_toml_time_in_arguments_is_refused():
    """[arguments.open_pr] title = 07:32:00 is refused when read (it used to fail in json.dumps later)."""
    error = _refused(_data(arguments={"open_pr": {"title": datetime.time(7, 32)}}))
    assert "07:32:00 (a TOML time)" in error.message and "datetime" not in error.message


def test_a_huge_generic_workflow_is_refused():
    """generic:<5000 digits> is refused with the value cut (int() of it would raise ValueError)."""
    error = _refused(_data(workflow="generic:" + "9" * 5000, events=["accept task_1"]))
    assert "from 1 to 100" in error.message and len(error.message) < 300


@pytest.mark.parametrize("spec", ["generic:\u00b2", "generic:0", "generic:101", "generic:-1", "generic: 5"])
def test_odd_generic_counts_are_refused(spec):
    """N of generic:N is plain decimal digits from 1 to 100 ('²' is a digit to str.isdigit)."""
    assert "generic:N" in _refused(_data(workflow=spec, events=["accept task_1"])).message


@pytest.mark.parametrize("time, fragment", [
    ("@1e20", "past the limit"), ("@1000000000000000", "past the limit"), ("@nan", "bad time"),
    ("99:99:99", "unknown event"),
])
def test_script_times_past_the_limit_are_refused(time, fragment):
    """A script time at or past 10^15 s, or not a time, is refused."""
    assert fragment in _refused(_data(events=[*SCRIPT[:-1], f"{time} close"])).message


def test_a_bad_request_id_is_refused():
    """A request id is a simple name."""
    assert "bad request id" in _refused(_data(events=[*SCRIPT[:5], "commit open_pr r/2"])).message


@pytest.mark.parametrize("key, value, fragment", [
    ("name", "a\x0bb", "control"), ("description", "\x1b[31m", "control"), ("task", ["t"], "a list"),
    ("events", "accept task_1", "not a string"), ("faults", [["x"]], "must be a string"),
])
def test_fields_of_the_wrong_shape_are_refused(key, value, fragment):
    """Names, texts, tasks, events and faults have their types."""
    data = _data(**{key: value})
    if key == "faults":
        data.pop("events")
    assert fragment in _refused(data).message


def test_a_misspelt_transition_gets_a_guess():
    """An unknown transition in an event names the closest."""
    assert "did you mean 'open_pr'" in _refused(_data(events=[*SCRIPT[:3], "intent open_p"])).message
