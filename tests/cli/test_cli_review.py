"""fencesim review: a user's design, budgets, and a report folder that never loses the previous one."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

DESIGN = "scenarios/designs/three-files.toml"
SHARED = pytest.mark.xdist_group("reference-review")  # the tests reading the one review (conftest)
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def reviewed(reference_review):
    """The reference review (the seeds' designs, ``make reference``), run once in the suite."""
    return reference_review


@pytest.mark.slow  # over 3 s: outside the fast lane
@SHARED
def test_design_review_names_its_minimal_counterexample(reviewed):
    """A weakened protocol's minimal order is named in summary.md and results.json, with its replay command."""
    done, out = reviewed
    assert done.returncode == 1, done.stderr[-2000:]
    results = json.loads((out / "results.json").read_text())
    (design,) = [d for d in results["designs"] if d["name"] == "seed-fuzz"]
    examples = {(e["protocol"], e["invariant"]): e for e in design["counterexamples"]}
    journal = examples[("step-dedupe,journal_write=after_write", "journal_loss")]
    summary = (out / "summary.md").read_text()
    assert f"`{journal['finding']}` under `step-dedupe,journal_write=after_write`" in summary
    assert " ; ".join(journal["events"]) in summary and journal["replay"] in summary
    assert "journal_write" in journal["advice"]["changes"]


@pytest.mark.slow  # reads a review of about two minutes: outside the fast lane
@SHARED
def test_report_folder_has_every_listed_file(reviewed):
    """summary.md, report.html, results.json, figures (PNG and SVG) and counterexamples are all written."""
    _, out = reviewed
    for name in ("summary.md", "report.html", "results.json"):
        assert (out / name).stat().st_size > 0
    figures = {p.name for p in (out / "figures").iterdir()}
    assert any(n.startswith("verdict_matrix_") and n.endswith(".svg") for n in figures)
    assert {n[:-4] for n in figures if n.endswith(".png")} == {n[:-4] for n in figures if n.endswith(".svg")}
    assert any(p.suffix == ".toml" for p in (out / "counterexamples").iterdir())
    html = (out / "report.html").read_text()
    assert "<svg" in html and not re.search(r"""(src|href)=["']https?:""", html)


@pytest.mark.slow  # over 3 s: outside the fast lane
@SHARED
def test_exported_counterexample_replays_from_the_report_folder(reviewed):
    """The replay command printed in the report works from the report folder and exits 1."""
    _, out = reviewed
    results = json.loads((out / "results.json").read_text())
    example = results["designs"][0]["counterexamples"][0]
    args = example["replay"].split()[1:]
    done = subprocess.run([sys.executable, "-c", "from sim.cli import main; main()", *args], cwd=out,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_budget_stops_the_review_and_says_where(cli, tmp_path):
    """A tiny --budget still writes the report, naming the phases it stopped."""
    out = tmp_path / "budget"
    done = cli("review", "--design", DESIGN, "--out", out, "--budget", "0.5", "--seeds", "20000", "--json",
               timeout=600)
    assert done.returncode in (0, 1), done.stderr
    results = json.loads((out / "results.json").read_text())
    assert results["budget_stopped"] and "sweep" in results["budget_stopped"]
    assert results["designs"][0]["seeds_done"] < 20000
    assert "budget" in (out / "summary.md").read_text()
    sweep = next(cut for cut in results["designs"][0]["budget_cuts"] if cut["section"] == "sweep")
    assert sweep["command"] == f"fencesim review --design {DESIGN} --seeds 20000"
    assert f"`{sweep['command']}` completes it" in (out / "summary.md").read_text()
    assert "the budget cut the sweep" in done.stderr


PREVIOUS_RESULTS = '{"format": 1, "designs": [], "meta": {"fencesim_version": "0"}}'


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_a_failed_review_keeps_the_previous_report(cli, tmp_path):
    """A design that cannot load fails with exit 4 and leaves the earlier folder untouched."""
    out = tmp_path / "keep"
    out.mkdir()
    (out / "summary.md").write_text("previous")
    (out / "results.json").write_text(PREVIOUS_RESULTS)
    bad = tmp_path / "bad.toml"
    bad.write_text('format = 1\nworkload = "seed-fuzz"\nprotocol = ["none"]\n')
    done = cli("review", "--design", bad, "--out", out)
    assert done.returncode == 4
    assert "bad.toml:3" in done.stderr and "did you mean 'protocols'" in done.stderr
    assert (out / "summary.md").read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".keep")] == []


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_out_naming_a_file_is_refused_before_any_work(cli, tmp_path):
    """--out naming a file is one line and exit 4."""
    target = tmp_path / "file"
    target.write_text("x")
    done = cli("review", "--out", target)
    assert done.returncode == 4 and "is a file" in done.stderr


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_out_holding_other_files_is_refused_and_kept(cli, tmp_path):
    """A review replaces its whole folder, so --out holding anything but a report (here the design file
    itself and a source file) is refused with exit 4 before any work, and nothing in it is touched."""
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "code.py").write_text("print('mine')\n")
    (folder / "design.toml").write_text('workload = "tiny"\nprotocols = ["none"]\nseeds = 20\n')
    done = cli("review", "--design", folder / "design.toml", "--out", folder)
    assert done.returncode == 4, done.stderr
    assert "files a review did not write (code.py, design.toml)" in done.stderr and "Traceback" not in done.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["code.py", "design.toml"]
    assert (folder / "code.py").read_text() == "print('mine')\n"


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_out_that_is_the_working_folder_is_refused(cli, tmp_path):
    """--out . (or a folder holding the current one) would replace where the user works: exit 4."""
    (tmp_path / "design.toml").write_text('workload = "tiny"\nprotocols = ["none"]\nseeds = 20\n')
    for out in (".", ".."):
        done = cli("review", "--design", "design.toml", "--out", out, cwd=tmp_path)
        assert done.returncode == 4 and "is the current folder or holds it" in done.stderr, done.stderr
    assert (tmp_path / "design.toml").exists()


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_an_earlier_report_is_replaced(cli, tmp_path):
    """A folder that holds an earlier fencesim report is replaced by the new one."""
    (tmp_path / "design.toml").write_text('workload = "tiny"\nprotocols = ["none"]\nseeds = 20\n')
    out = tmp_path / "report"
    for _ in range(2):
        done = cli("review", "--design", tmp_path / "design.toml", "--out", out, timeout=300)
        assert done.returncode == 1, done.stderr
    assert json.loads((out / "results.json").read_text())["designs"][0]["seeds_done"] == 20


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_designs_with_one_name_are_refused(cli, tmp_path):
    """Two designs named alike would share figures and files: exit 4, naming the name."""
    for sub, protocol in (("a", "none"), ("b", "step-dedupe")):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "design.toml").write_text(f'workload = "tiny"\nprotocols = ["{protocol}"]\nseeds = 20\n')
    done = cli("review", "--design", tmp_path / "a" / "design.toml", "--design", tmp_path / "b" / "design.toml",
               "--out", tmp_path / "out")
    assert done.returncode == 4 and "two designs have the same name: 'design'" in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_files_of_ones_own_inside_an_earlier_report_are_not_lost(cli, tmp_path):
    """An earlier report whose figures/ or counterexamples/ holds a file a report never writes is refused;
    caches left by running its exported tests are not a reason to refuse."""
    (tmp_path / "design.toml").write_text('workload = "tiny"\nprotocols = ["none"]\nseeds = 20\n')
    out = tmp_path / "report"
    assert cli("review", "--design", tmp_path / "design.toml", "--out", out, timeout=300).returncode == 1
    (out / ".pytest_cache").mkdir()
    (out / "counterexamples" / "__pycache__").mkdir()
    assert cli("review", "--design", tmp_path / "design.toml", "--out", out, timeout=300).returncode == 1
    (out / "figures" / "mine.txt").write_text("keep\n")
    done = cli("review", "--design", tmp_path / "design.toml", "--out", out)
    assert done.returncode == 4 and "figures/mine.txt" in done.stderr, done.stderr
    assert (out / "figures" / "mine.txt").read_text() == "keep\n"


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_a_design_naming_a_protocol_twice_is_refused(cli, tmp_path):
    (tmp_path / "design.toml").write_text('workload = "tiny"\nprotocols = ["none", "none"]\nseeds = 20\n')
    done = cli("review", "--design", tmp_path / "design.toml", "--out", tmp_path / "out")
    assert done.returncode == 4 and "design.toml:2" in done.stderr and "more than once" in done.stderr, done.stderr


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_files_named_like_report_files_inside_an_earlier_report_stay(cli, tmp_path):
    """A file a user added to an earlier report is kept even when its name ends like a report's files (a
    test module in counterexamples/, a picture in figures/): the review is refused and the files are
    byte-identical; the report itself is untouched."""
    (tmp_path / "design.toml").write_text('workload = "tiny"\nprotocols = ["none"]\nseeds = 20\n')
    out = tmp_path / "report"
    assert cli("review", "--design", tmp_path / "design.toml", "--out", out, timeout=300).returncode == 1
    planted = {out / "counterexamples" / "test_my_own.py": "def test_mine():\n    pass\n",
               out / "figures" / "my_plot.png": "not really a png\n",
               out / "counterexamples" / "notes.toml": "mine = true\n"}
    for path, text in planted.items():
        path.write_text(text)
    before = (out / "results.json").read_bytes()
    done = cli("review", "--design", tmp_path / "design.toml", "--out", out)
    assert done.returncode == 4 and "counterexamples/notes.toml" in done.stderr, done.stderr
    assert all(path.read_text() == text for path, text in planted.items())
    assert (out / "results.json").read_bytes() == before


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_a_folder_holding_the_design_is_refused(cli, tmp_path):
    """--out holding the design file being reviewed is refused (it would be replaced with the folder)."""
    out = tmp_path / "report"
    out.mkdir()
    (out / "design.toml").write_text('workload = "tiny"\nprotocols = ["none"]\nseeds = 20\n')
    done = cli("review", "--design", out / "design.toml", "--out", out)
    assert done.returncode == 4 and "design.toml" in done.stderr, done.stderr
    assert (out / "design.toml").exists()


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_one_protocol_spelled_two_ways_is_refused(cli, tmp_path):
    """step-dedupe and fence=step,dedupe=journal are one protocol: a design naming both is refused."""
    (tmp_path / "design.toml").write_text('workload = "tiny"\nprotocols = ["step-dedupe", '
                                          '"fence=step,dedupe=journal"]\nseeds = 20\n')
    done = cli("review", "--design", tmp_path / "design.toml", "--out", tmp_path / "out")
    assert done.returncode == 4, done.stderr
    assert "'fence=step,dedupe=journal' is 'step-dedupe' spelt otherwise" in done.stderr
    assert "design.toml:2" in done.stderr and not (tmp_path / "out").exists()


@pytest.mark.slow  # reads a review of about two minutes: outside the fast lane
@SHARED
def test_the_terminal_table_gives_availability_and_work_done(reviewed):
    """The cost question comes first: spurious rejections per run and the share of steps applied (the table is
    the review's output, without --json)."""
    done, _ = reviewed
    assert "spurious rejections per run" in done.stdout and "steps applied / steps planned" in done.stdout
