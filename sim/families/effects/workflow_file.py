"""A user's workflow written as data: a list of transition tables, and the version 2 they upgrade to.

::

    workflow = [
      { name = "create_branch", class = "keyed_creation", object = "branch", compensation = "delete_branch" },
      { name = "run_ci", class = "idempotent", object = "ci_run", timeout_s = 600 },
      { name = "post_slack", class = "irreversible", object = "announcement", keys = false, reconcile_by = "none" },
    ]

    [versions.2]
    workflow = ["create_branch -> make_branch", { name = "verify_ci", class = "idempotent", object = "check" },
                "run_ci", "post_slack"]

A table names one transition; a string item in ``workflow`` names a transition of the seed's saga.  In
``[versions.2]`` a string keeps a version-1 transition (``"run_ci"``) or renames it (``"old -> new"``: the
same logical step under a new name, with everything it declares), and a table inserts a new transition (a
check).  Every mistake is a :class:`~sim.core.errors.ScenarioError` naming the file and the line of the
item, what is wrong and what is allowed.
"""

from __future__ import annotations

import math
import re
from typing import Any

from sim.core.errors import ScenarioError
from sim.core.values import kind, shown
from sim.core.workload import did_you_mean
from sim.families.effects.workflow import (
    EFFECT_CLASSES,
    MAX_TRANSITIONS,
    RECONCILE_BY,
    SAGA_TRANSITIONS,
    Transition,
    Workflow,
    version_2,
)

#: The fields of a transition table, in the order they are written back.
FIELDS = ("name", "class", "object", "compensation", "keys", "reconcile_by", "approval", "timeout_s",
          "postcondition")
#: The longest timeout class a transition may declare (a day of simulated time; a limit on everything).
MAX_TIMEOUT_S = 86_400.0
#: Versions a scenario may declare: the model upgrades from version 1 to 2.
DECLARABLE_VERSIONS = ("2",)
VERSION_KEYS = ("workflow",)
_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,200}$")
_KIND = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_RENAME = re.compile(r"^\s*(\S+)\s*->\s*(\S+)\s*$")
#: Object kinds by class when a table names none.
DEFAULT_OBJECT = "object"


class _Locator:
    """Lines of the items of one list in a file (the n-th item naming X is on the n-th line naming X)."""

    def __init__(self, where, after: str | None):
        self.source = None if isinstance(where, str) else where
        self.fallback = where if isinstance(where, str) else where.where(after or "workflow")
        self.lines = self.source.text.splitlines() if self.source is not None and self.source.text else []
        self.first = 0
        if after is not None:
            pattern = re.compile(after)
            for number, line in enumerate(self.lines):
                if pattern.search(line):
                    self.first = number
                    break
        self.seen: dict[str, int] = {}

    def item(self, name: Any, position: int | None = None) -> int | None:
        """The line (0-based) of the next item that names ``name`` (a table ``name = "X"`` or a string); for an
        item without a name, the line of the ``position``-th table of the list."""
        if not isinstance(name, str) or not self.lines:
            return self._table_line(position)
        needle = re.compile(r"""(name\s*=\s*["']""" + re.escape(name) + r"""["'])|(["']""" + re.escape(name)
                            + r"""(\s*->[^"']*)?["'])""")
        wanted = self.seen.get(name, 0)
        found = 0
        for number in range(self.first, len(self.lines)):
            if needle.search(self.lines[number]):
                if found == wanted:
                    self.seen[name] = wanted + 1
                    return number
                found += 1
        return None

    def _table_line(self, position: int | None) -> int | None:
        if position is None or not self.lines:
            return None
        starts = [n for n in range(self.first, len(self.lines))
                  if re.search(r"\{|^\s*\[\[", self.lines[n]) and "\\" not in self.lines[n]]
        return starts[position] if position < len(starts) else None

    def error(self, message: str, line: int | None, key: str | None = None) -> ScenarioError:
        if line is None or self.source is None:
            return ScenarioError(message, self.fallback)
        if key is not None:  # the line of the key inside the item, when the item spans several lines
            for number in range(line, min(line + len(FIELDS) + 2, len(self.lines))):
                if re.search(r"(^|[\s{,])" + re.escape(key) + r"\s*=", self.lines[number]):
                    line = number
                    break
        return ScenarioError(message, f"{self.source.path}:{line + 1}")


