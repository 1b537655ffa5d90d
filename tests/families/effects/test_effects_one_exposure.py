"""One exposure model: the arithmetic of a user's workflow and its simulation count requests, reads, human
exceptions and approvals the same way; both take the workload's (or the design's) [telemetry] rates; and
``incidents`` says why a figure lies outside its interval."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from sim.app.designs import load_design
from sim.core.errors import ScenarioError
from sim.families.effects import FAMILY, exposure
from sim.families.effects.exposure_draws import ExposureRates
from sim.families.effects.exposure_workflow import differences, outside_reasons, workflow_analytic
from sim.registry import FAMILIES
from sim.search.incidents import Estimate

KFR = "keyed-fingerprint-reconcile"
#: A read, a keyed pull request and a keyless e-mail that cannot be queried (the acceptance's workflow).
WORKLOAD = """format = 1
family = "effects"
name = "mail-with-read"
task = "task_0"
workflow = [
  { name = "read_order", class = "read", object = "order" },
  { name = "open_pr", class = "keyed_creation", object = "pull_request", compensation = "close_pr" },
  { name = "send_email", class = "irreversible", object = "email", keys = false, reconcile_by = "none", \
approval = false },
]

[faults]
classes = ["terminate", "lose_request", "lose_response", "unprovable", "duplicate"]
per_run_max = 2

[telemetry]
tasks_per_month = 25000
ambiguous_share = 0.05
committed_share = 0.6
reconciled_share = 0.99
"""


@pytest.fixture
def workload_file(tmp_path: Path) -> Path:
    path = tmp_path / "mail-with-read.toml"
    path.write_text(WORKLOAD, encoding="utf-8")
    return path


def test_the_arithmetic_counts_reads_apart_and_the_unqueryable_email_to_a_human(workload_file):
    """25,000 tasks x 2 side-effecting requests (the read apart); every ambiguous e-mail to a human."""
    base = FAMILIES.load_workload(str(workload_file)).base
    a = workflow_analytic(base.workflow, 25_000, "0.05", "0.6", "0.99")
    assert (a["requests"], a["reads"], a["ambiguous"]) == (50_000, 25_000, 2_500)
    assert a["human_exceptions"] == 1_250 * 1 + 1_250 * (1 - __import__("decimal").Decimal("0.99"))
    assert a["auto_reconciled"] == 1_250 * __import__("decimal").Decimal("0.99") and a["approvals"] == 0
    reasons = " ".join(differences(base.workflow))
    assert "read_order" in reasons and 'send_email cannot be queried (reconcile_by = "none")' in reasons


@pytest.mark.slow  # simulates 1,500 tasks
def test_analytic_and_simulated_requests_are_equal_and_humans_inside_the_interval(workload_file):
    """The acceptance: same requests (and reads) on both sides; the arithmetic's human exceptions inside the
    simulated interval, for a workflow with reconcile_by = "none" and a read."""
    workload = FAMILIES.load_workload(str(workload_file))
    a = workflow_analytic(workload.base.workflow, 25_000, "0.05", "0.6", "0.99")
    simulated = exposure.simulate([KFR], seeds=1_500, tasks=25_000, workflow=workload.base.workflow,
                                  rates=ExposureRates(0.05, 0.6, 0.99))[KFR]
    assert simulated["requests"]["value"] == float(a["requests"])
    assert simulated["reads"]["value"] == float(a["reads"])
    humans = simulated["human_exceptions"]
    assert humans["ci_low"] <= float(a["human_exceptions"]) <= humans["ci_high"]


@pytest.mark.slow  # simulates 200 tasks
def test_the_review_takes_the_workloads_telemetry(workload_file):
    """The review's exposure uses the [telemetry] rates and period, and says where the arithmetic differs."""
    workload = FAMILIES.load_workload(str(workload_file))
    own, _ = exposure.review_sections(workload.base, [FAMILY.parse_protocol(KFR)], 200,
                                      telemetry=workload.telemetry)
    assert own["unit"] == "per 25,000 tasks"
    assert "5% of requests ambiguous, 60% of those already committed, 99% reconcilable" in own["text"]
    assert "send_email cannot be queried" in own["text"]
    assert own["analytic"]["requests"] == 50_000 and own["analytic"]["reads"] == 25_000
    assert own["metrics"][KFR]["requests"]["value"] == 50_000


@pytest.mark.slow  # two command lines
def test_exposure_takes_the_workloads_telemetry_unless_a_flag_says_otherwise(cli, workload_file):
    """--workload with [telemetry]: its rates and tasks; a flag still wins."""
    done = cli("exposure", "--json", "--workload", str(workload_file))
    document = json.loads(done.stdout)
    assert document["analytic"]["requests"] == 50_000 and document["analytic"]["ambiguous"] == 2_500
    assert document["rates"]["from_telemetry"] == ["ambiguous_rate", "committed_rate", "reconcile_rate"]
    flagged = json.loads(cli("exposure", "--json", "--workload", str(workload_file), "--ambiguous-rate", "0.1",
                             "--tasks", "100").stdout)
    assert flagged["analytic"]["ambiguous"] == 20 and "ambiguous_rate" not in flagged["rates"]["from_telemetry"]


def test_a_design_file_sets_the_rates(tmp_path, workload_file):
    """A design's [telemetry] overrides the workload's, checked as a workload's is."""
    design = tmp_path / "design.toml"
    design.write_text(f'format = 1\nname = "d"\nworkload = "{workload_file.name}"\nprotocols = ["{KFR}"]\n'
                      "[telemetry]\nambiguous_share = 0.02\ntasks_per_month = 1000\n", encoding="utf-8")
    telemetry = load_design(design).workload.telemetry
    assert telemetry["ambiguous_share"] == 0.02 and telemetry["tasks_per_month"] == 1000
    assert telemetry["committed_share"] == 0.6
    design.write_text(f'format = 1\nworkload = "{workload_file.name}"\n[telemetry]\nambiguous_share = 2\n',
                      encoding="utf-8")
    with pytest.raises(ScenarioError, match="ambiguous_share must be"):
        load_design(design)


def test_incidents_says_why_a_figure_is_outside_the_interval(workload_file):
    """A figure outside its interval carries the reasons, not a bare OUTSIDE."""
    from sim.cli.incidents import seed_arithmetic

    workload = FAMILIES.load_workload(str(workload_file))
    far = SimpleNamespace(violations=Estimate(1.0, 0.5, 2.0))
    result = SimpleNamespace(period=25_000, protocols={"unkeyed-retry": {"duplicate_effect": far}})
    [item] = seed_arithmetic(workload, result)["compared"]
    assert item["within"] is False and item["why_outside"]
    assert any("95% simultaneous interval" in reason for reason in item["why_outside"])
    assert outside_reasons(workload.base.workflow, "ambiguous", "unknown_as_failed", above=True)


def test_the_python_api_takes_the_workloads_telemetry(workload_file):
    """sim.exposure_frame of a workload with [telemetry]: scaled to its tasks per month, drawn at its rates."""
    import sim

    frame = sim.exposure_frame(str(workload_file), [KFR], seeds=100)
    values = dict(zip(frame.metric, frame.value))
    assert values["requests"] == 50_000 and values["reads"] == 25_000
