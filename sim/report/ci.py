"""CI outputs of a fuzz run: JUnit XML and the GitHub job summary (Markdown).

JUnit: one test suite per protocol, with properties (seed range, workload,
family, protocol, commit, fencesim version); one test case per finding
(invariant @ where; an invariant nothing broke is one passing case), failing
only for a finding not in the baseline (a known one passes with a note),
and one for liveness (the share of work done; it fails when the
protocol applies nothing).  Every test case carries its time: the shrink
and advice of its counterexample, or the protocol's share of the sweep.
"""

from __future__ import annotations

import re
from xml.sax.saxutils import escape as _escape
from xml.sax.saxutils import quoteattr as _quoteattr

#: Characters XML 1.0 cannot hold (control characters, lone surrogates, U+FFFE/U+FFFF).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_text(text: str) -> str:
    """``text`` with every character XML cannot hold written as ``\\xNN`` / ``\\uNNNN``."""
    return _NOT_XML.sub(lambda m: repr(m.group())[1:-1], str(text))


def escape(text: str) -> str:
    return _escape(_xml_text(text))


def quoteattr(text: str) -> str:
    return _quoteattr(_xml_text(text))


def _events(count: int) -> str:
    return f"{count} event" if count == 1 else f"{count} events"


def _property(name: str, value) -> str:
    return f'      <property name={quoteattr(name)} value={quoteattr(str(value))}/>'


def _finding_case(cases: list[str], classname: str, example: dict, tally: dict, timings: dict) -> int:
    """The test case of one finding; 1 when it fails (a finding not known to the baseline)."""
    finding = example.get("finding", example["invariant"])
    seconds = timings.get((example["protocol"], finding), 0.0)
    case = f'    <testcase classname={classname} name={quoteattr(finding)} time="{seconds:.3f}"'
    runs = tally.get("violating_runs_by_finding", {}).get(finding,
                                                          tally["violating_runs_by_invariant"][example["invariant"]])
    body = "\n".join(example["events"]) + f"\n\nreplay: {example['replay']}"
    if example.get("baseline") == "known":
        cases.append(case + f">\n      <system-out>{escape('known violation (in the baseline): ' + body)}"
                     "</system-out>\n    </testcase>")
        return 0
    message = f"{finding} violated in {runs} of {tally['runs']} run(s)"
    cases.append(case + f">\n      <failure message={quoteattr(message)}>{escape(body)}</failure>\n"
                 "    </testcase>")
    return 1


def junit_xml(document: dict, timings: dict | None = None) -> str:
    """The JUnit XML of a fuzz document (see the module docstring); ``timings`` from
    :func:`sim.report.fuzz.timings`."""
    meta = document.get("meta", {})
    timings = timings or {}
    found: dict[tuple[str, str], list[dict]] = {}
    for c in document["counterexamples"]:
        found.setdefault((c["protocol"], c["invariant"]), []).append(c)
    protocols = list(document["by_protocol"])
    sweep_share = timings.get("sweep", 0.0) / max(1, len(protocols))
    suites, tests_total, failures_total = [], 0, 0
    for protocol in protocols:
        tally = document["by_protocol"][protocol]
        # the seeds that ran: a budget may stop a sweep before the range asked for
        seeds = f"{document['seed_start']}..{document['seed_start'] + tally['runs'] - 1}"
        cases, failures = [], 0
        classname = quoteattr(f"fencesim.fuzz.{document['workload']}.{protocol}")
        for invariant in document["invariants"]:
            examples = found.get((protocol, invariant))
            if not examples:
                cases.append(f'    <testcase classname={classname} name={quoteattr(invariant)} time="0.000"/>')
                continue
            for example in examples:  # one test case per finding (invariant @ where)
                failures += _finding_case(cases, classname, example, tally, timings)
        progress = tally.get("progress")

        case = f'    <testcase classname={classname} name="liveness" time="{sweep_share:.3f}"'
        if progress and tally.get("applies_nothing"):
            failures += 1
            message = f"applies nothing: {progress['what']} = {progress['done']} / {progress['planned']}"
            cases.append(case + f">\n      <failure message={quoteattr(message)}/>\n    </testcase>")
        elif progress:
            share = progress["share"]["value"]
            cases.append(case + f">\n      <system-out>{escape(progress['what'])}: {share:.1%}</system-out>\n"
                         "    </testcase>")
        else:
            cases.append(case + "/>")
        coverage = tally.get("coverage") or {}
        if coverage.get("goals"):
            cases.append(_coverage_case(classname, coverage))
        curve = [f"{seeds_run}:{counts.get(protocol, 0)}" for seeds_run, counts in document.get("saturation", [])]
        properties = "\n".join([
            _property("family", document["family"]), _property("workload", document["workload"]),
            _property("protocol", protocol), _property("seeds", seeds),
            _property("budget_s", "none" if document.get("budget_s") is None else f"{document['budget_s']:g}"),
            _property("budget_stopped", ", ".join(document.get("budget_stopped") or []) or "nothing"),
            _property("commit", meta.get("commit", "unknown")),
            _property("fencesim_version", meta.get("fencesim_version", "unknown")),
            _property("coverage_never", ", ".join(coverage.get("never") or []) or "nothing"),
            _property("distinct_behaviours", coverage.get("distinct_behaviours", "unknown")),
            _property("saturation", " ".join(curve) or "none"),
        ])
        suites.append(f'  <testsuite name={quoteattr("fencesim fuzz " + protocol)} tests="{len(cases)}" '
                      f'failures="{failures}" errors="0" skipped="0" time="{sweep_share:.3f}">\n'
                      f"    <properties>\n{properties}\n    </properties>\n" + "\n".join(cases) + "\n  </testsuite>")
        tests_total += len(cases)
        failures_total += failures
    return ('<?xml version="1.0" encoding="utf-8"?>\n'
            f'<testsuites name="fencesim fuzz" tests="{tests_total}" failures="{failures_total}">\n'
            + "\n".join(suites) + "\n</testsuites>\n")


