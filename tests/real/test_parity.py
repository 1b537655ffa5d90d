"""The real side against the model's declarations, no process started: every transition field and fault class
of the model is played by the harness or declared not applicable with its reason; a field or fault planted in
the model alone breaks parity and is refused by the harness, never ignored; arguments and timeout classes
reach the workers and fingerprint as the model's."""

from __future__ import annotations

from pathlib import Path

import pytest

import sim
from sim.families.effects import FAMILY, faults, injectors, transition_fields, workflow_schema
from sim.families.effects.faults import FaultClass
from sim.families.effects.transition_fields import TransitionField
from sim.families.effects.workflow_file import parse_tables
from sim.real.runtimes import cells, model_schema, parity, worker_kit
from sim.real.runtimes.cell_run import CellRun
from sim.real.runtimes.cells import NotApplicable, UnplayedFault, UnplayedField, check_applicable, workflow_data
from sim.real.runtimes.compare import CellComparison, observe

#: The guide's example (docs/adding-a-family.md, "Adding a transition field"): an endpoint that may deliver a
#: request it accepted twice.
DOUBLE_DELIVERY = TransitionField(
    "double_delivery", "choice", "whether the endpoint may deliver a request it accepted twice", "`never`",
    values=("never", "possible"), default="never",
    problem="{label}: double_delivery must be one of {values}, not {value}{guess}")
#: Its fault: the endpoint delivers the request again.
REDELIVER = FaultClass("redeliver", ("after_commit",), injectors.duplicate, "the endpoint delivers it again")


def planted_schema(tmp_path: Path, monkeypatch, field: TransitionField | None = None,
                   fault: FaultClass | None = None) -> model_schema.Schema:
    """The schema the model writes with a field or a fault planted in its table alone: whatever the model or
    the real side declares of that name is set aside first, so the tests hold once the guide was followed too."""
    if field is not None:
        monkeypatch.setattr(transition_fields, "FIELDS", tuple(
            f for f in transition_fields.FIELDS if f.name != field.name) + (field,))
        played = cells.real_fields
        monkeypatch.setattr(cells, "real_fields", lambda: tuple(n for n in played() if n != field.name))
        monkeypatch.setattr(cells, "FIELDS_NOT_APPLICABLE", {
            n: why for n, why in cells.FIELDS_NOT_APPLICABLE.items() if n != field.name})
    if fault is not None:
        monkeypatch.setattr(faults, "REGISTRY", tuple(f for f in faults.REGISTRY if f.name != fault.name) + (fault,))
        monkeypatch.setattr(cells, "FAULT_PLAYS", {n: p for n, p in cells.FAULT_PLAYS.items() if n != fault.name})
        monkeypatch.setattr(cells, "NOT_APPLICABLE", {
            n: why for n, why in cells.NOT_APPLICABLE.items() if n != fault.name})
    return model_schema.load(workflow_schema.write_schema(tmp_path / "schema.json"))


def test_the_real_side_plays_or_declares_every_field_and_fault_of_the_model():
    """Parity: the model's fields and fault classes equal the harness's plus those it declares not applicable."""
    assert parity.problems() == []
    schema = model_schema.load()
    assert set(schema.field_names()) == set(cells.real_fields()) | set(cells.FIELDS_NOT_APPLICABLE)
    assert set(schema.fault_names()) == set(cells.FAULT_PLAYS) | set(cells.NOT_APPLICABLE)
    assert all(why.strip() for why in (*cells.NOT_APPLICABLE.values(), *cells.FIELDS_NOT_APPLICABLE.values()))


def test_the_schema_the_real_side_reads_is_the_models(tmp_path):
    """The real side's reading of the committed file is the model's tables, field by field and fault by fault."""
    assert model_schema.load().field_names() == transition_fields.field_names()
    assert model_schema.load().fault_names() == faults.FAULT_CLASSES
    assert [f.points for f in model_schema.load().faults] == [faults.FAULT_POINTS[n] for n in faults.FAULT_CLASSES]


def test_a_field_the_real_side_lacks_breaks_parity(tmp_path, monkeypatch):
    """A transition field planted in the model's table alone makes the parity check fail, naming it."""
    schema = planted_schema(tmp_path, monkeypatch, field=DOUBLE_DELIVERY)
    assert parity.problems(schema) == [
        "transition field 'double_delivery': the real side neither plays it nor declares it not applicable "
        "(FIELDS_NOT_APPLICABLE in sim/real/runtimes/cells.py, with the reason)"]


def test_a_declared_field_the_real_side_lacks_is_refused_not_ignored(tmp_path, monkeypatch):
    """The harness refuses a transition that declares a field it cannot play; one left at its default runs."""
    schema = planted_schema(tmp_path, monkeypatch, field=DOUBLE_DELIVERY)
    declared = parse_tables([{"name": "post", "class": "keyed_creation", "double_delivery": "possible"}], "f.toml:1")
    with pytest.raises(UnplayedField, match="declares double_delivery = 'possible'"):
        workflow_data(declared, {}, schema)
    plain = parse_tables([{"name": "post", "class": "keyed_creation"}], "f.toml:1")
    assert "double_delivery" not in workflow_data(plain, {}, schema)[0]


