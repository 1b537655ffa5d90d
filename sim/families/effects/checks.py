"""Invariants of the durable-effects family: pure functions over a history (``docs/effects.md``).

They read event fields only (``committed``, ``receipt_recorded``,
``timed_out``...), never the model, so they run unchanged on a history
recorded from a real system.  Effects are grouped by *logical* transition
(``logical`` field, falling back to ``transition``) and attempt generation:
a deliberate new attempt is not a duplicate, a renamed state is the same step.
"""

from __future__ import annotations

from typing import Any

from sim.core.checks import CheckResult, CheckSpec, Violation, fact
from sim.families.effects.ledger import MONEY_KINDS, kind_of
from sim.families.effects.saga_checks import check_after_effect, stranded_irreversible


def _events(history, *names: str):
    return [e for e in history if e.event in names]


def _logical(event) -> str:
    return event.get("logical") or event.get("transition")


def _missing(events, fields: tuple[str, ...]) -> str | None:
    for event in events:
        for name in fields:
            if name not in event:
                return f"event {event.index} ({event.event}) lacks {name!r}"
    return None


#: The fields of a commit an explanation shows: which object, for which step, and the key that was (or was not)
#: sent with it.
COMMIT_FACTS = ("task", "transition", "effect", "effect_class", "key", "request")


def _commit_fact(role: str, event, **values: Any):
    return fact(role, event, *COMMIT_FACTS, keyed=bool(event.get("key")), **values)


def duplicate_effect(history) -> CheckResult:
    """More than one committed effect for one logical transition and attempt generation."""
    commits = _events(history, "committed")
    missing = _missing(commits, ("task", "transition", "effect"))
    if missing:
        return CheckResult.not_evaluable("duplicate_effect", missing)
    seen: dict[tuple, Any] = {}  # group -> its first commit
    violations = []
    for event in commits:
        group = (event["task"], _logical(event), event.get("generation", 1))
        first = seen.get(group)
        if first is not None and first["effect"] != event["effect"]:
            second = "charge" if kind_of(event["effect"]) in MONEY_KINDS else "entry"
            what = f"is a second {second} beside" if event.get("effect_class") == "append" else "duplicates"
            violations.append(Violation("duplicate_effect", event.index, event["transition"],
                                        f"{event['effect']} {what} {first['effect']} for {group[0]}/{group[1]}",
                                        domain="duplicate_delivery",
                                        explanation=(_commit_fact("first_commit", first),
                                                     _commit_fact("second_commit", event))))
        seen.setdefault(group, event)
    return CheckResult.from_violations("duplicate_effect", violations)


def _is_failure(event) -> bool:
    return (event.event == "timed_out" and event.get("outcome") == "failed") or event.event == "transition_failed"


def lost_success(history) -> CheckResult:
    """A committed effect that is never receipted while its transition was recorded failed or done again.

    "Done again" is the worker's doing: a later commit of the same request copied by the network
    (``request_duplicated``) is a duplicate delivery, reported by ``duplicate_effect`` alone, whichever copy
    the worker's receipt names.  One pass from the end keeps, per transition, the next failure and, per group,
    the next commit: linear in the history, however many commits it holds."""
    commits = _events(history, "committed")
    missing = _missing(commits, ("task", "transition", "effect"))
    if missing:
        return CheckResult.not_evaluable("lost_success", missing)
    receipted = {(e.get("task"), e.get("effect")) for e in _events(history, "receipt_recorded")}
    origin: dict[Any, Any] = {}  # a network copy's request -> the request the worker dispatched
    for copy in _events(history, "request_duplicated"):
        origin[copy.get("request")] = origin.get(copy.get("original"), copy.get("original"))
    next_failure: dict[tuple, Any] = {}
    next_commit: dict[tuple, Any] = {}
    violations = []
    for event in reversed(list(history)):
        if event.event == "committed":
            group = (event["task"], _logical(event), event.get("generation", 1))
            if (event["task"], event["effect"]) not in receipted:
                failed = next_failure.get((event["task"], event["transition"]))
                again = next_commit.get(group)
                shown, how = None, ""
                same_dispatch = again is not None and event.get("request") is not None and (
                    origin.get(again.get("request"), again.get("request"))
                    == origin.get(event.get("request"), event.get("request")))
                if failed is not None:
                    shown, how = failed, "recorded as failed"
                elif again is not None and not same_dispatch:
                    shown, how = again, f"done again as {again.get('effect')}"
                if shown is not None:
                    violations.append(Violation(
                        "lost_success", shown.index, event["transition"], f"{event['effect']} committed but was {how}",
                        domain="lost_ack", explanation=(
                            _commit_fact("committed", event, receipted=False),
                            fact("recorded_failed" if shown is failed else "done_again", shown, "task", "transition",
                                 "effect", "outcome", "reason"))))
            next_commit[group] = event
        elif _is_failure(event) and event.get("task") is not None:
            next_failure[(event.get("task"), event.get("transition"))] = event
    violations.reverse()
    return CheckResult.from_violations("lost_success", violations)


