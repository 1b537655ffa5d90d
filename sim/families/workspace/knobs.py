"""The workspace family's knobs and presets (names are part of the interface).

Ranks say how much protection a value gives (higher is stronger, equal
ranks are alternatives); the advisor never proposes a lower rank than the
design's own, and every value below a knob's top rank is a weakening the
quality suite plants.
"""

from __future__ import annotations

from sim.core.knobs import Knob, KnobTable

TABLE = KnobTable(
    family="workspace",
    knobs=(
        Knob("fence", ("none", "plan", "step"), "none", "what is checked at apply",
             ranks={"none": 0, "plan": 1, "step": 1}),
        Knob("stamp_at", ("dispatch", "plan", "apply"), "dispatch",
             "for fence=step: rev and hash read at dispatch, the planner's claims, or read at apply",
             ranks={"apply": 0, "plan": 1, "dispatch": 1}),
        Knob("dedupe", ("off", "memory", "journal"), "off", "where (step_id, base_rev) keys live",
             ranks={"off": 0, "memory": 1, "journal": 2}),
        Knob("journal_write", ("atomic", "after_write"), "atomic",
             "after_write leaves a window where a preemption keeps the patch and loses its key",
             ranks={"after_write": 0, "atomic": 1}),
        Knob("drift_check", ("off", "reject"), "off",
             "at dispatch, reject a step whose claimed pre-hash is not current",
             ranks={"off": 0, "reject": 1}),
        Knob("overlap_check", ("off", "on"), "off", "reject at admission a plan whose sibling steps share a hunk",
             ranks={"off": 0, "on": 1}),
        Knob("pipeline", ("off", "on"), "off", "on: dispatch ahead; the network may reorder",
             ranks={"on": 0, "off": 1}),
        Knob("rev_scope", ("workspace", "file"), "workspace",
             "the revision stamps, the fence and the journal key read: one for the workspace, or the step's file's",
             ranks={"workspace": 1, "file": 1}),
        Knob("drift_scope", ("file", "hunk"), "file",
             "for drift_check=reject: compare the whole file's hash, or the hunks the step replaces",
             ranks={"file": 1, "hunk": 1}),
        Knob("on_reject", ("stop", "replan"), "stop",
             "the client after a rejection: stop, or re-plan the step and those after it from the current "
             "revision (and send a held-back dispatch once it may go)",
             ranks={"stop": 1, "replan": 1}),
        Knob("checkpoint", ("none", "per_step"), "none",
             "per_step: the step's file is checkpointed before each write and restored when its tests fail",
             ranks={"none": 1, "per_step": 1}),
        Knob("journal_gc", ("never", "session_end", "after_checkpoint", "eager"), "never",
             "when dedupe keys are dropped: never, when every step was answered, once a checkpoint proves the step "
             "applied and its answer arrived, or as soon as its answer arrived",
             ranks={"never": 1, "after_checkpoint": 1, "session_end": 0, "eager": 0}),
    ),
    presets={
        "none": {"fence": "none", "dedupe": "off"},
        "plan": {"fence": "plan", "dedupe": "off"},
        "step": {"fence": "step", "dedupe": "off"},
        "step-dedupe": {"fence": "step", "dedupe": "journal"},
    },
)

#: The presets, in the seed table's row order.
PRESETS = tuple(TABLE.presets)
