"""What a runtime (durable-effects) history may hold: event names, the outcomes the checks branch on,
and the shapes of the list fields.

Read by :mod:`sim.core.schema` when ``fencesim check`` reads a history.  A timeout recorded with the
outcome ``faild`` would slip past ``unknown_as_failed``; ``renamed: [1]`` is no rename at all.
"""

from __future__ import annotations

from sim.core.schema import HistorySchema, list_of_string_pairs, list_of_strings
from sim.families.effects.reconcile import FACTS
from sim.families.effects.state import DURABLE_EVENTS
from sim.families.effects.workflow import EFFECT_CLASSES, RECONCILE_BY

#: Events recorded by others than the workers' durable log: the queue, the lease, the network, the Git
#: host, the fault injector, the kernel and the script.
OTHER_EVENTS = frozenset({
    "acked", "append_refused", "committed", "crashed", "deduplicated", "delivered", "fault_armed",
    "foreign_created", "lease_busy", "lease_expired", "lease_granted", "observed", "read_changed",
    "redelivery_ignored", "rejected", "request_duplicated", "request_lost", "response_delivered", "response_lost",
    "run_ended", "skipped", "upgraded",
})
EVENTS = DURABLE_EVENTS | OTHER_EVENTS

TERMINAL_OUTCOMES = ("succeeded", "compensated", "failed")
TIMEOUT_OUTCOMES = ("failed", "unknown")
RECONCILE_RESULTS = ("found", "not_found", "unprovable")
HUMAN_OUTCOMES = ("found", "not_found")
#: What the external system answered a request with (``observed``: a read's answer).
RESPONSE_OUTCOMES = ("committed", "deduplicated", "rejected", "observed")

def read_version_pairs(value) -> str | None:
    """``read_versions`` is a list of ``[read, version]`` pairs: a transition name and a whole number."""
    if isinstance(value, list) and all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)
                                       and isinstance(p[1], int) and not isinstance(p[1], bool) for p in value):
        return None
    return "must be a list of [read, version] pairs (a transition name and a whole number)"


SCHEMA = HistorySchema(
    events=EVENTS,
    values={
        ("task_terminal", "outcome"): TERMINAL_OUTCOMES,
        ("timed_out", "outcome"): TIMEOUT_OUTCOMES,
        ("reconciled", "result"): RECONCILE_RESULTS,
        ("human_resolved", "outcome"): HUMAN_OUTCOMES,
        ("response_delivered", "outcome"): RESPONSE_OUTCOMES,
        ("committed", "effect_class"): EFFECT_CLASSES,
        ("committed", "reconcile_by"): RECONCILE_BY,
        ("timed_out", "effect_class"): ("read",),
    },
    shapes={"renamed": list_of_string_pairs, "completed": list_of_strings, "read_versions": read_version_pairs,
            "inserted_before": list_of_string_pairs},
    facts=FACTS,
)