def unknown_as_failed(history) -> CheckResult:
    """A timed-out transition recorded as failed without reconciliation, whatever the truth was.  A read's
    timeout is not judged: a read creates nothing, so reading again is its whole recovery."""
    violations = []
    for event in _events(history, "timed_out"):
        if "outcome" not in event:
            return CheckResult.not_evaluable("unknown_as_failed", f"event {event.index} lacks 'outcome'")
        if event["outcome"] == "failed" and event.get("effect_class") != "read":
            violations.append(Violation("unknown_as_failed", event.index, event.get("transition"),
                                        f"a timeout of {event.get('transition')} was recorded as failed, not unknown",
                                        domain="lost_ack", explanation=(fact(
                                            "timed_out", event, "task", "transition", "effect_class", "outcome"),)))
    return CheckResult.from_violations("unknown_as_failed", violations)


def false_receipt(history) -> CheckResult:
    """A receipt naming an effect that is not this transition's committed effect."""
    committed: dict[tuple, set] = {}
    for event in _events(history, "committed", "deduplicated", "observed"):
        owners = committed.setdefault((event.get("task"), event.get("effect")), set())
        owners.update({_logical(event), event.get("transition")})
    violations = []
    for receipt in _events(history, "receipt_recorded"):
        if "effect" not in receipt:
            return CheckResult.not_evaluable("false_receipt", f"event {receipt.index} lacks 'effect'")
        owners = committed.get((receipt.get("task"), receipt["effect"]), set())
        if _logical(receipt) not in owners and receipt.get("transition") not in owners:
            violations.append(Violation("false_receipt", receipt.index, receipt.get("transition"),
                                        f"receipt {receipt['effect']} matches no committed effect of "
                                        f"{receipt.get('transition')}", explanation=(
                                            fact("receipt_trusted", receipt, "task", "transition", "effect",
                                                 effect_committed_by=sorted(owners, key=str)),)))
    return CheckResult.from_violations("false_receipt", violations)


def fingerprint_conflict(history) -> CheckResult:
    """A request reusing a key with other arguments was accepted (answered with the old effect)."""
    stored: dict[str, str] = {}
    first_commit: dict[str, Any] = {}
    violations = []
    for event in history:
        if event.event == "committed" and event.get("key") and event.get("fingerprint"):
            stored.setdefault(event["key"], event["fingerprint"])
            first_commit.setdefault(event["key"], event)
        elif event.event == "deduplicated":
            original = event.get("stored_fingerprint") or stored.get(event.get("key"))
            if original is None or "fingerprint" not in event:
                return CheckResult.not_evaluable("fingerprint_conflict", f"event {event.index} lacks fingerprints")
            if original != event["fingerprint"]:
                stored_by = first_commit.get(event.get("key"))
                violations.append(Violation("fingerprint_conflict", event.index, event.get("transition"),
                                            f"key {event.get('key')} reused with fingerprint {event['fingerprint']} "
                                            f"(stored {original}) and accepted", explanation=(
                                                *((fact("key_stored", stored_by, "key", "fingerprint", "effect"),)
                                                  if stored_by is not None else ()),
                                                fact("key_reused", event, "task", "transition", "key", "fingerprint",
                                                     "effect", stored_fingerprint=original))))
    return CheckResult.from_violations("fingerprint_conflict", violations)