def _coverage_case(classname: str, coverage: dict) -> str:
    """A passing test case listing each declared goal's runs (never reached ones in system-err: a warning)."""
    never = coverage.get("never") or []
    reached = "\n".join(f"{goal}: {'never' if goal in never else count}" for goal, count in coverage["goals"].items())
    case = f'    <testcase classname={classname} name="coverage" time="0.000"'
    return (case + f">\n      <system-out>{escape(reached)}</system-out>\n"
            + (f"      <system-err>{escape('never reached: ' + ', '.join(never))}</system-err>\n" if never else "")
            + "    </testcase>")


def baseline_counts(baseline: dict) -> str:
    """The comparison with a baseline in one line of plain words."""
    text = (f"{baseline['new']} new, {baseline['known']} known; of the baseline's other entries "
            f"{len(baseline['fixed'])} fixed, {len(baseline.get('rare', baseline['still_violating']))} rare (still "
            f"violating, not drawn by this sweep), {len(baseline['not_run'])} of protocols not fuzzed")
    if baseline.get("runs_recorded"):
        text += f" (the baseline records {baseline['runs_recorded']} earlier run(s))"
    if baseline.get("unchecked"):
        text += f", {len(baseline['unchecked'])} unchecked (the replay limit stopped before them)"
    if baseline.get("not_replayable"):
        text += f", {len(baseline['not_replayable'])} no longer replayable"
    if baseline.get("workload_changed"):
        text += " (the workload changed since the baseline was written: each entry was replayed on it)"
    return text


def _seed_range(document: dict) -> str:
    done = document.get("seeds_done", document["seeds"])
    return f"{document['seed_start']}..{document['seed_start'] + done - 1}"


