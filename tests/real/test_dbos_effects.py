"""The reference DBOS worker against the real external system: the seed's saga killed, duplicated,
delayed and handed to a new owner at the four moments, compared with the model."""

from __future__ import annotations

import json
import os

import pytest

import sim
from sim.families.effects import cruel
from sim.families.effects.faults import FaultEvent
from sim.families.effects.workflow import SAGA_TRANSITIONS
from sim.real.runtimes import harness
from sim.real.runtimes.harness import CellFault, NotApplicable, RealEffectsError, run_real_effects
from sim.real.runtimes.processes import runtime_unavailable
from sim.registry import FAMILIES

DBOS_UNAVAILABLE = runtime_unavailable("dbos")
pytestmark = [pytest.mark.real, pytest.mark.skipif(DBOS_UNAVAILABLE is not None, reason=str(DBOS_UNAVAILABLE))]

EFFECTS = FAMILIES.get("effects")


def violated(history) -> list[str]:
    return sorted({v.invariant for v in EFFECTS.check(history).safety_violations})


def model_history(protocol: str, fault: str | None):
    cell = None if fault is None else CellFault.parse(fault)
    events = () if cell is None else (FaultEvent(cell.fault, cell.transition, cell.boundary),)
    return EFFECTS.replay(cruel.cruel_workload().base, EFFECTS.parse_protocol(protocol), events).history


def effects_of(run, transition: str) -> list[str]:
    return [o["effect"] for o in run.objects if o["transition"] == transition]


def test_the_harness_saga_is_the_models():
    """The harness's plain-data saga is the model's SAGA_TRANSITIONS."""
    assert [(t["name"], t["class"], t["object"], t.get("compensation")) for t in harness.SAGA] == [
        (t.name, t.effect_class, t.object_kind, t.compensation) for t in SAGA_TRANSITIONS]


def test_a_healthy_saga_records_the_models_events_in_the_models_order():
    """No fault: the same events, actors and effects as the model, and nothing violated."""
    run = run_real_effects("saga", "keyed-fingerprint-reconcile")
    model = model_history("keyed-fingerprint-reconcile", None)
    assert [(e.actor, e.event, e.get("transition"), e.get("effect")) for e in run.history] == [
        (e.actor, e.event, e.get("transition"), e.get("effect")) for e in model]
    assert violated(run.history) == [] and run.kills == 0


@pytest.mark.parametrize("protocol, prs, violations", [
    ("unkeyed-retry", 2, ["duplicate_effect", "lost_success", "unknown_as_failed"]),
    ("keyed-fingerprint-reconcile", 1, []),
])
def test_killed_after_the_pr_committed_without_keys_two_prs_with_keys_one(protocol, prs, violations, tmp_path, cli):
    """The seed's argument, on real processes: SIGKILL at committed-no-receipt, recovery under another executor;
    the resent request is a second PR unless the Git host holds the key.  ``fencesim check`` judges it."""
    run = run_real_effects("saga", protocol, "terminate open_pr after_commit")
    assert run.kills == 1 and run.workers == ["w1", "w2"]
    assert len(effects_of(run, "open_pr")) == prs
    assert violated(run.history) == violations == violated(model_history(protocol, "terminate open_pr after_commit"))
    path = tmp_path / "real.jsonl"
    path.write_text(run.history.to_jsonl())
    done = cli("check", "--family", "effects", str(path), "--json")
    assert done.returncode == (1 if violations else 0), done.stderr
    report = json.loads(done.stdout)
    assert sorted({v["invariant"] for v in report["violations"]}) == violations and report["not_evaluable"] == {}


def test_a_workloads_arguments_reach_the_worker_and_the_fingerprints_are_compared():
    """effects-saga's [arguments.open_pr] reach the DBOS worker: its intent and the host's commit fingerprint
    open_pr as the model does (236b7fdbcdcf) and the comparison agrees; a run without them (e492b300a6cb)
    disagrees on the fingerprints."""
    from sim.real.runtimes.compare import CellComparison, compare_order, observe

    workload = sim.load_workload("effects-saga")
    protocol = EFFECTS.parse_protocol("keyed-fingerprint-reconcile")
    cell = compare_order(EFFECTS, workload, protocol, (), ())
    assert cell.agrees, cell.differences()
    assert cell.real["fingerprints"]["open_pr"] == cell.model["fingerprints"]["open_pr"] == ["236b7fdbcdcf"]
    bare = run_real_effects(workload.base.workflow, protocol, None, task=workload.base.task)
    without = CellComparison(protocol.label, (), model=cell.model, real=observe(EFFECTS, bare.history))
    assert [d.split(":")[0] for d in without.differences()] == ["fingerprints of open_pr"]
    assert without.real["fingerprints"]["open_pr"] == ["e492b300a6cb"]


