"""Results are pinned: the normalised ``--json`` output of a fixed set of commands of all three families
(replays, sweeps with their shrunk counterexamples and advice, exhaustive proofs, the cruel grid, exposure)
matches the digests recorded in ``tests/pinned/digests.json`` byte for byte.

A change meant to alter results re-records them with ``python tests/pinned/capture.py --write`` and says
why in its commit; ``--dump DIR`` writes the outputs whole to diff against an older checkout.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "pinned"))
import capture  # noqa: E402


@pytest.mark.slow
def test_every_pinned_result_is_unchanged():
    """Every command's normalised output has its recorded digest."""
    recorded = json.loads(capture.DIGESTS.read_text(encoding="utf-8"))
    results = capture.run_all()
    assert sorted(results) == sorted(recorded)
    changed = [key for key, value in results.items() if capture.digest(value) != recorded[key]]
    assert changed == [], f"results changed: {changed}"
