"""Replaying a scenario under a protocol, for any family, and what comes back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sim.core.checks import CheckReport, Violation
from sim.core.expect import Expectation, expectation_for
from sim.core.history import History
from sim.core.kernel import RunEnd
from sim.core.knobs import Protocol
from sim.core.values import JsonObject


@dataclass
class RunResult:
    """History, verdicts and check results of one run.

    ``verdicts`` lists the events that produced a verdict (deliveries,
    transitions).  ``violations`` are the safety violations;
    ``availability`` the counted findings such as spurious rejections.
    """

    scenario: str
    family: str
    protocol: Protocol
    history: History
    verdicts: list[dict[str, Any]]
    checks: CheckReport
    end: RunEnd
    expect: Expectation | None = None
    outcome: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def violations(self) -> list[Violation]:
        return self.checks.safety_violations

    @property
    def availability(self) -> list[Violation]:
        return self.checks.availability_findings

    @property
    def last_verdict(self) -> str | None:
        return self.verdicts[-1]["verdict"] if self.verdicts else None

    @property
    def mismatches(self) -> list[str]:
        """How the run differs from the scenario's [expect] for this protocol (empty: met or none)."""
        if self.expect is None:
            return []
        return self.expect.mismatches(self.outcome, self.verdicts, (v.invariant for v in self.violations))

    @property
    def expectation_met(self) -> bool | None:
        if self.expect is None:
            return None
        return not self.mismatches

    @property
    def violations_expected(self) -> bool:
        """Whether the run's safety violations (at least one) are exactly those its [expect] entry declares
        (its ``violations``): a planted bug the scenario says must show.  False for a run that violates
        nothing, and for one whose entry declares no violations (an outcome alone declares none)."""
        return (bool(self.violations) and self.expect is not None and self.expect.violations is not None
                and tuple(sorted({v.invariant for v in self.violations})) == self.expect.violations)

    @property
    def passes(self) -> bool:
        """``fencesim run``'s rule: no safety violation its [expect] entry does not declare, and its entry (if
        any) met.  A run that fails it makes the command exit 1."""
        return self.expectation_met is not False and (not self.violations or self.violations_expected)

    def to_json(self) -> JsonObject:
        out: JsonObject = {
            "scenario": self.scenario,
            "family": self.family,
            "protocol": self.protocol.label,
            "verdicts": self.verdicts,
            "violations": [v.to_dict() for v in self.violations],
            "availability": [v.to_dict() for v in self.availability],
            "checks": self.checks.status(),
            "end": self.end.reason,
            "history": self.history.to_dicts(),
            "outcome": self.outcome,
        }
        if self.expect is not None:
            out["expect"] = self.expect.describe()
            out["expect_met"] = self.expectation_met
            out["expect_mismatches"] = self.mismatches
            out["violations_expected"] = self.violations_expected
        out.update(self.extra)
        return out


def run_scenario(family, scenario, protocol: Protocol | str | None = None) -> RunResult:
    """Replay ``scenario`` (its own events) under ``protocol`` (default: the scenario's, else
    the family's first preset) and run the family's checks."""
    chosen: Protocol = (protocol if isinstance(protocol, Protocol)
                        else family.parse_protocol(protocol or scenario.protocol or family.default_protocol))
    replay = family.replay(scenario, chosen)
    return RunResult(
        scenario=scenario.name, family=family.name, protocol=chosen, history=replay.history,
        verdicts=family.verdicts(replay), checks=family.check(replay.history), end=replay.end,
        expect=expectation_for(scenario.expect, chosen, family.parse_protocol), outcome=family.outcome(replay),
    )
