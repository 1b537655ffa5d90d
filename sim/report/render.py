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

from typing import Any, Sequence

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
from sim.report.triage import triage_table, triage_words
from sim.search.map_document import MapDocument

#: The review's title (its first heading, and the HTML page's title).
TITLE = "fencesim design review"

#: ``figures[key][kind]``: the file stem of each figure, by design name or counterexample name
#: (``sim.report.folder.draw``).
FigureNames = dict[str, dict[str, str]]


def markdown(results: dict[str, Any], meta: dict[str, Any], figures: FigureNames) -> str:
    """``summary.md``: every section of the review, figures linked as SVG files."""
    return markdown_writer.write(review_document(results, meta, figures))


def to_html(results: dict[str, Any], meta: dict[str, Any], figures: FigureNames, svgs: dict[str, str]) -> str:
    """``report.html``: the same review as ``summary.md``, one file, figures inline (``svgs`` by stem)."""
    return html_writer.write(review_document(results, meta, figures), svgs)


def review_document(results: dict[str, Any], meta: dict[str, Any], figures: FigureNames) -> Document:
    """The whole review as one document: a title, what made it, any budget that stopped it, each design."""
    statistics = "; ".join(f"{k}: {v}" for k, v in results["statistics"].items())
    blocks: list[Block] = [
        Heading(1, (TITLE,)),
        Paragraph(("fencesim ", meta["fencesim_version"], " at commit ", Code(meta["commit"]),
                   f"; {len(results['designs'])} design(s)", OnlyText(MARKDOWN, ("; intervals: ",)),
                   OnlyText(HTML, (". Intervals: ",)), statistics, "."))]
    cut = list(dict.fromkeys(c["title"] for d in results["designs"] for c in d.get("budget_cuts") or ()))
    if results["budget_stopped"] or cut:
        blocks.append(Paragraph((Lead((f"A budget of {results['budget_s']} s stopped part of this review",)),
                                 " (", ", ".join(cut or results["budget_stopped"]), ")",
                                 OnlyText(MARKDOWN, (Wording("; see each design's "), Emphasis(("not covered",)))),
                                 "."), note=True))
    for design in results["designs"]:
        blocks += _design(design, figures)
    return Document(TITLE, tuple(blocks))


def _design(design: dict[str, Any], figures: FigureNames) -> list[Block]:
    key = design["name"]
    names, workload = figures[key], design["workload"]
    blocks: list[Block] = [Heading(2, (key, " ", Small(("(", design["family"], " family: ", design["family_title"],
                                                        ")"))))]
    if design["description"]:
        blocks.append(Paragraph((design["description"],)))
    blocks.append(OnlyBlocks(MARKDOWN, (Paragraph((
        "Workload ", Code(workload["name"]), f": fault classes {', '.join(workload['classes'])}; "
        f"{design['seeds_done']} seeds per protocol.")),)))
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
    cuts = {cut["section"]: cut for cut in design.get("budget_cuts") or ()}
    if any(design["interference"].values()):
        blocks += [Heading(3, ("Violations against interference",)),
                   Figure(names["interference"], "interference", "Violating runs as faults per run grow")]
    elif "interference" in cuts:
        blocks += _cut_section("Violations against interference", cuts["interference"])
    if design.get("map"):
        drawn = MapDocument.from_json(design["map"])
        blocks += [OneLine((Heading(3, ("Design map",)), _bullets(map_lines(drawn)))),
                   table(*map_rows(drawn), ident=f"map-{key}", wide=True),
                   Figure(names["pareto"], "design map", "Safety against cost, Pareto front marked")]
    elif "map" in cuts:
        blocks += _cut_section("Design map", cuts["map"])
    if design.get("certify"):
        blocks += _certify(design["certify"], key)
    elif "certify" in cuts:
        blocks += _cut_section(f"Engine: {cuts['certify']['title'].partition('(')[2].rstrip(')')}", cuts["certify"])
    if design.get("coverage"):
        blocks += [Heading(3, ("Coverage, saturation and blast radius",)), Paragraph((coverage_words(design),)),
                   table(*coverage_table(design), ident=f"coverage-{key}", wide=True),
                   Figure(names["saturation"], "saturation", "Distinct behaviours against seeds")]
    blocks += _claims(design)
    if design.get("triage"):
        blocks += [OneLine((Heading(3, ("Triage",)), Paragraph((triage_words(design["triage"]),)))),
                   table(*triage_table(design["triage"]), ident=f"triage-{key}", wide=True)]
    blocks.append(Heading(3, ("Minimal counterexamples",)))
    blocks += _examples(design, figures)
    for section in design["sections"]:
        blocks += _section(section)
    if "sections" in cuts:
        blocks += _cut_section(cuts["sections"]["title"].removeprefix("the ").capitalize(), cuts["sections"])
    blocks.append(OneLine((Heading(3, ("Not covered",)), _not_covered(design))))
    return blocks


