"""The layering of sim/ holds: import-linter's contracts (pyproject.toml) all pass."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept():
    """lint-imports reports every contract kept and none broken."""
    linter = Path(sys.executable).with_name("lint-imports")
    if not linter.exists():
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    done = subprocess.run([str(linter)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"Contracts: (\d+) kept, 0 broken", done.stdout)


def test_no_family_name_is_switched_on_outside_the_registry():
    """No module outside the families compares a family name with a string literal."""
    pattern = re.compile(r"""family\s*[!=]=\s*["']|["'](workspace|runtime|effects)["']\s*[!=]=\s*\w*family""")
    offenders = []
    for path in (REPO / "sim").rglob("*.py"):
        if "families" in path.parts:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line):
                offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert offenders == []


def test_the_repository_stands_alone():
    """No file of the package, docs or README points at a document outside the repository."""
    offenders = []
    for path in [REPO / "README.md", *(REPO / "docs").rglob("*.md"), *(REPO / "sim").rglob("*.py")]:
        text = path.read_text()
        if re.search(r"\.\./shared|DESIGN(\.md| section)", text):
            offenders.append(str(path.relative_to(REPO)))
    assert offenders == []
