"""Proof before "fix" (sim.search.advice_proof): the advisor calls a change a fix only when exhaustive search
within the design's bound proves the invariant absent under it, never drops a mechanism the design chose,
and prefers fixes no other beats on every count."""

from __future__ import annotations

import functools
import textwrap

import pytest

from sim.core.workload import Workload
from sim.families.workspace import FAMILY
from sim.search import advisor
from sim.search.advice_proof import ADVISOR_PROOF_DEPTH, dominated, proof_bound, prove
from sim.search.advisor import advise, candidates, keeps
from sim.search.exhaustive import ExploreOptions, explore

#: A file of two hunks, a step per hunk, and faults that include failing tests: under checkpoint=per_step a
#: failing test restores the checkpoint over a human's edit of the other hunk (a lost update no fence stops).
CHECKPOINTED = textwrap.dedent("""\
    format = 1
    name = "checkpointed"
    family = "workspace"
    files = { "api.py" = { routes = "r0", auth = "a0" }, "models.py" = "m0" }
    plan = [ { id = "routes", path = "api.py", patch = { routes = "r1" } },
             { id = "models", path = "models.py", patch = "m1" } ]

    [faults]
    classes = ["human_edit", "lose_ack", "retry", "tests_fail"]
    per_run_max = 3

    [limits]
    max_events = 40
    """)
PROTOCOL = "step-dedupe,rev_scope=file,on_reject=replan,checkpoint=per_step"


@functools.cache
def _workload(tmp: str) -> Workload:
    from sim.registry import FAMILIES

    return FAMILIES.load_workload(tmp)


@pytest.fixture(scope="module")
def workload(tmp_path_factory) -> Workload:
    path = tmp_path_factory.mktemp("advice") / "checkpointed.toml"
    path.write_text(CHECKPOINTED)
    return _workload(str(path))


_SHORTEST: dict[str, tuple] = {}


def _shortest(workload: Workload, label: str) -> tuple:
    if label in _SHORTEST:
        return _SHORTEST[label]
    result = explore(FAMILY, workload, FAMILY.parse_protocol(label),
                     ExploreOptions(max_events=ADVISOR_PROOF_DEPTH, only="lost_update"))
    assert "lost_update" in result.minimal_orders, "the fixture must break under its protocol"
    _SHORTEST[label] = result.minimal_orders["lost_update"][0]
    return _SHORTEST[label]


def assert_no_disproved_fix(workload: Workload, advice) -> None:
    """The acceptance check: an advice called a fix is not disproved by explore at the design's bound."""
    if advice.fixes is not True:
        return
    bound = proof_bound(workload, None)
    again = explore(FAMILY, workload, FAMILY.parse_protocol(advice.recommended),
                    ExploreOptions(max_events=bound, only=advice.invariant))
    assert advice.invariant not in again.minimal_orders, (
        f"{advice.recommended} was called a fix, but explore --depth {bound} finds "
        f"{advice.invariant}: {[str(e) for e in again.minimal_orders[advice.invariant][0]]}")


@pytest.fixture(scope="module")
def checkpoint_advice(workload):
    events = _shortest(workload, PROTOCOL)
    return advise(FAMILY, workload, FAMILY.parse_protocol(PROTOCOL), "lost_update", events, sample_seeds=100,
                  seeds=100)


def test_the_advice_keeps_the_checkpoint_and_is_never_a_disproved_fix(workload, checkpoint_advice):
    advice = checkpoint_advice
    assert advice.kept["checkpoint"] == "per_step"
    if advice.recommended is not None:
        assert FAMILY.parse_protocol(advice.recommended).knobs["checkpoint"] == "per_step"
    assert_no_disproved_fix(workload, advice)
    # every candidate the advisor may try keeps it too
    for count in (1, 2):
        for candidate in candidates(FAMILY.parse_protocol(PROTOCOL), count):
            assert candidate.knobs["checkpoint"] == "per_step"


