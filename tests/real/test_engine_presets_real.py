"""The engine presets on the real side: a knob value no reference worker expresses (delivery=at_most_once) makes
every cell not applicable, with its reason, instead of being ignored by the workers; the DBOS preset is
applicable on DBOS as it is."""

from __future__ import annotations

import pytest

from sim.families.effects import FAMILY
from sim.real.runtimes.cells import CellFault, NotApplicable, check_applicable


def _knobs(protocol):
    return dict(FAMILY.parse_protocol(protocol).knobs)


@pytest.mark.parametrize("engine", ["step-functions-express-sync", "step-functions-standard"])
@pytest.mark.parametrize("runtime", ["dbos", "temporal"])
def test_at_most_once_is_not_applicable_on_the_reference_workers(engine, runtime):
    with pytest.raises(NotApplicable, match="delivery=at_most_once"):
        check_applicable(CellFault.parse("terminate open_pr after_commit"), _knobs(f"{engine},idempotency=key"),
                         runtime)


def test_the_dbos_preset_is_applicable_on_dbos_and_temporal_needs_its_pinned_version():
    check_applicable(CellFault.parse("terminate open_pr after_commit"), _knobs("dbos,idempotency=key"), "dbos")
    with pytest.raises(NotApplicable, match="pinned"):
        check_applicable(None, _knobs("temporal,idempotency=key"), "temporal")
    check_applicable(CellFault.parse("terminate open_pr after_commit"),
                     _knobs("temporal,idempotency=key,version_policy=pinned"), "temporal")


def test_restate_missing_is_one_line_saying_how_to_install(monkeypatch):
    """Where the server is absent, the Restate tests skip and conform refuses with this one line."""
    from sim.real.runtimes import restate_server

    monkeypatch.setenv(restate_server.SERVER_VARIABLE, "/no/such/restate-server")
    why = restate_server.restate_unavailable()
    assert why is not None and "make restate" in why and "\n" not in why
