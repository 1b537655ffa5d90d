"""The fresh process of ``fuzz --check-determinism``: reads what to run on stdin, prints the digests.

``python -m sim.cli.determinism`` with ``{"workload": PATH, "protocols": [...], "seeds": [...]}`` on stdin.
"""

from __future__ import annotations

import json
import sys

#: The largest PYTHONHASHSEED Python accepts (a fresh interpreter refuses to start beyond it).
MAX_HASH_SEED = 4_294_967_295


def other_hash_seed(parent: str | None) -> str:
    """A PYTHONHASHSEED other than the parent's, and one Python accepts: the next one, wrapping past
    MAX_HASH_SEED to 0 (``4294967295`` gives ``0``); ``4242`` when the parent's is unset or ``random``."""
    text = (parent or "").strip()
    if text.isascii() and text.isdigit() and int(text) <= MAX_HASH_SEED:
        return str((int(text) + 1) % (MAX_HASH_SEED + 1))
    return "4242"


def main() -> None:
    from sim.registry import FAMILIES
    from sim.search.determinism import digests

    request = json.loads(sys.stdin.read())
    workload = FAMILIES.load_workload(request["workload"])
    family = FAMILIES.family_for(workload)
    json.dump(digests(family, workload, request["protocols"], request["seeds"]), sys.stdout)


if __name__ == "__main__":
    main()
