"""Does a design map's text agree with its table?

The map is shown twice: as sentences (:func:`~sim.report.phrases.map_lines`: the minimal safe designs, the
Pareto front, the designs violated or not decided, "what if we drop this?", each certificate, each
monotonicity finding) and as a table (:func:`~sim.report.phrases.map_rows`: one row per group of designs
that behave alike, with its verdict and shortest violations).  This module reads the sentences back, as
rendered, against the rows, and the rows against the map's points: every design a sentence names has the
verdict the sentence gives it in its row, and every row stands for designs of one verdict -- a group never
mixes decided and undecided designs, and a design not decided is alike to nothing.

:func:`map_contradictions` lists each disagreement, one line each (empty: none);
:mod:`sim.report.consistency` adds them to a review's contradictions.
"""

from __future__ import annotations

import re
from typing import Callable

from sim.report.phrases import map_lines, map_rows
from sim.search.map_document import MapDocument

SAFE, VIOLATED, UNDECIDED = "safe", "violated", "not decided"

#: A sentence's first words -> the verdict it gives every design it lists after its colon.
LISTS = {"Minimal safe designs": SAFE, "Pareto front among the designs proved safe": SAFE,
         "Violated within the bound": VIOLATED, "Not decided within the bound": UNDECIDED}
WHAT_IF = re.compile(r"^What if we drop this\? (?P<safe>\S+): \S+ \S+ -> \S+ \((?P<broken>\S+)\) breaks "
                     r"(?P<invariant>\w+) in (?P<events>\d+) events")
FINDING = re.compile(r"^Finding: (?P<safe>\S+) is safe for (?P<invariant>\w+) but the stronger (?P<broken>\S+) "
                     r"violates it")
CERTIFICATE = re.compile(r"^Certificate: on .*? no (?P<invariant>\w+) iff .*?(?: \(not decided: (?P<undecided>.*)\))?$")


def map_contradictions(drawn: MapDocument | None,
                       sentences: Callable[[MapDocument], list[str]] = map_lines) -> list[str]:
    """Every sentence of the map (as ``sentences`` renders them) that its table contradicts, and every row
    whose designs do not share its verdict."""
    if drawn is None or not drawn.protocols:
        return []
    table = _table(drawn)
    out = _groups(drawn, table)
    for line in sentences(drawn):
        out += _sentence(line, table)
    return out


def _table(drawn: MapDocument) -> dict[str, tuple[str, dict[str, int | None]]]:
    """Each design of the map -> the verdict and the shortest violations (invariant -> events, None where the
    row gives no number) of the row that stands for it (its own, or its group's)."""
    _, rows = map_rows(drawn)
    by_row: dict[str, tuple[str, dict[str, int | None]]] = {}
    for row in rows:
        shortest: dict[str, int | None] = {}
        for part in row[2].split(", ") if row[2] != "-" else ():
            name, _, events = part.rpartition(" ")
            shortest[name] = int(events) if events.isdigit() else None
        by_row[row[0].split(" (and ", 1)[0]] = (row[1], shortest)
    return {p.protocol: by_row[p.representative] for p in drawn.protocols if p.representative in by_row}


def _groups(drawn: MapDocument, table: dict[str, tuple[str, dict[str, int | None]]]) -> list[str]:
    out = []
    for point in drawn.protocols:
        if point.protocol not in table:
            out.append(f"the map's table has no row for {point.protocol} (alike to {point.representative}, which "
                       "has no row of its own)")
            continue
        verdict = table[point.protocol][0]
        if not verdict.startswith(point.status):
            out.append(f"the map's table shows {point.protocol} as {verdict!r} (in the row of "
                       f"{point.representative}), but its own search says {point.status}")
        if point.status == UNDECIDED and point.representative != point.protocol:
            out.append(f"the map's table groups {point.protocol}, not decided, as alike to {point.representative}: "
                       "a design not decided is alike to nothing")
    return out


def _sentence(line: str, table: dict[str, tuple[str, dict[str, int | None]]]) -> list[str]:
    """What one sentence says of each design it names, against the table."""
    said: list[tuple[str, str, str | None, int | None]] = []  # (design, verdict, invariant, events)
    head, _, listed = line.rpartition(": ")  # a list follows the last colon (labels hold none)
    kind = next((verdict for start, verdict in LISTS.items() if head.startswith(start)), None)
    if kind is not None and listed.rstrip(".") != "none":
        said += [(label, kind, None, None) for label in listed.rstrip(".").split(", ")]
    for pattern in (WHAT_IF, FINDING):
        found = pattern.match(line)
        if found:
            events = int(found["events"]) if "events" in found.groupdict() else None
            said += [(found["broken"], VIOLATED, found["invariant"], events)]
            if pattern is WHAT_IF:  # "what if we drop this?" is asked of a minimal safe design
                said += [(found["safe"], SAFE, None, None)]
    certificate = CERTIFICATE.match(line)
    if certificate and certificate["undecided"]:
        said += [(label, UNDECIDED, certificate["invariant"], None) for label in certificate["undecided"].split(", ")]
    return [problem for entry in said for problem in [_against(line, *entry, table)] if problem]


def _against(line: str, label: str, verdict: str, invariant: str | None, events: int | None,
             table: dict[str, tuple[str, dict[str, int | None]]]) -> str | None:
    quoted = line if len(line) <= 160 else line[:157] + "..."
    if label not in table:
        return f"the map's sentence {quoted!r} names {label}, which its table does not show"
    shown, shortest = table[label]
    if invariant is None:
        return None if shown.startswith(verdict) else (
            f"the map's sentence {quoted!r} calls {label} {verdict}, but its table says {shown!r}")
    if verdict == VIOLATED:
        if invariant not in shortest:
            return (f"the map's sentence {quoted!r} says {label} violates {invariant}, but its table shows no "
                    f"{invariant} violation for it ({shown!r})")
        if events is not None and shortest[invariant] not in (None, events):
            return (f"the map's sentence {quoted!r} says {label} breaks {invariant} in {events} events, but its "
                    f"table says {shortest[invariant]}")
        return None
    if shown == SAFE or invariant in shortest:  # not decided for this invariant: neither safe nor violated
        return f"the map's sentence {quoted!r} calls {label} not decided for {invariant}, but its table says {shown!r}"
    return None
