"""The transition fields as data (transition_fields.py): one table drives the parser, the dumper, renames, the
docs and the schema file the real harness reads; a field planted in the table alone reaches all of them."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import tomli_w

import sim
from sim.core.errors import ScenarioError
from sim.core.files import Source, read_toml
from sim.families.effects import transition_fields, workflow_schema
from sim.families.effects.scenario import dump_scenario, load_runtime_scenario
from sim.families.effects.transition_fields import TransitionField
from sim.families.effects.workflow import saga, version_2
from sim.families.effects.workflow_file import dump_transition, parse_tables

REPO = Path(__file__).resolve().parents[3]
EFFECTS_DOC = REPO / "docs" / "effects.md"
WRITE_SCHEMA = "python -c 'from sim.families.effects.workflow_schema import write_schema; write_schema()'"

TABLES = [
    {"name": "create_branch", "class": "keyed_creation", "object": "branch", "compensation": "delete_branch"},
    {"name": "run_ci", "class": "idempotent", "object": "ci_run", "timeout_s": 600},
    {"name": "post_slack", "class": "irreversible", "object": "announcement", "keys": False, "reconcile_by": "none",
     "approval": False, "postcondition": True},
]
#: The guide's example (docs/adding-a-family.md, "Adding a transition field"): an endpoint that may deliver a
#: request it accepted twice.
DOUBLE_DELIVERY = TransitionField(
    "double_delivery", "choice", "whether the endpoint may deliver a request it accepted twice", "`never`",
    values=("never", "possible"), default="never",
    refused=(transition_fields.Refusal("read", "{label} is a read: nothing is delivered"),),
    problem="{label}: double_delivery must be one of {values}, not {value}{guess}")


def planted(field: TransitionField) -> tuple[TransitionField, ...]:
    """FIELDS with ``field`` as its last entry (in place of one of its name: the test holds once the guide
    was followed too)."""
    return tuple(f for f in transition_fields.FIELDS if f.name != field.name) + (field,)


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text('family = "effects"\ntask = "task_42"\n' + body, encoding="utf-8")
    return path


def load(path: Path):
    return load_runtime_scenario(*read_toml(path))


def test_the_docs_table_of_fields_is_generated_from_the_table():
    """docs/effects.md holds the table of transition fields exactly as the field table renders it."""
    assert transition_fields.docs_table() in EFFECTS_DOC.read_text(encoding="utf-8"), (
        "docs/effects.md's table of transition fields differs from transition_fields.docs_table(); paste:\n"
        + transition_fields.docs_table())


def test_the_committed_schema_file_is_the_models_tables():
    """workflow_schema.json, which the real harness reads, is what the model's tables write today."""
    assert workflow_schema.SCHEMA_PATH.read_text(encoding="utf-8") == workflow_schema.schema_text(), (
        f"the schema file is stale: write it again with {WRITE_SCHEMA}")


def test_writing_the_schema_twice_gives_the_same_bytes(tmp_path):
    """The schema has no timestamp and a fixed order: the same tables, the same bytes."""
    first = workflow_schema.write_schema(tmp_path / "a.json").read_bytes()
    assert first == workflow_schema.write_schema(tmp_path / "b.json").read_bytes()
    assert [f["name"] for f in json.loads(first)["fields"]] == list(transition_fields.field_names())


def test_a_dumped_transition_parses_back_to_itself():
    """dump_transition writes every field a transition declares; parsing the dump gives the same transitions."""
    workflow = parse_tables(TABLES, "f.toml:1")
    again = parse_tables([dump_transition(t) for t in workflow.transitions], "f.toml:1")
    assert again.transitions == workflow.transitions
    assert dump_transition(workflow.get("run_ci")) == {"name": "run_ci", "class": "idempotent", "object": "ci_run",
                                                       "timeout_s": 600.0}


def test_a_workflow_built_in_code_is_dumped_as_tables():
    """A scenario whose workflow is not saga transitions and has no file form is written as transition tables."""
    story = load_runtime_scenario({"family": "effects", "faults": []}, Source("s.toml"))
    built = dataclasses.replace(story, workflow=dataclasses.replace(parse_tables(TABLES, "f.toml:1"), spec=None))
    assert dump_scenario(built)["workflow"] == [dump_transition(t) for t in built.workflow.transitions]