def _cut_section(heading: str, cut: dict[str, Any]) -> list[Block]:
    """Where a section the budget cut would stand: its heading, what was left out and the command that
    completes it."""
    return [OneLine((Heading(3, (heading,)), Paragraph((
        Strong(("Cut by the budget:",)), " ", cut["left_out"], ". ", Code(cut["command"]), " completes it."),
        note=True)))]


def _not_covered(design: dict[str, Any]) -> BulletList:
    """What the review did not cover; each budget cut's line with its command marked as code.  (A review
    written before cuts were listed names only the phases the budget stopped.)"""
    cuts = {cut["line"]: cut for cut in design.get("budget_cuts") or ()}
    items: list[tuple[Inline, ...]] = [
        (f"the budget cut {cuts[line]['title']}: {cuts[line]['left_out']}; ", Code(cuts[line]["command"]),
         " completes it") if line in cuts else (line,) for line in design["not_covered"]]
    if "budget_cuts" not in design and design["budget_stopped"]:
        items.append((f"the budget stopped: {', '.join(design['budget_stopped'])}",))
    return BulletList(tuple(items), one_per_line=True)


def _certify(document: dict[str, Any], key: str) -> list[Block]:
    """The engine's certificate (``fencesim certify``): per transition, its verdict, the shortest order of each
    finding and the smallest change its endpoint can take."""
    knobs = f" with {document['knobs_after_engine']}" if document["knobs_after_engine"] else ""
    stopped = "" if document["complete"] else " The search was stopped by a limit: nothing is proved."
    rows = []
    for answer in document["transitions"]:
        change = answer.get("change", "-")
        if answer.get("change_checked"):
            change += " (checked by the search)"
        rows.append([answer["transition"], answer["verdict"], _certify_order(answer, "repeats"),
                     _certify_order(answer, "lost"), change])
    return [OneLine((Heading(3, (f"Engine: {document['engine']}",)), Paragraph((
                f"Each transition under the {document['engine']} preset{knobs}, searched exhaustively within "
                f"{document['max_events']} events ({document['distinct_states']:,} states).{stopped}",)))),
            table(["transition", "verdict", "repeats under", "lost under", "smallest change"], rows,
                  ident=f"certify-{key}", wide=True)]


def _certify_order(answer: dict[str, Any], kind: str) -> str:
    """One finding's order in the engine table, with what its replay shows at the transition."""
    if kind not in answer:
        return "-"
    shows = answer.get("shows", {}).get(kind)
    return ("; ".join(answer[kind]) or "no fault") + (f" (replayed: {', '.join(shows)})" if shows else "")


def _bullets(lines: Sequence[str], one_per_line: bool = False) -> BulletList:
    return BulletList(tuple((line,) for line in lines), one_per_line=one_per_line)


def _notes(design: dict[str, Any]) -> list[Block]:
    """What the headline table cannot say: protocols that do nothing, mechanisms that never acted,
    protocols whose results are identical."""
    blocks: list[Block] = []
    nothing = [r["protocol"] for r in design["protocols"] if r["applies_nothing"]]
    if nothing:
        blocks.append(Paragraph((Lead(("Applies nothing:",)), " ", ", ".join(nothing),
                                 " -- no safety violation, because no work is done."), note=True))
    never = [f"{r['protocol']}: {line}" for r in design["protocols"] for line in r.get("never_fired", [])]
    if never:
        blocks.append(OneLine((Paragraph((Lead(("Mechanisms that never acted on this workload",)),
                                          Wording(" (their numbers are the design's without them):")), note=True),
                               _bullets(never))))
    if design.get("identical"):
        blocks.append(OneLine((Paragraph((Lead(("Protocols with identical results on this workload",)),
                                          " (one section each below):"), note=True),
                               _bullets(identical_lines(design)))))
    return blocks


def _claims(design: dict[str, Any]) -> list[Block]:
    """FAILS lines first, each in full; the claims that hold folded under one line."""
    fails, holds = sorted_claims(design)
    heading = Heading(3, (Wording("The seed's claims, as the search found them"),))
    failing = BulletList(tuple((Strong(("FAILS",)), " ", Code(c["protocol"]), ": ", c["claim"], " -- ", c["evidence"])
                               for c in fails), css="claims", one_per_line=True)
    if not design["claims"]:
        nothing = ("(no claim applies to these protocols)",)
        return [OneLine((heading, OnlyBlocks(HTML, (failing,)))), OnlyBlocks(MARKDOWN, (BulletList((nothing,)),)),
                OnlyBlocks(HTML, (Paragraph(nothing),))]
    blocks: list[Block] = [OneLine((heading, failing))]
    if holds:
        held = BulletList(tuple(("holds ", Code(c["protocol"]), ": ", c["claim"], " -- ", c["evidence"])
                                for c in holds), one_per_line=True)
        blocks.append(Folded((f"{len(holds)} claim(s) hold",), (held,)))
    return blocks


