"""The external system (external.py): which effect classes honour idempotency keys."""

from __future__ import annotations

import pytest

from sim.families.effects.external import KEYED_CLASSES, ExternalSystem, Request


def _request(effect_class, request_id="r1", fingerprint="f1", key="acme:t:x:1"):
    return Request(request_id=request_id, worker="w1", task="t", transition="x", logical="x", kind="object",
                   generation=1, key=key, fingerprint=fingerprint, head="h", attempt=0, effect_class=effect_class)


def test_keyed_creations_are_deduplicated_by_key():
    """A second request with a known key returns the existing object."""
    system = ExternalSystem("key", 3600.0)
    first, second = system.handle(_request("keyed_creation"), 0.0), system.handle(_request("keyed_creation", "r2"), 1.0)
    assert (first[0], second[0]) == ("committed", "deduplicated") and first[1] is second[1]
    assert KEYED_CLASSES == {"keyed_creation", "append"}


def test_fingerprints_reject_other_arguments_under_one_key():
    """Under key+fingerprint a known key with another fingerprint is rejected."""
    system = ExternalSystem("key+fingerprint", 3600.0)
    system.handle(_request("keyed_creation"), 0.0)
    assert system.handle(_request("keyed_creation", "r2", fingerprint="f2"), 1.0)[0] == "rejected"


def test_irreversible_endpoints_take_no_key_unless_irreversible_keys():
    """A release takes no key by default (a retry is a new release); with irreversible_keys it is keyed."""
    plain = ExternalSystem("key+fingerprint", 3600.0)
    assert [plain.handle(_request("irreversible", r), 0.0)[0] for r in ("r1", "r2")] == ["committed", "committed"]
    assert not plain.keyed(_request("irreversible"))
    keyed = ExternalSystem("key+fingerprint", 3600.0, irreversible_keys=True)
    assert [keyed.handle(_request("irreversible", r), 0.0)[0] for r in ("r1", "r2")] == ["committed", "deduplicated"]
    assert keyed.keyed(_request("irreversible"))


def test_keys_expire_after_their_retention():
    """A retry after the key's retention is a new request."""
    system = ExternalSystem("key", 5.0)
    system.handle(_request("keyed_creation"), 0.0)
    assert system.handle(_request("keyed_creation", "r2"), 10.0)[0] == "committed"


def test_idempotency_none_ignores_keys():
    """With idempotency none every request creates a new object."""
    system = ExternalSystem("none", 3600.0)
    assert [system.handle(_request("keyed_creation", r), 0.0)[0] for r in ("r1", "r2")] == ["committed", "committed"]
    assert not system.keyed(_request("keyed_creation"))


def test_a_duplicated_request_is_the_same_request_under_another_id():
    """Request.again (the network's duplicate) changes the id and nothing else; a request is built by keyword."""
    original = _request("append")
    copy = original.again("r9")
    assert copy.request_id == "r9" and copy is not original
    assert {k: v for k, v in vars(copy).items() if k != "request_id"} == \
        {k: v for k, v in vars(original).items() if k != "request_id"}
    with pytest.raises(TypeError):
        Request("r1", "w1", "t", "x", "x", "object", 1, None, "f", "h", 0)  # type: ignore[misc]
