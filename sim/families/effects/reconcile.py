"""What the events of one durable-effects history must agree on with each other (``HistorySchema.facts``).

A recorded history can hold only well-formed events and still be impossible: a receipt recorded before
the commit it acknowledges, a transition whose effect class changes between its events, a generation
that contradicts its idempotency key, a timeout that claims a read's effect for a transition that
created one, a transition recorded failed after its receipt.  The checks would judge that story as if it
had happened (and a contradiction can hide a violation), so ``fencesim check`` refuses such a history,
naming the two events (:mod:`sim.core.reconcile`).

The facts (``docs/effects.md``):

* the four moments in order: an intent before its dispatch, a request sent before the external system
  commits, deduplicates or rejects it, an answer after its request's outcome, a receipt (and a
  reconciliation that found the effect, and a compensation) after the effect exists;
* one effect class, one key per generation, and one generation per key for each transition; a key
  ``TENANT:TASK:TRANSITION:GENERATION`` names its own task, transition and generation;
* one transition and key per request (a commit carries the generation of the intent whose key was sent),
  one commit per effect, one task and number per effect;
* one protocol per run: every timeout (a read's aside) leaves the outcome ``on_timeout`` says;
* a timeout that says ``effect_class = read`` is a read's: its transition committed no effect;
* a transition is not recorded failed after its receipt; a task is accepted before anything of it.
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

from sim.core.reconcile import TIME_ORDER, Contradiction, Determines, Facts, OnePerRun, Precedes, Rule
from sim.core.values import shown

#: Events that name an effect the external system holds (created, found or answered with).
EFFECT_EXISTS = frozenset({"committed", "deduplicated", "observed", "foreign_created"})
#: The external system's outcomes of a request.
REQUEST_OUTCOMES = frozenset({"committed", "deduplicated", "rejected", "observed"})
#: Events of one transition that record its effect class.
CLASS_EVENTS = frozenset({"intent_recorded", "committed", "timed_out"})
#: Events that record a request's idempotency key.
KEYED = frozenset({"intent_recorded", "dispatched", "committed", "deduplicated", "rejected"})
#: Events that carry a request id.
REQUEST_EVENTS = frozenset({"dispatched", "committed", "deduplicated", "rejected", "observed", "response_delivered",
                            "response_lost", "request_lost"})


def _found(event) -> bool:
    return event.fields.get("result") == "found"


def _key_parts(history: Sequence[Any]) -> Iterator[Contradiction]:
    """A key in the documented form ``TENANT:TASK:TRANSITION:GENERATION`` names its own task, transition and
    generation (a key in another form is not read)."""
    for event in history:
        fields = event.fields
        key = fields.get("key")
        if event.event not in KEYED or not isinstance(key, str) or fields.get("skipped"):
            continue
        parts = key.split(":")
        if len(parts) < 4 or not parts[-1].isdigit():
            continue
        task, transition, generation = parts[-3], parts[-2], int(parts[-1])
        names = {fields.get("transition"), fields.get("logical")} - {None}
        wrong = []
        if "generation" in fields and fields["generation"] != generation:
            wrong.append(f"generation {fields['generation']}")
        if isinstance(fields.get("task"), str) and fields["task"] != task:
            wrong.append(f"task {shown(fields['task'])}")
        if names and transition not in names:
            wrong.append(f"transition {shown(sorted(names)[0])}")
        if wrong:
            yield Contradiction("a key names its own generation", event, None,
                                f"key {shown(key)} is generation {generation} of {shown(task)}/{shown(transition)}, "
                                f"but the event "
                                f"records {' and '.join(wrong)}")


def _read_timeouts(history: Sequence[Any]) -> Iterator[Contradiction]:
    """A timeout that claims to be a read's (``effect_class = read``) for a transition that committed."""
    committed: dict[tuple, Any] = {}
    reads: dict[tuple, Any] = {}
    for event in history:
        fields = event.fields
        if fields.get("skipped"):
            continue
        group = (fields.get("task"), fields.get("transition"))
        if event.event == "committed":
            committed.setdefault(group, event)
            if group in reads:
                yield Contradiction("a timeout cannot claim a read's effect", reads[group], event,
                                    f"{shown(group[1])} timed out as a read, yet it committed "
                                    f"{shown(fields.get('effect'))}")
                return
        elif event.event == "timed_out" and fields.get("effect_class") == "read":
            if group in committed:
                yield Contradiction("a timeout cannot claim a read's effect", committed[group], event,
                                    f"{shown(group[1])} committed {shown(committed[group].fields.get('effect'))}, "
                                    "yet its "
                                    "timeout claims to be a read's")
                return
            reads.setdefault(group, event)


#: Failures found after a receipt by a check of the effect itself (a verifier's postcondition), not by the
#: request: the only failures that may follow a transition's receipt.
CHECKED_AFTER = ("postcondition_failed",)


