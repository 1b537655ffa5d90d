"""Rooms of one concern: no file in sim/ over MAX_FILE_LINES lines, no class over MAX_CLASS_LINES, and no import
circle between sim's modules (a longer file or class, or a circle, is split along its concerns)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SIM = REPO / "sim"
MAX_FILE_LINES = 500
MAX_CLASS_LINES = 300


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(SIM.rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def test_no_file_in_sim_is_over_500_lines():
    """Every module of sim/ holds one concern, in at most MAX_FILE_LINES lines."""
    long = {str(p.relative_to(REPO)): n for p in SIM.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_FILE_LINES}
    assert long == {}


def test_no_class_in_sim_is_over_300_lines():
    """No class of sim/ spans more than MAX_CLASS_LINES lines (its def to its last line)."""
    long = {}
    for path in SIM.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and (node.end_lineno or 0) - node.lineno + 1 > MAX_CLASS_LINES:
                long[f"{path.relative_to(REPO)}::{node.name}"] = (node.end_lineno or 0) - node.lineno + 1
    assert long == {}


def _imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The sim modules a module imports at its top level or in its functions (TYPE_CHECKING blocks too)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return {m for m in found if m in known and m != name}


def test_no_import_circle_between_sim_modules():
    """The modules of sim/ import each other without a circle (no module reaches itself through imports)."""
    modules = _modules()
    known = set(modules)
    graph = {name: _imports(path, name, known) for name, path in modules.items()}
    # a package's __init__ importing its own submodules is a face, not a circle
    graph = {name: {m for m in deps if not m.startswith(name + ".")} for name, deps in graph.items()}
    state: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                circles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name)
    assert circles == []


def test_no_effects_class_is_built_from_mixins():
    """The effects family's runtime is one state class whose operations are functions of it, one module per
    concern: no class of sim/families/effects/ inherits from more than one class (mixins sharing ``self``)."""
    mixed = {}
    for path in (SIM / "families" / "effects").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and len(node.bases) > 1:
                mixed[f"{path.relative_to(REPO)}::{node.name}"] = [ast.unparse(b) for b in node.bases]
    assert mixed == {}
