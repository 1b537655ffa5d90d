"""Every field of a workspace scenario is checked for its type and shape where the file is read: a value
of the right name but the wrong shape is one ScenarioError naming the line, never a TypeError later."""

from __future__ import annotations

import pytest

from sim.core.errors import ScenarioError
from sim.core.files import Source
from sim.families.workspace.scenario import build_scenario

STEPS = [{"id": "s1", "path": "app.py", "patch": "v1"}]


def _data(**changes):
    data = {"files": {"app.py": "v0"}, "plan": [dict(s) for s in STEPS], "events": ["plan", "dispatch s1"]}
    data.update(changes)
    return data


def _refused(data) -> ScenarioError:
    with pytest.raises(ScenarioError) as caught:
        build_scenario(data, Source("x.toml", ""))
    return caught.value


@pytest.mark.parametrize("step, fragment", [
    ({"id": "s1", "path": {"x": "app.py"}, "patch": "v1"}, "unknown path a table"),
    ({"id": "s1", "path": ["app.py"], "patch": "v1"}, "unknown path a list"),
    ({"id": "s1", "path": "app.py", "patch": ["v1"]}, "patch must be a string or a table"),
    ({"id": "s1", "path": "app.py", "patch": {"_": 1}}, "patch must be a string or a table"),
    ({"id": ["s1"], "path": "app.py", "patch": "v1"}, "id must be a string"),
    ({"id": "s\t1", "path": "app.py", "patch": "v1"}, "white space"),
    ({"id": "s\u20281", "path": "app.py", "patch": "v1"}, "white space"),
    ({"id": "s1", "path": "app.py", "patch": "v1", "pth": "x"}, "did you mean 'path'"),
])
def test_a_step_of_the_wrong_shape_is_refused(step, fragment):
    """A step's id, path and patch must be a word, one of the files, and a string or table of strings."""
    assert fragment in _refused(_data(plan=[step])).message


@pytest.mark.parametrize("files, fragment", [
    ({"app py": "v0"}, "white space"),
    ({"app.py#x": "v0"}, "'#'"),
    ({"app.py": 3}, "content must be a string"),
    ({"app.py": {"h\x01": "v0"}}, "hunk name"),
    ({"a\x00": "v0"}, "control"),
])
def test_files_of_the_wrong_shape_are_refused(files, fragment):
    """A file path an event cannot spell, or content that is not text, is refused."""
    assert fragment in _refused(_data(files=files, plan=[{"id": "s1", "path": list(files)[0], "patch": "v1"}])).message


@pytest.mark.parametrize("key, value, fragment", [
    ("name", "a\x0bb", "control"),
    ("name", 5, "must be a string"),
    ("description", "bell\x07", "control character U+0007"),
    ("events", "plan", "must be a list of strings, not a string"),
    ("protocol", ["step"], "not a list"),
])
def test_top_level_fields_of_the_wrong_shape_are_refused(key, value, fragment):
    """name, description, events and protocol have their types."""
    assert fragment in _refused(_data(**{key: value})).message


def test_an_event_with_a_control_character_is_refused():
    """An event string holding a control character (other than those split away) is refused."""
    assert "control" in _refused(_data(events=["plan", "human_edit app.py a\x07b"])).message


def test_a_long_event_is_cut_in_the_message():
    """A 100,000-character unknown event is quoted cut, not whole."""
    error = _refused(_data(events=["x" * 100_000]))
    assert len(error.message) < 400 and "100000 characters" in error.message


def test_a_misspelt_step_gets_a_guess():
    """An unknown step id in an event names the closest step."""
    assert "did you mean 's1'" in _refused(_data(events=["plan", "dispatch s11"])).message


def test_a_plain_name_with_spaces_is_allowed():
    """A scenario's name may hold spaces."""
    assert build_scenario(_data(name="my scenario")).name == "my scenario"