def markdown_summary(document: dict) -> str:
    """The GitHub job summary: counts, liveness, the seed's claims, each counterexample and its replay command."""
    invariants = document["invariants"]
    availability = document.get("availability", [])
    lines = [f"## fencesim fuzz: workload `{document['workload']}` ({document['family']} family)", "",
             f"{document['runs']} runs, {document['violating_runs']} violating "
             f"(seeds {_seed_range(document)} per protocol, {document['seeds']} asked"
             + (f"; {document['stopped']} stopped the sweep early" if document.get("stopped") else "")
             + (f"; budget {document['budget_s']:g} s" if document.get("budget_s") is not None else "") + ").", "",
             "| protocol | runs | violating runs | " + " | ".join(invariants + availability) + " | work done |",
             "|---|---|---|" + "---|" * len(invariants + availability) + "---|"]
    for protocol, tally in document["by_protocol"].items():
        counts = " | ".join([str(tally["violating_runs_by_invariant"][n]) for n in invariants]
                            + [str(tally[n]) for n in availability])
        progress = tally.get("progress")
        done = "n/a" if not progress else f"{progress['share']['value']:.0%}" + (
            " (applies nothing)" if tally.get("applies_nothing") else "")
        lines.append(f"| `{protocol}` | {tally['runs']} | {tally['violating_runs']} | {counts} | {done} |")
    for warning in document.get("coverage_warnings", []):
        lines += ["", f"> **Warning**: {warning}"]
    baseline = document.get("baseline")
    if baseline:
        lines += ["", f"Baseline `{baseline['file']}`: {baseline_counts(baseline)}."]
    if document.get("claims"):
        lines += ["", "**The seed's claims, as the search found them**", ""]
        lines += [f"- **FAILS** `{c['protocol']}`: {c['claim']} -- {c['evidence']}"
                  for c in document["claims"] if not c["holds"]]
        holding = [c for c in document["claims"] if c["holds"]]
        if holding:
            lines += ["", f"<details><summary>{len(holding)} claim(s) hold</summary>", ""]
            lines += [f"- holds `{c['protocol']}`: {c['claim']} -- {c['evidence']}" for c in holding]
            lines += ["", "</details>"]
    for example in document["counterexamples"]:
        status = f" ({example['baseline']})" if "baseline" in example else ""
        lines += ["", f"**{example.get('finding', example['invariant'])}** under `{example['protocol']}`{status} "
                  f"({_events(len(example['events']))}): `{' ; '.join(example['events'])}`",
                  f"replay: `{example['replay']}`"]
    return "\n".join(lines) + "\n"


def explore_junit(document: dict) -> str:
    """The JUnit XML of an ``explore`` document: one suite per protocol, one test case per safety invariant
    (failing when violated, with its shortest orders) and, with ``--liveness``, one per liveness property
    (failing when violated, with its lasso; skipped when not decided, saying why)."""
    suites, tests_total, failures_total = [], 0, 0
    for row in document["protocols"]:
        classname = quoteattr(f"fencesim.explore.{document['workload']}.{row['protocol']}")
        cases, failures, skipped = [], 0, 0
        for name in document.get("invariants") or list(row["violations"]):
            case = f"    <testcase classname={classname} name={quoteattr(name)} time=\"0.000\""
            found = row["violations"].get(name)
            if found is None and name in row["proved_absent"]:
                cases.append(case + "/>")
                continue
            if found is None:
                skipped += 1
                why = quoteattr("not proved: the search ended " + row["end"])
                cases.append(case + f">\n      <skipped message={why}/>\n    </testcase>")
                continue
            failures += 1
            message = f"{name} violated: shortest {_events(found['shortest_events'])}"
            body = "\n".join(" ; ".join(order) for order in found["orders"])
            cases.append(case + f">\n      <failure message={quoteattr(message)}>{escape(body)}</failure>\n"
                         "    </testcase>")
        for name, verdict in (row.get("liveness") or {}).items():
            case = f"    <testcase classname={classname} name={quoteattr(name + ' (liveness)')} time=\"0.000\""
            if verdict["status"] == "holds":
                cases.append(case + "/>")
            elif verdict["status"] == "violated":
                failures += 1
                lasso = verdict["lasso"]
                body = (" ; ".join(lasso["prefix"]) + "\nthen forever: "
                        + (" ; ".join(lasso["cycle"]) or "nothing the system must do"))
                message = f"{name} violated" + (f": {verdict['item']} stays pending" if "item" in verdict else "")
                cases.append(case + f">\n      <failure message={quoteattr(message)}>{escape(body)}</failure>\n"
                             "    </testcase>")
            else:
                skipped += 1
                cases.append(case + f">\n      <skipped message={quoteattr(verdict.get('note', 'not decided'))}/>\n"
                             "    </testcase>")
        suites.append(f"  <testsuite name={quoteattr('fencesim explore ' + row['protocol'])} tests=\"{len(cases)}\" "
                      f"failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"0.000\">\n"
                      + "\n".join(cases) + "\n  </testsuite>")
        tests_total += len(cases)
        failures_total += failures
    return ('<?xml version="1.0" encoding="utf-8"?>\n'
            f'<testsuites name="fencesim explore" tests="{tests_total}" failures="{failures_total}">\n'
            + "\n".join(suites) + "\n</testsuites>\n")
