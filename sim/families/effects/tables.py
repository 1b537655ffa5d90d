"""The effects state as tables (``fencesim serve``): tasks, the transitions' intents and receipts as the durable
log says, the external system's objects, and the requests and responses in flight."""

from __future__ import annotations

from typing import Any

from sim.core.family import StateTable


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def state_tables(runtime: Any) -> list[StateTable]:
    """Every table of the state a run of the effects family ended in (``runtime``: its system)."""
    tasks, transitions = [], []
    for task in sorted(runtime.log.records):
        view = runtime.log.reduce(task)
        holder = runtime.leases.get(task)
        tasks.append((task, str(view.version), view.terminal or ("aborted" if view.aborted else "running"),
                      "" if holder is None else f"{holder[0]} (epoch {holder[1]})",
                      str(runtime.deliveries.get(task, 0)), str(view.records)))
        for name, item in view.transitions.items():
            transitions.append((task, name, item.status, str(item.generation), _text(item.key),
                                _text(item.fingerprint), str(item.attempts), _text(item.effect),
                                "yes" if item.compensated else ""))
    objects = tuple((obj.effect, obj.task, obj.transition, str(obj.generation), _text(obj.key), obj.fingerprint,
                     "open" if obj.open else "closed", "foreign" if obj.foreign else "")
                    for obj in runtime.external.objects)
    requests = tuple(("worker -> external", r.request_id, r.worker, r.task, r.transition, _text(r.key), str(r.attempt))
                     for r in runtime.in_flight)
    requests += tuple(("external -> worker", r.request_id, r.worker, r.task, r.transition, outcome, str(r.attempt))
                      for r, outcome, _ in runtime.responses)
    workers = tuple((name, "alive" if memory.alive else "crashed", ", ".join(sorted(memory.tasks)))
                    for name, memory in sorted(runtime.workers.items()))
    return [
        StateTable("tasks", ("task", "workflow version", "status", "lease", "deliveries", "durable records"),
                   tuple(tasks)),
        StateTable("intents and receipts", ("task", "transition", "status", "generation", "idempotency key",
                                            "fingerprint", "attempts", "effect", "compensated"), tuple(transitions)),
        StateTable("external objects", ("object", "task", "transition", "generation", "key", "fingerprint", "state",
                                        "origin"), objects),
        StateTable("messages in flight", ("direction", "request", "worker", "task", "transition", "key or outcome",
                                          "attempt"), requests),
        StateTable("workers", ("worker", "state", "tasks in memory"), workers),
    ]
