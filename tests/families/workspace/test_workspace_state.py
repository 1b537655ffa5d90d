"""The state value's labels and steps: every Label equals every other and hashes alike, whatever it carries;
a step is told apart by its claims only."""

import pickle

from sim.families.workspace.state import LABEL_HASH, Label, Step


def test_labels_equal_each_other_and_nothing_else():
    first, second = Label(1), Label("model-B")
    assert first == second and not first != second
    assert first.__eq__(second) is True
    assert (first == 1) is False and first != 1 and (1 == first) is False
    assert (first, 2) == (second, 2) and (first, 2) != (None, 2)


def test_labels_hash_alike_and_survive_pickling():
    assert hash(Label(1)) == hash(Label((0, 1))) == LABEL_HASH
    assert {Label(1): "kept"}[Label(2)] == "kept"
    assert pickle.loads(pickle.dumps(Label("x"))).value == "x"


def _step(**changes):
    fields = dict(step_id="s1", path="app.py", patch=(("body", "v1"),), claimed_base_rev=0, claimed_pre_hash="ab12",
                  truth=(("body", "v0"),), replanned=None, truth_hash=Label("h0"), model=Label("model-A"),
                  shown=Label(((("body",), ()))))
    fields.update(changes)
    return Step(**fields)


def test_steps_differ_by_their_claims_never_by_their_labels():
    """A step compares and hashes as the text of what tells it apart; its Labels never tell two apart."""
    one, relabelled = _step(), _step(model=Label("model-B"), truth_hash=Label("h9"))
    assert one == relabelled and hash(one) == hash(relabelled) and relabelled.model.value == "model-B"
    for change in (dict(step_id="s2"), dict(path="b.py"), dict(patch=(("body", "v2"),)), dict(claimed_base_rev=1),
                   dict(claimed_pre_hash="cd34"), dict(truth=(("body", "x"),)), dict(replanned="replan")):
        assert _step(**change) != one, change
    assert one._replace(claimed_base_rev=1) == _step(claimed_base_rev=1)
    assert one._replace(model=Label("m")).model.value == "m" and one.model.value == "model-A"


def test_steps_survive_pickling_with_their_fields_and_hash_in_the_reading_process():
    one = _step()
    back = pickle.loads(pickle.dumps(one))
    assert back == one and hash(back) == hash(one) and type(back) is Step
    assert (back.step_id, back.patch, back.truth_hash.value, back.shown.value) == \
        ("s1", (("body", "v1"),), "h0", ((("body",), ())))
    assert repr(back).startswith("Step(step_id='s1', path='app.py'")
