"""What the events of one workspace history must agree on with each other (``HistorySchema.facts``).

Each event of a recorded history can be well formed while the history as a whole is impossible: a
fence that changes in the middle of the run, a delivery with no verdict although nothing cut it short,
a journal key that names another step, a write whose revision does not follow the workspace's last or
whose "before" hash is not what the file's last write left.  The checks would judge such a history as
if it had happened; so ``fencesim check`` refuses it, naming the two events (:mod:`sim.core.reconcile`).

The facts, as the model keeps them (``docs/workspace.md``):

* one protocol per run: ``fence``, ``dedupe``, ``pipeline``, ``rev_scope``, ``drift_scope``, ``checkpoint``
  and ``journal_gc`` take one value on every event that records them;
* every delivery that was not cut short before any write records a verdict; an ``applied`` verdict
  records its write (``rev_after``, ``hash_after``), another verdict records none, and a skipped event
  records neither a verdict nor a write;
* a journal key (``STEP@REV``) is its own step's;
* the workspace revision (per file under ``rev_scope=file``) and each file's hash, replayed write by
  write: what an event reads (``rev``, ``rev_at_apply``, ``hash_current``, ``hash_before``) is what the
  last write left, and each write's ``rev_after`` is one more than the revision it replaced;
* the digests a record holds are those of the hunks its patch names (``patch_hunks``);
* a hunk a one-hunk write changed (the file's hash changed) is not what it was until something writes it
  again: a later delivery cannot read its old digest;
* one content, one set of hunk digests: a file's hash fixes the digests of its hunks, wherever both are
  recorded (what a delivery read, what a step's author expected), and a one-hunk file's digest its hash;
* a step's copies carry its stamp: every copy of one step sent in one round (a dispatch, its retries)
  carries one stamped base rev and pre-hash, and a delivery applies that stamp or the one read at apply;
* order: nothing before the plan, a delivery only of a step already dispatched, an ack only of a verdict
  already given.
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

from sim.core.reconcile import TIME_ORDER, Contradiction, Determines, Facts, OnePerRun, Precedes, Rule
from sim.core.values import shown
from sim.families.workspace.content import hunk_hash

#: Knobs a workspace history records on its events: one value per run each.
RUN_KNOBS = {"fence": "the fence", "dedupe": "the dedupe mode", "pipeline": "pipelining",
             "rev_scope": "the revision scope", "drift_scope": "the drift scope",
             "journal_gc": "the journal's collection"}
#: Crash points before any write: a delivery cut short there rightly records no verdict.
BEFORE_ANY_WRITE = ("before_write", "after_intent", "mid_write")
#: Fields that record a write to the workspace.
WRITE_FIELDS = ("rev_after", "hash_after")
#: Events that write a file (with ``rev_after`` and ``hash_after``), besides an applied delivery.
WRITERS = frozenset({"human_edit", "tests_fail"})
#: The digest of a hunk a file does not have (its text is empty): writing it may leave the file's other
#: hunks, and this digest, as they were.
EMPTY_HUNK = hunk_hash("")


def _done(event) -> bool:
    return not event.fields.get("skipped")


def _verdicts(history: Sequence[Any]) -> Iterator[Contradiction]:
    """A delivery's verdict and its write agree; a skipped event did nothing.  A delivery without a verdict
    contradicts the history only where its recorder records verdicts (some delivery has one)."""
    records_verdicts = any(e.event == "deliver" and "verdict" in e.fields for e in history)
    for event in history:
        fields = event.fields
        if not _done(event):
            written = [n for n in ("verdict",) + WRITE_FIELDS + ("journal_key",) if n in fields]
            if written:
                yield Contradiction("skipped and applied", event, None,
                                    f"it is recorded skipped (it did not happen) yet records {', '.join(written)}")
            continue
        if event.event != "deliver":
            continue
        verdict, point = fields.get("verdict"), fields.get("preempted")
        if verdict is None:
            if point not in BEFORE_ANY_WRITE and records_verdicts:
                yield Contradiction("a delivery has a verdict", event, None,
                                    f"delivery of {shown(fields.get('step'))} records no verdict although nothing "
                                    "cut it short before its write (preempted: "
                                    f"{shown(point) if point else 'no'})")
            elif any(n in fields for n in WRITE_FIELDS):
                yield Contradiction("a delivery has a verdict", event, None,
                                    f"delivery of {shown(fields.get('step'))} records a write but no verdict")
            continue
        wrote = [n for n in WRITE_FIELDS if n in fields]
        if verdict == "applied" and point in BEFORE_ANY_WRITE:
            yield Contradiction("applied after a crash before its write", event, None,
                                f"verdict applied although the executor died {shown(point)}")
        elif verdict != "applied" and (wrote or "journal_key" in fields):
            yield Contradiction("only an applied delivery writes", event, None,
                                f"verdict {shown(verdict)} yet it records a write "
                                f"({', '.join(wrote + (['journal_key'] if 'journal_key' in fields else []))})")


def _journal_keys(history: Sequence[Any]) -> Iterator[Contradiction]:
    """A journal key ``STEP@REV`` names the step of the event that records it."""
    for event in history:
        key, step = event.fields.get("journal_key"), event.fields.get("step")
        if not isinstance(key, str) or not isinstance(step, str) or "@" not in key or not _done(event):
            continue
        owner = key.rsplit("@", 1)[0]
        if owner != step:
            yield Contradiction("a journal entry is its own step's", event, None,
                                f"journal key {shown(key)} is step {shown(owner)}'s, recorded for step {shown(step)}")


class _Workspace:
    """The revisions and hashes a history's writes leave, each with the event that set it."""

    def __init__(self) -> None:
        self.rev: dict[Any, tuple[int, Any]] = {}
        self.hash: dict[Any, tuple[str, Any]] = {}
        self.file_scope = False

    def scope(self, path: Any) -> Any:
        return path if self.file_scope else None

    def read_rev(self, event, name: str, scope: Any) -> Contradiction | None:
        value = event.fields.get(name)
        if not isinstance(value, int) or isinstance(value, bool):
            return None
        known = self.rev.get(scope)
        if known is None:
            self.rev[scope] = (value, event)
            return None
        if known[0] != value:
            where = f" of {shown(scope)}" if scope is not None else ""
            return Contradiction("a revision continues the last write", known[1], event,
                                 f"the revision{where} is {known[0]} after event {known[1].index}, but event "
                                 f"{event.index} reads {name} {value}")
        return None

    def read_hash(self, event, name: str) -> Contradiction | None:
        path, value = event.fields.get("path"), event.fields.get(name)
        if not isinstance(path, str) or not isinstance(value, str):
            return None
        known = self.hash.get(path)
        if known is None:
            self.hash[path] = (value, event)
            return None
        if known[0] != value:
            return Contradiction("a hash continues the file's last write", known[1], event,
                                 f"{shown(path)} is {shown(known[0])} after event {known[1].index}, but event "
                                 f"{event.index} reads {name} {shown(value)}")
        return None

    def forget(self, event, scope: Any) -> None:
        """A write that does not record its revision or hash leaves them unknown (the next read tells)."""
        if "rev_after" not in event.fields:
            self.rev.pop(scope, None)
        path = event.fields.get("path")
        if "hash_after" not in event.fields:
            self.hash.pop(path, None)

    def write(self, event, scope: Any, base: Any) -> Contradiction | None:
        fields = event.fields
        after, path, digest = fields.get("rev_after"), fields.get("path"), fields.get("hash_after")
        if isinstance(after, int) and not isinstance(after, bool):
            known = self.rev.get(scope)
            before = known[0] if known is not None else base
            if isinstance(before, int) and after != before + 1:
                return Contradiction("a write's revision follows the last", known[1] if known else event, event,
                                     f"rev_after {after} does not follow revision {before}"
                                     + (f" (left by event {known[1].index})" if known else ""))
            self.rev[scope] = (after, event)
        if isinstance(path, str) and isinstance(digest, str):
            self.hash[path] = (digest, event)
        return None


