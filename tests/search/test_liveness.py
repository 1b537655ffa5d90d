"""Liveness under fairness (:mod:`sim.search.liveness`): fair cycles, stuttering, faults kept out of cycles,
dropped assumptions, carries, what a cut graph decides -- on small machines whose answers are known by hand,
and on the workspace family with planted liveness bugs."""

from __future__ import annotations

from typing import Any

import pytest

from sim.core.errors import InputError
from sim.core.liveness import Eventually, LeadsTo, LivenessModel
from sim.core.machine import Machine
from sim.families.workspace.family import WorkspaceFamily
from sim.families.workspace.machine import WorkspaceMachine
from sim.registry import FAMILIES
from sim.search.liveness import check_liveness


class Graph(Machine):
    """A machine given as its edges: ``{state: {event: next state}}``; the first state is initial."""

    def __init__(self, edges: dict[str, dict[str, str]]):
        self.edges = edges

    def initial(self) -> str:
        return next(iter(self.edges))

    def why_not(self, state: str, event: str) -> str | None:
        return None if event in self.edges.get(state, {}) else "not here"

    def step(self, state: str, event: str) -> tuple[str, list]:
        return self.edges[state][event], [("toy", event, {})]


class Toy:
    """Just what the liveness search asks of a family."""

    name = "toy"

    def __init__(self, edges: dict[str, dict[str, str]], model: LivenessModel):
        self.graph, self.model = Graph(edges), model

    def machine(self, scenario: Any, protocol: Any) -> Machine:
        return self.graph

    def liveness(self, workload: Any, protocol: Any) -> LivenessModel:
        return self.model

    def alphabet(self, workload: Any) -> list[str]:
        return sorted({e for out in self.graph.edges.values() for e in out})


class Workload:
    base = None


class TOY_PROTOCOL:
    label = "toy"


def judge(edges, roles, properties=None, unfair=(), max_faults=2, max_states=1000, **model):
    properties = properties or (Eventually("reaches_goal", lambda state, carry: state == "goal"),)
    live = LivenessModel(properties, role=lambda state, carry, event: roles.get(event, "fair"),
                         assumption=lambda event: "human" if event.startswith("answer") else "system",
                         assumptions={"system": "", "human": ""}, **model)
    return check_liveness(Toy(edges, live), Workload(), TOY_PROTOCOL, max_faults, max_states=max_states,
                          unfair=unfair)


def test_a_fair_cycle_away_from_the_goal_is_a_lasso():
    # go is enabled in a only: weak fairness does not force it on a behaviour that keeps leaving a
    result = judge({"a": {"ping": "b", "go": "goal"}, "b": {"pong": "a"}, "goal": {}}, {"ping": "free", "pong": "free"})
    verdict = result.verdicts["reaches_goal"]
    assert verdict.status == "violated"
    assert (verdict.prefix, verdict.cycle) == ((), ("ping", "pong"))


def test_an_event_enabled_all_around_a_cycle_must_be_taken_so_the_cycle_is_unfair():
    edges = {"a": {"ping": "b", "go": "goal"}, "b": {"pong": "a", "go": "goal"}, "goal": {}}
    assert judge(edges, {"ping": "free", "pong": "free"}).verdicts["reaches_goal"].status == "holds"


def test_a_dropped_assumption_makes_its_events_optional():
    edges = {"start": {"ask": "a"}, "a": {"answer": "goal"}, "goal": {}}
    assert judge(edges, {}).verdicts["reaches_goal"].status == "holds"
    verdict = judge(edges, {}, unfair=("human",)).verdicts["reaches_goal"]
    assert verdict.status == "violated"
    assert (verdict.prefix, verdict.cycle) == (("ask",), ())  # nothing fair is left in a: it waits forever


def test_a_state_where_nothing_fair_can_happen_is_a_lasso_that_stays():
    verdict = judge({"a": {"go": "stuck"}, "stuck": {}, "goal": {}}, {}).verdicts["reaches_goal"]
    assert verdict.status == "violated" and verdict.prefix == ("go",) and verdict.cycle == ()


def test_faults_are_finite_so_a_cycle_through_a_fault_is_no_behaviour():
    edges = {"a": {"crash": "b", "go": "goal"}, "b": {"recover": "a"}, "goal": {}}
    result = judge(edges, {"crash": "fault"})
    assert result.verdicts["reaches_goal"].status == "holds"
    assert result.exhausted and result.acted == ("crash",)
    # the same loop with the crash as the system's own move is a fair cycle (go is not enabled in b)
    assert judge(edges, {"crash": "free"}).verdicts["reaches_goal"].status == "violated"


