"""The workspace platform's mechanisms: per-file revisions, hunk-level drift, weighted fault targets, client
recovery, checkpoints and compensation, the bounded journal, applied safely and knobs that never fired --
each replayed from small scripted orders, and the sweeps and shrinks the design acceptance asks for."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.app.designs import load_design
from sim.core.result import run_scenario as run
from sim.families.workspace import FAMILY
from sim.families.workspace.family import WorkspaceFamily
from sim.families.workspace.machine import WorkspaceMachine
from sim.families.workspace.recovery import MAX_REPLANS
from sim.families.workspace.scenario import build_scenario
from sim.search.shrink import shrink
from sim.search.sweep import sweep
from tests.conftest import WEIGHED_WORKLOAD

ROOT = Path(__file__).resolve().parents[3]
MONOREPO = ROOT / "scenarios" / "designs" / "monorepo.toml"
FILES = {"api/handlers.py": {"routes": "r0", "auth": "a0"}, "api/models.py": {"user": "u0", "order": "o0"},
         "tests/test_api.py": "t0"}
PLAN = [{"id": "routes", "path": "api/handlers.py", "patch": {"routes": "r1"}},
        {"id": "user", "path": "api/models.py", "patch": {"user": "u1"}},
        {"id": "auth", "path": "api/handlers.py", "patch": {"auth": "a1"}},
        {"id": "order", "path": "api/models.py", "patch": {"order": "o1"}},
        {"id": "tests", "path": "tests/test_api.py", "patch": "t1"}]
IDS = [step["id"] for step in PLAN]
PIPELINED = ["plan", *(f"dispatch {s}" for s in IDS), *(f"deliver {s}" for s in IDS)]


def scenario(events, files=None, plan=None):
    return build_scenario({"files": files or FILES, "plan": plan or PLAN, "events": list(events)})


def verdicts(result, event="deliver"):
    return [(e.get("step"), e.get("verdict")) for e in result.history if e.event == event and not e.get("skipped")]


def invariants(result):
    return sorted({v.invariant for v in result.violations})


def spurious(result):
    return sum(1 for v in result.availability if v.invariant == "spurious_rejection")


def monorepo():
    return load_design(MONOREPO).workload


# -- 1. rev_scope ------------------------------------------------------------------------------------------

def test_a_fault_free_pipelined_monorepo_change_is_rejected_only_with_one_workspace_revision():
    """Under pipeline=on the workspace-wide revision rejects steps no fault touched; with a revision per file
    (and a pipelined step stamped with what its file's earlier steps in flight will leave) nothing is."""
    whole = run(FAMILY, scenario(PIPELINED), "step-dedupe,pipeline=on")
    per_file = run(FAMILY, scenario(PIPELINED), "step-dedupe,pipeline=on,rev_scope=file")
    assert [v for _, v in verdicts(whole)].count("rejected:stale_rev") == 4 and spurious(whole) == 4
    assert verdicts(per_file) == [(s, "applied") for s in IDS]
    assert per_file.violations == [] and spurious(per_file) == 0


def test_a_human_edit_moves_only_its_files_revision():
    """With rev_scope=file an edit of models.py leaves handlers.py's revision, so a step on it is stamped
    and applied at rev 0 while the workspace has moved."""
    result = run(FAMILY, scenario(["plan", "human_edit api/models.py#order", "dispatch routes", "deliver routes"]),
                 "step-dedupe,rev_scope=file")
    edit, = [e for e in result.history if e.event == "human_edit"]
    delivery, = [e for e in result.history if e.event == "deliver"]
    assert edit["rev_after"] == 1 and edit["workspace_rev"] == 1
    assert delivery["verdict"] == "applied" and delivery["stamped_base_rev"] == 0 == delivery["rev_at_apply"]
    assert delivery["rev_scope"] == "file" and delivery["journal_key"] == "routes@0"


def test_an_edit_of_the_steps_own_file_is_still_fenced_per_file():
    """An edit of handlers.py between dispatch and delivery of a step on it is caught by its file's rev."""
    result = run(FAMILY, scenario(["plan", "dispatch routes", "human_edit api/handlers.py#auth", "deliver routes"]),
                 "step-dedupe,rev_scope=file")
    assert verdicts(result) == [("routes", "rejected:stale_rev")]


def test_the_formatters_lost_update_is_still_found_per_file_and_shrunk():
    """The monorepo design: under step-dedupe,rev_scope=file the formatter's edit before dispatch is a lost
    update, found by the sweep and shrunk to its shortest order."""
    workload = monorepo()
    summary, _ = sweep(FAMILY, workload, ["step-dedupe,rev_scope=file"], 200, workers=1)
    first = summary.first("step-dedupe,rev_scope=file", "lost_update")
    protocol = FAMILY.parse_protocol("step-dedupe,rev_scope=file")
    shrunk = shrink(FAMILY, workload, protocol, first.order, "lost_update")
    assert shrunk.shortest_proved and len(shrunk.events) == 4
    assert [e.kind for e in shrunk.events] == ["plan", "human_edit", "dispatch", "deliver"]


def test_spurious_rejections_per_run_fall_with_a_revision_per_file():
    """The same seeds of the monorepo workload: fewer spurious rejections per run with rev_scope=file, and at
    least as large a share of steps applied safely."""
    labels = ["step-dedupe", "step-dedupe,rev_scope=file"]
    summary, _ = sweep(FAMILY, monorepo(), labels, 200, workers=1)
    whole, per_file = (summary.tallies[label] for label in labels)
    assert per_file.counted["spurious_rejections"] < whole.counted["spurious_rejections"]
    assert per_file.measures["steps_applied_safely"] >= whole.measures["steps_applied_safely"]


# -- 2. drift_scope ----------------------------------------------------------------------------------------

FORMATTER = ["plan", "human_edit api/handlers.py#auth formatted", "dispatch routes", "deliver routes"]


def test_a_hunk_drift_check_lets_the_routes_step_through_the_formatters_auth_edit():
    """drift_check=reject compares whole files by default (routes refused for an edit of auth); with
    drift_scope=hunk it compares the hunks the step replaces."""
    whole = run(FAMILY, scenario(FORMATTER), "step-dedupe,drift_check=reject")
    hunk = run(FAMILY, scenario(FORMATTER), "step-dedupe,drift_check=reject,drift_scope=hunk")
    assert verdicts(whole, "dispatch") == [("routes", "rejected:drift")] and spurious(whole) == 1
    assert verdicts(hunk) == [("routes", "applied")] and hunk.violations == [] and spurious(hunk) == 0
    dispatch, = [e for e in hunk.history if e.event == "dispatch"]
    assert dispatch["drift_scope"] == "hunk" and set(dispatch["claimed_pre_hunks"]) == {"routes"}


def test_a_hunk_drift_check_still_refuses_an_edit_of_the_steps_own_hunk():
    """The formatter edits routes itself: the hunk check refuses the step (no lost update)."""
    events = ["plan", "human_edit api/handlers.py#routes formatted", "dispatch routes", "deliver routes"]
    result = run(FAMILY, scenario(events), "step-dedupe,drift_check=reject,drift_scope=hunk")
    assert verdicts(result, "dispatch") == [("routes", "rejected:drift")] and result.violations == []
    unchecked = run(FAMILY, scenario(events), "step-dedupe")
    assert invariants(unchecked) == ["lost_update"]


# -- 3. weighted fault targets -----------------------------------------------------------------------------

WORKLOAD = WEIGHED_WORKLOAD  # its [faults.targets] lines are TARGETS


def load(tmp_path, targets, name="w.toml"):
    from sim.registry import FAMILIES

    path = tmp_path / name
    path.write_text(WORKLOAD.replace("TARGETS", targets), encoding="utf-8")
    return FAMILIES.load_workload(str(path)), path


def edits(workload, seeds=300):
    out = {}
    for seed in range(seeds):
        for event in FAMILY.generate(workload, seed):
            if event.kind == "human_edit":
                target = f"{event.path}#{event.hunk}" if event.hunk else event.path
                out[target] = out.get(target, 0) + 1
    return out


def test_a_heavy_target_is_struck_that_much_more_often(tmp_path):
    """auth weighs 10, every other target 1: auth draws about ten times as many edits as routes."""
    workload, _ = load(tmp_path, '"api/handlers.py#auth" = 10')
    counts = edits(workload)
    assert counts["api/handlers.py#auth"] > 5 * counts["api/handlers.py#routes"]
    assert counts["README.md"] > 0


def test_weighted_orders_depend_only_on_the_workload_and_seed(tmp_path):
    workload, _ = load(tmp_path, '"api/handlers.py#auth" = 10\nroutes = 3')
    again, _ = load(tmp_path, '"api/handlers.py#auth" = 10\nroutes = 3', "again.toml")
    assert [FAMILY.generate(workload, s) for s in range(50)] == [FAMILY.generate(again, s) for s in range(50)]


def test_a_target_weighing_zero_is_never_struck_nor_in_the_alphabet(tmp_path):
    workload, _ = load(tmp_path, '"README.md" = 0\ndocs = 0')
    assert "README.md" not in edits(workload)
    assert not any(e.step == "docs" for s in range(200) for e in FAMILY.generate(workload, s)
                   if e.kind in ("retry", "lose_ack"))
    alphabet = [str(e) for e in FAMILY.alphabet(workload)]
    assert "human_edit README.md" not in alphabet and "retry docs" not in alphabet and "retry routes" in alphabet


def test_a_workload_without_targets_draws_as_before(tmp_path):
    """No [faults.targets]: the uniform draws (the same orders as a workload that never heard of targets)."""
    from sim.registry import FAMILIES

    workload = FAMILIES.load_workload("multi-file")
    assert "targets" not in workload.extra
    assert FAMILY.generate(workload, 7) == FAMILY.generate(FAMILIES.load_workload("multi-file"), 7)


@pytest.mark.parametrize("targets,message", [
    ('"api/handler.py" = 2', "unknown target 'api/handler.py'"),
    ('"api/handlers.py#autth" = 2', "has no hunk 'autth'"),
    ('rotues = 2', "unknown target 'rotues'"),
    ('"README.md#x" = 2', "has no hunk"),
    ('routes = -1', "a weight is a number from 0 to 1e9"),
    ('routes = true', "a weight is a number from 0 to 1e9"),
])
def test_a_bad_target_is_refused_at_its_line(tmp_path, targets, message):
    from sim.core.errors import ScenarioError

    with pytest.raises(ScenarioError) as error:
        load(tmp_path, targets)
    text = str(error.value)
    assert message in text and f"w.toml:{WORKLOAD.splitlines().index('TARGETS') + 1}" in text


def test_a_bad_target_exits_4_with_file_and_line(cli, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(WORKLOAD.replace("TARGETS", "rotues = 2"), encoding="utf-8")
    out = cli("fuzz", "--workload", str(path), "-p", "step-dedupe", "--seeds", "5", "--no-advise",
              "--out", tmp_path / "out")
    assert out.returncode == 4, out.stderr
    line = WORKLOAD.splitlines().index("TARGETS") + 1
    assert f"bad.toml:{line}" in out.stderr and "did you mean 'routes'" in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


# -- 4. on_reject=replan -----------------------------------------------------------------------------------

def test_a_held_back_dispatch_is_sent_when_the_previous_verdict_arrives():
    """pipeline=off: without recovery the early dispatch of s2 is skipped and s2 is never sent; with
    on_reject=replan it is held back and sent in the delivery that gives s1 its verdict."""
    events = ["plan", "dispatch routes", "dispatch user", "deliver routes", "deliver user"]
    stop = run(FAMILY, scenario(events), "step-dedupe")
    replan = run(FAMILY, scenario(events), "step-dedupe,on_reject=replan")
    assert verdicts(stop) == [("routes", "applied")]
    assert verdicts(replan) == [("routes", "applied"), ("user", "applied")]
    held = [e for e in replan.history if e.event == "dispatch" and e.get("held")]
    assert [e["step"] for e in held] == ["user"]
    assert any(e.event == "dispatch" and e.get("released") for e in replan.history)


def test_a_rejected_step_is_replanned_from_the_current_revision_and_applied():
    """The human edits handlers.py while routes is in flight: rejected:stale_rev; the client re-plans routes
    from the current workspace (a rebase record) and the re-planned step applies without a lost update."""
    events = ["plan", "dispatch routes", "human_edit api/handlers.py#auth", "deliver routes", "ack routes",
              "deliver routes"]
    result = run(FAMILY, scenario(events), "step-dedupe,on_reject=replan")
    assert verdicts(result) == [("routes", "rejected:stale_rev"), ("routes", "applied")]
    rebase, = [e for e in result.history if e.event == "rebase"]
    assert rebase["step"] == "routes" and rebase["replans"] == 1
    assert result.violations == []


def test_re_plans_stop_at_the_limit():
    """A human who edits after every re-plan: the client re-plans MAX_REPLANS times, then stops."""
    events = ["plan", "dispatch routes"]
    for _ in range(MAX_REPLANS + 1):
        events += ["human_edit api/handlers.py#auth", "deliver routes", "ack routes"]
    result = run(FAMILY, scenario(events), "step-dedupe,on_reject=replan")
    rebases = [e for e in result.history if e.event == "rebase"]
    assert [e.get("replans") for e in rebases] == [1, 2, 3, 3]
    assert rebases[-1]["stopped"] == f"max_replans ({MAX_REPLANS}) reached"


# -- 6. tests_fail, checkpoint=per_step, compensated -------------------------------------------------------

COMPENSATE = ["plan", "dispatch routes", "deliver routes", "ack routes", "tests_fail api/handlers.py"]


def test_a_test_failure_after_apply_is_compensated_to_the_per_step_checkpoint():
    """checkpoint=per_step: the step's checkpoint is restored (verdict compensated, the file as before the
    step); checkpoint=none: the failure is recorded and nothing is undone."""
    result = run(FAMILY, scenario(COMPENSATE), "step-dedupe,checkpoint=per_step")
    restore, = [e for e in result.history if e.event == "tests_fail"]
    assert restore["verdict"] == "compensated" and restore["step"] == "routes"
    assert result.outcome == "compensated" and result.violations == []
    assert restore["hash_after"] == restore["expected_prior_hash"] or restore["hash_after"] != restore["hash_before"]
    kept = run(FAMILY, scenario(COMPENSATE), "step-dedupe")
    failed, = [e for e in kept.history if e.event == "tests_fail"]
    assert "verdict" not in failed and failed["checkpoint"] == "none" and kept.outcome == "applied"


def test_a_restore_over_a_later_human_edit_is_a_lost_update():
    """The formatter edits auth after routes applied; restoring routes' whole-file checkpoint destroys it."""
    events = COMPENSATE[:4] + ["human_edit api/handlers.py#auth formatted", COMPENSATE[4]]
    result = run(FAMILY, scenario(events), "step-dedupe,checkpoint=per_step")
    assert invariants(result) == ["lost_update"]
    violation, = result.violations
    assert "destroyed a later write" in violation.detail


def test_checkpoint_costs_are_measured():
    """Checkpoints stored (one per write), restores, steps compensated and applied safely."""
    events = ["plan", "dispatch routes", "deliver routes", "ack routes", "dispatch user", "deliver user",
              "ack user", "tests_fail api/handlers.py"]
    replay = FAMILY.replay(scenario(events), FAMILY.parse_protocol("step-dedupe,checkpoint=per_step"))
    measures = FAMILY.measure(replay)
    assert measures["checkpoints_stored"] == 2 and measures["restores"] == 1
    assert measures["steps_compensated"] == 1 and measures["steps_applied_safely"] == 1
    assert measures["steps_applied"] == 2 and measures["fired_checkpoint"] == 1


class RestoresTheOldestCheckpoint(WorkspaceMachine):
    """Planted: a test failure restores the oldest checkpoint of the file, not the latest step's."""

    def tests_fail(self, state, event):
        if self.knobs.checkpoint == "none":
            return super().tests_fail(state, event)
        mine = [c for c in state.checkpoints if c.path == event.path]
        others = tuple(c for c in state.checkpoints if c.path != event.path)
        return super().tests_fail(state._replace(checkpoints=others + tuple(reversed(mine))), event)


def test_planted_restore_of_the_wrong_checkpoint_is_caught():
    """Two steps on handlers.py applied, tests fail: restoring the first step's checkpoint destroys the
    second step's write -- the true model restores the second's and is clean."""
    events = ["plan", "dispatch routes", "deliver routes", "ack routes", "dispatch user", "deliver user",
              "ack user", "dispatch auth", "deliver auth", "ack auth", "tests_fail api/handlers.py"]
    true = run(FAMILY, scenario(events), "step-dedupe,checkpoint=per_step")
    assert true.violations == []
    bugged = run(WorkspaceFamily(machine=RestoresTheOldestCheckpoint), scenario(events),
                 "step-dedupe,checkpoint=per_step")
    assert invariants(bugged) == ["lost_update"]


# -- 7. journal_gc -----------------------------------------------------------------------------------------

RETRIES_AFTER_ACK = ["plan", "dispatch s1", "deliver s1", "ack s1", "retry s1", "deliver s1"]
ONE_FILE = {"app.py": "v0"}
TWO_STEPS = [{"id": "s1", "path": "app.py", "patch": "v1"}, {"id": "s2", "path": "app.py", "patch": "v2"}]


def test_an_eager_journal_drops_a_key_a_late_copy_still_needs():
    """journal_gc=eager drops s1's key when its answer arrives; a retry after that re-applies s1 (with no
    fence in the way); journal_gc=never replays the stored result."""
    kept = run(FAMILY, scenario(RETRIES_AFTER_ACK, ONE_FILE, TWO_STEPS), "none,dedupe=journal")
    eager = run(FAMILY, scenario(RETRIES_AFTER_ACK, ONE_FILE, TWO_STEPS), "none,dedupe=journal,journal_gc=eager")
    assert verdicts(kept) == [("s1", "applied"), ("s1", "deduped")] and kept.violations == []
    assert verdicts(eager) == [("s1", "applied"), ("s1", "applied")]
    assert "duplicate_effect" in invariants(eager)
    assert [e["journal_key"] for e in eager.history if e.event == "journal_remove"] == ["s1@0"]


@pytest.mark.parametrize("gc,found", [("eager", True), ("session_end", True), ("never", False)])
def test_journal_gc_weakenings_are_found_and_shrunk_on_the_journal_workload(gc, found):
    """The same seeds: eager and session_end give a duplicate_effect shrunk to its proved shortest order,
    never gives none."""
    from sim.registry import FAMILIES

    workload = FAMILIES.load_workload("journal")
    label = f"none,dedupe=journal,journal_gc={gc}"
    summary, _ = sweep(FAMILY, workload, [label], 300, workers=1)
    first = next((f for f in summary.found.values() if f.invariant == "duplicate_effect"), None)
    assert (first is not None) == found
    if found:
        shrunk = shrink(FAMILY, workload, FAMILY.parse_protocol(label), first.order, "duplicate_effect")
        assert shrunk.shortest_proved


def test_the_journal_size_is_measured():
    """Keys held at the end and the peak: never keeps every key, eager ends with none."""
    events = ["plan", "dispatch s1", "deliver s1", "ack s1", "dispatch s2", "deliver s2", "ack s2"]
    never = FAMILY.measure(FAMILY.replay(scenario(events, ONE_FILE, TWO_STEPS), FAMILY.parse_protocol("step-dedupe")))
    eager = FAMILY.measure(FAMILY.replay(scenario(events, ONE_FILE, TWO_STEPS),
                                         FAMILY.parse_protocol("step-dedupe,journal_gc=eager")))
    assert never["journal_keys_end"] == 2 and never["journal_keys_peak"] == 2
    assert eager["journal_keys_end"] == 0 and eager["journal_keys_peak"] == 1
    assert eager["journal_keys_dropped"] == 2 and eager["fired_journal_gc"] == 1


def test_after_checkpoint_dedupes_by_the_checkpoints_proof():
    """journal_gc=after_checkpoint drops the key once the answer arrived, and the checkpoint's proof still
    dedupes a late retry."""
    result = run(FAMILY, scenario(RETRIES_AFTER_ACK, ONE_FILE, TWO_STEPS),
                 "none,dedupe=journal,checkpoint=per_step,journal_gc=after_checkpoint")
    assert verdicts(result) == [("s1", "applied"), ("s1", "deduped")] and result.violations == []
    late = [e for e in result.history if e.event == "deliver"][-1]
    assert late["deduped_by"] == "checkpoint"


# -- 5. applied safely, 10. knobs that never fired ----------------------------------------------------------

def test_applied_safely_does_not_count_a_clobbering_write():
    """A step written over a human's edit is applied but not applied safely."""
    events = ["plan", "human_edit api/handlers.py#routes", "dispatch routes", "deliver routes"]
    measures = FAMILY.measure(FAMILY.replay(scenario(events), FAMILY.parse_protocol("step-dedupe")))
    assert measures["steps_applied"] == 1 and measures["steps_applied_safely"] == 0


def test_a_knob_that_never_fired_is_named_with_why():
    """overlap_check=on on a plan whose steps share no hunk never acts, and the line says why."""
    workload = monorepo()
    summary, _ = sweep(FAMILY, workload, ["step-dedupe,overlap_check=on,rev_scope=file"], 50, workers=1)
    tally = summary.tallies["step-dedupe,overlap_check=on,rev_scope=file"]
    lines = [item["line"] for item in FAMILY.never_fired(workload, "step-dedupe,overlap_check=on,rev_scope=file",
                                                         tally.measures)]
    assert "overlap_check=on never fired: no two steps share a hunk" in lines
    assert not any(line.startswith("rev_scope") for line in lines)


# -- determinism ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("protocol", ["step-dedupe,rev_scope=file,on_reject=replan,pipeline=on",
                                      "step-dedupe,checkpoint=per_step,journal_gc=after_checkpoint"])
