"""Records (sim.core.records): a frozen dataclass written as a JSON object in its fields' order and read back,
every value checked by its declared type; what does not fit is one InputError that says where."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from sim.core.errors import InputError
from sim.core.records import Record, json_field, json_objects, json_text, optional
from sim.core.values import JsonObject, JsonValue


@dataclass(frozen=True, slots=True, kw_only=True)
class Share(Record):
    value: float
    low: float
    high: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Step(Record):
    knob: str
    before: str = json_field("from")
    share: Share | None
    events: tuple[str, ...] = ()
    counts: dict[str, int] = json_field("counts", default_factory=dict)
    pair: tuple[int, dict[str, int]] | None = optional()
    note: str | None = optional()
    detail: str | None = optional(with_="note")
    extra: JsonObject = json_field("extra", default_factory=dict)
    anything: JsonValue = None


def _step(**changes) -> Step:
    fields = dict(knob="fence", before="none", share=Share(value=0, low=0.0, high=0.5), events=("a", "b"),
                  counts={"x": 1}, extra={"open": [1, {"two": None}]})
    return Step(**{**fields, **changes})


def test_a_record_is_written_in_declared_order_and_read_back_equal():
    step = _step(note="n", detail="d", pair=(3, {"p": 1}))
    document = step.to_json()
    assert list(document) == ["knob", "from", "share", "events", "counts", "pair", "note", "detail", "extra",
                              "anything"]
    assert Step.from_json(json.loads(json.dumps(document))) == step
    assert json.dumps(Step.from_json(document).to_json()) == json.dumps(document)


def test_optional_fields_are_left_out_while_none_and_read_as_none():
    document = _step(detail="kept only with a note").to_json()
    assert "note" not in document and "detail" not in document and "pair" not in document
    assert Step.from_json(document).note is None


def test_an_integer_read_as_a_number_stays_an_integer():
    assert json.dumps(Step.from_json(_step().to_json()).to_json()["share"]) == '{"value": 0, "low": 0.0, "high": 0.5}'


@pytest.mark.parametrize("change, words", [
    (lambda d: d.update(knob=3), "knob: must be a string, not an integer"),
    (lambda d: d["share"].update(low="x"), "share.low: must be a number, not a string"),
    (lambda d: d.update(events=["a", 2]), "events[1]: must be a string, not an integer"),
    (lambda d: d.update(counts={"x": True}), "counts.x: must be an integer, not true/false"),
    (lambda d: d.pop("knob"), "designs[0]: missing key 'knob'"),
    (lambda d: d.update(surprise=1), "unknown key 'surprise'"),
    (lambda d: d.update(pair=[1]), "pair: must be a list of 2"),
    (lambda d: d.update(share=[]), "share: must be an object, not a list"),
    (lambda d: d.update(anything={"x": {1, 2}}), "anything: set is not a JSON value"),
])
def test_what_does_not_fit_is_one_input_error_saying_where(change, words):
    document = _step().to_json()
    change(document)
    with pytest.raises(InputError) as raised:
        Step.from_json(document, "designs[0]")
    assert words in str(raised.value)


def test_open_documents_are_narrowed_by_the_helpers():
    document: JsonValue = [{"title": "t"}, "x", 3]
    assert json_objects(document) == [{"title": "t"}]
    assert json_text(json_objects(document)[0].get("title")) == "t"
    assert json_text(None, "none") == "none"
