"""Workspace scenario files: the seeds load, bad input is a ScenarioError at file:line, export round-trips."""

from __future__ import annotations

import textwrap

import pytest
import tomli_w

import sim
from sim.core.errors import InputError, ScenarioError
from sim.core.files import Source, read_toml
from sim.families.workspace import FAMILY
from sim.families.workspace.scenario import (
    Action,
    WorkspaceScenario,
    build_scenario,
    parse_action,
    scenario_to_dict,
)
from sim.registry import FAMILIES


def load_scenario(path):
    """Load through the program's registry, as 'fencesim run' does."""
    return FAMILIES.load_scenario(path)

SEEDS = ("concurrent_edit", "preemption_retry", "replan_drift")

HEAD = """\
name = "bad"
files = { "app.py" = "v0" }
plan = [ { id = "s1", path = "app.py", patch = "v1" },
         { id = "s2", path = "app.py", patch = "v2" } ]
"""  # four lines

HUNKED = """\
format = 1
name = "hunked"
files = { "app.py" = { handler = "h0", tests = "t0" }, "lib.py" = "l0" }
plan = [ { id = "s1", path = "app.py", patch = { handler = "h1" } },
         { id = "s2", path = "lib.py", patch = "l1" } ]
events = [ "plan", "dispatch s1", "human_edit app.py#tests t-human", "deliver s1" ]
"""


def _load_error(tmp_path, text: str, name: str = "bad.toml") -> ScenarioError:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert isinstance(caught.value, InputError)
    return caught.value


@pytest.mark.parametrize("name", SEEDS)
def test_seed_scenario_loads(seed_dir, name):
    """Each seed scenario loads with the seed's two-step plan on app.py and an [expect] for all four presets."""
    scenario = load_scenario(seed_dir / f"{name}.toml")
    assert scenario.name == name
    assert scenario.step_ids() == ["s1", "s2"]
    assert scenario.files == {"app.py": {"_": "v0"}}
    assert set(scenario.expect) == {"none", "plan", "step", "step-dedupe"}


def test_seed_events_parse_back_to_their_text(seed_dir):
    """The parsed events of concurrent_edit print back as written in the file."""
    scenario = load_scenario(seed_dir / "concurrent_edit.toml")
    assert [str(e) for e in scenario.events] == [
        "plan", "dispatch s1", "deliver s1", "ack s1", "dispatch s2", "human_edit app.py human-refactor", "deliver s2",
    ]


def test_malformed_toml_points_at_line(tmp_path):
    """Malformed TOML raises ScenarioError at the line where the parser failed."""
    error = _load_error(tmp_path, HEAD + 'events = [ "plan",\n  "dispatch s1"\n  "deliver s1" ]\n')
    assert error.where == f"{tmp_path / 'bad.toml'}:7"
    assert "malformed TOML" in error.message


def test_unknown_event_points_at_its_line_and_lists_events(tmp_path):
    """An unknown event name is reported at its own line, with the allowed events."""
    error = _load_error(tmp_path, HEAD + 'events = [ "plan",\n  "dispatch s1",\n  "explode s1" ]\n')
    assert error.where == f"{tmp_path / 'bad.toml'}:7"
    assert "'explode'" in error.message and "human_edit" in error.message


def test_unknown_step_points_at_its_line_and_lists_steps(tmp_path):
    """An event naming an unknown step is reported at its line with the plan's step ids."""
    error = _load_error(tmp_path, HEAD + 'events = [ "plan",\n  "dispatch s9" ]\n')
    assert error.where.endswith("bad.toml:6")
    assert "'s9'" in error.message and "s1, s2" in error.message


def test_unknown_path_in_event_points_at_its_line(tmp_path):
    """human_edit of a file the scenario does not have is reported at its line with the known files."""
    error = _load_error(tmp_path, HEAD + 'events = [ "plan",\n  "human_edit lib.py x" ]\n')
    assert error.where.endswith("bad.toml:6")
    assert "lib.py" in error.message and "app.py" in error.message


def test_unknown_path_in_step_points_at_the_step(tmp_path):
    """A plan step on a file the scenario does not have is reported at the step's line."""
    text = HEAD.replace('{ id = "s2", path = "app.py"', '{ id = "s2", path = "lib.py"') + 'events = [ "plan" ]\n'
    error = _load_error(tmp_path, text)
    assert error.where.endswith("bad.toml:4")
    assert "lib.py" in error.message


def test_unknown_hunk_in_event_lists_hunks(tmp_path):
    """human_edit of a hunk the file does not have is reported at its line with the file's hunks."""
    text = HUNKED.replace("app.py#tests", "app.py#footer")
    error = _load_error(tmp_path, text)
    assert error.where.endswith("bad.toml:6")
    assert "'footer'" in error.message and "handler, tests" in error.message


