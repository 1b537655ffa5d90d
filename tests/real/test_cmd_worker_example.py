"""The example worker of docs/examples/cmd_worker.py (standard library only; the protocol of
docs/real-runtimes.md spoken by hand over a SQLite step log) passes ``fencesim conform --runtime CMD`` on the
saga (its external system killed mid-cell: tests/real/test_harness_faults.py)."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "docs" / "examples" / "cmd_worker.py"
COMMAND = f"{sys.executable} {EXAMPLE}"


def one_cell_per_fault_class() -> list[str]:
    """The first cell of each fault class of the saga's cruel grid, written as --cell takes it."""
    from sim.registry import FAMILIES

    target = FAMILIES.load_workload("effects-saga")
    family = FAMILIES.family_for(target)
    first: dict[str, str] = {}
    for cell in family.single_faults(target):
        transition, boundary, fault = cell.labels
        first.setdefault(fault, f"{fault} {transition} {boundary}")
    return list(first.values())


def test_the_example_imports_the_standard_library_and_worker_kit_only():
    """What it and the kit it borrows import: nothing outside Python's standard library."""
    kit = REPO / "sim" / "real" / "runtimes" / "worker_kit"
    for path in [EXAMPLE, *sorted(kit.glob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            for name in names:
                top = name.split(".")[0]
                assert top in sys.stdlib_module_names or top in ("worker_kit", "__future__"), (path.name, name)


@pytest.mark.real
@pytest.mark.slow  # about two minutes: each fault class once, under both default protocols
def test_the_example_worker_agrees_with_the_model_on_every_fault_class(cli, tmp_path):
    """One cell of every fault class of the saga, under unkeyed-retry and keyed-fingerprint-reconcile: every
    judged cell agrees; what it cannot play is not applicable or not played, never agreement."""
    args = ["conform", "--runtime", COMMAND, "--out", tmp_path / "out", "--json"]
    for cell in one_cell_per_fault_class():
        args += ["--cell", cell]
    done = cli(*args, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    document = json.loads(done.stdout)
    statuses = {c["status"] for c in document["cells"]}
    assert statuses <= {"agrees", "not_applicable", "not_played"}, statuses
    for row in document["by_protocol"].values():
        assert row["agreeing"] >= 10 and row["disagreeing"] == row["could_not_judge"] == 0
        assert row["kills"] >= 1 and row["freezes"] >= 1
    assert "every judged run agrees" in done.stderr


@pytest.mark.real
@pytest.mark.real_full
def test_the_example_worker_passes_the_whole_cruel_grid(cli, tmp_path):
    done = cli("conform", "--runtime", COMMAND, "--out", tmp_path / "out", "--json", timeout=7200)
    assert done.returncode == 0, done.stderr[-3000:]
    assert all(c["status"] != "disagrees" for c in json.loads(done.stdout)["cells"])


def test_the_protocol_page_names_every_request_and_record_the_harness_uses():
    """Every op the harness sends and every record kind it reads is on docs/real-runtimes.md, with the rules
    a worker of one's own cannot guess: recovery by itself, the reply body, approve before continue."""
    import re

    page = (REPO / "docs" / "real-runtimes.md").read_text(encoding="utf-8")
    protocol = page.split("## The worker protocol", 1)[1].split("\n## ", 1)[0]
    sent = set()
    for path in (REPO / "sim" / "real" / "runtimes").glob("*.py"):
        sent |= set(re.findall(r'"op": "([a-z_]+)"', path.read_text(encoding="utf-8")))
    assert sent >= {"start", "run", "deliver", "continue", "approve", "resolve", "stop"}
    for op in sent:
        assert f"`{op}" in protocol or f'"op": "{op}"' in protocol, op
    for kind in ("ready", "reply", "note", "done", "event", "point", "error"):
        assert f'"kind": "{kind}"' in protocol, kind
    for rule in ("is sent no `run` and no `deliver`", "**before** the `continue`", '"outcome": "committed"',
                 "Stdout is the protocol's only", "docs/examples/cmd_worker.py"):
        assert rule in protocol, rule
    assert "`[test]` extra is for" in page and ".venv/bin/pip install" not in page


#: A worker of one's own that breaks the arguments rule: the example worker, never told the start request's
#: ``arguments``.
IGNORES_ARGUMENTS = f"""
import importlib.util, sys
spec = importlib.util.spec_from_file_location("cmd_worker", {str(EXAMPLE)!r})
worker = importlib.util.module_from_spec(spec)
spec.loader.exec_module(worker)
given = worker.kit.WorkerConfig.from_start.__func__
worker.kit.WorkerConfig.from_start = classmethod(lambda cls, start: given(cls, dict(start, arguments={{}})))
sys.exit(worker.main())
"""


@pytest.mark.real
def test_a_worker_that_ignores_the_arguments_is_told_which_and_why(cli, tmp_path):
    """The saga's open_pr has [arguments.open_pr]; a worker that drops them disagrees on open_pr's fingerprint
    only, and the difference names open_pr, the arguments its requests lack and the rule it breaks."""
    script = tmp_path / "ignores_arguments.py"
    script.write_text(IGNORES_ARGUMENTS, encoding="utf-8")
    done = cli("conform", "--runtime", f"{sys.executable} {script}", "-p", "unkeyed-retry", "--cell",
               "terminate publish_release after_commit", "--out", tmp_path / "out", "--json", timeout=300)
    assert done.returncode == 1, done.stderr[-3000:]
    (found,) = json.loads(done.stdout)["disagreements"]
    (difference,) = found["differences"]
    assert difference.startswith("fingerprints of open_pr: model ")
    assert "carry none of [arguments.open_pr] (base = 'main', head = '7ac1e05', title = " in difference
    assert "a worker that ignores the start request's `arguments`" in difference
    assert "DISAGREE unkeyed-retry" in done.stderr and "fingerprints of open_pr" in done.stderr
