"""A design's ``engine = "..."``: the review certifies each transition under the engine and shows the table
(docs/engines.md); a wrong engine is one line with file:line and exit 4."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.app.designs import load_design
from sim.core.errors import ScenarioError

REPO = Path(__file__).resolve().parents[2]
DESIGN = REPO / "scenarios" / "designs" / "notify-after-create.toml"


def test_the_shipped_design_names_its_engine():
    assert load_design(DESIGN).engine == "temporal,idempotency=key"


@pytest.mark.parametrize(("text", "needle"), [
    ('engine = "temporl"', "unknown engine 'temporl'"),
    ('engine = "temporal,idempotency=maybe"', "idempotency"),
    ("engine = 3", "engine must be a string"),
])
def test_a_wrong_engine_is_refused_with_its_line(tmp_path, text, needle):
    path = tmp_path / "d.toml"
    path.write_text(f'format = 1\nname = "d"\nfamily = "effects"\nprotocols = ["keyed"]\n{text}\n'
                    'workload = "notify-after-create"\n')
    with pytest.raises(ScenarioError) as raised:
        load_design(path)
    assert needle in str(raised.value) and ":5" in str(raised.value)


def test_an_engine_on_a_workspace_design_is_refused(tmp_path):
    path = tmp_path / "d.toml"
    path.write_text('format = 1\nname = "d"\nfamily = "workspace"\nengine = "temporal"\nworkload = "tiny"\n')
    with pytest.raises(ScenarioError, match="engine applies to effects designs"):
        load_design(path)


def test_the_review_shows_the_engine_table(cli, tmp_path):
    out = tmp_path / "report"
    done = cli("review", "-d", DESIGN, "--out", out, "--seeds", "20", "--workers", "1", timeout=600)
    assert done.returncode in (0, 1), done.stderr
    summary = (out / "summary.md").read_text()
    assert "### Engine: temporal" in summary
    section = summary.split("### Engine: temporal", 1)[1].split("\n#", 1)[0]
    rows = {line.split("|")[1].strip(): line for line in section.splitlines()
            if line.startswith("| create_account") or line.startswith("| notify_user")}
    assert "exactly once" in rows["create_account"]
    assert "repeats" in rows["notify_user"] and "must change" in rows["notify_user"]
    assert 'id="certify-notify-after-create"' in (out / "report.html").read_text()
    results = json.loads((out / "results.json").read_text())
    certified = results["designs"][0]["certify"]
    assert certified["engine"] == "temporal" and certified["knobs_after_engine"] == "idempotency=key"