def _revisions(history: Sequence[Any]) -> Iterator[Contradiction]:
    """Replay the revisions and hashes write by write (see the module docstring)."""
    state = _Workspace()
    # one revision scope per run: known before the first event, which need not record it (a human edit)
    state.file_scope = any(e.fields.get("rev_scope") == "file" for e in history)
    for event in history:
        if not _done(event):
            continue
        fields, name = event.fields, event.event
        path = fields.get("path")
        found: list[Contradiction | None] = []
        if name == "dispatch" and not fields.get("held") and "verdict" not in fields:
            found += [state.read_rev(event, "rev", state.scope(path)), state.read_hash(event, "hash_current")]
        elif name == "deliver":
            found += [state.read_rev(event, "rev_at_apply", state.scope(path)),
                      state.read_hash(event, "hash_before")]
            if fields.get("verdict") == "applied":
                found.append(state.write(event, state.scope(path), fields.get("rev_at_apply")))
                state.forget(event, state.scope(path))
        elif name in WRITERS:
            if name == "tests_fail":
                found.append(state.read_hash(event, "hash_before"))
            found.append(state.write(event, state.scope(path), None))
            state.forget(event, state.scope(path))
        for contradiction in found:
            if contradiction is not None:
                yield contradiction
                return


def _stamps(history: Sequence[Any]) -> Iterator[Contradiction]:
    """A delivery applies the stamp its step's copies carry, or the one it read at apply (``stamp_at=apply``)."""
    carried: dict[tuple, tuple[tuple, Any]] = {}
    for event in history:
        fields = event.fields
        if not _done(event) or "step" not in fields:
            continue
        stamp = (fields.get("stamped_base_rev"), fields.get("stamped_pre_hash"))
        key = (fields["step"], fields.get("rebased", 0))
        if event.event in ("dispatch", "retry") and stamp != (None, None) and "verdict" not in fields:
            carried.setdefault(key, (stamp, event))
        elif event.event == "deliver" and stamp != (None, None) and key in carried:
            sent, by = carried[key]
            read = (fields.get("rev_at_apply"), fields.get("hash_before"))
            if stamp != sent and stamp != read:
                yield Contradiction("a delivery applies its message's stamp", by, event,
                                    f"{shown(fields['step'])} was sent stamped {shown(list(sent))} but its delivery "
                                    "records "
                                    f"the stamp {shown(list(stamp))}, neither that nor what it read at apply")
                return