def _failed_after_success(history: Sequence[Any]) -> Iterator[Contradiction]:
    """A transition that timed out, or failed other than by a later check of its effect, after its receipt
    was recorded (it succeeded); a compensation undoes the success."""
    receipts: dict[tuple, Any] = {}
    for event in history:
        fields = event.fields
        if fields.get("skipped"):
            continue
        group = (fields.get("task"), fields.get("transition"))
        if event.event == "receipt_recorded":
            receipts.setdefault(group, event)
        elif group in receipts and (event.event == "timed_out" or (
                event.event == "transition_failed" and fields.get("reason") not in CHECKED_AFTER)):
            yield Contradiction("a transition cannot fail after it succeeded", receipts[group], event,
                                f"{shown(group[1])} of {shown(group[0])} was receipted, then recorded "
                                + ("timed out" if event.event == "timed_out" else "failed"))
            return
        elif event.event == "compensated" and group in receipts:
            receipts.pop(group)  # undone: a new attempt may fail


def _generations(history: Sequence[Any]) -> Iterator[Contradiction]:
    """The external system's record of a request carries the generation of the intent whose key was sent:
    request -> key (its dispatch; a duplicated request its original's) -> generation (the intent)."""
    generation_of: dict[str, tuple[int, Any]] = {}
    key_of: dict[str, str] = {}
    for event in history:
        fields = event.fields
        if fields.get("skipped"):
            continue
        name, key, request = event.event, fields.get("key"), fields.get("request")
        if name == "intent_recorded" and isinstance(key, str) and isinstance(fields.get("generation"), int):
            generation_of.setdefault(key, (fields["generation"], event))
        elif name == "dispatched" and isinstance(key, str) and isinstance(request, str):
            key_of.setdefault(request, key)
        elif name == "request_duplicated" and fields.get("original") in key_of and isinstance(request, str):
            key_of.setdefault(request, key_of[fields["original"]])
        elif name in ("committed", "deduplicated", "rejected") and isinstance(fields.get("generation"), int):
            sent = key_of.get(request) if isinstance(request, str) else None
            intent = generation_of.get(sent) if sent is not None else None
            if intent is not None and intent[0] != fields["generation"]:
                yield Contradiction("one key, one generation", intent[1], event,
                                    f"request {shown(request)} was sent under key {shown(sent)}, generation "
                                    f"{intent[0]}, but the external system records generation "
                                    f"{shown(fields['generation'])}")
                return


def _not_a_read(event) -> bool:
    return event.fields.get("effect_class") != "read"


def _after_the_end(history: Sequence[Any]) -> Iterator[Contradiction]:
    """The kernel's ``run_ended`` is the last event of a run."""
    for position, event in enumerate(history):
        if event.event == "run_ended" and position + 1 < len(history):
            yield Contradiction("nothing after the run's end", event, history[position + 1],
                                "an event is recorded after the run ended")
            return


FACTS = Facts((
    TIME_ORDER,
    Rule("the run's end", _after_the_end),
    Precedes(frozenset({"approved"}), frozenset({"approval_requested"}), ("task", "transition"),
             "an approval answers a request for it"),
    OnePerRun("outcome", "what a timeout leaves (on_timeout)", events=frozenset({"timed_out"}), when=_not_a_read),
    Precedes(frozenset({"intent_recorded", "dispatched", "committed", "receipt_recorded", "timed_out",
                        "reconciled", "transition_failed", "task_terminal", "compensated", "approved",
                        "checkpoint_saved"}),
             frozenset({"accepted"}), ("task",), "a task is accepted before anything of it"),
    Precedes(frozenset({"dispatched"}), frozenset({"intent_recorded"}), ("task", "transition"),
             "an intent is recorded before its dispatch", needs_one=True),
    Precedes(frozenset({"committed", "deduplicated", "rejected"}), frozenset({"dispatched", "request_duplicated"}),
             ("request",), "a request is sent before the external system answers it", needs_one=True),
    Precedes(frozenset({"response_delivered"}), REQUEST_OUTCOMES, ("request",),
             "an answer follows its request's outcome", needs_one=True),
    Precedes(frozenset({"receipt_recorded"}), EFFECT_EXISTS, ("task", "effect"),
             "a receipt follows the commit it acknowledges"),
    Precedes(frozenset({"reconciled"}), EFFECT_EXISTS, ("task", "effect"),
             "a reconciliation finds an effect that exists", when=_found),
    Precedes(frozenset({"compensated", "compensation_failed"}), EFFECT_EXISTS, ("task", "effect"),
             "a compensation undoes an effect that exists", needs_one=True),
    Determines(("task", "transition"), ("effect_class",), "one effect class per transition", events=CLASS_EVENTS),
    Determines(("key",), ("generation", "logical"), "one key, one transition and generation",
               events=KEYED),
    Determines(("task", "logical", "generation"), ("key",), "one key per transition and generation",
               events=frozenset({"intent_recorded", "committed"})),
    Rule("keys", _key_parts),
    Determines(("request",), ("task", "transition", "key"), "one request, one transition", events=REQUEST_EVENTS),
    Rule("generations", _generations),
    Determines(("effect",), ("task", "number"), "one effect, one task and number",
               events=frozenset({"committed", "deduplicated", "foreign_created", "reconciled", "rejected",
                                 "response_delivered"})),
    Determines(("effect",), ("request",), "one effect, one commit", events=frozenset({"committed"})),
    Rule("read timeouts", _read_timeouts),
    Rule("failed after success", _failed_after_success),
))
