"""The registry of families: lookup by name and alias, the default family, files naming their
family, and telling which family wrote a recorded history."""

from __future__ import annotations

import pytest

from sim.core.errors import HistoryError, ScenarioError
from sim.core.family import Family
from sim.core.history import History
from sim.core.knobs import Knob, KnobTable
from sim.core.registry import Registry
from sim.families.effects import FAMILY as EFFECTS
from sim.families.workspace import FAMILY as WORKSPACE
from sim.registry import FAMILIES


class ToyFamily(Family):
    """The least a family must give to be registered (nothing here is ever run)."""

    name = "toy"
    aliases = ("plaything",)
    knobs = KnobTable("toy", (Knob("lock", ("off", "on"), "off", "a lock"),), {"safe": {"lock": "on"}})
    history_events = frozenset({"tick"})

    def load_scenario(self, data, source):
        return data

    def dump_scenario(self, scenario):
        return dict(scenario)

    def load_workload(self, data, source):
        raise NotImplementedError

    def generate(self, workload, seed):
        return ()

    def parse_event(self, scenario, text):
        return text

    def alphabet(self, workload):
        return []

    def replay(self, scenario, protocol, events=None):
        raise NotImplementedError

    def state_key(self, replay):
        return ()

    def verdicts(self, replay):
        return []

    def counterexample(self, workload, protocol, invariant, events, meta):
        return None


def _history(*names):
    return History.from_dicts([{"actor": "a", "event": n} for n in names])


def test_program_registry_lists_workspace_first_then_runtime():
    """sim.registry.FAMILIES holds the workspace family (the default) and then the effects family."""
    assert FAMILIES.names() == ["workspace", "effects"]
    assert FAMILIES.default is WORKSPACE


def test_get_finds_families_by_name_and_alias():
    """'effects' and its alias 'runtime' (its former name) are the same family object."""
    assert FAMILIES.get("workspace") is WORKSPACE
    assert FAMILIES.get("effects") is FAMILIES.get("runtime") is EFFECTS


def test_unknown_family_is_a_scenario_error_with_a_suggestion():
    """An unknown family name is refused with the closest name and the list of families."""
    with pytest.raises(ScenarioError) as caught:
        FAMILIES.get("runtim")
    assert "did you mean 'runtime'" in caught.value.message and "workspace, effects" in caught.value.message


def test_two_families_of_one_name_are_refused():
    """Building a registry where two families share a name or alias raises ValueError."""
    with pytest.raises(ValueError, match="workspace"):
        Registry((WORKSPACE, WORKSPACE))


def test_with_family_builds_a_new_registry_and_keeps_the_old():
    """with_family adds a family (reachable by alias) in a new registry; the program's registry is unchanged."""
    toy = ToyFamily()
    bigger = FAMILIES.with_family(toy)
    assert bigger.names() == ["workspace", "effects", "toy"]
    assert bigger.get("plaything") is toy and bigger.default is WORKSPACE
    with pytest.raises(ScenarioError):
        FAMILIES.get("toy")


def test_family_for_reads_the_family_attribute():
    """family_for picks a scenario's or workload's family by its 'family' attribute; none means the default."""
    assert FAMILIES.family_for(FAMILIES.load_workload("effects-pr")) is EFFECTS
    assert FAMILIES.family_for(FAMILIES.load_workload("tiny")) is WORKSPACE
    assert FAMILIES.family_for(object()) is WORKSPACE


def test_load_scenario_dispatches_on_the_family_key(seed_dir, stories_dir):
    """A file without 'family' is a workspace scenario; 'family = "effects"' makes it an effects one."""
    assert FAMILIES.load_scenario(seed_dir / "concurrent_edit.toml").family == "workspace"
    assert FAMILIES.load_scenario(stories_dir / "pr_lost_response.toml").family == "effects"


def test_file_naming_an_unknown_family_is_refused_at_its_line(tmp_path):
    """A scenario file whose family is unknown is refused at the 'family' line."""
    path = tmp_path / "odd.toml"
    path.write_text('name = "odd"\nfamily = "rocket"\n', encoding="utf-8")
    with pytest.raises(ScenarioError) as caught:
        FAMILIES.load_scenario(path)
    assert caught.value.where == f"{path}:2" and "rocket" in caught.value.message


def test_infer_history_family_recognises_each_family(seed_dir, stories_dir):
    """Simulated histories of each family are attributed to that family."""
    workspace = FAMILIES.load_scenario(seed_dir / "preemption_retry.toml")
    runtime = FAMILIES.load_scenario(stories_dir / "pr_lost_response.toml")
    assert FAMILIES.infer_history_family(WORKSPACE.replay(workspace, WORKSPACE.parse_protocol("none")).history) \
        is WORKSPACE
    assert FAMILIES.infer_history_family(EFFECTS.replay(runtime, EFFECTS.parse_protocol("keyed")).history) is EFFECTS


def test_infer_history_family_follows_the_majority_of_event_names():
    """The family whose event names the history uses most wins."""
    assert FAMILIES.infer_history_family(_history("deliver", "deliver", "committed")) is WORKSPACE
    assert FAMILIES.infer_history_family(_history("deliver", "committed", "accepted")) is EFFECTS


@pytest.mark.parametrize("names", [(), ("heartbeat", "log_rotated"), ("deliver", "committed")],
                         ids=["empty", "unknown-events", "tie"])
def test_infer_history_family_refuses_when_it_cannot_tell(names):
    """A history no family claims, or two claim equally, is a HistoryError asking for --family."""
    with pytest.raises(HistoryError, match="--family"):
        FAMILIES.infer_history_family(_history(*names))


def test_infer_history_family_sees_an_added_family():
    """A registry with a user's family attributes that family's histories to it."""
    toy = ToyFamily()
    assert FAMILIES.with_family(toy).infer_history_family(_history("tick", "tick", "deliver")) is toy


def test_extra_families_load_module_attribute_specs():
    """FENCESIM_FAMILIES names families as module:ATTRIBUTE (FAMILY by default), comma-separated."""
    from sim.registry import extra_families

    assert extra_families("") == []
    assert extra_families("sim.families.workspace:FAMILY, sim.families.effects") == [WORKSPACE, EFFECTS]


@pytest.mark.parametrize("spec, fragment", [("no.such.module:FAMILY", "cannot load family"),
                                            ("sim.families.workspace:NOPE", "cannot load family"),
                                            ("sim.core.errors:InputError", "is not a fencesim Family")])
def test_extra_families_refuse_what_is_not_a_family(spec, fragment):
    """A spec that does not import, or names something other than a Family, is an input error in one line."""
    from sim.core.errors import InputError
    from sim.registry import extra_families

    with pytest.raises(InputError, match=fragment):
        extra_families(spec)


def test_a_clashing_family_in_the_environment_is_an_input_error(monkeypatch):
    """A family in FENCESIM_FAMILIES whose name is already taken is refused as an input error (exit 4), not a crash."""
    from sim.core.errors import InputError
    from sim.registry import ENVIRONMENT_VARIABLE, build_registry

    monkeypatch.setenv(ENVIRONMENT_VARIABLE, "sim.families.workspace:FAMILY")
    with pytest.raises(InputError):
        build_registry()
