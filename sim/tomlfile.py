"""Reading TOML input files with errors that point at a file and line."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from sim.errors import ScenarioError

#: Format versions this fencesim reads.  A file without ``format`` is current.
FORMAT_VERSION = 1


def read_toml(path: str | Path) -> tuple[dict[str, Any], str]:
    """Parse a TOML file; return (data, text).  Errors carry ``file:line``."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError("no such file", str(path)) from None
    except IsADirectoryError:
        raise ScenarioError("is a directory, not a scenario file", str(path)) from None
    except OSError as error:
        raise ScenarioError(f"cannot read: {error.strerror}", str(path)) from None
    except UnicodeDecodeError:
        raise ScenarioError("not UTF-8 text", str(path)) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        message = str(error)
        match = re.search(r"\(at line (\d+), column (\d+)\)", message)
        where = f"{path}:{match.group(1)}" if match else str(path)
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", message)
        raise ScenarioError(f"malformed TOML: {message}", where) from None
    check_format(data, str(path), text)
    return data, text


def line_of(text: str, needle: str, start_key: str | None = None) -> int | None:
    """1-based line of the first occurrence of ``needle``; with ``start_key``, only from
    the first line that starts with that key (``plan``, ``events``) onwards."""
    lines = text.splitlines()
    first = 0
    if start_key is not None:
        key = start_key.rstrip(" =")
        for number, line in enumerate(lines):
            stripped = line.lstrip()
            if stripped.startswith(key) and stripped[len(key):].lstrip().startswith("="):
                first = number
                break
    for number in range(first, len(lines)):
        if needle in lines[number]:
            return number + 1
    return None


def where(path: str | Path, text: str, needle: str, start_key: str | None = None) -> str:
    """``file:line`` for the line holding ``needle``, or just ``file``."""
    line = line_of(text, needle, start_key)
    return f"{path}:{line}" if line else str(path)


def check_format(data: dict[str, Any], path: str, text: str) -> None:
    if "format" not in data:
        return
    version = data["format"]
    if not isinstance(version, int) or isinstance(version, bool) or version != FORMAT_VERSION:
        raise ScenarioError(
            f"file format {version!r} is not one this fencesim reads (it reads format {FORMAT_VERSION})",
            where(path, text, "format"),
        )
