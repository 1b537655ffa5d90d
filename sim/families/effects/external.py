"""The external system (the Git host): objects, idempotency keys, lookups -- and requests to it.

Which effects a key protects follows the effect class of the transition:
``keyed_creation`` and ``append`` effects are keyed at the external system
(a request with a known key returns the existing object, or is rejected for
other arguments under ``key+fingerprint``); an ``idempotent`` effect is the
same effect however often it is applied (repeating it creates nothing new);
an ``irreversible`` endpoint -- a release, an announcement -- takes no key
(``irreversible_keys=off``, the default): its protection is the approval,
reconciliation before any retry, and a single writer (the lease fence).
With ``irreversible_keys=on`` it honours keys like a keyed creation (a
release keyed by its tag).
"""

from __future__ import annotations

from dataclasses import dataclass

#: Effect classes whose requests the external system deduplicates by idempotency key.
KEYED_CLASSES = frozenset({"keyed_creation", "append"})


@dataclass
class ExternalObject:
    number: int
    kind: str
    task: str
    transition: str
    logical: str
    generation: int
    key: str | None
    fingerprint: str
    head: str
    created_s: float
    foreign: bool = False
    open: bool = True

    @property
    def effect(self) -> str:
        return f"{self.kind}#{self.number}"


class ExternalSystem:
    """The Git host: creates objects, answers lookups by key, head or task marker.

    ``idempotency`` decides what a request with a known key does: ``none``
    ignores keys, ``key`` returns the existing object (whatever the
    arguments), ``key+fingerprint`` returns it only for the same fingerprint
    and rejects another.  Keys older than ``key_retention_s`` are forgotten.
    """

    def __init__(self, idempotency: str, key_retention_s: float, next_number: int = 1,
                 irreversible_keys: bool = False):
        self.idempotency = idempotency
        self.keyed_classes = KEYED_CLASSES | ({"irreversible"} if irreversible_keys else set())
        self.key_retention_s = key_retention_s
        self.next_number = next_number
        self.objects: list[ExternalObject] = []
        self.keys: dict[str, tuple[ExternalObject, float]] = {}

    def by_key(self, key: str | None, now: float) -> ExternalObject | None:
        if key is None or self.idempotency == "none":
            return None
        entry = self.keys.get(key)
        if entry is None or now - entry[1] > self.key_retention_s:
            return None
        return entry[0]

    def handle(self, request: "Request", now: float) -> tuple[str, ExternalObject | None]:
        """Apply a request: ``("committed" | "deduplicated" | "rejected", object)``."""
        if request.effect_class == "idempotent":
            same = next((o for o in self.objects if not o.foreign and o.task == request.task
                         and o.logical == request.logical and o.generation == request.generation), None)
            return ("deduplicated", same) if same is not None else ("committed", self.create(request, now))
        if request.effect_class not in self.keyed_classes:
            return "committed", self.create(request, now)
        existing = self.by_key(request.key, now)
        if existing is not None:
            if self.idempotency == "key+fingerprint" and existing.fingerprint != request.fingerprint:
                return "rejected", existing
            return "deduplicated", existing
        created = self.create(request, now)
        if self.keyed(request) and request.key is not None:
            self.keys[request.key] = (created, now)
        return "committed", created

    def keyed(self, request: "Request") -> bool:
        """Whether this request's key means anything to the endpoint."""
        return self.idempotency != "none" and request.effect_class in self.keyed_classes

    def create(self, request: "Request", now: float, foreign: bool = False) -> ExternalObject:
        created = ExternalObject(
            self.next_number, request.kind, request.task, request.transition, request.logical,
            request.generation, request.key, request.fingerprint, request.head, now, foreign,
        )
        self.next_number += 1
        self.objects.append(created)
        return created

    def by_marker(self, task: str, logical: str, kind: str) -> list[ExternalObject]:
        """Objects whose task marker names this task and transition kind, oldest first."""
        return [o for o in self.objects if o.task == task and o.logical == logical and o.kind == kind]


@dataclass
class Request:
    """One request in flight from a worker to the external system."""

    request_id: str
    worker: str
    task: str
    transition: str
    logical: str
    kind: str
    generation: int
    key: str | None
    fingerprint: str
    head: str
    attempt: int
    effect_class: str = "keyed_creation"


