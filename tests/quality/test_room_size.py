"""The effects family and the real side keep to rooms of one concern: no module over MAX_MODULE_LINES lines
and no class over MAX_CLASS_LINES lines."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MAX_MODULE_LINES = 500
MAX_CLASS_LINES = 300
ROOMS = (REPO / "sim" / "families" / "effects", REPO / "sim" / "real")


def oversized(root: Path) -> list[str]:
    """Every module and class under ``root`` over its limit, as "path: N lines" or "path::Class: N lines"."""
    found = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(root.parent).as_posix()
        if text.count("\n") > MAX_MODULE_LINES:
            found.append(f"{where}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text, where)):
            if isinstance(node, ast.ClassDef) and (node.end_lineno or 0) - node.lineno + 1 > MAX_CLASS_LINES:
                found.append(f"{where}::{node.name}: {(node.end_lineno or 0) - node.lineno + 1} lines")
    return found


def test_no_module_or_class_of_the_effects_family_or_the_real_side_is_oversized():
    """Every module of sim/families/effects and sim/real is at most 500 lines, every class at most 300."""
    assert [line for root in ROOMS for line in oversized(root)] == []


def test_the_size_check_finds_an_oversized_module(tmp_path):
    """A planted module of 501 lines and a planted class of 301 lines are both reported."""
    planted = tmp_path / "big.py"
    planted.write_text("class Big:\n" + "    x = 1\n" * 300 + "\n" * 200, encoding="utf-8")
    assert oversized(tmp_path) == [f"{tmp_path.name}/big.py: 501 lines", f"{tmp_path.name}/big.py::Big: 301 lines"]
