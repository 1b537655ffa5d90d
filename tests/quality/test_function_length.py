"""No function in sim/ is longer than MAX_FUNCTION_LINES lines (from its ``def`` line to its last line,
decorators not counted): a longer one is split into named steps."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MAX_FUNCTION_LINES = 70
#: Functions allowed over the limit for now, as "path::qualified name".
KNOWN_LONG: set[str] = set()


def _visit(node: ast.AST, prefix: str, where: str, limit: int, found: dict[str, int]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = f"{prefix}{child.name}"
            if not isinstance(child, ast.ClassDef):
                length = (child.end_lineno or child.lineno) - child.lineno + 1
                if length > limit:
                    found[f"{where}::{name}"] = length
            _visit(child, f"{name}.", where, limit, found)
        else:
            _visit(child, prefix, where, limit, found)


def long_functions(root: Path, limit: int = MAX_FUNCTION_LINES) -> dict[str, int]:
    """Every function (methods and nested functions included) under ``root`` longer than ``limit`` lines:
    "path::qualified name" -> its length."""
    found: dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        _visit(tree, "", path.relative_to(root.parent).as_posix(), limit, found)
    return found


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_no_function_in_sim_is_longer_than_the_limit():
    """Lists every function over the limit (with its length), not just the first."""
    over = {name: length for name, length in long_functions(REPO / "sim").items() if name not in KNOWN_LONG}
    assert not over, f"functions over {MAX_FUNCTION_LINES} lines: " + ", ".join(
        f"{name} ({length})" for name, length in sorted(over.items()))


def test_the_length_check_sees_a_long_function(tmp_path):
    """The check finds a function of limit + 1 lines, a nested one and a method, and not one at the limit."""
    package = tmp_path / "pkg"
    package.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES - 1))
    longer = body + "\n    x_last = 0"
    (package / "a.py").write_text(
        f"def at_limit():\n{body}\n\n\n"
        f"def over():\n{longer}\n\n\n"
        "class C:\n    def method(self):\n" + "\n".join("    " + line for line in longer.splitlines()) + "\n\n\n"
        "def outer():\n    def inner():\n" + "\n".join("    " + line for line in longer.splitlines()) + "\n"
        "    return inner\n",
        encoding="utf-8")
    found = long_functions(package)
    assert found == {"pkg/a.py::over": MAX_FUNCTION_LINES + 1, "pkg/a.py::C.method": MAX_FUNCTION_LINES + 1,
                     "pkg/a.py::outer.inner": MAX_FUNCTION_LINES + 1, "pkg/a.py::outer": MAX_FUNCTION_LINES + 3}


def test_the_known_long_functions_are_still_long():
    """An exception that no longer applies is dropped from KNOWN_LONG (so the list only shrinks)."""
    found = long_functions(REPO / "sim")
    assert KNOWN_LONG <= set(found), sorted(KNOWN_LONG - set(found))
