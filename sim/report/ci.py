"""CI outputs of a fuzz run: JUnit XML and the GitHub job summary (Markdown)."""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr


def junit_xml(document: dict) -> str:
    """One test case per protocol x invariant; a failure carries the replay command."""
    cases = []
    failures = 0
    found = {(c["protocol"], c["invariant"]): c for c in document["counterexamples"]}
    for protocol, tally in document["by_protocol"].items():
        for invariant in document["invariants"]:
            name = f"{protocol} :: {invariant}"
            case = f'  <testcase classname={quoteattr("fencesim.fuzz." + document["workload"])} name={quoteattr(name)}>'
            if (protocol, invariant) in found:
                failures += 1
                example = found[(protocol, invariant)]
                body = "\n".join(example["events"]) + f"\n\nreplay: {example['replay']}"
                message = f"{invariant} violated in {tally['violating_runs_by_invariant'][invariant]} run(s)"
                case += (f"\n    <failure message={quoteattr(message)}>"
                         f"{escape(body)}</failure>\n  </testcase>")
            else:
                case += "</testcase>"
            cases.append(case)
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        f'<testsuite name="fencesim fuzz" tests="{len(cases)}" failures="{failures}" errors="0" skipped="0">\n'
        + "\n".join(cases) + "\n</testsuite>\n"
    )


def markdown_summary(document: dict) -> str:
    invariants = document["invariants"]
    availability = document.get("availability", [])
    lines = [f"## fencesim fuzz: workload `{document['workload']}`", "",
             f"{document['runs']} runs, {document['violating_runs']} violating.", "",
             "| protocol | runs | violating | " + " | ".join(invariants + availability) + " |",
             "|---|---|---|" + "---|" * len(invariants + availability)]
    for protocol, tally in document["by_protocol"].items():
        counts = " | ".join([str(tally["violating_runs_by_invariant"][n]) for n in invariants]
                            + [str(tally[n]) for n in availability])
        lines.append(f"| `{protocol}` | {tally['runs']} | {tally['violating_runs']} | {counts} |")
    for example in document["counterexamples"]:
        lines += ["", f"**{example['invariant']}** under `{example['protocol']}` "
                  f"({len(example['events'])} events): `{' ; '.join(example['events'])}`",
                  f"replay: `{example['replay']}`"]
    return "\n".join(lines) + "\n"
