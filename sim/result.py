"""The result of replaying one scenario under one protocol (either family)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sim.checks.base import CheckReport, Violation
from sim.history import History
from sim.kernel import RunEnd
from sim.protocol import Protocol


@dataclass
class RunResult:
    """History, verdicts and check results of one run.

    ``verdicts`` lists the deliveries (or transitions) that produced a verdict:
    ``{"event_index", "step", "verdict"}``.  ``violations`` are the safety
    violations; ``availability`` the counted findings such as spurious
    rejections.
    """

    scenario: str
    family: str
    protocol: Protocol
    history: History
    verdicts: list[dict[str, Any]]
    checks: CheckReport
    end: RunEnd
    expect: str | None = None
    outcome: str | None = None  # the verdict compared with [expect]; default: the last verdict
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
    def expectation_met(self) -> bool | None:
        if self.expect is None:
            return None
        return (self.outcome if self.outcome is not None else self.last_verdict) == self.expect

    def to_json(self) -> dict[str, Any]:
        out = {
            "scenario": self.scenario,
            "protocol": self.protocol.label,
            "verdicts": self.verdicts,
            "violations": [v.to_dict() for v in self.violations],
            "availability": [v.to_dict() for v in self.availability],
            "checks": self.checks.status(),
            "end": self.end.reason,
            "history": self.history.to_dicts(),
        }
        out["outcome"] = self.outcome if self.outcome is not None else self.last_verdict
        if self.expect is not None:
            out["expect"] = self.expect
            out["expect_met"] = self.expectation_met
        out.update(self.extra)
        return out
