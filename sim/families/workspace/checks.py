"""Checks of the workspace family: ``lost_update``, ``duplicate_effect``,
``stale_accept``, ``journal_loss`` (safety) and ``spurious_rejection``
(availability).

Each reads only event fields (the history schema in ``docs/workspace.md``),
so it runs on a recorded history as well as a simulated one.  A delivery is *applied*
when its ``verdict`` is ``applied`` (a write happened, even if the executor
died right after).  Each finding names the seed's failure domain.
"""

from __future__ import annotations

from sim.core.checks import CheckSpec, Fact, Fold, NotEvaluable, Violation, fact
from sim.families.workspace.ledger import last_write, replaced_hunks

DOMAINS = ("stale_plan", "lost_ack", "duplicate_delivery", "replan_drift", "checkpoint_restore")
NONE = ()


def _applied(event) -> bool:
    """A delivery (not skipped) whose verdict is ``applied``: a write happened."""
    return event.event == "deliver" and event.fields.get("verdict") == "applied" and not event.fields.get("skipped")


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
    if isinstance(before, dict) and isinstance(expected, dict):  # the hot path: no list (replaced_hunks) built
        return any(before.get(h) != expected.get(h) for h in expected)
    if "hash_before" in event and "expected_prior_hash" in event:
        return event["hash_before"] != event["expected_prior_hash"]
    return None


#: The fields of a write that say what it replaced and what its author expected there.
WRITE_FACTS = ("step", "path", "hash_before", "expected_prior_hash")


def _write_fact(role: str, event) -> Fact:
    hunks = replaced_hunks(event)
    return fact(role, event, *WRITE_FACTS, **({"replaced_hunks": hunks} if hunks else {}))


def _restored(event) -> bool:
    """A restore to a step's checkpoint (``tests_fail`` with verdict ``compensated``): a write of the file."""
    return event.event == "tests_fail" and event.fields.get("verdict") == "compensated"


def _lost_update(carry, event):
    """An applied step replaced content other than the content its author truly expected -- or a restore
    to a step's checkpoint wrote over what came after the step (a later human edit)."""
    if _restored(event):
        return carry, _restore_lost(event)
    if not _applied(event):
        return carry, NONE
    unexpected = _replaced_unexpected(event)
    if unexpected is None:
        raise NotEvaluable(f"event {event.index} lacks hunks_before/expected_prior_hunks and hash fields")
    if not unexpected:
        return carry, NONE
    return carry, (Violation(
        "lost_update", event.index, event.get("step"),
        f"{event.get('step')} wrote {event.get('path')} over content {event.get('hash_before')} "
        f"but its author expected {event.get('expected_prior_hash')}",
        _domain(event), explanation=(_write_fact("write", event),),
    ),)


def _restore_lost(event) -> tuple[Violation, ...]:
    """The restore record's truth is what the step left; anything else in its place was written later."""
    if _replaced_unexpected(event) is not True:
        return NONE
    return (Violation(
        "lost_update", event.index, event.get("step"),
        f"restoring {event.get('step')}'s checkpoint of {event.get('path')} destroyed a later write "
        f"(found {event.get('hash_before')}, the step left {event.get('expected_prior_hash')})",
        _domain(event), explanation=(_write_fact("restore", event),),
    ),)


def _duplicate_effect(seen, event):
    """One step_id applied more than once (the carry: (step, first event) pairs)."""
    if not _applied(event):
        return seen, NONE
    step = event.get("step")
    if step is None:
        raise NotEvaluable(f"event {event.index} has no step")
    for earlier, index in seen:
        if earlier == step:
            return seen, (Violation(
                "duplicate_effect", event.index, step,
                f"{step} applied again (first at event {index}, copy {event.get('copy', '?')} "
                f"via {event.get('origin', 'unknown')})",
                _domain(event),
                explanation=(Fact("first_apply", index, "deliver", (("step", step), ("verdict", "applied"))),
                             fact("applied_again", event, "step", "verdict", "copy", "origin", "dedupe")),
            ),)
    return seen + ((step, event.index),), NONE


def _stale_accept(carry, event):
    """A fenced step applied with a stamped base rev other than the rev at apply (the seed's P1)."""
    if not _applied(event):
        return carry, NONE
    fence = event.get("fence")
    if fence is None or "stamped_base_rev" not in event or "rev_at_apply" not in event:
        raise NotEvaluable(f"event {event.index} lacks fence/stamped_base_rev/rev_at_apply")
    if fence == "none" or event["stamped_base_rev"] == event["rev_at_apply"]:
        return carry, NONE
    return carry, (Violation(
        "stale_accept", event.index, event.get("step"),
        f"{event.get('step')} stamped base rev {event['stamped_base_rev']} applied at rev {event['rev_at_apply']}",
        _domain(event), explanation=(fact("stamp_compared", event, "step", "fence", "stamped_base_rev",
                                          "rev_at_apply", "verdict"),),
    ),)


