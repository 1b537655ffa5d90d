"""Every "proved" is the whole truth, end to end: on a monorepo with per-step checkpoints and a formatting bot
(a design nobody shipped), no advice is called proved while exhaustive search breaks the same invariant under
the fixed protocol within the bound, and the checkpoint restore that destroys a later edit is a finding of its
own, with its own order and triage row."""

from __future__ import annotations

import functools
import textwrap

import pytest

import sim
from sim.families.workspace import FAMILY
from sim.search.exhaustive import ExploreOptions, explore

DESIGN = textwrap.dedent("""\
    format = 1
    name = "mono-checkpoints"
    description = "Five files, a formatting bot on one hunk, per-step checkpoints and failing tests."
    family = "workspace"
    protocols = ["step-dedupe,checkpoint=per_step", "step-dedupe"]
    seeds = 400

    [workload]
    files = { "svc/a.py" = { head = "h0", body = "b0" }, "b.py" = "b0", "c.py" = "c0", "d.md" = "d0", "e.py" = "e0" }
    plan = [ { id = "s1", path = "svc/a.py", patch = { head = "h1" } },
             { id = "s2", path = "b.py", patch = "b1" },
             { id = "s3", path = "c.py", patch = "c1" },
             { id = "s4", path = "d.md", patch = "d1" },
             { id = "s5", path = "e.py", patch = "e1" } ]

    [workload.faults]
    classes = ["human_edit", "lose_ack", "retry", "duplicate", "replan", "tests_fail"]
    per_run_max = 4

    [workload.faults.targets]
    "svc/a.py#body" = 10

    [workload.limits]
    max_events = 80
    """)


@functools.cache
def _review(folder: str):
    path = f"{folder}/mono.toml"
    with open(path, "w") as handle:
        handle.write(DESIGN)
    return sim.review([path], seeds=400, workers=1).designs[0]


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory):
    return _review(str(tmp_path_factory.mktemp("whole-truth")))


def _proofs(row):
    """Each proof the advisor gave (its recommendation's and its runner-up's): counterexample, protocol, proof."""
    for example in row.counterexamples:
        advice = example.advice
        if advice is None:
            continue
        for label, proof in ((advice.recommended, advice.proof),
                             *([(advice.runner_up.protocol, advice.runner_up.proof)] if advice.runner_up else [])):
            if label and proof is not None and proof.status == "proved":
                yield example, label, proof


@pytest.mark.slow
def test_no_advice_is_proved_where_explore_breaks_its_invariant(reviewed):
    row, workload = reviewed.row, reviewed.workload
    checked = 0
    for example, label, proof in _proofs(row):
        again = explore(FAMILY, workload, FAMILY.parse_protocol(label),
                        ExploreOptions(max_events=proof.within_events, only=example.invariant))
        assert example.invariant not in again.minimal_orders, (
            f"{label} is proved free of {example.invariant} within {proof.within_events} events, but explore "
            f"finds {[str(e) for e in again.minimal_orders[example.invariant][0]]}")
        checked += 1
    assert checked, "the review proved nothing: the test would check nothing"
    assert row.contradictions == ()


@pytest.mark.slow
def test_the_restore_bug_is_a_finding_with_its_order_and_triage_row(reviewed):
    row = reviewed.row
    restores = [e for e in row.counterexamples if e.finding == "lost_update @ checkpoint_restore"]
    assert restores and all(e.protocol == "step-dedupe,checkpoint=per_step" for e in restores)
    assert all("tests_fail" in " ".join(e.events) for e in restores)
    ranked = {(t.finding, t.protocol) for t in row.triage}
    assert ("lost_update @ checkpoint_restore", "step-dedupe,checkpoint=per_step") in ranked
    assert not [e for e in row.counterexamples if e.finding == "lost_update @ replan_drift"]
    stale = next(e for e in row.counterexamples if e.finding == "lost_update @ stale_plan"
                 and e.protocol == "step-dedupe,checkpoint=per_step")
    assert stale.advice.proof.status != "proved"  # the restore's lost update remains under any fence
