"""The report's document model: one tree of blocks, written as Markdown and as HTML by two writers."""

from __future__ import annotations

import pytest

from sim.report import html_writer, markdown_writer
from sim.report.document import (
    HTML,
    MARKDOWN,
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
    Wording,
    table,
)

SVG = '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"></svg>'


def _both(*blocks) -> tuple[str, str]:
    document = Document("t", (Heading(1, ("t",)), *blocks))
    return markdown_writer.write(document), html_writer.write(document, {"f": SVG})


def test_every_block_is_written_by_both_writers():
    """Each kind of block appears in both files, each in its medium's syntax."""
    md, page = _both(Heading(2, ("name ", Small(("(aside)",)))), Paragraph(("a ", Code("x"), " ", Strong(("b",)))),
                     Lines((("one",), ("two",))), BulletList((("i",), ("j",))), table(["c"], [["v|w"]]),
                     Figure("f", "alt words", "Caption"), CodeBlock("line\n\n"),
                     Folded(("2 hold",), (BulletList((("k",),), one_per_line=True),)))
    assert md == ("# t\n\n## name (aside)\n\na `x` **b**\n\none\ntwo\n\n- i\n- j\n\n| c |\n|---|\n| v\\|w |\n\n"
                  "![alt words](figures/f.svg)\n\n```\nline\n```\n\n<details><summary>2 hold</summary>\n\n- k\n\n"
                  "</details>\n\n")
    body = page.split("<body>\n", 1)[1]
    assert body == ('<h1>t</h1>\n<h2>name <small>(aside)</small></h2>\n<p>a <code>x</code> <b>b</b></p>\n'
                    '<p>one</p>\n<p>two</p>\n<ul><li>i</li><li>j</li></ul>\n'
                    '<table><thead><tr><th>c</th></tr></thead><tbody><tr><td>v|<wbr>w</td></tr></tbody></table>\n'
                    '<figure class="plot" data-name="f"><svg xmlns="http://www.w3.org/2000/svg"></svg>'
                    '<figcaption>Caption</figcaption></figure>\n<pre>line\n\n</pre>\n'
                    '<details><summary>2 hold</summary><ul>\n<li>k</li>\n</ul></details>\n</body></html>\n')


def test_a_medium_writes_only_its_own_blocks_and_words():
    """OnlyBlocks and OnlyText reach one file and leave no trace (not even an empty line) in the other."""
    md, page = _both(OnlyBlocks(MARKDOWN, (Paragraph(("md only",)),)), OnlyBlocks(HTML, (Paragraph(("html only",)),)),
                     Paragraph(("x", OnlyText(MARKDOWN, (";md",)), OnlyText(HTML, (";html",)))))
    assert "md only" in md and "html only" not in md and "x;md\n" in md
    assert "html only" in page and "md only" not in page and "<p>x;html</p>" in page
    assert "<h1>t</h1>\n<p>html only</p>\n<p>x;html</p>\n</body>" in page


def test_data_is_escaped_and_fencesim_s_own_wording_keeps_its_quotes():
    """A str is data (quotes escaped too); Wording escapes only markup; Marked drops Markdown's backticks."""
    _, page = _both(Paragraph(("it's <b>", Wording(" the seed's & <i>"), Marked(" `a` & b"))))
    assert "<p>it&#x27;s &lt;b&gt; the seed's &amp; &lt;i&gt; a &amp; b</p>" in page
    md, _ = _both(Paragraph(("it's <b>", Wording(" the seed's"), Marked(" `a`"))))
    assert "it's <b> the seed's `a`\n" in md


def test_a_note_s_lead_is_bold_in_markdown_and_boxed_in_html():
    """Markdown has no box for a note, so its lead is bold; HTML boxes the note and leaves the lead plain."""
    md, page = _both(Paragraph((Lead(("Applies nothing:",)), " a, ", Emphasis(("b",))), note=True))
    assert "**Applies nothing:** a, *b*\n" in md
    assert '<p class="note">Applies nothing: a, <em>b</em></p>' in page


def test_one_line_joins_blocks_in_html_only():
    """OneLine puts its blocks on one line of the HTML file; Markdown writes them as separate blocks."""
    md, page = _both(OneLine((Heading(3, ("h",)), BulletList((("a",),), css="claims", one_per_line=True))))
    assert "### h\n\n- a\n\n" in md
    assert '<h3>h</h3><ul class="claims">\n<li>a</li>\n</ul>' in page


def test_markdown_spacing_hints():
    """blank_after=False leaves out a list's blank line; blank_before=True adds one before a paragraph; an
    empty list is only its blank line."""
    md, _ = _both(BulletList((("a",),), blank_after=False), Paragraph(("p",), blank_before=True), BulletList(()))
    assert md.endswith("# t\n\n- a\n\np\n\n\n")


def test_a_writer_refuses_what_it_does_not_know():
    """A block a writer has no rule for is a bug, never silently dropped."""
    with pytest.raises(TypeError):
        markdown_writer.lines([object()])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        html_writer.parts([object()], {})  # type: ignore[list-item]


def test_table_cells_break_only_between_tokens():
    """A verdict-matrix or map cell breaks at spaces and after ',', '=', ':', '|' and a hyphen between words,
    never inside a token: `lost_update` and `stale_rev` are nowrap spans with no `<wbr>` inside (no
    `lost_` / `update`, no `rejected:stale_` / `rev`), and the cells' CSS forbids breaking anywhere else."""
    import re

    from sim.report.html_writer import STYLE, token_breaks

    assert token_breaks("lost_update, rejected:stale_rev") == \
        '<span class="tok">lost_update,</span> rejected:<wbr><span class="tok">stale_rev</span>'
    assert token_breaks("keyed-fingerprint-reconcile,receipt_check=trusting") == \
        'keyed-<wbr>fingerprint-<wbr>reconcile,<wbr><span class="tok">receipt_check=</span><wbr>trusting'
    assert token_breaks("1,000 at 12:30") == '<span class="tok">1,000</span> at <span class="tok">12:30</span>'
    html = html_writer.table(table(["protocol"], [["lost_update, duplicate_effect"]]))
    assert "_<wbr>" not in html and '<span class="tok">duplicate_effect</span>' in html
    cells = re.search(r"th, td \{[^}]*\}", STYLE).group(0)
    assert "anywhere" not in cells and "overflow-wrap: normal" in cells and "word-break: normal" in cells
    assert re.search(r"span\.tok \{ white-space: nowrap; \}", STYLE)
