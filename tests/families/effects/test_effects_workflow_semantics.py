"""What each effect class means at run time in a user's workflow: an append deduplicated only at a ledger
that takes keys, a read whose world moves on (an unpinned read, reported as ``version_mismatch``), a
version 2 the user declares, and the
advisor's plain answer at an endpoint no protocol can protect."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.core.errors import ScenarioError
from sim.core.files import read_toml
from sim.core.history import History
from sim.families.effects import FAMILY, checks
from sim.families.effects.scenario import load_runtime_scenario
from sim.registry import FAMILIES
from sim.search.advisor import advise

KFR = "keyed-fingerprint-reconcile"
CHARGE = """workflow = [
  { name = "open_pr", class = "keyed_creation", object = "pull_request", compensation = "close_pr" },
  { name = "charge_usage", class = "append", object = "charge", compensation = "refund_charge" },
]
"""
READ = """workflow = [
  { name = "fetch_deps", class = "read", object = "lockfile" },
  { name = "build", class = "idempotent", object = "build" },
  { name = "open_pr", class = "keyed_creation", object = "pull_request", compensation = "close_pr" },
]
"""
VERSIONED = """workflow = [
  { name = "create_branch", class = "keyed_creation", object = "branch", compensation = "delete_branch" },
  { name = "open_pr", class = "keyed_creation", object = "pull_request", compensation = "close_pr" },
  { name = "run_ci", class = "idempotent", object = "ci_run" },
  { name = "merge_pr", class = "irreversible", object = "merge", keys = true },
]

[versions.2]
workflow = ["create_branch", "open_pr -> open_change", { name = "verify_ci", class = "idempotent", object = "check" },
            "run_ci", "merge_pr"]
