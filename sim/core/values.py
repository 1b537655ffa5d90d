"""Showing and checking the values a user writes in an input file.

An error quotes the user's value so it can be found in the file, but never
whole when it is long (a 100,000-character event is cut), never as a Python
repr (``datetime.time(7, 32)``, ``False``), and never a number so large that
printing it fails.  The checks here are the shapes every file kind shares: a
name, a free text, a plain value (what TOML and JSON hold, less dates and
times), and the limits on numbers and nesting.
"""

from __future__ import annotations

import datetime
import json
import math
import re
from typing import Any, Mapping, Sequence, TypeAlias

#: A value as fencesim writes it to JSON: a scalar, a sequence of values or a mapping from names to values.  A
#: writer's ``to_json()`` returns a :data:`JsonObject`; mypy then holds every value it puts in to what JSON can hold.
JsonValue: TypeAlias = "None | bool | int | float | str | Sequence[JsonValue] | Mapping[str, JsonValue]"
#: A JSON object as a writer builds it (keys are names; values are :data:`JsonValue`).
JsonObject: TypeAlias = "dict[str, JsonValue]"
#: A JSON scalar: what a knob's value is in a document (a union at run time: a record's field may be one).
JsonScalar: TypeAlias = None | bool | int | float | str

#: Characters of a user's value quoted in one error (the rest is cut and counted).
MAX_SHOWN_CHARS = 60
#: Longest name (of a scenario, step, file, hunk, task...) fencesim accepts.
MAX_NAME_CHARS = 200
#: Deepest nesting of lists and tables in any input value.
MAX_NESTING = 32
#: Integers in inputs lie strictly between -INTEGER_LIMIT and INTEGER_LIMIT (64-bit).
INTEGER_LIMIT = 2 ** 63
#: Control characters free text may not hold (tab, line feed and carriage return are allowed): they
#: break the one-line outputs (JUnit XML, terminal lines) a text ends up in.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029]")


def kind(value: Any) -> str:
    """What a value is, in the words of the file formats: ``a string``, ``a table``, ``a TOML time``."""
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, datetime.datetime):
        return "a TOML date-time"
    if isinstance(value, datetime.date):
        return "a TOML date"
    if isinstance(value, datetime.time):
        return "a TOML time"
    if value is None:
        return "null"
    return type(value).__name__


def _digits(value: int) -> int:
    """Decimal digits of an integer, without converting it to text (which fails past 4,300 digits)."""
    if value == 0:
        return 1
    estimate = int(abs(value).bit_length() * math.log10(2)) + 1
    return estimate if estimate > 4000 else len(str(abs(value)))


def cut(text: str, limit: int = MAX_SHOWN_CHARS) -> str:
    """``text`` whole when short, else its first ``limit`` characters and how long it was."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


def shown(value: Any, limit: int = MAX_SHOWN_CHARS) -> str:
    """A value as the user wrote it, quoted and cut: ``'s1'``, ``true``, ``07:32:00 (a TOML time)``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        digits = _digits(value)
        return str(value) if digits <= 30 else f"a {digits}-digit integer"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else {"inf": "inf", "-inf": "-inf"}.get(repr(value), "nan")
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        return f"{repr(value[:limit])[:-1]}...' ({len(value)} characters)"
    if isinstance(value, (datetime.date, datetime.time)):
        return f"{value.isoformat()} ({kind(value)})"
    if value is None:
        return "null"
    if isinstance(value, (list, dict)):
        size = len(value)
        noun = "item" if isinstance(value, list) else "key"
        try:
            text = json.dumps(value, ensure_ascii=False, default=str)
        except (ValueError, RecursionError):  # a huge integer or deep nesting inside
            return f"{kind(value)} of {size} {noun}{'' if size == 1 else 's'}"
        return cut(text, limit)
    return cut(str(type(value).__name__), limit)


def plain_problem(value: Any, depth: int = 0) -> str | None:
    """What keeps ``value`` from being a plain value (strings, 64-bit integers, finite numbers,
    true/false, lists and tables of them, nested at most MAX_NESTING deep), or None."""
    if depth > MAX_NESTING:
        return f"lists and tables nested more than {MAX_NESTING} deep"
    if isinstance(value, bool) or isinstance(value, str):
        return None
    if isinstance(value, int):
        if not -INTEGER_LIMIT < value < INTEGER_LIMIT:
            return f"integer {shown(value)} is out of range (integers are at most 2^63 - 1 in size)"
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{shown(value)} is not a finite number"
    if isinstance(value, list):
        for item in value:
            problem = plain_problem(item, depth + 1)
            if problem:
                return problem
        return None
    if isinstance(value, dict):
        for item in value.values():
            problem = plain_problem(item, depth + 1)
            if problem:
                return problem
        return None
    if isinstance(value, (datetime.date, datetime.time)):
        return f"{shown(value)} is not a value fencesim reads; write it as a string (in quotes)"
    return f"{kind(value)} is not a value fencesim reads"


def name_problem(value: Any, what: str, spaces: bool = False) -> str | None:
    """What is wrong with ``value`` as a name (a non-empty printable string without control characters,
    at most MAX_NAME_CHARS long; without white space unless ``spaces``), or None."""
    if not isinstance(value, str):
        return f"{what} must be a string, not {kind(value)} ({shown(value)})"
    if not value:
        return f"{what} must not be empty"
    if len(value) > MAX_NAME_CHARS:
        return f"{what} {shown(value)} is longer than {MAX_NAME_CHARS} characters"
    if not spaces and any(ch.isspace() for ch in value):
        return f"{what} {shown(value)} holds white space; a name is one word (letters, digits, _ - . / and such)"
    if not all(ch.isprintable() or ch == " " for ch in value):
        return f"{what} {shown(value)} holds a control or other unprintable character"
    return None


def name_from_path(path: str) -> str:
    """The default name of a file's contents: its file name without the suffix, with every unprintable
    character (a vertical tab, U+2028) turned into ``_`` and cut to MAX_NAME_CHARS."""
    from pathlib import Path

    stem = Path(path).stem
    return "".join(ch if ch.isprintable() else "_" for ch in stem)[:MAX_NAME_CHARS] or "unnamed"


def text_problem(value: Any, what: str) -> str | None:
    """What is wrong with ``value`` as free text (a string without control characters other than tab and
    line breaks), or None."""
    if not isinstance(value, str):
        return f"{what} must be a string, not {kind(value)} ({shown(value)})"
    bad = _CONTROL.search(value)
    if bad is not None:
        return (f"{what} holds the control character U+{ord(bad.group()):04X}; free text may hold tabs and "
                "line breaks but no other control characters")
    return None