def test_the_fault_bound_cuts_the_graph_and_the_answer_says_within_it():
    edges = {"a": {"crash": "b", "go": "goal"}, "b": {"crash": "c", "recover": "a"}, "c": {}, "goal": {}}
    within_one = judge(edges, {"crash": "fault"}, max_faults=1)
    assert within_one.verdicts["reaches_goal"].status == "holds"
    assert not within_one.exhausted and "within 1 fault" in within_one.verdicts["reaches_goal"].note
    two = judge(edges, {"crash": "fault"}, max_faults=2).verdicts["reaches_goal"]
    assert two.status == "violated" and two.prefix == ("crash", "crash") and two.cycle == ()


def test_a_cut_graph_decides_nothing_but_a_violation_found_in_it():
    chain = {f"s{i}": {"next": f"s{i + 1}"} for i in range(50)} | {"s50": {"next": "goal"}, "goal": {}}
    verdict = judge(chain, {}, max_states=10).verdicts["reaches_goal"]
    assert verdict.status == "not decided" and "state limit" in verdict.note
    # a lasso whose states were all expanded is real however the graph was cut
    looping = {"s0": {"spin": "s1"}, "s1": {"spin": "s0", "next": "s2"}} | {
        f"s{i}": {"next": f"s{i + 1}"} for i in range(2, 50)}
    assert judge(looping, {"spin": "free", "next": "free"}, max_states=10).verdicts["reaches_goal"].status == \
        "violated"


def test_leads_to_names_the_item_left_pending_and_a_carry_remembers_what_the_state_forgets():
    # the state forgets a lost answer; the carry keeps what is awaited
    edges = {"idle": {"send": "sent"}, "sent": {"answer": "idle", "lose": "idle"}}

    def update(carry, before, event, after, records):
        return carry | {"r"} if event == "send" else carry - {"r"} if event == "answer" else carry

    props = (LeadsTo("answered", lambda state, carry: carry),)
    result = judge(edges, {"lose": "fault", "send": "free"}, properties=props, start=frozenset(), update=update)
    verdict = result.verdicts["answered"]
    assert verdict.status == "violated" and verdict.item == "r"
    assert (verdict.prefix, verdict.cycle) == (("send", "lose"), ())  # sent again? free: it need not be


def test_a_property_nothing_ever_owed_holds_vacuously():
    props = (LeadsTo("answered", lambda state, carry: frozenset()),)
    verdict = judge({"a": {"go": "goal"}, "goal": {}}, {}, properties=props).verdicts["answered"]
    assert verdict.status == "holds" and verdict.vacuous


def test_bad_input_is_one_clear_error():
    with pytest.raises(InputError, match="unknown fairness assumption nobody"):
        judge({"a": {}}, {}, unfair=("nobody",))
    with pytest.raises(InputError, match="--max-faults"):
        judge({"a": {}}, {}, max_faults=-1)


# -- the workspace family ----------------------------------------------------------------------------------


class SwallowsDedupedAnswers(WorkspaceMachine):
    """Planted: the executor answers nothing to a request it deduplicates, so a retry after a lost ack is
    never answered, and the client's timeout re-sends forever."""

    def finish(self, state, message, verdict, fields, changes=None):
        state, records = super().finish(state, message, verdict, fields, changes)
        if verdict == "deduped":
            state = state._replace(answers=tuple(a for a in state.answers if a.verdict != "deduped"))
        return state, records


class NeverSendsTheLastStep(WorkspaceMachine):
    """Planted: the client never dispatches the plan's last step."""

    def why_not_dispatch(self, state, event):
        if self.order[event.step] == len(self.order) - 1:
            return "held forever"
        return super().why_not_dispatch(state, event)


@pytest.fixture(scope="module")
def tiny():
    return FAMILIES.load_workload("tiny")


def live(tiny, protocol, machine=WorkspaceMachine, **options):
    family = WorkspaceFamily(machine=machine)
    return check_liveness(family, tiny, family.parse_protocol(protocol), options.pop("max_faults", 2), **options)


@pytest.mark.parametrize("protocol", ["none", "plan", "step", "step-dedupe"])
def test_the_presets_settle_every_step_and_answer_every_request_within_two_faults(tiny, protocol):
    result = live(tiny, protocol)
    assert {n: v.status for n, v in result.verdicts.items()} == {"step_settled": "holds",
                                                                  "request_answered": "holds"}
    assert result.complete and {"preempt", "lose_ack"} <= set(result.acted)


