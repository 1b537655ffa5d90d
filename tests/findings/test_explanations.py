"""Explanations as data: a violation says why as facts (events by index, the state values compared), every
text is rendered from them, ``--json`` carries them, and they follow the history they were read from."""

from __future__ import annotations

import glob
import json

from sim.core.checks import Fact
from sim.core.history import Event, History
from sim.registry import FAMILIES
from sim.report.explain import disagreements, explanation_frame, explanation_lines
from tests.cli.test_cli_input_hardening import run_cli


def _replayed(path):
    scenario = FAMILIES.load_scenario(path)
    family = FAMILIES.family_for(scenario)
    protocol = family.parse_protocol(scenario.protocol or "none")  # the seed's stories name none: fence=none
    return family, family.replay(scenario, protocol).history


def _edited(history, index: int, **fields) -> History:
    """The history with event ``index``'s fields changed (one fact of the run made different)."""
    return History([Event(e.index, e.time, e.actor, e.event, {**e.fields, **fields}) if e.index == index else e
                    for e in history])


def _violation(family, history, invariant: str):
    return next(v for v in family.check(history, (invariant,)).safety_violations)


def _facts(violation) -> dict[str, dict]:
    return {f.role: f.to_dict() for f in violation.explanation}


def test_a_lost_update_names_the_write_and_the_edit_it_overwrote(repo_root):
    """The seed's concurrent edit: s2's write (its hashes compared) and the human edit it destroyed, by index."""
    family, history = _replayed(repo_root / "scenarios/regressions/seed_fuzz_none_lost_update.toml")
    violation = _violation(family, history, "lost_update")
    facts = _facts(violation)
    write, overwrote = facts["write"], facts["overwrote"]
    assert write["event_index"] == violation.event_index and write["event"] == "deliver"
    assert write["values"]["hash_before"] != write["values"]["expected_prior_hash"]
    assert overwrote["event"] == "human_edit" and overwrote["event_index"] < write["event_index"]
    assert disagreements(history, violation.explanation) == []


def test_changing_one_fact_of_the_history_changes_the_explanation(repo_root):
    """Edit the overwritten human edit's file: the explanation no longer names it (no such edit of that file);
    edit the recorded hash before the write: the fact shows the new hash."""
    family, history = _replayed(repo_root / "scenarios/regressions/seed_fuzz_none_lost_update.toml")
    before = _violation(family, history, "lost_update")
    edit = _facts(before)["overwrote"]["event_index"]
    moved = _violation(family, _edited(history, edit, path="other.py"), "lost_update")
    assert "overwrote" in _facts(before) and "overwrote" not in _facts(moved)
    rehashed = _violation(family, _edited(history, before.event_index, hash_before="0123456789abcdef"),
                          "lost_update")
    assert _facts(rehashed)["write"]["values"]["hash_before"] == "0123456789abcdef"
    assert explanation_lines(rehashed.explanation) != explanation_lines(before.explanation)


def test_an_effects_duplicate_says_whether_a_key_was_sent(repo_root):
    """Unkeyed retry: both commits of the preview, keyed=no; give the second commit a key and the fact says so."""
    family, history = _replayed(repo_root / "scenarios/regressions/effects_saga_unkeyed_retry_duplicate_effect.toml")
    violation = _violation(family, history, "duplicate_effect")
    facts = _facts(violation)
    first, second = facts["first_commit"], facts["second_commit"]
    assert first["event_index"] < second["event_index"] == violation.event_index
    assert first["values"]["keyed"] is False and second["values"]["keyed"] is False
    keyed = _violation(family, _edited(history, second["event_index"], key="k-1"), "duplicate_effect")
    assert _facts(keyed)["second_commit"]["values"]["key"] == "k-1"
    assert _facts(keyed)["second_commit"]["values"]["keyed"] is True


def test_every_explanation_agrees_with_its_history(repo_root):
    """Over every shipped regression and story, each fact's event is the one at its index and each recorded
    value is the one recorded (a wrong index or a stale value would be a disagreement)."""
    paths = sorted(glob.glob(str(repo_root / "scenarios/regressions/*.toml"))
                   + glob.glob(str(repo_root / "scenarios/runtime/*.toml"))
                   + glob.glob(str(repo_root / "scenarios/seed/*.toml")))
    explained = 0
    for path in paths:
        family, history = _replayed(path)
        for violation in family.check(history).safety_violations:
            assert violation.explanation, (path, violation)
            assert disagreements(history, violation.explanation) == [], (path, violation)
            explained += 1
    assert explained >= 10


def test_a_planted_wrong_index_is_a_disagreement(repo_root):
    """The agreement check fails where an explanation points at the wrong event or shows a value not recorded."""
    family, history = _replayed(repo_root / "scenarios/regressions/seed_fuzz_none_lost_update.toml")
    write = next(f for f in _violation(family, history, "lost_update").explanation if f.role == "write")
    wrong_event = Fact(write.role, 0, write.event, write.values)
    assert disagreements(history, [wrong_event])
    stale = Fact(write.role, write.event_index, write.event, (("hash_before", "not-the-recorded-hash"),))
    assert "not not-the-recorded-hash" in disagreements(history, [stale])[0]
    assert disagreements(history, [Fact("write", 10_000, "deliver")]) == ["write: event 10000 is not in the history"]


def test_text_and_frame_are_rendered_from_the_facts():
    facts = [Fact("write", 6, "deliver", (("step", "s2"), ("replaced_hunks", ["_"]))), Fact("accepted", None)]
    assert explanation_lines(facts) == ["event 6 (deliver), write: step=s2, replaced_hunks=[_]", "the run, accepted"]
    frame = explanation_frame([f.to_dict() for f in facts])
    assert list(frame["field"]) == ["step", "replaced_hunks"] and set(frame["event_index"]) == {6}


def test_fuzz_json_carries_each_findings_explanation(tmp_path):
    """``fuzz --json``: every counterexample has its finding's detail and facts, pointing at events of the
    exported order's replay; the terminal prints them as "why:" lines."""
    code, out, err = run_cli("fuzz", "--workload", "usage-charge", "-p", "ledger_dedupe=off", "--seeds", "60",
                             "--no-advise", "--json", "--out", tmp_path)
    assert code == 1, err
    examples = json.loads(out)["counterexamples"]
    assert examples
    for example in examples:
        assert example["detail"] and example["explanation"], example
        for fact in example["explanation"]:
            assert isinstance(fact["event_index"], int) and fact["values"]
        scenario = FAMILIES.load_scenario(tmp_path / example["file"].rsplit("/", 1)[-1])
        family = FAMILIES.family_for(scenario)
        history = family.replay(scenario, family.parse_protocol(example["protocol"])).history
        assert disagreements(history, example["explanation"]) == []
    _, text, _ = run_cli("fuzz", "--workload", "usage-charge", "-p", "ledger_dedupe=off", "--seeds", "60",
                         "--no-advise", "--out", tmp_path / "text")
    assert "  why: event " in text
