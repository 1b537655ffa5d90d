"""The real external system's state: its endpoints, objects, keys and request log, over SQLite.

What a request does, exactly as the model's external system (``sim/families/effects/external.py``):

* ``idempotent``: repeating it creates nothing new; a request for the same task, logical transition
  and generation returns the existing object (``deduplicated``), key or no key;
* an endpoint that honours keys (``keyed_creation`` and ``append`` by default, ``irreversible`` only
  when declared with ``keys``), given an ``Idempotency-Key`` it still retains: the same fingerprint
  returns the existing object (``deduplicated``); another fingerprint is ``rejected``
  (``fingerprint_conflict``) when the server checks fingerprints, else deduplicated too;
* otherwise (no key sent, or keys not honoured) every request creates a new object (``committed``).

The fingerprint is computed here, from the request's canonical arguments (sha256 of sorted compact
JSON, 12 hex digits), never taken from the caller.  Keys are kept ``key_retention_s`` seconds of the
server's clock, which only the harness moves.  Objects are numbered in commit order from 1 (under one
lock), every commit is durable before its reply (SQLite, WAL, ``synchronous=FULL``), and every request
is appended to ``requests.jsonl`` with its ticket on the run's shared clock (:class:`Clock`).

Standard library only: the server process (:mod:`sim.real.external_system`) imports it beside itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import threading
from pathlib import Path

#: Effect classes an endpoint may declare (``read`` observes and creates nothing).
EFFECT_CLASSES = ("idempotent", "keyed_creation", "append", "irreversible", "read")
#: Whether an endpoint of a class honours idempotency keys when its transition does not say.
KEYS_BY_CLASS = {"idempotent": False, "keyed_creation": True, "append": True, "irreversible": False, "read": False}
#: What an endpoint can be queried by, for reconciliation: ``key`` (by key, then by task marker),
#: ``marker`` (by task marker only), ``none``.
RECONCILE_BY = ("key", "marker", "none")
#: The fields of a transition an endpoint reads from its declaration (the harness configures exactly these).
ENDPOINT_FIELDS = ("class", "object", "keys", "reconcile_by", "compensation", "approval")
#: Examples of object kinds (a workflow may name others): the endpoints a git host and its neighbours serve.
OBJECT_KINDS = ("branch", "pull_request", "preview", "release", "announcement", "ledger_entry", "ci_run", "object")
#: Seconds the server waits to read one request from a socket (and for its database).
REQUEST_TIMEOUT_S = 30.0
#: Default key retention (one week of the server's clock), as the model's ``key_retention``.
KEY_RETENTION_DEFAULT_S = 7 * 24 * 3600.0
FINGERPRINT_HEX_DIGITS = 12
KIND_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
DATABASE_FILE = "external.sqlite"
LOG_FILE = "requests.jsonl"


def fingerprint_of(arguments: dict) -> str:
    """``hash(canonical arguments)``: sha256 of the sorted compact JSON, 12 hex digits (the model's rule)."""
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:FINGERPRINT_HEX_DIGITS]


