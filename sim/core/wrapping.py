"""Text that fits a width without breaking a name: protocol labels, invariants, cell names are broken only
after a ``,`` or an ``=`` (``receipt_check=trusting`` may become ``receipt_check=`` / ``trusting``, never
``receipt_check=trusti`` / ``ng``), and lists only between their items."""

from __future__ import annotations

import re
from typing import Any, Iterable

#: Where a name may be broken: after these characters (and at spaces).
BREAK_AFTER = ",="
_PIECES = re.compile(r"[^\s,=]*[,=]+|[^\s,=]+")


def wrap_text(text: str, width: int) -> list[str]:
    """``text`` as lines of at most ``width`` characters, broken only at spaces and after ``,`` and ``=``; a
    piece longer than the width (one name with no break in it) stands alone on its line, whole."""
    tokens = [(piece, index > 0 and j == 0) for index, word in enumerate(text.split())
              for j, piece in enumerate(_PIECES.findall(word))]
    lines: list[str] = []
    line = ""
    for piece, space in tokens:
        glue = " " if space and line else ""
        if line and len(line) + len(glue) + len(piece) > width:
            lines.append(line)
            line = piece
        else:
            line = f"{line}{glue}{piece}"
    if line:
        lines.append(line)
    return lines or [""]


def wrap_names(names: Iterable[str], width: int, separator: str = ", ") -> list[str]:
    """Names joined by ``separator`` in lines of at most ``width`` characters, broken only between names (a
    name longer than the width is broken after its ``,`` and ``=``, never inside a word)."""
    lines: list[str] = []
    line = ""
    items = list(names)
    for index, name in enumerate(items):
        item = name + (separator.rstrip() if index < len(items) - 1 else "")
        if not line:
            candidate = item
        else:
            candidate = f"{line} {item}"
        if line and len(candidate) > width:
            lines.append(line)
            line = item
        else:
            line = candidate
        if len(line) > width:
            *done, line = wrap_text(line, width)
            lines.extend(done)
    if line:
        lines.append(line)
    return lines


def soft_breaks(text: str, marker: str = "<wbr>") -> str:
    """HTML: ``marker`` after every ``,`` and ``=`` of an already escaped text, so a browser breaks a long
    name there rather than inside a word."""
    return re.sub(r"([,=])(?=\S)", lambda m: m.group(1) + marker, text)


#: Characters a name cell of a terminal table is pre-broken to (after ``,`` and ``=``), so the table library
#: never has to fold it inside a word.
NAME_CELL_WIDTH = 32


def name_cell(text: str, width: int = NAME_CELL_WIDTH) -> str:
    """A protocol label (or any name) as the lines a table cell shows: broken after ``,`` and ``=`` only."""
    return "\n".join(wrap_text(text, width)) if len(text) > width else text


def name_width(texts: Iterable[str]) -> int:
    """The widest line of these (pre-broken) cells: a name column's minimum width."""
    return max((len(line) for text in texts for line in str(text).splitlines()), default=1)


def unbroken(table: Any) -> Any:
    """A rich ``Table`` whose columns are never narrower than their longest word (header included): the table
    library then breaks a cell only at spaces -- and a name cell only where :func:`name_cell` broke it, after
    ``,`` and ``=`` -- never inside ``unknown_as_failed``.  Returns the table."""
    for column in table.columns:
        texts = [str(column.header), *(str(cell) for cell in column.cells)]
        longest = max((len(word) for text in texts for word in text.split()), default=1)
        column.min_width = max(column.min_width or 0, longest)
    return table
