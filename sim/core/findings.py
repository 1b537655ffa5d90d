"""Findings: one distinct bug is an invariant *and where* it breaks.

A sweep that breaks one invariant in two places has found two bugs, often with two different fixes (a keyless
e-mail sent twice and a charge appended twice are both ``duplicate_effect``).  Each family says where a violation
happens (:meth:`~sim.core.family.Model.where`: the step and its files for the workspace, the transition and its
object's kind for effects); a finding is named ``"<invariant> @ <where>"`` (just the invariant when the family
cannot say where).  The name is the key of everything per finding: the sweep's first orders, the shrinker's
target, the advisor's counts, baselines and ``fencesim diff``.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

SEPARATOR = " @ "


def finding_id(invariant: str, where: str | None) -> str:
    """The name of a finding: ``"duplicate_effect @ send_email (email)"``, or the invariant alone."""
    return f"{invariant}{SEPARATOR}{where}" if where else invariant


def split(finding: str) -> tuple[str, str]:
    """``(invariant, where)`` of a finding's name (``where`` empty for an invariant alone)."""
    invariant, _, where = finding.partition(SEPARATOR)
    return invariant, where


def invariant_of(finding: str) -> str:
    return finding.partition(SEPARATOR)[0]


def findings_of(family: Any, scenario: Any, violations: Iterable[Any]) -> tuple[str, ...]:
    """The distinct findings a run's safety violations show, in the order first shown."""
    where = family.where
    return tuple(dict.fromkeys(finding_id(v.invariant, where(scenario, v)) for v in violations))


def switches(actors: Sequence[str]) -> int:
    """How many times the actor changes along an order (``planner, client, client, human``: 2)."""
    return sum(1 for before, after in zip(actors, actors[1:]) if before != after)


def violations_of(family: Any, scenario: Any, violations: Iterable[Any], finding: str) -> list[Any]:
    """The violations, of those given, that show ``finding`` (in their order)."""
    where = family.where
    return [v for v in violations if finding_id(v.invariant, where(scenario, v)) == finding]
