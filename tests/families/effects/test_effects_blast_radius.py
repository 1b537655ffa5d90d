"""The blast radius acts by what the endpoint can do (queryable, deletable, keyed) and names the object's
kind: never "find it by the task marker" for an e-mail that cannot be queried, never "revoke the release"
for an e-mail."""

from __future__ import annotations

from pathlib import Path

import tomli_w

from sim.core.files import read_toml
from sim.core.history import History
from sim.families.effects import FAMILY
from sim.families.effects.ledger import ledger
from sim.families.effects.scenario import load_runtime_scenario

MAIL = {"name": "send_email", "class": "irreversible", "object": "email", "keys": False, "reconcile_by": "none",
        "approval": False}


def recorded(*events: tuple[str, dict]) -> History:
    history = History()
    for name, fields in events:
        history.append(0.0, "git", name, **fields)
    return history


def commit(effect: str, effect_class: str, **fields) -> tuple[str, dict]:
    return ("committed", {"task": "t", "transition": "x", "logical": "x", "effect": effect,
                          "effect_class": effect_class, **fields})


DONE = ("task_terminal", {"task": "t", "outcome": "succeeded"})


def who(history: History, kind: str) -> list[str]:
    return [e.who_acts for e in ledger(history) if e.kind == kind]


def test_an_unqueryable_orphan_is_not_found_by_the_task_marker():
    """An e-mail the endpoint cannot be queried for or delete: found where it landed, recorded or corrected."""
    [action] = who(recorded(commit("email#1", "irreversible", reconcile_by="none"), DONE), "object_orphaned")
    assert "task marker" not in action and "delete" not in action.replace("cannot be deleted", "")
    assert "cannot be queried" in action and "e-mail" in action


def test_a_queryable_deletable_orphan_is_found_and_adopted_or_compensated():
    """A pull request, keyed and with a compensation: found by its key or marker, adopted or closed."""
    [action] = who(recorded(commit("pull_request#1", "keyed_creation", key="k", compensation="close_pr"), DONE),
                   "object_orphaned")
    assert "idempotency key or the task marker" in action and "close_pr" in action
    [marker] = who(recorded(commit("note#1", "idempotent", reconcile_by="marker"), DONE), "object_orphaned")
    assert "find it by the task marker" in marker


def test_a_duplicate_is_named_by_its_kind():
    """A second e-mail gets a correction to its recipients, a second release a superseding release."""
    second_email = recorded(commit("email#1", "irreversible"), commit("email#2", "irreversible"))
    [email] = who(second_email, "object_duplicated")
    assert "e-mail" in email and "release" not in email
    [release] = who(recorded(commit("release#1", "irreversible"), commit("release#2", "irreversible")),
                    "object_duplicated")
    assert "release" in release
    [other] = who(recorded(commit("payout#1", "irreversible"), commit("payout#2", "irreversible")),
                  "object_duplicated")
    assert "payout" in other and "release" not in other


def test_a_run_of_the_keyless_e_mail_gets_advice_it_can_take(tmp_path: Path):
    """A duplicated e-mail: the duplicate and the orphaned copy are named with actions the endpoint allows."""
    path = tmp_path / "mail.toml"
    path.write_text(tomli_w.dumps({"family": "effects", "task": "task_7", "workflow": [MAIL],
                                   "faults": ["duplicate send_email after_dispatch"]}), encoding="utf-8")
    scenario = load_runtime_scenario(*read_toml(path))
    history = FAMILY.replay(scenario, FAMILY.parse_protocol("keyed-fingerprint-reconcile"),
                            list(scenario.faults)).history
    entries = FAMILY.effect_ledger(history)
    assert {e.kind for e in entries} >= {"object_duplicated", "object_orphaned"}
    for entry in entries:
        assert "task marker" not in entry.who_acts and "revoke" not in entry.who_acts
