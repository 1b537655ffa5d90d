"""A :class:`~sim.report.document.Document` as one self-contained HTML file (``report.html``).

Every figure is inlined as its SVG and the style sheet is in the page, so the file makes no external
request: it reads offline and can be mailed.  Each block is one line of the file (a :class:`OneLine`
joins its blocks on one); data is escaped, quotes included, and a table cell breaks only between its
tokens -- at spaces and after ``,``, ``=``, ``:``, ``|`` or a hyphen between words -- so that long protocol
names wrap instead of widening a table, and a token (``lost_update``, ``stale_rev``) is never cut in two.
"""

from __future__ import annotations

import html
import re
from typing import Iterable, Mapping

from sim.report.document import (
    HTML,
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

STYLE = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1200px;
       color: #222; line-height: 1.45; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { border-bottom: 2px solid #4c72b0; padding-bottom: .2em; margin-top: 2em; }
table { border-collapse: collapse; margin: .8em 0; font-size: .85em; max-width: 100%; }
table.wide { width: 100%; }
th, td { border: 1px solid #ccc; padding: .3em .5em; text-align: left; vertical-align: top;
         overflow-wrap: normal; word-break: normal; hyphens: none; }
th { background: #f0f3f8; position: sticky; top: 0; z-index: 1; }
span.tok { white-space: nowrap; }
table[id^="verdict-matrix-"] { font-size: .8em; }
table[id^="verdict-matrix-"] th, table[id^="verdict-matrix-"] td { padding: .25em .35em; }
@media (max-width: 1180px) { table[id^="verdict-matrix-"] { font-size: .7em; } }
@media (max-width: 1050px) { table[id^="verdict-matrix-"] { font-size: .65em; } }
td.bad { background: #f6d5d6; } td.good { background: #dcefe2; } td.none { background: #eee; }
pre { background: #f7f7f7; padding: .6em; overflow-x: auto; font-size: .8em; }
code { background: #f3f3f3; padding: 0 .2em; overflow-wrap: anywhere; }
figure { margin: 1em 0; max-width: 100%; } figure svg { max-width: 100%; height: auto; }
figcaption { font-size: .9em; color: #555; }
details summary { cursor: pointer; }
.note { background: #fff6e0; border-left: 4px solid #dd8452; padding: .5em .8em; }
@page matrix { size: A4 landscape; }
@media print {
  body { max-width: none; margin: 0; padding: 0; font-size: 10pt; }
  h2 { break-before: page; } h3, h4 { break-after: avoid; }
  table[id^="verdict-matrix-"] { font-size: 7pt; page: matrix; }
  figure, tr { break-inside: avoid; } thead { display: table-header-group; } th { position: static; }
  pre { white-space: pre-wrap; overflow: visible; }
  details > * { display: block; } details::details-content { content-visibility: visible; display: block; }
}
"""


def write(document: Document, svgs: Mapping[str, str]) -> str:
    """The whole page; ``svgs`` holds each figure's SVG text by stem (every :class:`Figure` must have one)."""
    head = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{html.escape(document.title)}</title>", f"<style>{STYLE}</style></head><body>"]
    return "\n".join([*head, *parts(document.blocks, svgs), "</body></html>"]) + "\n"


def parts(blocks: Iterable[Block], svgs: Mapping[str, str]) -> list[str]:
    """The lines of the file that ``blocks`` make, one per block (a block HTML does not write makes none)."""
    out: list[str] = []
    for block in blocks:
        out += _block(block, svgs)
    return out


def inline(text: Text) -> str:
    """``text`` as HTML: data escaped, quotes included; fencesim's own wording with its quotes kept."""
    out = []
    for piece in text:
        if isinstance(piece, str):
            out.append(html.escape(piece))
        elif isinstance(piece, Wording):
            out.append(html.escape(piece.text, quote=False))
        elif isinstance(piece, Marked):
            out.append(html.escape(piece.text.replace("`", "")))
        elif isinstance(piece, Code):
            out.append(f"<code>{html.escape(piece.text)}</code>")
        elif isinstance(piece, Strong):
            out.append(f"<b>{inline(piece.text)}</b>")
        elif isinstance(piece, Emphasis):
            out.append(f"<em>{inline(piece.text)}</em>")
        elif isinstance(piece, Small):
            out.append(f"<small>{inline(piece.text)}</small>")
        elif isinstance(piece, Lead):
            out.append(inline(piece.text))
        elif isinstance(piece, OnlyText):
            out.append(inline(piece.text) if piece.medium == HTML else "")
        else:
            raise TypeError(f"no HTML for {piece!r}")
    return "".join(out)


def _block(block: Block, svgs: Mapping[str, str]) -> list[str]:
    if isinstance(block, Heading):
        return [f"<h{block.level}>{inline(block.text)}</h{block.level}>"]
    if isinstance(block, Paragraph):
        return [('<p class="note">' if block.note else "<p>") + inline(block.text) + "</p>"]
    if isinstance(block, Lines):
        return [f"<p>{inline(line)}</p>" for line in block.lines]
    if isinstance(block, BulletList):
        opening = f'<ul class="{block.css}">' if block.css else "<ul>"
        items = [f"<li>{inline(item)}</li>" for item in block.items]
        return ["\n".join([opening, *items, "</ul>"]) if block.one_per_line else opening + "".join(items) + "</ul>"]
    if isinstance(block, Table):
        return [table(block)]
    if isinstance(block, Figure):
        return [figure(svgs[block.stem], block.caption, block.stem)]
    if isinstance(block, CodeBlock):
        return [f"<pre>{html.escape(block.text)}</pre>"]
    if isinstance(block, Folded):
        inner = "\n".join(parts(block.blocks, svgs))
        return [f"<details><summary>{inline(block.summary)}</summary>{inner}</details>"]
    if isinstance(block, OneLine):
        return ["".join(parts(block.blocks, svgs))]
    if isinstance(block, OnlyBlocks):
        return parts(block.blocks, svgs) if block.medium == HTML else []
    raise TypeError(f"no HTML for {block!r}")


#: Where a table cell may break besides spaces and hyphens: after these -- between the words of a name
#: (``receipt_check=`` / ``trusting``, ``lost_`` / ``update``), never inside a word (``updat`` / ``e``): the
#: cells' CSS forbids breaking anywhere else.
BREAK_MARKS = (",", "=", ":", "|", "_")


def breakable(text: object) -> str:
    """Escaped text with a break opportunity (``<wbr>``) after ``,``, ``=``, ``:``, ``|`` and ``_``: long protocol
    and counterexample names wrap there, between their words, instead of widening a table -- and nowhere
    inside a word.  ``,`` and ``=`` come first: a name breaks there when that is enough."""
    out = html.escape(str(text))
    for mark in BREAK_MARKS:
        out = out.replace(mark, mark + "<wbr>")
    return out


#: Where a token of a table cell ends (a break opportunity, besides spaces): after ``,``, ``=``, ``:`` or ``|``
#: (not between two digits: ``1,000`` and ``12:30`` stay whole), and after a hyphen between two letters.
TOKEN_END = re.compile(r"(?<=[,=:|])(?=[^\d\s])|(?<=[^\d][,=:|])(?=\d)|(?<=[^\W\d_]-)(?=[^\W\d_])")


def token_breaks(text: object) -> str:
    """Escaped text that breaks only between its tokens: at spaces, and after ``,``, ``=``, ``:``, ``|`` and a
    hyphen between words (``<wbr>``); a token with anything but letters and digits in it (``lost_update,``,
    ``stale_rev``) is a ``nowrap`` span, so a browser never breaks inside it (``lost_`` / ``update``).

    >>> token_breaks("lost_update, rejected:stale_rev")
    '<span class="tok">lost_update,</span> rejected:<wbr><span class="tok">stale_rev</span>'
    """
    out = []
    for word in re.split(r"(\s+)", str(text)):
        if not word or word.isspace():
            out.append(html.escape(word))
            continue
        out.append("<wbr>".join(_token(piece) for piece in TOKEN_END.split(word) if piece))
    return "".join(out)


def _token(piece: str) -> str:
    """A token as HTML: a ``nowrap`` span when a mark other than its last character could let a browser break
    it (``lost_update``, ``0.05``); bare otherwise (``applied``, ``step,``: no break inside them)."""
    escaped = html.escape(piece)
    return escaped if piece[:-1].isalnum() or len(piece) == 1 else f'<span class="tok">{escaped}</span>'


def table(block: Table) -> str:
    """A table on one line: a header row, then the body (each cell of class ``classes[i][j]``, if any); cells
    break only between their tokens (:func:`token_breaks`)."""
    head = "".join(f"<th>{token_breaks(c)}</th>" for c in block.columns)
    body = []
    for i, row in enumerate(block.rows):
        cells = []
        for j, value in enumerate(row):
            css = block.classes[i][j] if block.classes else ""
            text = token_breaks(value)
            cells.append(f'<td class="{css}">{text}</td>' if css else f"<td>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    ident = f' id="{block.ident}"' if block.ident else ""
    kind = ' class="wide"' if block.wide else ""
    return f"<table{ident}{kind}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def figure(svg: str, caption: str, name: str) -> str:
    """An inline SVG (from its ``<svg`` element on: no XML prologue inside a page) with its caption."""
    start = svg.find("<svg")
    return (f'<figure class="plot" data-name="{html.escape(name)}">{svg[start:]}'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")
