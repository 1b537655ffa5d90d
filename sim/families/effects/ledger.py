"""The durable-effects family's blast radius: external objects duplicated, orphaned or owed a compensation,
and tasks stranded -- each named as the external system names it, with who must act.

What an operator is told to do follows what the endpoint can do, as the committed effect records it: an
object is found again by its key or its task marker only where the endpoint can be queried
(``reconcile_by``, recorded when it is not ``key``), and deleted only where it has a compensation; an
irreversible object (an e-mail, a release, a refund) is named by its kind, with the words for that kind.
"""

from __future__ import annotations

from sim.core.ledger import Entry
from sim.families.effects import transition_fields

#: Who cleans up a duplicate of each effect class, and what they can do (an irreversible one: by its kind,
#: :func:`correction`).
CLEANUP = {
    "append": ("billing", "refund the second charge"),
    "keyed_creation": ("an operator", "close or delete the duplicate"),
    "idempotent": ("nobody", "repeating it changed nothing"),
}
#: What a person does about an irreversible object of each kind that should not exist (or exists twice).
CORRECTIONS = {
    "release": "announce a correction and supersede the release (a published release cannot be unpublished)",
    "email": "send the recipients a correction (a sent e-mail cannot be recalled)",
    "message": "post a correction in the channel (a sent message cannot be unsent)",
    "announcement": "post a correction (an announcement cannot be taken back)",
    "refund": "reverse it with the payment provider and tell the customer (a paid refund cannot be undone)",
    "merge": "revert the merge with a new commit (a merge cannot be undone in place)",
}


#: Kinds of append that are money: a second one is a second charge, and billing refunds it.
MONEY_KINDS = frozenset({"charge", "payment", "invoice", "fee", "usage_charge", "billing"})


def append_cleanup(kind: str) -> tuple[str, str]:
    """Who removes a second append of this kind, and how (a charge is refunded; any other entry removed)."""
    if kind in MONEY_KINDS:
        return CLEANUP["append"]
    return f"the owner of the {kind.replace('_', ' ')} records", "remove the second entry"


def kind_of(effect) -> str:
    """The object's kind from its name (``email#3`` -> ``email``)."""
    return str(effect).split("#", 1)[0].split("@", 1)[0]


def correction_words(kind: str) -> str:
    """What to do about an irreversible object of this kind."""
    return CORRECTIONS.get(kind, f"announce a correction for the {kind.replace('_', ' ')} (it cannot be undone)")


def correction(kind: str) -> tuple[str, str]:
    """Who acts on a duplicated irreversible object of this kind, and what they can do."""
    return "a person", correction_words(kind)


def orphan_action(fields) -> tuple[str, str]:
    """Who acts on an object that exists but its task never recorded, by what the endpoint can do."""
    kind = kind_of(fields.get("effect"))
    by = fields.get("reconcile_by", transition_fields.default("reconcile_by", str))  # recorded where not the default
    if by == "none":
        find = (f"the {kind.replace('_', ' ')} endpoint cannot be queried, so find it where it landed (the "
                "recipients, the channel, the provider's own records)")
    elif by == "marker" or not fields.get("key"):
        find = "find it by the task marker"
    else:
        find = "find it by its idempotency key or the task marker"
    if fields.get("compensation"):
        return "an operator", f"{find}, then adopt it or run {fields.get('compensation')}"
    if fields.get("effect_class") == "irreversible":
        return "a person", f"{find}, then record it as done (it cannot be deleted) or {correction_words(kind)}"
    return "an operator", f"{find}, then adopt it or delete it"


def ledger(history) -> list[Entry]:
    events = list(history)
    out: list[Entry] = []
    seen: dict[tuple, str] = {}
    receipted = {(e.fields.get("task"), e.fields.get("effect")) for e in events if e.event == "receipt_recorded"}
    compensated = {(e.fields.get("task"), e.fields.get("effect")) for e in events if e.event == "compensated"}
    terminal = {e.fields.get("task"): e for e in events if e.event == "task_terminal"}
    for event in events:
        if event.event != "committed":
            continue
        fields = event.fields
        task, effect = fields.get("task"), fields.get("effect")
        group = (task, fields.get("logical", fields.get("transition")), fields.get("generation", 1))
        if group in seen and seen[group] != effect:
            effect_class = str(fields.get("effect_class"))
            who = (correction(kind_of(effect)) if effect_class == "irreversible"
                   else append_cleanup(kind_of(effect)) if effect_class == "append"
                   else CLEANUP.get(effect_class, CLEANUP["keyed_creation"]))
            out.append(Entry("object_duplicated", str(effect), f"duplicates {seen[group]} ({task} / {group[1]})",
                             *who, event.index))
        seen.setdefault(group, effect)
        done = terminal.get(task)
        if (task, effect) not in receipted and done is not None and seen[group] == effect:
            out.append(Entry("object_orphaned", str(effect), f"exists but {task} never recorded it",
                             *orphan_action(fields), event.index))
        if (done is not None and done.fields.get("outcome") != "succeeded" and fields.get("compensation")
                and (task, effect) not in compensated):
            out.append(Entry("compensation_owed", str(effect), f"still exists after {task} ended "
                             f"{done.fields.get('outcome')} ({fields.get('compensation')} owed)",
                             "an operator", f"run {fields.get('compensation')}", done.index))
    for event in events:
        if event.event == "accepted" and event.fields.get("task") not in terminal:
            out.append(Entry("task_stranded", str(event.fields.get("task")), "has no terminal outcome",
                             "on call", "resume or close the task", event.index))
    return out
