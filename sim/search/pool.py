"""Expanding a layer of exhaustive search in this process, or in a pool of worker processes.

Workers help only where every successor costs a run: a replay of its whole
order (a family without a machine), or the run a machine judges a state by
(the effects family's completion: workers judge the successors they send
back).  With a machine judged by state predicates a successor costs one transition,
less than sending its state to a worker and its successors back, so the
search stays in this process whatever ``workers`` says (measured on
three-files / step-dedupe to depth 8: 36 s in one process, 89 s with two
workers).  A visited set sharded between two processes, each owning half the
fingerprints and sending every successor to its owner, as TLC's and
Stateright's parallel checkers do, does not beat one process either
(``benchmarks/bench_sharded.py``: 0.75x on tiny / plan to depth 9, 1.09x on
the public model's 50,816 states): pickling a state costs about what
expanding it does.  Results come back in layer order, so the search is the
same for any worker count.
"""

from __future__ import annotations

from collections import deque
from itertools import islice
from typing import Any, Iterator

from sim.search.expansion import Expansion, Successor
from sim.search.layers import Layer
from sim.search.workers import Workers

#: Entries per task handed to a worker process.
EXPAND_CHUNK = 64
_WORKER: dict[str, Any] = {}


def _init_worker(expansion: Expansion) -> None:
    expansion.prejudge = True  # a machine that judges its states judges each successor here, not in the parent
    _WORKER["expansion"] = expansion


def _expand_chunk(task: tuple[list, int, dict[int, int]]) -> list:
    entries, depth, asleep = task
    expansion = _WORKER["expansion"]
    return [expansion.expand(node, found, depth, asleep.get(number, 0)) for number, node, found in entries]


class Expander:
    """Expands the entries of a layer (see the module docstring)."""

    def __init__(self, expansion: Expansion, workers: int):
        self.expansion = expansion
        replayed = expansion.machine is None or expansion.judges  # a state's judgement costs a run: share it
        self.workers = max(1, workers) if replayed else 1
        self.pool: Workers | None = None

    def __enter__(self) -> "Expander":
        if self.workers > 1:
            self.pool = Workers(self.workers, _init_worker, (self.expansion,))
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.pool is not None:
            self.pool.stop()

    def map(self, layer: Layer, depth: int,
            asleep: dict[int, int]) -> Iterator[tuple[tuple[int, Any, frozenset[str]], tuple[list[Successor], int]]]:
        """Each entry with its successors and the count of events asleep in it, in layer order.  With workers the
        layer is read a chunk at a time, as they take tasks: entries it keeps encoded (or on disk) are decoded only
        a few chunks ahead of the expansion, never all at once."""
        expand = self.expansion.expand
        if self.pool is None or len(layer) < 2 * EXPAND_CHUNK:
            for entry in layer:
                yield entry, expand(entry[1], entry[2], depth, asleep.get(entry[0], 0))
            return
        sent: deque[tuple[int, Any, frozenset[str]]] = deque()  # entries handed out, their results not yet given

        def chunks() -> Iterator[tuple[list, int, dict[int, int]]]:
            entries = iter(layer)
            while chunk := list(islice(entries, EXPAND_CHUNK)):
                sent.extend(chunk)
                yield chunk, depth, {number: asleep.get(number, 0) for number, _, _ in chunk}

        for results in self.pool.imap(_expand_chunk, chunks()):
            for outcome in results:
                yield sent.popleft(), outcome
