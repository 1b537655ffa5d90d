"""fencesim's real external system: a git host and the other endpoints a workflow names, over HTTP and SQLite.

It runs as its own process (``python -I external_system.py --state DIR --config FILE``), uses the
standard library only, and stands in for everything a durable agent task mutates: branches, pull
requests, previews, releases, announcements, ledger entries, CI runs, generic objects.  Each
endpoint is declared by the workflow's transition it serves (its *effect class*, whether it honours
idempotency ``keys``, what it can be queried by), so the same server answers the seed's saga and a
user's own workflow.  ``docs/real-runtimes.md`` is the interface.

What a request does (:mod:`sim.real.external_store`, which holds the objects, keys and log), exactly as
the model's external system (``sim/families/effects/external.py``):

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
import json
import os
import select
import signal
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlparse

if TYPE_CHECKING or __package__:  # the checker reads the package import
    from .external_hooks import ACTIONS, HOLD_LIMIT_S, STAGES, Hooks
    from .external_store import (
        DATABASE_FILE,
        EFFECT_CLASSES,
        ENDPOINT_FIELDS,
        KEY_RETENTION_DEFAULT_S,
        KEYS_BY_CLASS,
        LOG_FILE,
        OBJECT_KINDS,
        RECONCILE_BY,
        REQUEST_TIMEOUT_S,
        Clock,
        Endpoint,
        Store,
        fingerprint_of,
    )
else:  # run as a script (python -I external_system.py): the standard library and the modules beside it only
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from external_hooks import ACTIONS, HOLD_LIMIT_S, STAGES, Hooks
    from external_store import (
        DATABASE_FILE,
        EFFECT_CLASSES,
        ENDPOINT_FIELDS,
        KEY_RETENTION_DEFAULT_S,
        KEYS_BY_CLASS,
        LOG_FILE,
        OBJECT_KINDS,
        RECONCILE_BY,
        REQUEST_TIMEOUT_S,
        Clock,
        Endpoint,
        Store,
        fingerprint_of,
    )

#: The names the harness and the tests read from here (they live in the modules beside it).
__all__ = ["ACTIONS", "DATABASE_FILE", "EFFECT_CLASSES", "ENDPOINT_FIELDS", "HOLD_LIMIT_S", "KEY_RETENTION_DEFAULT_S",
           "KEYS_BY_CLASS", "LOG_FILE", "MAX_BODY_BYTES", "OBJECT_KINDS", "RECONCILE_BY", "REQUEST_TIMEOUT_S", "STAGES",
           "Clock", "Endpoint", "ExternalServer", "Handler", "Hooks", "Store", "fingerprint_of", "main", "serve"]

#: The largest request body accepted, in bytes.
MAX_BODY_BYTES = 1 << 20


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
