"""The seed's cruel test (cruel.py) as a single-fault grid: which cells each design survives, and
violating cells exported as fault lists that replay to the same history."""

from __future__ import annotations

import functools

import tomli_w

import sim
from sim.families.effects import FAMILY
from sim.families.effects.cruel import CRUEL_TASK, cells, cruel_workload
from sim.families.effects.faults import BOUNDARIES, CRUEL_FAULTS, FaultEvent
from sim.search.grid import single_fault_grid

IRREVERSIBLE_CELLS = {("publish_release", "after_dispatch", "duplicate"),
                      ("publish_release", "after_dispatch", "delay_ack"),
                      ("publish_release", "after_commit", "duplicate")}


@functools.cache
def _grid(label):
    return single_fault_grid(FAMILY, cruel_workload(), FAMILY.parse_protocol(label))


def _violating(label):
    return {cell.labels for cell in _grid(label).violations}


def test_cruel_workload_is_one_task_of_the_saga_with_the_four_faults():
    """The cruel workload runs task_42 through the four-step saga with the four cruel faults, one at a time."""
    workload = cruel_workload()
    assert (workload.family, workload.base.task, workload.base.task == CRUEL_TASK) == ("effects", "task_42", True)
    assert workload.classes == CRUEL_FAULTS and workload.per_run_max == 1
    assert workload.base.workflow.names() == ["create_branch", "open_pr", "create_preview", "publish_release"]


def test_cells_cover_every_transition_boundary_and_fault():
    """There is one cell per (transition, boundary, fault): 4 x 5 x 4 = 80, each a one-fault order."""
    grid_cells = cells(cruel_workload())
    assert len(grid_cells) == 4 * len(BOUNDARIES) * len(CRUEL_FAULTS) == 80
    first = grid_cells[0]
    assert first.labels == ("create_branch", "before_intent", "terminate")
    assert first.events == (FaultEvent("terminate", "create_branch", "before_intent"),)
    assert FAMILY.single_faults(cruel_workload()) == grid_cells


def test_keyed_fingerprint_reconcile_fails_only_the_unkeyed_irreversible_cells():
    """The seed's recommended design keeps one outcome everywhere but three cells of the keyless release."""
    assert len(_grid("keyed-fingerprint-reconcile").cells) == 80
    assert _violating("keyed-fingerprint-reconcile") == IRREVERSIBLE_CELLS
    assert all("duplicate_effect" in c.invariants for c in _grid("keyed-fingerprint-reconcile").violations)


def test_irreversible_keys_make_every_cell_pass():
    """With irreversible_keys=on the release is keyed too, and all 80 cells hold."""
    assert _grid("keyed-fingerprint-reconcile,irreversible_keys=on").violations == []


def test_lease_fence_off_lets_the_old_owner_duplicate_effects():
    """Without the lease fence, change_owner leaves a second writer: cells fail beyond the three release cells."""
    unfenced = _violating("keyed-fingerprint-reconcile,lease_fence=off")
    assert IRREVERSIBLE_CELLS < unfenced
    extra = unfenced - IRREVERSIBLE_CELLS
    assert {labels[2] for labels in extra} == {"change_owner"}
    assert {labels[0] for labels in extra} == {"create_branch", "open_pr", "create_preview", "publish_release"}


def test_unkeyed_retry_duplicates_after_dispatch_and_commit():
    """Unkeyed retry duplicates exactly where a request may have committed unseen."""
    grid = _grid("unkeyed-retry")
    assert {c.labels[1] for c in grid.violations} == {"after_dispatch", "after_commit"}
    assert len(grid.violations) == 32
    assert all("duplicate_effect" in c.invariants for c in grid.violations)


def test_keyed_without_reconcile_records_unknown_as_failed():
    """Keys stop duplicates of keyed creations, but a timeout recorded as failed is still the process error;
    only the keyless release also duplicates."""
    grid = _grid("keyed")
    keyed = [c for c in grid.violations if c.labels[0] != "publish_release"]
    assert keyed and {i for c in keyed for i in c.invariants} == {"unknown_as_failed"}
    release = [c for c in grid.violations if c.labels[0] == "publish_release"]
    assert all("duplicate_effect" in c.invariants for c in release)
    with_keys = _grid("keyed,irreversible_keys=on")
    assert {i for c in with_keys.violations for i in c.invariants} == {"unknown_as_failed"}


def test_grid_json_shape():
    """to_json is {transition: {boundary: {fault: 'ok' | [invariant, ...]}}}."""
    document = _grid("unkeyed-retry").to_json()
    assert list(document) == ["create_branch", "open_pr", "create_preview", "publish_release"]
    cell = document["open_pr"]["after_commit"]["terminate"]
    assert cell[0] == "duplicate_effect"
    assert document["open_pr"]["before_intent"]["terminate"] == "ok"
    assert _grid("unkeyed-retry").label_names == ("transition", "boundary", "fault")


def _exported(tmp_path, label, cell):
    protocol = FAMILY.parse_protocol(label)
    meta = {"name": "cx", "invariant": cell.invariants[0], "cell": "/".join(cell.labels), "commit": "deadbeef",
            "minimal": True, "workload": "cruel", "description": "a cruel cell"}
    scenario = FAMILY.counterexample(cruel_workload(), protocol, cell.invariants[0], cell.events, meta)
    path = tmp_path / f"{'_'.join(cell.labels)}.toml"
    path.write_text(tomli_w.dumps(FAMILY.dump_scenario(scenario)), encoding="utf-8")
    return path


def test_counterexamples_replay_to_the_same_history(tmp_path):
    """Each violating cell, exported as a fault list, replays to the grid run's history and violations."""
    label = "unkeyed-retry"
    protocol = FAMILY.parse_protocol(label)
    for cell in _grid(label).violations:
        path = _exported(tmp_path, label, cell)
        data = sim.load_scenario(path)
        assert data.faults == list(cell.events) and data.protocol == label
        assert (data.meta["invariant"], data.meta["cell"], data.meta["commit"]) == (
            cell.invariants[0], "/".join(cell.labels), "deadbeef")
        replayed = sim.run_scenario(data)
        original = FAMILY.replay(cruel_workload().base, protocol, cell.events)
        assert replayed.history.to_jsonl() == original.history.to_jsonl()
        assert sorted({v.invariant for v in replayed.violations}) == sorted(cell.invariants)


def test_exported_cell_file_is_a_fault_list(tmp_path):
    """The file of a violating cell names its family and lists the one fault, with no script."""
    import tomllib

    cell = _grid("unkeyed-retry").violations[0]
    data = tomllib.loads(_exported(tmp_path, "unkeyed-retry", cell).read_text())
    assert (data["format"], data["family"], data["task"], data["workflow"]) == (1, "effects", "task_42", "saga")
    assert data["faults"] == [str(cell.events[0])] and "events" not in data


def test_counterexample_under_a_safe_protocol_is_clean(tmp_path):
    """The same fault list replayed under keyed-fingerprint-reconcile violates nothing."""
    cell = next(c for c in _grid("unkeyed-retry").violations
                if c.labels == ("open_pr", "after_commit", "terminate"))
    scenario = sim.load_scenario(_exported(tmp_path, "unkeyed-retry", cell))
    assert sim.run_scenario(scenario, "keyed-fingerprint-reconcile").violations == []
