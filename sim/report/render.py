"""The review as Markdown (``summary.md``) and as one self-contained HTML file (``report.html``).

Both are rendered from the same results (``results.json``); the HTML embeds
every figure as inline SVG and makes no external request, so it reads
offline and can be mailed.
"""

from __future__ import annotations

import html
from typing import Any, Sequence

SHARE = "{value:.1%} [{low:.1%}, {high:.1%}]"


def share_text(interval: dict[str, float] | None) -> str:
    if not interval or interval.get("value") is None or interval["value"] != interval["value"]:
        return "n/a"
    return SHARE.format(**interval)


def headline_rows(design: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The headline table of one design: a row per protocol, as narrow as its content allows (the
    invariants a protocol violates in one cell, so a family of eleven invariants still fits a page)."""
    availability = [name.replace("_", " ") for name in design["availability"]]
    safe = any("safe_progress" in row for row in design["protocols"])
    columns = ["protocol", "verdict", "violating runs (95% Wilson)", "violating runs per invariant",
               *(f"{name} (per run)" for name in availability), design["progress_label"],
               *(["applied safely / planned"] if safe else [])]
    rows = []
    for row in design["protocols"]:
        found = ", ".join(f"{name} {row['by_invariant'][name]['violating_runs']}" for name in design["invariants"]
                          if row["by_invariant"][name]["violating_runs"]) or "none"
        counted = [f"{row['availability'][name]['count']} ({row['availability'][name]['per_run']})"
                   for name in design["availability"]]
        progress = share_text(row["progress"]["share"]) if row["progress"] else "n/a"
        verdict = row["verdict"].upper() if row["verdict"] != "no safety violation found" else row["verdict"]
        safely = [share_text(row["safe_progress"]["share"]) if "safe_progress" in row else "n/a"] if safe else []
        rows.append([row["protocol"], verdict, share_text(row["violating_runs"]["share"]), found, *counted,
                     progress, *safely])
    return columns, rows


def matrix_rows(design: dict[str, Any]) -> tuple[list[str], list[list[str]], list[list[str]]]:
    """The verdict matrix with one row per scenario or minimal counterexample and one column per protocol
    (so many counterexamples make it longer, never wider): columns, rows, and each cell's class."""
    matrix = design["matrix"]
    shown = {e["name"]: f"{e['invariant']} under {', '.join([e['protocol'], *others])}"
             for e, others in shown_examples(design)}
    names = {e["name"] for e in design["counterexamples"]}
    rows, classes = [], []
    for column in matrix["columns"]:
        if column in names and column not in shown:
            continue  # the same order as its identical-results group's first protocol's
        cells = [matrix["cells"][f"{r}\t{column}"] for r in matrix["rows"]]
        label = f"minimal order: {shown[column]}" if column in shown else f"scenario {column}"
        rows.append([label, *(cell["text"] for cell in cells)])
        classes.append(["", *("bad" if cell["violated"] else "good" for cell in cells)])
    return ["scenario or counterexample", *matrix["rows"]], rows, classes


def sorted_claims(design: dict[str, Any]) -> tuple[list[dict], list[dict]]:
    """The claims that fail (shown first, each in full) and those that hold (folded)."""
    claims = design["claims"] or []
    return [c for c in claims if not c["holds"]], [c for c in claims if c["holds"]]


#: What a group of protocols with identical results shares (``sim.search.pipeline.identical_groups``).
IDENTICAL_WORDS = "equal counts and measures, and the same minimal counterexample per invariant"


def group_heading(group: list[str]) -> str:
    """The heading of one group's section: ``a, b: identical results on this workload``."""
    return f"{', '.join(group)}: identical results on this workload"


def shown_examples(design: dict[str, Any]) -> list[tuple[dict[str, Any], list[str]]]:
    """The counterexamples a report shows, each with the protocols of its identical-results group it also
    stands for (``design["identical"]``): a group shows its first protocol's counterexamples once, and none of
    the others' (they are the same orders)."""
    grouped = {label: group for group in design.get("identical") or [] for label in group}
    out = []
    for example in design["counterexamples"]:
        group = grouped.get(example["protocol"], [example["protocol"]])
        if example["protocol"] == group[0]:
            out.append((example, group[1:]))
    return out


def group_advice(examples: list[dict[str, Any]], example: dict[str, Any], others: list[str]
                 ) -> tuple[list[str], list[dict[str, Any]]]:
    """The advice of a group's other protocols for ``example``'s invariant: the labels whose advice makes the
    same changes as ``example``'s, and the counterexamples whose advice asks for other changes."""
    same, differing = [], []
    mine = example.get("advice") or {}
    for other in examples:
        if other["protocol"] not in others or other["invariant"] != example["invariant"]:
            continue
        theirs = other.get("advice") or {}
        if (mine.get("changes"), mine.get("fixes")) == (theirs.get("changes"), theirs.get("fixes")):
            same.append(other["protocol"])
        else:
            differing.append(other)
    return same, differing


def identical_lines(design: dict[str, Any]) -> list[str]:
    """One line per group of protocols with identical results on the design's workload."""
    return [f"{group_heading(group)} ({IDENTICAL_WORDS}; shown once, under {group[0]})"
            for group in design.get("identical") or []]


def _md_table(columns: list[str], rows: list[list[str]]) -> list[str]:
    def cell(text: Any) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")

    return (["| " + " | ".join(cell(c) for c in columns) + " |", "|" + "---|" * len(columns)]
            + ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows])


