"""results.json as typed values (sim.report.results): the reference review reads back into the same document,
key for key and in order; a document that does not fit is one line saying where (exit 4), never a KeyError."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import sim
from sim.core.errors import InputError
from sim.report.results import DesignRow, ReviewDocument, read_results

REFERENCE = Path(__file__).resolve().parents[2] / "reports" / "reference"


@pytest.fixture(scope="module")
def written() -> dict:
    return json.loads((REFERENCE / "results.json").read_text(encoding="utf-8"))


def test_the_reference_review_reads_back_into_the_same_document(written):
    document = read_results(REFERENCE)
    assert json.dumps(document.to_json(), indent=2, ensure_ascii=False) == json.dumps(written, indent=2,
                                                                                       ensure_ascii=False)
    design = document.designs[0]
    assert isinstance(design, DesignRow) and design.name == written["designs"][0]["name"]
    row, column = design.matrix.rows[0], design.matrix.columns[0]
    assert design.matrix.cells[row, column].text == written["designs"][0]["matrix"]["cells"][f"{row}\t{column}"]["text"]
    assert [p.protocol for p in design.protocols] == [p["protocol"] for p in written["designs"][0]["protocols"]]


@pytest.mark.parametrize("damage, words", [
    (lambda d: d["designs"][0].update(counterexamples="x"), "designs[0].counterexamples: must be a list"),
    (lambda d: d["designs"][0].pop("counterexamples"), "designs[0]: missing key 'counterexamples'"),
    (lambda d: d["designs"][1]["protocols"][0].update(runs="10"), "designs[1].protocols[0].runs: must be an integer"),
    (lambda d: d["designs"][0]["matrix"]["cells"].update(nokey={}), "is not a protocol and a column"),
    (lambda d: d["designs"][0]["counterexamples"][0]["advice"].update(fixes="yes"),
     "designs[0].counterexamples[0].advice.fixes: must be true/false, not a string"),
    (lambda d: d.update(surprise=1), "unknown key 'surprise'"),
])
def test_a_document_that_does_not_fit_is_one_line_saying_where(tmp_path, written, damage, words):
    document = json.loads(json.dumps(written))
    damage(document)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(InputError) as raised:
        read_results(path)
    assert words in str(raised.value) and str(path) in str(raised.value)
    with pytest.raises(InputError):
        sim.triage_frame(path)


def test_what_is_not_json_is_refused(tmp_path):
    path = tmp_path / "results.json"
    path.write_text("{", encoding="utf-8")
    with pytest.raises(InputError, match="not a review's results.json"):
        read_results(tmp_path)


def test_the_notebook_reads_a_results_json_as_the_review_returns_it(written):
    """sim.triage_frame takes a review, a results.json document or its path: the same rows."""
    from_path = sim.triage_frame(REFERENCE)
    from_document = sim.triage_frame(written)
    assert from_path.equals(from_document) and list(from_path["design"].unique()) == [
        d["name"] for d in written["designs"] if d["triage"]]
    assert ReviewDocument.from_json(written).designs[1].triage is not None


def test_serve_offers_the_protocols_a_review_compared(tmp_path, written):
    """``fencesim serve --review`` reads the review's protocols from its results.json (none from one it cannot
    read: the counterexamples' own protocols are still offered)."""
    from sim.app.serving import _review_protocols

    offered = _review_protocols(REFERENCE / "results.json")
    assert offered == {d["family"]: [p["protocol"] for p in d["protocols"]] for d in written["designs"]}
    (tmp_path / "results.json").write_text('{"designs": "none"}', encoding="utf-8")
    assert _review_protocols(tmp_path / "results.json") == {}
