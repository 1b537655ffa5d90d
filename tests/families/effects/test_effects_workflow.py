"""Workflows (workflow.py): the seed's saga, the worked example's generic workflow, version 2."""

from __future__ import annotations

import pytest

from sim.core.errors import ScenarioError
from sim.families.effects.workflow import generic, saga, version_2
from sim.families.effects.workflow_file import parse_workflow


def test_saga_has_four_transitions_and_no_inverse_for_the_release():
    """The saga is branch, PR, preview (compensable keyed creations) and the irreversible release."""
    workflow = saga()
    assert workflow.names() == ["create_branch", "open_pr", "create_preview", "publish_release"]
    assert [t.effect_class for t in workflow.transitions] == ["keyed_creation"] * 3 + ["irreversible"]
    assert workflow.get("publish_release").compensation is None and workflow.get("nope") is None
    assert saga(["open_pr"]).names() == ["open_pr"]


def test_generic_workflow_has_n_keyed_transitions():
    """generic:N is N keyed creations t1..tN with compensations; fewer than one is refused."""
    workflow = generic(3)
    assert workflow.names() == ["t1", "t2", "t3"] and workflow.name == "generic:3"
    with pytest.raises(ScenarioError):
        generic(0)


def test_version_two_renames_the_second_step_and_adds_a_check():
    """Version 2 renames open_pr to open_pull_request (same logical step) and checks before the release."""
    upgraded = version_2(saga())
    assert upgraded.version == 2 and upgraded.renamed == (("open_pr", "open_pull_request"),)
    assert upgraded.names() == ["create_branch", "open_pull_request", "create_preview", "verify_publish_release",
                                "publish_release"]
    assert upgraded.get("open_pull_request").logical == "open_pr"


@pytest.mark.parametrize("spec, fragment", [("generic:x", "generic:N"), (["open_pr", "open_pr"], "twice"),
                                            (["nope"], "unknown transition"), (3, "workflow must be")])
def test_parse_workflow_refuses_what_it_cannot_read(spec, fragment):
    """A workflow value must be 'saga', 'generic:N' or a list of distinct saga names."""
    with pytest.raises(ScenarioError, match=fragment):
        parse_workflow(spec, "f.toml:2")