def _runs(count: int) -> str:
    return f"{count} run" if count == 1 else f"{count} runs"


def advice_verdict(advice: dict[str, Any]) -> str:
    """``fix``, ``partial improvement`` or ``unverified`` (``none`` when nothing was recommended)."""
    if not advice or not advice.get("recommended"):
        return "none"
    if advice.get("fixes") is True:
        return "fix"
    if advice.get("fixes") is False:
        return "partial improvement"
    return "unverified"


def advice_sentence(advice: dict[str, Any], invariant: str, availability: str = "availability findings") -> str:
    """What the advisor's recommendation buys and costs, on the seeds it was measured on (plain text).

    A count is compared only with a count of the same seeds: verified advice states the sweep's own
    seeds, unverified advice its sample, and never a "was" it did not measure."""
    parts = []
    verified = advice.get("verified_seeds") or 0
    if advice.get("runs_violating_it") is not None and verified:
        start = advice.get("seed_start", 0)
        span = f"seeds {start}..{start + verified - 1}"
        whole = "" if verified >= advice.get("seeds", verified) else f" of the {advice['seeds']} the sweep ran"
        where = f"on the sweep's own {span}{whole} and the exported order"
        was = advice.get("runs_violating_it_before")
        parts.append(f"{invariant} in {advice['runs_violating_it']} of {verified} runs"
                     + ("" if was is None else f" (was {was})"))
        if advice.get("violating_runs") is not None:
            parts.append(f"{_runs(advice['violating_runs'])} violating any safety invariant")
    else:
        where = f"in a {advice['sample_seeds']}-seed sample (not verified on the sweep's seeds)"
        if advice.get("sample_runs_violating_it") is not None:
            parts.append(f"{invariant} in {_runs(advice['sample_runs_violating_it'])}")
        if advice.get("sample_violating_runs") is not None:
            parts.append(f"{_runs(advice['sample_violating_runs'])} violating any safety invariant")
    parts.append(f"{advice['availability_per_run']} {availability} per run")
    if advice.get("progress_share") is not None:
        parts.append(f"work done {advice['progress_share']:.0%}")
    if advice.get("safe_progress_share") is not None:
        parts.append(f"applied safely {advice['safe_progress_share']:.0%} (what the advisor's cost ranks by)")
    stopped = f"; {advice['stopped']} stopped the advisor" if advice.get("stopped") else ""
    return f"{where}: " + ", ".join(parts) + stopped


