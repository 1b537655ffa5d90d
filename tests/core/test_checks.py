"""The checks contract every family shares: results, specs, reports, run_checks."""

from __future__ import annotations

from sim.core.checks import (
    NOT_EVALUABLE,
    OK,
    VIOLATED,
    CheckReport,
    CheckResult,
    CheckSpec,
    Violation,
    run_checks,
)
from sim.core.history import History


def _finds_every_deliver(history):
    found = [Violation("toy", e.index, e.get("step"), "planted") for e in history if e.event == "deliver"]
    return CheckResult.from_violations("toy", found)


def _counts_rejections(history):
    found = [Violation("noisy", e.index, None, "counted", safety=False) for e in history if e.event == "reject"]
    return CheckResult.from_violations("noisy", found)


SPECS = (CheckSpec("toy", _finds_every_deliver, True, "a planted safety check", requires={"deliver": ("step",)}),
         CheckSpec("noisy", _counts_rejections, False, "a planted availability check", count_as="rejections"))


def test_from_violations_is_ok_without_and_violated_with_findings():
    """A result with no violation is 'ok'; one with any is 'violated'."""
    assert CheckResult.from_violations("x", []).status == OK
    assert CheckResult.from_violations("x", [Violation("x", 0, None, "d")]).status == VIOLATED


def test_not_evaluable_carries_its_reason_and_no_violation():
    """not_evaluable is neither ok nor violated, and says why."""
    result = CheckResult.not_evaluable("x", "lacks a field")
    assert (result.status, result.violations, result.reason) == (NOT_EVALUABLE, (), "lacks a field")


def test_violation_to_dict_writes_domain_only_when_known():
    """A violation's dict has invariant, step, event_index and detail, and domain only when it has one."""
    assert Violation("x", 3, "s1", "d").to_dict() == {"invariant": "x", "step": "s1", "event_index": 3, "detail": "d"}
    assert Violation("x", 3, "s1", "d", domain="lost_ack").to_dict()["domain"] == "lost_ack"


def test_column_is_count_as_or_the_check_name():
    """An availability check is counted under count_as; without it, under its own name."""
    assert [spec.column for spec in SPECS] == ["toy", "rejections"]


def test_run_checks_runs_in_order_and_splits_safety_from_availability():
    """run_checks keeps the specs' order; the report separates safety violations from availability findings."""
    history = History.from_dicts([{"actor": "a", "event": "deliver", "step": "s1"}, {"actor": "a", "event": "reject"}])
    report = run_checks(SPECS, history)
    assert isinstance(report, CheckReport)
    assert report.status() == {"toy": VIOLATED, "noisy": VIOLATED}
    assert [v.invariant for v in report.safety_violations] == ["toy"]
    assert [v.invariant for v in report.availability_findings] == ["noisy"]


def test_run_checks_on_a_clean_history_is_all_ok():
    """With nothing planted, every check is 'ok' and the report holds no finding."""
    report = run_checks(SPECS, History.from_dicts([{"actor": "a", "event": "plan"}]))
    assert set(report.status().values()) == {OK}
    assert report.safety_violations == [] and report.availability_findings == []


def test_checks_sharing_one_pass_judge_as_each_alone():
    """The family's fold checks run over one pass give exactly what each check gives alone, on every kind of
    history a sweep makes and on histories with a required field dropped."""
    from sim.core.checks import run_checks
    from sim.core.history import History
    from sim.registry import FAMILIES

    family = FAMILIES.get("workspace")
    workload = FAMILIES.load_workload("seed-fuzz")
    histories = []
    for label in ("none", "step-dedupe,journal_write=after_write", "plan,drift_check=reject"):
        protocol = family.parse_protocol(label)
        histories += [family.replay(workload.base, protocol, family.generate(workload, seed)).history
                      for seed in range(60)]
    for history in list(histories[:40]):
        for dropped in ("verdict", "dedupe", "hunks_before", "step"):
            rows = [{k: v for k, v in e.to_dict().items() if not (e.event == "deliver" and k == dropped)}
                    for e in history]
            histories.append(History.from_dicts(rows))
    judged = 0
    for history in histories:
        fused = run_checks(family.checks, history).results
        alone = [spec.run(history) for spec in family.checks]
        assert fused == alone
        judged += any(r.status != "ok" for r in alone)
    assert judged > 50  # the histories show violations and not_evaluable results, not only "ok"
