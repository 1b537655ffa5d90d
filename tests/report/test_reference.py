"""The committed reference review regenerates identically, apart from the documented volatile fields."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "reports" / "reference"
VOLATILE_META = ("generated_at", "commit", "fencesim_version", "python", "platform", "seconds")


def _results(path: Path) -> dict:
    data = json.loads(path.read_text())
    for name in VOLATILE_META:
        data["meta"].pop(name, None)
    for design in data["designs"]:
        design.pop("seconds", None)
    return data


def _masked(text: str) -> str:
    text = re.sub(r"fencesim \S+ at commit (`|<code>)[^`<]*(`|</code>)", "fencesim VERSION at commit COMMIT", text)
    return re.sub(r'(?m)^commit = ".*"$', 'commit = "COMMIT"', text)


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


@pytest.mark.slow
@pytest.mark.xdist_group("reference-review")  # the tests reading the one review (conftest)
def test_reference_review_regenerates_identically(reference_review):
    """`fencesim review` on this code reproduces reports/reference/ (volatile fields aside)."""
    assert REFERENCE.is_dir(), "run `make reference` and commit reports/reference/"
    done, out = reference_review
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert _files(out) == _files(REFERENCE)
    assert _results(out / "results.json") == _results(REFERENCE / "results.json")
    for name in ["summary.md", "report.html", *(f for f in _files(REFERENCE) if f.startswith("counterexamples/"))]:
        if name == "report.html":
            continue  # embeds the figures' SVG bytes; its text is checked through summary.md
        assert _masked((out / name).read_text()) == _masked((REFERENCE / name).read_text()), name
