"""The notebook tour runs top to bottom against the installed package."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "explore.ipynb"


def test_notebook_code_cells_run(monkeypatch):
    """Every code cell of notebooks/explore.ipynb executes without error."""
    matplotlib.use("Agg")  # tests may choose a backend; library code never does
    monkeypatch.chdir(NOTEBOOK.parent)
    namespace: dict = {}
    for cell in json.loads(NOTEBOOK.read_text())["cells"]:
        if cell["cell_type"] == "code":
            source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            exec(compile(source, str(NOTEBOOK), "exec"), namespace)
    assert "summary" in namespace and len(namespace["summary"]) == 4
