"""Showing and checking a user's values (sim.core.values): cut, never a Python repr, never a crash on a
huge integer; names, free text and plain values."""

from __future__ import annotations

import datetime

import pytest

from sim.core.values import (
    MAX_NAME_CHARS,
    MAX_NESTING,
    MAX_SHOWN_CHARS,
    cut,
    kind,
    name_from_path,
    name_problem,
    plain_problem,
    shown,
    text_problem,
)


def test_a_long_string_is_cut_and_counted():
    """A 100,000-character value is shown as its start and its length, not whole."""
    text = shown("x" * 100_000)
    assert len(text) < MAX_SHOWN_CHARS + 40 and "100000 characters" in text


def test_a_huge_integer_is_described_not_printed():
    """An integer of 5,000 digits (which str() refuses) is described by its number of digits."""
    assert shown(10 ** 5000) == "a 5001-digit integer"
    assert shown(12) == "12"


@pytest.mark.parametrize("value, expected", [
    (False, "false"), (True, "true"), (None, "null"),
    (datetime.time(7, 32), "07:32:00 (a TOML time)"),
    (datetime.date(1979, 5, 27), "1979-05-27 (a TOML date)"),
])
def test_values_are_shown_as_a_file_spells_them(value, expected):
    """Booleans, null and TOML dates and times are shown as written in a file, never as Python reprs."""
    assert shown(value) == expected


def test_kind_names_toml_types():
    """kind() uses the words of the file formats."""
    assert [kind(v) for v in ("a", 1, 1.5, True, [], {}, datetime.time(1, 2))] == [
        "a string", "an integer", "a number", "true/false", "a list", "a table", "a TOML time"]


def test_plain_problem_refuses_dates_huge_integers_nan_and_deep_nesting():
    """Dates, integers beyond 64 bits, non-finite numbers and nesting past MAX_NESTING are not plain."""
    assert "write it as a string" in plain_problem({"title": datetime.time(7, 32)}["title"])
    assert "out of range" in plain_problem([1, 2 ** 63])
    assert "not a finite number" in plain_problem(float("nan"))
    deep: list = []
    for _ in range(MAX_NESTING + 2):
        deep = [deep]
    assert "nested more than" in plain_problem(deep)
    assert plain_problem({"a": [1, "b", 2.5, True, {"c": []}]}) is None


@pytest.mark.parametrize("value, fragment", [
    ({"x": "app.py"}, "must be a string, not a table"),
    ("", "must not be empty"),
    ("a b", "white space"),
    ("a\u2028b", "white space"),
    ("a\x01b", "control"),
    ("x" * (MAX_NAME_CHARS + 1), "longer than"),
])
def test_name_problem(value, fragment):
    """A name is a non-empty printable word of bounded length."""
    assert fragment in name_problem(value, "id")


def test_name_may_hold_spaces_when_allowed():
    """A scenario's name may hold spaces, never control characters."""
    assert name_problem("my scenario", "name", spaces=True) is None
    assert "control" in name_problem("my\x0bscenario", "name", spaces=True)


def test_text_allows_tabs_and_line_breaks_only():
    """Free text may hold tabs and line breaks, no other control character."""
    assert text_problem("line one\n\tline two\r\n", "description") is None
    assert "U+0007" in text_problem("bell\x07", "description")
    assert "must be a string" in text_problem(3, "description")


def test_name_from_path_replaces_unprintable_characters():
    """A file named with a vertical tab or U+2028 gives a printable default name."""
    assert name_from_path("dir/wl\x0bx.toml") == "wl_x"
    assert name_from_path("wl\u2028x.toml") == "wl_x"


def test_cut():
    """cut() keeps short text whole and says how long long text was."""
    assert cut("short") == "short"
    assert cut("y" * 500, 10) == "yyyyyyyyyy... (500 characters)"