def advice_line(advice: dict[str, Any] | None, invariant: str, availability: str, code: str = "") -> str:
    """The advisor's answer in one line: a fix, a partial improvement (with its residual), or none."""
    if advice is None:
        return "advisor not run"
    if not advice.get("recommended"):
        if advice.get("beyond_protocol"):
            return advice["beyond_protocol"]
        stopped = f" ({advice['stopped']} stopped the search)" if advice.get("stopped") else ""
        return f"no change of up to two knobs removes it{stopped}"
    changes = ", ".join(f"{k}={v}" for k, v in advice["changes"].items())
    change = f"{code}{changes}{code} (giving {code}{advice['recommended']}{code})"
    cost = advice_sentence(advice, invariant, availability)
    verdict = advice_verdict(advice)
    if verdict == "fix":
        return f"smallest fix: {change}; verified {cost}"
    if verdict == "partial improvement":
        return f"partial improvement, not a fix (it leaves runs violating {invariant}): {change}; {cost}"
    return f"unverified proposal: {change}; {cost}"


def _advice_text(advice: dict[str, Any] | None, invariant: str, availability: list[str]) -> str:
    return advice_line(advice, invariant, " + ".join(a.replace("_", " ") for a in availability), "`")


def _proof_text(example: dict[str, Any]) -> str:
    if example["shortest_proved"]:
        return "proved shortest"
    if example["one_minimal"]:
        return "1-minimal (not proved shortest)"
    return f"not minimal: stopped by {example['shrink_end']}"


def markdown(results: dict[str, Any], meta: dict[str, Any], figures: dict[str, dict[str, str]]) -> str:
    """``summary.md``: every section of the review, figures linked as SVG files."""
    out = ["# fencesim design review", ""]
    out += [f"fencesim {meta['fencesim_version']} at commit `{meta['commit']}`; "
            f"{len(results['designs'])} design(s); intervals: "
            + "; ".join(f"{k}: {v}" for k, v in results["statistics"].items()) + ".", ""]
    if results["budget_stopped"]:
        out += [f"**A budget of {results['budget_s']} s stopped part of this review** "
                f"({', '.join(results['budget_stopped'])}); see each design's *not covered*.", ""]
    for design in results["designs"]:
        out += _md_design(design, figures)
    return "\n".join(out) + "\n"


def _md_design(design: dict[str, Any], figures: dict[str, dict[str, str]]) -> list[str]:
    key = design["name"]
    out = [f"## {design['name']} ({design['family']} family: {design['family_title']})", ""]
    if design["description"]:
        out += [design["description"], ""]
    out += [f"Workload `{design['workload']['name']}`: fault classes {', '.join(design['workload']['classes'])}; "
            f"{design['seeds_done']} seeds per protocol.", ""]
    out += ["### Safety and availability", ""]
    out += _md_table(*headline_rows(design)) + [""]
    nothing = [r["protocol"] for r in design["protocols"] if r["applies_nothing"]]
    if nothing:
        out += [f"**Applies nothing:** {', '.join(nothing)} -- no safety violation, because no work is done.", ""]
    never = [f"- {r['protocol']}: {line}" for r in design["protocols"] for line in r.get("never_fired", [])]
    if never:
        out += ["**Mechanisms that never acted on this workload** (their numbers are the design's without "
                "them):", "", *never, ""]
    if design.get("identical"):
        out += ["**Protocols with identical results on this workload** (one section each below):", "",
                *[f"- {line}" for line in identical_lines(design)], ""]
    out += [f"![safety versus availability](figures/{figures[key]['safety']}.svg)", ""]
    out += ["### Verdict matrix", "",
            "Every protocol replays every scripted scenario and every minimal counterexample with no seed.", ""]
    columns, rows, _ = matrix_rows(design)
    out += _md_table(columns, rows) + [""]
    out += [f"![verdict matrix](figures/{figures[key]['heatmap']}.svg)", ""]
    out += ["### Violations against interference", "",
            f"![interference](figures/{figures[key]['interference']}.svg)", ""]
    if design.get("map"):
        out += ["### Design map", ""] + [f"- {line}" for line in map_lines(design["map"])] + [""]
        out += _md_table(*map_rows(design["map"])) + [""]
        out += [f"![design map](figures/{figures[key]['pareto']}.svg)", ""]
    if design.get("coverage"):
        out += ["### Coverage, saturation and blast radius", "", _coverage_words(design), ""]
        out += _md_table(*coverage_table(design)) + [""]
        out += [f"![saturation](figures/{figures[key]['saturation']}.svg)", ""]
    out += ["### The seed's claims, as the search found them", ""]
    fails, holds = sorted_claims(design)
    out += [f"- **FAILS** `{c['protocol']}`: {c['claim']} -- {c['evidence']}" for c in fails]
    if holds:
        out += ["", f"<details><summary>{len(holds)} claim(s) hold</summary>", ""]
        out += [f"- holds `{c['protocol']}`: {c['claim']} -- {c['evidence']}" for c in holds]
        out += ["", "</details>"]
    if not design["claims"]:
        out.append("- (no claim applies to these protocols)")
    out += ["", "### Minimal counterexamples", ""]
    out += _md_examples(design, figures)
    for section in design["sections"]:
        out += _md_section(section)
    out += ["### Not covered", ""] + [f"- {line}" for line in design["not_covered"]]
    if design["budget_stopped"]:
        out.append(f"- the budget stopped: {', '.join(design['budget_stopped'])}")
    out.append("")
    return out


