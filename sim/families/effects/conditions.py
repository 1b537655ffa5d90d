"""Conditions on a transition's arguments: ``approval = "amount_cents > 10000"``.

A condition is one comparison of a named argument with a number: ``NAME OP NUMBER``, ``OP`` one of
``> >= < <= == !=``.  It is parsed by a regular expression, never evaluated as code (no ``eval``): the
argument is looked up in the transition's durable arguments (``[arguments.T]`` of the scenario) and
compared as a number.  An argument that is absent or not a number makes the condition *hold*: an approval
gate that cannot read what it guards on must ask a human (the safe side), and the history says so.
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

#: ``NAME OP NUMBER``; NAME an argument's name, NUMBER a decimal (sign and fraction allowed).
PATTERN = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]{0,63})\s*(>=|<=|==|!=|>|<)\s*(-?[0-9]{1,18}(?:\.[0-9]{1,9})?)\s*$")
OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne,
}
#: What the docs and errors show as the form of a condition.
FORM = '"ARGUMENT OP NUMBER" (OP one of > >= < <= == !=), e.g. "amount_cents > 10000"'


@dataclass(frozen=True)
class Condition:
    """One comparison of an argument with a number."""

    argument: str
    op: str
    number: float

    def holds(self, arguments: Mapping[str, Any]) -> bool:
        """Whether the condition holds for these arguments (an absent or non-numeric argument: it holds)."""
        value = arguments.get(self.argument)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return True
        return OPERATORS[self.op](float(value), self.number)

    def __str__(self) -> str:
        number = int(self.number) if self.number == int(self.number) else self.number
        return f"{self.argument} {self.op} {number}"


def parse(text: str) -> Condition | None:
    """The condition ``text`` writes, or None when it is not one."""
    match = PATTERN.match(text) if isinstance(text, str) else None
    if match is None:
        return None
    return Condition(match.group(1), match.group(2), float(match.group(3)))


def gate_holds(value: bool | str | None, default: bool, arguments: Mapping[str, Any]) -> bool:
    """Whether a gate field (``true``, ``false`` or a condition) is on for these arguments (None: ``default``)."""
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    condition = parse(value)
    return True if condition is None else condition.holds(arguments)
