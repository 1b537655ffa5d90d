"""A review's figures written by worker processes are the bytes written in one process, in the same files."""

from __future__ import annotations

import pytest

import sim.app.reviewing as reviewing
import sim.report.folder as folder
from sim.app.designs import load_design

DESIGN = """format = 1
name = "inline"
protocols = ["keyed", "unkeyed-retry"]
seeds = 8

[workload]
family = "effects"
task = "task_1"
workflow = [ { name = "create_account", class = "keyed_creation", object = "account" },
             { name = "charge_card", class = "irreversible", object = "charge" } ]
[workload.faults]
classes = ["timeout", "lose_response"]
[workload.limits]
max_events = 2
"""


@pytest.mark.slow  # a review and two reports: outside the fast lane
def test_figures_written_by_two_workers_are_the_bytes_one_process_writes(tmp_path, monkeypatch):
    path = tmp_path / "inline.toml"
    path.write_text(DESIGN, encoding="utf-8")
    results = reviewing.run_review([load_design(path)], workers=1)
    started = []

    class Counted(folder.Workers):
        def __init__(self, count, *args):
            started.append(count)
            super().__init__(count, *args)

    monkeypatch.setattr(folder, "Workers", Counted)
    folder.write_review(results, tmp_path / "one", 1.0, workers=1)
    assert started == []  # one worker: written here
    folder.write_review(results, tmp_path / "two", 1.0, workers=2)
    assert started == [2]
    one = {p.name: p.read_bytes() for p in sorted((tmp_path / "one" / "figures").iterdir())}
    two = {p.name: p.read_bytes() for p in sorted((tmp_path / "two" / "figures").iterdir())}
    assert len(one) >= 6 and {name.rsplit(".", 1)[1] for name in one} == {"svg", "png"}
    assert one == two
