"""Checks of the workspace family: ``lost_update``, ``duplicate_effect``,
``stale_accept``, ``journal_loss`` (safety) and ``spurious_rejection``
(availability).

Each reads only event fields (the history schema in ``docs/workspace.md``),
so it runs on a recorded history as well as a simulated one.  A delivery is *applied*
when its ``verdict`` is ``applied`` (a write happened, even if the executor
died right after).  Each finding names the seed's failure domain.
"""

from __future__ import annotations

from sim.core.checks import CheckResult, CheckSpec, Violation

DOMAINS = ("stale_plan", "lost_ack", "duplicate_delivery", "replan_drift")


def _deliveries(history):
    return [e for e in history if e.event == "deliver" and not e.get("skipped")]


def _applied(history):
    return [e for e in _deliveries(history) if e.get("verdict") == "applied"]


def _domain(event) -> str:
    if event.get("domain") in DOMAINS:
        return event.get("domain")
    origin = event.get("origin")
    if origin == "retry":
        return "lost_ack"
    if origin == "duplicate":
        return "duplicate_delivery"
    if event.get("replanned"):
        return "replan_drift"
    return "stale_plan"


def _replaced_unexpected(event) -> bool | None:
    """Did this write replace content other than what its author expected?

    Compares only the hunks the patch names when the history has them,
    else whole-file hashes; ``None`` when neither is recorded.
    """
    before, expected = event.get("hunks_before"), event.get("expected_prior_hunks")
    if isinstance(before, dict) and isinstance(expected, dict):
        return any(before.get(h) != expected.get(h) for h in expected)
    if "hash_before" in event and "expected_prior_hash" in event:
        return event["hash_before"] != event["expected_prior_hash"]
    return None


def lost_update(history) -> CheckResult:
    """An applied step replaced content other than the content its author truly expected."""
    violations = []
    for event in _applied(history):
        unexpected = _replaced_unexpected(event)
        if unexpected is None:
            return CheckResult.not_evaluable(
                "lost_update", f"event {event.index} lacks hunks_before/expected_prior_hunks and hash fields"
            )
        if unexpected:
            violations.append(Violation(
                "lost_update", event.index, event.get("step"),
                f"{event.get('step')} wrote {event.get('path')} over content {event.get('hash_before')} "
                f"but its author expected {event.get('expected_prior_hash')}",
                _domain(event),
            ))
    return CheckResult.from_violations("lost_update", violations)


def duplicate_effect(history) -> CheckResult:
    """One step_id applied more than once."""
    seen: dict[str, int] = {}
    violations = []
    for event in _applied(history):
        step = event.get("step")
        if step is None:
            return CheckResult.not_evaluable("duplicate_effect", f"event {event.index} has no step")
        if step in seen:
            violations.append(Violation(
                "duplicate_effect", event.index, step,
                f"{step} applied again (first at event {seen[step]}, copy {event.get('copy', '?')} "
                f"via {event.get('origin', 'unknown')})",
                _domain(event),
            ))
        else:
            seen[step] = event.index
    return CheckResult.from_violations("duplicate_effect", violations)


def stale_accept(history) -> CheckResult:
    """A fenced step applied with a stamped base rev other than the rev at apply (the seed's P1)."""
    violations = []
    for event in _applied(history):
        fence = event.get("fence")
        if fence is None or "stamped_base_rev" not in event or "rev_at_apply" not in event:
            return CheckResult.not_evaluable(
                "stale_accept", f"event {event.index} lacks fence/stamped_base_rev/rev_at_apply"
            )
        if fence != "none" and event["stamped_base_rev"] != event["rev_at_apply"]:
            violations.append(Violation(
                "stale_accept", event.index, event.get("step"),
                f"{event.get('step')} stamped base rev {event['stamped_base_rev']} applied at rev {event['rev_at_apply']}",
                _domain(event),
            ))
    return CheckResult.from_violations("stale_accept", violations)


