"""fencesim's reference executor: applies step messages to a real git working tree.

It runs as its own process and speaks JSON lines: requests on stdin, records
on stdout (``docs/real-executor.md`` is the interface a team implements to
put its own executor under the same faults).  It uses the standard library
and the ``git`` command line only, so it can be read as a recipe:

* the workspace is a git working tree; every applied step is one commit, and
  the revision is the number of commits after the initial one;
* stamps and pre-hashes are computed from the files on disk (a file is text;
  a file of several named hunks is stored one ``[name, text]`` JSON array per
  line under the header ``#fencesim-hunks 1``);
* dedupe ``journal`` keys live in SQLite (WAL, ``synchronous=FULL``);
  ``memory`` keys in a dict that dies with the process;
* ``journal_write=atomic`` records the key as an *intent* row before the
  write and carries it in the commit message; recovery after a crash keeps an
  intent whose commit exists and drops one whose commit does not, so a write
  is durable exactly when its key is.  ``after_write`` inserts the key after
  the commit, and recovery does not look at the commits (the window the
  knob names);
* when the driver asks, it pauses at an instrumented point and waits to be
  killed (``SIGKILL``); on start it recovers from disk alone: stale git lock
  files removed, a torn write (a file replaced but not committed) discarded,
  intents resolved.

Deliver, in order: dedupe lookup (``deduped``), rev check
(``rejected:stale_rev``), hash check (``rejected:pre_hash``), otherwise
write, commit, journal, ``applied``.  A message without a stamp is stamped
here, at apply, from the disk (which makes the fence vacuous: the seed
code's behaviour, kept as a real code path).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

HASH_HEX_DIGITS = 16
WHOLE_FILE_HUNK = "_"
HUNKED_HEADER = "#fencesim-hunks 1\n"
KEY_TRAILER = "Fencesim-Key"
#: Where the executor can be told to pause (and be killed): the model's three, and three only a real
#: executor has -- the intent row written but nothing else, the file replaced but not committed, and
#: the commit made but its journal row not yet marked applied.
MODEL_POINTS = ("before_write", "after_write", "after_journal")
POINTS = ("before_write", "after_intent", "mid_write", "after_commit", "after_write", "after_journal")
JOURNAL_FILE = "journal.sqlite"


# -- the workspace on disk ---------------------------------------------------------------

def file_hash(hunks: dict[str, str]) -> str:
    """sha256 of the file's canonical JSON (hunk name -> text, keys sorted), 16 hex digits."""
    canonical = json.dumps(dict(sorted(hunks.items())), separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:HASH_HEX_DIGITS]


def hunk_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_HEX_DIGITS]


def encode_file(hunks: dict[str, str]) -> str:
    """A file's text on disk: a one-hunk ``_`` file is its text; otherwise one JSON array per hunk."""
    if list(hunks) == [WHOLE_FILE_HUNK]:
        return hunks[WHOLE_FILE_HUNK]
    return HUNKED_HEADER + "".join(json.dumps([name, text], ensure_ascii=False) + "\n"
                                   for name, text in hunks.items())


def decode_file(text: str) -> dict[str, str]:
    if not text.startswith(HUNKED_HEADER):
        return {WHOLE_FILE_HUNK: text}
    hunks = {}
    for line in text[len(HUNKED_HEADER):].split("\n"):  # not splitlines(): U+0085 and kin are text here
        if line:
            name, body = json.loads(line)
            hunks[name] = body
    return hunks


def read_file(repo: Path, path: str) -> dict[str, str]:
    with open(repo / path, encoding="utf-8", newline="") as handle:
        return decode_file(handle.read())


def write_file(repo: Path, path: str, hunks: dict[str, str]) -> None:
    """Replace the file as a unit: a temporary file, fsync, rename, fsync of the directory."""
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.fencesim-tmp")
    with open(temporary, "w", encoding="utf-8", newline="") as handle:
        handle.write(encode_file(hunks))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, target)
    directory = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def revision(repo: Path) -> int:
    """The workspace revision: commits after the initial one."""
    return int(git(repo, "rev-list", "--count", "HEAD")) - 1


# -- the executor ----------------------------------------------------------------------------

