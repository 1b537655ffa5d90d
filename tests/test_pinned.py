"""Results are pinned: the normalised ``--json`` output of a fixed set of commands of all three families
(replays, sweeps with their shrunk counterexamples and advice, exhaustive proofs, the cruel grid, exposure),
recorded in ``tests/pinned/outputs.json.gz`` before the engine moved, is unchanged: every recorded value is
still there, byte for byte.  A newer feature may add fields beside them (a coverage count, a new measure);
it may not change or drop one.

A change meant to alter results re-records them with ``python tests/pinned/capture.py --write`` and says
why in its commit; ``--dump DIR`` writes the outputs whole to diff against an older checkout.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "pinned"))
import capture  # noqa: E402

#: The pinned commands, by name.
PINNED = capture.names()


def test_every_recorded_output_has_a_command():
    """The recorded outputs and the commands are the same set: none recorded is left unchecked."""
    assert PINNED == sorted(capture.recorded())


@pytest.mark.slow
@pytest.mark.xdist_group("pinned")  # one after another, as recorded: their sweeps have a shrink clock each
@pytest.mark.parametrize("key", PINNED)
def test_every_pinned_result_is_unchanged(key):
    """Each command's normalised output holds every recorded value (one test per command, so a change names
    the commands it changed)."""
    recorded = capture.recorded()[key]
    results = capture.run_all({key})
    assert sorted(results) == [key]
    assert capture.changed(recorded, results[key]) is None, f"recorded result {key} changed"


def test_a_changed_value_is_caught_and_an_added_field_is_not():
    """The comparison refuses a changed or missing value and a shorter list, and allows a new key."""
    old = {"runs": 3, "by": {"a": [1, 2]}, "label": "x"}
    assert capture.changed(old, {"runs": 3, "by": {"a": [1, 2], "new": 1}, "label": "x", "extra": []}) is None
    assert capture.changed(old, {"runs": 4, "by": {"a": [1, 2]}, "label": "x"})
    assert capture.changed(old, {"runs": 3, "by": {"a": [1]}, "label": "x"})
    assert capture.changed(old, {"runs": 3, "by": {"a": [1, 2]}})
    assert capture.changed({"n": 1}, {"n": 1.0}) and capture.changed({"n": True}, {"n": 1})