def test_a_declared_rename_keeps_every_field(tmp_path):
    """[versions.2] "run_ci -> run_checks" keeps the timeout class and every other field of run_ci."""
    body = tomli_w.dumps({"workflow": TABLES, "versions": {"2": {"workflow": [
        "create_branch", "run_ci -> run_checks", "post_slack -> post_chat"]}}, "faults": []})
    workflow = load(write(tmp_path, body)).workflow
    upgraded = workflow.declared_upgrade
    assert upgraded.get("run_checks").options == workflow.get("run_ci").options
    assert upgraded.get("post_chat").options == workflow.get("post_slack").options
    assert upgraded.get("post_chat").logical == "post_slack"


def test_the_built_in_upgrade_keeps_every_field():
    """The built-in version 2 renames the second transition with everything it declares."""
    declared = parse_tables(TABLES, "f.toml:1")
    upgraded = version_2(declared)
    assert upgraded.get("run_ci_v2").options == declared.get("run_ci").options
    assert version_2(saga()).get("open_pull_request").logical == "open_pr"


def test_defaults_come_from_the_table():
    """What a transition assumes when it declares nothing is the table's default for its class."""
    approval = transition_fields.by_name("approval")
    keys = transition_fields.by_name("keys")
    assert (approval.default_for("irreversible"), approval.default_for("append")) == (True, False)
    assert keys.default_for("irreversible", {"irreversible_keys": "on"}) is True
    assert keys.default_for("irreversible", {}) is False and keys.default_for("keyed_creation") is True
    assert transition_fields.by_name("timeout_s").default == transition_fields.ACK_TIMEOUT_S


def test_code_reads_a_declared_default_typed_from_the_table():
    """default(name, kind, effect_class) is the field's declared default for the class, checked to be a kind."""
    assert transition_fields.default("reconcile_by", str) == "key"
    assert transition_fields.default("timeout_s", float) == transition_fields.ACK_TIMEOUT_S
    assert transition_fields.default("approval", bool, "irreversible") is True
    assert transition_fields.default("approval", bool, "append") is False
    assert transition_fields.default("keys", bool, "irreversible", {"irreversible_keys": "on"}) is True
    with pytest.raises(TypeError, match="declares the default 10.0, not a str"):
        transition_fields.default("timeout_s", str)


def test_a_field_planted_in_the_table_alone_reaches_the_parser_dumper_renames_docs_and_schema(tmp_path,
                                                                                                 monkeypatch):
    """An endpoint option added to FIELDS only is parsed and checked, written back, kept by a rename, documented
    and carried by the schema the real harness reads."""
    monkeypatch.setattr(transition_fields, "FIELDS", planted(DOUBLE_DELIVERY))
    tables = [dict(TABLES[0]), dict(TABLES[1], double_delivery="possible")]
    body = tomli_w.dumps({"workflow": tables, "versions": {"2": {"workflow": ["create_branch", "run_ci -> run_ci2"]}},
                          "faults": ["duplicate run_ci after_dispatch"]})
    scenario = load(write(tmp_path, body))
    assert scenario.workflow.get("run_ci").option("double_delivery") == "possible"
    assert scenario.workflow.declared_upgrade.get("run_ci2").option("double_delivery") == "possible"
    assert dump_transition(scenario.workflow.get("run_ci"))["double_delivery"] == "possible"
    again = tmp_path / "again.toml"
    again.write_text(tomli_w.dumps(dump_scenario(scenario)), encoding="utf-8")
    assert sim.load_scenario(again).workflow.transitions == scenario.workflow.transitions
    assert "| `double_delivery` | `never`, `possible` | `never` |" in transition_fields.docs_table()
    assert workflow_schema.schema()["fields"][-1]["name"] == "double_delivery"
    bad = tomli_w.dumps({"workflow": [dict(TABLES[1], double_delivery="twice")], "faults": []})
    with pytest.raises(ScenarioError, match="double_delivery must be one of never, possible"):
        load(write(tmp_path, bad))


def test_a_class_that_refuses_a_field_names_the_reason():
    """A field a class refuses is refused with the table's reason."""
    with pytest.raises(ScenarioError, match="is a read: a read is repeated, never reconciled"):
        parse_tables([{"name": "fetch", "class": "read", "reconcile_by": "key"}], "f.toml:1")
