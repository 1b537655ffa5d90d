"""Effects checks on histories that contradict themselves or are large: a task recorded succeeded after
a failed transition is not_evaluable (never ok), and lost_success / unresolved_compensation give the
same findings as the plain quadratic reading of their definitions, in one pass."""

from __future__ import annotations

import random

from sim.core.checks import NOT_EVALUABLE, Violation
from sim.core.history import History
from sim.families.effects import checks as fx

COMMIT = {"actor": "git", "event": "committed", "task": "t", "transition": "open_pr", "generation": 1,
          "effect": "pr#1", "effect_class": "keyed_creation", "compensation": "close_pr"}


def _h(*rows):
    return History.from_dicts(rows)


def test_succeeded_after_a_failed_transition_is_not_evaluable():
    """committed, receipted, then transition_failed and a succeeded terminal: the task's outcome cannot be
    told, so unresolved_compensation says not_evaluable (the history used to pass every check)."""
    history = _h({"actor": "queue", "event": "accepted", "task": "t"}, COMMIT,
                 {"actor": "w1", "event": "receipt_recorded", "task": "t", "transition": "open_pr", "effect": "pr#1"},
                 {"actor": "w1", "event": "transition_failed", "task": "t", "transition": "create_preview"},
                 {"actor": "w2", "event": "task_terminal", "task": "t", "outcome": "succeeded"})
    result = fx.unresolved_compensation(history)
    assert result.status == NOT_EVALUABLE and "contradicts itself" in result.reason


def test_succeeded_without_a_failure_is_judged():
    """A plain successful task still gives ok."""
    history = _h(COMMIT, {"actor": "w2", "event": "task_terminal", "task": "t", "outcome": "succeeded"})
    assert fx.unresolved_compensation(history).status == "ok"


def _reference_lost_success(history) -> list[Violation]:
    """lost_success as its docstring reads, scanning everything after each commit."""
    receipted = {(e.get("task"), e.get("effect")) for e in history if e.event == "receipt_recorded"}
    out = []
    for commit in (e for e in history if e.event == "committed"):
        if (commit["task"], commit["effect"]) in receipted:
            continue
        group = (commit["task"], commit.get("logical") or commit["transition"], commit.get("generation", 1))
        later = [e for e in history if e.index > commit.index and e.get("task") == commit["task"]]
        failed = next((e for e in later if e.get("transition") == commit["transition"] and (
            (e.event == "timed_out" and e.get("outcome") == "failed") or e.event == "transition_failed")), None)
        again = next((e for e in later if e.event == "committed" and
                      (e["task"], e.get("logical") or e["transition"], e.get("generation", 1)) == group), None)
        if failed or again:
            shown = failed or again
            how = "recorded as failed" if failed else f"done again as {again.get('effect')}"
            out.append(Violation("lost_success", shown.index, commit["transition"],
                                 f"{commit['effect']} committed but was {how}", domain="lost_ack"))
    return out


def _random_history(rng: random.Random, size: int) -> History:
    rows = []
    for _ in range(size):
        task, transition = rng.choice("ab"), rng.choice(("x", "y"))
        kind = rng.choice(("committed", "committed", "receipt_recorded", "timed_out", "transition_failed",
                           "task_terminal", "compensated"))
        row = {"actor": "w", "event": kind, "task": task, "transition": transition,
               "effect": f"e{rng.randrange(6)}", "generation": rng.choice((1, 2)), "compensation": "undo"}
        if kind == "timed_out":
            row["outcome"] = rng.choice(("failed", "unknown"))
        if kind == "task_terminal":
            row["outcome"] = rng.choice(("failed", "compensated"))
        rows.append(row)
    return History.from_dicts(rows)


def test_lost_success_matches_its_definition():
    """On random histories the one-pass lost_success finds exactly what the definition finds."""
    rng = random.Random(21)
    for _ in range(300):
        history = _random_history(rng, rng.randrange(1, 30))
        assert list(fx.lost_success(history).violations) == _reference_lost_success(history)


def test_unresolved_compensation_matches_its_definition():
    """On random histories unresolved_compensation reports each owed effect at each unsuccessful close."""
    rng = random.Random(7)
    for _ in range(300):
        history = _random_history(rng, rng.randrange(1, 30))
        compensated = {(e.get("task"), e.get("effect")) for e in history if e.event == "compensated"}
        expected = [(t.index, c.get("transition")) for t in history if t.event == "task_terminal"
                    for c in history if c.event == "committed" and c.get("task") == t.get("task")
                    and (c.get("task"), c.get("effect")) not in compensated]
        found = [(v.event_index, v.step) for v in fx.unresolved_compensation(history).violations]
        assert found == expected
