"""fencesim's real external system: a git host and the other endpoints a workflow names, over HTTP and SQLite.

It runs as its own process (``python -I external_system.py --state DIR --config FILE``), uses the
standard library only, and stands in for everything a durable agent task mutates: branches, pull
requests, previews, releases, announcements, ledger entries, CI runs, generic objects.  Each
endpoint is declared by the workflow's transition it serves (its *effect class*, whether it honours
idempotency ``keys``, what it can be queried by), so the same server answers the seed's saga and a
user's own workflow.  ``docs/real-runtimes.md`` is the interface.

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
server's clock, which only the harness moves (``POST /_control/clock``): real elapsed time never
expires a key, so a run's results never depend on its speed.  Objects are numbered in commit order
from 1 (under one lock), every commit is durable before its reply (SQLite, WAL, ``synchronous=FULL``),
and every request is appended to ``requests.jsonl`` with its ticket on the run's shared clock
(:class:`Clock`), which orders the server's records among the harness's.  Nothing in a result
depends on the wall clock.

Fault hooks, armed by the harness (``POST /_control/arm``): for the Nth request of a transition, at
``before_store`` (dispatched, not committed) or ``after_store`` (committed, no reply yet), SIGKILL
the calling worker, SIGSTOP it (a frozen owner; ``POST /_control/thaw`` sends SIGCONT), hold the
request until the harness releases it (a delayed request or reply), send a copy of it (a duplicate
on the network), lose the reply, or drop the request.  Each hook that fires is announced on stdout,
one JSON line, so the harness synchronises on events, never on sleeps.  Every wait is bounded
(``HOLD_LIMIT_S``, ``REQUEST_TIMEOUT_S``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import select
import signal
import socket
import sqlite3
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

#: Effect classes an endpoint may declare (``read`` observes and creates nothing).
EFFECT_CLASSES = ("idempotent", "keyed_creation", "append", "irreversible", "read")
#: Whether an endpoint of a class honours idempotency keys when its transition does not say.
KEYS_BY_CLASS = {"idempotent": False, "keyed_creation": True, "append": True, "irreversible": False, "read": False}
#: What an endpoint can be queried by, for reconciliation: ``key`` (by key, then by task marker),
#: ``marker`` (by task marker only), ``none``.
RECONCILE_BY = ("key", "marker", "none")
#: Examples of object kinds (a workflow may name others): the endpoints a git host and its neighbours serve.
OBJECT_KINDS = ("branch", "pull_request", "preview", "release", "announcement", "ledger_entry", "ci_run", "object")
STAGES = ("before_store", "after_store")
ACTIONS = ("kill_caller", "freeze_caller", "hold", "duplicate", "lose_reply", "drop")
#: Seconds a held request waits for the harness's release before it goes on by itself (logged ``hold_expired``).
HOLD_LIMIT_S = 120.0
#: Seconds the server waits to read one request from a socket.
REQUEST_TIMEOUT_S = 30.0
#: The largest request body accepted, in bytes.
MAX_BODY_BYTES = 1 << 20
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
                fields.update(effect_class=endpoint.effect_class, compensation=endpoint.compensation)
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


class Hooks:
    """Fault hooks the harness arms; each fires once, for the Nth request of a transition at a stage."""

    def __init__(self, store: Store, announce):
        self.store = store
        self.announce = announce
        self.lock = threading.Lock()
        self.rules: list[dict] = []
        self.seen: dict[str, int] = {}  # transition -> original requests so far
        self.pids: dict[str, int] = {}  # worker name -> process id (registered by the harness)
        self.releases: dict[str, threading.Event] = {}

    def arm(self, rule: dict) -> None:
        for name in ("id", "transition", "stage", "action"):
            if not isinstance(rule.get(name), str):
                raise ValueError(f"a hook needs a string {name!r}")
        if rule["stage"] not in STAGES or rule["action"] not in ACTIONS:
            raise ValueError(f"stage must be one of {', '.join(STAGES)} and action one of {', '.join(ACTIONS)}")
        if rule["action"] == "lose_reply" and rule["stage"] != "after_store":
            raise ValueError("lose_reply strikes after_store (a reply exists only once the request is stored)")
        if rule["action"] == "drop" and rule["stage"] != "before_store":
            raise ValueError("drop strikes before_store (a stored request cannot be dropped)")
        nth = rule.get("nth", 1)
        if not isinstance(nth, int) or isinstance(nth, bool) or nth < 1:
            raise ValueError("nth must be a whole number from 1")
        with self.lock:
            self.rules.append(dict(rule, nth=nth, fired=False))
            self.releases[rule["id"]] = threading.Event()

    def count(self, transition: str) -> int:
        with self.lock:
            self.seen[transition] = self.seen.get(transition, 0) + 1
            return self.seen[transition]

    def matching(self, transition: str, ordinal: int, stage: str) -> list[dict]:
        with self.lock:
            found = [r for r in self.rules if not r["fired"] and r["transition"] == transition
                     and r["nth"] == ordinal and r["stage"] == stage]
            for rule in found:
                rule["fired"] = True
            return found

    def signal_worker(self, worker: str | None, signum: int) -> bool:
        pid = self.pids.get(worker or "")
        if pid is None:
            return False
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            return False
        return True

    def fire(self, rule: dict, request: str, worker: str | None) -> None:
        """Perform the hook's action that happens at its point (killing, freezing, holding)."""
        action = rule["action"]
        fields = dict(hook=rule["id"], action=action, stage=rule["stage"], request=request, worker=worker,
                      transition=rule["transition"])
        if action == "kill_caller":
            done = self.signal_worker(worker, signal.SIGKILL)
            self.announce(self.store.record("caller_killed" if done else "caller_not_found", **fields))
        elif action == "freeze_caller":
            done = self.signal_worker(worker, signal.SIGSTOP)
            self.announce(self.store.record("caller_frozen" if done else "caller_not_found", **fields))
        elif action == "hold":
            self.announce(self.store.record("held", **fields))
            released = self.releases[rule["id"]].wait(timeout=rule.get("limit_s", HOLD_LIMIT_S))
            self.announce(self.store.record("released" if released else "hold_expired", **fields))
        else:
            self.announce(self.store.record("hook_fired", **fields))

    def release(self, hook: str) -> bool:
        event = self.releases.get(hook)
        if event is None:
            return False
        event.set()
        return True


