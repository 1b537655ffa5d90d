"""A family reads its protocol as a typed dataclass: a misspelt knob name or value fails mypy, not a run."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

MISSPELT = '''
from sim.core.knobs import Protocol
from sim.families.workspace.knobs import WorkspaceKnobs


def reads(protocol: Protocol) -> bool:
    knobs = WorkspaceKnobs.of(protocol)
    return knobs.fenc == "step" or knobs.dedupe == "jornal"
'''


@pytest.mark.slow  # over 3 s: mypy reads the package
def test_mypy_refuses_a_misspelt_knob_and_a_misspelt_value(tmp_path):
    """The project's own mypy settings report both mistakes, each on its line."""
    api = pytest.importorskip("mypy.api")
    path = tmp_path / "misspelt.py"
    path.write_text(MISSPELT, encoding="utf-8")
    out, _, status = api.run(["--config-file", str(ROOT / "pyproject.toml"), "--no-incremental",
                              "--follow-imports=silent", str(path)])
    assert status == 1
    assert '"WorkspaceKnobs" has no attribute "fenc"' in out
    assert "Non-overlapping equality check" in out and "'jornal'" in out
