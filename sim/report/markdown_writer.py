"""A :class:`~sim.report.document.Document` as Markdown (``summary.md``).

Every block is its lines followed by one blank line (an empty list too, so a list that found nothing
still leaves its gap); the document is its lines joined, with a final newline.  Text is written as it
is, except in table cells, where ``|`` is escaped and a line break becomes a space (a cell is one line).
"""

from __future__ import annotations

from typing import Iterable

from sim.report.document import (
    MARKDOWN,
    Block,
    BulletList,
    Code,
    CodeBlock,
    Document,
    Emphasis,
    Figure,
    Folded,
    Heading,
    Lead,
    Lines,
    Marked,
    OneLine,
    OnlyBlocks,
    OnlyText,
    Paragraph,
    Small,
    Strong,
    Table,
    Text,
    Wording,
)


def write(document: Document) -> str:
    """The whole document as Markdown text (its title is its first heading's)."""
    return "\n".join(lines(document.blocks)) + "\n"


def lines(blocks: Iterable[Block]) -> list[str]:
    """The Markdown lines of ``blocks``, each block's blank line after it included."""
    out: list[str] = []
    for block in blocks:
        out += _block(block)
    return out


def inline(text: Text) -> str:
    """``text`` in Markdown's inline syntax."""
    out = []
    for piece in text:
        if isinstance(piece, str):
            out.append(piece)
        elif isinstance(piece, (Wording, Marked)):
            out.append(piece.text)
        elif isinstance(piece, Code):
            out.append(f"`{piece.text}`")
        elif isinstance(piece, (Strong, Lead)):
            out.append(f"**{inline(piece.text)}**")
        elif isinstance(piece, Emphasis):
            out.append(f"*{inline(piece.text)}*")
        elif isinstance(piece, Small):
            out.append(inline(piece.text))
        elif isinstance(piece, OnlyText):
            out.append(inline(piece.text) if piece.medium == MARKDOWN else "")
        else:
            raise TypeError(f"no Markdown for {piece!r}")
    return "".join(out)


def _block(block: Block) -> list[str]:
    if isinstance(block, Heading):
        return ["#" * block.level + " " + inline(block.text), ""]
    if isinstance(block, Paragraph):
        return ([""] if block.blank_before else []) + [inline(block.text), ""]
    if isinstance(block, Lines):
        return [inline(line) for line in block.lines] + [""]
    if isinstance(block, BulletList):
        return [f"- {inline(item)}" for item in block.items] + ([""] if block.blank_after else [])
    if isinstance(block, Table):
        return table(block.columns, block.rows) + [""]
    if isinstance(block, Figure):
        return [f"![{block.alt}](figures/{block.stem}.svg)", ""]
    if isinstance(block, CodeBlock):
        return ["```", block.text.rstrip(), "```", ""]
    if isinstance(block, Folded):
        return [f"<details><summary>{inline(block.summary)}</summary>", "", *lines(block.blocks), "</details>", ""]
    if isinstance(block, OneLine):
        return lines(block.blocks)
    if isinstance(block, OnlyBlocks):
        return lines(block.blocks) if block.medium == MARKDOWN else []
    raise TypeError(f"no Markdown for {block!r}")


def table(columns: Iterable[object], rows: Iterable[Iterable[object]]) -> list[str]:
    """A Markdown table's lines: the header, its rule, a line per row."""
    columns = list(columns)

    def cell(value: object) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    return (["| " + " | ".join(cell(c) for c in columns) + " |", "|" + "---|" * len(columns)]
            + ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows])
