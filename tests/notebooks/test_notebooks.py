"""The three notebooks (jupytext percent files) execute headless, top to bottom, in a real kernel."""

from __future__ import annotations

from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("0*.py"))


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path, monkeypatch):
    """The notebook runs with a small budget and every code cell produces its output without an error."""
    jupytext = pytest.importorskip("jupytext")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("FENCESIM_NOTEBOOK_SEEDS", "60")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    notebook = jupytext.read(path)
    client = nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert code and all(not any(o.get("output_type") == "error" for o in c.get("outputs", [])) for c in code)
    shown = [o for c in code for o in c.get("outputs", []) if o.get("output_type") in ("execute_result", "display_data")]
    assert shown, "a notebook shows DataFrames and figures"
