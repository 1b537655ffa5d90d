"""``fencesim cruel`` and ``fencesim exposure`` (sim.cli.effects) through the command line: output, exported
fault lists that replay with ``fencesim run``, and exit codes."""

from __future__ import annotations

import json
import tomllib

import pytest

IRREVERSIBLE_CELLS = {("publish_release", "after_dispatch", "duplicate"),
                      ("publish_release", "after_dispatch", "delay_ack"),
                      ("publish_release", "after_commit", "duplicate")}


def _violating(grid):
    return {(t, b, f) for t, boundaries in grid.items() for b, faults in boundaries.items()
            for f, cell in faults.items() if cell != "ok"}


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_exposure_json_defaults(cli):
    """With no flags, --json gives exactly the seed's five numbers."""
    done = cli("exposure", "--json")
    assert done.returncode == 0
    assert json.loads(done.stdout)["analytic"] == {
        "requests": 70000, "ambiguous": 2870, "already_committed": 1722, "auto_reconciled": 2861.39,
        "human_exceptions": 8.61, "human_exceptions_rounded": 9}


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_exposure_flags_and_bad_rate(cli):
    """Rates are flags; a rate above one is an input error (exit 4, one line)."""
    done = cli("exposure", "--json", "--tasks", "100", "--transitions", "2", "--ambiguous-rate", "0.5")
    assert json.loads(done.stdout)["analytic"]["ambiguous"] == 100
    bad = cli("exposure", "--ambiguous-rate", "4.1")
    assert bad.returncode == 4 and "between 0 and 1" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_exposure_simulate_json_shape(cli):
    """--simulate adds {preset: {metric: {value, ci_low, ci_high}}} and reports progress on stderr."""
    done = cli("exposure", "--json", "--simulate", "--seeds", "100", "-p", "keyed")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert set(document["simulated"]["keyed"]["duplicate_effects"]) == {"value", "ci_low", "ci_high"}
    assert "simulating keyed" in done.stderr


@pytest.mark.slow  # over 3 s: outside the fast lane
@pytest.mark.parametrize("knob", ["lease_fence=off", "irreversible_keys=on"])
def test_exposure_simulate_refuses_knobs_it_does_not_exercise(cli, knob):
    """--simulate with a knob the worked example never exercises exits 4 with one line naming it, printing nothing."""
    done = cli("exposure", "--simulate", "--seeds", "10", "-p", f"keyed,{knob}")
    assert done.returncode == 4, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and knob.split("=")[0] in lines[0] and "fencesim fuzz" in lines[0]
    assert done.stdout == ""


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_cruel_full_design_fails_only_the_keyless_release_cells(cli, tmp_path):
    """keyed-fingerprint-reconcile: three release cells violate (exit 1), each exported as a fault list."""
    out = tmp_path / "cx"
    done = cli("cruel", "--protocol", "keyed-fingerprint-reconcile", "--json", "--out", out)
    assert done.returncode == 1, done.stderr
    grid = json.loads(done.stdout)["keyed-fingerprint-reconcile"]
    assert _violating(grid) == IRREVERSIBLE_CELLS
    assert len(list(out.glob("*.toml"))) == 3


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_cruel_with_irreversible_keys_exits_zero_and_writes_nothing(cli, tmp_path):
    """keyed-fingerprint-reconcile,irreversible_keys=on: every cell ok, exit 0, no files."""
    label = "keyed-fingerprint-reconcile,irreversible_keys=on"
    done = cli("cruel", "--protocol", label, "--json", "--out", tmp_path / "cx")
    assert done.returncode == 0, done.stderr
    grid = json.loads(done.stdout)[label]
    assert {cell for b in grid.values() for f in b.values() for cell in f.values()} == {"ok"}
    assert not (tmp_path / "cx").exists()


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_cruel_lease_fence_off_fails_more_cells(cli, tmp_path):
    """Without the lease fence the old owner keeps writing: more cells than the three release cells violate."""
    label = "keyed-fingerprint-reconcile,lease_fence=off"
    done = cli("cruel", "--protocol", label, "--json", "--out", tmp_path / "cx")
    assert done.returncode == 1
    violating = _violating(json.loads(done.stdout)[label])
    assert IRREVERSIBLE_CELLS < violating
    assert {f for _, _, f in violating - IRREVERSIBLE_CELLS} == {"change_owner"}


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_cruel_unkeyed_exits_one_and_counterexample_replays(cli, tmp_path):
    """unkeyed-retry: exit 1, 32 fault-list files, and 'fencesim run FILE' reproduces the violation."""
    out = tmp_path / "cx"
    done = cli("cruel", "--protocol", "unkeyed-retry", "--out", out)
    assert done.returncode == 1
    files = sorted(out.glob("*.toml"))
    assert len(files) == 32
    assert "fencesim run" in done.stdout
    data = tomllib.loads((out / "cruel_unkeyed_retry_open_pr_after_dispatch_terminate.toml").read_text())
    assert (data["family"], data["faults"]) == ("effects", ["terminate open_pr after_dispatch"])
    replay = cli("run", out / "cruel_unkeyed_retry_open_pr_after_dispatch_terminate.toml", "--json")
    assert replay.returncode == 1
    result = json.loads(replay.stdout)[0]
    assert "duplicate_effect" in {v["invariant"] for v in result["violations"]}
    assert result["family"] == "effects" and result["protocol"] == "unkeyed-retry"


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_cruel_default_out_is_under_the_current_directory(cli, tmp_path):
    """Without --out, counterexamples go to ./counterexamples/cruel, named cruel_<protocol>_<cell>."""
    done = cli("cruel", "-p", "keyed", cwd=tmp_path)
    assert done.returncode == 1
    assert list((tmp_path / "counterexamples" / "cruel").glob("cruel_keyed_*.toml"))


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_cruel_bad_protocol_is_an_input_error(cli):
    """An unknown preset is one line and exit 4."""
    done = cli("cruel", "-p", "keyed-magic")
    assert done.returncode == 4 and "unknown effects preset" in done.stderr


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_cruel_refuses_a_workspace_workload(cli):
    """cruel runs effects workloads only; a workspace workload is an input error."""
    done = cli("cruel", "--workload", "tiny")
    assert done.returncode == 4 and "effects workload" in done.stderr


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_cruel_runs_an_effects_workload(cli, tmp_path):
    """cruel --workload effects-pr runs that workload's classes at every boundary of its two transitions."""
    done = cli("cruel", "--workload", "effects-pr", "-p", "keyed-fingerprint-reconcile,irreversible_keys=on",
               "--json", "--out", tmp_path / "cx")
    grid = json.loads(done.stdout)["keyed-fingerprint-reconcile,irreversible_keys=on"]
    assert list(grid) == ["open_pr", "publish_release"]
    assert "zombie" in grid["open_pr"]["after_intent"]
    assert done.returncode == 0, done.stderr