def test_same_inputs_give_the_same_history_bytes(protocol):
    events = PIPELINED + ["ack routes", "tests_fail api/handlers.py", "human_edit api/models.py"]
    one, two = (run(FAMILY, scenario(events), protocol) for _ in range(2))
    assert [e.to_json() if hasattr(e, "to_json") else repr(e) for e in one.history] == \
        [e.to_json() if hasattr(e, "to_json") else repr(e) for e in two.history]



# -- 8. the seed's section-10 verdict table ----------------------------------------------------------------

def test_the_verdict_table_has_the_seeds_five_rows_and_the_platform_matches_each(cli):
    """--table verdicts --json: five rows with the seed's correct verdicts; the presets' cells that differ say
    why; the design with the platform's mechanisms on gives the seed's verdict in every row."""
    import json

    out = cli("matrix", "--table", "verdicts", "--json")
    assert out.returncode == 0, out.stderr
    document = json.loads(out.stdout)
    assert [row["correct_verdict"] for row in document["rows"]] == [
        "reject, re-plan from current rev", "replay the stored result", "compensate to the checkpoint",
        "accept if re-stamped and preconditions hold", "reject the plan at admission"]
    assert document["protocols"] == ["none", "plan", "step", "step-dedupe", document["platform"]]
    for row in document["rows"]:
        cells = {cell["protocol"]: cell for cell in row["cells"]}
        assert cells[document["platform"]]["matches"], row["row"]
        assert all(cell.get("why") for cell in row["cells"] if not cell["matches"])
    journal = {c["protocol"]: c for c in document["rows"][1]["cells"]}
    assert journal["step-dedupe"]["verdict"] == "applied, then deduped" and journal["step-dedupe"]["matches"]
    assert journal["none"]["violations"] == ["duplicate_effect", "lost_update"] or \
        "duplicate_effect" in journal["none"]["violations"]
    assert document["cells_differing"] == sum(not c["matches"] for r in document["rows"] for c in r["cells"])


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_the_verdict_table_is_printed_and_an_unknown_table_is_refused(cli):
    out = cli("matrix", "--table", "verdicts")
    assert out.returncode == 0 and "compensate to the" in out.stdout and "(differs)" in out.stdout
    bad = cli("matrix", "--table", "verdict")
    assert bad.returncode == 4 and "did you mean 'verdicts'" in bad.stderr and "Traceback" not in bad.stderr