def test_re_recording_a_cell_gives_the_same_bytes():
    """Fixed workflow IDs, executor IDs, versions; events, not sleeps: the same cell twice, the same history."""
    first = run_real_effects("saga", "unkeyed-retry", "terminate open_pr after_dispatch")
    second = run_real_effects("saga", "unkeyed-retry", "terminate open_pr after_dispatch")
    assert first.history.to_jsonl() == second.history.to_jsonl()
    assert first.external_log == second.external_log


def test_a_new_owner_fences_the_old_one_by_the_dbos_owner_token():
    """change_owner: the old worker, still running, is refused at its next record; one PR."""
    run = run_real_effects("saga", "keyed-fingerprint-reconcile", "change_owner open_pr after_intent")
    refused = [e for e in run.history if e.event == "append_refused"]
    assert [(e.actor, e.get("worker"), e.get("holder"), e.get("refused"), e.get("transition")) for e in refused] == [
        ("log", "w1", "w2", "dispatched", "open_pr")]
    assert effects_of(run, "open_pr") == ["pull_request#2"] and violated(run.history) == []
    assert run.freezes == 1 and run.kills == 0


@pytest.mark.parametrize("protocol, releases", [("keyed-fingerprint-reconcile", 2),
                                                ("keyed-fingerprint-reconcile,irreversible_keys=on", 1)])
def test_a_frozen_worker_woken_inside_its_call_sends_once_more(protocol, releases):
    """Frozen inside the release's call step before its request left (a point the model lacks: its dispatch
    and send are one), the old worker wakes after its successor closed the task, sends, and only then is
    refused by DBOS's fence: a second release, unless the release endpoint honours the key."""
    run = run_real_effects("saga", protocol, "zombie publish_release dispatch_recorded")
    assert len(effects_of(run, "publish_release")) == releases
    terminal = next(e.index for e in run.history if e.event == "task_terminal")
    stale = [e for e in run.history if e.event in ("committed", "deduplicated") and e.get("request") == "r4"]
    assert stale and stale[0].index > terminal  # the stale request reached the host after the task closed
    assert [e.get("worker") for e in run.history if e.event == "append_refused"] == ["w1"]
    assert violated(run.history) == (["duplicate_effect"] if releases == 2 else [])


def test_a_frozen_worker_woken_after_its_successor_finished_replays_its_records():
    """Frozen between two steps, the old worker wakes, finds every step recorded by its successor and replays
    them: it sends nothing and is never refused (the model's zombie is refused at its next append)."""
    run = run_real_effects("saga", "keyed-fingerprint-reconcile", "zombie open_pr after_intent")
    assert not any(e.event == "append_refused" for e in run.history)
    assert [e.actor for e in run.history if e.event == "task_terminal"] == ["w2"]
    assert violated(run.history) == [] == violated(model_history("keyed-fingerprint-reconcile",
                                                                   "zombie open_pr after_intent"))


def test_approval_is_asked_and_given_before_the_irreversible_intent():
    """The release waits for a human's approval (a durable DBOS message); nothing irreversible goes unapproved."""
    run = run_real_effects("saga", "keyed-fingerprint-reconcile")
    names = [(e.event, e.get("transition")) for e in run.history]
    asked = names.index(("approval_requested", "publish_release"))
    assert names[asked + 1] == ("approved", "publish_release")
    assert names.index(("intent_recorded", "publish_release")) > asked + 1


@pytest.mark.parametrize("protocol, outcome, violations", [
    ("keyed-fingerprint-reconcile", "compensated", []),
    ("keyed-fingerprint-reconcile,compensation=off", "failed", ["unresolved_compensation"]),
])
def test_a_failed_postcondition_compensates_in_reverse(protocol, outcome, violations):
    """The preview is found wrong after its receipt: the task aborts; the preview, the PR and the branch are
    closed at the external system in that order (compensation=off leaves all three owed), as the model says."""
    run = run_real_effects("saga", protocol, "postcondition_fails create_preview after_receipt")
    assert [e.get("transition") for e in run.history if e.event == "compensated"] == (
        ["create_preview", "open_pr", "create_branch"] if outcome == "compensated" else [])
    assert [e.get("outcome") for e in run.history if e.event == "task_terminal"] == [outcome]
    assert all(not o["open"] for o in run.objects) == (outcome == "compensated")
    model = model_history(protocol, "postcondition_fails create_preview after_receipt")
    assert violated(run.history) == violations == violated(model)


