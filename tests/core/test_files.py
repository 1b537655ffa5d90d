"""Input files with errors at file:line, and outputs written atomically."""

from __future__ import annotations

import os

import pytest

from sim.core.errors import InputError, ScenarioError
from sim.core.files import Source, read_toml, write_atomically, write_files_atomically
from sim.report.outputs import check_output_dir, check_output_file

TEXT = 'name = "x"\nplan = [ { id = "s1" } ]\nevents = [ "plan",\n  "dispatch s1" ]\n'


def test_source_line_of_finds_the_first_line_holding_the_needle():
    """line_of is 1-based and finds the first line that holds the needle."""
    source = Source("f.toml", TEXT)
    assert source.line_of('"s1"') == 2
    assert source.line_of("absent") is None


def test_source_line_of_after_key_starts_at_that_key():
    """With after_key, the search starts at the line assigning that key, not at an earlier mention."""
    source = Source("f.toml", TEXT)
    assert source.line_of("s1", after_key="events") == 4


def test_source_where_and_error_point_at_file_and_line():
    """where gives file:line (or just the file when nothing is found); error builds a ScenarioError there."""
    source = Source("f.toml", TEXT)
    assert source.where('"plan"') == "f.toml:3"
    assert source.where("absent") == "f.toml" and source.where() == "f.toml"
    error = source.error("bad step", '"s1"')
    assert isinstance(error, ScenarioError) and str(error) == "f.toml:2: bad step"


def test_read_toml_returns_data_and_source(tmp_path):
    """read_toml gives the parsed table and a Source holding the path and text."""
    path = tmp_path / "ok.toml"
    path.write_text(TEXT, encoding="utf-8")
    data, source = read_toml(path)
    assert data["name"] == "x" and source.path == str(path) and source.text == TEXT


def test_malformed_toml_is_a_scenario_error_at_its_line(tmp_path):
    """Malformed TOML raises ScenarioError at the parser's line, without the parser's column text."""
    path = tmp_path / "bad.toml"
    path.write_text('name = "x"\nevents = [ "a"\n "b" ]\n', encoding="utf-8")
    with pytest.raises(ScenarioError) as caught:
        read_toml(path)
    assert caught.value.where == f"{path}:3"
    assert "malformed TOML" in caught.value.message and "column" not in caught.value.message


def test_unknown_format_is_refused_at_its_line(tmp_path):
    """A format version other than 1 is refused at the 'format' line."""
    path = tmp_path / "f.toml"
    path.write_text('name = "x"\nformat = 2\n', encoding="utf-8")
    with pytest.raises(ScenarioError, match="format") as caught:
        read_toml(path)
    assert caught.value.where == f"{path}:2"


@pytest.mark.parametrize("make, fragment", [(lambda p: p, "no such file"),
                                             (lambda p: (p.mkdir(), p)[1], "directory")],
                         ids=["missing", "directory"])
def test_unreadable_inputs_are_scenario_errors(tmp_path, make, fragment):
    """A missing file or a directory given as a file is a ScenarioError naming it."""
    path = make(tmp_path / "input.toml")
    with pytest.raises(ScenarioError, match=fragment) as caught:
        read_toml(path)
    assert caught.value.where == str(path)


def test_non_utf8_input_is_a_scenario_error(tmp_path):
    """A file that is not UTF-8 text is refused with one line."""
    path = tmp_path / "latin.toml"
    path.write_bytes(b'name = "\xe9"\n')
    with pytest.raises(ScenarioError, match="UTF-8"):
        read_toml(path)


def test_write_atomically_replaces_the_file_and_leaves_no_temporary(tmp_path):
    """write_atomically writes the whole text (creating folders) and leaves no temporary file behind."""
    path = tmp_path / "deep" / "out.txt"
    write_atomically(path, "first\n")
    write_atomically(path, "second\n")
    assert path.read_text() == "second\n"
    assert os.listdir(path.parent) == ["out.txt"]


def test_write_files_atomically_writes_none_when_one_fails(tmp_path):
    """If any file of a unit cannot be written, none is renamed and no temporary file is left."""
    (tmp_path / "blocked").write_text("a file where a folder is needed")
    good = tmp_path / "good.txt"
    with pytest.raises(OSError):
        write_files_atomically({good: "x", tmp_path / "blocked" / "bad.txt": "y"})
    assert sorted(os.listdir(tmp_path)) == ["blocked"]


