"""Files as named hunks and their hashes (content.py)."""

from __future__ import annotations

from sim.families.workspace.content import (
    HASH_HEX_DIGITS,
    applied,
    file_hash,
    hunk_hash,
    hunk_hashes,
)


def test_file_hash_ignores_hunk_order_and_is_short():
    """A file's hash depends on its hunks, not their order, and has 16 hex digits."""
    assert file_hash({"a": "1", "b": "2"}) == file_hash({"b": "2", "a": "1"})
    assert file_hash({"a": "1"}) != file_hash({"a": "2"})
    assert len(file_hash({"_": "v0"})) == HASH_HEX_DIGITS == 16


def test_hunk_hashes_cover_only_the_named_hunks():
    """hunk_hashes hashes the named hunks; a missing hunk hashes as empty text."""
    hashes = hunk_hashes({"handler": "h0", "tests": "t0"}, ["handler", "footer"])
    assert hashes == {"handler": hunk_hash("h0"), "footer": hunk_hash("")}


def test_applied_replaces_only_the_patched_hunks():
    """A patch replaces the hunks it names and leaves the others and the original mapping alone."""
    before = {"handler": "h0", "tests": "t0"}
    assert applied(before, {"handler": "h1"}) == {"handler": "h1", "tests": "t0"}
    assert before == {"handler": "h0", "tests": "t0"}


def test_canonical_json_is_the_json_module_s():
    import json

    from sim.families.workspace.content import canonical_json

    cases = [(), (("_", "v0"),), (("a", 'x"y\\'), ("b", "é\n\u2028\x00")), (("k", "1"), ("k", "2")),
             (("z", ""), ("a", "日本"))]
    for items in cases:
        assert canonical_json(items) == json.dumps(dict(items), separators=(",", ":"), ensure_ascii=False)