def test_a_seed_clean_change_that_explore_disproves_is_not_called_a_fix(workload, monkeypatch):
    """On 20 seeds, fence=plan with a drift check violates nothing; explore finds the checkpoint's 5-event
    lost update under it (a failing test restores the file over the human's edit).  The advisor says so;
    an advisor that trusts the seeds (a planted proof that always says proved) calls it a fix, and the
    acceptance check catches that."""
    events = _shortest(workload, PROTOCOL)
    real = advise(FAMILY, workload, FAMILY.parse_protocol(PROTOCOL), "lost_update", events, sample_seeds=20,
                  seeds=20)
    assert real.fixes is not True and real.sample_runs_violating_it == 0
    assert real.proof["status"] == "disproved" and real.proof["shortest_events"] == 5
    assert real.proof["order"][-1].startswith("tests_fail")
    assert_no_disproved_fix(workload, real)
    monkeypatch.setattr(advisor, "prove", lambda *a, **k: {"status": "proved", "max_events": 6,
                                                          "within_events": 6, "distinct_states": 0})
    planted = advise(FAMILY, workload, FAMILY.parse_protocol(PROTOCOL), "lost_update", events,
                     sample_seeds=20, seeds=20)
    assert planted.fixes is True
    with pytest.raises(AssertionError, match="was called a fix, but explore"):
        assert_no_disproved_fix(workload, planted)


def test_prove_says_proved_disproved_or_unproved(workload):
    broken = prove(FAMILY, workload, FAMILY.parse_protocol(PROTOCOL), "lost_update", 6)
    assert broken["status"] == "disproved" and broken["shortest_events"] == len(_shortest(workload, PROTOCOL))
    safe = prove(FAMILY, workload, FAMILY.parse_protocol("step-dedupe,rev_scope=file,on_reject=replan"),
                 "duplicate_effect", 4)
    assert safe["status"] == "proved" and safe["within_events"] == 4
    cut = prove(FAMILY, workload, FAMILY.parse_protocol("step-dedupe"), "duplicate_effect", 6, max_states=50)
    assert cut["status"] == "unproved" and cut["within_events"] < 6 and "50" in cut["stopped"]


def test_keeps_never_returns_a_knob_to_its_default_at_equal_rank():
    table = FAMILY.knobs
    checkpoint, stamp = table.knob("checkpoint"), table.knob("stamp_at")
    assert not keeps(checkpoint, "per_step", "none")
    assert keeps(checkpoint, "none", "per_step")
    assert keeps(stamp, "dispatch", "plan")  # an alternative of equal rank
    assert not keeps(stamp, "plan", "apply")  # a lower rank
    assert not keeps(table.knob("fence"), "plan", "none")


def test_dominated_means_beaten_on_every_count():
    a = {"violating_runs": 0, "verified_seeds": 100, "availability_per_run": 0.1, "safe_progress_share": 0.96}
    b = {"violating_runs": 0, "verified_seeds": 100, "availability_per_run": 1.12, "safe_progress_share": 0.93}
    c = {"violating_runs": 0, "verified_seeds": 100, "availability_per_run": 0.05, "safe_progress_share": 0.90}
    assert dominated(b, [a, b, c]) and not dominated(a, [a, b, c]) and not dominated(c, [a, b, c])


def test_the_fix_is_proved_not_beaten_on_every_count_and_its_runner_up_is_shown():
    import sim
    from sim.families.workspace.scenario import parse_action
    from sim.report.advice import advice_document
    from sim.report.phrases import advice_line

    workload = sim.load_workload("seed-fuzz")
    base = workload.base
    events = tuple(parse_action(t, base.files, base.step_ids())
                   for t in ("plan", "human_edit app.py", "dispatch s1", "deliver s1"))
    advice = advise(FAMILY, workload, FAMILY.parse_protocol("step-dedupe"), "lost_update", events,
                    sample_seeds=100)
    assert advice.fixes is True and advice.proof["status"] == "proved"
    assert advice.proof["max_events"] == ADVISOR_PROOF_DEPTH
    chosen = {"violating_runs": advice.violating_runs, "verified_seeds": advice.verified_seeds,
              "availability_per_run": advice.availability_per_run,
              "safe_progress_share": advice.safe_progress_share}
    runner = advice.runner_up
    assert runner is not None and runner["protocol"] != advice.recommended
    assert not dominated(chosen, [chosen, runner])
    line = advice_line(advice_document(advice), "lost_update", "spurious rejections")
    assert "proved by exhaustive search within 6 events" in line and "Runner-up:" in line


