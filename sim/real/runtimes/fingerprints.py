"""A fingerprint difference between the model and a real run, explained: which transition, which of its
arguments the real requests lack, and the likely cause.

Both sides fingerprint a transition's canonical arguments -- the task marker, the logical transition and the
head, updated with the workload's ``[arguments.T]`` -- as sha256 of sorted compact JSON (12 hex digits).  A
fingerprint is a hash, so which arguments differ is found by trying the model's arguments with some of the
workload's left out (or set back to their defaults): the smallest such set whose fingerprint is the real one's
names the arguments that never reached the real requests.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any, Mapping

from sim.core.values import JsonObject
from sim.real.runtimes.worker_kit.config import default_head, fingerprint_of

#: The rule a worker breaks when its requests lack the workload's arguments, in the docs' words.
RULE = ("a request's `arguments` are the task marker, the logical transition and the head, updated with the start "
        "request's `arguments` for its transition")
#: Where the docs give it.
ARGUMENTS_RULE = f'docs/real-runtimes.md, "The worker protocol": {RULE}'

#: Arguments of one transition tried left out in every combination up to this many (2**N fingerprints).
MAX_TRIED = 10


def model_arguments(task: str, logical: str, given: Mapping[str, Any]) -> JsonObject:
    """A transition's canonical arguments, as the model and a worker that keeps the rule build them."""
    return {"task": task, "transition": logical, "head": default_head(task), **given}


def lacking(task: str, logical: str, given: Mapping[str, Any], real: str) -> tuple[str, ...] | None:
    """The fewest of ``given``'s arguments whose absence gives the ``real`` fingerprint (None: no such set)."""
    defaults = model_arguments(task, logical, {})
    names = sorted(given)
    sizes = range(1, len(names) + 1) if len(names) <= MAX_TRIED else [len(names)]
    for size in sizes:
        for dropped in combinations(names, size):
            kept = {k: v for k, v in given.items() if k not in dropped}
            if fingerprint_of({**defaults, **kept}) == real:
                return dropped
    return None


def explain(model: Mapping[str, list[str]], real: Mapping[str, list[str]], task: str | None,
            arguments: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per transition whose fingerprints differ: both fingerprints, and what the difference shows."""
    lines = []
    for logical in sorted(set(model) | set(real)):
        ours, theirs = list(model.get(logical, [])), list(real.get(logical, []))
        if ours == theirs:
            continue
        line = (f"fingerprints of {logical}: model {', '.join(ours) or 'none'} / real "
                f"{', '.join(theirs) or 'none'}")
        if ours and theirs and task is not None:
            line += " -- " + cause(task, logical, dict(arguments.get(logical, {})), set(theirs) - set(ours))
        lines.append(line)
    return lines


def cause(task: str, logical: str, given: JsonObject, unexplained: set[str]) -> str:
    """Why the real fingerprints of ``logical`` are not the model's, as far as the hashes show."""
    found = [lacking(task, logical, given, fingerprint) for fingerprint in sorted(unexplained)]
    missing = sorted({name for names in found if names for name in names})
    if missing and all(names is not None for names in found):
        named = ", ".join(f"{name} = {given[name]!r}" for name in missing)
        what = f"carry none of [arguments.{logical}] ({named})" if len(missing) == len(given) else \
            f"lack [arguments.{logical}] {named}"
        return (f"the real requests {what}: likely a worker that ignores the start request's `arguments` "
                f"({ARGUMENTS_RULE})")
    expected = ", ".join(f"{k} = {v!r}" for k, v in sorted(model_arguments(task, logical, given).items()))
    return (f"the real requests' arguments are not the model's ({expected}), or the worker hashes them "
            f"otherwise (sha256 of sorted compact JSON, 12 hex digits; {ARGUMENTS_RULE})")