class Clock:
    """The run's shared order of observations: a SQLite counter every process of a run takes tickets from.

    A ticket is taken when a record is made (the server's commit, the harness's receipt of a worker's
    record); sorting by ticket gives one order consistent with what each process saw.  It is not time:
    nothing is stored but the counter.
    """

    def __init__(self, path: Path):
        self.db = sqlite3.connect(path, isolation_level=None, timeout=REQUEST_TIMEOUT_S, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("CREATE TABLE IF NOT EXISTS ticks (n INTEGER PRIMARY KEY AUTOINCREMENT)")
        self.lock = threading.Lock()

    def tick(self) -> int:
        with self.lock:
            row_id = self.db.execute("INSERT INTO ticks DEFAULT VALUES").lastrowid
            if row_id is None:
                raise RuntimeError("SQLite gave the tick no row id")
            return row_id

    def close(self) -> None:
        self.db.close()


class Endpoint:
    """One transition's endpoint, as the workflow declares it."""

    def __init__(self, transition: str, spec: dict):
        self.transition = transition
        unknown = sorted(set(spec) - set(ENDPOINT_FIELDS))
        if unknown:  # a declaration this server would not act on is refused, never ignored
            raise ValueError(f"endpoint {transition}: unknown field {unknown[0]!r}; fields: "
                             f"{', '.join(ENDPOINT_FIELDS)}")
        self.effect_class = spec.get("class", "keyed_creation")
        if self.effect_class not in EFFECT_CLASSES:
            raise ValueError(f"endpoint {transition}: class must be one of {', '.join(EFFECT_CLASSES)}, "
                             f"not {self.effect_class!r}")
        self.kind = spec.get("object", "object")
        if not isinstance(self.kind, str) or not KIND_PATTERN.match(self.kind):
            raise ValueError(f"endpoint {transition}: object must be a lower-case name, not {self.kind!r}")
        keys = spec.get("keys", KEYS_BY_CLASS[self.effect_class])
        if not isinstance(keys, bool):
            raise ValueError(f"endpoint {transition}: keys must be true or false, not {keys!r}")
        self.keys = keys
        self.reconcile_by = spec.get("reconcile_by", "key")
        if self.reconcile_by not in RECONCILE_BY:
            raise ValueError(f"endpoint {transition}: reconcile_by must be one of {', '.join(RECONCILE_BY)}")
        self.compensation = spec.get("compensation")
        approval = spec.get("approval", self.effect_class == "irreversible")
        if not isinstance(approval, bool):
            raise ValueError(f"endpoint {transition}: approval must be true or false, not {approval!r}")
        self.approval = approval

    def recorded(self) -> dict:
        """What a committed effect records of this endpoint where it differs from its class (as the model
        records it): whether its approval was due, what it can be queried by."""
        out: dict = {}
        if self.approval != (self.effect_class == "irreversible"):
            out["approval_required"] = self.approval
        if self.reconcile_by != "key":
            out["reconcile_by"] = self.reconcile_by
        return out


class Store:
    """Objects, keys and the request log, behind one lock: numbers are assigned in commit order."""

    def __init__(self, state: Path, config: dict, clock: Clock):
        self.state = state
        self.clock = clock
        self.lock = threading.Lock()
        self.endpoints = {name: Endpoint(name, spec) for name, spec in config.get("endpoints", {}).items()}
        self.check_fingerprints = config.get("fingerprints", "check") == "check"
        self.key_retention_s = float(config.get("key_retention_s", KEY_RETENTION_DEFAULT_S))
        self.now_s = 0.0
        self.versions: dict[str, int] = {}  # read endpoint -> the version it observes now
        self.db = sqlite3.connect(state / DATABASE_FILE, isolation_level=None, check_same_thread=False,
                                  timeout=REQUEST_TIMEOUT_S)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute("CREATE TABLE IF NOT EXISTS objects (number INTEGER PRIMARY KEY, kind TEXT NOT NULL, "
                        "task TEXT NOT NULL, transition TEXT NOT NULL, logical TEXT NOT NULL, "
                        "generation INTEGER NOT NULL, key TEXT, fingerprint TEXT NOT NULL, head TEXT NOT NULL, "
                        "request TEXT, foreign_object INTEGER NOT NULL, open INTEGER NOT NULL, "
                        "valid INTEGER NOT NULL, created_s REAL NOT NULL)")
        self.db.execute("CREATE TABLE IF NOT EXISTS keys (key TEXT PRIMARY KEY, number INTEGER NOT NULL, "
                        "stored_s REAL NOT NULL)")
        self.next_number = int(config.get("next_number", 1))
        row = self.db.execute("SELECT MAX(number) FROM objects").fetchone()
        if row[0] is not None:
            self.next_number = max(self.next_number, row[0] + 1)
        self.log = open(state / LOG_FILE, "a", encoding="utf-8")

    # -- the log ----------------------------------------------------------------------------

    def record(self, event: str, **fields) -> dict:
        """Append one line to the request log, with its ticket on the run's clock."""
        line = {"seq": self.clock.tick(), "event": event, **{k: v for k, v in fields.items() if v is not None}}
        self.log.write(json.dumps(line, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n")
        self.log.flush()
        os.fsync(self.log.fileno())
        return line

    # -- objects ----------------------------------------------------------------------------

    def _object(self, row) -> dict:
        names = ("number", "kind", "task", "transition", "logical", "generation", "key", "fingerprint", "head",
                 "request", "foreign", "open", "valid")
        obj = dict(zip(names, row))
        obj["foreign"], obj["open"], obj["valid"] = bool(obj["foreign"]), bool(obj["open"]), bool(obj["valid"])
        obj["effect"] = f"{obj['kind']}#{obj['number']}"
        return obj

    _COLUMNS = ("number, kind, task, transition, logical, generation, key, fingerprint, head, request, "
                "foreign_object, open, valid")

    def by_number(self, number: int) -> dict | None:
        row = self.db.execute(f"SELECT {self._COLUMNS} FROM objects WHERE number = ?", (number,)).fetchone()
        return None if row is None else self._object(row)

    def _stored(self, number: int) -> dict:
        """An object just written (it is there: the caller holds the lock)."""
        obj = self.by_number(number)
        if obj is None:
            raise RuntimeError(f"object #{number} was written but cannot be read back")
        return obj

    def by_key(self, key: str | None) -> dict | None:
        """The object a retained key names (None once the key is older than the retention)."""
        if key is None:
            return None
        row = self.db.execute("SELECT number, stored_s FROM keys WHERE key = ?", (key,)).fetchone()
        if row is None or self.now_s - row[1] > self.key_retention_s:
            return None
        return self.by_number(row[0])

    def by_marker(self, task: str, logical: str, kind: str) -> list[dict]:
        """Objects carrying this task's marker for this logical transition and kind, oldest first."""
        rows = self.db.execute(f"SELECT {self._COLUMNS} FROM objects WHERE task = ? AND logical = ? AND kind = ? "
                               "ORDER BY number", (task, logical, kind)).fetchall()
        return [self._object(r) for r in rows]

    def _create(self, kind: str, body: dict, key: str | None, fingerprint: str, request: str | None,
                foreign: bool = False) -> dict:
        number = self.next_number
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute("INSERT INTO objects (number, kind, task, transition, logical, generation, key, "
                            "fingerprint, head, request, foreign_object, open, valid, created_s) "
                            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 1, ?)",
                            (number, kind, body["task"], body["transition"], body["logical"], body["generation"],
                             key, fingerprint, body["head"], request, int(foreign), self.now_s))
            if key is not None:
                self.db.execute("INSERT INTO keys (key, number, stored_s) VALUES (?, ?, ?) ON CONFLICT(key) DO "
                                "UPDATE SET number = excluded.number, stored_s = excluded.stored_s",
                                (key, number, self.now_s))
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.next_number += 1
        return self._stored(number)

    def handle(self, endpoint: Endpoint, body: dict, key: str | None, request: str, worker: str | None,
               copy_of: str | None = None) -> tuple[str, dict]:
        """Apply one request: ``("committed" | "deduplicated" | "rejected", object)``, durable and logged."""
        fingerprint = fingerprint_of(body["arguments"])
        honoured = endpoint.keys and key is not None
        with self.lock:
            if endpoint.effect_class == "idempotent":
                same = next((o for o in self.by_marker(body["task"], body["logical"], endpoint.kind)
                             if not o["foreign"] and o["generation"] == body["generation"]), None)
                outcome, obj = ("deduplicated", same) if same is not None else (
                    "committed", self._create(endpoint.kind, body, None, fingerprint, request))
            elif honoured and (existing := self.by_key(key)) is not None:
                obj = existing
                conflict = self.check_fingerprints and obj["fingerprint"] != fingerprint
                outcome = "rejected" if conflict else "deduplicated"
            else:
                outcome = "committed"
                obj = self._create(endpoint.kind, body, key if honoured else None, fingerprint, request)
            fields = dict(task=body["task"], transition=body["transition"], logical=body["logical"],
                          generation=body["generation"], request=request, worker=worker,
                          key=key if honoured else None, fingerprint=fingerprint, effect=obj["effect"],
                          number=obj["number"], head=obj["head"], copy_of=copy_of)
            if outcome == "committed":
                fields.update(effect_class=endpoint.effect_class, compensation=endpoint.compensation,
                              **endpoint.recorded())
            else:
                fields.update(stored_fingerprint=obj["fingerprint"])
                if outcome == "rejected":
                    fields.update(reason="fingerprint_conflict")
            self.record(outcome, **fields)
        return outcome, obj

    def close_object(self, number: int, compensation: str | None, worker: str | None) -> tuple[str, dict | None]:
        """A compensation: close the object (idempotent: closing a closed object changes nothing)."""
        with self.lock:
            obj = self.by_number(number)
            if obj is None:
                return "not_found", None
            outcome = "closed" if obj["open"] else "already_closed"
            if obj["open"]:
                self.db.execute("UPDATE objects SET open = 0 WHERE number = ?", (number,))
            self.record(outcome, task=obj["task"], transition=obj["transition"], effect=obj["effect"],
                        number=number, compensation=compensation, worker=worker)
            return outcome, self.by_number(number)

    def create_foreign(self, body: dict) -> dict:
        """Someone else's object carrying a task's marker (not its key, another head)."""
        endpoint = self.endpoints[body["transition"]]
        with self.lock:
            obj = self._create(endpoint.kind, dict(body, logical=body.get("logical", body["transition"]),
                                                   generation=body.get("generation", 1)),
                               None, "foreign", "foreign", foreign=True)
            self.record("foreign_created", task=obj["task"], transition=obj["transition"], effect=obj["effect"],
                        number=obj["number"], head=obj["head"])
        return obj

    def invalidate(self, number: int) -> dict | None:
        """Make an object fail its postcondition (a verifier that checks it will find it wrong)."""
        with self.lock:
            self.db.execute("UPDATE objects SET valid = 0 WHERE number = ?", (number,))
            obj = self.by_number(number)
            if obj is not None:
                self.record("invalidated", task=obj["task"], transition=obj["transition"], effect=obj["effect"],
                            number=number)
            return obj