def _succeeded_after_a_failure(history) -> str | None:
    """A task recorded ``succeeded`` after one of its transitions was recorded failed: the history says two
    things about the task, and which compensations it owes cannot be told."""
    failed: dict[Any, Any] = {}
    for event in history:
        if event.event == "transition_failed" and event.get("task") is not None:
            failed.setdefault(event.get("task"), event)
        elif event.event == "task_terminal" and event.get("outcome") == "succeeded" and event.get("task") in failed:
            failure = failed[event.get("task")]
            return (f"{event.get('task')} closed succeeded at event {event.index} after its transition "
                    f"{failure.get('transition')} failed at event {failure.index}: the history contradicts itself")
    return None


def unresolved_compensation(history) -> CheckResult:
    """A task closed without success while a committed reversible effect is not compensated."""
    violations = []
    compensated = {(e.get("task"), e.get("effect")) for e in _events(history, "compensated")}
    commits = _events(history, "committed")
    unsuccessful = [e for e in _events(history, "task_terminal") if e.get("outcome") != "succeeded"]
    if unsuccessful and commits and not any("compensation" in e for e in commits):
        return CheckResult.not_evaluable("unresolved_compensation",
                                         "no 'committed' event records 'compensation' (which effects are owed one)")
    contradiction = _succeeded_after_a_failure(history)
    if contradiction:
        return CheckResult.not_evaluable("unresolved_compensation", contradiction)
    taskless = next((e for e in commits if e.get("task") is None), None) if unsuccessful else None
    if taskless is not None:  # whose effect it is cannot be told, nor so whether a closed task owes it
        return CheckResult.not_evaluable("unresolved_compensation", f"event {taskless.index} (committed) lacks 'task'")
    owed: dict[Any, list] = {}
    for commit in commits:
        task = commit.get("task")
        if commit.get("compensation") and (task, commit.get("effect")) not in compensated:
            owed.setdefault(task, []).append(commit)
    for terminal in unsuccessful:
        task = terminal.get("task")
        for commit in owed.get(task, ()):
            violations.append(Violation("unresolved_compensation", terminal.index, commit.get("transition"),
                                        f"{task} closed {terminal.get('outcome')} with {commit.get('effect')} "
                                        f"still owing {commit.get('compensation')}", explanation=(
                                            _commit_fact("committed", commit, compensation=commit.get("compensation"),
                                                         compensated=False),
                                            fact("closed", terminal, "task", "outcome"))))
    return CheckResult.from_violations("unresolved_compensation", violations)


def _intent_key(event) -> tuple:
    return event.get("task"), _logical(event), event.get("generation", 1)


def unapproved_irreversible(history) -> CheckResult:
    """An irreversible effect committed without a prior approval that was due: as the commit records
    (``approval_required``, what the transition's ``approval`` field declared for its arguments: a transition
    that declares ``approval = false``, or a condition its arguments do not meet, owes none), else every one.

    A commit that does not record its ``effect_class`` takes the class its intent recorded (the worker's
    ``intent_recorded`` of the same task, transition and generation); with neither, whether it was
    irreversible cannot be told and the check says ``not_evaluable``, naming the commit."""
    approved: set[tuple] = set()
    intended: dict[tuple, Any] = {}  # (task, logical, generation) -> the class its intent recorded
    violations = []
    for event in history:
        if event.event == "approved":
            approved.add((event.get("task"), _logical(event)))
        elif event.event == "intent_recorded" and "effect_class" in event:
            intended[_intent_key(event)] = event["effect_class"]
        elif event.event == "committed" and event.get("approval_required") is not False:  # else none was due
            effect_class = event.get("effect_class", intended.get(_intent_key(event)))
            if effect_class is None:
                return CheckResult.not_evaluable(
                    "unapproved_irreversible", f"event {event.index} (committed) lacks 'effect_class' and no "
                    "intent_recorded of its transition records one (whether it was irreversible)")
            if effect_class == "irreversible" and (event.get("task"), _logical(event)) not in approved:
                violations.append(Violation("unapproved_irreversible", event.index, event.get("transition"),
                                            f"{event.get('effect')} is irreversible and was not approved",
                                            explanation=(_commit_fact("committed", event, approval_due=True,
                                                                      approved=False),)))
    return CheckResult.from_violations("unapproved_irreversible", violations)