def test_a_field_declared_not_applicable_keeps_parity_and_makes_its_runs_not_applicable(tmp_path, monkeypatch):
    """Declared not applicable with a reason, the planted field keeps parity; a run that declares it is not
    applicable with that reason."""
    schema = planted_schema(tmp_path, monkeypatch, field=DOUBLE_DELIVERY)
    monkeypatch.setattr(cells, "FIELDS_NOT_APPLICABLE", {
        **cells.FIELDS_NOT_APPLICABLE, "double_delivery": "the external system delivers each request once"})
    assert parity.problems(schema) == []
    declared = parse_tables([{"name": "post", "class": "keyed_creation", "double_delivery": "possible"}], "f.toml:1")
    with pytest.raises(NotApplicable, match="delivers each request once"):
        workflow_data(declared, {}, schema)


def test_a_fault_the_real_side_lacks_breaks_parity_and_is_refused(tmp_path, monkeypatch):
    """A fault class planted in the model's registry alone fails parity, and a cell of it is refused."""
    schema = planted_schema(tmp_path, monkeypatch, fault=REDELIVER)
    assert parity.problems(schema) == [
        "fault 'redeliver': the real side neither plays it (FAULT_PLAYS) nor declares it not applicable "
        "(NOT_APPLICABLE in sim/real/runtimes/cells.py, with the reason)"]
    with pytest.raises(UnplayedFault, match="redeliver"):
        check_applicable(cells.CellFault.parse("redeliver open_pr after_commit"), {}, "dbos", schema)


def test_a_point_the_harness_does_not_strike_breaks_parity(monkeypatch):
    """A played fault the model strikes at a point the harness does not is named with that point."""
    monkeypatch.setattr(cells, "FAULT_PLAYS", {**cells.FAULT_PLAYS, "timeout": cells.FaultPlay((), "play_timeout")})
    assert parity.problems() == ["fault 'timeout': the model strikes it at after_dispatch, the harness does not"]


def start_request(tmp_path: Path, workflow, task: str = "task_42", arguments=None) -> dict:
    """The start request the harness sends a worker for this workflow (no process is started)."""
    label, knobs = cells.resolve_protocol("keyed-fingerprint-reconcile")
    run = CellRun(tmp_path, workflow_data(workflow, knobs), knobs, ["worker"], task, "acme", 0.0, 2.0, "saga",
                  arguments=arguments, timeout_default_s=10.0)
    return run.start_request("w1", [])


def test_arguments_reach_the_worker_and_fingerprint_as_the_models(tmp_path):
    """effects-saga's [arguments.open_pr] reach the worker: its intent's fingerprint is the model's."""
    workload = sim.load_workload("effects-saga")
    config = worker_kit.WorkerConfig.from_start(start_request(tmp_path, workload.base.workflow, workload.base.task,
                                                              workload.base.arguments))
    open_pr = next(t for t in config.transitions if t.name == "open_pr")
    replay = FAMILY.replay(workload.base, FAMILY.parse_protocol("keyed-fingerprint-reconcile"), [])
    model = next(e.get("fingerprint") for e in replay.history
                 if e.event == "intent_recorded" and e.get("transition") == "open_pr")
    assert worker_kit.fingerprint_of(config.arguments_of(open_pr)) == model == "236b7fdbcdcf"
    assert config.head_of(open_pr) == "7ac1e05"


def test_a_timeout_class_reaches_the_worker_and_scales_its_wait(tmp_path):
    """A declared timeout_s is sent; the worker waits in proportion, within its bounds."""
    declared = parse_tables([{"name": "run_ci", "class": "idempotent", "object": "ci_run", "timeout_s": 600},
                             {"name": "ping", "class": "idempotent", "timeout_s": 10}], "f.toml:1")
    request = start_request(tmp_path, declared)
    assert [t["timeout_s"] for t in request["workflow"]["transitions"]] == [600.0, 10.0]
    config = worker_kit.WorkerConfig.from_start(request)
    assert [config.wait_s(t) for t in config.transitions] == [worker_kit.WAIT_CEILING_S, 2.0]


def test_a_worker_refuses_a_transition_field_it_does_not_know():
    """A field the worker would not act on is refused in its start request, never ignored."""
    with pytest.raises(ValueError, match="does not know the field 'undeclared_option'"):
        worker_kit.Transition.from_dict({"name": "a", "class": "keyed_creation", "object": "x",
                                         "undeclared_option": "on"})


def test_the_comparison_flags_a_fingerprint_the_real_side_computed_otherwise():
    """Two runs alike in effects but not in their fingerprints disagree, and the difference names them."""
    model = sim.History()
    model.append(0, "w1", "intent_recorded", task="t", transition="open_pr", logical="open_pr",
                 fingerprint="236b7fdbcdcf")
    real = sim.History()
    real.append(0, "w1", "intent_recorded", task="t", transition="open_pr", logical="open_pr",
                fingerprint="e492b300a6cb")
    cell = CellComparison("keyed", ("open_pr", "after_commit", "terminate"), model=observe(FAMILY, model),
                          real=observe(FAMILY, real))
    assert not cell.agrees
    assert cell.differences() == ["fingerprints of open_pr: model 236b7fdbcdcf / real e492b300a6cb"]


def test_the_docs_table_of_the_faults_the_harness_plays_is_generated():
    """docs/real-runtimes.md holds the table of the harness's fault plays exactly as FAULT_PLAYS renders it."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "real-runtimes.md").read_text(encoding="utf-8")
    assert cells.docs_table() in page, "docs/real-runtimes.md's table of faults differs; paste:\n" + cells.docs_table()


def test_every_play_the_registry_names_is_a_method_of_the_choreography():
    """Each fault the harness plays names a play the choreography has."""
    from sim.real.runtimes.choreography import Choreography

    assert all(callable(getattr(Choreography, play.play, None)) for play in cells.FAULT_PLAYS.values())
