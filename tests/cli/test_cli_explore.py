"""``fencesim explore``: the exhaustive search as its own command, the same answer as ``fuzz --exhaustive``."""

from __future__ import annotations

import json

import pytest


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_explore_gives_the_same_document_as_fuzz_exhaustive_and_exit_1_on_a_violation(cli):
    explored = cli("explore", "-w", "tiny", "-p", "none", "-p", "plan", "--depth", "5", "--json")
    fuzzed = cli("fuzz", "-w", "tiny", "-p", "none", "-p", "plan", "--exhaustive", "--max-events", "5", "--json")
    assert explored.returncode == fuzzed.returncode == 1, explored.stderr
    assert explored.stdout == fuzzed.stdout
    document = json.loads(explored.stdout)
    by_protocol = {row["protocol"]: row for row in document["protocols"]}
    assert by_protocol["none"]["violations"]["lost_update"]["shortest_events"] == 4
    assert not by_protocol["plan"]["violations"] and by_protocol["plan"]["complete"]


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_explore_exits_0_when_every_invariant_is_proved(cli):
    done = cli("explore", "-w", "tiny", "-p", "plan", "--depth", "4")
    assert done.returncode == 0, done.stderr
    assert "proved absent within 4 events: lost_update, duplicate_effect, stale_accept, journal_loss" in done.stdout


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_a_depth_out_of_range_is_one_line_and_exit_4(cli):
    for bad in ("0", "10001", "deep"):
        done = cli("explore", "--depth", bad)
        assert done.returncode == 4 and "--depth must be" in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_the_state_limit_stops_a_search_that_proves_nothing_and_a_higher_one_completes_it(cli):
    """--state-limit bounds the distinct states: reached, the search says so and proves nothing; raised,
    the same search completes and proves what the default search of that depth proves."""
    low = cli("explore", "-w", "tiny", "-p", "plan", "--depth", "6", "--state-limit", "300", "--json")
    high = cli("explore", "-w", "tiny", "-p", "plan", "--depth", "6", "--state-limit", "5000", "--json")
    default = cli("explore", "-w", "tiny", "-p", "plan", "--depth", "6", "--json")
    stopped, done = json.loads(low.stdout)["protocols"][0], json.loads(high.stdout)["protocols"][0]
    assert not stopped["complete"] and stopped["end"] == "state_limit" and stopped["proved_absent"] == []
    assert "--state-limit raises it" in low.stderr
    assert done["complete"] and done["proved_absent"]
    assert high.stdout == default.stdout
    for bad in ("0", "1000000001", "many"):
        refused = cli("explore", "--state-limit", bad)
        assert refused.returncode == 4 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_progress_goes_to_stderr_as_lines_and_json_stays_alone_on_stdout(cli):
    """Off a terminal (or with --json) a long search says where it is on stderr: each depth, by name, with its
    states; stdout holds the JSON document and nothing else."""
    done = cli("explore", "-w", "effects-pr", "-p", "keyed", "--depth", "2", "--json")
    assert done.returncode in (0, 1), done.stderr
    json.loads(done.stdout)
    lines = [line for line in done.stderr.splitlines() if line.startswith("exhaustive keyed: ")]
    assert lines and "states" in lines[0] and "elapsed" in lines[0], done.stderr
    assert "all 2 done" in lines[-1]
    certified = cli("certify", "-w", "effects-pr", "--engine", "temporal", "--max-events", "1", "--json")
    json.loads(certified.stdout)
    assert any(line.startswith("certify temporal: ") for line in certified.stderr.splitlines()), certified.stderr


def test_a_search_that_reached_its_bound_says_so_not_that_the_space_is_done(cli):
    """"complete" alone read as "the state space is done": a search cut by its bound says it is the bound."""
    bounded = cli("explore", "-w", "tiny", "-p", "step", "--depth", "3")
    assert "(complete within 3 events: the bound, not the end of the state space)" in bounded.stdout, bounded.stdout


def test_progress_waits_for_a_measurable_search_and_never_names_a_depth_past_the_last(monkeypatch):
    """A search of no measurable length prints no line per depth; past QUIET_S a bounded search reports its
    depth of the bound, and one until exhausted the depths it searched (it has no bound to count against)."""
    from sim.cli import explore as command

    clock = [100.0]
    monkeypatch.setattr(command.time, "monotonic", lambda: clock[0])
    calls: list[tuple] = []
    progress = command._progress(lambda *call: calls.append(call), "plan")
    progress(3, 12, 35)
    assert calls == []
    clock[0] += command.QUIET_S
    progress(4, 12, 128)
    progress(7, 0, 1_644)
    assert calls == [("exhaustive plan", 4, 12, "128 states"),
                     ("exhaustive plan", 0, 1, "7 depths searched, 1,644 states")]