def parse_tables(spec: list, where) -> Workflow:
    """Version 1 from a list of transition tables (and saga names)."""
    locator = _Locator(where, r"^\s*(workflow\s*=|\[\[workflow\]\])")
    transitions = _transitions(spec, locator, "workflow", {})
    return Workflow("declared", 1, tuple(transitions), spec=spec)


def _transitions(spec: list, locator: _Locator, what: str, known: dict[str, Transition]) -> list[Transition]:
    if not spec:
        raise locator.error(f"{what} must list at least one transition", None)
    if len(spec) > MAX_TRANSITIONS:
        raise locator.error(f"{what} lists {len(spec)} transitions; at most {MAX_TRANSITIONS}", None)
    out: list[Transition] = []
    for position, item in enumerate(spec):
        if isinstance(item, dict):
            line = locator.item(item.get("name"), sum(isinstance(i, dict) for i in spec[:position]))
            transition = _table(item, locator, line, what)
        elif isinstance(item, str):
            line = locator.item(item)
            transition = _saga_name(item, locator, line, what)
        else:
            raise locator.error(f"an item of {what} must be a table {{ name = ..., class = ... }} or a transition "
                                f"name, not {kind(item)} {shown(item)}", None)
        if any(t.name == transition.name for t in out):
            raise locator.error(f"transition {transition.name!r} is listed twice in {what}; each transition "
                                "is named once", line)
        out.append(transition)
    return out


def _saga_name(name: str, locator: _Locator, line: int | None, what: str) -> Transition:
    known = {t.name: t for t in SAGA_TRANSITIONS}
    if name not in known:
        raise locator.error(f"unknown transition {shown(name)}{did_you_mean(name, known)} in {what}: a name alone "
                            f"means a transition of the seed's saga ({', '.join(known)}); describe your own as a "
                            "table { name = \"...\", class = \"...\", object = \"...\" }", line)
    return known[name]