def test_a_dead_executor_is_resumed_only_by_an_explicit_recovery(tmp_path):
    """DBOS: a new process under another executor ID does not take a dead executor's workflow (it stays
    PENDING, a stranded task); recovery naming the dead executor resumes it."""
    import time

    labels, knobs = harness.resolve_protocol("keyed-fingerprint-reconcile")
    transitions = harness.workflow_data("saga", knobs)
    run = harness.CellRun(tmp_path, transitions, knobs, harness.dbos_command(), "task_42", "acme",
                          time.monotonic() + 120, harness.ACK_TIMEOUT_S, "saga")
    try:
        run.external.start()
        run.spares = [run.spawn(), run.spawn(), run.spawn()]
        run.launch("w1", recover=[])
        run.workers["w1"].send({"op": "run"})
        run.trap = lambda source, record: record.get("event") == "intent_recorded"
        run.wait(lambda: run.trapped is not None)
        run.kill("w1")
        run.launch("w2", recover=[])
        run.workers["w2"].send({"op": "run"})
        run.wait(run.reply_from("w2", "run"))
        assert run.replies["w2"][-1]["result"] == "busy" and run.replies["w2"][-1]["holder"] == "w1"
        run.workers["w2"].stop()  # any live executor may take a recovered workflow: leave w3 the only one
        run.wait(lambda: "w2" in run.exited)
        run.launch("w3", recover=["w1"])
        run.wait(lambda: run.done_by is not None)
        assert run.done_by == "w3"
    finally:
        run.close()


def test_what_dbos_cannot_express_is_not_applicable():
    """lease_fence=off (DBOS always fences) and faults the harness has no hook for are refused with the reason."""
    with pytest.raises(NotApplicable, match="owner token"):
        run_real_effects("saga", "keyed-fingerprint-reconcile,lease_fence=off", "change_owner open_pr after_intent")
    with pytest.raises(NotApplicable, match="retry_changed"):
        run_real_effects("saga", "keyed-fingerprint-reconcile", "retry_changed open_pr after_dispatch")


def test_a_worker_that_breaks_the_protocol_is_a_run_error(tmp_path):
    """A worker that exits without a ready record fails the run with one line naming it."""
    script = tmp_path / "broken.py"
    script.write_text("import sys\nsys.stdin.readline()\nsys.stderr.write('no DBOS here\\n')\nsys.exit(3)\n")
    import sys

    with pytest.raises(RealEffectsError, match="exited with status 3 .no DBOS here"):
        run_real_effects("saga", "keyed", command=[sys.executable, str(script)], timeout_s=60)


# -- the cruel grid, cell by cell ---------------------------------------------------------------------

#: One cell per fault and boundary kind, alternating the keyed creation and the irreversible release.
SUBSET = ["terminate open_pr before_intent", "terminate publish_release after_dispatch",
          "duplicate open_pr after_dispatch", "duplicate publish_release after_commit",
          "delay_ack publish_release after_dispatch", "change_owner open_pr after_commit",
          "terminate publish_release after_receipt"]


#: The cells of SUBSET the real subset plays by default, one per fault class, under alternating protocols; the
#: other (protocol, cell) pairs are long real tests (FENCESIM_REAL_FULL=1, make real).
IN_SUBSET = {("unkeyed-retry", "terminate publish_release after_dispatch"),
             ("keyed-fingerprint-reconcile,irreversible_keys=on", "duplicate publish_release after_commit"),
             ("unkeyed-retry", "delay_ack publish_release after_dispatch"),
             ("keyed-fingerprint-reconcile,irreversible_keys=on", "change_owner open_pr after_commit")}


@pytest.mark.parametrize("protocol, fault", [
    pytest.param(protocol, fault, marks=() if (protocol, fault) in IN_SUBSET else pytest.mark.real_full)
    for fault in SUBSET for protocol in ("unkeyed-retry", "keyed-fingerprint-reconcile,irreversible_keys=on")])
