"""``fencesim certify`` (docs/engines.md): on a workflow with a keyed creation and a keyless notification, per
engine, the notification is never exactly once under an at-least-once engine, and is at most once (never repeated,
can be lost) under Step Functions' synchronous Express; every answer replays from its exported scenario."""

from __future__ import annotations

import functools
import json

import pytest

import sim
from sim.app.certifying import AT_MOST_ONCE, BOTH, EXACTLY_ONCE, REPEATS, certify, judge
from sim.families.effects import FAMILY
from sim.families.effects.knobs import AT_LEAST_ONCE_ENGINES, ENGINES

WORKLOAD = "notify-after-create"


@functools.cache
def _workload():
    return sim.load_workload(WORKLOAD)


@functools.cache
def _certificate(engine, knobs="idempotency=key", propose=False):
    return certify(_workload(), engine, knobs, max_events=2, propose=propose)


def _answers(certificate):
    return {a.transition: a for a in certificate.answers}


@pytest.mark.parametrize("engine", AT_LEAST_ONCE_ENGINES)
def test_the_keyless_notification_is_never_exactly_once_under_an_at_least_once_engine(engine):
    answers = _answers(_certificate(engine))
    assert answers["notify_user"].verdict in (REPEATS, BOTH)
    assert answers["notify_user"].repeats is not None  # the proved-shortest order that sends it twice
    assert len(answers["notify_user"].repeats) == 1
    assert answers["create_account"].verdict == EXACTLY_ONCE  # keyed: the key makes the retry the same account
    assert answers["create_account"].within == 2


@pytest.mark.parametrize("engine", ["step-functions-express-sync", "step-functions-standard"])
def test_the_notification_is_at_most_once_under_an_at_most_once_engine(engine):
    """Never repeated (proved within the bound), but lost: a finding of its own."""
    answers = _answers(_certificate(engine))
    notify = answers["notify_user"]
    assert notify.verdict == AT_MOST_ONCE
    assert notify.repeats is None and notify.lost is not None
    assert answers["create_account"].verdict == AT_MOST_ONCE


def test_every_engine_is_answered_and_the_at_least_once_ones_are_the_rest():
    assert set(AT_LEAST_ONCE_ENGINES) | {"step-functions-express-sync", "step-functions-standard"} == set(ENGINES)


def test_the_same_endpoint_without_a_key_repeats_and_the_key_is_the_checked_change():
    """The certificate can fail: without keys the creation repeats too, and the smallest change proposed is the
    key its endpoint honours, checked by the search."""
    create = _answers(_certificate("temporal", "", True))["create_account"]
    assert create.verdict in (REPEATS, BOTH)
    assert (create.change, create.change_checked) == ("idempotency=key", True)


def test_no_change_the_endpoint_cannot_take_is_proposed():
    """notify_user declares keys = false and reconcile_by = "none": no knob is proposed for it; the option of the
    endpoint itself that the search proves clears it is (keys = true), named as an endpoint change."""
    notify = _answers(_certificate("temporal", "idempotency=key", True))["notify_user"]
    assert notify.change_checked and notify.change_endpoint
    assert notify.change.startswith("the endpoint of notify_user must change: keys = true")
    notify = _answers(_certificate("step-functions-express-sync", "idempotency=key", True))["notify_user"]
    assert notify.change_endpoint or not notify.change_checked
    assert not notify.change.startswith(("idempotency=", "on_timeout=", "delivery="))
    create = _answers(_certificate("step-functions-express-sync", "idempotency=key", True))["create_account"]
    assert (create.change, create.change_checked) == ("delivery=at_least_once", True)


def test_a_keyless_notification_that_repeats_and_is_recorded_failed_names_both(cli):
    """issue 41: the order that sends the email twice also records the first as failed (lost_success): the
    verdict names both, each order's replay says what `fencesim run` shows, and the change is proved against
    both."""
    notify = _answers(_certificate("temporal"))["notify_user"]
    assert notify.verdict == BOTH
    assert notify.violates["repeats"] == ["repeats", "lost"]
    assert {"duplicate_effect", "lost_success"} <= set(notify.shows["repeats"])
    done = cli("certify", "-w", WORKLOAD, "--engine", "temporal", "-p", "idempotency=key", "--max-events", "2")
    assert done.returncode == 1, done.stderr
    assert "notify_user: repeats and can be lost" in done.stdout
    assert "repeats and lost; replayed, it shows duplicate_effect, lost_success" in done.stdout


def test_the_dependency_upgrade_names_both_for_each_keyless_step():
    """The eight-transition workflow of the issue: trigger_ci and post_slack repeat and are recorded as failed
    by the same order; publish_package too, and irreversible_keys=on is the change proved for it."""
    from pathlib import Path

    workload = sim.load_workload(str(Path(__file__).parents[1] / "families" / "effects" / "dependency_upgrade.toml"))
    answers = _answers(certify(workload, "temporal", "idempotency=key", max_events=1, propose=False))
    for name in ("trigger_ci", "post_slack", "publish_package"):
        assert answers[name].verdict == BOTH, name
        assert "lost_success" in answers[name].shows["repeats"], name
    assert answers["charge_usage"].verdict == EXACTLY_ONCE


