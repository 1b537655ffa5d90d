"""What a workspace history may hold: the event names, verdicts and knob values the checks read.

Read by :mod:`sim.core.schema` when ``fencesim check`` reads a history: a verdict no executor gives
(``aplied``), a misspelt event (``delivr``) or a ``dedupe`` the checks do not know would otherwise be
passed over by every check.
"""

from __future__ import annotations

from sim.core.schema import ANY_EVENT, HistorySchema, list_of_strings, table_of_strings
from sim.families.workspace.knobs import TABLE
from sim.families.workspace.reconcile import FACTS
from sim.families.workspace.scenario import EVENT_NAMES, HISTORY_ONLY_EVENTS, PREEMPT_POINTS

#: Every verdict the model records: the executor's four, the client's drift check, the plan's overlap check,
#: and a restore to a checkpoint after the step's tests failed.
VERDICTS = ("applied", "deduped", "rejected:stale_rev", "rejected:pre_hash", "rejected:drift", "rejected:overlap",
            "compensated")
#: How a message reached the executor.
ORIGINS = ("dispatch", "retry", "duplicate")

SCHEMA = HistorySchema(
    events=frozenset(EVENT_NAMES) | frozenset(HISTORY_ONLY_EVENTS),
    values={
        (ANY_EVENT, "verdict"): VERDICTS,
        (ANY_EVENT, "fence"): TABLE.knob("fence").candidates(),
        (ANY_EVENT, "dedupe"): TABLE.knob("dedupe").candidates(),
        (ANY_EVENT, "pipeline"): TABLE.knob("pipeline").candidates(),
        (ANY_EVENT, "origin"): ORIGINS,
        (ANY_EVENT, "preempted"): PREEMPT_POINTS,
        ("preempt", "point"): PREEMPT_POINTS,
        (ANY_EVENT, "rev_scope"): TABLE.knob("rev_scope").candidates(),
        (ANY_EVENT, "drift_scope"): TABLE.knob("drift_scope").candidates(),
        (ANY_EVENT, "checkpoint"): TABLE.knob("checkpoint").candidates(),
        (ANY_EVENT, "journal_gc"): TABLE.knob("journal_gc").candidates(),
    },
    shapes={"hunks_before": table_of_strings, "expected_prior_hunks": table_of_strings,
            "patch_hunks": list_of_strings, "steps": list_of_strings},
    facts=FACTS,
)
