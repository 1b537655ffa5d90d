"""The export's folder, ``--out``, changed while the server runs: replaced by a symbolic link (to a folder of
the user's, or a folder above it), a FIFO, a file or a folder of the user's files, it is refused with one
line and a 4xx, nothing is written anywhere, and the server's stderr shows no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient  # noqa: E402

from sim.app.serving import explorer_for  # noqa: E402
from sim.report.outputs import check_output_dir  # noqa: E402
from sim.webapp.app import make_app  # noqa: E402
from sim.webapp.outfolder import OutFolder  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
LOST_UPDATE = REPO / "scenarios" / "regressions" / "seed_fuzz_none_lost_update.toml"
EXPORT = "/export?s=seed_fuzz_none_lost_update&e=plan"


@pytest.fixture(scope="module")
def explorer():
    return explorer_for(scenarios=[LOST_UPDATE])


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() and not p.is_symlink() else b"")
            for p in sorted(folder.rglob("*"))}


def _refused(page, words: str) -> str:
    """A refusal: 400 and one line (the test client raises any exception a route lets escape: a 500)."""
    assert page.status_code == 400, page.text
    assert words in page.text and "Traceback" not in page.text
    return page.text


def test_out_replaced_by_a_link_is_refused_and_the_target_untouched(explorer, tmp_path):
    out, mine = tmp_path / "out", tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine\n", encoding="utf-8")
    with TestClient(make_app(explorer, out), base_url="http://127.0.0.1") as client:
        assert client.post(EXPORT).status_code == 200
        out.rename(tmp_path / "moved")
        out.symlink_to(mine)
        _refused(client.post(EXPORT), "out is now a symbolic link")
        out.unlink()
        out.symlink_to(tmp_path / "nowhere")  # a link to a folder not made yet: never made through it
        _refused(client.post(EXPORT), "out is now a symbolic link")
    assert _tree(mine) == {"notes.txt": b"mine\n"} and not (tmp_path / "nowhere").exists()


def test_a_folder_above_out_replaced_by_a_link_is_refused(explorer, tmp_path):
    out, elsewhere = tmp_path / "work" / "out", tmp_path / "elsewhere"
    (elsewhere / "out").mkdir(parents=True)
    with TestClient(make_app(explorer, out), base_url="http://127.0.0.1") as client:
        assert client.post(EXPORT).status_code == 200
        (tmp_path / "work").rename(tmp_path / "work.old")
        (tmp_path / "work").symlink_to(elsewhere)
        _refused(client.post(EXPORT), "the folder work above it is now a symbolic link")
    assert _tree(elsewhere) == {"out": b""}


@pytest.mark.parametrize("replacement, words", [
    ("fifo", "out is now a FIFO (named pipe), not a folder"),
    ("file", "out is now a file, not a folder"),
    ("folder of yours", "now holds files fencesim did not write (notes.txt)"),
])
def test_out_replaced_by_something_else_is_refused(explorer, tmp_path, replacement, words):
    out = tmp_path / "out"
    with TestClient(make_app(explorer, out), base_url="http://127.0.0.1") as client:
        assert client.post(EXPORT).status_code == 200
        out.rename(tmp_path / "moved")
        if replacement == "fifo":
            os.mkfifo(out)
        elif replacement == "file":
            out.write_text("mine\n", encoding="utf-8")
        else:
            out.mkdir()
            (out / "notes.txt").write_text("mine\n", encoding="utf-8")
        _refused(client.post(EXPORT), words)
    if replacement == "folder of yours":
        assert _tree(out) == {"notes.txt": b"mine\n"}


def test_a_folder_of_another_user_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(tmp_path).st_uid + 1)
    with pytest.raises(Exception, match="belongs to another user"):
        OutFolder(tmp_path / "out").write({"a.toml": "x\n"})
    assert not any((tmp_path / "out").iterdir())


def test_nothing_but_the_files_is_left_behind(tmp_path):
    out = OutFolder(tmp_path / "new" / "out")
    written = out.write({"a.toml": "one\n", "a.timeline.txt": "two\n"})
    assert [p.name for p in written] == ["a.toml", "a.timeline.txt"]
    assert _tree(tmp_path / "new" / "out") == {"a.timeline.txt": b"two\n", "a.toml": b"one\n"}
    with pytest.raises(Exception, match="is not a file name"):
        out.write({"../a.toml": "x\n"})


def test_an_empty_path_is_refused_and_a_path_without_effect_exports_twice(explorer, tmp_path):
    """An empty path is no run: refused up front.  A path whose events had no effect has a timeline with no
    row; fencesim knows it as its own, so the same export, and ``fuzz --out`` on the folder, still work."""
    out = tmp_path / "out"
    with TestClient(make_app(explorer, out), base_url="http://127.0.0.1") as client:
        _refused(client.post("/export?s=seed_fuzz_none_lost_update"), "the path is empty: step through at least")
        assert not out.exists()
        no_effect = "/export?s=seed_fuzz_none_lost_update&e=dispatch+s1"
        assert client.post(no_effect).status_code == 200
        [timeline] = out.glob("*.timeline.txt")
        assert len(timeline.read_text(encoding="utf-8").splitlines()) == 2  # the header and its rule
        assert client.post(no_effect).status_code == 200
        assert client.post(EXPORT).status_code == 200
    assert check_output_dir(out, "--out") == out  # what fuzz --out checks first


@pytest.mark.slow  # a server in a subprocess
def test_a_fifo_in_place_of_out_is_one_line_and_no_traceback_on_stderr(tmp_path):
    out = tmp_path / "out"
    env = dict(os.environ, NO_COLOR="1", PYTHONUNBUFFERED="1")
    process = subprocess.Popen(
        [sys.executable, "-c", "from sim.cli import main; main()", "serve", "--scenario", str(LOST_UPDATE),
         "--port", "0", "--out", str(out)],
        cwd=str(REPO), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()  # type: ignore[union-attr]
        address = line.split(" at ", 1)[1].split()[0]
        os.mkfifo(out)
        request = urllib.request.Request(address + EXPORT[1:], method="POST", data=b"")
        with pytest.raises(urllib.error.HTTPError) as answer:
            urllib.request.urlopen(request, timeout=30)
        assert answer.value.code == 400 and b"is now a FIFO" in answer.value.read()
        process.terminate()
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    stderr = process.stderr.read()  # type: ignore[union-attr]
    process.stdout.close()  # type: ignore[union-attr]
    process.stderr.close()  # type: ignore[union-attr]
    assert "Traceback" not in stderr and "Error" not in stderr, stderr