def test_a_short_key_retention_is_named_as_the_endpoint_option(tmp_path):
    """issue 41 (9): with key_retention_s = 5 on charge_usage no knob clears the repeat; certify names the
    endpoint's own key_retention_s, proved by the search, not only "no knob clears it"."""
    from sim.registry import FAMILIES

    source = FAMILIES.load_workload("usage-charge").path.read_text()
    marked = source.replace('compensation = "refund_charge" }', 'compensation = "refund_charge", key_retention_s = 5 }')
    assert marked != source
    path = tmp_path / "usage5.toml"
    path.write_text(marked)
    certificate = certify(sim.load_workload(str(path)), "temporal", "idempotency=key", max_events=2)
    charge = _answers(certificate)["charge_usage"]
    assert charge.verdict in (REPEATS, BOTH)
    assert charge.change_checked and charge.change_endpoint
    assert "key_retention_s = 604800 (it declares 5" in charge.change
    assert "no knob the endpoint of charge_usage can take clears it" in charge.change


@pytest.mark.parametrize("engine", ["temporal", "step-functions-express-sync"])
def test_each_answer_replays_from_its_exported_scenario(engine, tmp_path, cli):
    from sim.app.certifying import export_answers

    certificate = certify(_workload(), engine, "idempotency=key", max_events=2, propose=False)
    paths = export_answers(certificate, _workload(), tmp_path)
    findings = [(a.transition, kind) for a in certificate.answers for kind, order in
                (("repeats", a.repeats), ("lost", a.lost)) if order is not None]
    assert len(paths) == len(findings) > 0
    for path in paths:
        scenario = sim.load_scenario(path)
        invariant = scenario.meta["invariant"]
        assert judge(scenario, FAMILY.parse_protocol(scenario.protocol), invariant), path
        done = cli("run", path)
        assert done.returncode == 1, done.stderr  # the run replays, and shows a safety violation
        if invariant.startswith("repeats:"):
            assert "duplicate_effect" in done.stdout


def test_the_command_line_table_json_and_exit_codes(cli, tmp_path):
    done = cli("certify", "-w", WORKLOAD, "--engine", "temporal", "-p", "idempotency=key", "--max-events", "2",
               "--json", "--export", tmp_path)
    assert done.returncode == 1, done.stderr
    document = json.loads(done.stdout)
    verdicts = {t["transition"]: t["verdict"] for t in document["certificates"][0]["transitions"]}
    assert verdicts == {"create_account": EXACTLY_ONCE, "notify_user": BOTH}
    assert "smallest change: the endpoint of notify_user must change" in done.stderr
    assert "replay: fencesim run" in done.stderr
    assert sorted(p.name for p in tmp_path.glob("*.toml")) == ["certify_temporal_notify_user_lost.toml",
                                                                "certify_temporal_notify_user_repeats.toml"]


@pytest.mark.parametrize(("args", "needle"), [
    (["--engine", "temporl"], "unknown engine 'temporl'"),
    (["--engine", "temporal", "-p", "idempotency=maybe"], "idempotency"),
    (["--engine", "temporal", "--max-events", "0"], "0 is out of range: from 1 to 12"),
])
def test_bad_input_is_one_line_and_exit_4(cli, args, needle):
    done = cli("certify", "-w", WORKLOAD, *args)
    assert done.returncode == 4, done.stderr
    assert needle in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_workspace_workload_is_refused(cli):
    done = cli("certify", "-w", "tiny", "--engine", "temporal")
    assert done.returncode == 4 and "certify reads effects workloads" in done.stderr


@pytest.mark.parametrize("where", ["a_file", "under_a_file"])
def test_an_export_folder_that_cannot_be_one_is_refused_before_the_search(cli, tmp_path, where):
    """--export naming a user's file, or a folder under one, is one line and exit 4 before any search runs (it
    was refused only when the search, however long, had ended): the planted search here would exit 99."""
    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n")
    export = notes if where == "a_file" else notes / "sub"
    prelude = "import sim.app.certifying\nsim.app.certifying.certify = lambda *args, **kwargs: exit(99)"
    done = cli("certify", "-w", WORKLOAD, "--engine", "temporal", "--export", export, prelude=prelude)
    assert done.returncode == 4, done.stderr
    assert "--export" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and notes.read_text() == "mine\n"


def test_a_change_whose_search_a_limit_stopped_is_undecided_never_cleared_by_nothing():
    """Under a spent budget the searches of the changes stop at once: the answer says the change is not decided,
    never that the endpoint options were searched and none clears it (unbudgeted, keys = true is proved)."""
    import copy

    from sim.app.certifying import _certifying_family, _propose, _transitions
    from sim.search.budget import Deadline

    notify = copy.deepcopy(_answers(_certificate("temporal", "idempotency=key"))["notify_user"])
    workload = _workload()
    transition = next(t for t in _transitions(workload) if t.name == "notify_user")
    family = _certifying_family([t.name for t in _transitions(workload)])
    _propose(notify, transition, workload, "temporal,idempotency=key", 2, Deadline(0.0), None, family)
    assert "none clears it" not in notify.change and "not decided" in notify.change
    assert not notify.change_checked


def test_certify_says_whether_the_task_ends_under_fairness(cli):
    done = cli("certify", "-w", "effects-pr", "--engine", "temporal", "--max-events", "1", "--json")
    assert done.returncode == 1, done.stderr
    assert "under fairness the task ends within 1 fault (" in done.stderr + done.stdout
    assert "task_terminal holds; unknown_resolved holds (vacuously)" in done.stderr + done.stdout
    import json

    liveness = json.loads(done.stdout)["certificates"][0]["liveness"]
    assert liveness["task_terminal"]["status"] == "holds" and liveness["within_faults"] == 1
