"""The effects family's runs, pinned to the bytes of the SimPy driver they replaced.

The family's kernel is data (:mod:`sim.families.effects.agenda`, :mod:`sim.families.effects.autorun`): one
kernel for sweeps, scripts, ``run`` and the search.  Before the SimPy driver was removed the two ran side by
side and gave the same bytes on 1,000 seeds of every shipped workload under every preset and engine preset;
``kernel_digests.json`` keeps what the SimPy driver gave, so a change of any history, end, fired fault or
verdict shows here, named by workload and protocol.
"""

from __future__ import annotations

import glob
import hashlib
import json
from pathlib import Path

import pytest

import sim
from sim.families.effects import FAMILY

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
PINNED = json.loads((HERE / "kernel_digests.json").read_text())
WORKLOADS = ("agent-pr-workflow", "effects-pr", "effects-release", "effects-saga", "effects-zombie",
             "notify-after-create", "pinned-dependencies", "usage-charge")
PROTOCOLS = ("unkeyed-retry", "keyed", "keyed-reconcile", "keyed-fingerprint-reconcile", "temporal", "dbos",
             "restate", "keyed-fingerprint-reconcile,lease_fence=off")


def sweep_digest(workload: str, label: str, seeds: int) -> str:
    """Every seed's history, end, unfired faults, fired tokens and verdicts, hashed in seed order."""
    loaded = sim.load_workload(workload)
    protocol = FAMILY.parse_protocol(label)
    digest = hashlib.sha256()
    for seed in range(seeds):
        replay = FAMILY.replay(loaded.base, protocol, FAMILY.generate(loaded, seed))
        rt, run = replay.state
        digest.update(replay.history.to_jsonl().encode())
        digest.update(repr((replay.end, sorted(replay.skipped), run.fired, rt.verdicts)).encode())
    return digest.hexdigest()


def scenario_files() -> list[str]:
    return sorted(glob.glob(str(ROOT / "scenarios" / "runtime" / "*.toml"))
                  + glob.glob(str(ROOT / "scenarios" / "regressions" / "effects_*.toml")))


@pytest.mark.parametrize("workload", WORKLOADS)
def test_twenty_seeds_of_every_workload_keep_their_bytes(workload):
    for label in PROTOCOLS:
        assert sweep_digest(workload, label, 20) == PINNED["sweeps_20_seeds"][f"{workload} {label}"], label


@pytest.mark.slow
@pytest.mark.parametrize("workload", WORKLOADS)
def test_a_thousand_seeds_of_every_workload_keep_their_bytes(workload):
    for label in PROTOCOLS:
        assert sweep_digest(workload, label, 1000) == PINNED["sweeps_1000_seeds"][f"{workload} {label}"], label


def test_scripts_and_regressions_keep_their_bytes():
    """The shipped scripts (played, then healed by the system) and fault-list regressions, under every preset."""
    files = scenario_files()
    assert len(files) == len({k.split(" ")[0] for k in PINNED["scenario_files"]})
    for path in files:
        scenario = sim.load_scenario(path)
        for label in PROTOCOLS:
            replay = FAMILY.replay(scenario, FAMILY.parse_protocol(label))
            got = hashlib.sha256((replay.history.to_jsonl() + repr((replay.end, sorted(replay.skipped)))).encode())
            assert got.hexdigest() == PINNED["scenario_files"][f"{Path(path).name} {label}"], (path, label)


def test_a_changed_history_is_caught():
    """The check can fail: one seed fewer gives another digest."""
    assert sweep_digest("effects-saga", "keyed", 19) != PINNED["sweeps_20_seeds"]["effects-saga keyed"]
