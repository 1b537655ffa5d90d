"""The real external system's fault hooks: armed by the harness, each fires once at its request.

For the Nth request of a transition, at ``before_store`` (dispatched, not committed) or ``after_store``
(committed, no reply yet): SIGKILL the calling worker, SIGSTOP it (a frozen owner; ``thaw`` sends
SIGCONT), hold the request until the harness releases it (a delayed request or reply), send a copy of it
(a duplicate on the network), lose the reply, or drop the request.  Each hook that fires is announced on
stdout, one JSON line, so the harness synchronises on events, never on sleeps; a hold is bounded by
``HOLD_LIMIT_S``.  Standard library only.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:  # the checker reads the package import
    from .external_store import Store
else:  # run beside the server script (python -I external_system.py): the standard library only
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from external_store import Store

STAGES = ("before_store", "after_store")
ACTIONS = ("kill_caller", "freeze_caller", "hold", "duplicate", "lose_reply", "drop")
#: Seconds a held request waits for the harness's release before it goes on by itself (logged ``hold_expired``).
HOLD_LIMIT_S = 120.0


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