def test_check_output_file_refuses_a_folder_and_a_file_parent(tmp_path):
    """An output file may not be a folder, nor sit under a file; a fresh name is accepted."""
    (tmp_path / "plain").write_text("x")
    assert check_output_file(tmp_path / "new.xml", "--junit") == tmp_path / "new.xml"
    with pytest.raises(InputError, match="directory"):
        check_output_file(tmp_path, "--junit")
    with pytest.raises(InputError, match="not a directory"):
        check_output_file(tmp_path / "plain" / "x.xml", "--junit")


def test_check_output_dir_refuses_a_file_and_a_file_ancestor(tmp_path):
    """An output folder may not be a file, nor sit under a file; a folder still to be made is accepted."""
    (tmp_path / "plain").write_text("x")
    assert check_output_dir(tmp_path / "a" / "b", "--out") == tmp_path / "a" / "b"
    with pytest.raises(InputError, match="is a file"):
        check_output_dir(tmp_path / "plain", "--out")
    with pytest.raises(InputError, match="not a folder"):
        check_output_dir(tmp_path / "plain" / "sub", "--out")


def test_written_files_get_the_mode_open_would_give(tmp_path):
    """Atomic writes go through a private temporary file; the result is 0666 less the umask (not 0600), so
    CI artifacts and shared report folders stay readable."""
    import stat

    from sim.core import files

    target = tmp_path / "out.txt"
    files.write_atomically(target, "x\n")
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~mask


# -- what every TOML file is checked for, whatever its kind ----------------------------------------------

def _toml_error(tmp_path, content: bytes) -> ScenarioError:
    path = tmp_path / "x.toml"
    path.write_bytes(content)
    with pytest.raises(ScenarioError) as caught:
        read_toml(path)
    return caught.value


def test_non_utf8_text_names_line_and_column(tmp_path):
    """A Latin-1 byte is refused at its line and column, with the byte shown."""
    error = _toml_error(tmp_path, b'name = "a"\nplan = "pl\xe9n"\n')
    assert error.where.endswith("x.toml:2") and "column 11" in error.message and "0xe9" in error.message


def test_a_byte_order_mark_is_named_in_toml(tmp_path):
    """A TOML file starting with a BOM says so (tomllib would only say 'Invalid statement')."""
    assert "byte-order mark" in _toml_error(tmp_path, "\ufeffname = 'a'\n".encode()).message


@pytest.mark.parametrize("value, fragment", [
    ("07:32:00", "a TOML time"), ("1979-05-27", "a TOML date"), ("1979-05-27T07:32:00Z", "a TOML date-time"),
])
def test_toml_dates_and_times_are_refused_at_their_line(tmp_path, value, fragment):
    """A TOML date or time anywhere (here in an arguments table) is refused, naming its key's line."""
    error = _toml_error(tmp_path, f'name = "a"\n[arguments.open_pr]\ntitle = {value}\n'.encode())
    assert error.where.endswith("x.toml:3") and fragment in error.message and "datetime" not in error.message


def test_huge_integers_are_refused(tmp_path):
    """An integer beyond 64 bits, or beyond the 4,300 digits Python converts, is one clear line."""
    assert "out of range" in _toml_error(tmp_path, b"seed = " + b"9" * 30 + b"\n").message
    assert "4300 digits" in _toml_error(tmp_path, b"seed = " + b"9" * 5000 + b"\n").message


def test_deep_nesting_is_refused(tmp_path):
    """Lists nested past MAX_NESTING are refused (and 5,000 levels are not a recursion error)."""
    assert "nested" in _toml_error(tmp_path, b"x = " + b"[" * 40 + b"]" * 40 + b"\n").message
    assert "nested" in _toml_error(tmp_path, b"x = " + b"[" * 5000 + b"]" * 5000 + b"\n").message


def test_a_path_with_a_nul_is_refused(tmp_path):
    """A path holding NUL (which os.stat refuses with ValueError) is an input error."""
    with pytest.raises(ScenarioError):
        read_toml(str(tmp_path / "a\x00b.toml"))