def _md_examples(design: dict[str, Any], figures: dict[str, dict[str, str]]) -> list[str]:
    """Each counterexample shown (:func:`shown_examples`); a group of protocols with identical results is one
    section, headed by its members."""
    out: list[str] = []
    if not design["counterexamples"]:
        out += ["None found.", ""]
    headed: set[str] = set()
    for example, others in shown_examples(design):
        labels = [example["protocol"], *others]
        if others and example["protocol"] not in headed:
            headed.add(example["protocol"])
            out += [f"**{group_heading([f'`{label}`' for label in labels])}** ({IDENTICAL_WORDS}; shown "
                    "once):", ""]
        out += [f"#### `{example['invariant']}` under {', '.join(f'`{label}`' for label in labels)}", "",
                f"{len(example['events'])} event(s), {_proof_text(example)}, from seed {example['seed']} "
                f"({example['original_events']} events before shrinking): "
                f"`{' ; '.join(example['events']) or '(no fault needed)'}`", "",
                f"What breaks: {example['detail']}", "",
                "Advisor: " + _advice_text(example["advice"], example["invariant"], design["availability"]), "",
                *_md_group_advice(design, example, others),
                *[f"Blast radius: {e['what']} -- {e['who_acts']}" for e in example.get("ledger", [])[:4]],
                *([""] if example.get("ledger") else []),
                f"Replay (from this report's folder): `{example['replay']}`", "",
                f"![swimlane](figures/{figures[example['name']]['swimlane']}.svg)", "",
                "```", example["timeline"].rstrip(), "```", ""]
    return out


def _md_group_advice(design: dict[str, Any], example: dict[str, Any], others: list[str]) -> list[str]:
    same, differing = group_advice(design["counterexamples"], example, others)
    out = [f"The same advice under {', '.join(f'`{label}`' for label in same)}.", ""] if same else []
    for other in differing:
        out += [f"Advisor under `{other['protocol']}`: "
                + _advice_text(other["advice"], other["invariant"], design["availability"]), ""]
    return out


