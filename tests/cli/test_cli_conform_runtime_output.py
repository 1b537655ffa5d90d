"""What ``fencesim conform --runtime`` prints and exports, without a real run: the side-by-side's command that
plays the real side again works as printed, a fingerprint difference is explained, the header says what was
run, and a printed cell is what ``--cell`` takes."""

from __future__ import annotations

import shlex
from pathlib import Path

from sim.cli.conform_runtime import load
from sim.cli.conform_runtime_report import export
from sim.real.runtimes.compare import CellComparison, ConformTable, observe
from sim.registry import FAMILIES

REPO_ROOT = Path(__file__).resolve().parents[2]


def disagreement(family, target, protocol: str = "unkeyed-retry", **real) -> CellComparison:
    """The first cruel cell of the workload, its model run as both sides, the real side changed by ``real``."""
    cell = family.single_faults(target)[0]
    run = family.replay(target.base, family.parse_protocol(protocol), list(cell.events))
    seen = observe(family, run.history)
    return CellComparison(protocol, tuple(cell.labels), model=seen, real={**seen, **real},
                          model_history=run.history, real_history=run.history)


def replay_args(side_by_side: str) -> list[str]:
    line = next(x for x in side_by_side.splitlines() if x.startswith("real side again: "))
    return shlex.split(line.removeprefix("real side again: "))


def test_the_real_side_again_names_a_workload_of_ones_own_by_its_file(tmp_path):
    """A workload file whose name is registered nowhere: the printed command names its file, so it loads
    (it used to name the workload by its name: "unknown workload")."""
    mine = tmp_path / "mine.toml"
    text = (REPO_ROOT / "scenarios" / "workloads" / "effects-saga.toml").read_text(encoding="utf-8")
    mine.write_text(text.replace('name = "effects-saga"', 'name = "my-own-saga"'), encoding="utf-8")
    family, target, _ = load(str(mine), ["unkeyed-retry"])
    table = ConformTable("dbos", cells=[disagreement(family, target, outcome=["failed"])])
    files = export(family, target, table, tmp_path / "out", "dbos", [])
    side = Path(next(f for f in files if f.endswith(".side-by-side.txt"))).read_text(encoding="utf-8")
    args = replay_args(side)
    named = args[args.index("--workload") + 1]
    assert named == str(mine)
    assert FAMILIES.load_workload(named).name == "my-own-saga"


def test_the_real_side_again_names_a_registered_workload_by_its_name(tmp_path):
    family, target, _ = load("effects-saga", ["unkeyed-retry"])
    table = ConformTable("dbos", cells=[disagreement(family, target, outcome=["failed"])])
    files = export(family, target, table, tmp_path / "out", "dbos", [])
    side = Path(next(f for f in files if f.endswith(".side-by-side.txt"))).read_text(encoding="utf-8")
    args = replay_args(side)
    assert args[args.index("--workload") + 1] == "effects-saga"


def test_a_fingerprint_difference_names_the_transition_the_arguments_and_the_likely_cause(tmp_path):
    """A worker that ignores the start request's arguments sends open_pr's request without the workload's
    [arguments.open_pr]: the difference names open_pr, those arguments and the rule, not two whole dicts."""
    from sim.real.runtimes.fingerprints import ARGUMENTS_RULE, model_arguments
    from sim.real.runtimes.worker_kit.config import fingerprint_of

    family, target, _ = load("effects-saga", ["unkeyed-retry"])
    task = target.base.task
    plain = fingerprint_of(model_arguments(task, "open_pr", {}))
    cell = disagreement(family, target)
    cell.task, cell.arguments = task, dict(target.base.arguments)
    cell.real = {**cell.model, "fingerprints": {**cell.model["fingerprints"], "open_pr": [plain]}}
    (line,) = cell.differences()
    model_print = cell.model["fingerprints"]["open_pr"][0]
    assert line.startswith(f"fingerprints of open_pr: model {model_print} / real {plain} -- ")
    assert "carry none of [arguments.open_pr] (base = 'main', head = '7ac1e05', title = 'Fix the flaky login test')" \
        in line
    assert "a worker that ignores the start request's `arguments`" in line and ARGUMENTS_RULE in line
    assert "{" not in line  # no whole dict
    # one argument lost: only it is named
    lost = fingerprint_of(model_arguments(task, "open_pr", {"head": "7ac1e05", "base": "main"}))
    cell.real["fingerprints"]["open_pr"] = [lost]
    (line,) = cell.differences()
    assert "lack [arguments.open_pr] title = 'Fix the flaky login test':" in line
    # arguments hashed otherwise: what the model sends, and the hash's rule
    cell.real["fingerprints"]["open_pr"] = ["0123456789ab"]
    (line,) = cell.differences()
    assert "are not the model's (base = 'main', head = '7ac1e05', task = 'task_42'" in line and "sha256" in line
    table = ConformTable("dbos", cells=[cell])
    files = export(family, target, table, tmp_path / "out", "dbos", [])
    side = Path(next(f for f in files if f.endswith(".side-by-side.txt"))).read_text(encoding="utf-8")
    assert "\nfingerprints of open_pr: model " in side


