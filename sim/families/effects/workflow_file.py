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

import dataclasses
import re
from typing import Any, Callable

from sim.core.errors import ScenarioError
from sim.core.values import JsonObject, kind, shown
from sim.core.workload import did_you_mean
from sim.families.effects import transition_fields
from sim.families.effects.transition_fields import NAME_PATTERN, TransitionField
from sim.families.effects.workflow import (
    MAX_TRANSITIONS,
    SAGA_TRANSITIONS,
    Transition,
    Workflow,
    generic,
    saga,
    version_2,
)

#: Versions a scenario may declare: the model upgrades from version 1 to 2.
DECLARABLE_VERSIONS = ("2",)
VERSION_KEYS = ("workflow",)
_RENAME = re.compile(r"^\s*(\S+)\s*->\s*(\S+)\s*$")
#: ``error(message, key)``: the exception naming the file and the line of ``key`` in the item being read.
ErrorAt = Callable[[str, "str | None"], ScenarioError]
#: N of ``generic:N``: plain decimal digits, no more than the limit has.
_COUNT = re.compile(f"[0-9]{{1,{len(str(MAX_TRANSITIONS))}}}")


def parse_workflow(spec, where) -> Workflow:
    """A scenario's ``workflow`` value: ``"saga"``, ``"generic:N"``, a list of saga transition names, or a list
    of transition tables (``where`` is ``file:line`` text, or the file's :class:`~sim.core.files.Source`, which
    lets a table's mistake name its own line)."""
    if spec is None or spec == "saga":
        return saga()
    line = where if isinstance(where, str) else where.where("workflow")
    if isinstance(spec, str) and spec.startswith("generic:"):
        count = spec.split(":", 1)[1]
        if not _COUNT.fullmatch(count) or not 1 <= int(count) <= MAX_TRANSITIONS:
            raise ScenarioError(f"workflow {shown(spec)}: 'generic:N' needs a whole number N from 1 to "
                                f"{MAX_TRANSITIONS}", line)
        return generic(int(count))
    if isinstance(spec, list) and spec and all(isinstance(n, str) for n in spec):
        known = [t.name for t in SAGA_TRANSITIONS]
        for name in spec:
            if name not in known:
                raise ScenarioError(f"unknown transition {shown(name)}{did_you_mean(name, known)} in workflow; "
                                    f"transitions: {', '.join(known)} (or describe your own as tables: "
                                    "{ name = \"...\", class = \"...\", object = \"...\" })", line)
        if len(set(spec)) != len(spec):
            raise ScenarioError("a transition is listed twice in workflow", line)
        return saga(list(spec))
    if isinstance(spec, list) and spec and any(isinstance(item, dict) for item in spec):
        return parse_tables(spec, where)
    raise ScenarioError(
        f"workflow must be \"saga\", \"generic:N\", a list of saga transition names or a list of transition "
        f"tables, not {kind(spec)} {shown(spec)}", line
    )


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
            for number in range(line, min(line + len(transition_fields.FIELDS) + 2, len(self.lines))):
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
    """One transition table, every field checked as :data:`~sim.families.effects.transition_fields.FIELDS` says."""
    return parse_table(item, what, lambda message, key: locator.error(message, line, key))


def parse_table(item: dict, what: str, error: ErrorAt) -> Transition:
    """One transition table checked against the table of fields (``error(message, key)`` builds the exception
    to raise, naming the line of ``key`` when the item holds it).  The fields are checked in table order; a
    field a class refuses is refused right after its value is checked."""
    table = transition_fields.FIELDS
    names = [f.name for f in table]
    for key in item:
        if key not in names:
            raise error(f"unknown field {shown(key)}{did_you_mean(key, names)} in a transition of {what}; "
                        f"fields: {', '.join(names)}", key if isinstance(key, str) else None)
    label = f"transition {item.get('name')!r}"
    identity: dict[str, Any] = {}
    options: list[tuple[str, Any]] = []
    for entry in table:
        value = _field_value(entry, item, what, label, error)
        if value is None:
            continue
        if entry.attribute is not None:
            identity[entry.attribute] = value
        else:
            options.append((entry.name, value))
    return Transition(identity["name"], identity["effect_class"],
                      identity.get("object_kind", transition_fields.default("object", str)),
                      identity.get("compensation"), identity["name"], tuple(options))


def _field_value(entry: TransitionField, item: dict, what: str, label: str, error: ErrorAt) -> Any:
    """One field's value as the transition keeps it (None: not declared), or raise what is wrong."""
    value = item.get(entry.name)
    key = entry.name if entry.name in item else None
    texts = {"label": label, "where": what, "key": entry.name, "value": _what(value), "shown": shown(value),
             "values": ", ".join(entry.values), "guess": ""}
    if value is None:
        if entry.required:
            raise error((entry.missing or entry.problem).format(**texts), key)
        return entry.absent
    if not entry.check(value):
        if entry.values and isinstance(value, str):
            texts["guess"] = did_you_mean(value, entry.values)
        raise error(entry.problem.format(**texts), key)
    effect_class = str(item.get("class"))  # checked before every field that a class refuses
    for refusal in entry.refused:
        if refusal.refuses(effect_class, value):
            raise error(refusal.message.format(**texts), key)
    return entry.stored(value)


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
                if not NAME_PATTERN.match(new_name):
                    raise locator.error(f"[versions.2] renames {source_name!r} to {shown(new_name)}: a name is "
                                        "letters, digits, _ . -", line)
                if new_name in old:
                    raise locator.error(f"[versions.2] renames {source_name!r} to {new_name!r}, which is another "
                                        "transition of version 1; a rename takes a new name", line)
                renamed.append((source_name, new_name))
                transition = dataclasses.replace(old[source_name], name=new_name)
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
    return dataclasses.replace(workflow, declared_upgrade=upgraded)


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


def dump_transition(transition: Transition) -> JsonObject:
    """A transition as a table: its identity, and every option it declares (what the parser reads back)."""
    out: JsonObject = {}
    for entry in transition_fields.FIELDS:
        value = transition.declared(entry.name)
        if value is not None and (entry.required or value != entry.absent):
            out[entry.name] = value
    return out