# -- 5 and 10 in the reports ---------------------------------------------------------------------------------

@pytest.mark.slow  # over 3 s: outside the fast lane
def test_fuzz_reports_applied_safely_mechanisms_that_never_fired_and_identical_protocols(cli, tmp_path):
    """fuzz --json: safe_progress beside progress; overlap_check=on named as never firing (no two steps share
    a hunk), and a protocol differing only by it grouped with the one without it; the terminal says so."""
    import json

    workload, path = load(tmp_path, '"api/handlers.py#auth" = 10')
    args = ("fuzz", "--workload", str(path), "-p", "step-dedupe", "-p", "step-dedupe,overlap_check=on",
            "--seeds", "40", "--workers", "1", "--no-advise")
    out = cli(*args, "--json", "--out", tmp_path / "a")
    assert out.returncode in (0, 1), out.stderr
    document = json.loads(out.stdout)
    tally = document["by_protocol"]["step-dedupe"]
    assert tally["safe_progress"]["what"] == "steps_applied_safely / steps_planned"
    assert tally["safe_progress"]["done"] <= tally["progress"]["done"]
    never = document["mechanisms"]["never_fired"]
    assert never == {"step-dedupe,overlap_check=on": ["overlap_check=on never fired: no two steps share a hunk"]}
    assert document["mechanisms"]["identical"] == [["step-dedupe", "step-dedupe,overlap_check=on"]]
    text = cli(*args, "--out", tmp_path / "b")
    assert "applied safely" in text.stdout and "overlap_check=on never fired" in text.stdout
    assert "step-dedupe, step-dedupe,overlap_check=on: identical results on this workload" in text.stdout
    examples = [e for e in document["counterexamples"] if e["protocol"] == "step-dedupe"]
    for example in examples:  # one section for the group: the order is printed once, not once per protocol
        assert text.stdout.count(f"{example['invariant']} under step-dedupe,overlap_check=on") == 0
        assert text.stdout.count(" ; ".join(example["events"])) == 1