def test_without_the_clients_timeout_a_preempted_request_waits_forever(tiny):
    verdict = live(tiny, "step", unfair=("timeout",)).verdicts["request_answered"]
    assert verdict.status == "violated" and verdict.cycle == ()
    assert [str(e) for e in verdict.prefix] == ["plan", "dispatch s1", "preempt before_write", "deliver s1"]


def test_planted_an_executor_that_does_not_answer_a_deduplicated_retry_loops_forever(tiny):
    result = live(tiny, "step-dedupe", SwallowsDedupedAnswers)
    for name in ("step_settled", "request_answered"):
        verdict = result.verdicts[name]
        assert verdict.status == "violated" and verdict.item == "s1"
        assert [str(e) for e in verdict.cycle] == ["retry s1", "deliver s1"]
        # one fault, and the loop is fair only once s2 is done (its dispatch would stay enabled)
        prefix = [str(e) for e in verdict.prefix]
        assert prefix[:3] == ["plan", "dispatch s1", "deliver s1"] and "lose_ack s1" in prefix
        assert {"dispatch s2", "deliver s2", "ack s2"} <= set(prefix) and len(prefix) == 7


def test_planted_a_step_never_sent_is_found_without_a_fault(tiny):
    verdict = live(tiny, "step", NeverSendsTheLastStep, max_faults=0).verdicts["step_settled"]
    assert verdict.status == "violated" and verdict.item == "s2" and verdict.cycle == ()
    assert [str(e) for e in verdict.prefix] == ["plan", "dispatch s1", "deliver s1", "ack s1"]


def test_the_answer_is_the_same_every_time(tiny):
    first = live(tiny, "step-dedupe", SwallowsDedupedAnswers)
    second = live(tiny, "step-dedupe", SwallowsDedupedAnswers)
    assert first.to_json() == second.to_json()
    assert {n: v.to_json() for n, v in first.verdicts.items()} == {n: v.to_json() for n, v in second.verdicts.items()}


def test_planted_a_lasso_exported_replays_its_cycle_and_is_no_lasso_of_the_fixed_code(tiny, tmp_path):
    from sim.report.lasso import export_lasso
    from sim.search.lasso_check import replay_lasso

    planted = WorkspaceFamily(machine=SwallowsDedupedAnswers)
    protocol = planted.parse_protocol("step-dedupe")
    verdict = check_liveness(planted, tiny, protocol, 2).verdicts["request_answered"]
    path = export_lasso(planted, tiny, protocol, verdict, tmp_path, "test")
    scenario = FAMILIES.load_scenario(path)
    assert [str(e) for e in scenario.events][-4:] == ["retry s1", "deliver s1", "retry s1", "deliver s1"]
    held, line = replay_lasso(planted, scenario, protocol, tiny)
    assert held and line.startswith("lasso (request_answered, s1 pending): after its 7 event(s), the cycle of 2")
    assert line.endswith("played twice leaves the state as it found it: it repeats forever")
    # the same file against the shipped executor, which answers a deduplicated retry: the loop is gone
    held, line = replay_lasso(FAMILIES.family_for(scenario), scenario, protocol, tiny)
    assert not held and "NOT a lasso of this code" in line


class RejectsEveryReplanAndNeverGivesUp(WorkspaceMachine):
    """Planted: the fence rejects every re-planned step, and the client re-plans without counting."""

    def serve(self, state, message):
        return super().serve(state, message._replace(stamped_base_rev=-1) if message.round else message)

    def rebase(self, state, step_id, verdict, records):
        return super().rebase(state._replace(replans=0), step_id, verdict, records)


def test_planted_a_fence_that_rejects_every_replan_loops_only_when_the_client_never_gives_up(tiny):
    bounded = live(tiny, "step,on_reject=replan", max_faults=1)
    assert {v.status for v in bounded.verdicts.values()} == {"holds"}  # the shipped client stops re-planning
    verdict = live(tiny, "step,on_reject=replan", RejectsEveryReplanAndNeverGivesUp,
                   max_faults=1).verdicts["step_settled"]
    assert verdict.status == "violated" and verdict.item == "s1"
    assert [str(e) for e in verdict.cycle] == ["deliver s1", "ack s1"]
    assert "human_edit app.py" in map(str, verdict.prefix)  # the stale plan that starts the re-plans
