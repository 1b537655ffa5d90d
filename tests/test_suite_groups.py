"""The suite's own machinery: a test group stays in one test process.

Tests that share an expensive fixture (a review of about a minute) are marked with one ``xdist_group``, and
``make test`` runs the suite with ``--dist loadgroup`` so that the fixture is computed once.  pytest-xdist
does that by renaming each grouped test ``NAME@GROUP``; when it cannot (it did not under pytest 9), every group
is silently split and the suite pays again for each process that runs one of its tests.
"""

from __future__ import annotations

import pytest


@pytest.mark.xdist_group("suite-groups")
def test_a_grouped_test_is_scheduled_with_its_group(request):
    if not request.config.getoption("loadgroup", default=False):
        pytest.skip("runs under pytest-xdist with --dist loadgroup (make test)")
    assert request.node.nodeid.endswith("@suite-groups"), (
        f"{request.node.nodeid} does not carry its group: pytest-xdist cannot keep groups in one process here")
