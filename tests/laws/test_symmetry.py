"""Symmetry reduction (``explore --symmetry``): one state per orbit of a workload's interchangeable parts proves
what the search without it proves, and the law suite's ``symmetric`` law catches a wrong declaration -- a
canonical key that merges states of different orbits, and parts the model tells apart."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from sim.core.registry import Registry
from sim.core.symmetry import Symmetry, renamings
from sim.registry import FAMILIES, SHIPPED
from sim.search.exhaustive import ExploreOptions, explore
from sim.testing import LawBroken, check_family

HERE = Path(__file__).resolve().parents[1] / "third_family"
sys.path.insert(0, str(HERE))
from register_family import FAMILY as REGISTER  # noqa: E402
from register_family import Op, RegisterFamily, RegisterMachine, renamed  # noqa: E402


def register_workload(tmp_path, clients):
    path = tmp_path / f"clients{len(clients)}.toml"
    names = ", ".join(f'"{c}"' for c in clients)
    path.write_text(f'format = 1\nfamily = "register"\nname = "clients{len(clients)}"\nclients = [{names}]\n'
                    '[faults]\nclasses = ["interleave"]\n', encoding="utf-8")
    return path, Registry((*SHIPPED, REGISTER)).load_workload(str(path))


@pytest.mark.parametrize("protocol", ["blind", "cas"])
def test_one_state_per_orbit_proves_what_every_state_proves(tmp_path, protocol):
    """Four clients to depth 8: the same proofs and shortest lengths, far fewer states, real orders kept."""
    _, workload = register_workload(tmp_path, ["A", "B", "C", "D"])
    chosen = REGISTER.parse_protocol(protocol)
    every = explore(REGISTER, workload, chosen, ExploreOptions(max_events=8)).to_json()
    orbits = explore(REGISTER, workload, chosen, ExploreOptions(max_events=8, symmetry=True)).to_json()
    assert orbits.pop("symmetry") == "clients A, B, C, D" and "symmetry" not in every
    assert orbits["complete"] and every["complete"]
    assert orbits["proved_absent"] == every["proved_absent"]
    assert {k: v["shortest_events"] for k, v in orbits["violations"].items()} == \
        {k: v["shortest_events"] for k, v in every["violations"].items()}
    assert orbits["distinct_states"] * 5 < every["distinct_states"]
    for name, found in orbits["violations"].items():  # every order listed is a real counterexample
        for order in found["orders"]:
            assert order in every["violations"][name]["orders"]
            replay = REGISTER.replay(workload.base, chosen, [REGISTER.parse_event(workload.base, e) for e in order])
            assert name in {v.invariant for v in REGISTER.check(replay.history).safety_violations}


def test_a_family_without_symmetry_searches_as_without_it():
    family, workload = FAMILIES.get("workspace"), FAMILIES.load_workload("tiny")
    plain = explore(family, workload, family.parse_protocol("none"), ExploreOptions(max_events=5)).to_json()
    asked = explore(family, workload, family.parse_protocol("none"), ExploreOptions(max_events=5, symmetry=True))
    asked = asked.to_json()
    assert asked == plain


class BlurredOrbits(RegisterFamily):
    """Planted: the canonical key forgets what the clients read, so a client about to overwrite a newer version
    merges with one that read it."""

    def symmetry(self, workload):
        clients = list(workload.base.clients)
        return Symmetry("clients", lambda s: (s.value, s.version, len(s.read), len(s.done), s.clients),
                        renamings(clients, renamed))


class FavouredClient(RegisterFamily):
    """Planted: client A always writes with compare-and-set, yet the clients are declared interchangeable."""

    def machine(self, scenario, protocol):
        return FavouringMachine(tuple(scenario.clients), protocol.knobs["write"] == "cas")


class FavouringMachine(RegisterMachine):
    def step(self, state, op):
        if op.kind == "write" and op.client == "A" and not self.cas:
            self.cas = True
            try:
                return super().step(state, op)
            finally:
                self.cas = False
        return super().step(state, op)


def test_the_register_declares_a_sound_symmetry(tmp_path):
    _, workload = register_workload(tmp_path, ["A", "B", "C"])
    assert check_family(REGISTER, workload, laws=["symmetric"], examples=40) == {"symmetric": "held"}


def test_a_canonical_key_that_merges_two_orbits_is_caught(tmp_path):
    _, workload = register_workload(tmp_path, ["A", "B", "C"])
    with pytest.raises(LawBroken) as broken:
        check_family(BlurredOrbits(), workload, ["blind"], laws=["symmetric"], examples=40)
    assert broken.value.law == "symmetric" and "no renaming" in str(broken.value)


def test_parts_the_model_tells_apart_are_caught(tmp_path):
    _, workload = register_workload(tmp_path, ["A", "B"])
    with pytest.raises(LawBroken) as broken:
        check_family(FavouredClient(), workload, ["blind"], laws=["symmetric"], examples=60)
    assert broken.value.law == "symmetric" and "renamed" in str(broken.value)


def test_the_renamings_are_every_permutation_but_the_identity():
    maps = renamings(["A", "B", "C"], renamed)
    images = {tuple(str(m(Op("read", c))) for c in "ABC") for m in maps}
    assert len(maps) == 5 and ("read A", "read B", "read C") not in images and len(images) == 5


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_explore_symmetry_on_the_command_line(tmp_path, cli):
    """``--symmetry`` names the parts in the document and on the terminal; a family with none says so and
    gives the document of the search without it."""
    path, _ = register_workload(tmp_path, ["A", "B", "C"])
    env = {"FENCESIM_FAMILIES": "register_family:FAMILY",
           "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    done = cli("explore", "-w", path, "-p", "cas", "--depth", "6", "--symmetry", "--json", env_extra=env)
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout)["protocols"][0]
    assert row["symmetry"] == "clients A, B, C" and row["proved_absent"] == ["lost_update"]
    assert "one state per orbit of the interchangeable clients A, B, C" in done.stderr
    asked = cli("explore", "-w", "tiny", "-p", "plan", "--depth", "4", "--symmetry", "--json")
    plain = cli("explore", "-w", "tiny", "-p", "plan", "--depth", "4", "--json")
    assert asked.returncode == plain.returncode == 0 and asked.stdout == plain.stdout
    assert "declares no interchangeable parts in tiny" in asked.stderr
