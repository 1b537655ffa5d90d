"""The fresh process of ``fuzz --check-determinism``: reads what to run on stdin, prints the digests.

``python -m sim.cli.determinism`` with ``{"workload": PATH, "protocols": [...], "seeds": [...]}`` on stdin.
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    from sim.registry import FAMILIES
    from sim.search.determinism import digests

    request = json.loads(sys.stdin.read())
    workload = FAMILIES.load_workload(request["workload"])
    family = FAMILIES.family_for(workload)
    json.dump(digests(family, workload, request["protocols"], request["seeds"]), sys.stdout)


if __name__ == "__main__":
    main()
