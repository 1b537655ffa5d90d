"""fuzz --check-determinism reruns sample seeds in a fresh process with another hash seed and compares bytes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

THIRD = Path(__file__).resolve().parents[1] / "third_family"
SHAKY = """format = 1
family = "register-shaky"
name = "shaky"
clients = ["A", "B"]
"""


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_both_families_are_deterministic_across_processes(cli, tmp_path):
    """Each family's sample runs give identical history bytes in a fresh interpreter."""
    for workload, protocol in (("seed-fuzz", "none"), ("effects-pr", "keyed")):
        done = cli("fuzz", "-w", workload, "-p", protocol, "--seeds", "60", "--check-determinism", "--no-advise",
                   "--json", "--out", tmp_path / workload)
        assert done.returncode in (0, 1), done.stderr
        assert json.loads(done.stdout)["determinism"]["identical"] is True


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_a_planted_nondeterminism_is_caught(cli, tmp_path):
    """A family whose history depends on the hash seed fails the check: exit 3, naming the runs."""
    workload = tmp_path / "shaky.toml"
    workload.write_text(SHAKY)
    env = {"FENCESIM_FAMILIES": "register_family:SHAKY",
           "PYTHONPATH": os.pathsep.join([str(THIRD), os.environ.get("PYTHONPATH", "")]),
           "PYTHONHASHSEED": "1"}
    done = cli("fuzz", "-w", workload, "-p", "blind", "--seeds", "20", "--check-determinism", "--no-advise",
               "--out", tmp_path / "out", env_extra=env)
    assert done.returncode == 3 and "nondeterminism" in done.stderr