"""


def scenario(tmp_path: Path, body: str, faults: list[str]):
    path = tmp_path / "s.toml"
    quoted = ", ".join(f'"{f}"' for f in faults)
    path.write_text(f'family = "effects"\ntask = "task_7"\nfaults = [{quoted}]\n' + body, encoding="utf-8")
    return load_runtime_scenario(*read_toml(path))


def run(story, protocol: str):
    replay = FAMILY.replay(story, FAMILY.parse_protocol(protocol), list(story.faults))
    return replay.history, {v.invariant for v in FAMILY.check(replay.history).safety_violations}


def test_an_append_is_a_second_charge_at_a_ledger_without_dedupe(tmp_path):
    """A duplicated charge request: a second charge with ledger_dedupe=off, deduplicated with key."""
    story = scenario(tmp_path, CHARGE, ["duplicate charge_usage after_dispatch"])
    history, violated = run(story, KFR + ",ledger_dedupe=off")
    assert "duplicate_effect" in violated
    assert any("second charge" in v.detail for v in FAMILY.check(history).safety_violations)
    assert run(story, KFR)[1] == set()


def test_a_read_that_changed_is_acted_on_only_when_reads_are_not_pinned(tmp_path):
    """The world moves on after the read, the worker dies: unpinned, its successor builds on what it reads
    again; pinned, on what the log recorded."""
    story = scenario(tmp_path, READ, ["read_changes fetch_deps after_receipt", "terminate fetch_deps after_receipt"])
    history, violated = run(story, KFR + ",pin_reads=off")
    assert violated == {"version_mismatch"}
    details = [v.detail for v in FAMILY.check(history).safety_violations]
    assert details and all(d.startswith("unpinned read: ") for d in details)
    assert any(e.event == "observed" and e.get("reread") for e in history)
    history, violated = run(story, KFR)
    assert violated == set()
    receipt = next(e for e in history if e.event == "receipt_recorded" and e["transition"] == "fetch_deps")
    assert receipt["observed_version"] == 1 and receipt["content_hash"]


def test_read_changes_applies_to_reads_only(tmp_path):
    """read_changes moves what a read observes; on another transition it finds nothing to act on (like every
    fault that cannot strike), and the alphabet never offers it there."""
    story = scenario(tmp_path, READ, ["read_changes build after_receipt"])
    history, violated = run(story, KFR + ",pin_reads=off")
    assert violated == set() and not any(e.event == "read_changed" for e in history)
    alphabet = FAMILY.alphabet(FAMILIES.load_workload("pinned-dependencies"))
    assert {e.transition for e in alphabet if e.fault == "read_changes"} == {"fetch_deps"}


def _history(*events):
    return History.from_dicts([dict(index=i, time=float(i), actor="w1", **e) for i, e in enumerate(events)])


def test_unpinned_read_check_planted_history():
    """A planted history: the receipt recorded version 1, the effect says it was built from version 2."""
    base = [dict(event="accepted", task="t"),
            dict(event="observed", task="t", transition="r", logical="r", effect="x@v1", version=1),
            dict(event="receipt_recorded", task="t", transition="r", logical="r", effect="x@v1", observed_version=1)]
    bad = _history(*base, dict(event="committed", task="t", transition="b", effect="b#1", read_versions=[["r", 2]]))
    good = _history(*base, dict(event="committed", task="t", transition="b", effect="b#1", read_versions=[["r", 1]]))
    assert checks.unpinned_read(bad).status == "violated"
    assert checks.version_mismatch(bad).status == "violated"
    assert checks.version_mismatch(bad).violations[0].detail.startswith("unpinned read: b#1 was built from r")
    assert checks.unpinned_read(good).status == "ok" and checks.version_mismatch(good).status == "ok"
    blind = _history(*base, dict(event="committed", task="t", transition="b", effect="b#1"))
    assert checks.unpinned_read(blind).status == "not_evaluable"
    assert checks.version_mismatch(blind).status == "not_evaluable"


def test_a_user_declared_version_2_is_what_the_upgrade_deploys(tmp_path):
    """[versions.2] renames open_pr -> open_change and inserts verify_ci: version_mismatch under the weak
    policy, none when tasks stay pinned to their version (or migrate)."""
    story = scenario(tmp_path, VERSIONED, ["upgrade create_branch after_receipt", "terminate open_pr after_intent"])
    upgraded = story.workflow.declared_upgrade
    assert upgraded.names() == ["create_branch", "open_change", "verify_ci", "run_ci", "merge_pr"]
    assert upgraded.renamed == (("open_pr", "open_change"),) and upgraded.inserted == ("verify_ci",)
    assert upgraded.get("open_change").logical == "open_pr"
    history, violated = run(story, KFR + ",version_policy=none")
    assert "version_mismatch" in violated
    event = next(e for e in history if e.event == "upgraded")
    assert event["inserted"] == ["verify_ci"] and event["renamed"] == [["open_pr", "open_change"]]
    assert run(story, KFR)[1] == set()
    assert run(story, KFR + ",version_policy=migrate")[1] == set()


@pytest.mark.parametrize("versions, fragment", [
    ('[versions.2]\nworkflow = ["create_branch", "run_ci", "merge_pr"]\n', "drops open_pr"),
    ('[versions.2]\nworkflow = ["create_branch", "open_pr", "open_pr", "run_ci", "merge_pr"]\n', "twice"),
    ('[versions.2]\nworkflow = ["create_branch", "nope", "open_pr", "run_ci", "merge_pr"]\n', "not a transition"),
    ('[versions.3]\nworkflow = ["create_branch"]\n', "only version 2"),
    ('[versions.2]\nsteps = []\n', "unknown key 'steps'"),
])
def test_a_declared_version_2_mistake_is_refused(tmp_path, versions, fragment):
    """Each mistake in [versions.2] is a ScenarioError naming the file."""
    body = VERSIONED.split("[versions.2]")[0] + versions
    with pytest.raises(ScenarioError, match=fragment) as caught:
        scenario(tmp_path, body, ["terminate open_pr after_intent"])
    assert "s.toml:" in str(caught.value)


def test_the_advisor_says_plainly_when_no_protocol_can_protect_a_keyless_endpoint():
    """The duplicated Slack announcement: no knob removes it, and the advice never proposes a key."""
    workload = FAMILIES.load_workload("agent-pr-workflow")
    protocol = FAMILY.parse_protocol(KFR)
    events = [FAMILY.parse_event(workload.base, "duplicate post_slack after_dispatch")]
    advice = advise(FAMILY, workload, protocol, "duplicate_effect", events, sample_seeds=10)
    assert advice.recommended is None
    assert advice.beyond_protocol.startswith("no protocol change removes this; the endpoint itself must become "
                                             "idempotent")
    assert "key" not in advice.beyond_protocol.replace("keyed", "")
    assert "beyond_protocol" in advice.to_json()


def test_dropping_any_field_never_hides_an_unpinned_read(tmp_path):
    """As the quality suite asks of every check: without any one field, the unpinned read stays a violation or
    becomes not_evaluable -- never ok."""
    from sim.core.history import Event

    story = scenario(tmp_path, READ, ["read_changes fetch_deps after_receipt", "terminate fetch_deps after_receipt"])
    history, violated = run(story, KFR + ",pin_reads=off")
    assert violated == {"version_mismatch"}
    for name in sorted({n for event in history for n in event.fields}):
        stripped = History(Event(e.index, e.time, e.actor, e.event, {k: v for k, v in e.fields.items() if k != name})
                           for e in history)
        assert checks.version_mismatch(stripped).status in ("violated", "not_evaluable"), name
