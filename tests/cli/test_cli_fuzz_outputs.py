"""No user file is ever replaced: every output option of every command refuses a foreign file (exit 4, one
line naming the file and the option, before any work, the file byte-identical) and replaces an earlier
output of its own kind; outputs never name an input or each other; paths that cannot take a file are
refused up front."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TINY = ["-w", "tiny", "-p", "none", "--seeds", "20", "--workers", "1", "--no-advise"]
FOREIGN = "my own notes: not to be lost\n"


def _refused(done, *needles):
    """Exit 4 with one line naming what was refused, no traceback, and no work done."""
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 4 and len(lines) == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "runs" not in done.stdout
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def _foreign(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(FOREIGN)
    return path


# -- fuzz --junit ----------------------------------------------------------------------------------------

@pytest.mark.slow  # over 3 s: outside the fast lane
def test_junit_refuses_a_foreign_file_and_replaces_its_own(cli, tmp_path):
    """--junit never replaces a user's file (it stays byte-identical); a JUnit file fencesim wrote is
    replaced; --force replaces the foreign one."""
    notes = _foreign(tmp_path / "notes.md")
    _refused(cli("fuzz", *TINY, "--out", tmp_path / "a", "--junit", notes), "--junit", "notes.md")
    assert notes.read_text() == FOREIGN and not (tmp_path / "a").exists()
    junit = tmp_path / "fuzz.xml"
    assert cli("fuzz", *TINY, "--out", tmp_path / "a", "--junit", junit).returncode == 1
    first = junit.read_text()
    again = cli("fuzz", *TINY, "--seed-start", "7", "--out", tmp_path / "a", "--junit", junit)
    assert again.returncode == 1, again.stderr
    assert junit.read_text() != first and "fencesim fuzz" in junit.read_text()
    forced = cli("fuzz", *TINY, "--out", tmp_path / "a", "--junit", notes, "--force")
    assert forced.returncode == 1 and notes.read_text().startswith("<?xml"), forced.stderr


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_junit_through_a_symbolic_link_keeps_the_link(cli, tmp_path):
    """A link to an earlier JUnit file is followed: the target is replaced, the link stays a link."""
    target = tmp_path / "real.xml"
    assert cli("fuzz", *TINY, "--out", tmp_path / "a", "--junit", target).returncode == 1
    link = tmp_path / "link.xml"
    link.symlink_to(target)
    assert cli("fuzz", *TINY, "--seed-start", "3", "--out", tmp_path / "a", "--junit", link).returncode == 1
    assert link.is_symlink() and "fencesim fuzz" in target.read_text()


@pytest.mark.slow  # over 3 s: outside the fast lane
@pytest.mark.parametrize("kind", ["loop", "dangling", "fifo", "device", "folder", "file_parent", "long_name",
                                  "virtual"])
def test_junit_paths_that_cannot_take_a_file_are_refused_first(cli, tmp_path, kind):
    """Symbolic-link loops, dangling links, FIFOs, devices, folders, a regular file as a parent, names the file
    system cannot hold and virtual file systems: exit 4 before any work, naming --junit and the path."""
    path = tmp_path / "junit.xml"
    if kind == "loop":
        (tmp_path / "b").symlink_to(tmp_path / "junit.xml")
        path.symlink_to(tmp_path / "b")
    elif kind == "dangling":
        path.symlink_to(tmp_path / "nowhere" / "x.xml")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path = Path("/dev/null")
    elif kind == "folder":
        path.mkdir()
    elif kind == "file_parent":
        _foreign(tmp_path / "plain")
        path = tmp_path / "plain" / "junit.xml"
    elif kind == "long_name":
        path = tmp_path / ("x" * 300 + ".xml")
    elif kind == "virtual":
        path = Path("/proc/self/junit.xml")
    _refused(cli("fuzz", *TINY, "--out", tmp_path / "a", "--junit", path), "--junit")
    assert not (tmp_path / "a").exists()


def test_an_unwritable_folder_is_refused_first(cli, tmp_path):
    """--junit in a folder this process cannot write is refused before any work."""
    if os.geteuid() == 0:
        pytest.skip("root writes everywhere; the virtual file system case covers the refusal")
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        _refused(cli("fuzz", *TINY, "--out", tmp_path / "a", "--junit", folder / "j.xml"), "--junit", "cannot write")
    finally:
        folder.chmod(stat.S_IRWXU)


# -- fuzz --write-baseline -----------------------------------------------------------------------------------

@pytest.mark.slow  # over 3 s: outside the fast lane
def test_write_baseline_refuses_a_foreign_file_and_replaces_a_baseline(cli, tmp_path):
    """--write-baseline never replaces a workload or notes of the user's; an earlier baseline is replaced."""
    keep = tmp_path / "keep.toml"
    keep.write_text((REPO / "scenarios" / "workloads" / "tiny.toml").read_text())
    before = keep.read_bytes()
    _refused(cli("fuzz", *TINY, "--out", tmp_path / "a", "--write-baseline", keep), "--write-baseline", "keep.toml")
    assert keep.read_bytes() == before
    base = tmp_path / "base.json"
    assert cli("fuzz", *TINY, "--out", tmp_path / "a", "--write-baseline", base).returncode == 0
    assert cli("fuzz", *TINY[:-1], "--out", tmp_path / "a", "--write-baseline", base).returncode == 0
    assert json.loads(base.read_text())["entries"]


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_outputs_never_name_an_input(cli, tmp_path):
    """--write-baseline naming the fuzzed workload, --junit naming the --baseline file and the job summary
    naming the workload are refused, and the inputs are left byte-identical."""
    workload = tmp_path / "tiny.toml"
    workload.write_text((REPO / "scenarios" / "workloads" / "tiny.toml").read_text())
    before = workload.read_bytes()
    args = ["-w", workload, "-p", "none", "--seeds", "20", "--workers", "1", "--out", tmp_path / "a"]
    _refused(cli("fuzz", *args, "--write-baseline", workload, "--force"), "--write-baseline", "--workload")
    base = tmp_path / "base.json"
    assert cli("fuzz", *args, "--write-baseline", base, "--no-advise").returncode == 0
    written = base.read_bytes()
    _refused(cli("fuzz", *args, "--baseline", base, "--junit", base, "--force"), "--junit", "--baseline")
    _refused(cli("fuzz", *args, "--baseline", base, "--write-baseline", base), "--write-baseline", "--baseline")
    _refused(cli("fuzz", *args, env_extra={"GITHUB_STEP_SUMMARY": str(workload)}), "GITHUB_STEP_SUMMARY",
             "--workload")
    assert workload.read_bytes() == before and base.read_bytes() == written


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_outputs_never_name_each_other_or_the_out_folder(cli, tmp_path):
    """--write-baseline or --junit equal to the --out folder, to each other, or to a file --out receives."""
    out = tmp_path / "out"
    _refused(cli("fuzz", *TINY, "--out", out, "--write-baseline", out), "--write-baseline", "--out")
    out.mkdir()
    _refused(cli("fuzz", *TINY, "--out", out, "--junit", out), "--junit", "directory")
    same = tmp_path / "same.xml"
    _refused(cli("fuzz", *TINY, "--out", out, "--junit", same, "--write-baseline", same), "same file")
    _refused(cli("fuzz", *TINY, "--out", out, "--junit", out / "sweep-state.json"), "--junit", "--out")