#: (hash field, hunk digests field): two records of one content (what a delivery read; what a step's author
#: expected it to replace).
CONTENT_PAIRS = (("hash_before", "hunks_before"), ("expected_prior_hash", "expected_prior_hunks"))


def _contents(history: Sequence[Any]) -> Iterator[Contradiction]:
    """One content, one set of hunk digests: wherever a file's hash is recorded beside digests of its hunks
    (what a delivery read, what a step's author expected), one hash gives each hunk one digest; and a file of
    one hunk (``_``) is that hunk, so its digest gives one hash."""
    digests: dict[tuple, tuple[str, Any]] = {}
    whole: dict[tuple, tuple[str, Any]] = {}
    for event in history:
        fields = event.fields
        path = fields.get("path")
        if not _done(event) or not isinstance(path, str):
            continue
        named = fields.get("patch_hunks")
        for _, hunks_field in CONTENT_PAIRS:
            hunks = fields.get(hunks_field)
            if isinstance(named, list) and isinstance(hunks, dict) and sorted(hunks) != sorted(named):
                yield Contradiction("digests of the hunks the patch names", event, None,
                                    f"{hunks_field} holds {shown(sorted(hunks))} but the patch names "
                                    f"{shown(sorted(named))}")
                return
        for hash_field, hunks_field in CONTENT_PAIRS:
            digest_of, hunks = fields.get(hash_field), fields.get(hunks_field)
            if not isinstance(digest_of, str) or not isinstance(hunks, dict):
                continue
            for hunk, digest in hunks.items():
                known = digests.setdefault((path, digest_of, hunk), (digest, event))
                if known[0] != digest:
                    yield Contradiction("one content, one set of hunk digests", known[1], event,
                                        f"{shown(path)} at hash {shown(digest_of)} has hunk {shown(hunk)} digest "
                                        f"{shown(known[0])} at event {known[1].index} but {shown(digest)} at event "
                                        f"{event.index}")
                    return
            if list(hunks) == ["_"]:
                known = whole.setdefault((path, hunks["_"]), (digest_of, event))
                if known[0] != digest_of:
                    yield Contradiction("one content, one hash", known[1], event,
                                        f"{shown(path)} (one hunk, digest {shown(hunks['_'])}) has hash "
                                        f"{shown(known[0])} at "
                                        f"event {known[1].index} but {shown(digest_of)} at event {event.index}")
                    return