@pytest.mark.slow  # over 3 s: outside the fast lane
@pytest.mark.parametrize("columns", [200, 120, 80])
def test_the_cruel_grid_fits_the_terminal_and_never_cuts_a_cell(cli, tmp_path, columns):
    """16 fault classes at 200 columns cut every cell (`unapprove…`): now the fault columns come in as many
    tables as the width needs, each within it, every fault class and every invariant whole."""
    from sim.registry import FAMILIES

    done = cli("cruel", "--workload", "effects-saga", "-p", "unkeyed-retry", "--out", tmp_path / "out",
               env_extra={"COLUMNS": str(columns)})
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    grid = [line for line in lines if line[:1] in "┏┃┡│└"]
    assert grid and all(len(line) <= columns for line in grid)
    assert "…" not in done.stdout
    family = FAMILIES.get("effects")
    target = FAMILIES.load_workload("effects-saga")
    for fault in {cell.labels[2] for cell in family.single_faults(target)}:
        assert f" {fault} " in done.stdout, fault
    for invariant in ("duplicate_effect", "lost_success", "unknown_as_failed"):
        assert f" {invariant} " in done.stdout


def test_terminal_tables_break_names_only_after_commas_and_equals(cli, tmp_path):
    """A long protocol label in a narrow terminal: every piece between ',' and '=' whole on its line, and no
    invariant folded inside its name (`receipt_check=trusti ng`, `unknown_as_faile d`)."""
    label = "keyed-fingerprint-reconcile,irreversible_keys=on,receipt_check=trusting"
    # the table is the sweep's: no advice is asked for (it would take most of the run and print after the table)
    done = cli("fuzz", "--workload", "effects-saga", "-p", label, "-p", "unkeyed-retry", "--seeds", "20",
               "--no-advise", "--out", tmp_path / "out", env_extra={"COLUMNS": "100"})
    assert done.returncode == 1, done.stderr
    table = done.stdout.split("the seed's claims", 1)[0]
    for piece in ("keyed-fingerprint-reconcile,", "irreversible_keys=on,", "receipt_check=trusting",
                  "unknown_as_failed", "duplicate_effect"):
        assert piece in table, piece