def _table(item: dict, locator: _Locator, line: int | None, what: str) -> Transition:
    """One transition table, every field checked."""
    for key in item:
        if key not in FIELDS:
            raise locator.error(f"unknown field {shown(key)}{did_you_mean(key, FIELDS)} in a transition of {what}; "
                                f"fields: {', '.join(FIELDS)}", line, key if isinstance(key, str) else None)
    name = item.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise locator.error(f"a transition of {what} needs a name: letters, digits, _ . - (at most 200), not "
                            f"{_what(name)}", line, "name")
    label = f"transition {name!r}"
    effect_class = item.get("class")
    if effect_class is None:
        raise locator.error(f"{label} needs a class: one of {', '.join(EFFECT_CLASSES)}", line)
    if not isinstance(effect_class, str) or effect_class not in EFFECT_CLASSES:
        raise locator.error(f"{label}: unknown class {shown(effect_class)}{did_you_mean(effect_class, EFFECT_CLASSES)}"
                            f"; classes: {', '.join(EFFECT_CLASSES)}", line, "class")
    object_kind = item.get("object", DEFAULT_OBJECT)
    if not isinstance(object_kind, str) or not _KIND.match(object_kind):
        raise locator.error(f"{label}: object must be a lower-case name such as \"pull_request\" (letters, digits "
                            f"and _), not {_what(object_kind)}", line, "object")
    compensation = item.get("compensation")
    if compensation is not None:
        if not isinstance(compensation, str) or not _NAME.match(compensation):
            raise locator.error(f"{label}: compensation must be the name of the compensating action, not "
                                f"{_what(compensation)}", line, "compensation")
        if effect_class == "irreversible":
            raise locator.error(f"{label} is irreversible: it has no honest inverse, so it takes no compensation "
                                "(protect it with approval and reconciliation instead; a step that can be undone "
                                "is a keyed_creation or an append)", line, "compensation")
        if effect_class == "read":
            raise locator.error(f"{label} is a read: it creates nothing, so there is nothing to compensate", line,
                                "compensation")
    keys = _flag(item, "keys", label, locator, line)
    if keys is True and effect_class == "read":
        raise locator.error(f"{label} is a read: a read creates nothing, so no idempotency key can deduplicate it "
                            "(write keys = false or leave it out)", line, "keys")
    reconcile_by = item.get("reconcile_by")
    if reconcile_by is not None:
        if not isinstance(reconcile_by, str) or reconcile_by not in RECONCILE_BY:
            raise locator.error(f"{label}: reconcile_by must be one of {', '.join(RECONCILE_BY)} (what the external "
                                f"system can be queried by), not {_what(reconcile_by)}"
                                f"{did_you_mean(reconcile_by, RECONCILE_BY)}", line, "reconcile_by")
        if effect_class == "read":
            raise locator.error(f"{label} is a read: a read is repeated, never reconciled, so it takes no "
                                "reconcile_by", line, "reconcile_by")
    approval = _flag(item, "approval", label, locator, line)
    timeout_s = item.get("timeout_s")
    if timeout_s is not None:
        if (not isinstance(timeout_s, (int, float)) or isinstance(timeout_s, bool) or not math.isfinite(timeout_s)
                or not 0 < timeout_s <= MAX_TIMEOUT_S):
            raise locator.error(f"{label}: timeout_s must be a number of seconds above 0 and at most "
                                f"{MAX_TIMEOUT_S:,.0f}, not {_what(timeout_s)}", line, "timeout_s")
        timeout_s = float(timeout_s)
    postcondition = _flag(item, "postcondition", label, locator, line)
    return Transition(name, effect_class, object_kind, compensation, name, keys, reconcile_by, approval, timeout_s,
                      bool(postcondition))


def _flag(item: dict, key: str, label: str, locator: _Locator, line: int | None) -> bool | None:
    value = item.get(key)
    if value is not None and not isinstance(value, bool):
        raise locator.error(f"{label}: {key} must be true or false, not {_what(value)}", line, key)
    return value


def _what(value: Any) -> str:
    return "none given" if value is None else f"{kind(value)} {shown(value)}"


# -- versions ---------------------------------------------------------------------------------------

def parse_versions(raw: Any, workflow: Workflow, source) -> Workflow:
    """``workflow`` with the version 2 that ``[versions.2]`` declares (``raw``: the ``versions`` table)."""
    where = source.where("versions") if hasattr(source, "where") else source
    if not isinstance(raw, dict) or not raw:
        raise ScenarioError(f"versions must be a table of versions ([versions.2]), not {_what(raw)}", where)
    for number in raw:
        if number not in DECLARABLE_VERSIONS:
            raise ScenarioError(f"versions: only version 2 can be declared ([versions.2]: the model upgrades "
                                f"version 1 to 2), not {shown(number)}", where)
    table = raw["2"]
    header = r"^\s*\[versions\.(2|\"2\"|'2')\]|versions\s*="
    locator = _Locator(source, header)
    return _version_2(table, workflow, locator)