def unverified_checkpoint(history) -> CheckResult:
    """A checkpoint that claims a transition complete before its receipt was recorded."""
    receipted: set[tuple] = set()
    violations = []
    for event in history:
        if event.event == "receipt_recorded":
            receipted.add((event.get("task"), event.get("transition")))
        elif event.event == "migrated":  # a recorded migration renames states: receipts keep their meaning
            for old, new in event.get("renamed", ()):
                if (event.get("task"), old) in receipted:
                    receipted.add((event.get("task"), new))
        elif event.event == "checkpoint_saved":
            for name in event.get("completed", ()):
                if (event.get("task"), name) not in receipted:
                    violations.append(Violation("unverified_checkpoint", event.index, name,
                                                f"checkpoint claims {name} complete before any receipt",
                                                explanation=(fact("checkpoint_saved", event, "task",
                                                                  claims_complete=name, receipt_recorded=False),)))
    return CheckResult.from_violations("unverified_checkpoint", violations)


def version_mismatch(history) -> CheckResult:
    """A task resumed under a workflow version other than its own without a recorded migration."""
    versions: dict[str, int] = {}
    violations = []
    for event in history:
        task = event.get("task")
        if event.event == "accepted":
            versions[task] = event.get("workflow_version", 1)
        elif event.event == "migrated":
            versions[task] = event.get("to_version", versions.get(task, 1))
        elif event.event == "resumed" and "workflow_version" in event:
            own = versions.get(task, 1)
            if event["workflow_version"] != own:
                violations.append(Violation("version_mismatch", event.index, None,
                                            f"{task} (version {own}) resumed under version "
                                            f"{event['workflow_version']} without a migration", explanation=(
                                                fact("resumed", event, "task", "workflow_version",
                                                     task_version=own, migrated=False),)))
    reads = unpinned_read(history)
    if reads.status == "not_evaluable":
        return CheckResult.not_evaluable("version_mismatch", reads.reason)
    violations += [Violation("version_mismatch", v.event_index, v.step, v.detail, domain=v.domain,
                             explanation=v.explanation) for v in reads.violations]
    violations.sort(key=lambda v: (v.event_index is None, v.event_index or 0))
    return CheckResult.from_violations("version_mismatch", violations)


def _unfinished(history) -> tuple[str | None, list]:
    """Why the run ended (the last ``run_ended``'s reason, None for a history without one) and the accepted
    tasks with no ``task_terminal``."""
    ended = [e for e in history if e.event == "run_ended"]
    terminal = {e.get("task") for e in _events(history, "task_terminal")}
    return (ended[-1].get("reason") if ended else None,
            [e for e in _events(history, "accepted") if e.get("task") not in terminal])


def no_terminal_outcome(history) -> CheckResult:
    """A run that ended with nothing left to happen (or a recorded history, checked as complete) while an
    accepted task is not terminal: the task is stuck.  A run that reached its simulated time budget with work
    still scheduled (an approval, a backoff, a retry timer) is not judged here: its unfinished tasks are
    :func:`not_finished`, availability."""
    reason, unfinished = _unfinished(history)
    if reason not in (None, "completed", "time_limit"):
        return CheckResult.not_evaluable("no_terminal_outcome", f"the run was cut short by the {reason} limit")
    if reason == "time_limit":
        return CheckResult.from_violations("no_terminal_outcome", [])
    last = history[len(history) - 1].index if len(history) else None
    violations = [Violation("no_terminal_outcome", last, None, f"{e.get('task')} has no terminal outcome",
                            explanation=(fact("accepted", e, "task", terminal_outcome=None),))
                  for e in unfinished]
    return CheckResult.from_violations("no_terminal_outcome", violations)


