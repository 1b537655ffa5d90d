"""An error raised in a user's family's own code is that family's fault: one line naming the family, its file
and line, the exception and what the contract expects, exit 4, no traceback.  An error in fencesim's own code
(a shipped family's included) stays an internal error (exit 3, with its traceback)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from test_register_family import WORKLOAD

HERE = Path(__file__).resolve().parent

#: Families written against an older contract, or that fail in their own code: method -> body.
BROKEN = {
    "protocol_attribute": ("machine", "return RegisterMachine(tuple(scenario.clients), protocol.commit == 'cas')"),
    "knob_attribute": ("machine", "return RegisterMachine(tuple(scenario.clients), "
                                  "RegisterKnobs.of(protocol).commit == 'cas')"),
    "library_call": ("generate", "return tuple(int(client) for client in workload.base.clients)"),
}


def _family_module(folder: Path, kind: str) -> Path:
    method, body = BROKEN[kind]
    signature = {"machine": "self, scenario, protocol", "generate": "self, workload, seed"}[method]
    path = folder / f"old_{kind}.py"
    path.write_text("from register_family import RegisterFamily, RegisterKnobs, RegisterMachine\n\n\n"
                    "class OldRegister(RegisterFamily):\n"
                    f"    def {method}({signature}):\n"
                    f"        {body}\n\n\n"
                    "FAMILY = OldRegister()\n", encoding="utf-8")
    return path


def _fuzz(cli, tmp_path, module: str, *extra, prelude=""):
    workload = tmp_path / "two-clients.toml"
    workload.write_text(WORKLOAD, encoding="utf-8")
    env = {"FENCESIM_FAMILIES": f"{module}:FAMILY",
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(HERE), os.environ.get("PYTHONPATH", "")])}
    return cli("fuzz", "--workload", workload, "-p", "blind", "--out", tmp_path / "out", *extra,
               env_extra=env, prelude=prelude)


def _one_line(done) -> str:
    assert done.returncode == 4, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_family_reading_a_knob_off_the_protocol_is_told_to_read_typed_knobs(cli, tmp_path, workers):
    """The family's file and line, the exception, and the contract: knobs are read typed (in-process and from a
    sweep's worker processes alike)."""
    path = _family_module(tmp_path, "protocol_attribute")
    line = _one_line(_fuzz(cli, tmp_path, path.stem, "--seeds", "400", "--workers", workers))
    assert line.startswith("fencesim: error: family 'register' failed in its own code at ")
    assert f"{path}, line 6 (in machine)" in line
    assert "AttributeError: 'Protocol' object has no attribute 'commit'" in line
    assert "RegisterKnobs.of(protocol).KNOB (its knobs: write)" in line and "docs/adding-a-family.md" in line


def test_a_knob_the_family_does_not_declare_is_named(cli, tmp_path):
    path = _family_module(tmp_path, "knob_attribute")
    line = _one_line(_fuzz(cli, tmp_path, path.stem, "--seeds", "5", "--workers", "1"))
    assert f"{path}, line 6 (in machine)" in line and "RegisterKnobs has no knob 'commit' (its knobs: write" in line


def test_an_error_a_library_raises_for_the_family_is_the_familys(cli, tmp_path):
    """int('A') fails in the standard library, called by the family: the family's line is named."""
    path = _family_module(tmp_path, "library_call")
    line = _one_line(_fuzz(cli, tmp_path, path.stem, "--seeds", "5", "--workers", "1"))
    assert f"{path}, line 6 (in " in line and "ValueError: invalid literal for int()" in line
    assert "a family keeps the contract of docs/adding-a-family.md" in line


def test_an_error_in_fencesims_own_code_stays_an_internal_error(cli, tmp_path):
    """With a user's family registered, an error raised in fencesim (here planted in the shipped workspace
    family's replay) is still a bug in fencesim: exit 3 and its traceback."""
    prelude = ("import operator\nfrom sim.families.workspace.family import WorkspaceFamily\n"
               "WorkspaceFamily.replay = lambda self, *args, **kwargs: operator.truediv(1, 0)")
    path = _family_module(tmp_path, "protocol_attribute")
    workload = Path(__file__).resolve().parents[2] / "scenarios" / "workloads"
    first = sorted(p for p in workload.glob("*.toml") if "family" not in p.read_text() or
                   'family = "workspace"' in p.read_text())[0]
    env = {"FENCESIM_FAMILIES": f"{path.stem}:FAMILY",
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(HERE), os.environ.get("PYTHONPATH", "")])}
    done = cli("fuzz", "--workload", first, "-p", "fence=none", "--seeds", "2", "--workers", "1",
               "--out", tmp_path / "out", env_extra=env, prelude=prelude)
    assert done.returncode == 3, done.stderr[-3000:]
    assert "Traceback" in done.stderr and "ZeroDivisionError" in done.stderr
    assert "internal error: this is a bug in fencesim" in done.stderr and "family 'register'" not in done.stderr


def test_the_blame_reads_only_the_innermost_frame_that_is_fencesims_or_the_familys():
    """In-process: no user family registered, nothing is blamed on one."""
    from sim.cli.blame import family_fault

    try:
        int("x")
    except ValueError as error:
        assert family_fault(error) is None
    assert sys.modules["sim.cli.blame"].CONTRACT_DOC == "docs/adding-a-family.md"