class Executor:
    def __init__(self, repo: Path, state: Path, protocol: dict[str, str], out):
        self.repo, self.state, self.out = repo, state, out
        self.fence = protocol.get("fence", "none")
        self.dedupe = protocol.get("dedupe", "off")
        self.atomic = protocol.get("journal_write", "atomic") == "atomic"
        self.memory: dict[str, str] = {}
        self.pause_at: str | None = None
        self.db: sqlite3.Connection | None = None
        if self.dedupe == "journal":
            self.db = sqlite3.connect(state / JOURNAL_FILE, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            self.db.execute("CREATE TABLE IF NOT EXISTS journal (key TEXT PRIMARY KEY, step TEXT NOT NULL, "
                            "base_rev INTEGER NOT NULL, state TEXT NOT NULL)")

    def emit(self, record: dict) -> None:
        self.out.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.out.flush()

    # -- recovery: from disk alone --------------------------------------------------------

    def recover(self) -> dict:
        git_dir = self.repo / ".git"
        locks = sorted(str(p.relative_to(git_dir)) for p in git_dir.rglob("*.lock"))
        for lock in locks:
            (git_dir / lock).unlink()
        torn = git(self.repo, "status", "--porcelain", "--untracked-files=all").strip()
        if torn:
            git(self.repo, "reset", "-q", "--hard", "HEAD")
            git(self.repo, "clean", "-q", "-f", "-d")
        completed, dropped = [], []
        if self.db is not None:
            intents = [row[0] for row in self.db.execute("SELECT key FROM journal WHERE state = 'intent' ORDER BY key")]
            if intents:
                committed = self._committed_keys()
                for key in intents:
                    if key in committed:
                        self.db.execute("UPDATE journal SET state = 'applied' WHERE key = ?", (key,))
                        completed.append(key)
                    else:
                        self.db.execute("DELETE FROM journal WHERE key = ?", (key,))
                        dropped.append(key)
        return {"locks_removed": locks, "torn_write_discarded": torn.splitlines(),
                "intents_completed": completed, "intents_dropped": dropped, "journal_keys": self._keys()}

    def _committed_keys(self) -> set[str]:
        keys = set()
        for line in git(self.repo, "log", "--format=%B").splitlines():
            if line.startswith(KEY_TRAILER + ": "):
                keys.add(line[len(KEY_TRAILER) + 2:].strip())
        return keys

    def _keys(self) -> list[str]:
        if self.db is not None:
            return [row[0] for row in self.db.execute("SELECT key FROM journal WHERE state = 'applied' ORDER BY key")]
        return sorted(self.memory)

    # -- dedupe store -----------------------------------------------------------------------

    def _seen(self, key: str) -> bool:
        if self.db is not None:  # dedupe "journal"
            return self.db.execute("SELECT 1 FROM journal WHERE key = ? AND state = 'applied'",
                                   (key,)).fetchone() is not None
        if self.dedupe == "memory":
            return key in self.memory
        return False

    def _store(self, key: str, step: str, base_rev: int, state: str) -> None:
        if self.db is not None:  # dedupe "journal"
            self.db.execute("INSERT INTO journal (key, step, base_rev, state) VALUES (?, ?, ?, ?) "
                            "ON CONFLICT(key) DO UPDATE SET state = excluded.state", (key, step, base_rev, state))
        elif self.dedupe == "memory" and state == "applied":
            self.memory[key] = "applied"

    # -- instrumented points ------------------------------------------------------------------

    def point(self, name: str) -> None:
        """Pause here if the driver asked: say so, then wait to be killed."""
        if self.pause_at != name:
            return
        self.emit({"kind": "paused", "point": name})
        while sys.stdin.readline():
            pass  # nothing the driver sends resumes a paused executor
        sys.exit(0)  # the driver went away without killing us

    # -- delivery -------------------------------------------------------------------------------

    def deliver(self, message: dict, pause_at: str | None) -> None:
        self.pause_at = pause_at
        step, path, patch = message["step"], message["path"], message["patch"]
        rev = revision(self.repo)
        before = read_file(self.repo, path)
        hash_before = file_hash(before)
        stamped_rev, stamped_hash = message.get("stamped_base_rev"), message.get("stamped_pre_hash")
        if stamped_rev is None:
            stamped_rev = rev  # no stamp: read it here, at apply
        if stamped_hash is None:
            stamped_hash = hash_before
        key = f"{step}@{stamped_rev}"
        self.emit({"kind": "read", "fence": self.fence, "dedupe": self.dedupe, "key": key,
                   "stamped_base_rev": stamped_rev, "stamped_pre_hash": stamped_hash, "rev_at_apply": rev,
                   "hash_before": hash_before,
                   "hunks_before": {h: hunk_hash(before.get(h, "")) for h in sorted(patch)}})
        if self._seen(key):
            verdict = "deduped"
        elif self.fence != "none" and stamped_rev != rev:
            verdict = "rejected:stale_rev"
        elif self.fence != "none" and stamped_hash != hash_before:
            verdict = "rejected:pre_hash"
        else:
            verdict = "applied"
        if verdict != "applied":
            self.point("before_write")
            self.emit({"kind": "verdict", "verdict": verdict})
            self.point("after_write")
            self.point("after_journal")
            self.emit({"kind": "answer", "verdict": verdict})
            return
        self.point("before_write")
        keyed = self.dedupe != "off"
        if keyed and self.atomic:
            self._store(key, step, stamped_rev, "intent")
            self.point("after_intent")
        after = dict(before)
        after.update(patch)
        write_file(self.repo, path, after)
        self.point("mid_write")
        git(self.repo, "commit", "-q", "--no-verify", "--allow-empty", "-m", f"fencesim: apply {step}",
            "-m", f"{KEY_TRAILER}: {key}", "--", path)
        commit = git(self.repo, "rev-parse", "--short=12", "HEAD").strip()
        self.emit({"kind": "wrote", "verdict": "applied", "hash_after": file_hash(read_file(self.repo, path)),
                   "rev_after": revision(self.repo), "commit": commit})
        self.point("after_commit")
        if keyed and self.atomic:
            self._store(key, step, stamped_rev, "applied")
            self.emit({"kind": "journaled", "journal_key": key})
        self.point("after_write")
        if keyed and not self.atomic:
            self._store(key, step, stamped_rev, "applied")
            self.emit({"kind": "journaled", "journal_key": key})
        self.point("after_journal")
        self.emit({"kind": "answer", "verdict": verdict})


def main() -> int:
    start = json.loads(sys.stdin.readline() or "null")
    if not isinstance(start, dict) or start.get("op") != "start":
        sys.stderr.write("the first request must be {\"op\": \"start\", ...}\n")
        return 4
    out = sys.stdout
    try:
        executor = Executor(Path(start["repo"]), Path(start["state"]), start.get("protocol", {}), out)
        executor.emit({"kind": "ready", **executor.recover()})
        for line in sys.stdin:
            request = json.loads(line)
            if request.get("op") == "deliver":
                executor.deliver(request["message"], request.get("pause_at"))
            elif request.get("op") == "stop":
                return 0
            else:
                raise ValueError(f"unknown request {request.get('op')!r}")
    except Exception as error:  # the driver reports it; a real executor would log it
        out.write(json.dumps({"kind": "error", "message": f"{type(error).__name__}: {error}"}) + "\n")
        out.flush()
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
