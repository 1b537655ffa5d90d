"""The review as a document: a typed tree of blocks that a writer turns into Markdown or HTML.

The review is built once (:func:`sim.report.render.review_document`) and written twice
(:mod:`sim.report.markdown_writer`, :mod:`sim.report.html_writer`), so a section is written in one
place and the two files cannot drift apart by accident.  Where the two files say different things, the
tree says so itself (:class:`OnlyText`, :class:`OnlyBlocks`), in the section that does it.

Text is a tuple of inline pieces.  A plain ``str`` is data (a protocol, an invariant, a detail): HTML
escapes all of it, quotes included.  :class:`Wording` is fencesim's own wording, whose apostrophes HTML
writes as they are.  Blocks are frozen dataclasses; a writer never changes the tree.

A writer's layout rules are its own (Markdown: a blank line after every block; HTML: one block per line
of the file); the few hints a block carries beyond them (:class:`OneLine`, ``blank_after``,
``blank_before``) keep both files byte for byte what earlier versions wrote.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence, Union

#: The two media a review is written in.
Medium = Literal["markdown", "html"]
MARKDOWN: Medium = "markdown"
HTML: Medium = "html"


# -- inline pieces -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Code:
    """A name to type or paste (a protocol, an invariant, a command): backticks, ``<code>``."""

    text: str


@dataclass(frozen=True)
class Strong:
    """Words that must stand out: ``**...**``, ``<b>``."""

    text: "Text"


@dataclass(frozen=True)
class Emphasis:
    """A word stressed: ``*...*``, ``<em>``."""

    text: "Text"


@dataclass(frozen=True)
class Small:
    """An aside in a heading: plain in Markdown, ``<small>`` in HTML."""

    text: "Text"


@dataclass(frozen=True)
class Lead:
    """The words a note opens with: bold in Markdown, which has no box for a note; plain in HTML, whose
    note is boxed."""

    text: "Text"


@dataclass(frozen=True)
class Wording:
    """fencesim's own wording (not data): HTML escapes ``&``, ``<`` and ``>`` only, so its apostrophes stay
    apostrophes."""

    text: str


@dataclass(frozen=True)
class Marked:
    """A phrase already in Markdown's inline syntax (backticks around code), from a helper the terminal
    shares: Markdown writes it as it is, HTML without the backticks."""

    text: str


@dataclass(frozen=True)
class OnlyText:
    """Words that only one medium writes (``medium``: :data:`MARKDOWN` or :data:`HTML`)."""

    medium: Medium
    text: "Text"


Inline = Union[str, Code, Strong, Emphasis, Small, Lead, Wording, Marked, OnlyText]
#: A run of inline pieces (a paragraph's, a heading's, a list item's).
Text = tuple[Inline, ...]


def text(*pieces: Inline) -> Text:
    """``text("under ", Code(protocol))``: the pieces as one :data:`Text`."""
    return tuple(pieces)


# -- blocks ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Heading:
    """A heading of ``level`` 1 (the review) to 4 (a counterexample)."""

    level: int
    text: Text


@dataclass(frozen=True)
class Paragraph:
    """A paragraph; a ``note`` is boxed in HTML.  ``blank_before`` (Markdown): an empty line before it too."""

    text: Text
    note: bool = False
    blank_before: bool = False


@dataclass(frozen=True)
class Lines:
    """Short statements of one kind, one per line: one paragraph in Markdown, a paragraph each in HTML."""

    lines: tuple[Text, ...]


@dataclass(frozen=True)
class BulletList:
    """A bulleted list.  HTML: ``css`` is the list's class; ``one_per_line`` puts each item on a line of
    the file.  Markdown: ``blank_after=False`` leaves out the blank line after the items."""

    items: tuple[Text, ...]
    css: str | None = None
    one_per_line: bool = False
    blank_after: bool = True


@dataclass(frozen=True)
class Table:
    """A table of text cells.  HTML only: the table's ``ident``, a class per cell (``classes[row][column]``,
    ``""`` for none) and ``wide`` (the page's whole width)."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    ident: str | None = None
    classes: tuple[tuple[str, ...], ...] | None = None
    wide: bool = False


@dataclass(frozen=True)
class Figure:
    """A figure of the report folder, ``figures/<stem>.svg``: linked from Markdown with ``alt`` as its
    text, inlined in HTML (the SVG itself) above ``caption``."""

    stem: str
    alt: str
    caption: str


@dataclass(frozen=True)
class CodeBlock:
    """Preformatted text (a timeline): a fenced block, ``<pre>``."""

    text: str


@dataclass(frozen=True)
class Folded:
    """Blocks folded under a one-line ``summary`` (``<details>``, in both media)."""

    summary: Text
    blocks: tuple["Block", ...]


@dataclass(frozen=True)
class OneLine:
    """Blocks that HTML writes on one line of the file (Markdown writes them as it writes any block)."""

    blocks: tuple["Block", ...]


@dataclass(frozen=True)
class OnlyBlocks:
    """Blocks that only one medium writes (``medium``: :data:`MARKDOWN` or :data:`HTML`)."""

    medium: Medium
    blocks: tuple["Block", ...]


Block = Union[Heading, Paragraph, Lines, BulletList, Table, Figure, CodeBlock, Folded, OneLine, OnlyBlocks]


@dataclass(frozen=True)
class Document:
    """A whole document: its ``title`` (HTML's ``<title>``) and its blocks, first of all its heading."""

    title: str
    blocks: tuple[Block, ...]


def table(columns: Sequence[str], rows: Sequence[Sequence[str]], ident: str | None = None,
          classes: Sequence[Sequence[str]] | None = None, wide: bool = False) -> Table:
    """A :class:`Table` from lists (the shape the review's table helpers return)."""
    return Table(tuple(columns), tuple(tuple(row) for row in rows), ident,
                 None if classes is None else tuple(tuple(row) for row in classes), wide)