def _journal_loss(carry, event):
    """With dedupe journal: an applied write without its key once durable, or a key removed while its
    step can still be retried (the seed's P2, stated so it can fail).  The carry: (steps acked,
    a delivery seen, a delivery recording its dedupe mode seen)."""
    acked, delivered, dedupe_seen = carry
    name, fields = event.event, event.fields
    if name == "deliver" and not fields.get("skipped"):
        delivered, dedupe_seen = True, dedupe_seen or "dedupe" in fields
    if name == "ack" and fields.get("step"):
        return (acked | {fields["step"]}, delivered, dedupe_seen), NONE
    if name == "deliver" and fields.get("verdict") == "applied" and fields.get("dedupe") == "journal":
        if not fields.get("journal_key"):
            return (acked, delivered, dedupe_seen), (Violation(
                "journal_loss", event.index, fields.get("step"),
                f"{fields.get('step')} was written but its journal key is not in the journal"
                + (f" (executor preempted {fields.get('preempted')})" if fields.get("preempted") else ""),
                "lost_ack", explanation=(fact("write_without_key", event, "step", "verdict", "dedupe", "preempted",
                                              journal_key=fields.get("journal_key")),),
            ),)
    elif name == "journal_remove" and fields.get("step") not in acked:
        return (acked, delivered, dedupe_seen), (Violation(
            "journal_loss", event.index, fields.get("step"),
            f"journal key {fields.get('journal_key')} removed while {fields.get('step')} can still be retried",
            "lost_ack", explanation=(fact("key_removed", event, "step", "journal_key", acked=False),),
        ),)
    return (acked, delivered, dedupe_seen), NONE


def _journal_loss_end(carry) -> None:
    _, delivered, dedupe_seen = carry
    if delivered and not dedupe_seen:
        raise NotEvaluable("no delivery records its dedupe mode")


def _spurious_rejection(applied_steps, event):
    """A rejection where applying would have been safe, or where the step had already been applied
    (the right answer was to replay its stored result).  The carry: the steps applied so far."""
    verdict = event.get("verdict")
    if event.event in ("ack", "lose_ack") or not isinstance(verdict, str):
        return applied_steps, NONE
    step = event.get("step")
    if verdict == "applied" and event.event == "deliver":
        return applied_steps | {step}, NONE
    if not verdict.startswith("rejected:"):
        return applied_steps, NONE
    if verdict == "rejected:overlap":
        if event.get("pipeline") != "off":
            return applied_steps, NONE
        return applied_steps, (Violation(
            "spurious_rejection", event.index, None,
            "plan rejected for overlapping siblings although pipeline=off dispatches them in order",
            "stale_plan", safety=False, explanation=(fact("rejected", event, "verdict", "pipeline"),),
        ),)
    if step in applied_steps:
        return applied_steps, (Violation(
            "spurious_rejection", event.index, step,
            f"{step} was already applied; the client now believes finished work failed ({verdict})",
            _domain(event), safety=False,
            explanation=(fact("rejected", event, "step", "verdict", already_applied=True),),
        ),)
    unexpected = _replaced_unexpected(event)
    if unexpected is None:
        raise NotEvaluable(f"rejection at event {event.index} lacks the truth fields")
    if unexpected:
        return applied_steps, NONE
    return applied_steps, (Violation(
        "spurious_rejection", event.index, step,
        f"{verdict} although applying {step} would have replaced exactly what its author expected",
        _domain(event), safety=False, explanation=(fact("rejected", event, "step", "verdict", *WRITE_FACTS[1:]),),
    ),)


def _overwritten(events: list, violation: Violation) -> tuple[Fact, ...]:
    """The writes a lost update destroyed: per hunk replaced (or the whole file), the last write of it before
    the violating event -- a human edit, or another step's applied write (``overwrote``); for a restore, the
    writes after the step's own."""
    position = next((i for i, e in enumerate(events) if e.index == violation.event_index), None)
    if position is None:
        return ()
    event = events[position]
    path = event.get("path")
    out = []
    hunks: list[str | None] = list(replaced_hunks(event)) or [None]
    for hunk in hunks:
        writer = last_write(events, position, path, hunk)
        if writer is not None and writer.index != event.index:
            names = ("path", "hunk") if writer.event == "human_edit" else ("step", "path", "verdict")
            out.append(fact("overwrote", writer, *names, **({"hunk": hunk} if hunk and "hunk" not in writer
                                                             else {})))
    return tuple(out)


DELIVERIES = frozenset({"deliver"})
lost_update = Fold("lost_update", None, _lost_update, reads=frozenset({"deliver", "tests_fail"}))
duplicate_effect = Fold("duplicate_effect", (), _duplicate_effect, reads=DELIVERIES)
stale_accept = Fold("stale_accept", None, _stale_accept, reads=DELIVERIES)
journal_loss = Fold("journal_loss", (frozenset(), False, False), _journal_loss, _journal_loss_end,
                    reads=frozenset({"deliver", "ack", "journal_remove"}))
spurious_rejection = Fold("spurious_rejection", frozenset(), _spurious_rejection,
                          ignores=frozenset({"ack", "lose_ack"}))


DELIVER = ("step", "verdict")
#: Crash points before which nothing is written: a delivery cut short there rightly records no verdict
#: (``before_write`` in the model; a real executor may name finer points before its write).
BEFORE_ANY_WRITE = ("before_write", "after_intent", "mid_write")


def _cut_short(event) -> bool:
    return event.get("preempted") in BEFORE_ANY_WRITE


CUT_SHORT = {"deliver": _cut_short}
CHECKS = (
    CheckSpec("lost_update", lost_update, True, "an applied step replaced content its author did not expect",
              requires={"deliver": DELIVER}, exempt=CUT_SHORT, explain=_overwritten),
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