def journal_loss(history) -> CheckResult:
    """With dedupe journal: an applied write without its key once durable, or a key
    removed while its step can still be retried (the seed's P2, stated so it can fail)."""
    deliveries = _deliveries(history)
    if deliveries and all("dedupe" not in e for e in deliveries):
        return CheckResult.not_evaluable("journal_loss", "no delivery records its dedupe mode")
    violations = []
    acked: set[str] = set()
    for event in history:
        if event.event == "ack" and event.get("step"):
            acked.add(event["step"])
        elif event.event == "deliver" and event.get("verdict") == "applied" and event.get("dedupe") == "journal":
            if not event.get("journal_key"):
                violations.append(Violation(
                    "journal_loss", event.index, event.get("step"),
                    f"{event.get('step')} was written but its journal key is not in the journal"
                    + (f" (executor preempted {event.get('preempted')})" if event.get("preempted") else ""),
                    "lost_ack",
                ))
        elif event.event == "journal_remove":
            step = event.get("step")
            if step not in acked:
                violations.append(Violation(
                    "journal_loss", event.index, step,
                    f"journal key {event.get('journal_key')} removed while {step} can still be retried",
                    "lost_ack",
                ))
    return CheckResult.from_violations("journal_loss", violations)


def spurious_rejection(history) -> CheckResult:
    """A rejection where applying would have been safe, or where the step had
    already been applied (the right answer was to replay its stored result)."""
    applied_steps: set[str] = set()
    violations = []
    for event in history:
        verdict = event.get("verdict")
        if event.event in ("ack", "lose_ack") or not isinstance(verdict, str):
            continue
        step = event.get("step")
        if verdict == "applied" and event.event == "deliver":
            applied_steps.add(step)
            continue
        if not verdict.startswith("rejected:"):
            continue
        if verdict == "rejected:overlap":
            if event.get("pipeline") == "off":
                violations.append(Violation(
                    "spurious_rejection", event.index, None,
                    "plan rejected for overlapping siblings although pipeline=off dispatches them in order",
                    "stale_plan", safety=False,
                ))
            continue
        if step in applied_steps:
            violations.append(Violation(
                "spurious_rejection", event.index, step,
                f"{step} was already applied; the client now believes finished work failed ({verdict})",
                _domain(event), safety=False,
            ))
            continue
        unexpected = _replaced_unexpected(event)
        if unexpected is None:
            return CheckResult.not_evaluable(
                "spurious_rejection", f"rejection at event {event.index} lacks the truth fields"
            )
        if unexpected is False:
            violations.append(Violation(
                "spurious_rejection", event.index, step,
                f"{verdict} although applying {step} would have replaced exactly what its author expected",
                _domain(event), safety=False,
            ))
    return CheckResult.from_violations("spurious_rejection", violations)


DELIVER = ("step", "verdict")
#: Crash points before which nothing is written: a delivery cut short there rightly records no verdict
#: (``before_write`` in the model; a real executor may name finer points before its write).
BEFORE_ANY_WRITE = ("before_write", "after_intent", "mid_write")


def _cut_short(event) -> bool:
    return event.get("preempted") in BEFORE_ANY_WRITE


CUT_SHORT = {"deliver": _cut_short}
CHECKS = (
    CheckSpec("lost_update", lost_update, True, "an applied step replaced content its author did not expect",
              requires={"deliver": DELIVER}, exempt=CUT_SHORT),
    CheckSpec("duplicate_effect", duplicate_effect, True, "one step applied more than once",
              requires={"deliver": DELIVER}, exempt=CUT_SHORT),
    CheckSpec("stale_accept", stale_accept, True, "a fenced step applied at a rev other than its stamp",
              requires={"deliver": ("verdict", "fence", "stamped_base_rev", "rev_at_apply")}, exempt=CUT_SHORT),
    CheckSpec("journal_loss", journal_loss, True, "an applied write without its durable journal key",
              requires={"deliver": ("verdict", "dedupe", "step")}, exempt=CUT_SHORT),
    CheckSpec("spurious_rejection", spurious_rejection, False, "a rejection the truth did not need",
              requires={"deliver": DELIVER}, count_as="spurious_rejections", exempt=CUT_SHORT),
)
SAFETY_INVARIANTS = tuple(c.name for c in CHECKS if c.safety)