def coverage_table(design: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Per protocol: distinct behaviours, goals never reached, and the blast radius per 10,000 runs."""
    columns = ["protocol", "distinct behaviours", "coverage goals", "blast radius per 10,000 runs"]
    rows = []
    for row in design.get("coverage", []):
        goals = ", ".join(f"{goal}: {'NEVER' if goal in row['never'] else count}"
                          for goal, count in row["goals"].items()) or "none declared"
        kinds = row["blast_radius"]["kinds"]
        radius = "; ".join(f"{kind.replace('_', ' ')} {_rate(v['rate']['value'])} [{_rate(v['rate']['low'])}, "
                           f"{_rate(v['rate']['high'])}] ({v['count']})" for kind, v in kinds.items()) or "none"
        rows.append([row["protocol"], str(row["distinct_behaviours"]), goals, radius])
    return columns, rows


def map_rows(document: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """One row per group of protocols that behave alike: its verdict within the bound, shortest violations,
    costs, and the protocols it stands for."""
    columns = ["protocol (and those alike)", "verdict", "shortest violations", "violating runs", "findings per run"]
    alike: dict[str, list[str]] = {}
    for point in document["protocols"]:
        alike.setdefault(point["same_as"], []).append(point["protocol"])
    rows = []
    for point in document["protocols"]:
        if point["same_as"] != point["protocol"]:
            continue
        shortest = ", ".join(f"{name} {v['shortest_events']}" for name, v in point["invariants"].items()
                             if v["status"] == "violated") or "-"
        share = point["violating_share"]
        others = [p for p in alike[point["protocol"]] if p != point["protocol"]]
        rows.append([point["protocol"] + (f" (and {len(others)} alike: {'; '.join(others[:3])}"
                                          f"{'...' if len(others) > 3 else ''})" if others else ""),
                     point["status"], shortest, "-" if share is None else f"{share['value']:.0%}",
                     f"{sum(point['availability_per_run'].values()):.2f}"])
    return columns, rows


def map_lines(document: dict[str, Any]) -> list[str]:
    """The map in sentences: minimal safe designs, the Pareto front, each certificate, each finding."""
    lines = [f"Every combination of {', '.join(document['knobs'])} explored exhaustively within "
             f"{document['max_events']} events.",
             f"Minimal safe designs: {', '.join(document['minimal_safe']) or 'none'}.",
             f"Pareto front (safety against cost): {', '.join(document['pareto_front']) or 'none'}."]
    lines += [f"Certificate: {c['words']}" for c in document["certificates"]]
    lines += [f"Finding: {f['safe']} is safe for {f['invariant']} but the stronger {f['stronger_violates']} "
              f"violates it: {' ; '.join(f['witness'])}" for f in document["monotonicity_findings"]]
    return lines


def _rate(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:.2g}"


def _coverage_words(design: dict[str, Any]) -> str:
    never = sorted({(g, r["protocol"]) for r in design.get("coverage", []) for g in r["never"]})
    text = ("Distinct behaviours are the run signatures a sweep saw (estimated); where the saturation curve "
            "flattens, more seeds stopped finding new behaviour. The blast radius counts what violating runs did "
            "to the world: edits overwritten, steps applied twice, objects duplicated or orphaned (rate and 95% "
            "interval per 10,000 runs, count in brackets).")
    if never:
        text += " Warning: goals never reached -- " + "; ".join(f"{g} under {p}" for g, p in never) + "."
    return text


def _section_rows(section: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    protocols = list(section["metrics"])
    rows = []
    metrics = list(next(iter(section["metrics"].values()))) if protocols else []
    for metric in metrics:
        row = [metric]
        for protocol in protocols:
            cell = section["metrics"][protocol][metric]
            if cell["value"] is None:
                row.append("n/a")
            elif cell["ci_low"] is None:
                row.append(f"{cell['value']:,.2f}")
            else:
                row.append(f"{cell['value']:,.2f} [{cell['ci_low']:,.2f}, {cell['ci_high']:,.2f}]")
        rows.append(row)
    return ["metric", *protocols], rows


def _md_section(section: dict[str, Any]) -> list[str]:
    out = [f"### {section['title']}", "", section["text"], ""]
    if section.get("table"):
        out += _md_table(section["table"]["headers"], section["table"]["rows"]) + [""]
    if section.get("analytic"):
        out += _md_table(["quantity (arithmetic, exact)", "value"],
                         [[k, f"{v:,}"] for k, v in section["analytic"].items()]) + [""]
    if section["metrics"]:
        out += [f"Simulated, {section['unit']}, 95% intervals:", ""]
        out += _md_table(*_section_rows(section)) + [""]
        if section.get("figure"):
            out += [f"![{section['title']}]({section['figure']})", ""]
        out += [f"- no figure for {reason}" for reason in section.get("figure_left_out", [])]
    for line in section.get("not_simulated", []):
        out.append(f"- not simulated: {line}")
    methods = sorted(set(section["methods"].values()))
    if methods:
        out += ["", "Intervals: " + "; ".join(methods) + ".", ""]
    return out


# -- HTML -----------------------------------------------------------------------------

STYLE = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1200px;
       color: #222; line-height: 1.45; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { border-bottom: 2px solid #4c72b0; padding-bottom: .2em; margin-top: 2em; }
table { border-collapse: collapse; margin: .8em 0; font-size: .85em; max-width: 100%; }
table.wide { width: 100%; }
th, td { border: 1px solid #ccc; padding: .3em .5em; text-align: left; vertical-align: top;
         overflow-wrap: anywhere; }
th { background: #f0f3f8; position: sticky; top: 0; z-index: 1; }
td.bad { background: #f6d5d6; } td.good { background: #dcefe2; } td.none { background: #eee; }
pre { background: #f7f7f7; padding: .6em; overflow-x: auto; font-size: .8em; }
code { background: #f3f3f3; padding: 0 .2em; overflow-wrap: anywhere; }
figure { margin: 1em 0; max-width: 100%; } figure svg { max-width: 100%; height: auto; }
figcaption { font-size: .9em; color: #555; }
details summary { cursor: pointer; }
.note { background: #fff6e0; border-left: 4px solid #dd8452; padding: .5em .8em; }
@media print {
  body { max-width: none; margin: 0; padding: 0; font-size: 10pt; }
  h2 { break-before: page; } h3, h4 { break-after: avoid; }
  figure, tr { break-inside: avoid; } thead { display: table-header-group; } th { position: static; }
  pre { white-space: pre-wrap; overflow: visible; }
  details > * { display: block; } details::details-content { content-visibility: visible; display: block; }
}
"""


def _breakable(text: str) -> str:
    """Escaped text with a break opportunity after commas, underscores, ``=`` and ``:`` (long protocol and
    counterexample names wrap there instead of widening a table)."""
    out = html.escape(str(text))
    for mark in (",", "_", "=", ":", "|"):
        out = out.replace(mark, mark + "<wbr>")
    return out


def _html_table(columns: list[str], rows: list[list[str]], table_id: str | None = None,
                classes: list[list[str]] | None = None, wide: bool = False) -> str:
    head = "".join(f"<th>{_breakable(c)}</th>" for c in columns)
    body = []
    for i, row in enumerate(rows):
        cells = []
        for j, value in enumerate(row):
            css = classes[i][j] if classes else ""
            cells.append(f'<td class="{css}">{_breakable(value)}</td>' if css else f"<td>{_breakable(value)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    ident = f' id="{table_id}"' if table_id else ""
    kind = ' class="wide"' if wide else ""
    return f"<table{ident}{kind}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _figure(svg: str, caption: str, name: str) -> str:
    start = svg.find("<svg")
    return (f'<figure class="plot" data-name="{html.escape(name)}">{svg[start:]}'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def to_html(results: dict[str, Any], meta: dict[str, Any], figures: dict[str, dict[str, str]],
            svgs: dict[str, str]) -> str:
    """``report.html``: the same content as ``summary.md``, one file, figures inline."""
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             "<title>fencesim design review</title>", f"<style>{STYLE}</style></head><body>",
             "<h1>fencesim design review</h1>",
             f"<p>fencesim {html.escape(meta['fencesim_version'])} at commit "
             f"<code>{html.escape(meta['commit'])}</code>; "
             f"{len(results['designs'])} design(s). Intervals: "
             + html.escape("; ".join(f"{k}: {v}" for k, v in results["statistics"].items())) + ".</p>"]
    if results["budget_stopped"]:
        parts.append(f'<p class="note">A budget of {results["budget_s"]} s stopped part of this review '
                     f"({html.escape(', '.join(results['budget_stopped']))}).</p>")
    for design in results["designs"]:
        parts += _html_design(design, figures, svgs)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _html_design(design: dict[str, Any], figures: dict[str, dict[str, str]], svgs: dict[str, str]) -> list[str]:
    key = design["name"]
    parts = [f"<h2>{html.escape(design['name'])} <small>({html.escape(design['family'])} family: "
             f"{html.escape(design['family_title'])})</small></h2>"]
    if design["description"]:
        parts.append(f"<p>{html.escape(design['description'])}</p>")
    parts.append("<h3>Safety and availability</h3>")
    columns, rows = headline_rows(design)
    parts.append(_html_table(columns, rows, f"headline-{key}", wide=True))
    nothing = [r["protocol"] for r in design["protocols"] if r["applies_nothing"]]
    if nothing:
        parts.append(f'<p class="note">Applies nothing: {html.escape(", ".join(nothing))} -- no safety '
                     "violation, because no work is done.</p>")
    never = [f"{r['protocol']}: {line}" for r in design["protocols"] for line in r.get("never_fired", [])]
    if never:
        parts.append('<p class="note">Mechanisms that never acted on this workload (their numbers are the '
                     "design's without them):</p><ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in never)
                     + "</ul>")
    if design.get("identical"):
        parts.append('<p class="note">Protocols with identical results on this workload (one section each '
                     "below):</p><ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in identical_lines(design))
                     + "</ul>")
    parts.append(_figure(svgs[figures[key]["safety"]], "Safety versus availability", figures[key]["safety"]))
    parts.append("<h3>Verdict matrix</h3><p>Every protocol replays every scripted scenario and every minimal "
                 "counterexample with no seed.</p>")
    columns, rows, classes = matrix_rows(design)
    parts.append(_html_table(columns, rows, f"verdict-matrix-{key}", classes, wide=True))
    parts.append(_figure(svgs[figures[key]["heatmap"]], "Verdict matrix", figures[key]["heatmap"]))
    parts.append("<h3>Violations against interference</h3>")
    parts.append(_figure(svgs[figures[key]["interference"]], "Violating runs as faults per run grow",
                         figures[key]["interference"]))
    if design.get("map"):
        parts.append("<h3>Design map</h3><ul>" + "".join(f"<li>{html.escape(line)}</li>"
                                                         for line in map_lines(design["map"])) + "</ul>")
        parts.append(_html_table(*map_rows(design["map"]), f"map-{key}", wide=True))
        parts.append(_figure(svgs[figures[key]["pareto"]], "Safety against cost, Pareto front marked",
                             figures[key]["pareto"]))
    if design.get("coverage"):
        parts.append("<h3>Coverage, saturation and blast radius</h3>")
        parts.append(f"<p>{html.escape(_coverage_words(design))}</p>")
        columns, rows = coverage_table(design)
        parts.append(_html_table(columns, rows, f"coverage-{key}", wide=True))
        parts.append(_figure(svgs[figures[key]["saturation"]], "Distinct behaviours against seeds",
                             figures[key]["saturation"]))
    parts += _html_claims(design)
    parts.append("<h3>Minimal counterexamples</h3>")
    if not design["counterexamples"]:
        parts.append("<p>None found.</p>")
    headed: set[str] = set()
    for example, others in shown_examples(design):
        if others and example["protocol"] not in headed:
            headed.add(example["protocol"])
            parts.append(f'<p class="note"><b>{html.escape(group_heading([example["protocol"], *others]))}</b> '
                         f"({html.escape(IDENTICAL_WORDS)}; shown once).</p>")
        parts += _html_example(example, design, figures, svgs, others)
    for section in design["sections"]:
        parts += _html_section(section, svgs)
    parts.append("<h3>Not covered</h3><ul>")
    for line in design["not_covered"] + ([f"the budget stopped: {', '.join(design['budget_stopped'])}"]
                                         if design["budget_stopped"] else []):
        parts.append(f"<li>{html.escape(line)}</li>")
    parts.append("</ul>")
    return parts


def _html_claims(design: dict[str, Any]) -> list[str]:
    """FAILS lines first, each in full; the claims that hold folded under one line."""
    fails, holds = sorted_claims(design)
    parts = ["<h3>The seed's claims, as the search found them</h3><ul class=\"claims\">"]
    parts += [f"<li><b>FAILS</b> <code>{html.escape(c['protocol'])}</code>: {html.escape(c['claim'])} -- "
              f"{html.escape(c['evidence'])}</li>" for c in fails]
    parts.append("</ul>")
    if holds:
        parts.append(f"<details><summary>{len(holds)} claim(s) hold</summary><ul>")
        parts += [f"<li>holds <code>{html.escape(c['protocol'])}</code>: {html.escape(c['claim'])} -- "
                  f"{html.escape(c['evidence'])}</li>" for c in holds]
        parts.append("</ul></details>")
    if not design["claims"]:
        parts.append("<p>(no claim applies to these protocols)</p>")
    return parts


def _html_example(example: dict[str, Any], design: dict[str, Any], figures: dict[str, dict[str, str]],
                  svgs: dict[str, str], others: Sequence[str] = ()) -> list[str]:
    fix = _advice_text(example["advice"], example["invariant"], design["availability"]).replace("`", "")
    labels = ", ".join(f"<code>{html.escape(label)}</code>" for label in [example["protocol"], *others])
    group = [html.escape(line).replace("`", "") for line in _md_group_advice(design, example, list(others)) if line]
    return [f"<h4><code>{html.escape(example['invariant'])}</code> under {labels}</h4>",
            f"<p>{len(example['events'])} event(s), {_proof_text(example)}, from seed {example['seed']}: "
            f"<code>{html.escape(' ; '.join(example['events']) or '(no fault needed)')}</code></p>",
            f"<p>What breaks: {html.escape(example['detail'])}</p>",
            f"<p>Advisor: {html.escape(fix)}</p>",
            *[f"<p>{line}</p>" for line in group],
            *[f"<p>Blast radius: {html.escape(e['what'])} -- {html.escape(e['who_acts'])}</p>"
              for e in example.get("ledger", [])[:4]],
            f"<p>Replay (from this report's folder): <code>{html.escape(example['replay'])}</code></p>",
            _figure(svgs[figures[example["name"]]["swimlane"]], f"Swimlane of {example['name']}",
                    figures[example["name"]]["swimlane"]),
            f"<pre>{html.escape(example['timeline'])}</pre>"]


def _html_section(section: dict[str, Any], svgs: dict[str, str]) -> list[str]:
    parts = [f"<h3>{html.escape(section['title'])}</h3><p>{html.escape(section['text'])}</p>"]
    if section.get("table"):
        parts.append(_html_table(section["table"]["headers"], section["table"]["rows"], wide=True))
    if section.get("analytic"):
        parts.append(_html_table(["quantity (arithmetic, exact)", "value"],
                                 [[k, f"{v:,}"] for k, v in section["analytic"].items()]))
    if section["metrics"]:
        parts.append(f"<p>Simulated, {html.escape(section['unit'])}, 95% intervals:</p>")
        parts.append(_html_table(*_section_rows(section), wide=True))
        if section.get("figure"):
            stem = section["figure"].removeprefix("figures/").removesuffix(".svg")
            parts.append(_figure(svgs[stem], section["title"], stem))
        for reason in section.get("figure_left_out", []):
            parts.append(f'<p class="note">No figure for {html.escape(reason)}.</p>')
    for line in section.get("not_simulated", []):
        parts.append(f"<p>not simulated: {html.escape(line)}</p>")
    return parts
