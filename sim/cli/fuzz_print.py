"""What ``fencesim fuzz`` prints for a person: the seeds that ran and the budget, one table row per
protocol (violating runs per invariant, spurious rejections or other availability findings, the share of
work done), the seed's claims (FAILS first), each counterexample with the advisor's answer and its replay
command, and the baseline comparison."""

from __future__ import annotations

from rich.table import Table

from sim.report.render import advice_line


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


def protocol_table(document: dict) -> Table:
    """One row per protocol: runs, violating runs and share, counts per invariant, availability, work done."""
    table = Table(header_style="bold", show_edge=False)
    names = [name.replace("_", " ") for name in document["availability"]]
    for column in ("protocol", "runs", "violating runs", "by invariant", *(f"{n} (per run)" for n in names),
                   "work done"):
        table.add_column(column, overflow="fold")
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
        table.add_row(label, str(runs), share, found, *counted, done)
    return table


def print_summary(console, document: dict) -> None:
    from sim.report.ci import baseline_counts

    console.print(seeds_line(document), markup=False)
    if document.get("stopped"):
        console.print(f"{document['stopped']} stopped the sweep early; counts are of the seeds run", markup=False)
    console.print(protocol_table(document))
    _print_claims(console, document.get("claims") or [])
    _print_mechanisms(console, document.get("mechanisms") or {})
    availability = " + ".join(name.replace("_", " ") for name in document["availability"])
    alike = _identical_examples(document)
    for example in document["counterexamples"]:
        others = alike.get(id(example))
        if others is None:
            continue  # shown under the first protocol of its group
        _print_example(console, example, availability)
        if others:
            console.print(f"  the same order and results under: {', '.join(others)}", markup=False)
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
                               ("no longer replayable", baseline.get("not_replayable", []))):
            for entry in entries:
                why = f" ({entry['reason']})" if entry.get("reason") else ""
                console.print(f"  {title}: {entry['invariant']} under {entry.get('label', entry['protocol'])}: "
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
    status = {"known": " [known: in the baseline]", "new": " [NEW]"}.get(example.get("baseline") or "", "")
    kind = "minimal order" if shrink["one_minimal"] else "order"
    count = len(example["events"])
    console.print(f"\n{example['invariant']} under {example['protocol']}{status}: {kind} of "
                  f"{count} event{'' if count == 1 else 's'} (from {example['original_events']}; {proof}):",
                  markup=False)
    console.print("  " + (" ; ".join(example["events"]) or "(no fault needed)"), markup=False)
    if "advice" in example:
        console.print("  " + advice_line(example["advice"], example["invariant"], availability), markup=False)
    for entry in example.get("ledger", [])[:4]:
        console.print(f"  blast radius: {entry['what']} -- {entry['who_acts']}", markup=False)
    console.print(f"  replay: {example['replay']}", markup=False)


def _print_mechanisms(console, mechanisms: dict) -> None:
    """The non-default mechanisms that never acted, per protocol, and the protocols with identical results."""
    never = mechanisms.get("never_fired") or {}
    if never:
        console.print("\nmechanisms that never acted on this workload (their numbers are the protocol's without "
                      "them):", markup=False)
        for label, lines in never.items():
            for line in lines:
                console.print(f"  {label}: {line}", markup=False)
    for group in mechanisms.get("identical") or []:
        console.print(f"identical results: {', '.join(group)}", markup=False)


def _identical_examples(document: dict) -> dict[int, list[str]]:
    """id(example) -> the other protocols of its identical-results group with the same minimal order (shown
    once, under the first); an example absent from the map is one of those others."""
    groups = {label: tuple(group) for group in (document.get("mechanisms") or {}).get("identical", [])
              for label in group}
    shown: dict[tuple, list[str]] = {}
    out: dict[int, list[str]] = {}
    for example in document["counterexamples"]:
        key = (groups.get(example["protocol"], example["protocol"]), example["invariant"], tuple(example["events"]))
        if key in shown:
            shown[key].append(example["protocol"])
            continue
        shown[key] = out[id(example)] = []
    return out
