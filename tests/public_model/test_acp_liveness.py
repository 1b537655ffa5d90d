"""Liveness held against TLC on a public spec nobody here wrote: ACP-SB (tlaplus/Examples,
``specifications/acp/ACP_SB.tla``), its fairness and three of its temporal properties as a family
(``acp_liveness.py``).  What TLC answers is what the spec and its configuration record: AC3_2 (liveness,
"checked for 4 participants") holds; AC5 ("the termination property that this SB algorithm doesn't have") and
DecisionReachedNoFault (listed with the "invalid" properties, "to check that TLC does its job") are violated
-- "detected (with meaningful counterexamples) with 2 participants"."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sim.core.liveness import LivenessModel
from sim.core.registry import Registry
from sim.registry import SHIPPED
from sim.search.liveness import check_liveness

sys.path.insert(0, str(Path(__file__).resolve().parent))
from acp_family import FAMILY, workload_text  # noqa: E402
from acp_liveness import LIVE_FAMILY, MODEL, LiveAcpFamily  # noqa: E402

#: TLC's distinct states for ACP_SB_TLC.cfg (participants = {p0, p1, p2}), tlaplus/Examples' manifest.json.
TLC_DISTINCT_STATES = 54_944


def acp(tmp_path: Path, n: int):
    path = tmp_path / f"acp-{n}.toml"
    path.write_text(workload_text(n), encoding="utf-8")
    return Registry((*SHIPPED, FAMILY)).load_workload(str(path))


def statuses(result):
    return {name: v.status for name, v in result.verdicts.items()}


def test_two_participants_give_tlcs_verdicts(tmp_path):
    result = check_liveness(LIVE_FAMILY, acp(tmp_path, 2), LIVE_FAMILY.parse_protocol("spec"), 0)
    assert result.exhausted  # every reachable state: a verdict at any length
    assert statuses(result) == {"AC3_2": "holds", "AC5": "violated", "DecisionReachedNoFault": "violated"}
    ac5 = result.verdicts["AC5"]
    # the coordinator dies during its broadcast: a participant it did not reach waits forever, undecided
    assert str(ac5.prefix[0]).startswith("Init ") and "coordDie" in map(str, ac5.prefix)
    assert ac5.cycle == ()


def test_planted_without_the_coordinators_fairness_ac3_2_fails(tmp_path):
    result = check_liveness(LIVE_FAMILY, acp(tmp_path, 2), LIVE_FAMILY.parse_protocol("spec"), 0,
                            unfair=("coordinator",))
    verdict = result.verdicts["AC3_2"]
    assert verdict.status == "violated"
    assert len(verdict.prefix) == 1 and str(verdict.prefix[0]).startswith("Init ")  # it never even asks


class EventuallyOnly(LiveAcpFamily):
    """AC3_2 and AC5 alone: no history variable, so the graph is the spec's own state graph."""

    def liveness(self, workload, protocol):
        return LivenessModel(MODEL.properties[:2], role=MODEL.role, group=MODEL.group,
                             assumption=MODEL.assumption, assumptions=MODEL.assumptions)


@pytest.mark.slow  # about 3 s: outside the fast lane
def test_three_participants_search_tlcs_state_graph_and_agree(tmp_path):
    family = EventuallyOnly()
    result = check_liveness(family, acp(tmp_path, 3), family.parse_protocol("spec"), 0)
    assert result.states == TLC_DISTINCT_STATES
    assert statuses(result) == {"AC3_2": "holds", "AC5": "violated"}
