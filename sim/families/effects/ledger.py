"""The durable-effects family's blast radius: external objects duplicated, orphaned or owed a compensation,
and tasks stranded -- each named as the external system names it, with who must act."""

from __future__ import annotations

from sim.core.ledger import Entry

#: Who cleans up a duplicate of each effect class.
CLEANUP = {
    "irreversible": "a person: it cannot be undone (announce a correction, revoke the release)",
    "append": "billing: refund the second charge",
    "keyed_creation": "an operator: close or delete the duplicate",
    "idempotent": "nobody: repeating it changed nothing",
}


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
            who = CLEANUP.get(str(fields.get("effect_class")), CLEANUP["keyed_creation"])
            out.append(Entry("object_duplicated", f"{effect} duplicates {seen[group]} ({task} / {group[1]})", who,
                             event.index))
        seen.setdefault(group, effect)
        done = terminal.get(task)
        if (task, effect) not in receipted and done is not None and seen[group] == effect:
            out.append(Entry("object_orphaned", f"{effect} exists but {task} never recorded it",
                             "an operator: find it by the task marker and adopt or delete it", event.index))
        if (done is not None and done.fields.get("outcome") != "succeeded" and fields.get("compensation")
                and (task, effect) not in compensated):
            out.append(Entry("compensation_owed", f"{effect} still exists after {task} ended "
                             f"{done.fields.get('outcome')} ({fields.get('compensation')} owed)",
                             f"an operator: run {fields.get('compensation')}", done.index))
    for event in events:
        if event.event == "accepted" and event.fields.get("task") not in terminal:
            out.append(Entry("task_stranded", f"{event.fields.get('task')} has no terminal outcome",
                             "on call: resume or close the task", event.index))
    return out