def _hunks_written(history: Sequence[Any]) -> Iterator[Contradiction]:
    """A hunk a write changed is not what it was, until something else writes it: an applied delivery whose
    patch names one hunk and whose file hash changed changed that hunk, so a later delivery to the file, with
    no write of that hunk (nor any human edit or restore of the file) between, cannot read the hunk's digest
    from before that write."""
    changed: dict[str, dict[str, tuple[str, Any]]] = {}
    for event in history:
        fields, path = event.fields, event.fields.get("path")
        if not _done(event) or not isinstance(path, str):
            continue
        if event.event in WRITERS:
            changed.pop(path, None)
            continue
        if event.event != "deliver":
            continue
        before = fields.get("hunks_before")
        before = before if isinstance(before, dict) else {}
        for hunk, digest in before.items():
            known = changed.get(path, {}).get(hunk)
            if known is not None and known[0] == digest:
                yield Contradiction("a hunk a write changed is not what it was", known[1], event,
                                    f"event {known[1].index} changed hunk {shown(hunk)} of {shown(path)} from digest "
                                    f"{shown(digest)}, and nothing wrote it since, but event {event.index} reads "
                                    f"it as {shown(digest)}")
                return
        named = fields.get("patch_hunks")
        if fields.get("verdict") != "applied" or not isinstance(named, list):
            continue
        for hunk in named:
            changed.get(path, {}).pop(hunk, None)
        hunk = named[0] if len(named) == 1 and isinstance(named[0], str) else None
        old = before.get(hunk) if hunk is not None else None
        if hunk is not None and isinstance(old, str) and old != EMPTY_HUNK \
                and isinstance(fields.get("hash_after"), str) and fields.get("hash_after") != fields.get("hash_before"):
            changed.setdefault(path, {})[hunk] = (old, event)


FACTS = Facts((
    TIME_ORDER,
    *(OnePerRun(name, what) for name, what in RUN_KNOBS.items()),
    Rule("verdicts", _verdicts),
    Rule("journal keys", _journal_keys),
    Determines(("journal_key",), ("step",), "one journal key, one step"),
    Determines(("step",), ("path",), "one step, one file"),
    Rule("contents", _contents),
    Determines(("step", "copy"), ("stamped_base_rev", "stamped_pre_hash"), "one copy, one stamp",
               events=frozenset({"retry"})),
    Rule("stamps", _stamps),
    Precedes(frozenset({"dispatch", "deliver", "retry", "duplicate", "ack", "lose_ack", "replan", "journal_remove"}),
             frozenset({"plan"}), (), "nothing before the plan"),
    Precedes(frozenset({"deliver", "retry", "duplicate"}), frozenset({"dispatch"}), ("step",),
             "a step is dispatched before it is delivered", needs_one=True,
             when=lambda e: "step" in e.fields),
    Precedes(frozenset({"ack", "lose_ack"}), frozenset({"deliver", "dispatch"}), ("step", "verdict"),
             "an answer follows its verdict", needs_one=True),
    Rule("revisions", _revisions),
    Rule("hunks written", _hunks_written),
))
