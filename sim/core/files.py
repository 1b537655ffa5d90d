"""Reading input files with errors that point at a file and line; writing outputs
so that a crash never leaves half a file or destroys the previous one.

Locating a line costs a scan of the file, so loaders locate only on error:
loading a valid file is linear in its size.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim.core.errors import ScenarioError
from sim.core.values import MAX_NESTING, JsonObject, JsonValue, plain_problem, shown

#: Format versions this fencesim reads.  A file without ``format`` is current.
FORMAT_VERSION = 1
#: The largest input file fencesim reads (a limit on everything).
MAX_INPUT_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Source:
    """A file's path and text, for locating the line of a key or value on error."""

    path: str
    text: str = ""

    def line_of(self, needle: str, after_key: str | None = None) -> int | None:
        """1-based line of the first ``needle``; with ``after_key``, only from the line
        that assigns that key (``plan``, ``events``) onwards."""
        lines = self.text.splitlines()
        first = 0
        if after_key is not None:
            key = after_key.rstrip(" =")
            for number, line in enumerate(lines):
                stripped = line.lstrip()
                if stripped.startswith(key) and stripped[len(key):].lstrip().startswith("="):
                    first = number
                    break
        for number in range(first, len(lines)):
            if needle in lines[number]:
                return number + 1
        return None

    def where(self, needle: str | None = None, after_key: str | None = None) -> str:
        """``file:line`` for the line holding ``needle``, or just ``file``."""
        if needle is None or not self.text:
            return self.path
        line = self.line_of(needle, after_key)
        return f"{self.path}:{line}" if line else self.path

    def where_key(self, key: str) -> str:
        """``file:line`` of the line where a table key is defined (``"key" =`` or ``key =``), not of the first line
        that merely contains its text (``step-dedup`` is inside ``protocol = "step-dedupe"``)."""
        for needle in (f'"{key}"', f"'{key}'", f"{key} =", f"{key}="):
            if self.text and self.line_of(needle):
                return self.where(needle)
        return self.where(key)

    def error(self, message: str, needle: str | None = None, after_key: str | None = None) -> ScenarioError:
        return ScenarioError(message, self.where(needle, after_key))


def read_text(path: str | Path, what: str = "input file") -> str:
    """Read a UTF-8 text file; refuse directories, FIFOs, devices, huge files and text that is not UTF-8
    (naming the line and column of the first byte that is not)."""
    path = Path(path)
    try:
        info = path.stat()
    except FileNotFoundError:
        raise ScenarioError("no such file", str(path)) from None
    except (OSError, ValueError) as error:  # ValueError: a NUL in the path
        raise ScenarioError(f"cannot read: {getattr(error, 'strerror', None) or error}", str(path)) from None
    if stat.S_ISDIR(info.st_mode):
        raise ScenarioError(f"is a directory, not a {what}", str(path))
    if not stat.S_ISREG(info.st_mode):
        raise ScenarioError(f"is not a regular file (a FIFO or device?); give a {what}", str(path))
    if info.st_size > MAX_INPUT_BYTES:
        raise ScenarioError(f"is {info.st_size} bytes; the limit for a {what} is {MAX_INPUT_BYTES}", str(path))
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ScenarioError(f"cannot read: {error.strerror}", str(path)) from None
    if len(data) > MAX_INPUT_BYTES:  # it grew while being read
        raise ScenarioError(f"is more than {MAX_INPUT_BYTES} bytes; the limit for a {what}", str(path))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        raise ScenarioError(f"not UTF-8 text at column {column} (byte 0x{data[error.start]:02x}); save the "
                            "file as UTF-8", f"{path}:{line}") from None


#: A byte-order mark at the start of a text file (some editors write one).
BYTE_ORDER_MARK = "\ufeff"


def _pairs(pairs: list[tuple[str, JsonValue]]) -> JsonObject:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"key {shown(key)} appears twice in one object")
            seen.add(key)
    return out


