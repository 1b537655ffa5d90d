"""What a finished saga leaves standing, and in what order its steps ran: two invariants over a history.

``stranded_irreversible``: a task that closed ``compensated`` or ``failed`` while an irreversible effect of
it stands (nothing can undo it) and the records that should stand beside it do not -- effects committed
after it were compensated, or later transitions were recorded failed.  The refund went out, its ledger row
was compensated after a failed postcondition: the task says ``compensated``, the money is out and the books
do not say so.  A saga past its irreversible step (its *pivot*) can only go forward; undoing what came after
strands the pivot.

``check_after_effect``: a version-2 step inserted *before* a transition (a fraud check before the refund)
that ran *after* that transition's effect in the same task -- what ``version_policy=migrate`` does to a task
that had already passed the point where the check belongs.  The ``upgraded`` event names each inserted step
and the transition it guards (``inserted_before``: ``[step, logical transition]`` pairs).

Pure functions of the event fields, as every check (:mod:`sim.families.effects.checks`).
"""

from __future__ import annotations

from typing import Any

from sim.core.checks import CheckResult, Violation, fact

UNDONE_OUTCOMES = ("compensated", "failed")


def _logical(event) -> str:
    return event.get("logical") or event.get("transition")


def _unjudgeable(history) -> str | None:
    """Why a history's tasks cannot be judged for stranding: a terminal outcome without its ``outcome``, or,
    when some task closed otherwise than succeeded, a commit without its ``effect_class`` (None: judgeable)."""
    terminals = [e for e in history if e.event == "task_terminal"]
    for event in terminals:
        if "outcome" not in event:
            return f"event {event.index} (task_terminal) lacks 'outcome'"
    if any(e.get("outcome") in UNDONE_OUTCOMES for e in terminals):
        for event in history:
            if event.event == "committed" and "effect_class" not in event:
                return f"event {event.index} (committed) lacks 'effect_class' (which effects are irreversible)"
    return None


def stranded_irreversible(history) -> CheckResult:
    """A task closed compensated or failed with an irreversible effect standing while what came after it
    (the records that go with it) was undone: an effect committed after it compensated, or a later
    transition recorded failed.  Its own failure, and compensations of what came before it (a saga undoing
    its prerequisites), are not judged here."""
    irreversible: dict[Any, list] = {}
    committed_at: dict[tuple, int] = {}  # (task, effect) -> index of its commit
    #: task -> (index of what was undone, transition, text, the event that undid it)
    undone: dict[Any, list[tuple[int, str, str, Any]]] = {}
    violations = []
    missing = _unjudgeable(history)
    if missing:
        return CheckResult.not_evaluable("stranded_irreversible", missing)
    for event in history:
        task = event.get("task")
        if event.event == "committed":
            committed_at.setdefault((task, event.get("effect")), event.index)
            if event.get("effect_class") == "irreversible":
                irreversible.setdefault(task, []).append(event)
        elif event.event == "compensated":
            at = committed_at.get((task, event.get("effect")), event.index)
            undone.setdefault(task, []).append(
                (at, str(event.get("transition")), f"{event.get('effect')} was compensated "
                                                   f"({event.get('compensation')})", event))
        elif event.event == "transition_failed":
            undone.setdefault(task, []).append(
                (event.index, str(event.get("transition")),
                 f"{event.get('transition')} was recorded failed ({event.get('reason', 'no reason given')})", event))
        elif event.event == "task_terminal" and event.get("outcome") in UNDONE_OUTCOMES:
            for pivot in irreversible.get(task, []):
                later = [(at, text, by) for at, transition, text, by in undone.get(task, [])
                         if at > pivot.index and transition != pivot.get("transition")]
                if later:
                    after = [text for _, text, _ in later]
                    violations.append(Violation(
                        "stranded_irreversible", event.index, pivot.get("transition"),
                        f"{task} closed {event.get('outcome')} with {pivot.get('effect')} (irreversible) standing "
                        f"while, after it, {'; '.join(after)}: the irreversible effect stands without the records "
                        "that go with it", explanation=(
                            fact("irreversible_committed", pivot, "task", "transition", "effect", "effect_class"),
                            *(fact("undone_after", by, "transition", "effect", "compensation", "reason")
                              for _, _, by in later),
                            fact("closed", event, "task", "outcome"))))
                    break
    return CheckResult.from_violations("stranded_irreversible", violations)


def check_after_effect(history) -> CheckResult:
    """A step version 2 inserted before a transition ran after that transition's effect, in one task."""
    guards: dict[str, str] = {}  # inserted step (logical) -> the transition it guards (logical)
    effect_at: dict[tuple, Any] = {}  # (task, logical) -> its first committed effect
    ran: set[tuple] = set()  # (task, inserted step) already judged
    violations = []
    for event in history:
        task = event.get("task")
        if event.event == "upgraded":
            if event.get("inserted") and "inserted_before" not in event:
                return CheckResult.not_evaluable("check_after_effect", f"event {event.index} (upgraded) inserts "
                                                 "steps but lacks 'inserted_before' (what each guards)")
            for pair in event.get("inserted_before") or ():
                if isinstance(pair, (list, tuple)) and len(pair) == 2:
                    guards[str(pair[0])] = str(pair[1])
            continue
        if event.event not in ("committed", "deduplicated", "receipt_recorded"):
            continue
        name = _logical(event)
        if event.event == "committed":
            effect_at.setdefault((task, name), event)
        guarded = guards.get(name)
        if guarded is None or (task, name) in ran:
            continue
        ran.add((task, name))
        earlier = effect_at.get((task, guarded))
        if earlier is not None:
            violations.append(Violation(
                "check_after_effect", event.index, event.get("transition"),
                f"{event.get('transition')}, which version 2 inserted before {guarded}, ran after {guarded}'s "
                f"effect {earlier.get('effect')} (event {earlier.index}) in {task}", explanation=(
                    fact("effect_first", earlier, "task", "transition", "effect"),
                    fact("check_after", event, "task", "transition", inserted_before=guarded))))
    return CheckResult.from_violations("check_after_effect", violations)
