"""What makes exhaustive search fast must not change what it proves: resuming from a snapshot gives the
same history as a full replay, `enabled` agrees with the replay's skips, and independent events commute."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.families.workspace import FAMILY
from sim.registry import FAMILIES

WORKLOADS = {name: FAMILIES.load_workload(name) for name in ("tiny", "multi-file")}
PROTOCOLS = ["none", "plan", "step-dedupe", "step-dedupe,journal_write=after_write,pipeline=on",
             "fence=step,dedupe=memory,drift_check=reject"]
SETTINGS = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))


@st.composite
def runs(draw):
    workload = WORKLOADS[draw(st.sampled_from(sorted(WORKLOADS)))]
    alphabet = FAMILY.alphabet(workload)
    events = draw(st.lists(st.sampled_from(alphabet), min_size=1, max_size=14))
    protocol = FAMILY.parse_protocol(draw(st.sampled_from(PROTOCOLS)))
    return workload, protocol, [alphabet[0]] + events, alphabet


@SETTINGS
@given(runs(), st.integers(min_value=0, max_value=14))
def test_resume_equals_a_full_replay(run, split):
    """Snapshot after any prefix, resume with the rest: the same history bytes and skips as one replay."""
    workload, protocol, events, _ = run
    split = min(split, len(events))
    full = FAMILY.replay(workload.base, protocol, events)
    head = FAMILY.replay(workload.base, protocol, events[:split])
    resumed = FAMILY.resume(workload.base, protocol, events[:split], FAMILY.snapshot(head), events[split:])
    assert resumed.history.to_jsonl() == full.history.to_jsonl()
    assert resumed.skipped == full.skipped
    assert FAMILY.state_key(resumed) == FAMILY.state_key(full)


@SETTINGS
@given(runs())
def test_enabled_agrees_with_the_replay(run):
    """For every event of the alphabet, `enabled` on the snapshot says exactly whether the replay skips it."""
    workload, protocol, events, alphabet = run
    head = FAMILY.replay(workload.base, protocol, events)
    snapshot = FAMILY.snapshot(head)
    for event in alphabet:
        after = FAMILY.resume(workload.base, protocol, events, snapshot, (event,))
        assert FAMILY.enabled(protocol, snapshot, event) == (not after.last_skipped), str(event)


@SETTINGS
@given(runs())
def test_independent_events_commute(run):
    """Two independent events that both take effect, in either order, reach the same state and violations."""
    workload, protocol, events, alphabet = run
    head = FAMILY.replay(workload.base, protocol, events)
    snapshot = FAMILY.snapshot(head)
    for first in alphabet:
        for second in alphabet:
            if not FAMILY.independent(first, second):
                continue
            one = FAMILY.resume(workload.base, protocol, events, snapshot, (first, second))
            two = FAMILY.resume(workload.base, protocol, events, snapshot, (second, first))
            n = len(events)
            both = FAMILY.enabled(protocol, snapshot, first) and FAMILY.enabled(protocol, snapshot, second)
            if both:  # neither disables the other
                assert not {n, n + 1} & (one.skipped | two.skipped), (str(first), str(second))
            if {n, n + 1} & (one.skipped | two.skipped):
                continue
            assert FAMILY.state_key(one) == FAMILY.state_key(two), (str(first), str(second))
            assert ({v.invariant for v in FAMILY.check(one.history).safety_violations}
                    == {v.invariant for v in FAMILY.check(two.history).safety_violations})


def test_exhaustive_is_the_same_for_any_worker_count():
    """Parallel expansion merges in frontier order: the same orders, states and proofs."""
    from sim.search.exhaustive import explore

    workload = WORKLOADS["tiny"]
    one = explore(FAMILY, workload, FAMILY.parse_protocol("none"), 6, workers=1).to_json()
    two = explore(FAMILY, workload, FAMILY.parse_protocol("none"), 6, workers=2).to_json()
    assert one == two