def test_the_rule_a_fingerprint_difference_points_to_is_in_the_docs_in_one_sentence():
    from sim.real.runtimes.fingerprints import RULE

    page = " ".join((REPO_ROOT / "docs" / "real-runtimes.md").read_text(encoding="utf-8").split())
    protocol = page.split("## The worker protocol", 1)[1].split(" ## ", 1)[0]
    assert RULE in protocol


def test_a_printed_cell_is_what_cell_takes_and_the_older_order_is_taken_too():
    """The output names a cell 'fault transition boundary', the order --cell takes, so a printed cell can be
    copied into --cell; the order printed before ('transition/boundary/fault') is still taken."""
    from sim.cli.conform_runtime import pick_cells

    family, target, _ = load("effects-saga", ["unkeyed-retry"])
    cells = family.single_faults(target)
    chosen = next(c for c in cells if tuple(c.labels) == ("publish_release", "after_commit", "terminate"))
    printed = CellComparison("unkeyed-retry", tuple(chosen.labels))
    assert printed.name == "terminate publish_release after_commit" == printed.to_json()["cell"]
    for given in (printed.name, "publish_release/after_commit/terminate", "  terminate  publish_release after_commit"):
        only = pick_cells(family, target, [given])
        assert [c.labels for c in cells if only(c)] == [chosen.labels], given


def test_the_header_says_what_was_run(tmp_path):
    """One --cell: '1 cell of the cruel grid's N', not 'cruel grid'; without --cell, the whole grid."""
    import io

    from rich.console import Console

    from sim.cli.conform_runtime import _scope
    from sim.cli.conform_runtime_report import print_table

    family, target, _ = load("effects-saga", ["unkeyed-retry"])
    total = len(family.single_faults(target))
    cell = disagreement(family, target)
    table = ConformTable("dbos", cells=[cell])
    out = io.StringIO()
    scope = _scope(family, target, table, ["terminate publish_release after_commit"])
    print_table(Console(file=out, width=200), "effects-saga", "dbos", table, [], scope)
    header = out.getvalue().splitlines()[0]
    assert header == f"conform: effects-saga, 1 cell of the cruel grid's {total} (--cell), runtime: dbos"
    assert _scope(family, target, table, ["a b c", "d/e/f"]).startswith("2 cells of the cruel grid's")
    assert _scope(family, target, table, []) == f"the cruel grid ({total} cells)"


def test_a_ticker_says_which_item_of_how_many_and_the_time_every_few_seconds():
    """Without a bar (--json, a log), progress is plain lines on stderr: at each item's start, then every
    `every` seconds while it runs -- never silent for minutes."""
    import io
    import time

    from sim.cli.progress import TICK_S, Ticker

    assert TICK_S <= 5
    out = io.StringIO()
    with Ticker({"conform": "cell"}, every=0.05, stream=out) as tick:
        tick("conform", 0, 3, "unkeyed-retry: terminate open_pr after_commit")
        time.sleep(0.4)
        tick("conform", 1, 3, "unkeyed-retry: terminate publish_release after_commit")
    lines = out.getvalue().splitlines()
    assert lines[0] == "conform: cell 1 of 3 (unkeyed-retry: terminate open_pr after_commit), 0 s elapsed"
    assert len([x for x in lines if x.startswith("conform: cell 1 of 3")]) >= 3  # repeated while it runs
    assert lines[-1].startswith("conform: cell 2 of 3 (unkeyed-retry: terminate publish_release after_commit)")
