"""The fused loop (``sim/search/fused.py``) finds what the search's per-successor loop finds: the same counts,
states per depth, shortest lengths and orders, whether it runs to the end, stops at the state limit, keeps sleep
sets or holds its fingerprints in a Python set."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sim.core.registry import Registry
from sim.registry import SHIPPED
from sim.search import exhaustive, visited
from sim.search.exhaustive import ExploreOptions, explore
from sim.search.expansion import Expansion
from sim.search.fused import expand_fused

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "public_model"))
import acp_family  # noqa: E402
import two_phase_family  # noqa: E402


def _acp(tmp_path: Path):
    path = tmp_path / "acp-3.toml"
    path.write_text(acp_family.workload_text(3), encoding="utf-8")
    return acp_family.FAMILY, Registry((*SHIPPED, acp_family.FAMILY)).load_workload(str(path))


def _two_phase(tmp_path: Path):
    path = tmp_path / "two-phase-4.toml"
    path.write_text(two_phase_family.workload_text(["r1", "r2", "r3", "r4"]), encoding="utf-8")
    return two_phase_family.FAMILY, Registry((*SHIPPED, two_phase_family.FAMILY)).load_workload(str(path))


def _both(monkeypatch, family, workload, protocol: str, **options) -> tuple[dict, dict]:
    """The search's result fused, then with every layer expanded through the per-successor loop."""
    run = lambda: explore(family, workload, family.parse_protocol(protocol),  # noqa: E731
                          ExploreOptions(**{"max_events": None, **options})).to_json()
    calls = []
    with monkeypatch.context() as patched:
        patched.setattr(exhaustive, "expand_fused", lambda *a: calls.append(1) or expand_fused(*a))
        fused = run()
    assert calls, "the fused loop was not taken"
    with monkeypatch.context() as patched:
        patched.setattr(Expansion, "fusable", property(lambda self: False))
        unfused = run()
    return fused, unfused


@pytest.mark.parametrize("model", ["acp", "two-phase"])
@pytest.mark.parametrize("options", [{}, {"max_states": 1_000}, {"max_events": 6}, {"sleep": False}],
                         ids=["exhausted", "state-limit", "bounded", "no-sleep"])
def test_the_fused_loop_finds_what_the_loop_per_successor_finds(monkeypatch, tmp_path, model, options):
    family, workload = _acp(tmp_path) if model == "acp" else _two_phase(tmp_path)
    fused, unfused = _both(monkeypatch, family, workload, "spec", **options)
    assert fused == unfused
    if "max_states" in options:
        assert fused["end"] == "state_limit" and fused["distinct_states"] == options["max_states"] + 1


def test_a_planted_bug_is_found_alike_with_its_shortest_orders(monkeypatch, tmp_path):
    family, workload = _acp(tmp_path)
    fused, unfused = _both(monkeypatch, family, workload, "decide=any_yes")
    assert fused["violations"] and fused == unfused


def test_fingerprints_in_a_python_set_and_exact_keys_find_the_same(monkeypatch, tmp_path):
    family, workload = _two_phase(tmp_path)
    compact = _both(monkeypatch, family, workload, "spec")[0]
    monkeypatch.setattr(visited, "TABLE", None)
    assert _both(monkeypatch, family, workload, "spec") == (compact, compact)
    exact = _both(monkeypatch, family, workload, "spec", exact=True)
    assert exact[0] == exact[1] and exact[0]["distinct_states"] == compact["distinct_states"]


def _workspace(name: str):
    from sim.registry import FAMILIES

    return FAMILIES.get("workspace"), FAMILIES.load_workload(name)


@pytest.mark.parametrize(("workload", "protocol", "options"), [
    ("tiny", "none", {"max_events": 7}),
    ("tiny", "step-dedupe,journal_write=after_write", {"max_events": 7}),
    ("tiny", "plan", {"max_events": 8, "max_states": 3_000}),
    ("tiny", "step", {"max_events": 6, "sleep": False}),
    ("tiny", "fence=none,dedupe=memory", {"max_events": 7, "findings": True}),
    ("three-files", "step-dedupe,checkpoint=per_step", {"max_events": 5}),
], ids=["violations", "journal-loss", "state-limit", "no-sleep", "findings", "checkpoints"])
def test_the_folded_loop_finds_what_the_loop_per_successor_finds(monkeypatch, workload, protocol, options):
    """The workspace family's checks are folds over the records of each step: the fused loop feeds them as
    ``_by_folds`` does, with the same violations, orders, sleep sets and counts."""
    family, loaded = _workspace(workload)
    fused, unfused = _both(monkeypatch, family, loaded, protocol, **options)
    assert fused == unfused
    if "max_states" in options:
        assert fused["end"] == "state_limit"
    if protocol in ("none", "fence=none,dedupe=memory"):
        assert fused["violations"], "a protocol known to break shows nothing: the comparison proves little"
