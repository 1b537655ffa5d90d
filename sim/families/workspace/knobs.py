"""The workspace family's mechanisms: each knob declared once, with everything it implies.

A knob is a field of :class:`WorkspaceKnobs`: its values (the field's
type), default, meaning and ranks, and with them its *footprint* -- what
each of its values makes each kind of event read and write, on top of the
event's own footprint in :data:`EVENTS` -- when it *fired* (a predicate over
the history's events: the mechanism changed what happened) and why it may
stay *silent* on a workload.  The parser, the advisor, liveness
(``fired_<knob>``, "never fired"), the docs' knob and footprint tables
(generated: ``TABLE.docs_table()``, ``TABLE.footprint_docs_table()``; a test
checks ``docs/workspace.md``) and exhaustive search's independence all read
this one declaration; the law suite checks the footprints against the machine
(``docs/adding-a-family.md``, "Adding a knob").

Ranks say how much protection a value gives (higher is stronger, equal
ranks are alternatives); the advisor never proposes a lower rank than the
design's own, and every value below a knob's top rank is a weakening the
quality suite plants.

The parts a footprint names are the fields of the machine's state
(:class:`sim.families.workspace.state.State`); ``files``, ``file_revs`` are
keyed by path and ``journal``, ``memory``, ``refused``, ``verdict_steps``,
``applied``, ``proved`` by step (``WorkspaceMachine.parts``).  In a template
``[path]`` is the file the event touches (a step's: the files its plan and
re-plan name) and ``[step]`` the event's step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from sim.core.footprint import access
from sim.core.mechanisms import Knobs, knob, knob_table

# -- what each kind of event reads and writes with every knob at its default ----------------------------------

#: Event kind -> its footprint under the default knobs (``preempt_at`` is ``preempt POINT``, which arms a crash).
EVENTS = {
    "plan": access("snapshot files rev model_number file_revs",
                   "snapshot snapshot_rev steps plan_base_rev plan_rejected snapshot_revs"),
    "replan": access("snapshot snapshot_rev snapshot_revs files model_number sent refused steps",
                     "model_number steps"),
    "dispatch": access("steps plan_rejected sent refused verdict_steps files[path] rev requests", "sent requests"),
    "retry": access("sent requests", "requests"),
    "duplicate": access("requests", "requests"),
    "human_edit": access("snapshot edits files[path] rev", "edits files[path] rev"),
    "preempt": access("snapshot", "memory"),
    "preempt_at": access("snapshot armed", "armed"),
    "deliver": access("snapshot requests answers files[path] rev armed",
                      "requests answers files[path] rev armed verdict_steps[step] applied[step]"),
    "ack": access("answers", "answers"),
    "lose_ack": access("answers", "answers"),
    "tests_fail": access("steps applied"),
    "settle": access("*", "*"),  # delivers and answers everything in flight
}

#: What a client that reacts to answers (re-plans, releases held dispatches) may touch: anything.
_EVERYTHING = access("*", "*")


# -- when a mechanism fired, from the history as it goes ------------------------------------------------------


class Seen:
    """What the history showed so far, for the ``fired`` predicates (each reads it as it was before the event)."""

    def __init__(self) -> None:
        self.order: list[str] = []
        self.dispatch_rev: dict[str, int | None] = {}  # step -> the revision it was dispatched with (None: not stamped)
        self.dispatch_workspace_rev: dict[str, int | None] = {}
        self.verdicts: set[str] = set()

    def feed(self, event: Any) -> None:
        name, fields = event.event, event.fields
        if name == "plan":
            self.order = list(fields.get("steps", []))
        elif name == "dispatch" and not fields.get("held"):
            step = fields.get("step")
            self.dispatch_rev[step] = fields.get("rev")
            self.dispatch_workspace_rev[step] = fields.get("workspace_rev")
            if fields.get("verdict") is not None:
                self.verdicts.add(step)
        elif name == "deliver" and fields.get("verdict") is not None:
            self.verdicts.add(fields.get("step"))


def _sent(event: Any) -> bool:
    """A dispatch the client sent or refused (not one held back)."""
    return event.event == "dispatch" and not event.fields.get("held")


def _fence_fired(event: Any, seen: Seen, values: "WorkspaceKnobs") -> bool:
    return event.event == "deliver" and event.fields.get("verdict") in ("rejected:stale_rev", "rejected:pre_hash")


def _stamp_fired(event: Any, seen: Seen, values: "WorkspaceKnobs") -> bool:
    fields = event.fields
    if values.fence != "step":
        return False
    if _sent(event):  # stamped with the claims, not with what the client read
        return "stamped_base_rev" in fields and (fields["stamped_base_rev"] != fields.get("rev")
                                                 or fields.get("stamped_pre_hash") != fields.get("hash_current"))
    step = fields.get("step")  # stamp_at=apply: the rev at apply is not the one the client read
    return (event.event == "deliver" and values.stamp_at == "apply" and step in seen.dispatch_rev
            and fields.get("rev_at_apply") != seen.dispatch_rev[step])


def _dedupe_fired(event: Any, seen: Seen, values: "WorkspaceKnobs") -> bool:
    return event.event == "deliver" and event.fields.get("verdict") == "deduped"


def _journal_write_fired(event: Any, seen: Seen, values: "WorkspaceKnobs") -> bool:
    fields = event.fields
    return (event.event == "deliver" and fields.get("verdict") == "applied" and fields.get("preempted") == "after_write"
            and fields.get("dedupe") != "off" and values.journal_write == "after_write")


def _drift_fired(event: Any, seen: Seen, values: "WorkspaceKnobs") -> bool:
    return _sent(event) and event.fields.get("verdict") == "rejected:drift"


def _overlap_fired(event: Any, seen: Seen, values: "WorkspaceKnobs") -> bool:
    return event.event == "plan" and event.fields.get("verdict") == "rejected:overlap"


def _pipeline_fired(event: Any, seen: Seen, values: "WorkspaceKnobs") -> bool:
    if not _sent(event):
        return False
    step = event.fields.get("step")
    position = seen.order.index(step) if step in seen.order else 0
    return position > 0 and seen.order[position - 1] not in seen.verdicts


def _rev_scope_fired(event: Any, seen: Seen, values: "WorkspaceKnobs") -> bool:
    fields = event.fields  # another file moved the workspace since the dispatch
    return (event.event == "deliver" and fields.get("rev_scope") == "file"
            and fields.get("verdict") not in (None, "rejected:stale_rev")
            and fields.get("workspace_rev") != seen.dispatch_workspace_rev.get(fields.get("step")))


def _drift_scope_fired(event: Any, seen: Seen, values: "WorkspaceKnobs") -> bool:
    fields = event.fields  # the whole-file check would have refused it
    return (_sent(event) and fields.get("verdict") != "rejected:drift" and fields.get("drift_scope") == "hunk"
            and fields.get("claimed_pre_hash") != fields.get("hash_current"))


def _on_reject_fired(event: Any, seen: Seen, values: "WorkspaceKnobs") -> bool:
    if event.event == "rebase":
        return "stopped" not in event.fields
    return _sent(event) and bool(event.fields.get("released") or event.fields.get("rebased"))


def _checkpoint_fired(event: Any, seen: Seen, values: "WorkspaceKnobs") -> bool:
    return event.event == "tests_fail" and event.fields.get("verdict") == "compensated"


def _journal_gc_fired(event: Any, seen: Seen, values: "WorkspaceKnobs") -> bool:
    return event.event == "journal_remove"


# -- why a mechanism may never have acted on a workload ---------------------------------------------------------


def _hunked(workload: Any) -> bool:
    return any(len(hunks) > 1 for hunks in workload.base.files.values())


def _overlap_silent(workload: Any, values: "WorkspaceKnobs") -> str:
    plan = workload.base.plan
    shared = any(a.path == b.path and set(a.patch) & set(b.patch) for i, a in enumerate(plan) for b in plan[i + 1:])
    return "no plan was rejected" if shared else "no two steps share a hunk"


def _rev_scope_silent(workload: Any, values: "WorkspaceKnobs") -> str:
    if len(workload.base.files) == 1:
        return "the workspace has one file"
    return "no step was applied while another file moved the workspace"


def _drift_scope_silent(workload: Any, values: "WorkspaceKnobs") -> str:
    if values.drift_check != "reject":
        return "drift_check=off: there is no drift check to scope"
    return "no step passed that the whole-file check would refuse" if _hunked(workload) else "every file is one hunk"


def _checkpoint_silent(workload: Any, values: "WorkspaceKnobs") -> str:
    return "no test failed after a write" if "tests_fail" in workload.classes else "the workload draws no tests_fail"


def _journal_gc_silent(workload: Any, values: "WorkspaceKnobs") -> str:
    return "dedupe=off keeps no keys" if values.dedupe == "off" else "no key was dropped"


def _journal_write_silent(workload: Any, values: "WorkspaceKnobs") -> str:
    if values.dedupe == "off":
        return "dedupe=off stores no keys"
    if "preempt" not in workload.classes:
        return "the workload draws no preempt"
    return "no preemption struck between a write and its key"


def _stamp_silent(workload: Any, values: "WorkspaceKnobs") -> str:
    if values.fence == "step":
        return "the stamp always equalled what the client read at dispatch"
    return f"fence={values.fence}: stamp_at applies to fence=step only"


@dataclass(frozen=True)
class _said:
    """A ``silent`` reason that does not depend on the workload."""

    line: str

    def __call__(self, workload: Any, values: "WorkspaceKnobs") -> str:
        return self.line


# -- the knobs ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkspaceKnobs(Knobs):
    """One workspace protocol's knob values, typed (``WorkspaceKnobs.of(protocol)``)."""

    fence: Literal["none", "plan", "step"] = knob(
        "none", "what the executor checks at apply. `none`: nothing. `plan`: the plan's base rev and the claimed "
        "pre-hash; since every write moves the rev, no step can pass once anything was written after the plan. "
        "`step`: the per-step stamp chosen by `stamp_at`", ranks={"none": 0, "plan": 1, "step": 1},
        footprint={"plan": {"dispatch": access("plan_base_rev snapshot_revs")}},
        fired=_fence_fired, silent=_said("no delivery was rejected by the fence"))
    stamp_at: Literal["dispatch", "plan", "apply"] = knob(
        "dispatch", "for `fence=step`: the rev and hash the client reads at dispatch; the planner's claims; or "
        "nothing, the executor reading them at apply (the fence then compares the workspace with itself)",
        ranks={"apply": 0, "plan": 1, "dispatch": 1}, fired=_stamp_fired, silent=_stamp_silent)
    dedupe: Literal["off", "memory", "journal"] = knob(
        "off", "where `(step_id, stamped_base_rev)` keys live: nowhere, the executor's memory (lost on preemption), "
        "or the journal persisted with the workspace", ranks={"off": 0, "memory": 1, "journal": 2},
        footprint={"memory": {"deliver": access("memory[step]", "memory")},
                   "journal": {"deliver": access("journal[step]", "journal[step]")}},
        fired=_dedupe_fired, silent=_said("no delivery was deduped"))
    journal_write: Literal["atomic", "after_write"] = knob(
        "atomic", "`atomic`: the key is stored together with the write. `after_write`: stored after the write, "
        "leaving a window where a preemption keeps the patch and loses its key",
        ranks={"after_write": 0, "atomic": 1}, fired=_journal_write_fired, silent=_journal_write_silent)
    drift_check: Literal["off", "reject"] = knob(
        "off", "at dispatch, refuse a step whose claimed pre-hash is not the file's current hash (`rejected:drift`)",
        ranks={"off": 0, "reject": 1},
        footprint={"reject": {"dispatch": access("snapshot", "refused[step] verdict_steps[step]")}},
        fired=_drift_fired, silent=_said("no step's claimed pre-hash differed from the file's at dispatch"))
    overlap_check: Literal["off", "on"] = knob(
        "off", "at admission, reject a plan whose sibling steps share a hunk of one file (`rejected:overlap`). A "
        "plain-string file is one hunk, so any two steps on it overlap", ranks={"off": 0, "on": 1},
        fired=_overlap_fired, silent=_overlap_silent)
    pipeline: Literal["off", "on"] = knob(
        "off", "`off`: a step is dispatched only after the previous one has a verdict. `on`: the client dispatches "
        "ahead (still in plan order), so the network may deliver steps out of order", ranks={"on": 0, "off": 1},
        fired=_pipeline_fired, silent=_said("no step was dispatched before the previous one had a verdict"))
    rev_scope: Literal["workspace", "file"] = knob(
        "workspace",
        "the revision stamps, the fence and the journal key read: one for the whole workspace (every write moves it), "
        "or the step's file's own (only writes of that file move it). With `file` and `pipeline=on`, a step whose "
        "file has earlier steps of the plan sent and still without a verdict is stamped with the revision and hash "
        "those steps will leave ([per-file revisions](#per-file-revisions-rev_scope))",
        ranks={"workspace": 1, "file": 1},
        footprint={"file": {"dispatch": access("file_revs[path] snapshot_revs"),
                            "human_edit": access("file_revs[path]", "file_revs[path]"),
                            "deliver": access("file_revs[path]", "file_revs[path]"),
                            "tests_fail": access("file_revs[path]", "file_revs[path]")}},
        fired=_rev_scope_fired, silent=_rev_scope_silent)
    drift_scope: Literal["file", "hunk"] = knob(
        "file", "for `drift_check=reject`: compare the step's claimed pre-hash with the whole file's hash, or the "
        "hashes of the hunks the step replaces with the hunks as its author claimed them",
        ranks={"file": 1, "hunk": 1}, footprint={"hunk": {"dispatch": access("snapshot")}},
        fired=_drift_scope_fired, silent=_drift_scope_silent)
    on_reject: Literal["stop", "replan"] = knob(
        "stop", "the client after a rejection: stop (the step stays rejected), or re-plan the step and the steps "
        "after it not yet sent from the current revision, at most 3 times a run (`MAX_REPLANS`); with `replan` a "
        "dispatch that may not go yet is held back and sent later instead of skipped", ranks={"stop": 1, "replan": 1},
        footprint={"replan": {"dispatch": _EVERYTHING, "ack": _EVERYTHING, "deliver": _EVERYTHING}},
        fired=_on_reject_fired, silent=_said("no rejection reached the client and no dispatch was held back"))
    checkpoint: Literal["none", "per_step"] = knob(
        "none", "`per_step`: the executor stores the step's file as it was before each write, with the write, and "
        "restores it when a `tests_fail` of that file comes",
        ranks={"none": 1, "per_step": 1},
        footprint={"per_step": {"deliver": access("checkpoints proved[step]", "checkpoints proved[step]"),
                                "tests_fail": access("checkpoints files[path] rev",
                                                     "checkpoints files[path] rev")}},
        fired=_checkpoint_fired, silent=_checkpoint_silent)
    journal_gc: Literal["never", "session_end", "after_checkpoint", "eager"] = knob(
        "never", "when dedupe keys are dropped (a `journal_remove` record each): never; once every step of the plan "
        "has its answer (`session_end`); as soon as the step's answer arrives (`eager`); or once its answer arrived "
        "*and* a checkpoint proves the step applied (`after_checkpoint`: the checkpoint keeps the key with the write "
        "and the dedupe lookup reads it)",
        ranks={"never": 1, "after_checkpoint": 1, "session_end": 0, "eager": 0},
        footprint={"eager": {"ack": access("journal[step] memory[step]", "journal[step] memory[step]")},
                   "after_checkpoint": {"ack": access("journal[step] memory[step] proved[step]",
                                                      "journal[step] memory[step]"),
                                        "deliver": access("proved[step]")},
                   "session_end": {"ack": access("journal memory session refused", "journal memory session")}},
        fired=_journal_gc_fired, silent=_journal_gc_silent)

    # What two knobs decide together, said once here (the machine reads the knobs themselves otherwise).  Plain
    # properties, not cached ones: caching would give each value a __dict__, and every knob read on the search's
    # hot path would then cost twice as much.

    @property
    def acks_react(self) -> bool:
        """An answer reaching the client makes it act: it re-plans a rejection (on_reject=replan) or lets the
        executor drop keys (a journal_gc other than never)."""
        return self.on_reject == "replan" or self.journal_gc != "never"

    @property
    def checkpoints_dedupe(self) -> bool:
        """The executor's dedupe lookup also reads the keys the checkpoints prove (checkpoint=per_step with
        journal_gc=after_checkpoint)."""
        return self.checkpoint == "per_step" and self.journal_gc == "after_checkpoint"


TABLE = knob_table(
    WorkspaceKnobs, family="workspace",
    presets={
        "none": {"fence": "none", "dedupe": "off"},
        "plan": {"fence": "plan", "dedupe": "off"},
        "step": {"fence": "step", "dedupe": "off"},
        "step-dedupe": {"fence": "step", "dedupe": "journal"},
    },
    events=EVENTS)

#: The presets, in the seed table's row order.
PRESETS = tuple(TABLE.presets)