def _examples(design: dict[str, Any], figures: FigureNames) -> list[Block]:
    """Each counterexample shown (:func:`~sim.report.phrases.shown_examples`); a group of protocols with
    identical results is one section, headed by its members."""
    blocks: list[Block] = [] if design["counterexamples"] else [Paragraph(("None found.",))]
    headed: set[str] = set()
    for example, others in shown_examples(design):
        labels = [example["protocol"], *others]
        if others and example["protocol"] not in headed:
            headed.add(example["protocol"])
            blocks.append(Paragraph((Strong((Marked(group_heading([f"`{label}`" for label in labels])),)),
                                     f" ({IDENTICAL_WORDS}; shown once)", OnlyText(MARKDOWN, (":",)),
                                     OnlyText(HTML, (".",))), note=True))
        blocks += _example(example, design, figures, others)
    return blocks


def _example(example: dict[str, Any], design: dict[str, Any], figures: FigureNames,
             others: Sequence[str]) -> list[Block]:
    """One minimal counterexample: its order, what breaks, the advice, its swimlane and its timeline."""
    under: list[Inline] = []
    for label in [example["protocol"], *others]:
        under += [", ", Code(label)] if under else [Code(label)]
    events = " ; ".join(example["events"]) or "(no fault needed)"
    swimlane = figures[example["name"]]["swimlane"]
    ledger = example.get("ledger", [])[:4]
    return [
        Heading(4, (Code(example.get("finding", example["invariant"])), " under ", *under)),
        Paragraph((Wording(f"{len(example['events'])} event(s), {proof_text(example)}, from seed {example['seed']}"),
                   OnlyText(MARKDOWN, (f" ({example['original_events']} events before shrinking)",)), ": ",
                   Code(events))),
        Paragraph(("What breaks: ", example["detail"])),
        *([Lines(tuple(("Why: ", line) for line in explanation_lines(example["explanation"])))]
          if example.get("explanation") else []),
        Paragraph(("Advisor: ", Marked(advice_text(example["advice"], example["invariant"], design["availability"])))),
        *_group_advice(design, example, others),
        *([Lines(tuple(("Blast radius: ", e["what"], " -- ", e["who_acts"]) for e in ledger))] if ledger else []),
        Paragraph((Wording("Replay (from this report's folder): "), Code(example["replay"]))),
        *([Paragraph((Wording("Step through it in the browser (from this report's folder): "), Code(example["serve"]),
                      " -- or every counterexample of this review: ", Code("fencesim serve --review .")))]
          if example.get("serve") else []),
        Figure(swimlane, "swimlane", f"Swimlane of {example['name']}"),
        CodeBlock(example["timeline"])]


def _group_advice(design: dict[str, Any], example: dict[str, Any], others: Sequence[str]) -> list[Block]:
    """The advice of the other protocols of ``example``'s group: the same, or each one that differs."""
    same, differing = group_advice(design["counterexamples"], example, list(others))
    lines = [f"The same advice under {', '.join(f'`{label}`' for label in same)}."] if same else []
    lines += [f"Advisor under `{other['protocol']}`: "
              + advice_text(other["advice"], other["invariant"], design["availability"]) for other in differing]
    return [Paragraph((Marked(line),)) for line in lines]


def _section(section: dict[str, Any]) -> list[Block]:
    """A family's own section (``Family.review_sections``): its text, tables, simulated metrics, figure."""
    blocks: list[Block] = [OneLine((Heading(3, (section["title"],)), Paragraph((section["text"],))))]
    if section.get("table"):
        blocks.append(table(section["table"]["headers"], section["table"]["rows"], wide=True))
    if section.get("analytic"):
        blocks.append(table(["quantity (arithmetic, exact)", "value"],
                            [[k, f"{v:,}"] for k, v in section["analytic"].items()]))
    left_out: list[str] = []
    if section["metrics"]:
        blocks += [Paragraph(("Simulated, ", section["unit"], ", 95% intervals:")),
                   table(*section_rows(section), wide=True)]
        if section.get("figure"):  # figures/<stem>.svg (sim.report.folder.draw)
            stem = section["figure"].removeprefix("figures/").removesuffix(".svg")
            blocks.append(Figure(stem, section["title"], section["title"]))
        left_out = section.get("figure_left_out", [])
    not_simulated = section.get("not_simulated", [])
    methods = sorted(set(section["methods"].values()))
    remarks = BulletList(tuple(("no figure for ", reason) for reason in left_out)
                         + tuple(("not simulated: ", line) for line in not_simulated), blank_after=False)
    intervals = [Paragraph(("Intervals: " + "; ".join(methods) + ".",), blank_before=True)] if methods else []
    notes = [Paragraph(("No figure for ", reason, "."), note=True) for reason in left_out]
    notes += [Paragraph(("not simulated: ", line)) for line in not_simulated]
    return blocks + [OnlyBlocks(MARKDOWN, (remarks, *intervals)), OnlyBlocks(HTML, tuple(notes))]
