"""The external system (the Git host): objects, idempotency keys, lookups -- and requests to it.

Which effects a key protects follows the transition's endpoint
(:meth:`~sim.families.effects.workflow.Transition.honours_keys`, computed by
the runtime and carried by each request): ``keyed_creation`` effects are
keyed at the external system (a request with a known key returns the
existing object, or is rejected for other arguments under
``key+fingerprint``); ``append`` effects only at a ledger that deduplicates
(``ledger_dedupe=key``); an ``idempotent`` effect is the same effect however
often it is applied (repeating it creates nothing new); an ``irreversible``
endpoint -- a release, an announcement -- takes no key unless it declares
``keys = true`` or ``irreversible_keys=on`` (a release keyed by its tag): its
protection is the approval, reconciliation before any retry, and a single
writer (the lease fence).  A declared ``keys = false`` is never keyed,
whatever the protocol.  A ``read`` creates nothing: it observes a version of
the outside world, which the ``read_changes`` fault moves on.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

#: Effect classes whose requests the external system deduplicates by idempotency key.
KEYED_CLASSES = frozenset({"keyed_creation", "append"})


@dataclass(kw_only=True)
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
    and rejects another (at an endpoint that compares fingerprints: a transition may declare ``fingerprint =
false``).  Keys older than ``key_retention_s`` -- or the retention the transition declares -- are forgotten.
    """

    def __init__(self, idempotency: str, key_retention_s: float, next_number: int = 1,
                 irreversible_keys: bool = False):
        self.idempotency = idempotency
        self.keyed_classes = KEYED_CLASSES | ({"irreversible"} if irreversible_keys else set())
        self.key_retention_s = key_retention_s
        self.next_number = next_number
        self.objects: list[ExternalObject] = []
        #: key -> (object, when stored, how long this endpoint keeps it)
        self.keys: dict[str, tuple[ExternalObject, float, float]] = {}
        self.read_versions: dict[tuple[str, str], int] = {}  # (task, logical read) -> the version it observes now

    def by_key(self, key: str | None, now: float) -> ExternalObject | None:
        if key is None or self.idempotency == "none":
            return None
        entry = self.keys.get(key)
        if entry is None or now - entry[1] > entry[2]:
            return None
        return entry[0]

    def handle(self, request: "Request", now: float) -> tuple[str, ExternalObject]:
        """Apply a request: ``("committed" | "deduplicated" | "rejected", object)``."""
        if request.effect_class == "idempotent":
            same = next((o for o in self.objects if not o.foreign and o.task == request.task
                         and o.logical == request.logical and o.generation == request.generation), None)
            return ("deduplicated", same) if same is not None else ("committed", self.create(request, now))
        if not self.honours(request):
            return "committed", self.create(request, now)
        existing = self.by_key(request.key, now)
        if existing is not None:
            if (self.idempotency == "key+fingerprint" and request.compares_fingerprints
                    and existing.fingerprint != request.fingerprint):
                return "rejected", existing
            return "deduplicated", existing
        created = self.create(request, now)
        if self.keyed(request) and request.key is not None:
            retention = self.key_retention_s if request.key_retention_s is None else request.key_retention_s
            self.keys[request.key] = (created, now, retention)
        return "committed", created

    def honours(self, request: "Request") -> bool:
        """Whether the endpoint deduplicates by key: as the request's transition declares (the runtime computes
        it), else by its effect class."""
        if request.honours_keys is not None:
            return request.honours_keys
        return request.effect_class in self.keyed_classes

    def keyed(self, request: "Request") -> bool:
        """Whether this request's key means anything to the endpoint."""
        return self.idempotency != "none" and self.honours(request)

    def observe(self, task: str, logical: str) -> int:
        """The version of the world a read of ``logical`` observes now (1 until it changes)."""
        return self.read_versions.get((task, logical), 1)

    def change_read(self, task: str, logical: str) -> int:
        """The world a read observes moves on (the ``read_changes`` fault): its new version."""
        version = self.read_versions[(task, logical)] = self.observe(task, logical) + 1
        return version

    def create(self, request: "Request", now: float, foreign: bool = False) -> ExternalObject:
        created = ExternalObject(
            number=self.next_number, kind=request.kind, task=request.task, transition=request.transition,
            logical=request.logical, generation=request.generation, key=request.key, fingerprint=request.fingerprint,
            head=request.head, created_s=now, foreign=foreign,
        )
        self.next_number += 1
        self.objects.append(created)
        return created

    def by_marker(self, task: str, logical: str, kind: str) -> list[ExternalObject]:
        """Objects whose task marker names this task and transition kind, oldest first."""
        return [o for o in self.objects if o.task == task and o.logical == logical and o.kind == kind]


@dataclass(kw_only=True)
class Request:
    """One request in flight from a worker to the external system (built by keyword: its fields are many and
    several share a type; :meth:`again` copies one under a new id)."""

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
    honours_keys: bool | None = None  # None: by effect class (what the runtime computed for the transition)
    read_versions: tuple[tuple[str, int], ...] = ()  # (read, version) the request was built from
    key_retention_s: float | None = None  # how long the endpoint keeps its key (None: the protocol's knob)
    compares_fingerprints: bool = True  # whether the endpoint compares fingerprints under a key

    def again(self, request_id: str) -> "Request":
        """This request sent again under another id (the network duplicated it): every other field the same."""
        return dataclasses.replace(self, request_id=request_id)


@dataclass(frozen=True)
class Observation:
    """What a read observed: a version of the outside world (and a content hash of what it holds)."""

    kind: str
    number: int  # the version
    content_hash: str

    @property
    def effect(self) -> str:
        return f"{self.kind}@v{self.number}"