# -- fuzz --out --------------------------------------------------------------------------------------------

@pytest.mark.slow  # over 3 s: outside the fast lane
def test_out_refuses_a_folder_of_the_users_and_keeps_their_file(cli, tmp_path):
    """A user's file with a counterexample's name is never replaced: a folder holding it is refused, and with
    --force the file is still kept (refused by name); an earlier fencesim output folder is written into."""
    folder = tmp_path / "cx"
    mine = _foreign(folder / "tiny_none_lost_update_stale_plan.toml")
    _refused(cli("fuzz", *TINY, "--out", folder), "--out", "tiny_none_lost_update_stale_plan.toml")
    _refused(cli("fuzz", *TINY, "--out", folder, "--force"), "tiny_none_lost_update_stale_plan.toml", "never replaced")
    assert mine.read_text() == FOREIGN
    mine.unlink()
    _foreign(folder / "README.md")
    forced = cli("fuzz", *TINY, "--out", folder, "--force")
    assert forced.returncode == 1 and (folder / "README.md").read_text() == FOREIGN, forced.stderr
    (folder / "README.md").unlink()
    earlier = (folder / "tiny_none_lost_update_stale_plan.toml").read_text()
    again = cli("fuzz", *TINY, "--seed-start", "11", "--out", folder)
    assert again.returncode == 1, again.stderr
    assert (folder / "tiny_none_lost_update_stale_plan.toml").read_text().startswith("# Written by fencesim")
    assert earlier.startswith("# Written by fencesim")


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_out_takes_an_earlier_output_folder_with_its_subfolders(cli, tmp_path):
    """Outputs of other commands (a cruel subfolder, a JUnit file, a baseline, caches) are fencesim's own."""
    folder = tmp_path / "cx"
    assert cli("fuzz", *TINY, "--out", folder, "--junit", folder / "fuzz.xml",
               "--write-baseline", folder / "base.json").returncode == 0
    assert cli("cruel", "-p", "keyed", "--out", folder / "cruel").returncode in (0, 1)
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "x.pyc").write_bytes(b"\0")
    done = cli("fuzz", *TINY, "--out", folder)
    assert done.returncode == 1, done.stderr


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_cruel_out_refuses_a_folder_of_the_users_and_replaces_its_own(cli, tmp_path):
    """fencesim cruel --out is checked the same way: a folder of the user's is refused, its files kept; its
    own earlier output is written over."""
    mine = _foreign(tmp_path / "mine" / "notes.txt")
    _refused(cli("cruel", "-p", "keyed", "--out", mine.parent), "--out", "notes.txt")
    assert mine.read_text() == FOREIGN
    for _ in range(2):
        assert cli("cruel", "-p", "keyed", "--out", tmp_path / "cruel").returncode == 1
    assert any(p.name.endswith(".toml") for p in (tmp_path / "cruel").iterdir())


