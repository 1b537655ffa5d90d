"""The durable engines as presets (docs/engines.md): each engine's preset sets what the engine decides, the table
in the docs is the declared one, and ``delivery`` changes what a struck transition does."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

import sim
from sim.families.effects import FAMILY
from sim.families.effects.faults import FaultEvent
from sim.families.effects.knobs import AT_LEAST_ONCE_ENGINES, ENGINE_PRESETS, ENGINES, EffectsKnobs

DOCS = Path(__file__).resolve().parents[3] / "docs" / "engines.md"
LOSE_RESPONSE = FaultEvent("lose_response", "notify_user", "after_commit")
LOSE_REQUEST = FaultEvent("lose_request", "notify_user", "after_dispatch")


@functools.cache
def _workload():
    return sim.load_workload("notify-after-create")


def _run(protocol, *faults):
    return FAMILY.replay(_workload().base, FAMILY.parse_protocol(protocol), faults)


def _events(replay, name, transition="notify_user"):
    return [e for e in replay.history if e.event == name and e.get("transition") == transition]


def test_every_engine_is_a_preset_and_the_docs_table_is_the_declared_one():
    assert ENGINES == ("temporal", "dbos", "step-functions-standard", "step-functions-express-async",
                       "step-functions-express-sync", "durable-task", "inngest", "restate")
    rows = [line for line in DOCS.read_text().splitlines() if re.match(r"\| `[a-z-]+` \| `", line)]
    shown = {}
    for row in rows:
        cells = [c.strip().strip("`") for c in row.strip("|").split("|")]
        shown[cells[0]] = dict(zip(("delivery", "on_timeout", "reconcile", "checkpoint", "lease_fence",
                                    "pin_reads", "version_policy"), cells[1:]))
    assert shown == ENGINE_PRESETS
    for engine in ENGINES:
        values = EffectsKnobs.of(FAMILY.parse_protocol(engine))
        assert values.delivery == ENGINE_PRESETS[engine]["delivery"]
        assert values.idempotency == "none"  # keys are the user's, never the engine's


def test_an_engine_preset_takes_the_users_knobs_after_it():
    values = EffectsKnobs.of(FAMILY.parse_protocol("step-functions-express-sync,idempotency=key"))
    assert (values.delivery, values.idempotency) == ("at_most_once", "key")


@pytest.mark.parametrize("engine", AT_LEAST_ONCE_ENGINES)
def test_at_least_once_dispatches_a_lost_response_again(engine):
    """The email went out, its response was lost: an at-least-once engine sends it again (a second email)."""
    replay = _run(f"{engine},idempotency=key", LOSE_RESPONSE)
    assert len(_events(replay, "dispatched")) == 2
    assert "duplicate_effect" in {v.invariant for v in FAMILY.check(replay.history).safety_violations}
    assert not [e for e in _events(replay, "transition_failed") if e.get("reason") == "at_most_once"]


@pytest.mark.parametrize("fault", [LOSE_RESPONSE, LOSE_REQUEST])
def test_at_most_once_gives_the_transition_up(fault):
    """Under step-functions-express-sync the email is dispatched once: a lost response or request fails it (the
    at-most-once mechanism fired), nothing is sent twice, and the task aborts."""
    replay = _run("step-functions-express-sync,idempotency=key", fault)
    assert len(_events(replay, "dispatched")) == 1
    failed = _events(replay, "transition_failed")
    assert [e.get("reason") for e in failed] == ["at_most_once"]
    violated = {v.invariant for v in FAMILY.check(replay.history).safety_violations}
    assert "duplicate_effect" not in violated
    assert ("lost_success" in violated) == (fault is LOSE_RESPONSE)  # it happened, and was recorded as failed
    measures = FAMILY.measure(replay)
    assert measures.get("fired_delivery") == 1


def test_at_most_once_without_a_fault_is_one_clean_run_and_never_fires():
    protocol = FAMILY.parse_protocol("step-functions-express-sync,idempotency=key")
    replay = FAMILY.replay(_workload().base, protocol, ())
    assert not FAMILY.check(replay.history).safety_violations or {
        v.invariant for v in FAMILY.check(replay.history).safety_violations} <= {"unapproved_irreversible"}
    lines = FAMILY.never_fired(_workload(), protocol, FAMILY.measure(replay))
    assert any(line["knob"] == "delivery" for line in lines)
