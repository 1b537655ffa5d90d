"""The notebook API of the explorer: ``sim.serve(...)`` starts it in the background on 127.0.0.1 and stops it;
``sim.state_html(...)`` renders one state as the explorer's HTML tables."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

import sim  # noqa: E402
import sim.webapp  # noqa: E402,F401  (the package beside the function: sim.serve stays the function)

REPO = Path(__file__).resolve().parents[2]
LOST_UPDATE = REPO / "scenarios" / "regressions" / "seed_fuzz_none_lost_update.toml"


def test_sim_serve_starts_and_stops_the_explorer(tmp_path):
    assert callable(sim.serve)
    app = sim.serve(scenarios=[LOST_UPDATE], out=tmp_path / "out")
    try:
        assert app.url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(app.url + "view?s=seed_fuzz_none_lost_update&e=plan", timeout=30) as page:
            assert page.status == 200 and b"dispatch s1" in page.read()
        assert app.url in app._repr_html_()
    finally:
        app.stop()
    assert not app.thread.is_alive()


def test_state_html_renders_one_state_as_tables():
    before = sim.state_html(LOST_UPDATE, "none", events=["plan"])
    after = sim.state_html(LOST_UPDATE, "none")
    assert 'id="state-files"' in before and "<td>v0</td>" in before and "<td>planned</td>" in before
    assert "<td>applied</td>" in after and after._repr_html_() == str(after)
    effects = sim.state_html(REPO / "scenarios" / "regressions" / "effects_saga_keyed_lost_success.toml")
    assert 'id="state-intents-and-receipts"' in effects and "publish_<wbr>release" in effects


def test_bad_input_is_an_input_error():
    with pytest.raises(sim.InputError):
        sim.serve(workload="tiny", protocols=["fence=sideways"])
    with pytest.raises(sim.InputError):
        sim.state_html(LOST_UPDATE, "none", events=["fly away"])