def _version_2(table: Any, workflow: Workflow, locator: _Locator) -> Workflow:
    """The ``[versions.2]`` table checked against version 1."""
    if not isinstance(table, dict):
        raise locator.error(f"[versions.2] must be a table with a workflow list, not {_what(table)}", None)
    for key in table:
        if key not in VERSION_KEYS:
            raise locator.error(f"unknown key {shown(key)} in [versions.2]{did_you_mean(key, VERSION_KEYS)}; keys: "
                                f"{', '.join(VERSION_KEYS)}", None)
    items = table.get("workflow")
    if not isinstance(items, list) or not items:
        raise locator.error("[versions.2] needs workflow = [...]: version 1's transitions kept (\"name\") or "
                            "renamed (\"old -> new\"), and tables for the checks it inserts", None)
    if len(items) > MAX_TRANSITIONS:
        raise locator.error(f"[versions.2] lists {len(items)} transitions; at most {MAX_TRANSITIONS}", None)
    old = {t.name: t for t in workflow.transitions}
    transitions: list[Transition] = []
    renamed: list[tuple[str, str]] = []
    inserted: list[str] = []
    kept: set[str] = set()
    for item in items:
        if isinstance(item, dict):
            line = locator.item(item.get("name"))
            transition = _table(item, locator, line, "[versions.2]")
            if transition.name in old:
                raise locator.error(f"[versions.2] inserts {transition.name!r}, which version 1 already has; keep it "
                                    f"as \"{transition.name}\" or give the new transition another name", line)
            inserted.append(transition.name)
        elif isinstance(item, str):
            match = _RENAME.match(item)
            source_name, new_name = (match.group(1), match.group(2)) if match else (item, item)
            line = locator.item(source_name)
            if source_name not in old:
                raise locator.error(f"[versions.2] names {shown(source_name)}, which is not a transition of version 1"
                                    f"{did_you_mean(source_name, old)}; version 1: {', '.join(old)} (insert a new "
                                    "transition as a table)", line)
            if source_name in kept:
                raise locator.error(f"[versions.2] names version 1's {source_name!r} twice; each is kept or renamed "
                                    "once", line)
            kept.add(source_name)
            if new_name != source_name:
                if not _NAME.match(new_name):
                    raise locator.error(f"[versions.2] renames {source_name!r} to {shown(new_name)}: a name is "
                                        "letters, digits, _ . -", line)
                if new_name in old:
                    raise locator.error(f"[versions.2] renames {source_name!r} to {new_name!r}, which is another "
                                        "transition of version 1; a rename takes a new name", line)
                renamed.append((source_name, new_name))
                transition = old[source_name].renamed_to(new_name)
            else:
                transition = old[source_name]
        else:
            raise locator.error(f"an item of [versions.2] workflow is a transition name, \"old -> new\" or a table, "
                                f"not {_what(item)}", None)
        if any(t.name == transition.name for t in transitions):
            raise locator.error(f"transition {transition.name!r} is listed twice in [versions.2]", line)
        transitions.append(transition)
    missing = [name for name in old if name not in kept]
    if missing:
        raise locator.error(f"[versions.2] drops {', '.join(missing)}: version 2 keeps every transition of version 1 "
                            "(\"name\") or renames it (\"old -> new\"), so a task mid-way keeps its logical steps",
                            None)
    upgraded = Workflow(workflow.name, 2, tuple(transitions), tuple(renamed), tuple(inserted), spec=table)
    return Workflow(workflow.name, workflow.version, workflow.transitions, workflow.renamed, workflow.inserted,
                    upgraded, spec=workflow.spec)


def check_builtin_upgrade(workflow: Workflow, where) -> None:
    """Refuse a workflow whose built-in version 2 would collide with one of its own names."""
    if workflow.declared_upgrade is not None:
        return
    upgraded = version_2(workflow)
    names = upgraded.names()
    if len(set(names)) != len(names):
        clash = next(n for n in names if names.count(n) > 1)
        line = where if isinstance(where, str) else where.where("workflow")
        raise ScenarioError(f"the built-in version 2 of this workflow would name two transitions {clash!r}; declare "
                            "its upgrade yourself in [versions.2]", line)


def dump_transition(transition: Transition) -> dict[str, Any]:
    """A transition as a table (only what it declares)."""
    out: dict[str, Any] = {"name": transition.name, "class": transition.effect_class, "object": transition.object_kind}
    if transition.compensation is not None:
        out["compensation"] = transition.compensation
    for key in ("keys", "reconcile_by", "approval", "timeout_s"):
        value = getattr(transition, key)
        if value is not None:
            out[key] = value
    if transition.postcondition:
        out["postcondition"] = True
    return out