#: Two steps patch one hunk: overlap_check=on rejects the whole plan at admission -- safe because nothing is done.
SHARED_HUNK = textwrap.dedent("""\
    format = 1
    name = "billing"
    family = "workspace"
    files = { "billing.py" = { charge = "c0", refund = "f0" }, "test_billing.py" = { unit = "u0", e2e = "e0" } }
    plan = [ { id = "s1", path = "billing.py", patch = { charge = "c1" } },
             { id = "s2", path = "test_billing.py", patch = { unit = "u1" } },
             { id = "s3", path = "billing.py", patch = { refund = "f1" } },
             { id = "s4", path = "billing.py", patch = { charge = "c2" } } ]

    [faults]
    classes = ["human_edit", "tests_fail", "retry"]
    per_run_max = 3

    [limits]
    max_events = 40
    """)


def test_a_change_under_which_nothing_is_done_is_never_a_fix(tmp_path):
    from sim.registry import FAMILIES

    path = tmp_path / "billing.toml"
    path.write_text(SHARED_HUNK)
    workload = FAMILIES.load_workload(str(path))
    label = "step,checkpoint=per_step,drift_check=reject"
    events = explore(FAMILY, workload, FAMILY.parse_protocol(label),
                     ExploreOptions(max_events=6, only="lost_update")).minimal_orders["lost_update"][0]
    advice = advise(FAMILY, workload, FAMILY.parse_protocol(label), "lost_update", events, sample_seeds=60, seeds=60)
    assert advice.recommended is None or "overlap_check=on" not in advice.recommended
    assert advice.fixes is not True or (advice.safe_progress_share or 0) > 0.01
    assert all(not p.get("applies_nothing") or p["protocol"] != advice.recommended for p in advice.priced)


def test_a_proof_for_one_finding_never_hides_another_of_its_invariant(workload):
    """Under a drift check the stale plan's lost update is gone, the checkpoint restore's is not: the proof for
    the stale-plan finding says 'elsewhere' with the restore's order, never 'proved' -- and a prove that only
    looked at its own finding (the planted bug) would have said proved."""
    fixed = FAMILY.parse_protocol("step-dedupe,drift_check=reject,rev_scope=file,checkpoint=per_step")
    proof = prove(FAMILY, workload, fixed, "lost_update @ stale_plan", 6)
    assert proof["status"] == "elsewhere", proof
    remains = proof["remains"]
    assert remains["finding"] == "lost_update @ checkpoint_restore" and remains["order"][-1].startswith("tests_fail")
    assert prove(FAMILY, workload, fixed, "lost_update @ checkpoint_restore", 6)["status"] == "disproved"
    from sim.report.advice import AdviceDocument
    from sim.report.phrases import advice_line

    line = advice_line(AdviceDocument.from_json(
        {"recommended": fixed.label, "changes": {"drift_check": "reject"}, "fixes": False, "invariant": "lost_update",
         "where": "stale_plan", "runs_violating_it": 0, "runs_violating_invariant": 2, "verified_seeds": 10,
         "seeds": 10, "availability_per_run": 0.1, "proof": proof}), "lost_update", "rejections")
    assert line.startswith("removes this finding, not the invariant") and "proved" not in line
    assert "lost_update @ stale_plan in 0 of 10 runs" in line and "2 runs violating lost_update at any where" in line


def test_a_proof_reaches_at_least_the_order_it_fixes(workload, monkeypatch):
    """An order longer than the default bound: the proof searches at least its length (a shorter search could
    never have found it, and its "proved" would say nothing about it)."""
    events = tuple(_shortest(workload, PROTOCOL)) + tuple(FAMILY.parse_event(workload.base, "ack routes")
                                                          for _ in range(ADVISOR_PROOF_DEPTH))
    bounds = []
    real = advisor.prove
    monkeypatch.setattr(advisor, "prove", lambda *a, **k: bounds.append(a[4]) or real(*a, **k))
    advise(FAMILY, workload, FAMILY.parse_protocol(PROTOCOL), "lost_update", events, sample_seeds=10, seeds=10)
    assert bounds and set(bounds) == {min(len(events), workload.max_events)}
