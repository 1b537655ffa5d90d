"""What ``fencesim fuzz`` prints for a person: the seeds that ran and the budget, one table row per
protocol (violating runs per invariant, spurious rejections or other availability findings, the share of
work done), the seed's claims (FAILS first), each counterexample with the advisor's answer and its replay
command, and the baseline comparison."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sim.cli.app import print_whole_table, writes_a_log
from sim.core.findings import finding_id
from sim.report.advice import AdviceDocument
from sim.report.explain import explanation_lines
from sim.report.phrases import IDENTICAL_WORDS, advice_line, group_advice, group_heading

if TYPE_CHECKING:
    from rich.table import Table


def seeds_line(document: dict) -> str:
    """The seed range that ran, of how many asked, and the budget (given, bound or not)."""
    start, asked = document["seed_start"], document["seeds"]
    done = document.get("seeds_done", asked)
    line = (f"workload {document['workload']} ({document['family']} family): seeds {start}..{start + done - 1} ran "
            f"per protocol" + ("" if done == asked else f" (of {asked} asked: {start}..{start + asked - 1})")
            + f"; {document['runs']} runs, {document['violating_runs']} violating")
    if document.get("budget_s") is not None:
        stopped = document.get("budget_stopped") or []
        line += (f"; --budget {document['budget_s']:g} s " +
                 (f"stopped: {', '.join(stopped)}" if stopped else "given, not reached"))
        if document.get("budget_left_at_resume_s") is not None:
            line += f" ({document['budget_left_at_resume_s']:g} s were left when this run resumed)"
    return line


def protocol_table(document: dict, whole_names: bool = False) -> Table:
    """One row per protocol: runs, violating runs and share, counts per invariant, availability, work done.
    ``whole_names``: protocol names on one line (for a log), not broken after their commas to fit a terminal."""
    from rich.table import Table

    from sim.core.wrapping import name_cell, name_width, unbroken

    table = Table(header_style="bold", show_edge=False)
    names = [name.replace("_", " ") for name in document["availability"]]
    labels = {label: label if whole_names else name_cell(label) for label in document["by_protocol"]}
    for column in ("protocol", "runs", "violating runs", "by invariant", *(f"{n} (per run)" for n in names),
                   "work done"):
        # names are pre-broken after "," and "=" (never folded inside a word): a protocol cell keeps its width
        table.add_column(column, overflow="fold", min_width=name_width(labels.values()) if column == "protocol"
                         else None)
    for label, tally in document["by_protocol"].items():
        runs = tally["runs"]
        found = ", ".join(f"{k} {v}" for k, v in tally["violating_runs_by_invariant"].items() if v) or "-"
        share = f"{tally['violating_runs']} ({tally['violating_runs'] / runs:.1%})" if runs else "0"
        counted = [f"{tally[name]} ({tally[name] / max(1, runs):.2f})" for name in document["availability"]]
        progress = tally.get("progress")
        done = "n/a"
        if progress:
            value = progress["share"]["value"]
            done = f"{value:.0%} {progress['what'].replace('_', ' ')}" if value == value else "n/a"
            if tally.get("applies_nothing"):
                done += " -- APPLIES NOTHING: no violation because no work is done"
        safe = tally.get("safe_progress")
        if safe and safe["share"]["value"] == safe["share"]["value"]:
            done += f"; {safe['share']['value']:.0%} applied safely"
        table.add_row(labels[label], str(runs), share, found, *counted, done)
    return unbroken(table)


def print_summary(console, document: dict) -> None:
    from sim.report.ci import baseline_counts

    console.print(seeds_line(document), markup=False)
    if document.get("stopped"):
        console.print(f"{document['stopped']} stopped the sweep early; counts are of the seeds run", markup=False)
    print_whole_table(console, protocol_table(document, whole_names=writes_a_log(console)))
    _print_claims(console, document.get("claims") or [])
    _print_mechanisms(console, document.get("mechanisms") or {})
    availability = " + ".join(name.replace("_", " ") for name in document["availability"])
    _print_examples(console, document, availability)
    for warning in document.get("coverage_warnings", []):
        console.print(f"warning: {warning}", markup=False)
    if document.get("determinism"):
        check = document["determinism"]
        console.print(f"\ndeterminism: {check['runs']} sample runs gave identical history bytes in a fresh process "
                      f"(PYTHONHASHSEED={check['hash_seed']})", markup=False)
    baseline = document.get("baseline")
    if baseline:
        console.print(f"\nbaseline {baseline['file']}: {baseline_counts(baseline)}", markup=False)
        for title, entries in (("fixed (its order no longer violates)", baseline["fixed"]),
                               ("rare (still violating, not drawn this time)", baseline.get("rare", [])),
                               ("no longer replayable", baseline.get("not_replayable", []))):
            for entry in entries:
                why = f" ({entry['reason']})" if entry.get("reason") else ""
                if "seen_in" in entry:
                    why += f" (seen in {entry['seen_in']} of {entry['runs']} recorded runs)"
                name = finding_id(entry["invariant"], entry.get("where", ""))
                console.print(f"  {title}: {name} under {entry.get('label', entry['protocol'])}: "
                              f"{' ; '.join(entry['events'])}{why}", markup=False)


def _print_claims(console, claims: list[dict]) -> None:
    """FAILS lines first, each in full; the claims that hold in one line."""
    if not claims:
        return
    console.print("\nthe seed's claims, as this search found them:", markup=False)
    for claim in (c for c in claims if not c["holds"]):
        console.print(f"  [FAILS] {claim['protocol']}: {claim['claim']} -- {claim['evidence']}", markup=False)
    holding = [c for c in claims if c["holds"]]
    for claim in holding:
        console.print(f"  [holds] {claim['protocol']}: {claim['claim']} -- {claim['evidence']}", markup=False)


def _print_example(console, example: dict, availability: str) -> None:
    shrink = example["shrink"]
    proof = ("shortest possible" if shrink["shortest_proved"] else
             "1-minimal" if shrink["one_minimal"] else f"not minimal: the {shrink['end']} limit stopped it")
    status = {"known": " [known: in the baseline", "new": " [NEW"}.get(example.get("baseline") or "", "")
    history = example.get("baseline_history")
    if status and history:
        status += f"; seen in {history['seen_in']} of {history['runs']} recorded runs"
    status += "]" if status else ""
    kind = "minimal order" if shrink["one_minimal"] else "order"
    count = len(example["events"])
    console.print(f"\n{example.get('finding', example['invariant'])} under {example['protocol']}{status}: {kind} of "
                  f"{count} event{'' if count == 1 else 's'} (from {example['original_events']}; {proof}):",
                  markup=False)
    console.print("  " + (" ; ".join(example["events"]) or "(no fault needed)"), markup=False)
    for line in explanation_lines(example.get("explanation", ())):
        console.print(f"  why: {line}", markup=False)
    if "advice" in example:
        console.print("  " + advice_line(_advice(example), example["invariant"], availability), markup=False)
    for entry in example.get("ledger", [])[:4]:
        console.print(f"  blast radius: {entry['what']} -- {entry['who_acts']}", markup=False)
    console.print(f"  replay: {example['replay']}", markup=False)


def _print_mechanisms(console, mechanisms: dict) -> None:
    """The non-default mechanisms that never acted, per protocol (the groups of protocols with identical results
    head the counterexamples, :func:`_print_examples`)."""
    never = mechanisms.get("never_fired") or {}
    if never:
        console.print("\nmechanisms that never acted on this workload (their numbers are the protocol's without "
                      "them):", markup=False)
        for label, lines in never.items():
            for line in lines:
                console.print(f"  {label}: {line}", markup=False)


def _print_examples(console, document: dict, availability: str) -> None:
    """Each counterexample with its advice; a group of protocols with identical results gets one section,
    headed by its members, holding the first member's counterexamples once (and each member's advice when it
    asks for other changes)."""
    groups = (document.get("mechanisms") or {}).get("identical") or []
    grouped = {label: group for group in groups for label in group}
    headed: set[str] = set()
    for example in document["counterexamples"]:
        group = grouped.get(example["protocol"])
        if group is None:
            _print_example(console, example, availability)
            continue
        if example["protocol"] != group[0]:
            continue  # the same order, shown under the group's first protocol
        if group[0] not in headed:
            headed.add(group[0])
            console.print(f"\n{group_heading(group)} ({IDENTICAL_WORDS}; shown once):", markup=False)
        _print_example(console, example, availability)
        for other in _other_advice(document, example, group):
            console.print(f"  {other}", markup=False)
    for group in groups:
        if group[0] not in headed:  # identical, and nothing violated: the heading alone says so
            console.print(f"\n{group_heading(group)} ({IDENTICAL_WORDS}).", markup=False)


def _other_advice(document: dict, example: dict, group: list[str]) -> list[str]:
    """The advice of the group's other members for the same counterexample: one line naming those whose advice
    makes the same changes, a full line for each that asks for other changes."""
    availability = " + ".join(name.replace("_", " ") for name in document["availability"])
    same, differing = group_advice(document["counterexamples"], example, group[1:], _advised)
    lines = [f"the same advice under: {', '.join(same)}"] if same and "advice" in example else []
    return lines + [f"under {other['protocol']}: " + advice_line(_advice(other), other["invariant"], availability)
                    for other in differing if "advice" in other]


def _advice(example: dict) -> AdviceDocument | None:
    """A counterexample's advice as the document holds it, read."""
    advice = example.get("advice")
    return None if advice is None else AdviceDocument.from_json(advice, "advice")


def _advised(example: dict) -> tuple[str, str, AdviceDocument | None]:
    """A counterexample of the document as :func:`~sim.report.phrases.group_advice` reads it."""
    return example["protocol"], example.get("finding", example["invariant"]), _advice(example)