def test_cruel_cells_violate_what_the_model_violates(protocol, fault):
    """A subset of the cruel grid: the real run violates exactly the invariants the model's run does."""
    run = run_real_effects("saga", protocol, fault)
    assert violated(run.history) == violated(model_history(protocol, fault))


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("FENCESIM_REAL_GRID"),
                    reason="the whole real grid takes about five minutes per protocol: set FENCESIM_REAL_GRID=1")
@pytest.mark.parametrize("protocol", ["unkeyed-retry", "keyed", "keyed-reconcile", "keyed-fingerprint-reconcile",
                                      "keyed-fingerprint-reconcile,irreversible_keys=on"])
def test_every_cruel_cell_agrees_with_the_model(protocol):
    """All 80 cells of the saga's cruel grid under the protocol."""
    disagreements = []
    for cell in cruel.cells(cruel.cruel_workload()):
        fault = str(cell.events[0])
        real = violated(run_real_effects("saga", protocol, fault).history)
        model = violated(model_history(protocol, fault))
        if real != model:
            disagreements.append(f"{fault}: model {model}, real {real}")
    assert disagreements == []


@pytest.mark.parametrize("bug, protocol, fault, found", [
    ("receipt_before_call", "keyed-fingerprint-reconcile", None, "false_receipt"),
    ("new_key_on_retry", "keyed", "terminate open_pr after_commit", "duplicate_effect"),
    ("skip_reconcile", "keyed-fingerprint-reconcile", "terminate publish_release after_commit", "duplicate_effect"),
])
def test_planted_worker_bugs_are_violations_the_model_does_not_have(bug, protocol, fault, found):
    """Each planted bug makes the real run violate an invariant that the model's run of the same cell keeps."""
    run = run_real_effects("saga", protocol, fault, plant=(bug,))
    assert found in violated(run.history) and found not in violated(model_history(protocol, fault))


FIVE_TRANSITIONS = [
    {"name": "create_branch", "class": "keyed_creation", "object": "branch", "compensation": "delete_branch"},
    {"name": "open_pr", "class": "keyed_creation", "object": "pull_request", "compensation": "close_pr"},
    {"name": "run_ci", "class": "idempotent", "object": "ci_run"},
    {"name": "post_slack", "class": "irreversible", "object": "announcement", "keys": False, "reconcile_by": "none"},
    {"name": "merge_pr", "class": "irreversible", "object": "merge", "keys": True},
]


def by_transition(run) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for o in run.objects:
        out.setdefault(o["transition"], []).append(o["effect"])
    return out


def test_a_users_workflow_from_plain_data_sends_an_unknown_keyless_outcome_to_a_human():
    """The workflow issue's five transitions as data.  Killed after the Slack post committed: it takes no key
    and cannot be queried (reconcile_by = none), so the in-doubt outcome goes to a human, who finds the post;
    one announcement, one merge (keyed by the PR), one CI run (idempotent)."""
    run = run_real_effects(FIVE_TRANSITIONS, "keyed-fingerprint-reconcile", "terminate post_slack after_commit")
    objects = by_transition(run)
    assert [len(objects[t]) for t in ("post_slack", "merge_pr", "run_ci")] == [1, 1, 1]
    assert [(e.event, e.get("reason")) for e in run.history if e.event == "human_exception"] == [
        ("human_exception", "unprovable")]
    assert violated(run.history) == []


def test_a_duplicated_keyless_announcement_is_two_announcements_whatever_the_protocol():
    """keys = false: a copy of the Slack request on the network is a second announcement, even under
    keyed-fingerprint-reconcile; a copy of the merge request is deduplicated by its key."""
    slack = run_real_effects(FIVE_TRANSITIONS, "keyed-fingerprint-reconcile", "duplicate post_slack after_dispatch")
    merge = run_real_effects(FIVE_TRANSITIONS, "keyed-fingerprint-reconcile", "duplicate merge_pr after_dispatch")
    assert len(by_transition(slack)["post_slack"]) == 2 and "duplicate_effect" in violated(slack.history)
    assert len(by_transition(merge)["merge_pr"]) == 1 and violated(merge.history) == []
    with pytest.raises(NotApplicable, match="is a read"):
        run_real_effects([{"name": "fetch", "class": "read", "object": "object"}], "keyed")
