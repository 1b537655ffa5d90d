"""The finder's quality: planted protocol bugs are found at the default fuzz budget and shrunk to their
shortest order.

Each bug is a variant a user could write by mistake -- every weakening value of every knob of both
families (a knob value ranked below its knob's strongest), and code-level mutants of the protocols.  For
each, the same seeds are swept under a base protocol that does not violate the bug's invariant and under
the bugged one; the bug is *found* when the bugged sweep violates the invariant, and *shrunk well* when the
minimal order is proved shortest (exhaustive search finds no shorter one; for the workspace family a
separate exhaustive search confirms the length).  Each bug is measured once per session (whichever test
asks first); one test prints the detection rate over every bug and fails below 100%, in any order and on
its own; another enumerates the knob tables, so a new knob without a planted bug fails the suite.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from typing import Any, Iterator

import pytest

from sim.families.effects.family import EffectsFamily
from sim.families.effects.runtime import Runtime
from sim.families.workspace.family import WorkspaceFamily
from sim.families.workspace.machine import WorkspaceMachine
from sim.registry import FAMILIES
from sim.search.exhaustive import ExploreOptions, explore
from sim.search.shrink import shrink
from sim.search.sweep import sweep

SEEDS = 1000  # the default fuzz budget (fencesim fuzz --seeds)


# -- code-level mutants ---------------------------------------------------------------------------------

class RetryRestamps(WorkspaceMachine):
    """The client re-stamps a retry with the current rev and hash (the seed code's stamp, on retries)."""

    def retry(self, state, event):
        state, records = super().retry(state, event)
        message = state.requests[-1]
        rev, pre = self.stamp(state, message.step, self.hash(state, message.step.path))
        records[0][2].update(stamped_base_rev=rev, stamped_pre_hash=pre)
        message = message._replace(stamped_base_rev=rev, stamped_pre_hash=pre)
        return state._replace(requests=state.requests[:-1] + (message,)), records


class JournalInTheProcess(WorkspaceMachine):
    """The journal lives in the executor process: a preemption empties it (the seed's "trap")."""

    def dying(self, state):
        return dict(super().dying(state), journal=frozenset())


@contextlib.contextmanager
def knobs_within(runtime: Runtime, **knobs: Any) -> Iterator[None]:
    """The runtime's protocol with ``knobs`` changed for one operation (its public ``protocol``)."""
    real = runtime.protocol
    runtime.protocol = real.with_knobs(**knobs)
    try:
        yield
    finally:
        runtime.protocol = real


class TimeoutRecordedFailed(Runtime):
    """The worker records every timeout as failed, whatever on_timeout says."""

    def timeout(self, worker, task, name):
        with knobs_within(self, on_timeout="failed"):
            return super().timeout(worker, task, name)


class DispatchNotFenced(Runtime):
    """The event log fences every append but the dispatch record, so a zombie still calls the external system."""

    def worker_append(self, worker, task, event, **fields):
        if event != "dispatched":
            return super().worker_append(worker, task, event, **fields)
        with knobs_within(self, lease_fence="off"):
            return super().worker_append(worker, task, event, **fields)


class ReadAgainOnResume(Runtime):
    """A worker that resumes reads again and acts on what the world holds now, whatever pin_reads says."""

    def _acts_on(self, worker, task, wt, transition):
        with knobs_within(self, pin_reads="off"):
            return super()._acts_on(worker, task, wt, transition)


@dataclasses.dataclass(frozen=True)
class Bug:
    name: str
    workload: str
    base: str
    bugged: str
    invariant: str
    knob: tuple[str, str] | None = None  # (knob, weakened value) the bug plants
    machine: type | None = None  # a workspace machine with a planted transition (the family's documented seam)
    runtime: type | None = None  # an effects runtime with a planted operation (the family's documented seam)

    def bugged_family(self, family):
        if self.machine is not None:
            return WorkspaceFamily(machine=self.machine)
        if self.runtime is not None:
            return EffectsFamily(runtime=self.runtime)
        return family


WS_BASE = "step-dedupe,drift_check=reject"
FX_BASE = "keyed-fingerprint-reconcile,irreversible_keys=on"
BUGS = [
    # workspace knob weakenings
    Bug("no fence", "seed-fuzz", WS_BASE, WS_BASE + ",fence=none", "lost_update", knob=("fence", "none")),
    Bug("stamp read at apply", "seed-fuzz", WS_BASE, WS_BASE + ",stamp_at=apply", "lost_update",
        knob=("stamp_at", "apply")),
    Bug("no dedupe", "retries", "none,dedupe=journal", "none", "duplicate_effect", knob=("dedupe", "off")),
    Bug("dedupe in memory", "retries", "none,dedupe=journal", "none,dedupe=memory", "duplicate_effect",
        knob=("dedupe", "memory")),
    Bug("journal after the write", "seed-fuzz", WS_BASE, WS_BASE + ",journal_write=after_write", "journal_loss",
        knob=("journal_write", "after_write")),
    Bug("no drift check", "seed-fuzz", WS_BASE, "step-dedupe", "lost_update", knob=("drift_check", "off")),
    Bug("no overlap check", "retries", "step-dedupe,pipeline=on,overlap_check=on", "step-dedupe,pipeline=on",
        "lost_update", knob=("overlap_check", "off")),
    Bug("pipelined dispatch", "retries", "step-dedupe", "step-dedupe,pipeline=on", "lost_update",
        knob=("pipeline", "on")),
    Bug("journal dropped eagerly", "journal", "none,dedupe=journal", "none,dedupe=journal,journal_gc=eager",
        "duplicate_effect", knob=("journal_gc", "eager")),
    Bug("journal dropped at session end", "journal", "none,dedupe=journal",
        "none,dedupe=journal,journal_gc=session_end", "duplicate_effect", knob=("journal_gc", "session_end")),
    # effects knob weakenings
    Bug("no idempotency key", "effects-saga", FX_BASE, FX_BASE + ",idempotency=none", "duplicate_effect",
        knob=("idempotency", "none")),
    Bug("key without fingerprint", "effects-saga", FX_BASE, FX_BASE + ",idempotency=key", "fingerprint_conflict",
        knob=("idempotency", "key")),
    Bug("timeout taken as failure", "effects-saga", FX_BASE, FX_BASE + ",on_timeout=failed", "unknown_as_failed",
        knob=("on_timeout", "failed")),
    Bug("no reconciliation", "effects-release", "keyed-fingerprint-reconcile",
        "keyed-fingerprint-reconcile,reconcile=off", "duplicate_effect", knob=("reconcile", "off")),
    Bug("no compensation", "effects-saga", FX_BASE, FX_BASE + ",compensation=off", "unresolved_compensation",
        knob=("compensation", "off")),
    Bug("approval that goes ahead", "effects-saga", FX_BASE, FX_BASE + ",approval=off", "unapproved_irreversible",
        knob=("approval", "off")),
    Bug("optimistic checkpoint", "effects-saga", FX_BASE, FX_BASE + ",checkpoint=optimistic", "unverified_checkpoint",
        knob=("checkpoint", "optimistic")),
    Bug("new code on old tasks", "effects-saga", FX_BASE, FX_BASE + ",version_policy=none", "version_mismatch",
        knob=("version_policy", "none")),
    Bug("no lease fence", "effects-zombie", "keyed-fingerprint-reconcile",
        "keyed-fingerprint-reconcile,lease_fence=off", "split_outcome", knob=("lease_fence", "off")),
    Bug("trusting receipts", "effects-saga", FX_BASE, FX_BASE + ",receipt_check=trusting", "false_receipt",
        knob=("receipt_check", "trusting")),
    Bug("keyless release", "effects-saga", FX_BASE, "keyed-fingerprint-reconcile", "duplicate_effect",
        knob=("irreversible_keys", "off")),
    Bug("keys kept 5 s", "effects-saga", FX_BASE, FX_BASE + ",key_retention=5", "duplicate_effect",
        knob=("key_retention", "5")),
    Bug("keys kept 30 s", "effects-saga", FX_BASE, FX_BASE + ",key_retention=30", "duplicate_effect",
        knob=("key_retention", "30")),
    Bug("ledger without dedupe", "usage-charge", "keyed-fingerprint-reconcile",
        "keyed-fingerprint-reconcile,ledger_dedupe=off", "duplicate_effect", knob=("ledger_dedupe", "off")),
    Bug("unpinned reads", "pinned-dependencies", "keyed-fingerprint-reconcile",
        "keyed-fingerprint-reconcile,pin_reads=off", "version_mismatch", knob=("pin_reads", "off")),
    # code-level mutants
    Bug("retry re-stamps", "retries", "step-dedupe", "step-dedupe", "duplicate_effect", machine=RetryRestamps),
    Bug("journal in the process", "retries", "none,dedupe=journal", "none,dedupe=journal", "duplicate_effect",
        machine=JournalInTheProcess),
    Bug("timeout recorded failed", "effects-release", "keyed-fingerprint-reconcile", "keyed-fingerprint-reconcile",
        "unknown_as_failed", runtime=TimeoutRecordedFailed),
    Bug("read again on resume", "pinned-dependencies", "keyed-fingerprint-reconcile", "keyed-fingerprint-reconcile",
        "version_mismatch", runtime=ReadAgainOnResume),
    Bug("dispatch escapes the fence", "effects-zombie", "keyed-fingerprint-reconcile", "keyed-fingerprint-reconcile",
        "duplicate_effect", runtime=DispatchNotFenced),
]


@dataclasses.dataclass(frozen=True)
class Measured:
    """What the finder did with one bug."""

    bug: str
    invariant: str
    base_violations: int  # runs of the base protocol violating the invariant (must be 0)
    found: bool  # the bugged sweep violated the invariant
    length: int | None = None  # events of the shrunk order
    shortest_proved: bool = False
    reason: str = ""  # why shrinking stopped
    shortest: int | None = None  # the shortest violating order (exhaustive search)


@functools.cache
def _base_sweep(workload_name: str, base: str):
    """The base protocol's sweep of a workload (several bugs share one: the same seeds, the same code)."""
    workload = FAMILIES.load_workload(workload_name)
    summary, _ = sweep(FAMILIES.family_for(workload), workload, [base], SEEDS, workers=1)
    return summary


@functools.cache
def measure(bug: Bug) -> Measured:
    """Sweep the base and the bugged protocol on the same seeds, shrink what the bugged one found."""
    workload = FAMILIES.load_workload(bug.workload)
    family = FAMILIES.family_for(workload)
    base_violations = _base_sweep(bug.workload, bug.base).tallies[bug.base].by_invariant[bug.invariant]
    family = bug.bugged_family(family)
    protocol = family.parse_protocol(bug.bugged)
    swept, _ = sweep(family, workload, [protocol], SEEDS, workers=1)
    # the bug's invariant, wherever it broke first (a sweep keeps one first order per finding)
    first = min((f for f in swept.found.values() if f.protocol == protocol.label and f.invariant == bug.invariant),
                key=lambda f: f.run, default=None)
    if first is None:
        return Measured(bug.name, bug.invariant, base_violations, False)
    shrunk = shrink(family, workload, protocol, first.order, bug.invariant)
    shortest = len(shrunk.events)
    if family.name == "workspace" and len(shrunk.events) <= 8:
        proof = explore(family, workload, protocol, ExploreOptions(max_events=len(shrunk.events), only=bug.invariant))
        shortest = proof.shortest[bug.invariant]
    return Measured(bug.name, bug.invariant, base_violations, True, len(shrunk.events), shrunk.shortest_proved,
                    shrunk.reason, shortest)


def _caught(measured: Measured) -> bool:
    return measured.base_violations == 0 and measured.found


@pytest.mark.quality
@pytest.mark.xdist_group("planted_bugs")  # one process measures each bug once, for both tests
@pytest.mark.parametrize("bug", BUGS, ids=[b.name for b in BUGS])
def test_planted_bug_is_found_and_shrunk_to_its_shortest_order(bug):
    """The bugged protocol violates the invariant on the same seeds where the base does not; its minimal
    order is proved shortest."""
    measured = measure(bug)
    assert measured.base_violations == 0, "the base protocol must be clean"
    assert measured.found, f"{bug.name}: not found in {SEEDS} seeds"
    assert measured.shortest_proved, f"{bug.name}: {measured.reason}"
    assert measured.length == measured.shortest


@pytest.mark.quality
def test_every_weakening_of_every_knob_has_a_planted_bug():
    """Each knob value ranked below its knob's strongest value is planted by some bug of the suite."""
    planted = {b.knob for b in BUGS if b.knob}
    missing = []
    for family in FAMILIES.families:
        for knob in family.knobs.knobs:
            for value in knob.weakenings():
                if (knob.name, knob.show(value)) not in planted:
                    missing.append(f"{family.name}: {knob.name}={knob.show(value)}")
    assert missing == [], "weakenings no shipped workload is shown to catch"
    assert len(BUGS) >= 20


@pytest.mark.quality
@pytest.mark.xdist_group("planted_bugs")
def test_detection_rate_is_complete(capsys):
    """Prints each planted bug with its shrunk and shortest length; every bug must be found and shrunk.

    It measures every bug itself (reusing what the per-bug tests measured in this session), so it judges
    the whole suite whatever ran before it, or if nothing did."""
    results = [measure(bug) for bug in BUGS]
    caught = sum(_caught(r) for r in results)
    with capsys.disabled():
        print(f"\nplanted bugs: {caught}/{len(results)} found ({caught / len(results):.0%})")
        for r in results:
            print(f"  {r.bug:<30} {r.invariant:<24} shrunk {r.length}  shortest {r.shortest}")
    assert len(results) == len(BUGS) >= 20
    assert caught == len(results), [r.bug for r in results if not _caught(r)]
    assert all(r.shortest_proved and r.length == r.shortest for r in results), [
        r.bug for r in results if not (r.shortest_proved and r.length == r.shortest)]