class Handler(BaseHTTPRequestHandler):
    """The HTTP face: ``/v1/...`` for workers, ``/_control/...`` for the harness."""

    server: ExternalServer

    server_version = "fencesim-external/1"
    protocol_version = "HTTP/1.0"  # one request per connection: a lost reply is a closed connection
    timeout = REQUEST_TIMEOUT_S

    @property
    def store(self) -> Store:
        return self.server.store

    @property
    def hooks(self) -> Hooks:
        return self.server.hooks

    def log_message(self, format, *args) -> None:  # the request log is requests.jsonl, not stderr
        return

    # -- plumbing -----------------------------------------------------------------------------

    def _body(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            raise ValueError(f"a request body may hold at most {MAX_BODY_BYTES} bytes")
        data = json.loads(self.rfile.read(length) or b"{}")
        if not isinstance(data, dict):
            raise ValueError("the request body must be a JSON object")
        return data

    def _reply(self, status: int, payload: dict) -> bool:
        """Send a JSON reply in one write; False when the caller has closed its end (it stopped waiting)."""
        if self._caller_gone():
            return False
        data = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode("utf-8")
        head = (f"HTTP/1.0 {status} {self.responses.get(status, ('',))[0]}\r\nServer: {self.server_version}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n").encode("latin-1")
        try:
            self.wfile.write(head + data)
            self.wfile.flush()
            return True
        except OSError:
            return False

    def _caller_gone(self) -> bool:
        """Whether the caller closed the connection (it sends nothing after its request but its FIN)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _error(self, status: int, message: str) -> None:
        self._reply(status, {"error": message})

    def do_GET(self) -> None:
        try:
            url = urlparse(self.path)
            query = {k: v[-1] for k, v in parse_qs(url.query).items()}
            if url.path == "/v1/objects":
                self._query(query)
            elif url.path.startswith("/v1/objects/") and url.path[len("/v1/objects/"):].isdigit():
                with self.store.lock:
                    obj = self.store.by_number(int(url.path[len("/v1/objects/"):]))
                self._reply(200, obj) if obj else self._error(404, "no such object")
            elif url.path.startswith("/v1/reads/"):
                self._read(url.path[len("/v1/reads/"):], query)
            elif url.path == "/_control/objects":
                with self.store.lock:
                    rows = self.store.db.execute(f"SELECT {Store._COLUMNS} FROM objects ORDER BY number").fetchall()
                self._reply(200, {"objects": [self.store._object(r) for r in rows]})
            elif url.path == "/_control/health":
                self._reply(200, {"ok": True})
            else:
                self._error(404, f"no such path {url.path}")
        except (ValueError, KeyError) as error:
            self._error(400, str(error))

    def do_POST(self) -> None:
        try:
            url = urlparse(self.path)
            body = self._body()
            parts = url.path.strip("/").split("/")
            if parts[:2] == ["v1", "objects"] and len(parts) == 3:
                self._create(parts[2], body)
            elif parts[:2] == ["v1", "objects"] and len(parts) == 4 and parts[3] == "close":
                self._close(int(parts[2]), body)
            elif parts[0] == "_control" and len(parts) == 2:
                self._control(parts[1], body)
            else:
                self._error(404, f"no such path {url.path}")
        except (ValueError, KeyError, TypeError) as error:
            self._error(400, f"{type(error).__name__}: {error}")

    # -- workers --------------------------------------------------------------------------------

    def _create(self, kind: str, body: dict) -> None:
        struck: list[dict] = []
        try:
            self._create_object(kind, body, struck)
        finally:
            if struck:  # the harness waits for this before it goes on: the request's fate is settled
                self.hooks.announce({"event": "request_done", "request": self.headers.get("Fencesim-Request"),
                                     "transition": body.get("transition"),
                                     "hooks": [r["id"] for r in struck]})

    def _create_object(self, kind: str, body: dict, struck: list[dict]) -> None:
        transition = body.get("transition")
        if not isinstance(transition, str) or transition not in self.store.endpoints:
            self._error(404, f"no endpoint serves transition {transition!r}")
            return
        endpoint = self.store.endpoints[transition]
        if endpoint.effect_class == "read":
            self._error(400, f"transition {transition!r} is a read: GET /v1/reads/{transition}")
            return
        if endpoint.kind != kind:
            self._error(400, f"transition {transition!r} creates {endpoint.kind!r} objects, not {kind!r}")
            return
        for name, kinds in (("task", str), ("logical", str), ("head", str), ("generation", int),
                            ("arguments", dict)):
            if not isinstance(body.get(name), kinds):
                raise ValueError(f"the body needs {name!r}")
        key = self.headers.get("Idempotency-Key") or None
        request = self.headers.get("Fencesim-Request") or "anonymous"
        worker = self.headers.get("Fencesim-Worker")
        ordinal = self.hooks.count(transition)
        rules = self.hooks.matching(transition, ordinal, "before_store")
        struck.extend(rules)
        for rule in rules:
            self.hooks.fire(rule, request, worker)
        if any(r["action"] == "drop" for r in rules):
            self.store.record("request_dropped", task=body["task"], transition=transition, request=request,
                              worker=worker)
            self.close_connection = True
            return
        outcome, obj = self.store.handle(endpoint, body, key, request, worker)
        after = self.hooks.matching(transition, ordinal, "after_store")
        struck.extend(after)
        for rule in after:
            self.hooks.fire(rule, request, worker)
        for rule in rules + after:
            if rule["action"] == "duplicate":  # the network delivered a copy: it is served on its own
                copy = f"{request}+copy"
                self.store.record("request_duplicated", task=body["task"], transition=transition, request=copy,
                                  original=request)
                copied = self.store.handle(endpoint, body, key, copy, worker, copy_of=request)
                if rule["stage"] == "before_store":
                    # Both were in flight: the caller hears the later answer (a retrying proxy's), as the
                    # model's worker keeps the last response that reaches it while it waits.
                    outcome, obj = copied
        status = {"committed": 201, "deduplicated": 200, "rejected": 409}[outcome]
        payload = {"outcome": outcome, "effect": obj["effect"], "number": obj["number"], "request": request,
                   "fingerprint": obj["fingerprint"], "head": obj["head"]}
        if any(r["action"] == "lose_reply" for r in after):
            self.store.record("reply_lost", task=body["task"], transition=transition, request=request,
                              worker=worker, effect=obj["effect"], reason="network")
            self.close_connection = True
            return
        lost = dict(task=body["task"], transition=transition, request=request, worker=worker, effect=obj["effect"],
                    reason="receiver_gone")
        if any(r["action"] == "kill_caller" for r in rules + after):
            # A reply to a killed caller may still fit in the socket's buffer: the log says what is true.
            self.store.record("reply_lost", **lost)
            self._reply(status, payload)
        elif not self._reply(status, payload):
            self.store.record("reply_lost", **lost)

    def _close(self, number: int, body: dict) -> None:
        outcome, obj = self.store.close_object(number, body.get("compensation"), self.headers.get("Fencesim-Worker"))
        if obj is None:
            self._error(404, f"no object #{number}")
            return
        self._reply(200, {"outcome": outcome, "effect": obj["effect"], "open": obj["open"]})

    def _query(self, query: dict) -> None:
        """Reconciliation: by key, or by task marker; refused where the endpoint cannot be queried so."""
        transition = query.get("transition")
        if not isinstance(transition, str) or transition not in self.store.endpoints:
            self._error(404, f"no endpoint serves transition {transition!r}")
            return
        endpoint = self.store.endpoints[transition]
        by = "key" if "key" in query else "marker"
        if endpoint.reconcile_by == "none" or (by == "key" and endpoint.reconcile_by != "key"):
            self._error(400, f"query_not_supported: {transition} cannot be queried by {by}")
            return
        with self.store.lock:
            if by == "key":
                found = self.store.by_key(query["key"]) if endpoint.keys else None
                objects = [found] if found is not None else []
            else:
                objects = self.store.by_marker(query["task"], query.get("logical", transition), endpoint.kind)
        self._reply(200, {"query": by, "objects": objects})

    def _read(self, transition: str, query: dict) -> None:
        """A ``read`` endpoint observes the outside world's current version and creates nothing."""
        endpoint = self.store.endpoints.get(transition)
        if endpoint is None or endpoint.effect_class != "read":
            self._error(404, f"no read endpoint serves transition {transition!r}")
            return
        with self.store.lock:
            version = self.store.versions.get(transition, 1)
            self.store.record("observed", task=query.get("task"), transition=transition, version=version,
                              request=self.headers.get("Fencesim-Request"),
                              worker=self.headers.get("Fencesim-Worker"))
        self._reply(200, {"outcome": "observed", "version": version})

    # -- the harness ----------------------------------------------------------------------------

    def _control(self, name: str, body: dict) -> None:
        if name == "arm":
            self.hooks.arm(body)
            self._reply(200, {"armed": body["id"]})
        elif name == "release":
            self._reply(200, {"released": self.hooks.release(body["hook"])})
        elif name == "workers":
            self.hooks.pids.update({str(k): int(v) for k, v in body.items()})
            self._reply(200, {"workers": sorted(self.hooks.pids)})
        elif name == "thaw":
            done = self.hooks.signal_worker(body["worker"], signal.SIGCONT)
            self.store.record("caller_thawed", worker=body["worker"])
            self._reply(200, {"thawed": done})
        elif name == "clock":
            self.store.now_s = float(body["now_s"])
            self._reply(200, {"now_s": self.store.now_s})
        elif name == "foreign":
            obj = self.store.create_foreign(body)
            self._reply(200, {"effect": obj["effect"], "number": obj["number"]})
        elif name == "read_changes":  # the world a read observes moves on
            with self.store.lock:
                version = self.store.versions[body["transition"]] = self.store.versions.get(body["transition"], 1) + 1
                self.store.record("read_changed", transition=body["transition"], version=version)
            self._reply(200, {"version": version})
        elif name == "invalidate":
            invalidated = self.store.invalidate(int(body["number"]))
            self._reply(200 if invalidated else 404, {"invalidated": invalidated is not None})
        elif name == "stop":
            self._reply(200, {"stopping": True})
            threading.Thread(target=self.server.shutdown, daemon=True).start()
        else:
            self._error(404, f"no control {name!r}")


class ExternalServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, store: Store, hooks: Hooks):
        super().__init__(address, Handler)
        self.store = store
        self.hooks = hooks