def _finite_only(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON allows")


def strict_json(text: str) -> Any:
    """JSON as fencesim's own files hold it: a key twice in one object, ``NaN`` or ``Infinity`` is a
    ``ValueError`` (never a silent last-one-wins)."""
    return json.loads(text, object_pairs_hook=_pairs, parse_constant=_finite_only)


def refuse_byte_order_mark(text: str, path: str | Path) -> None:
    if text.startswith(BYTE_ORDER_MARK):
        raise ScenarioError("the file starts with a byte-order mark (U+FEFF), which TOML and JSON lines do not "
                            "allow; save it as UTF-8 without a BOM", f"{path}:1")


def read_toml(path: str | Path, what: str = "scenario file") -> tuple[dict[str, Any], Source]:
    """Parse a TOML file; return (data, source).  Errors carry ``file:line``.

    Every value must be plain (:func:`sim.core.values.plain_problem`): no TOML dates or times, no
    integer beyond 64 bits, no nesting deeper than MAX_NESTING -- whatever the key, so no loader
    meets a value of a shape it never expects."""
    text = read_text(path, what)
    refuse_byte_order_mark(text, path)
    source = Source(str(path), text)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        message = str(error)
        match = re.search(r"\(at line (\d+), column (\d+)\)", message)
        where = f"{path}:{match.group(1)}" if match else str(path)
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", message)
        raise ScenarioError(f"malformed TOML: {message}", where) from None
    except RecursionError:
        raise ScenarioError(f"malformed TOML: lists or tables nested too deeply (at most {MAX_NESTING} levels)",
                            str(path)) from None
    except (ValueError, OverflowError):
        raise ScenarioError("malformed TOML: an integer of more than 4300 digits (integers are at most "
                            "2^63 - 1 in size)", str(path)) from None
    _check_plain(data, source)
    check_format(data, source)
    return data, source


def _check_plain(data: JsonObject, source: Source) -> None:
    """Refuse the first value that is not plain, at the line of its key (strings, the bulk of any file,
    are passed over without a call)."""
    stack: list[tuple[str, Any, int]] = [("", data, 0)]
    while stack:
        key, container, depth = stack.pop()
        if depth > MAX_NESTING:
            raise source.error(f"{key!r}: lists and tables nested more than {MAX_NESTING} deep", key)
        pairs = container.items() if isinstance(container, dict) else ((key, v) for v in container)
        for name, value in pairs:
            if type(value) is str:
                continue
            if isinstance(value, (dict, list)):
                stack.append((str(name), value, depth + 1))
                continue
            problem = plain_problem(value)
            if problem:
                raise source.error(f"{name!r}: {problem}", str(name))


def check_format(data: JsonObject, source: Source) -> None:
    if "format" not in data:
        return
    version = data["format"]
    if not isinstance(version, int) or isinstance(version, bool) or version != FORMAT_VERSION:
        raise source.error(
            f"file format {shown(version)} is not one this fencesim reads (it reads format {FORMAT_VERSION})",
            "format")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: Characters of a file's name kept in its temporary name (which stays short whatever the name).
TEMPORARY_NAME_KEPT = 100
#: The mode of every file fencesim writes: 0666 less the process's umask, as ``open()`` gives.
_CREATE_MODE = 0o666 & ~_umask()


def write_atomically(path: str | Path, text: str) -> None:
    """Write to a temporary name beside ``path``, fsync, then rename.

    A crash never leaves half a file and never destroys the previous one; the
    temporary file is removed if anything fails.
    """
    write_files_atomically({Path(path): text})


def write_files_atomically(files: dict[Path, str]) -> None:
    """Write several files as a unit: all are written and fsynced under temporary
    names first, then renamed one after the other; on any failure none is renamed
    and every temporary file is removed.

    A symbolic link is followed (the link is kept, its target replaced).  The
    temporary name is short whatever the file's name, so a name the file
    system accepts can always be written.  A failure is an ``OSError`` that is
    also an :class:`~sim.core.errors.InputError`: one line naming the file.
    """
    from sim.core.outputs import WriteFailed

    temporaries: list[tuple[str, Path]] = []
    current = None
    try:
        for path, text in files.items():
            path = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)
            current = path
            path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(prefix=f".{path.name[:TEMPORARY_NAME_KEPT]}.", suffix=".tmp",
                                                 dir=path.parent)
            temporaries.append((temporary, path))
            os.fchmod(handle, _CREATE_MODE)  # mkstemp makes 0600; a written file gets what open() would give
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
        for temporary, path in temporaries:
            current = path
            os.replace(temporary, path)
    except BaseException as error:
        for temporary, _ in temporaries:
            try:
                os.unlink(temporary)
            except FileNotFoundError:
                pass
        if isinstance(error, OSError) and not isinstance(error, WriteFailed):
            reason = error.strerror or str(error)
            raise WriteFailed(f"could not write {current}: {reason}") from None
        raise


def json_error_words(error: Exception) -> str:
    """What is wrong with a JSON text, and where: ``Invalid control character at line 3, column 14``."""
    message = getattr(error, "msg", None)
    if message is None:
        return str(error).split(":")[0]
    line, column = getattr(error, "lineno", None), getattr(error, "colno", None)
    message = message[:-3].rstrip() if message.endswith(" at") else message
    return f"{message} at line {line}, column {column}" if line is not None else message