def not_finished(history) -> CheckResult:
    """Each task still waiting when the run reached its simulated time budget (``run_ended`` reason
    ``time_limit``): counted (availability: a slow approval, a long backoff), not a safety violation.  The
    explanation names the task's last recorded event, what it was waiting on."""
    reason, unfinished = _unfinished(history)
    if reason != "time_limit":
        return CheckResult.from_violations("not_finished", [])
    last_of: dict[Any, Any] = {}
    for event in history:
        if event.get("task") is not None:
            last_of[event.get("task")] = event
    ended = history[len(history) - 1]
    found = []
    for accepted in unfinished:
        task = accepted.get("task")
        last = last_of.get(task, accepted)
        found.append(Violation("not_finished", ended.index, last.get("transition"),
                               f"{task} was not finished when the simulated time budget ran out (its last event: "
                               f"{last.event}{' of ' + str(last.get('transition')) if last.get('transition') else ''})",
                               safety=False, explanation=(fact("accepted", accepted, "task", terminal_outcome=None),
                                                          fact("last_event", last, "task", "transition"),
                                                          fact("run_ended", ended, "reason"))))
    return CheckResult.from_violations("not_finished", found)


def split_outcome(history) -> CheckResult:
    """A task closed more than once: two workers each recorded a terminal outcome (one authoritative
    outcome per task is the point of the lease)."""
    first: dict[str, Any] = {}
    violations = []
    for event in history:
        if event.event != "task_terminal":
            continue
        task = event.get("task")
        if task is None:
            return CheckResult.not_evaluable("split_outcome", f"event {event.index} lacks 'task'")
        if task in first:
            earlier = first[task]
            violations.append(Violation(
                "split_outcome", event.index, None,
                f"{task} closed again by {event.actor} ({event.get('outcome')}) after {earlier.actor} closed it "
                f"({earlier.get('outcome')}) at event {earlier.index}", domain="duplicate_delivery",
                explanation=(fact("closed_first", earlier, "task", "actor", "outcome"),
                             fact("closed_again", event, "task", "actor", "outcome"))))
        else:
            first[task] = event
    return CheckResult.from_violations("split_outcome", violations)


def unpinned_read(history) -> CheckResult:
    """The reads half of ``version_mismatch`` (its violations are reported under that name, each detail
    starting "unpinned read:"). A task acted on an observation other than the one its log recorded: an effect
    built from version v of a read while the task's last receipt of that read says another version (the world
    moved on, and a worker that lost what it had read read again).

    Reads are known by the external system's ``observed`` records; a read's receipt without
    ``observed_version``, or effects after a recorded read none of which says what it was built from
    (``read_versions``), cannot be judged."""
    recorded: dict[tuple, Any] = {}
    reads: set[tuple] = set()
    tasks_with_reads: set[Any] = set()
    unlabelled_after_read = False
    labelled = False
    violations = []
    for event in history:
        task = event.get("task")
        if event.event == "observed":
            reads.add((task, event.get("logical") or event.get("transition")))
        elif event.event == "receipt_recorded":
            read = (task, event.get("logical") or event.get("transition"))
            if "observed_version" in event:
                recorded[read] = event
                tasks_with_reads.add(task)
            elif read in reads:
                return CheckResult.not_evaluable("unpinned_read", f"event {event.index} (the receipt of read "
                                                 f"{read[1]}) lacks 'observed_version'")
        elif event.event == "committed":
            if not event.get("read_versions"):
                unlabelled_after_read |= task in tasks_with_reads
                continue
            labelled = True
            for read, version in event["read_versions"]:
                receipt = recorded.get((task, read))
                if receipt is not None and receipt["observed_version"] != version:
                    violations.append(Violation(
                        "unpinned_read", event.index, event.get("transition"),
                        f"unpinned read: {event.get('effect')} was built from {read} version {version}, but the log "
                        f"recorded version {receipt['observed_version']} (event {receipt.index})", explanation=(
                            fact("read_recorded", receipt, "task", "transition", "observed_version"),
                            _commit_fact("built_from", event, read=read, built_from_version=version))))
    if unlabelled_after_read and not labelled:
        return CheckResult.not_evaluable("unpinned_read", "effects committed after a recorded read, but no 'committed' "
                                         "event records 'read_versions' (what each effect was built from)")
    return CheckResult.from_violations("unpinned_read", violations)


