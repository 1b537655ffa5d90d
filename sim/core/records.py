"""Typed values that are JSON documents: a frozen dataclass is its own schema.

A :class:`Record` is a frozen dataclass whose fields are written, in the order they are declared, as the keys
of one JSON object (:meth:`Record.to_json`) and read back from one (:meth:`Record.from_json`), each value by its
declared type: ``str``, ``int``, ``float``, ``bool``, ``None`` and unions of them, ``tuple[X, ...]`` (a list),
``tuple[X, Y]`` (a list of two), ``dict[str, X]``, another record, or
:data:`~sim.core.values.JsonValue` / :data:`~sim.core.values.JsonObject` (an open document, kept as read).
A field declared with :func:`optional` is left out of the object while it is None, and read as None when its
key is absent; ``optional(with_="other")`` leaves it out while the field ``other`` is None (keys written
together).  :func:`json_field` names a key that differs from the field's name (``from``).

Reading refuses whatever does not fit -- a key missing where the field has no default, a key the record does
not know, a value of another type -- with one :class:`~sim.core.errors.InputError` that says where
(``designs[1].protocols[0].runs: must be an integer, not a string``), never a ``KeyError``.  Writing and
reading are each other's inverse: ``type(r).from_json(r.to_json()) == r``.

Documents whose shape stays open are read with the ``json_*`` helpers below: each narrows a
:data:`~sim.core.values.JsonValue` to what the reader needs, or gives its default.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import types
import typing
from typing import Any, Self

from sim.core.errors import InputError
from sim.core.values import JsonObject, JsonValue

#: ``omit`` of a field left out while it is None itself.
_SELF = "\x00self"


class Record:
    """Base of the frozen dataclasses written to and read from JSON (see the module docstring)."""

    __slots__ = ()

    def to_json(self) -> JsonObject:
        """The record as one JSON object: its fields in declared order (an optional field that is None left
        out), each value written by its type."""
        out: JsonObject = {}
        for spec in _specs(type(self)):
            if spec.omit is not None and getattr(self, spec.name if spec.omit == _SELF else spec.omit) is None:
                continue
            out[spec.key] = written(getattr(self, spec.name))
        return out

    @classmethod
    def from_json(cls, value: JsonValue, where: str = "") -> Self:
        """The record a JSON object holds; an :class:`InputError` naming ``where`` (its place in the document)
        for anything that does not fit."""
        place = where or "the document"
        if not isinstance(value, dict):
            raise InputError(f"{place}: must be an object, not {json_kind(value)}")
        specs = _specs(cls)
        known = [spec.key for spec in specs]
        for name in value:
            if name not in known:
                raise InputError(f"{place}: unknown key {name!r}; keys: {', '.join(known)}")
        arguments: dict[str, Any] = {}
        for spec in specs:
            if spec.key in value:
                arguments[spec.name] = _read(spec.hint, value[spec.key], _at(where, spec.key))
            elif spec.required:
                raise InputError(f"{place}: missing key {spec.key!r}")
        return cls(**arguments)


def optional(*, with_: str | None = None, key: str | None = None) -> Any:
    """A field that may be absent: None by default, left out of the JSON object while it (or ``with_``) is None."""
    return dataclasses.field(default=None, metadata={"omit": with_ or _SELF, **({"key": key} if key else {})})


def json_field(key: str, **options: Any) -> Any:
    """A field whose JSON key is ``key`` (``options``: a default, as :func:`dataclasses.field` takes)."""
    return dataclasses.field(metadata={"key": key}, **options)


@dataclasses.dataclass(frozen=True, slots=True)
class _Spec:
    name: str
    key: str
    hint: Any
    omit: str | None
    required: bool


_SPECS: dict[type, tuple[_Spec, ...]] = {}


def _specs(cls: type) -> tuple[_Spec, ...]:
    """Each field of a record class: its name, key, declared type (evaluated where the class is defined, so
    :data:`JsonValue` stays itself), whether it may be left out and whether it must be given."""
    found = _SPECS.get(cls)
    if found is None:
        names = vars(sys.modules[cls.__module__])
        found = tuple(_Spec(f.name, f.metadata.get("key", f.name),
                            eval(f.type, names) if isinstance(f.type, str) else f.type,
                            f.metadata.get("omit"),
                            f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
                      for f in dataclasses.fields(cls))
        _SPECS[cls] = found
    return found


def written(value: Any) -> JsonValue:
    """A field's value as JSON: a record by its own ``to_json``, a tuple as a list, containers copied."""
    if isinstance(value, Record):
        return value.to_json()
    if isinstance(value, (tuple, list)):
        return [written(item) for item in value]
    if isinstance(value, dict):
        return {str(name): written(item) for name, item in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def _at(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


_KINDS = {bool: "true/false", int: "an integer", float: "a number", str: "a string", type(None): "null"}


def json_kind(value: Any) -> str:
    """What a JSON value is, in words: ``an object``, ``a list``, ``a string``..."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return _KINDS.get(type(value), type(value).__name__)


def _wanted(hint: Any) -> str:
    """A declared type in words, for an error."""
    if hint is JsonValue:
        return "a JSON value"
    if hint is JsonObject:
        return "an object"
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        return " or ".join(_wanted(arg) for arg in typing.get_args(hint))
    if origin in (tuple, list):
        return "a list"
    if origin is dict or (isinstance(hint, type) and issubclass(hint, Record)):
        return "an object"
    return _KINDS.get(hint, getattr(hint, "__name__", str(hint)))


def _read(hint: Any, value: JsonValue, where: str) -> Any:
    """``value`` read as ``hint`` (see the module docstring), or an :class:`InputError` at ``where``."""
    if hint is JsonObject:
        hint = dict[str, JsonValue]
    if hint is JsonValue:
        problem = json_problem(value)
        if problem:
            raise InputError(f"{where}: {problem}")
        return value
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        args = typing.get_args(hint)
        if value is None and type(None) in args:
            return None
        others = [arg for arg in args if arg is not type(None)]
        if len(others) == 1:  # X or null: X's own error, which says where inside it
            return _read(others[0], value, where)
        for arg in others:
            try:
                return _read(arg, value, where)
            except InputError:
                continue
        raise InputError(f"{where}: must be {_wanted(hint)}, not {json_kind(value)}")
    if origin in (tuple, list):
        if not isinstance(value, list):
            raise InputError(f"{where}: must be a list, not {json_kind(value)}")
        args = typing.get_args(hint)
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            if len(value) != len(args):
                raise InputError(f"{where}: must be a list of {len(args)}, not of {len(value)}")
            return tuple(_read(arg, item, f"{where}[{i}]") for i, (arg, item) in enumerate(zip(args, value)))
        items = [_read(args[0], item, f"{where}[{i}]") for i, item in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        if not isinstance(value, dict):
            raise InputError(f"{where}: must be an object, not {json_kind(value)}")
        item_hint = typing.get_args(hint)[1]
        return {name: _read(item_hint, item, _at(where, name)) for name, item in value.items()}
    if isinstance(hint, type) and issubclass(hint, Record):
        return hint.from_json(value, where)
    if hint is type(None) or hint is None:
        if value is None:
            return None
    elif hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value  # an integer stays one: written back as it was read
    elif hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif hint in (bool, str):
        if isinstance(value, hint):
            return value
    elif hint is Any:
        return value
    else:
        raise TypeError(f"a record field of type {hint!r} cannot be read from JSON")
    raise InputError(f"{where}: must be {_wanted(hint)}, not {json_kind(value)}")


#: Deepest nesting of an open document read back (a limit on everything).
MAX_JSON_DEPTH = 64


def json_problem(value: Any, depth: int = 0) -> str | None:
    """What keeps ``value`` from being a :data:`JsonValue` (objects with string keys, lists, strings, numbers,
    true/false, null; at most MAX_JSON_DEPTH deep), or None."""
    if depth > MAX_JSON_DEPTH:
        return f"nested more than {MAX_JSON_DEPTH} deep"
    if value is None or isinstance(value, (bool, int, str)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) or math.isnan(value) else f"{value} is not a number JSON holds"
    if isinstance(value, list):
        return next((p for item in value for p in [json_problem(item, depth + 1)] if p), None)
    if isinstance(value, dict):
        if not all(isinstance(name, str) for name in value):
            return "an object's keys must be strings"
        return next((p for item in value.values() for p in [json_problem(item, depth + 1)] if p), None)
    return f"{type(value).__name__} is not a JSON value"


def json_object(value: JsonValue) -> JsonObject:
    """``value`` when it is an object, else an empty one."""
    return value if isinstance(value, dict) else {}


def json_objects(value: JsonValue) -> list[JsonObject]:
    """The objects of a list (anything else in it, or a value that is no list, gives none)."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def json_text(value: JsonValue, default: str = "") -> str:
    """``value`` when it is a string, else ``default``."""
    return value if isinstance(value, str) else default


def json_texts(value: JsonValue) -> list[str]:
    """The strings of a list (anything else gives none)."""
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def json_int(value: JsonValue) -> int | None:
    """``value`` when it is an integer (not true/false), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def json_number(value: JsonValue) -> float | None:
    """``value`` when it is a number (an integer or not; not true/false), else None."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
