"""Files as named hunks, and their content hashes.

A file is a mapping hunk name -> text.  A plain string is one hunk named
``_``.  The hash of a file is sha256 over its canonical JSON (keys sorted),
shortened to 16 hex digits for readable histories; a hunk's hash is sha256
of its text, shortened the same way.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Mapping

WHOLE_FILE_HUNK = "_"
HASH_HEX_DIGITS = 16
#: Hashes are pure functions of content, and fuzzing sees the same few contents again and again.
HASH_CACHE_ENTRIES = 4096

Hunks = dict[str, str]


def file_hash(hunks: Mapping[str, str]) -> str:
    return _file_hash(tuple(sorted(hunks.items())))


#: The canonical JSON's encoder, made once (``json.dumps`` with these options builds the same one per call).
_CANONICAL = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
#: How that encoder writes one string (``ensure_ascii=False``).
_STRING = json.encoder.encode_basestring


def canonical_json(items: tuple[tuple[str, str], ...]) -> str:
    """``json.dumps(dict(items), separators=(",", ":"), ensure_ascii=False)``: for text hunks, each key and
    value written as the encoder writes a string, without building an encoder per call."""
    if all(type(name) is str and type(text) is str for name, text in items):
        return "{" + ",".join(f"{_STRING(name)}:{_STRING(text)}" for name, text in dict(items).items()) + "}"
    return _CANONICAL.encode(dict(items))


@functools.lru_cache(maxsize=HASH_CACHE_ENTRIES)
def _file_hash(items: tuple[tuple[str, str], ...]) -> str:
    canonical = canonical_json(items)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:HASH_HEX_DIGITS]


@functools.lru_cache(maxsize=HASH_CACHE_ENTRIES)
def hunk_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_HEX_DIGITS]


def hunk_hashes(hunks: Mapping[str, str], names) -> dict[str, str]:
    """Hashes of the named hunks (a hunk that does not exist hashes as empty text)."""
    return {name: hunk_hash(hunks.get(name, "")) for name in names}


def applied(hunks: Mapping[str, str], patch: Mapping[str, str]) -> Hunks:
    """The file after a patch replaces the hunks it names."""
    out = dict(hunks)
    out.update(patch)
    return out
