"""The state value's labels: every Label equals every other and hashes alike, whatever it carries."""

import pickle

from sim.families.workspace.state import LABEL_HASH, Label


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