def human_exceptions(history) -> CheckResult:
    """Each unknown outcome handed to a human: counted (labour), not a safety violation."""
    found = [Violation("human_exceptions", e.index, e.get("transition"),
                       f"{e.get('transition')} escalated to a human ({e.get('reason', 'unknown')})", safety=False,
                       explanation=(fact("escalated", e, "task", "transition", "reason"),))
             for e in history if e.event == "human_exception"]
    return CheckResult.from_violations("human_exceptions", found)


COMMITTED = ("task", "transition", "effect")
CHECKS: tuple[CheckSpec, ...] = (
    CheckSpec("duplicate_effect", duplicate_effect, True,
              "more than one authoritative effect for one logical transition",
              requires={"committed": COMMITTED}),
    CheckSpec("lost_success", lost_success, True, "a committed effect recorded as failed, or done again",
              requires={"committed": COMMITTED, "receipt_recorded": ("task", "effect"),
                        "timed_out": ("transition", "outcome"), "transition_failed": ("transition",)}),
    CheckSpec("unknown_as_failed", unknown_as_failed, True,
              "a timed-out transition recorded as failed without reconciliation",
              requires={"timed_out": ("outcome",)}),
    CheckSpec("false_receipt", false_receipt, True, "a receipt with no matching external effect",
              requires={"committed": COMMITTED, "receipt_recorded": ("task", "transition", "effect")}),
    CheckSpec("fingerprint_conflict", fingerprint_conflict, True, "same key, other arguments, accepted",
              requires={"deduplicated": ("key", "fingerprint")}),
    CheckSpec("unresolved_compensation", unresolved_compensation, True, "task closed with compensation owed",
              requires={"task_terminal": ("task", "outcome"), "committed": ("task", "effect"),
                        "compensated": ("task", "effect")}),
    CheckSpec("unapproved_irreversible", unapproved_irreversible, True, "an irreversible effect without approval",
              requires={"committed": ("task", "transition", "effect_class"), "approved": ("task", "transition")}),
    CheckSpec("unverified_checkpoint", unverified_checkpoint, True,
              "a checkpoint saved before its postcondition was verified",
              requires={"checkpoint_saved": ("task", "completed"), "receipt_recorded": ("task", "transition")}),
    CheckSpec("version_mismatch", version_mismatch, True,
              "a task resumed under another workflow version without migration",
              requires={"resumed": ("task", "workflow_version"), "accepted": ("task",)}),
    CheckSpec("no_terminal_outcome", no_terminal_outcome, True,
              "a task not terminal when nothing was left to happen (stuck)",
              requires={"accepted": ("task",), "task_terminal": ("task",)}),
    CheckSpec("split_outcome", split_outcome, True, "a task closed more than once (two authoritative outcomes)",
              requires={"task_terminal": ("task", "outcome")}),
    CheckSpec("stranded_irreversible", stranded_irreversible, True,
              "a task closed compensated or failed with an irreversible effect standing and its companions undone",
              requires={"committed": ("task", "effect_class"), "task_terminal": ("task", "outcome"),
                        "compensated": ("task", "effect")}),
    CheckSpec("check_after_effect", check_after_effect, True,
              "a version-2 step inserted before a transition ran after that transition's effect",
              requires={"upgraded": ("inserted_before",), "committed": ("task", "logical")}),
    CheckSpec("human_exceptions", human_exceptions, False, "an unknown outcome handed to a human (counted)",
              requires={"human_exception": ("transition",)}, count_as="human_exceptions"),
    CheckSpec("not_finished", not_finished, False,
              "a task still waiting when the run reached its simulated time budget (counted)",
              requires={"accepted": ("task",), "task_terminal": ("task",), "run_ended": ("reason",)}),
)
SAFETY_INVARIANTS = tuple(c.name for c in CHECKS if c.safety)
