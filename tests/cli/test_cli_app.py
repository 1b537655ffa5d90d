"""The exit-code contract every command shares (sim.cli.app): 0 clean, 1 violated, 2 interrupted,
3 internal error, 4 usage or input error (one line, no traceback), 5 nothing ran."""

from __future__ import annotations

import json

import pytest

PLANT = ("import sim.families.workspace.matrix as m\ndef planted(*a, **k):\n    raise {error}\n"
         "m.compute_matrix = planted")


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_internal_error_exits_three_and_says_it_is_a_bug(cli):
    """An unexpected exception inside a command exits 3 with the 'this is a bug in fencesim' line."""
    completed = cli("matrix", prelude=PLANT.format(error="RuntimeError('planted')"))
    assert completed.returncode == 3, completed.stderr
    assert "this is a bug in fencesim" in completed.stderr
    assert "RuntimeError: planted" in completed.stderr


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_keyboard_interrupt_exits_two(cli):
    """An interrupt during a command exits 2 with 'fencesim: interrupted'."""
    completed = cli("matrix", prelude=PLANT.format(error="KeyboardInterrupt"))
    assert completed.returncode == 2, completed.stderr
    assert "interrupted" in completed.stderr


def test_unknown_option_is_a_usage_error_in_one_line(cli):
    """An unknown option exits 4 with one 'usage error' line pointing at the command's help."""
    completed = cli("run", "scenarios/seed/concurrent_edit.toml", "--colour")
    assert completed.returncode == 4
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fencesim: usage error:") and "--help" in lines[0]


def test_unknown_command_is_a_usage_error(cli):
    """An unknown command exits 4 without a traceback."""
    completed = cli("frobnicate")
    assert completed.returncode == 4 and "Traceback" not in completed.stderr


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_unknown_backend_is_refused(cli):
    """An unknown --backend is one line naming the backends, exit 4."""
    completed = cli("fuzz", "--backend", "workspace", "--seeds", "1")
    assert completed.returncode == 4 and "backends: local, dask" in completed.stderr


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_json_output_is_one_document_on_stdout(cli):
    """With --json stdout holds exactly one JSON document; human text goes to stderr."""
    completed = cli("matrix", "--json")
    assert completed.returncode == 0
    assert json.loads(completed.stdout)["matches_seed_table"] is True
    assert "seed's printed table" in completed.stderr


def test_help_lists_every_command(cli):
    """The top-level help names matrix, run, check, fuzz, cruel and exposure."""
    completed = cli("--help")
    assert completed.returncode == 0
    for command in ("matrix", "run", "check", "fuzz", "cruel", "exposure"):
        assert command in completed.stdout