def test_unknown_hunk_in_patch_points_at_the_step(tmp_path):
    """A patch naming a hunk the file does not have is reported at the step's line with the hunks."""
    text = HUNKED.replace("patch = { handler = \"h1\" }", "patch = { footer = \"f1\" }")
    error = _load_error(tmp_path, text)
    assert error.where.endswith("bad.toml:4")
    assert "'footer'" in error.message


def test_step_error_line_ignores_description_mentioning_the_step(tmp_path):
    """A bad step is reported at its plan line even when the description mentions the step id earlier."""
    text = HUNKED.replace('name = "hunked"', 'name = "hunked"\ndescription = "s1 edits the handler"')
    text = text.replace("patch = { handler = \"h1\" }", "patch = { footer = \"f1\" }")
    error = _load_error(tmp_path, text)
    assert error.where.endswith("bad.toml:5")


def test_event_error_in_literal_string_has_line(tmp_path):
    """An unknown step in an event written as a TOML literal string is still reported at its line."""
    error = _load_error(tmp_path, HEAD + "events = [ 'plan',\n  'dispatch s9' ]\n")
    assert error.where.endswith("bad.toml:6")


@pytest.mark.parametrize(
    ("event", "fragment"),
    [("deliver", "takes one step id"), ("preempt sideways", "before_write"), ("plan now", "no arguments"),
     ("replan fresh", "stale"), ("dispatch s1 s2", "takes one step id"), ("human_edit", "needs a path")],
)
def test_wrong_arguments_point_at_the_event_line(tmp_path, event, fragment):
    """An event with wrong arguments is reported at its line, saying what the event takes."""
    error = _load_error(tmp_path, HEAD + f'events = [ "plan",\n  "dispatch s1",\n  "{event}" ]\n')
    assert error.where.endswith("bad.toml:7")
    assert fragment in error.message


def test_unknown_top_level_key_points_at_its_line(tmp_path):
    """An unknown top-level key is reported at its line, listing the allowed keys."""
    error = _load_error(tmp_path, HEAD + 'events = [ "plan" ]\ncolour = "blue"\n')
    assert error.where.endswith("bad.toml:6")
    assert "'colour'" in error.message and "events" in error.message


def test_unknown_format_version_is_refused_at_its_line(tmp_path):
    """A format version this fencesim does not read is refused at the 'format' line."""
    error = _load_error(tmp_path, HEAD + 'events = [ "plan" ]\nformat = 2\n')
    assert error.where.endswith("bad.toml:6")
    assert "format" in error.message


def test_missing_file_is_a_scenario_error(tmp_path):
    """Loading a file that does not exist raises ScenarioError naming the file."""
    with pytest.raises(ScenarioError) as caught:
        load_scenario(tmp_path / "absent.toml")
    assert "absent.toml" in caught.value.where


def test_bad_protocol_in_file_points_at_its_line(tmp_path):
    """A scenario's default protocol with an unknown knob is reported at the 'protocol' line."""
    error = _load_error(tmp_path, HEAD + 'protocol = "step,colour=red"\nevents = [ "plan" ]\n')
    assert error.where.endswith("bad.toml:5")


def test_missing_format_means_current_version(tmp_path):
    """A hand-written file without 'format' loads."""
    path = tmp_path / "ok.toml"
    path.write_text(HEAD + 'events = [ "plan" ]\n', encoding="utf-8")
    assert load_scenario(path).name == "bad"


def test_hunk_table_files_and_patches_load(tmp_path):
    """Files given as hunk tables and patches given as hunk tables load as named hunks."""
    path = tmp_path / "hunked.toml"
    path.write_text(HUNKED, encoding="utf-8")
    scenario = load_scenario(path)
    assert scenario.files == {"app.py": {"handler": "h0", "tests": "t0"}, "lib.py": {"_": "l0"}}
    assert [(s.step_id, s.path, s.patch) for s in scenario.plan] == [
        ("s1", "app.py", {"handler": "h1"}), ("s2", "lib.py", {"_": "l1"})]
    assert str(scenario.events[2]) == "human_edit app.py#tests t-human"


@pytest.mark.parametrize("name", SEEDS)
def test_export_round_trip_gives_same_scenario(tmp_path, seed_dir, name):
    """scenario_to_dict -> TOML -> load gives the same events, files, plan, replan and expect."""
    original = load_scenario(seed_dir / f"{name}.toml")
    path = tmp_path / f"{name}.toml"
    path.write_text(tomli_w.dumps(scenario_to_dict(original)), encoding="utf-8")
    again = load_scenario(path)
    assert again.events == original.events
    assert (again.files, again.plan, again.replan, again.expect) == (
        original.files, original.plan, original.replan, original.expect)


