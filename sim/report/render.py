"""The review as Markdown (``summary.md``) and as one self-contained HTML file (``report.html``).

Both are rendered from the same results (``results.json``) through one document
(:mod:`sim.report.document`): :func:`review_document` builds every section of the review once, and the
two writers (:mod:`sim.report.markdown_writer`, :mod:`sim.report.html_writer`) turn it into text.  The
HTML embeds every figure as inline SVG and makes no external request, so it reads offline and can be
mailed.  Where the two files differ (the Markdown names the workload, the shrink's starting length and
the intervals' methods; the HTML boxes notes), the section says so with
:class:`~sim.report.document.OnlyText` or :class:`~sim.report.document.OnlyBlocks`.
"""

from __future__ import annotations

from typing import Sequence

from sim.core.records import json_object, json_text, json_texts
from sim.core.values import JsonObject, JsonValue
from sim.report import html_writer, markdown_writer
from sim.report.document import (
    HTML,
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
    Inline,
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
from sim.report.explain import explanation_lines
from sim.report.phrases import (
    IDENTICAL_WORDS,
    advice_text,
    advised,
    coverage_table,
    coverage_words,
    group_advice,
    group_heading,
    headline_rows,
    identical_lines,
    map_lines,
    map_rows,
    matrix_rows,
    proof_text,
    section_rows,
    shown_examples,
    sorted_claims,
)
from sim.report.results import (
    CertifyDocument,
    CounterexampleRow,
    Cut,
    DesignRow,
    ReportMeta,
    ReviewDocument,
    TransitionAnswer,
)
from sim.report.triage import triage_table, triage_words

#: The review's title (its first heading, and the HTML page's title).
TITLE = "fencesim design review"

#: ``figures[key][kind]``: the file stem of each figure, by design name or counterexample name
#: (``sim.report.folder.draw``).
FigureNames = dict[str, dict[str, str]]


def markdown(results: ReviewDocument, figures: FigureNames) -> str:
    """``summary.md``: every section of the review, figures linked as SVG files."""
    return markdown_writer.write(review_document(results, figures))


def to_html(results: ReviewDocument, figures: FigureNames, svgs: dict[str, str]) -> str:
    """``report.html``: the same review as ``summary.md``, one file, figures inline (``svgs`` by stem)."""
    return html_writer.write(review_document(results, figures), svgs)


def review_document(results: ReviewDocument, figures: FigureNames) -> Document:
    """The whole review as one document: a title, what made it, any budget that stopped it, each design."""
    statistics = "; ".join(f"{k}: {v}" for k, v in results.statistics.items())
    meta = results.meta or ReportMeta()
    blocks: list[Block] = [
        Heading(1, (TITLE,)),
        Paragraph(("fencesim ", meta.fencesim_version, " at commit ", Code(meta.commit),
                   f"; {len(results.designs)} design(s)", OnlyText(MARKDOWN, ("; intervals: ",)),
                   OnlyText(HTML, (". Intervals: ",)), statistics, "."))]
    cut = list(dict.fromkeys(c.title for d in results.designs for c in d.budget_cuts or ()))
    if results.budget_stopped or cut:
        blocks.append(Paragraph((Lead((f"A budget of {results.budget_s} s stopped part of this review",)),
                                 " (", ", ".join(cut or results.budget_stopped), ")",
                                 OnlyText(MARKDOWN, (Wording("; see each design's "), Emphasis(("not covered",)))),
                                 "."), note=True))
    for design in results.designs:
        blocks += _design(design, figures)
    return Document(TITLE, tuple(blocks))


def _design(design: DesignRow, figures: FigureNames) -> list[Block]:
    key = design.name
    names, workload = figures[key], design.workload
    blocks: list[Block] = [Heading(2, (key, " ", Small(("(", design.family, " family: ", design.family_title,
                                                        ")"))))]
    if design.description:
        blocks.append(Paragraph((design.description,)))
    blocks.append(OnlyBlocks(MARKDOWN, (Paragraph((
        "Workload ", Code(workload.name), f": fault classes {', '.join(workload.classes)}; "
        f"{design.seeds_done} seeds per protocol.")),)))
    blocks += [Heading(3, ("Safety and availability",)), table(*headline_rows(design), ident=f"headline-{key}",
                                                               wide=True)]
    blocks += _notes(design)
    columns, rows, classes = matrix_rows(design)
    blocks += [
        Figure(names["safety"], "safety versus availability", "Safety versus availability"),
        OneLine((Heading(3, ("Verdict matrix",)), Paragraph((
            "Every protocol replays every scripted scenario and every minimal counterexample with no seed.",)))),
        table(columns, rows, f"verdict-matrix-{key}", classes, wide=True),
        Figure(names["heatmap"], "verdict matrix", "Verdict matrix")]
    blocks += _optional_sections(design, names)
    if design.coverage:
        blocks += [Heading(3, ("Coverage, saturation and blast radius",)), Paragraph((coverage_words(design),)),
                   table(*coverage_table(design), ident=f"coverage-{key}", wide=True),
                   Figure(names["saturation"], "saturation", "Distinct behaviours against seeds")]
    blocks += _claims(design)
    if design.triage:
        blocks += [OneLine((Heading(3, ("Triage",)), Paragraph((triage_words(design.triage),)))),
                   table(*triage_table(design.triage), ident=f"triage-{key}", wide=True)]
    blocks.append(Heading(3, ("Minimal counterexamples",)))
    blocks += _examples(design, figures)
    for section in design.sections:
        blocks += _section(section)
    cut = design.cut("sections")
    if cut is not None:
        blocks += _cut_section(cut.title.removeprefix("the ").capitalize(), cut)
    blocks.append(OneLine((Heading(3, ("Not covered",)), _not_covered(design))))
    return blocks


def _optional_sections(design: DesignRow, names: dict[str, str]) -> list[Block]:
    """The interference curves, the design map and the Engine table, or where the budget cut each."""
    key = design.name
    blocks: list[Block] = []
    if any(design.interference.values()):
        blocks += [Heading(3, ("Violations against interference",)),
                   Figure(names["interference"], "interference", "Violating runs as faults per run grow")]
    elif (cut := design.cut("interference")) is not None:
        blocks += _cut_section("Violations against interference", cut)
    if design.map:
        blocks += [OneLine((Heading(3, ("Design map",)), _bullets(map_lines(design.map)))),
                   table(*map_rows(design.map), ident=f"map-{key}", wide=True),
                   Figure(names["pareto"], "design map", "Safety against cost, Pareto front marked")]
    elif (cut := design.cut("map")) is not None:
        blocks += _cut_section("Design map", cut)
    if design.certify:
        blocks += _certify(design.certify, key)
    elif (cut := design.cut("certify")) is not None:
        blocks += _cut_section(f"Engine: {cut.title.partition('(')[2].rstrip(')')}", cut)
    return blocks


def _cut_section(heading: str, cut: Cut) -> list[Block]:
    """Where a section the budget cut would stand: its heading, what was left out and the command that
    completes it."""
    return [OneLine((Heading(3, (heading,)), Paragraph((
        Strong(("Cut by the budget:",)), " ", cut.left_out, ". ", Code(cut.command), " completes it."),
        note=True)))]


def _not_covered(design: DesignRow) -> BulletList:
    """What the review did not cover; each budget cut's line with its command marked as code.  (A review
    written before cuts were listed names only the phases the budget stopped.)"""
    cuts = {cut.line(): cut for cut in design.budget_cuts or ()}
    items: list[tuple[Inline, ...]] = [
        (f"the budget cut {cuts[line].title}: {cuts[line].left_out}; ", Code(cuts[line].command),
         " completes it") if line in cuts else (line,) for line in design.not_covered]
    if design.budget_cuts is None and design.budget_stopped:
        items.append((f"the budget stopped: {', '.join(design.budget_stopped)}",))
    return BulletList(tuple(items), one_per_line=True)


def _certify(document: CertifyDocument, key: str) -> list[Block]:
    """The engine's certificate (``fencesim certify``): per transition, its verdict, the shortest order of each
    finding and the smallest change its endpoint can take."""
    knobs = f" with {document.knobs_after_engine}" if document.knobs_after_engine else ""
    stopped = "" if document.complete else " The search was stopped by a limit: nothing is proved."
    rows = []
    for answer in document.transitions:
        change = answer.change if answer.change is not None else "-"
        if answer.change_checked:
            change += " (checked by the search)"
        rows.append([answer.transition, answer.verdict, _certify_order(answer, "repeats"),
                     _certify_order(answer, "lost"), change])
    return [OneLine((Heading(3, (f"Engine: {document.engine}",)), Paragraph((
                f"Each transition under the {document.engine} preset{knobs}, searched exhaustively within "
                f"{document.max_events} events ({document.distinct_states:,} states).{stopped}",)))),
            table(["transition", "verdict", "repeats under", "lost under", "smallest change"], rows,
                  ident=f"certify-{key}", wide=True)]


def _certify_order(answer: TransitionAnswer, kind: str) -> str:
    """One finding's order in the engine table, with what its replay shows at the transition."""
    order = answer.order(kind)
    if order is None:
        return "-"
    shows = (answer.shows or {}).get(kind)
    return ("; ".join(order) or "no fault") + (f" (replayed: {', '.join(shows)})" if shows else "")


def _bullets(lines: Sequence[str], one_per_line: bool = False) -> BulletList:
    return BulletList(tuple((line,) for line in lines), one_per_line=one_per_line)


def _notes(design: DesignRow) -> list[Block]:
    """What the headline table cannot say: protocols that do nothing, mechanisms that never acted,
    protocols whose results are identical."""
    blocks: list[Block] = []
    nothing = [r.protocol for r in design.protocols if r.applies_nothing]
    if nothing:
        blocks.append(Paragraph((Lead(("Applies nothing:",)), " ", ", ".join(nothing),
                                 " -- no safety violation, because no work is done."), note=True))
    never = [f"{r.protocol}: {line}" for r in design.protocols for line in r.never_fired or ()]
    if never:
        blocks.append(OneLine((Paragraph((Lead(("Mechanisms that never acted on this workload",)),
                                          Wording(" (their numbers are the design's without them):")), note=True),
                               _bullets(never))))
    if design.identical:
        blocks.append(OneLine((Paragraph((Lead(("Protocols with identical results on this workload",)),
                                          " (one section each below):"), note=True),
                               _bullets(identical_lines(design)))))
    return blocks


def _claims(design: DesignRow) -> list[Block]:
    """FAILS lines first, each in full; the claims that hold folded under one line."""
    fails, holds = sorted_claims(design)
    heading = Heading(3, (Wording("The seed's claims, as the search found them"),))
    failing = BulletList(tuple((Strong(("FAILS",)), " ", Code(json_text(c.get("protocol"))), ": ",
                                json_text(c.get("claim")), " -- ", json_text(c.get("evidence"))) for c in fails),
                         css="claims", one_per_line=True)
    if not design.claims:
        nothing = ("(no claim applies to these protocols)",)
        return [OneLine((heading, OnlyBlocks(HTML, (failing,)))), OnlyBlocks(MARKDOWN, (BulletList((nothing,)),)),
                OnlyBlocks(HTML, (Paragraph(nothing),))]
    blocks: list[Block] = [OneLine((heading, failing))]
    if holds:
        held = BulletList(tuple(("holds ", Code(json_text(c.get("protocol"))), ": ", json_text(c.get("claim")), " -- ",
                                 json_text(c.get("evidence"))) for c in holds), one_per_line=True)
        blocks.append(Folded((f"{len(holds)} claim(s) hold",), (held,)))
    return blocks


def _examples(design: DesignRow, figures: FigureNames) -> list[Block]:
    """Each counterexample shown (:func:`~sim.report.phrases.shown_examples`); a group of protocols with
    identical results is one section, headed by its members."""
    blocks: list[Block] = [] if design.counterexamples else [Paragraph(("None found.",))]
    headed: set[str] = set()
    for example, others in shown_examples(design):
        labels = [example.protocol, *others]
        if others and example.protocol not in headed:
            headed.add(example.protocol)
            blocks.append(Paragraph((Strong((Marked(group_heading([f"`{label}`" for label in labels])),)),
                                     f" ({IDENTICAL_WORDS}; shown once)", OnlyText(MARKDOWN, (":",)),
                                     OnlyText(HTML, (".",))), note=True))
        blocks += _example(example, design, figures, others)
    return blocks


def _example(example: CounterexampleRow, design: DesignRow, figures: FigureNames,
             others: Sequence[str]) -> list[Block]:
    """One minimal counterexample: its order, what breaks, the advice, its swimlane and its timeline."""
    under: list[Inline] = []
    for label in [example.protocol, *others]:
        under += [", ", Code(label)] if under else [Code(label)]
    events = " ; ".join(example.events) or "(no fault needed)"
    swimlane = figures[example.name]["swimlane"]
    ledger = example.ledger[:4]
    return [
        Heading(4, (Code(example.shown_finding), " under ", *under)),
        Paragraph((Wording(f"{len(example.events)} event(s), {proof_text(example)}, from seed {example.seed}"),
                   OnlyText(MARKDOWN, (f" ({example.original_events} events before shrinking)",)), ": ",
                   Code(events))),
        Paragraph(("What breaks: ", example.detail)),
        *([Lines(tuple(("Why: ", line) for line in explanation_lines(example.explanation)))]
          if example.explanation else []),
        Paragraph(("Advisor: ", Marked(advice_text(example.advice, example.invariant, design.availability)))),
        *_group_advice(design, example, others),
        *([Lines(tuple(("Blast radius: ", e.what, " -- ", e.who_acts) for e in ledger))] if ledger else []),
        Paragraph((Wording("Replay (from this report's folder): "), Code(example.replay or ""))),
        *([Paragraph((Wording("Step through it in the browser (from this report's folder): "), Code(example.serve),
                      " -- or every counterexample of this review: ", Code("fencesim serve --review .")))]
          if example.serve else []),
        Figure(swimlane, "swimlane", f"Swimlane of {example.name}"),
        CodeBlock(example.timeline or "")]


def _group_advice(design: DesignRow, example: CounterexampleRow, others: Sequence[str]) -> list[Block]:
    """The advice of the other protocols of ``example``'s group: the same, or each one that differs."""
    same, differing = group_advice(design.counterexamples, example, list(others), advised)
    lines = [f"The same advice under {', '.join(f'`{label}`' for label in same)}."] if same else []
    lines += [f"Advisor under `{other.protocol}`: "
              + advice_text(other.advice, other.invariant, design.availability) for other in differing]
    return [Paragraph((Marked(line),)) for line in lines]


def _cells(rows: JsonValue) -> list[list[str]]:
    """A section table's rows, each cell as text."""
    return [[cell if isinstance(cell, str) else str(cell) for cell in row]
            for row in (rows if isinstance(rows, list) else ()) if isinstance(row, list)]


def _section(section: JsonObject) -> list[Block]:
    """A family's own section (``Family.review_sections``): its text, tables, simulated metrics, figure."""
    title = json_text(section.get("title"))
    blocks: list[Block] = [OneLine((Heading(3, (title,)), Paragraph((json_text(section.get("text")),))))]
    shown = json_object(section.get("table"))
    if shown:
        blocks.append(table(json_texts(shown.get("headers")), _cells(shown.get("rows")), wide=True))
    analytic = json_object(section.get("analytic"))
    if analytic:
        blocks.append(table(["quantity (arithmetic, exact)", "value"], [[k, f"{v:,}"] for k, v in analytic.items()]))
    left_out: list[str] = []
    if json_object(section.get("metrics")):
        blocks += [Paragraph(("Simulated, ", json_text(section.get("unit")), ", 95% intervals:")),
                   table(*section_rows(section), wide=True)]
        figure = json_text(section.get("figure"))
        if figure:  # figures/<stem>.svg (sim.report.folder.draw)
            stem = figure.removeprefix("figures/").removesuffix(".svg")
            blocks.append(Figure(stem, title, title))
        left_out = json_texts(section.get("figure_left_out"))
    not_simulated = json_texts(section.get("not_simulated"))
    methods = sorted({json_text(v) for v in json_object(section.get("methods")).values()})
    remarks = BulletList(tuple(("no figure for ", reason) for reason in left_out)
                         + tuple(("not simulated: ", line) for line in not_simulated), blank_after=False)
    intervals = [Paragraph(("Intervals: " + "; ".join(methods) + ".",), blank_before=True)] if methods else []
    notes = [Paragraph(("No figure for ", reason, "."), note=True) for reason in left_out]
    notes += [Paragraph(("not simulated: ", line)) for line in not_simulated]
    return blocks + [OnlyBlocks(MARKDOWN, (remarks, *intervals)), OnlyBlocks(HTML, tuple(notes))]
