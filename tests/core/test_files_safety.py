"""Output safety: a writer killed mid-way never leaves half a file and never destroys the previous one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sim.core.files import write_atomically, write_files_atomically

WRITER = """
import os, sys, time
sys.path.insert(0, {root!r})
import sim.core.files as files
real = os.fsync
def slow(fd):
    open({flag!r}, "w").close()
    time.sleep(30)
    real(fd)
files.os.fsync = slow
files.write_atomically({target!r}, "new " * 500000)
"""


def test_a_killed_writer_leaves_the_previous_file_whole(tmp_path):
    """SIGKILL while the new content is being written: the target still holds the old bytes."""
    target, flag = tmp_path / "report.json", tmp_path / "writing"
    target.write_text("old")
    code = WRITER.format(root=str(Path(__file__).resolve().parents[2]), flag=str(flag), target=str(target))
    process = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 60
    while not flag.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert flag.exists(), "the writer never started writing"
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert target.read_text() == "old"


def test_a_failed_write_removes_its_temporary_file(tmp_path, monkeypatch):
    """An error while writing leaves the target as it was and no temporary file behind."""
    target = tmp_path / "out.txt"
    target.write_text("old")

    def broken(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(OSError):
        write_atomically(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_files_written_as_a_unit_are_all_or_none(tmp_path, monkeypatch):
    """When the second of three files fails, none of the three is replaced."""
    paths = [tmp_path / f"{n}.txt" for n in "abc"]
    for path in paths:
        path.write_text("old")
    calls = {"n": 0}
    real = os.fsync

    def second_fails(fd):
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(5, "I/O error")
        real(fd)

    monkeypatch.setattr(os, "fsync", second_fails)
    with pytest.raises(OSError):
        write_files_atomically({path: "new" for path in paths})
    assert [p.read_text() for p in paths] == ["old"] * 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt", "c.txt"]


def test_a_long_name_is_written_under_a_short_temporary_name(tmp_path):
    """A name the file system accepts is always writable: its temporary name stays short (a 250-byte name's
    temporary name would otherwise pass the 255-byte limit)."""
    target = tmp_path / ("n" * 250)
    write_atomically(target, "x")
    assert target.read_text() == "x" and [p.name for p in tmp_path.iterdir()] == [target.name]


def test_a_failed_write_is_one_line_naming_the_file(tmp_path, monkeypatch):
    """A write that fails (a full disk) is an InputError (one line, exit 4) that is still an OSError."""
    from sim.core.errors import InputError

    def full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(InputError) as caught:
        write_atomically(tmp_path / "out.txt", "new")
    assert isinstance(caught.value, OSError) and "out.txt" in str(caught.value) and "No space" in str(caught.value)


def test_writing_through_a_symbolic_link_keeps_the_link(tmp_path):
    target, link = tmp_path / "real.txt", tmp_path / "link.txt"
    target.write_text("old")
    link.symlink_to(target)
    write_atomically(link, "new")
    assert link.is_symlink() and target.read_text() == "new"


def test_every_kind_fencesim_writes_is_recognised_as_its_own(tmp_path):
    """Each exported file, a JUnit file, a baseline, a sweep state and a history is fencesim's; a file of
    the user's with the same name is not."""
    import sim
    from sim.core.outputs import FOREIGN_ENTRIES_KEPT, foreign_entries
    from sim.report.ci import junit_xml
    from sim.report.fuzz import export_all, fuzz_document
    from sim.report.outputs import FENCESIM, fencesim_file
    from sim.search.options import SearchOptions
    from sim.search.pipeline import fuzz

    result = fuzz(sim.family("workspace"), sim.load_workload("tiny"), ["none"],
                  SearchOptions(20, workers=1, advise=False))
    document = fuzz_document(result, export_all(result, tmp_path))
    (tmp_path / "fuzz.xml").write_text(junit_xml(document))
    (tmp_path / "base.json").write_text('{"format": 1, "family": "workspace", "workload": "tiny", "entries": []}')
    (tmp_path / "run.jsonl").write_text(result.family.replay(result.workload.base, result.protocols[0],
                                                             result.counterexamples[0].events).history.to_jsonl())
    assert foreign_entries(tmp_path, FENCESIM) == []
    assert all(fencesim_file(p) for p in tmp_path.iterdir())
    for path in list(tmp_path.iterdir()):
        path.write_text("the user's own text\n")
        assert fencesim_file(path) is None, path.name
    assert len(foreign_entries(tmp_path, FENCESIM)) == min(FOREIGN_ENTRIES_KEPT, len(list(tmp_path.iterdir())))


def test_a_folder_lock_admits_one_holder(tmp_path):
    """While one run holds an output folder, a second is refused; after it ends, the folder is free."""
    from sim.core.outputs import FolderLock, OutputError

    with FolderLock(tmp_path / "out"):
        code = ("import sys; sys.path.insert(0, %r)\nfrom sim.core.outputs import FolderLock, OutputError\n"
                "try:\n    FolderLock(%r).__enter__()\nexcept OutputError:\n    sys.exit(7)\n"
                % (str(Path(__file__).resolve().parents[2]), str(tmp_path / "out")))
        assert subprocess.run([sys.executable, "-c", code]).returncode == 7
    with FolderLock(tmp_path / "out"):
        pass
    assert OutputError


def test_the_folder_check_knows_files_only_through_the_ownership_it_is_given(tmp_path):
    """sim.core.outputs reads no format: a writer's own files are what its Ownership recognises, the lock and
    temporary files are always its own, and its passed-over folders are no one's."""
    from sim.core.outputs import LOCK_NAME, FileKind, OutputError, Ownership, check_file, check_folder

    mine = Ownership(lambda path: "note" if path.read_text().startswith("NOTE") else None, frozenset({"cache"}))
    (tmp_path / "a.txt").write_text("NOTE 1")
    (tmp_path / LOCK_NAME).write_text("x")
    (tmp_path / ".a.txt.abcdefgh.tmp").write_text("half")
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "junk").write_text("junk")
    assert check_folder(tmp_path, "--out", mine) == tmp_path
    (tmp_path / "b.txt").write_text("something else")
    with pytest.raises(OutputError, match="b.txt"):
        check_folder(tmp_path, "--out", mine)
    note = FileKind("a note", lambda path: path.read_text().startswith("NOTE"))
    assert check_file(tmp_path / "a.txt", "--note", note) == tmp_path / "a.txt"
    with pytest.raises(OutputError, match="is not a note"):
        check_file(tmp_path / "b.txt", "--note", note)
