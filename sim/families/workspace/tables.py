"""The workspace state as tables (``fencesim serve``): files with their revisions and hunks, the plan, the
journal and the dedupe memory, the messages in flight both ways, and what the executor has armed."""

from __future__ import annotations

from sim.core.family import StateTable
from sim.families.workspace.state import Message, State, content_hash


def _short(digest: str | None) -> str:
    return "" if digest is None else digest[:8]


def _message(message: Message) -> tuple[str, ...]:
    step = message.step
    return (step.step_id, step.path, message.origin, str(message.copy.value),
            "" if message.stamped_base_rev is None else str(message.stamped_base_rev), _short(message.stamped_pre_hash),
            ", ".join(f"{hunk}={text}" for hunk, text in step.patch))


def state_tables(paths: tuple[str, ...], state: State) -> list[StateTable]:
    """Every table of one workspace state, in the order a reader asks about them."""
    revs = state.file_revs
    files = tuple(
        (path, str(state.rev if revs is None else revs[i]), hunk, text, _short(content_hash(state.files[i])))
        for i, path in enumerate(paths) for hunk, text in state.files[i])
    plan = tuple((step.step_id, step.path, str(step.claimed_base_rev), _short(step.claimed_pre_hash),
                  ", ".join(f"{hunk}={text}" for hunk, text in step.patch),
                  "refused" if step.step_id in state.refused else "applied" if step.step_id in state.applied
                  else "sent" if state.sent_message(step.step_id) else "planned")
                 for step in state.steps)
    journal = tuple(("journal", step_id, str(rev)) for step_id, rev in sorted(state.journal))
    journal += tuple(("memory", step_id, str(rev)) for step_id, rev in sorted(state.memory))
    flight = tuple(("client -> executor", *_message(m)) for m in state.requests)
    answers = tuple((answer.step_id, answer.verdict, str(answer.round)) for answer in state.answers)
    other = (("workspace revision", str(state.rev)), ("plan read at revision", str(state.snapshot_rev)),
             ("model", str(state.model_number)), ("human edits", str(state.edits)),
             ("executor incarnation", str(state.incarnation.value)),
             ("preemption armed", state.armed or "none"), ("re-plans", str(state.replans)),
             ("held back", ", ".join(state.held) or "none"))
    return [
        StateTable("files", ("path", "revision", "hunk", "text", "hash"), files),
        StateTable("plan", ("step", "path", "claimed base rev", "claimed pre hash", "patch", "status"), plan),
        StateTable("journal and dedupe memory", ("store", "step", "base rev"), journal),
        StateTable("messages in flight", ("direction", "step", "path", "origin", "copy", "stamped base rev",
                                          "stamped pre hash", "patch"), flight),
        StateTable("answers on their way back", ("step", "verdict", "round"), answers),
        StateTable("executor and client", ("what", "value"), other),
    ]