def test_export_round_trip_of_hunks_and_stale_replan(tmp_path):
    """A hunk-table scenario with 'replan stale' and a hunk edit round-trips through TOML unchanged."""
    data = {
        "name": "r", "protocol": "step-dedupe,journal_write=after_write",
        "files": {"app.py": {"handler": "h0", "tests": "t0"}},
        "plan": [{"id": "s1", "path": "app.py", "patch": {"handler": "h1"}},
                 {"id": "s2", "path": "app.py", "patch": {"tests": "t1"}}],
        "replan": [{"id": "s2", "path": "app.py", "patch": {"tests": "t2"}}],
        "events": ["plan", "dispatch s1", "preempt after_write", "deliver s1", "replan stale",
                   "human_edit app.py#tests new tests", "retry s1", "human_edit app.py"],
        "invariant": "journal_loss", "seed": 7,
    }
    original = build_scenario(data)
    exported = scenario_to_dict(original)
    assert exported["format"] == 1
    path = tmp_path / "r.toml"
    path.write_text(tomli_w.dumps(exported), encoding="utf-8")
    again = load_scenario(path)
    assert again.events == original.events
    assert (again.files, again.plan, again.replan, again.protocol, again.meta) == (
        original.files, original.plan, original.replan, original.protocol, original.meta)


def test_build_scenario_rejects_replan_of_unknown_step():
    """A replan entry for a step that is not in the plan is a ScenarioError."""
    with pytest.raises(ScenarioError, match="s3"):
        build_scenario({"files": {"a": "x"}, "plan": [{"id": "s1", "path": "a", "patch": "y"}],
                        "replan": [{"id": "s3", "path": "a", "patch": "z"}], "events": []})


def test_api_load_scenario_is_the_workspace_loader(seed_dir):
    """sim.load_scenario, the registry and the family's own loader give the same workspace scenario."""
    path = seed_dir / "replan_drift.toml"
    by_api, by_family = sim.load_scenario(path), FAMILY.load_scenario(*read_toml(path))
    assert isinstance(by_api, WorkspaceScenario) and by_api.family == "workspace"
    assert (by_api.events, by_api.plan, by_api.replan, by_api.expect) == (
        by_family.events, by_family.plan, by_family.replan, by_family.expect)


def test_exported_table_names_its_family(seed_dir):
    """scenario_to_dict writes format = 1 and family = "workspace", and the family's dump is the same table."""
    scenario = load_scenario(seed_dir / "concurrent_edit.toml")
    exported = scenario_to_dict(scenario)
    assert (exported["format"], exported["family"]) == (1, "workspace")
    assert FAMILY.dump_scenario(scenario) == exported


def test_file_with_family_workspace_loads(tmp_path):
    """A file that says family = "workspace" loads like one that names no family."""
    path = tmp_path / "named.toml"
    path.write_text('family = "workspace"\n' + HEAD + 'events = [ "plan" ]\n', encoding="utf-8")
    assert load_scenario(path).family == "workspace"


def test_build_scenario_takes_a_source_or_a_path_string():
    """build_scenario accepts a Source or a path string; errors then name that place."""
    data = {"files": {"a": "x"}, "plan": [{"id": "s1", "path": "a", "patch": "y"}], "events": ["plan"]}
    assert build_scenario(data, "given.toml").name == "given"
    assert build_scenario(data, Source("other.toml", "")).path.name == "other.toml"
    with pytest.raises(ScenarioError) as caught:
        build_scenario(dict(data, events=["explode"]), "given.toml")
    assert caught.value.where == "given.toml"


@pytest.mark.parametrize("text", ["plan", "replan", "replan stale", "preempt", "preempt after_journal",
                                  "dispatch s2", "lose_ack s1", "human_edit app.py",
                                  "human_edit app.py#tests two words"])
def test_parse_action_prints_back_as_written(text):
    """Every event of the vocabulary parses to an Action whose str() is the text."""
    files = {"app.py": {"handler": "h0", "tests": "t0"}}
    action = parse_action(text, files, ["s1", "s2"])
    assert isinstance(action, Action) and str(action) == text


def test_with_events_keeps_everything_but_the_order(seed_dir):
    """with_events gives a scenario with the same files, plan, protocol and meta and another order."""
    scenario = load_scenario(seed_dir / "concurrent_edit.toml")
    shorter = scenario.with_events(scenario.events[:2])
    assert [str(e) for e in shorter.events] == ["plan", "dispatch s1"]
    assert (shorter.files, shorter.plan, shorter.expect, shorter.family) == (
        scenario.files, scenario.plan, scenario.expect, "workspace")