# -- the GitHub job summary -------------------------------------------------------------------------------

@pytest.mark.slow  # over 3 s: outside the fast lane
def test_the_step_summary_is_appended_never_replaced(cli, tmp_path):
    """GITHUB_STEP_SUMMARY keeps what it held and gets the summary after it."""
    summary = _foreign(tmp_path / "summary.md")
    done = cli("fuzz", *TINY, "--out", tmp_path / "a", env_extra={"GITHUB_STEP_SUMMARY": str(summary)})
    assert done.returncode == 1, done.stderr
    text = summary.read_text()
    assert text.startswith(FOREIGN) and "## fencesim fuzz" in text


@pytest.mark.slow  # over 3 s: outside the fast lane
@pytest.mark.parametrize("kind", ["fifo", "device", "folder", "dangling", "proc", "full"])
def test_a_step_summary_that_cannot_take_the_summary_is_refused_first(cli, tmp_path, kind):
    """A FIFO (which would block), a device, a folder, a dangling link, /proc/version and a full file system
    are refused before any work (exit 4, naming GITHUB_STEP_SUMMARY)."""
    path, prelude = tmp_path / "summary.md", ""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path = Path("/dev/full")
    elif kind == "folder":
        path.mkdir()
    elif kind == "dangling":
        path.symlink_to(tmp_path / "gone.md")
    elif kind == "proc":
        path = Path("/proc/version")
    elif kind == "full":  # a file system with no block left, for the summary's folder only
        (tmp_path / "full").mkdir()
        path = tmp_path / "full" / "summary.md"
        prelude = ("import os\nreal = os.statvfs\n"
                   "def full(p):\n    s = real(p)\n    if not str(p).endswith('/full'):\n        return s\n"
                   "    return os.statvfs_result((s.f_bsize, s.f_frsize, s.f_blocks, 0, 0, s.f_files, s.f_ffree, "
                   "s.f_favail, s.f_flag, s.f_namemax))\nos.statvfs = full")
    done = cli("fuzz", *TINY, "--out", tmp_path / "a", env_extra={"GITHUB_STEP_SUMMARY": str(path)},
               prelude=prelude, timeout=60)
    line = _refused(done, "GITHUB_STEP_SUMMARY")
    if kind == "full":
        assert "no space left" in line


# -- conform --record and --out ----------------------------------------------------------------------------

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="conform needs git")
SCENARIO = REPO / "scenarios" / "histories" / "clean.toml"


@pytest.mark.slow  # over 3 s: outside the fast lane
@needs_git
def test_record_refuses_its_own_scenario_and_a_foreign_file(cli, tmp_path):
    """conform --record naming its own --scenario, or a file that is not a history, is refused and left
    byte-identical; an earlier recorded history is replaced."""
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO.read_text())
    before = scenario.read_bytes()
    _refused(cli("conform", "--scenario", scenario, "--record", scenario, "--out", tmp_path / "o", "--force"),
             "--record", "--scenario")
    assert scenario.read_bytes() == before
    notes = _foreign(tmp_path / "notes.jsonl")
    _refused(cli("conform", "--scenario", scenario, "--record", notes, "--out", tmp_path / "o"), "--record")
    assert notes.read_text() == FOREIGN
    history = tmp_path / "real.jsonl"
    for _ in range(2):
        done = cli("conform", "--scenario", scenario, "--record", history, "--out", tmp_path / "o", timeout=300)
        assert done.returncode == 0, done.stderr
        assert json.loads(history.read_text().splitlines()[0])["index"] == 0


@needs_git
def test_conform_out_refuses_a_folder_of_the_users(cli, tmp_path):
    mine = _foreign(tmp_path / "mine" / "notes.txt")
    _refused(cli("conform", "--scenario", SCENARIO, "--out", mine.parent), "--out", "notes.txt")
    assert mine.read_text() == FOREIGN
