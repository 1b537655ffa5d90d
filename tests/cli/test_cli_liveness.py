"""``fencesim explore --liveness``: the contract's JSON per protocol, the words, the exit codes, bad input."""

from __future__ import annotations

import json

import pytest


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_liveness_adds_each_propertys_status_per_protocol_and_exits_0_when_all_hold(cli):
    done = cli("explore", "-w", "tiny", "-p", "step", "--depth", "2", "--liveness", "--json")
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout)["protocols"][0]
    assert row["liveness"] == {
        "step_settled": {"status": "holds", "note": "every fair behaviour within 2 faults"},
        "request_answered": {"status": "holds", "note": "every fair behaviour within 2 faults"}}
    assert row["liveness_graph"]["max_faults"] == 2 and row["liveness_graph"]["complete"]


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_a_dropped_assumption_gives_a_lasso_and_exit_1(cli):
    done = cli("explore", "-w", "tiny", "-p", "step", "--depth", "2", "--liveness", "--unfair", "timeout", "--json")
    assert done.returncode == 1, done.stderr
    lasso = json.loads(done.stdout)["protocols"][0]["liveness"]["request_answered"]
    assert lasso["status"] == "violated"
    assert lasso["lasso"] == {"prefix": ["plan", "dispatch s1", "preempt before_write", "deliver s1"], "cycle": []}
    words = cli("explore", "-w", "tiny", "-p", "step", "--depth", "2", "--liveness", "--unfair", "timeout")
    assert "request_answered: violated (s1 stays pending): plan ; dispatch s1 ; preempt before_write ; deliver s1" \
        in words.stdout
    assert "fairness dropped: timeout" in words.stdout


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_bad_liveness_options_are_one_line_and_exit_4(cli):
    for args, message in ((["--liveness", "--unfair", "nobody"], "unknown fairness assumption nobody"),
                          (["--max-faults", "3"], "--max-faults, --unfair and --out go with --liveness"),
                          (["--liveness", "--max-faults", "-1"], "-1 is out of range: from 0 to 1,000")):
        done = cli("explore", "--depth", "1", *args)
        assert done.returncode == 4 and message in done.stderr, (args, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_out_writes_each_lasso_as_a_scenario_that_run_replays_and_a_corrupt_lasso_is_exit_4(cli, tmp_path):
    out = tmp_path / "lassos"
    done = cli("explore", "-w", "tiny", "-p", "step", "--depth", "1", "--liveness", "--unfair", "timeout",
               "--out", str(out), "--json")
    assert done.returncode == 1, done.stderr
    entry = json.loads(done.stdout)["protocols"][0]["liveness"]["request_answered"]
    scenario = out / "tiny_step_request_answered_lasso.toml"
    assert entry["file"] == str(scenario) and scenario.exists()
    assert (out / "tiny_step_request_answered_lasso.timeline.txt").exists()
    assert (out / "tiny_step_request_answered_lasso.svg").read_text().count("<svg") == 1
    # fencesim's own files are replaced by the same command run again
    rerun = cli("explore", "-w", "tiny", "-p", "step", "--depth", "1", "--liveness", "--unfair", "timeout",
                "--out", str(out))
    assert rerun.returncode == 1, rerun.stderr
    replayed = cli("run", str(scenario))
    assert replayed.returncode == 1, replayed.stderr  # the lasso still holds: a violation, as a counterexample's
    assert ("lasso (request_answered, s1 pending): after its 4 event(s) (with timeout not assumed fair; the replay "
            "above lets every actor act) nothing the system must do is enabled: it stays there forever") \
        in replayed.stdout
    assert "1 liveness lasso(s) that still hold" in replayed.stdout
    # a file of the user's is never replaced
    mine = out / "tiny_step_step_settled_lasso.toml"
    mine.write_text("mine\n", encoding="utf-8")
    again = cli("explore", "-w", "tiny", "-p", "step", "--depth", "1", "--liveness", "--unfair", "timeout",
                "--out", str(out))
    assert again.returncode == 4 and mine.read_text() == "mine\n", again.stderr
    for old, new, words in (("prefix = 4", "prefix = 9", "must give the prefix's and the cycle's event counts"),
                            ('property = "request_answered"', 'property = "nonsense"', "is not a liveness property"),
                            ("cycle = 0", "cycle = 0\nbogus = 1", "unknown key(s) bogus"),
                            ('"timeout",', '"nobody",', "unfair must list")):
        corrupt = tmp_path / "corrupt.toml"
        text = scenario.read_text()
        assert old in text, (old, text)
        corrupt.write_text(text.replace(old, new), encoding="utf-8")
        bad = cli("run", str(corrupt))
        assert bad.returncode == 4 and words in bad.stderr and "corrupt.toml" in bad.stderr, bad.stderr
        assert "run(s)" not in bad.stdout  # refused before any run


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_junit_has_one_case_per_invariant_and_per_liveness_property(cli, tmp_path):
    from xml.dom import minidom

    junit = tmp_path / "explore.xml"
    done = cli("explore", "-w", "tiny", "-p", "plan", "--depth", "3", "--liveness", "--unfair", "timeout",
               "--junit", str(junit))
    assert done.returncode == 1, done.stderr
    cases = {c.getAttribute("name"): c for c in minidom.parse(str(junit)).getElementsByTagName("testcase")}
    assert set(cases) == {"lost_update", "duplicate_effect", "stale_accept", "journal_loss",
                          "step_settled (liveness)", "request_answered (liveness)"}
    assert not cases["lost_update"].getElementsByTagName("failure")  # proved absent within 3 events
    failure = cases["request_answered (liveness)"].getElementsByTagName("failure")[0]
    assert failure.getAttribute("message") == "request_answered violated: s1 stays pending"
    # a file that is not fencesim's is never replaced
    mine = tmp_path / "mine.xml"
    mine.write_text("<mine/>\n", encoding="utf-8")
    refused = cli("explore", "-w", "tiny", "-p", "plan", "--depth", "1", "--junit", str(mine))
    assert refused.returncode == 4 and mine.read_text() == "<mine/>\n", refused.stderr


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_reductions_are_off_for_liveness_the_same_graph_and_answers_with_or_without_them(cli):
    """Sleep sets, persistent sets and symmetry drop transitions or merge named items; the liveness graph is
    the unreduced one whatever the safety search was asked to use (docs/liveness.md)."""
    args = ("explore", "-w", "tiny", "-p", "step-dedupe", "--depth", "3", "--liveness", "--unfair", "timeout",
            "--json")
    plain = json.loads(cli(*args, "--no-sleep").stdout)["protocols"][0]
    reduced = json.loads(cli(*args, "--symmetry", "--reduce").stdout)["protocols"][0]
    assert reduced["liveness"] == plain["liveness"] and reduced["liveness_graph"] == plain["liveness_graph"]
