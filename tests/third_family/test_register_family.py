"""A third family, written only against the contract, goes through the unchanged search."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from register_family import FAMILY, Op

from sim.core.files import read_toml
from sim.core.registry import Registry
from sim.registry import SHIPPED
from sim.report.export import export
from sim.search.advisor import advise
from sim.search.exhaustive import ExploreOptions, explore
from sim.search.options import SearchOptions
from sim.search.pipeline import fuzz
from sim.search.shrink import shrink
from sim.search.sweep import sweep

HERE = Path(__file__).resolve().parent
WORKLOAD = """format = 1
family = "register"
name = "two-clients"
clients = ["A", "B"]

[faults]
classes = ["interleave"]
"""
SHORTEST = ["read A", "read B", "write A", "write B"]


@pytest.fixture
def registry():
    return Registry((*SHIPPED, FAMILY))


@pytest.fixture
def workload(registry, tmp_path):
    path = tmp_path / "two-clients.toml"
    path.write_text(WORKLOAD, encoding="utf-8")
    return registry.load_workload(str(path))


def test_registry_loads_the_family_from_its_files(workload):
    """A workload file naming the family is loaded through the registry."""
    assert workload.family == "register" and workload.base.clients == ["A", "B"]


def test_sweep_finds_the_lost_update_on_two_workers(workload):
    """The parallel sweep finds the bug under blind writes and none under compare-and-set."""
    summary, _ = sweep(FAMILY, workload, ["blind", "cas"], seeds=400, workers=2)
    assert summary.tallies["blind"].by_invariant["lost_update"] > 0
    assert summary.tallies["cas"].violating_runs == 0
    assert summary.tallies["cas"].counted["rejected_writes"] > 0


def test_shrink_reaches_the_proved_shortest_order(workload):
    """The shrinker hands back the four-event interleaving and proves nothing shorter exists."""
    summary, _ = sweep(FAMILY, workload, ["blind"], seeds=50, workers=1)
    found = summary.found[("blind", "lost_update")]
    result = shrink(FAMILY, workload, FAMILY.parse_protocol("blind"), found.order, "lost_update")
    assert [str(e) for e in result.events] == SHORTEST
    assert result.shortest_proved


def test_exhaustive_proves_cas_safe_and_finds_blind_shortest(workload):
    """Exhaustive search proves compare-and-set safe within the bound and blind writes broken at 4 events."""
    safe = explore(FAMILY, workload, FAMILY.parse_protocol("cas"), ExploreOptions(max_events=6))
    assert safe.complete and not safe.violated
    broken = explore(FAMILY, workload, FAMILY.parse_protocol("blind"), ExploreOptions(max_events=6))
    assert broken.shortest["lost_update"] == 4


def test_advisor_proposes_compare_and_set(workload):
    """The advisor's smallest change to blind writes is write=cas."""
    events = [Op(*e.split()) for e in SHORTEST]
    advice = advise(FAMILY, workload, FAMILY.parse_protocol("blind"), "lost_update", events, sample_seeds=50)
    assert advice.changes == {"write": "cas"}


def test_pipeline_export_and_replay(workload, registry, tmp_path):
    """fuzz + export writes a scenario that the registry loads and that replays to the violation."""
    result = fuzz(FAMILY, workload, ["blind"], SearchOptions(100, workers=1))
    (example,) = result.counterexamples
    scenario = FAMILY.counterexample(workload, example.protocol, "lost_update", example.events,
                                     {"name": "register_lost_update", "invariant": "lost_update"})
    replay = FAMILY.replay(scenario, example.protocol)
    paths = export(FAMILY, scenario, replay.history, tmp_path, marked=[3], fix="cas")
    loaded = registry.load_scenario(paths.scenario)
    again = FAMILY.replay(loaded, FAMILY.parse_protocol("blind"))
    assert [v.invariant for v in FAMILY.check(again.history).safety_violations] == ["lost_update"]
    assert ">>" in paths.timeline.read_text()
    data, _ = read_toml(paths.scenario)
    assert data["family"] == "register" and data["events"] == SHORTEST


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_command_line_sees_a_family_named_in_the_environment(tmp_path):
    """FENCESIM_FAMILIES makes the CLI fuzz a user's family without a change to fencesim."""
    path = tmp_path / "two-clients.toml"
    path.write_text(WORKLOAD, encoding="utf-8")
    env = dict(os.environ, FENCESIM_FAMILIES="register_family:FAMILY", NO_COLOR="1",
               PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", "from sim.cli import main; main()", "fuzz", "--workload",
                           str(path), "-p", "blind", "--seeds", "100", "--json", "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 1, done.stderr
    document = json.loads(done.stdout)
    assert document["family"] == "register"
    assert document["counterexamples"][0]["events"] == SHORTEST