def serve(state: Path, config: dict, clock_path: Path, port: int = 0, out=None) -> None:
    """Run the server until ``POST /_control/stop``: announce ``ready`` with the port, then each hook that fires."""
    out = out or sys.stdout
    lock = threading.Lock()

    def announce(record: dict) -> None:
        with lock:
            out.write(json.dumps({"kind": "hook", **record}, sort_keys=True) + "\n")
            out.flush()

    state.mkdir(parents=True, exist_ok=True)
    clock = Clock(clock_path)
    store = Store(state, config, clock)
    server = ExternalServer(("127.0.0.1", port), store, Hooks(store, announce))
    with lock:
        out.write(json.dumps({"kind": "ready", "port": server.server_address[1], "pid": os.getpid()}) + "\n")
        out.flush()
    try:
        server.serve_forever(poll_interval=0.05)
    finally:
        server.server_close()
        store.log.close()
        clock.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="fencesim's external system (an HTTP server over SQLite)")
    parser.add_argument("--state", required=True, type=Path, help="folder for external.sqlite and requests.jsonl")
    parser.add_argument("--config", required=True, type=Path, help="JSON: endpoints, fingerprints, key_retention_s")
    parser.add_argument("--clock", required=True, type=Path, help="the run's shared clock (a SQLite file)")
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: any free port)")
    args = parser.parse_args(argv)
    try:
        config = json.loads(args.config.read_text(encoding="utf-8"))
        serve(args.state, config, args.clock, args.port)
    except (OSError, ValueError) as error:
        sys.stdout.write(json.dumps({"kind": "error", "message": f"{type(error).__name__}: {error}"}) + "\n")
        sys.stdout.flush()
        return 4
    return 0


if __name__ == "__main__":
    sys.exit(main())
