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