def test_a_restore_over_a_later_edit_is_found_by_fuzzing_and_shrunk(tmp_path):
    """Human edits and test failures, under a design otherwise free of lost updates (a drift check): with
    checkpoint=per_step a restore over a later edit is found and shrunk to an order ending in tests_fail;
    with checkpoint=none nothing is."""
    from sim.registry import FAMILIES

    path = tmp_path / "tf.toml"
    path.write_text(WORKLOAD.replace('classes = ["human_edit", "retry", "lose_ack"]',
                                     'classes = ["human_edit", "tests_fail"]').replace("TARGETS", ""),
                    encoding="utf-8")
    workload = FAMILIES.load_workload(str(path))
    labels = ["step-dedupe,drift_check=reject", "step-dedupe,drift_check=reject,checkpoint=per_step"]
    summary, _ = sweep(FAMILY, workload, labels, 300, workers=1)
    assert summary.tallies[labels[0]].by_invariant["lost_update"] == 0
    first = summary.first(labels[1], "lost_update")
    shrunk = shrink(FAMILY, workload, FAMILY.parse_protocol(labels[1]), first.order, "lost_update")
    assert shrunk.shortest_proved and shrunk.events[-1].kind == "tests_fail"
    assert any(e.kind == "human_edit" for e in shrunk.events)
